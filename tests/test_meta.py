"""Meta-tests that keep the declarations, the tests and the docs in step (see style notes)."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from discovery import ROOT, connector_folders


def _declaration(folder: Path):
    return importlib.import_module(f"connectors.{folder.name}").CONNECTOR


def _test_text(connector_id: str) -> str:
    folder = ROOT / "tests" / "connectors" / connector_id
    return "\n".join(p.read_text("utf-8") for p in folder.rglob("*.py"))


@pytest.mark.parametrize("folder", connector_folders(), ids=lambda p: p.name)
def test_every_tool_and_block_has_a_test_and_a_readme_line(folder: Path) -> None:
    connector = _declaration(folder)
    readme = (folder / "README.md").read_text("utf-8")
    tests = _test_text(connector.id)
    names = [t.name for t in connector.tools] + [b.id for b in connector.blocks]
    for name in names:
        assert f"`{name}`" in readme, f"{name} is missing from connectors/{folder.name}/README.md"
        assert re.search(rf"[\"']{re.escape(name)}[\"']", tests), (
            f"no test under tests/connectors/{connector.id} names {name}"
        )
    for key in (connector.config_schema or {}).get("properties", {}):
        assert f"`{key}`" in readme, f"config key {key} is missing from the README"


def test_every_environment_variable_and_flag_is_documented() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    code = "\n".join(p.read_text("utf-8") for d in ("shared", "connectors", "bridge") for p in (ROOT / d).rglob("*.py"))
    # Reads such as os.environ.get("ACP_X"), env["ACP_X"] or env.get("ACP_X", ...).
    variables = set(re.findall(r"(?:environ|env)(?:\.get\(|\[)\s*\"(ACP_[A-Z_]+)\"", code))
    assert variables, "expected the ACP_* environment variables of spec 13.3"
    for variable in variables:
        assert f"`{variable}`" in readme, f"{variable} is read by the code but not documented in README.md"
    cli = (ROOT / "shared" / "cli.py").read_text("utf-8")
    for flag in re.findall(r'add_argument\(\s*"(--[a-z-]+)"', cli):
        assert f"`{flag}" in readme, f"{flag} is missing from README.md"


def test_every_flag_and_environment_variable_of_the_bridge_is_in_its_readme() -> None:
    readme = (ROOT / "bridge" / "README.md").read_text("utf-8")
    code = "\n".join(p.read_text("utf-8") for p in (ROOT / "bridge").glob("*.py"))
    flags = re.findall(r'add_argument\(\s*"(--[a-z-]+)"', (ROOT / "bridge" / "cli.py").read_text("utf-8"))
    assert {"--project", "--sources", "--root"} <= set(flags)
    for flag in flags:
        assert f"`{flag}" in readme, f"{flag} is missing from bridge/README.md"
    for variable in set(re.findall(r"(?:environ|env)(?:\.get\(|\[)\s*\"(ACP_[A-Z_]+)\"", code)):
        assert f"`{variable}`" in readme, f"{variable} is missing from bridge/README.md"
    for client in ("claude_desktop_config.json", ".cursor/mcp.json", ".vscode/mcp.json"):
        assert client in readme, f"bridge/README.md: add the configuration for {client}"


@pytest.mark.slow
def test_every_test_file_is_collected() -> None:
    """pytest silently skips some folder names (its default norecursedirs holds ``build``): none may be lost."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    collected = {line.split("::", 1)[0] for line in result.stdout.splitlines() if "::" in line}
    on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    assert on_disk - collected == set()


# -- the recipe of CONNECTORS.md ------------------------------------------------------------------
CONNECTORS_MD = ROOT / "CONNECTORS.md"


