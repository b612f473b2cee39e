"""Fixtures for the zip build tests: build/acpzip.py as a module, and the zips built once per session."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest
from acpzip_support import load_acpzip


@pytest.fixture(scope="session")
def acpzip() -> ModuleType:
    return load_acpzip()


@pytest.fixture(scope="session")
def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="session")
def built(acpzip: ModuleType, python_version: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every connector's zip for this machine and this Python, by connector id."""
    out = tmp_path_factory.mktemp("dist")
    target = acpzip.host_platform()
    return {cid: acpzip.build(cid, python_version, target, out) for cid in acpzip.connector_ids()}
