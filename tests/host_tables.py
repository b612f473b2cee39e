"""A fixed set of host tables for tests: a :class:`shared.host.TableResolver` that records what it was asked.

``StaticTables({"ds": StaticTable(headers, rows)})`` answers ``acp/read_table`` for ``ds``;
``as_file=True`` answers by ``table_uri`` (a file the host removes after the call),
``conversation="c1"`` makes a table private to that conversation (spec 8.8.1), and an
exception in place of a table (``TableTruncated("…")``) is the host's refusal.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from shared.errors import AcpError, TableNotFound
from shared.host import InlineTable, TableFile


@dataclass(frozen=True)
class StaticTable:
    headers: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    as_file: bool = False
    conversation: str | None = None  # None: visible to every conversation (a project table)


class StaticTables:
    """Answers from a dict; ``requests`` lists every ``acp/read_table`` with the conversation the host resolved."""

    def __init__(self, tables: Mapping[str, StaticTable | AcpError]) -> None:
        self.tables = dict(tables)
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, ref: str, *, call_id: str | None, conversation: str | None) -> InlineTable | TableFile:
        self.requests.append({"ref": ref, "call_id": call_id, "conversation": conversation})
        table = self.tables.get(ref)
        if isinstance(table, AcpError):
            raise table
        if table is None or (table.conversation is not None and table.conversation != conversation):
            raise TableNotFound(f"No dataset or report '{ref}' in this conversation.")
        if not table.as_file:
            return InlineTable(headers=table.headers, rows=table.rows)
        path = await anyio.to_thread.run_sync(_write_table_file, table.rows)
        return TableFile(path=path, headers=table.headers, row_count=len(table.rows), remove_after_call=True)


def _write_table_file(rows: list[dict[str, Any]]) -> Path:
    fd, name = tempfile.mkstemp(prefix="acp-static-table-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(rows, handle)
    return Path(name)
