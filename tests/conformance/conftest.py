from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_support import CANARY, ConformanceSource
from profiles import PROFILES


@pytest.fixture
def conformance(
    request: pytest.FixtureRequest, tmp_path: Path, runtime_dirs: dict[str, str], in_process
) -> Iterator[ConformanceSource]:
    """The connector's working source (one of its variants), with what it takes to start the connector."""
    connector = request.node.callspec.params["connector"]
    variant = request.node.callspec.params["variant"]
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    profile = PROFILES[connector]
    with profile.variants[variant](source_dir, CANARY) as source:
        yield ConformanceSource(
            profile=profile, source=source, env=runtime_dirs, workdir=tmp_path, in_process=in_process
        )
