from __future__ import annotations

from pathlib import Path

import pytest
from conformance_support import CANARY, TRANSPORTS, ConformanceSource
from profiles import PROFILES


@pytest.fixture(params=TRANSPORTS)
def conformance(request: pytest.FixtureRequest, tmp_path: Path, runtime_dirs: dict[str, str]) -> ConformanceSource:
    """The connector's working source, reached over each transport in turn."""
    connector = request.node.callspec.params["connector"]
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    return ConformanceSource(
        source=PROFILES[connector].build(source_dir, CANARY),
        env=runtime_dirs,
        workdir=tmp_path,
        transport=request.param,
    )
