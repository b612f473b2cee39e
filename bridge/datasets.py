"""The project's ``acp-data/`` folder (spec 16.6): every dataset is ``<id>.csv`` plus ``<id>.meta.json``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shared.protocol import Header, JsonObject

__all__ = ["Dataset"]


@dataclass(frozen=True)
class Dataset:
    """One dataset of ``acp-data/``.

    ``id`` is its table name in ``acp_query`` (lower case, a valid unquoted SQL identifier);
    ``csv_path`` the RFC 4180 file; ``headers`` its typed columns (``name`` and an ACP column
    type, spec 8.6, plus ``role``/``description`` when the extraction gave them); ``meta`` the
    whole ``<id>.meta.json`` (for a hand-dropped CSV, the one inferred, ``origin: "csv"``).
    """

    id: str
    csv_path: Path
    headers: list[Header]
    row_count: int
    meta: JsonObject
