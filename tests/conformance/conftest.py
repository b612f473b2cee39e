from __future__ import annotations

from pathlib import Path

import pytest
from conformance_support import CANARY, ConformanceSource
from profiles import PROFILES


@pytest.fixture
def conformance(request: pytest.FixtureRequest, tmp_path: Path, runtime_dirs: dict[str, str]) -> ConformanceSource:
    connector = request.node.callspec.params["connector"]
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    return ConformanceSource(source=PROFILES[connector].build(source_dir, CANARY), env=runtime_dirs)
