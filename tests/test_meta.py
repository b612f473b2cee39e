"""Meta-tests that keep the declarations, the tests and the docs in step (see style notes)."""

from __future__ import annotations

import importlib
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
    code = "\n".join(p.read_text("utf-8") for d in ("shared", "connectors") for p in (ROOT / d).rglob("*.py"))
    # Reads such as os.environ.get("ACP_X"), env["ACP_X"] or env.get("ACP_X", ...).
    variables = set(re.findall(r"(?:environ|env)(?:\.get\(|\[)\s*\"(ACP_[A-Z_]+)\"", code))
    assert variables, "expected the ACP_* environment variables of spec 13.3"
    for variable in variables:
        assert f"`{variable}`" in readme, f"{variable} is read by the code but not documented in README.md"
    cli = (ROOT / "shared" / "cli.py").read_text("utf-8")
    for flag in re.findall(r'add_argument\(\s*"(--[a-z-]+)"', cli):
        assert f"`{flag}" in readme, f"{flag} is missing from README.md"


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
