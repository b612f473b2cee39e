"""Shared helpers for the unit tests of the protocol core (shared/)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared._tablefiles import TableFiles
from shared.tables import SampleBudget, TableWriter

# Large enough that nothing in a unit test spills unless the test asks for it.
NO_SPILL = 10 * 1024 * 1024


@pytest.fixture
def table_files(tmp_path: Path) -> TableFiles:
    """``table_uri`` files created under pytest's private temporary directory."""
    return TableFiles("unit", str(tmp_path / "acp-tables"))


@pytest.fixture
def make_writer(table_files: TableFiles) -> Callable[..., TableWriter]:
    """Build a real TableWriter; ``head``, ``spread`` and ``inline_max_bytes`` set its budget."""

    def factory(
        name: str = "result",
        *,
        head: int = 50,
        spread: int = 0,
        inline_max_bytes: int = NO_SPILL,
        **kwargs: Any,
    ) -> TableWriter:
        budget = SampleBudget(head_rows=head, spread_rows=spread, inline_max_bytes=inline_max_bytes)
        return TableWriter(name, budget=budget, files=table_files, **kwargs)

    return factory
