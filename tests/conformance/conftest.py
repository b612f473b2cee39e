from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_support import CANARY, TRANSPORTS, ConformanceSource
from profiles import PROFILES


@pytest.fixture(params=TRANSPORTS)
def conformance(
    request: pytest.FixtureRequest, tmp_path: Path, runtime_dirs: dict[str, str]
) -> Iterator[ConformanceSource]:
    """The connector's working source (one of its variants), reached over each transport in turn."""
    connector = request.node.callspec.params["connector"]
    variant = request.node.callspec.params["variant"]
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    with PROFILES[connector].variants[variant](source_dir, CANARY) as source:
        yield ConformanceSource(source=source, env=runtime_dirs, workdir=tmp_path, transport=request.param)