def _markdown_rows(heading: str) -> list[list[str]]:
    """The body rows of the first table under ``## heading`` in CONNECTORS.md, as cell texts."""
    text = CONNECTORS_MD.read_text("utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _approved_imports() -> dict[str, set[str] | None]:
    """Module → approved names (None: every public name) from CONNECTORS.md."""
    import shared

    approved: dict[str, set[str] | None] = {}
    for module_cell, names_cell, _ in _markdown_rows("What a connector may import from the core"):
        (module,) = _ticked(module_cell)
        if "shared.__all__" in names_cell:
            approved[module] = set(shared.__all__)
        elif "every public name" in names_cell:
            approved[module] = None
        else:
            approved[module] = set(_ticked(names_cell))
    return approved


def test_connectors_import_only_the_approved_core_surface() -> None:
    import ast

    approved = _approved_imports()
    refused = []
    for path in sorted((ROOT / "connectors").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                modules = [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "shared"]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "shared":
                modules = [(str(node.module), alias.name) for alias in node.names]
            else:
                continue
            for module, name in modules:
                allowed = approved.get(module, set())
                submodule = f"{module}.{name}" if name else module
                ok = (
                    module in approved
                    and (name is None or allowed is None or name in allowed or submodule in approved)
                    and not (name or "").startswith("_")
                )
                if not ok:
                    refused.append(f"{path.relative_to(ROOT)}: from {module} import {name}")
    assert not refused, "not in CONNECTORS.md's approved list:\n" + "\n".join(refused)


@pytest.mark.parametrize("folder", connector_folders(), ids=lambda p: p.name)
def test_importing_a_declaration_loads_no_server_stack_and_no_vendor_library(folder: Path) -> None:
    """``import connectors.<id>`` is what a host or a test does to read the declaration: cheap and side-effect free."""
    import subprocess
    import sys

    light = {"shared", "connectors", "anyio", "sniffio", "idna", "orjson", "typing_extensions", "exceptiongroup"}
    probe = (
        "import sys, json; before = set(sys.modules); import connectors." + folder.name + "\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True)
    heavy = set(json.loads(loaded.stdout)) - set(sys.stdlib_module_names) - light
    assert not heavy, f"import connectors.{folder.name} loads {sorted(heavy)}"


def test_each_connector_has_its_own_port() -> None:
    ports = {_ticked(connector)[0]: int(port) for connector, port in _markdown_rows("Ports")}
    assert len(set(ports.values())) == len(ports), "two connectors share a port in CONNECTORS.md"
    for folder in connector_folders():
        args = json.loads((folder / "acp.json").read_text("utf-8-sig"))["http"]["args"]
        port = int(args[args.index("--port") + 1])
        assert ports.get(folder.name) == port, f"{folder.name}: acp.json says --port {port}; see CONNECTORS.md#ports"


@pytest.mark.parametrize("folder", connector_folders(), ids=lambda p: p.name)
def test_every_place_a_connector_touches(folder: Path) -> None:
    """The recipe of CONNECTORS.md: extra, lock, CI install, tests folder and README row."""
    import tomllib

    connector = folder.name
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert connector in extras, f"pyproject.toml: add the extra [{connector}]"
    assert any(connector in entry for entry in extras["all"]), f"pyproject.toml: add {connector} to the extra [all]"
    assert (ROOT / "build" / "locks" / f"{connector}.txt").is_file(), f"run: python build/acpzip.py lock {connector}"
    installed = re.search(r"pip install[^\n]*-e '\.\[([a-z0-9_,-]+)\]'", (ROOT / ".ci" / "run").read_text("utf-8"))
    assert installed and {connector, "all"} & set(installed.group(1).split(",")), f".ci/run: install [{connector}]"
    assert (ROOT / "tests" / "connectors" / connector).is_dir(), f"add tests/connectors/{connector}/"
    readme = (ROOT / "README.md").read_text("utf-8")
    assert f"(connectors/{connector}/README.md)" in readme, f"README.md: add {connector} to the connectors table"
    # The Quickstart's install must let its test command pass, as CI's install does.
    quickstart = re.search(r"pip install -e '\.\[([a-z0-9_,-]+)\]' &&", readme)
    assert quickstart and {connector, "all"} & set(quickstart.group(1).split(",")), f"README.md: install [{connector}]"
