"""The ACP Bridge (spec Part III, section 16): ACP connectors from any MCP client.

``python -m bridge`` is an MCP server over stdio that acts as an ACP host. Upward it speaks plain
MCP to the client (Claude Desktop, Cursor, VS Code…); downward it launches the installed ACP
connectors (``<root>/acps/*/acp.json``, or the checkout's own ``connectors/*``), passes each
source's credentials and limits from ``sources.json`` in ``_meta.acp``, and saves every extracted
table as a dataset in the project's ``acp-data/`` folder, where ``acp_query`` runs SQL over them.

Modules:

``datasets``  the ``acp-data/`` store: CSV + meta files, ids, type inference, ``acp/read_table``
``query``     ``acp_query``: SQLite-dialect SQL run on a locked-down DuckDB (or SQLite as fallback)
``sources``   ``sources.json`` and the installed connectors
``server``    the MCP server: the published tools, calls through ``shared.host.AcpHost``
``cli``       the flags of 16.2
"""
