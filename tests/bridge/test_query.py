"""acp_query's engine (bridge/query.py): read-only, locked down, typed, streaming (spec 16.4, 16.6).

Every test runs against datasets in a folder that also holds a ``sources.json`` with a secret, and
checks afterwards that no file of that folder changed (bytes and modification time).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import bridge.query
from bridge.datasets import Dataset
from bridge.query import QueryEngine, load_sqlite
from bridge.sqlite_dialect import Translation
from shared.errors import AcpError, InvalidArguments, ReadOnlyViolation, TableNotFound
from tests.bridge_query_support import (
    CANALES_HEADERS,
    VENTAS_HEADERS,
    canales_rows,
    lookup_of,
    ventas_rows,
    write_dataset,
)

SECRET = "sk-live-SECRET-0123456789"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    data = root / "acp-data"
    data.mkdir()
    for place in (root, data):
        (place / "sources.json").write_text(f'{{"sources": [{{"credentials": {{"token": "{SECRET}"}}}}]}}')
    return data


@pytest.fixture(scope="module")
def datasets(folder: Path) -> list[Dataset]:
    items = [
        # 30 rows of 143 items: the average is 4.766…, and SQLite's SUM(items)/COUNT(*) is 4.
        write_dataset(folder, "orders", [{"name": "items", "type": "integer"}], [[5]] * 23 + [[4]] * 7),
        write_dataset(folder, "ventas", VENTAS_HEADERS, ventas_rows(120)),
        write_dataset(folder, "canales", CANALES_HEADERS, canales_rows()),
    ]
    return items


@pytest.fixture
def engine(datasets: list[Dataset]) -> QueryEngine:
    return QueryEngine(lookup_of(datasets))


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.parent.rglob("*") if p.is_file()}


@pytest.fixture(autouse=True)
def nothing_changes(folder: Path) -> Iterator[None]:
    before = _snapshot(folder)
    yield
    assert _snapshot(folder) == before


def _rows(engine: QueryEngine, sql: str, size: int = 10_000) -> tuple[Any, list[tuple[Any, ...]]]:
    with engine.run(sql) as result:
        rows = [row for batch in result.batches(size) for row in batch]
    return result, rows


def _refused(engine: QueryEngine, sql: str, kind: type[AcpError]) -> str:
    with pytest.raises(kind) as caught, engine.run(sql):
        pass
    message = caught.value.message
    assert SECRET not in message
    return message


# -- read-only -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO ventas (pedidos) VALUES (1)",
        "UPDATE ventas SET pedidos = 0",
        "DELETE FROM ventas",
        "DROP TABLE ventas",
        "CREATE TABLE copy AS SELECT * FROM ventas",
        "ALTER TABLE ventas ADD COLUMN x",
        "SELECT 1; DROP TABLE ventas",
        "WITH gone AS (DELETE FROM ventas RETURNING *) SELECT * FROM gone",
        "ATTACH 'other.db' AS other",
        "PRAGMA writable_schema = 1",
        "SET enable_external_access = true",
        "COPY ventas TO 'out.csv'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "EXPORT DATABASE 'dump'",
        "VACUUM INTO 'copy.db'",
        "REPLACE INTO ventas (pedidos) VALUES (1)",
    ],
)
def test_anything_but_a_query_is_a_read_only_violation(engine: QueryEngine, sql: str) -> None:
    message = _refused(engine, sql, ReadOnlyViolation)
    assert "only queries" in message
    assert "CSV files in acp-data are read-only" in message


# -- lockdown: the query reaches the named datasets and nothing else ------------------------------
def _file_attacks(folder: Path) -> list[str]:
    secret = folder / "sources.json"
    csv_file = folder / "ventas.csv"
    return [
        f"SELECT content FROM read_text('{secret}')",
        f"SELECT read_text('{secret}')",
        f"SELECT * FROM read_blob('{secret}')",
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM read_csv_auto('{secret}')",
        f"SELECT * FROM read_csv('{csv_file}')",
        f"SELECT * FROM read_parquet('{secret}')",
        f"SELECT * FROM read_json('{secret}')",
        f"SELECT * FROM read_json_auto('{secret}')",
        "SELECT * FROM glob('*')",
        "SELECT * FROM glob('*', '*')",
        "SELECT getenv('HOME')",
        "SELECT current_setting('enable_external_access')",
        "SELECT * FROM duckdb_settings()",
        "SELECT * FROM duckdb_tables()",
        "SELECT * FROM query_table('ventas')",
        "SELECT * FROM query('SELECT 1')",
        "SELECT query('SELECT 1')",
        "SELECT * FROM 'ventas.csv'",
        "SELECT * FROM 'sources.json'",
        f"SELECT * FROM '{secret}'",
        f'SELECT * FROM "{secret}"',
        'SELECT * FROM "../sources.json"',
        "SELECT * FROM `acp-data/ventas.csv`",
        "SELECT * FROM main.ventas",
        "SELECT * FROM information_schema.tables",
        "SELECT * FROM sqlite_master",
        "SELECT * FROM pg_settings",
        "SELECT * FROM ventas JOIN read_text('sources.json') ON 1 = 1",
        "SELECT * FROM json_each('[1]')",
        "SELECT load_extension('evil')",
        "SELECT readfile('sources.json')",
    ]


def test_files_settings_and_the_environment_are_out_of_reach(engine: QueryEngine, folder: Path) -> None:
    for sql in _file_attacks(folder):
        with pytest.raises(AcpError) as caught, engine.run(sql):
            pass
        error = caught.value
        assert isinstance(error, (ReadOnlyViolation, TableNotFound, InvalidArguments)), sql
        assert SECRET not in error.message
        next_steps = ("acp_datasets", "Rewrite", "Fix", "Available")  # the last: the store's list of ids
        assert any(step in error.message for step in next_steps), error.message


def test_a_dataset_id_that_is_a_path_names_the_rule(engine: QueryEngine) -> None:
    message = _refused(engine, "SELECT * FROM '../sources.json'", TableNotFound)
    assert "not a dataset id" in message and "never files or paths" in message
    message = _refused(engine, "SELECT * FROM main.ventas", TableNotFound)
    assert "write the id alone" in message


def test_the_duckdb_connection_itself_is_locked(datasets: list[Dataset], folder: Path) -> None:
    """Under the parser layer: a DuckDB of the bridge reads its datasets and no other file, and its
    configuration cannot be changed back."""
    import duckdb

    conn = bridge.query._open_duckdb({d.id: d for d in datasets if d.id == "ventas"})
    try:
        assert conn.execute("SELECT count(*) FROM ventas").fetchone() == (120,)
        # A large sort spills to a private folder, not to .tmp in the working directory (the project).
        spill = conn.execute("SELECT current_setting('temp_directory')").fetchone()[0]
        assert Path(spill).is_absolute() and "acp-bridge-duckdb-" in spill
        secret = folder / "sources.json"
        for sql in (
            f"SELECT content FROM read_text('{secret}')",
            f"SELECT * FROM read_csv_auto('{secret}')",
            f"SELECT * FROM '{secret}'",
            f"SELECT * FROM '{folder / 'canales.csv'}'",
            "SELECT * FROM glob('/*')",
            f"COPY (SELECT 1) TO '{folder}/out.csv'",
            f"ATTACH '{folder}/new.db' AS other",
        ):
            with pytest.raises(duckdb.Error) as caught:
                conn.execute(sql).fetchall()
            assert SECRET not in str(caught.value)
        for setting in (
            "SET enable_external_access = true",
            "SET lock_configuration = false",
            "SET allowed_paths = ['/']",
            "SET autoload_known_extensions = true",
        ):
            with pytest.raises(duckdb.Error, match="locked"):
                conn.execute(setting)
        with pytest.raises(duckdb.Error):
            conn.execute("INSTALL httpfs")
        with pytest.raises(duckdb.Error, match="canales"):  # only the datasets the query names are loaded
            conn.execute("SELECT * FROM canales")
    finally:
        conn.close()


def test_the_sqlite_path_allows_reading_its_tables_only(datasets: list[Dataset]) -> None:
    ventas = {"ventas": next(d for d in datasets if d.id == "ventas")}
    conn = bridge.query._sqlite_connection(ventas)
    try:
        load_sqlite(conn, ventas["ventas"])
        conn.set_authorizer(bridge.query._authorizer(["ventas"]))
        assert conn.execute("SELECT count(*) FROM ventas").fetchone() == (120,)
        for sql in (
            "ATTACH 'other.db' AS other",
            "PRAGMA writable_schema = 1",
            "SELECT load_extension('evil')",
            "SELECT * FROM sqlite_master",
            "INSERT INTO ventas (pedidos) VALUES (1)",
            "DELETE FROM ventas",
            "CREATE TEMP TABLE t (x)",
            "BEGIN",
        ):
            with pytest.raises(sqlite3.DatabaseError, match=r"not authorized|prohibited|too many attached"):
                conn.execute(sql)
    finally:
        conn.close()


def test_a_translation_off_duckdbs_allow_list_is_not_run(
    engine: QueryEngine, monkeypatch: pytest.MonkeyPatch, folder: Path
) -> None:
    """The DuckDB text is checked again with DuckDB's allow-list: a translation that called a file
    reader would not run (the query then runs on SQLite, which reads the dataset only)."""
    import bridge.sqlite_dialect

    evil = f"SELECT content AS channel FROM read_text('{folder / 'sources.json'}')"
    monkeypatch.setattr(bridge.sqlite_dialect, "translate", lambda tree, tables: Translation(evil, [None]))
    result, rows = _rows(engine, "SELECT channel FROM canales ORDER BY channel")
    assert result.engine == "sqlite"
    assert "read_text" in result.notes[0]
    assert all(SECRET not in str(row) for row in rows)
    assert rows[0] == ("Phone",)


def test_only_the_named_datasets_are_looked_up(datasets: list[Dataset]) -> None:
    asked: list[str] = []
    lookup = lookup_of(datasets)

    def spy(ref: str) -> Dataset:
        asked.append(ref)
        return lookup(ref)

    _rows(QueryEngine(spy), "WITH canales AS (SELECT 1 AS x) SELECT x FROM canales, (SELECT count(*) FROM Ventas)")
    assert asked == ["Ventas"]


# -- errors with the next step --------------------------------------------------------------------
def test_an_unknown_dataset_names_the_available_ones(engine: QueryEngine) -> None:
    message = _refused(engine, "SELECT * FROM venta", TableNotFound)
    assert "ventas" in message and "canales" in message


def test_an_unknown_column_names_the_datasets_columns(engine: QueryEngine) -> None:
    message = _refused(engine, "SELECT revenue FROM ventas", InvalidArguments)
    assert "no such column: revenue" in message
    assert "ventas(fecha, channel, country, pedidos, importe" in message


def test_syntax_errors_say_where(engine: QueryEngine) -> None:
    message = _refused(engine, "SELECT (channel FROM ventas", InvalidArguments)
    assert "syntax error at line 1" in message
    assert 'near "FROM": syntax error' in _refused(engine, "SELECT channel, FROM ventas", InvalidArguments)
    assert "empty" in _refused(engine, "  ", InvalidArguments)


def test_a_function_off_the_allow_list_is_named(engine: QueryEngine) -> None:
    message = _refused(engine, "SELECT random_function(pedidos) FROM ventas", ReadOnlyViolation)
    assert "random_function()" in message and "acp_query" in message
    assert "allowed_functions" not in message  # that is a connector's setting, not the bridge's


def test_sqlites_own_errors_come_back_as_invalid_arguments(engine: QueryEngine) -> None:
    message = _refused(engine, "SELECT channel FROM ventas WHERE sum(pedidos) > 1", InvalidArguments)
    assert "misuse of aggregate" in message


# -- dialect essentials ------------------------------------------------------------------------------
def test_integer_division_stays_integer(engine: QueryEngine) -> None:
    result, rows = _rows(engine, "SELECT SUM(items)/COUNT(*) AS avg_items, SUM(items) * 1.0 / COUNT(*) FROM orders")
    assert result.engine == "duckdb"
    assert rows[0][0] == 4 and isinstance(rows[0][0], int)
    assert rows[0][1] == pytest.approx(143 / 30)
    _, negatives = _rows(engine, "SELECT -7 / 2, 7 / -2, -7 % 2, 7 / 0 FROM orders LIMIT 1")
    assert negatives == [(-3, -3, -1, None)]  # SQLite truncates toward zero and divides by zero into NULL


def test_the_session_of_16_7_runs_on_duckdb(engine: QueryEngine) -> None:
    sql = "SELECT strftime('%m', fecha) AS mes, SUM(pedidos) AS pedidos FROM ventas GROUP BY mes ORDER BY mes"
    result, rows = _rows(engine, sql)
    assert result.engine == "duckdb" and result.notes == []
    assert [h["name"] for h in result.headers] == ["mes", "pedidos"]
    assert [r[0] for r in rows] == ["05", "06", "07", "08", "09"]
    assert "STRFTIME" in result.sql_run.upper() and "read_csv" not in result.sql_run


# -- headers and values ------------------------------------------------------------------------------
TYPED = (
    "SELECT v.fecha, v.creado, v.is_new, c.meta, v.pedidos, v.importe, v.channel, COUNT(*) OVER () AS n, "
    "AVG(v.pedidos) OVER () AS mean, v.importe > 100 AS big, date(v.fecha, '+1 day') AS next_day, "
    "strftime('%Y', v.fecha) AS year, {extra} FROM ventas v JOIN canales c USING (channel) ORDER BY v.creado"
)
TYPES = [
    "date", "datetime", "boolean", "json", "integer", "number", "string", "integer", "number", "boolean", "date",
    "string",
]  # fmt: skip


@pytest.mark.parametrize(("extra", "engine_name"), [("1 AS one", "duckdb"), ("v.importe || '' AS txt", "sqlite")])
def test_headers_carry_acp_types_on_both_engines(engine: QueryEngine, extra: str, engine_name: str) -> None:
    result, rows = _rows(engine, TYPED.format(extra=extra))
    assert result.engine == engine_name
    assert [h["type"] for h in result.headers][: len(TYPES)] == TYPES
    assert rows
    for row in rows:
        fecha, creado, is_new, meta, pedidos, importe, channel, n, mean, big, next_day, year = row[:12]
        assert dt.date.fromisoformat(fecha) and dt.datetime.fromisoformat(creado)
        assert is_new is None or isinstance(is_new, bool)
        assert big is None or isinstance(big, bool)
        assert meta is None or meta.startswith(("{", "["))
        assert pedidos is None or isinstance(pedidos, int)
        assert importe is None or isinstance(importe, float)
        assert isinstance(channel, str) and isinstance(n, int) and isinstance(mean, float)
        assert next_day == (dt.date.fromisoformat(fecha) + dt.timedelta(days=1)).isoformat()
        assert year == fecha[:4]


def test_a_fallback_says_why_in_the_notes(engine: QueryEngine) -> None:
    result, rows = _rows(engine, "SELECT channel, fecha, MAX(importe) AS best FROM ventas GROUP BY channel")
    assert result.engine == "sqlite"
    assert "ran on SQLite" in result.notes[0] and "GROUP BY" in result.notes[0]
    assert result.sql_run == "SELECT channel, fecha, MAX(importe) AS best FROM ventas GROUP BY channel"
    assert [h["type"] for h in result.headers] == ["string", "date", "number"]
    assert len(rows) == 5


# -- streaming -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def large(folder: Path) -> Dataset:
    rows = [[i, f"r{i % 7}"] for i in range(30_000)]
    return write_dataset(folder, "large", [{"name": "i", "type": "integer"}, {"name": "k", "type": "string"}], rows)


@pytest.mark.parametrize("forced_sqlite", [False, True])
def test_batches_stream_the_rows(large: Dataset, forced_sqlite: bool) -> None:
    sql = "SELECT i, k FROM large" + (" WHERE k || i <> ''" if not forced_sqlite else " WHERE 1.5 || k <> ''")
    fetched: list[int] = []
    with QueryEngine(lookup_of([large])).run(sql) as result:
        assert result.engine == ("sqlite" if forced_sqlite else "duckdb")
        fetch = result._fetch

        def counting(size: int) -> list[tuple[Any, ...]]:
            rows = fetch(size)
            fetched.append(len(rows))
            return rows

        result._fetch = counting
        batches = result.batches(1000)
        first = next(batches)
        # Only what the first batch needed was fetched: the result is read as it is consumed.
        assert len(first) == 1000 and sum(fetched) <= 1000
        sizes = [len(first)] + [len(batch) for batch in batches]
    assert sum(sizes) == 30_000
    assert max(sizes) == 1000
    assert sum(fetched) + bridge.query._FIRST_BATCH >= 30_000


def test_batches_refuse_a_size_below_one(engine: QueryEngine) -> None:
    with engine.run("SELECT 1") as result, pytest.raises(ValueError, match="at least 1"):
        next(result.batches(0))


# -- the reference loader ----------------------------------------------------------------------------
def test_the_sqlite_load_types_values_from_the_headers(datasets: list[Dataset]) -> None:
    canales = {"canales": next(d for d in datasets if d.id == "canales")}
    conn = bridge.query._sqlite_connection(canales)
    load_sqlite(conn, canales["canales"])
    rows = conn.execute("SELECT channel, objetivo, lanzado, activo, meta, typeof(objetivo) FROM canales").fetchall()
    conn.close()
    assert rows[0] == ("web", 12000.0, "2019-03-01", 1, '{"tier": 1}', "real")
    assert rows[3] == ("Phone", None, None, None, '{"tier": 3}', "null")
