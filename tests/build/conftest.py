"""Fixtures for the zip build tests: build/acpzip.py as a module, and the zips built once per test run."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import pytest
from acpzip_support import PlatformZips, ZipBuilds, load_acpzip, run_folder


@pytest.fixture(scope="session")
def acpzip() -> ModuleType:
    return load_acpzip()


@pytest.fixture(scope="session")
def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="session")
def zip_builds(acpzip: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> ZipBuilds:
    """Any zip (connector, Python, platform, exclude-files globs), built once per run for every worker."""
    return ZipBuilds(acpzip, run_folder(tmp_path_factory))


@pytest.fixture(scope="session")
def built(acpzip: ModuleType, zip_builds: ZipBuilds, python_version: str) -> Mapping[str, Path]:
    """Every connector's zip for this machine and this Python, by connector id."""
    return PlatformZips(zip_builds, acpzip.connector_ids(), python_version, acpzip.host_platform().tag)
