"""What tools/list publishes (shared/publish.py): the gateway contract where it agrees with ACP."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
from discovery import ROOT, connector_folders

from shared.declaration import Connector
from shared.protocol import RESERVED_TOOLS
from shared.publish import ToolCatalog

MODULES = [f"connectors.{folder.name}" for folder in connector_folders()] + ["toy_connector", "toy_local_connector"]


def _declaration(module: str) -> Connector:
    connector: Connector = importlib.import_module(module).CONNECTOR
    return connector


def _published(module: str) -> list[dict]:
    return [t.model_dump(by_alias=True, exclude_none=True) for t in ToolCatalog(_declaration(module)).tools()]


@pytest.mark.parametrize("module", MODULES)
def test_no_published_tool_declares_an_output_schema(module: str) -> None:
    """An outputSchema binds structuredContent: a strict client validates every result against it. ACP
    results vary by call (rows with the columns of each query, one or several tables, autocontext
    attached or not, an error object), so no schema holds exactly and none is published."""
    assert all("outputSchema" not in tool for tool in _published(module))


@pytest.mark.parametrize("module", MODULES)
def test_tools_are_listed_reserved_first_then_in_declaration_order(module: str) -> None:
    names = [tool["name"] for tool in _published(module)]
    assert names == [*RESERVED_TOOLS, *(t.name for t in _declaration(module).tools)]


@pytest.mark.slow
def test_tools_list_is_the_same_in_every_process() -> None:
    """A changing order invalidates a model's prompt cache (gateway contract): the list, its schemas and the
    order of their keys do not depend on the process's hash seed."""
    script = (
        "import json, sys\n"
        "from shared.publish import ToolCatalog\n"
        "import importlib\n"
        "for module in sys.argv[1:]:\n"
        "    tools = ToolCatalog(importlib.import_module(module).CONNECTOR).tools()\n"
        "    print(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in tools]))\n"
    )
    expected = [json.dumps(_published(module)) for module in MODULES]
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
        done = subprocess.run(
            [sys.executable, "-c", script, *MODULES], env=env, cwd=ROOT, capture_output=True, text=True, check=True
        )
        assert done.stdout.splitlines() == expected, seed
