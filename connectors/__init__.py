"""First-party ACP connector servers, one sub-package per source (found by their ``acp.json``)."""
