"""``python -m bridge``: the flags of 16.2, and how the process ends."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from discovery import ROOT
from loader import load_file
from toy_connector import TEST_CREDENTIALS

from bridge.cli import default_root

support = load_file(Path(__file__).with_name("bridge_support.py"), "acp_tests_bridge_support")
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


def test_the_default_root_is_the_checkout_or_the_bundle(tmp_path: Path) -> None:
    assert default_root() == ROOT
    (tmp_path / "lib" / "bridge").mkdir(parents=True)
    assert default_root(tmp_path / "lib" / "bridge") == tmp_path / "lib"  # a lib/ that is not a bundle's
    (tmp_path / "manifest.json").write_text("{}")
    assert default_root(tmp_path / "lib" / "bridge") == tmp_path


@pytest.mark.slow
def test_version_and_a_missing_project_folder(tmp_path: Path) -> None:
    version = subprocess.run(
        [sys.executable, "-m", "bridge", "--version"], env=ENV, capture_output=True, text=True, timeout=60, check=False
    )
    assert version.returncode == 0
    assert version.stdout.startswith("ACP Bridge ")
    missing = subprocess.run(
        [sys.executable, "-m", "bridge", "--project", str(tmp_path / "nope")],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2
    assert f"the project folder {tmp_path / 'nope'} does not exist" in missing.stderr
    assert missing.stdout == ""  # stdout is the MCP channel: nothing but protocol ever goes there


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


@pytest.mark.slow
def test_sigterm_ends_the_bridge_and_its_connectors_with_a_call_in_flight(tmp_path: Path) -> None:
    root = support.write_root(tmp_path / "bridge")
    sources = support.write_sources(
        tmp_path / "sources.json",
        [{"id": "shop", "acp": "toy", "default_resource_id": "acc_1", "credentials": TEST_CREDENTIALS}],
    )
    (tmp_path / "project").mkdir()
    command = [sys.executable, "-m", "bridge", "--root", str(root), "--sources", str(sources)]
    with subprocess.Popen(
        [*command, "--project", str(tmp_path / "project")],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as process:
        assert process.stdout is not None
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
        _send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert json.loads(process.stdout.readline())["id"] == 1
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "shop__sleep" in process.stdout.readline().decode()
        connectors = psutil.Process(process.pid).children(recursive=True)
        assert any("toy_connector.py" in " ".join(c.cmdline()) for c in connectors)
        call = {"name": "shop__sleep", "arguments": {"seconds": 60}}
        _send(process, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        time.sleep(1.0)  # the call is at the connector now
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 128 + signal.SIGTERM
    gone = psutil.wait_procs(connectors, timeout=20)[1]
    assert gone == []  # every connector ended with the bridge
    assert not (tmp_path / "project" / "acp-data").exists()
