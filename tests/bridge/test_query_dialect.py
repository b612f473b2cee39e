"""The dialect contract of acp_query (spec 16.4): SQLite SQL gives SQLite's answer.

Each query of the corpus runs through :class:`bridge.query.QueryEngine` and on a real SQLite loaded
the reference way (typed columns from the headers, values inserted as Python values, empty cell =
NULL), from the same CSV files. Each entry says which engine must run it: most run on DuckDB, the
rest fall back to SQLite (and say so in ``notes``).

Results are compared after this normalization, and nothing else:

* row order only where the query has an ORDER BY at its top level (otherwise both sides are sorted);
* numbers compare by value with a relative tolerance of 1e-9 (``True``/``False`` are 1/0, and a real
  equal to an integer equals it: DuckDB sums floats in another order, and ``max(3, 2.5)`` is 3 in
  SQLite and 3.0 in DuckDB);
* the columns listed as ``concat`` (``group_concat``) compare as sorted lists of their parts,
  because SQLite documents the order of the parts as arbitrary;
* column names must be equal.
"""

from __future__ import annotations

import csv
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bridge.datasets import Dataset
from bridge.query import QueryEngine
from tests.bridge_query_support import (
    CANALES_HEADERS,
    VENTAS_HEADERS,
    canales_rows,
    lookup_of,
    ventas_rows,
    write_dataset,
)

DUCKDB, SQLITE = "duckdb", "sqlite"

# (SQL, the engine that must run it, the indexes of group_concat columns)
CORPUS: list[tuple[str, str, tuple[int, ...]]] = [
    # -- the session of 16.7 and monthly totals
    ("SELECT strftime('%m', fecha) AS mes, SUM(pedidos) AS pedidos FROM ventas GROUP BY mes", DUCKDB, ()),
    (
        "SELECT strftime('%Y-%m', fecha) AS month, channel, SUM(pedidos) AS orders, ROUND(SUM(importe), 2) AS revenue "
        "FROM ventas GROUP BY month, channel ORDER BY month, channel",
        DUCKDB,
        (),
    ),
    ("SELECT substr(fecha, 1, 7) AS ym, SUM(pedidos), COUNT(*) FROM ventas GROUP BY ym ORDER BY ym", DUCKDB, ()),
    ("SELECT strftime('%Y-%m', fecha), COUNT(DISTINCT channel) FROM ventas GROUP BY 1 ORDER BY 1", DUCKDB, ()),
    (
        "SELECT CAST(strftime('%m', fecha) AS INTEGER) AS month_num, COUNT(*) AS n FROM ventas "
        "GROUP BY month_num ORDER BY month_num",
        DUCKDB,
        (),
    ),
    # -- integer division, averages, rounding
    ("SELECT channel, SUM(pedidos) / COUNT(*) AS avg_orders FROM ventas GROUP BY channel ORDER BY channel", DUCKDB, ()),
    (
        "SELECT ajuste, ajuste / 4 AS q, ajuste % 4 AS r, pedidos / 0 AS z FROM ventas ORDER BY creado LIMIT 40",
        DUCKDB,
        (),
    ),
    (
        "SELECT country, AVG(importe) AS avg_amount, COUNT(*) AS n FROM ventas GROUP BY country "
        "ORDER BY avg_amount DESC",
        DUCKDB,
        (),
    ),
    (
        "SELECT ROUND(importe / 3, 2) AS third, ROUND(importe) AS whole, ROUND(-2.5), ROUND(0.5), ROUND(pedidos, 1) "
        "FROM ventas ORDER BY creado LIMIT 40",
        DUCKDB,
        (),
    ),
    (
        "SELECT CAST(importe AS INTEGER) AS whole, COUNT(*) FROM ventas WHERE importe < 0 GROUP BY whole ORDER BY whole",
        DUCKDB,
        (),
    ),
    (
        "SELECT channel, total(importe) AS t, SUM(importe) AS s FROM ventas GROUP BY channel ORDER BY channel",
        DUCKDB,
        (),
    ),
    ("SELECT total(importe), SUM(importe) FROM ventas WHERE importe > 100000", DUCKDB, ()),
    # -- top-N, LIMIT/OFFSET, DISTINCT
    (
        "SELECT fecha, channel, importe FROM ventas WHERE importe IS NOT NULL ORDER BY importe DESC, creado LIMIT 10",
        DUCKDB,
        (),
    ),
    ("SELECT fecha, SUM(importe) AS revenue FROM ventas GROUP BY fecha ORDER BY fecha LIMIT 10 OFFSET 20", DUCKDB, ()),
    ("SELECT DISTINCT country FROM ventas ORDER BY country", DUCKDB, ()),
    ("SELECT channel, COUNT(*) AS n FROM ventas GROUP BY channel ORDER BY n DESC, channel LIMIT 3", DUCKDB, ()),
    # -- dates as text, date functions
    ("SELECT COUNT(*) AS n, SUM(pedidos) FROM ventas WHERE fecha >= '2026-06' AND fecha < '2026-07'", DUCKDB, ()),
    (
        "SELECT channel, SUM(importe) FROM ventas WHERE fecha BETWEEN '2026-07-01' AND '2026-07-31' "
        "GROUP BY channel ORDER BY 2 DESC",
        DUCKDB,
        (),
    ),
    (
        "SELECT fecha, date(fecha, '+7 days') AS next_week, date(fecha, '-1 month') AS prev_month, "
        "date(fecha, '+1 month') AS next_month, date(fecha, 'start of month', '+1 month', '-1 day') AS month_end "
        "FROM ventas ORDER BY creado",
        DUCKDB,
        (),
    ),
    ("SELECT date(fecha, 'start of month') AS month_start, COUNT(*) FROM ventas GROUP BY 1 ORDER BY 1", DUCKDB, ()),
    ("SELECT MAX(julianday(fecha)) - MIN(julianday(fecha)) AS span_days FROM ventas", DUCKDB, ()),
    (
        "SELECT v.channel, CAST(julianday(MAX(v.fecha)) - julianday(c.lanzado) AS INTEGER) AS days_since_launch "
        "FROM ventas v JOIN canales c ON c.channel = v.channel GROUP BY v.channel, c.lanzado ORDER BY v.channel",
        DUCKDB,
        (),
    ),
    (
        "SELECT fecha, strftime('%s', fecha) AS epoch, CAST(strftime('%s', creado) AS INTEGER) - "
        "CAST(strftime('%s', fecha) AS INTEGER) AS seconds_in_day FROM ventas ORDER BY creado LIMIT 15",
        DUCKDB,
        (),
    ),
    (
        "SELECT strftime('%w', fecha) AS dow, COUNT(*) AS n, SUM(pedidos) FROM ventas GROUP BY dow ORDER BY dow",
        DUCKDB,
        (),
    ),
    ("SELECT strftime('%Y-%W', fecha) AS week, SUM(importe) FROM ventas GROUP BY week ORDER BY week", DUCKDB, ()),
    ("SELECT strftime('%j', fecha), strftime('%d/%m/%Y', fecha) FROM ventas ORDER BY creado LIMIT 10", DUCKDB, ()),
    ("SELECT COUNT(*) FROM ventas WHERE fecha <= date('now') AND fecha > date('now', '-5 years')", DUCKDB, ()),
    ("SELECT strftime('%H', creado) AS hour, COUNT(*) FROM ventas GROUP BY hour ORDER BY hour", DUCKDB, ()),
    (
        "SELECT datetime(creado, '+90 minutes'), time(creado), date(creado), julianday(creado), unixepoch(creado) "
        "FROM ventas ORDER BY creado LIMIT 12",
        DUCKDB,
        (),
    ),
    ("SELECT COUNT(*) FROM ventas WHERE creado >= '2026-07-01T12' AND creado < '2026-08'", DUCKDB, ()),
    (
        "SELECT date('2026-01-31', '+1 month'), date('2024-02-29', '+1 year'), date('2026-07-15', 'weekday 0')",
        DUCKDB,
        (),
    ),
    # -- windows
    (
        "SELECT fecha, SUM(pedidos) AS day_orders, SUM(SUM(pedidos)) OVER (ORDER BY fecha) AS running "
        "FROM ventas GROUP BY fecha ORDER BY fecha",
        DUCKDB,
        (),
    ),
    (
        "SELECT * FROM (SELECT channel, country, SUM(importe) AS revenue, RANK() OVER (PARTITION BY channel "
        "ORDER BY SUM(importe) DESC) AS rnk FROM ventas GROUP BY channel, country) WHERE rnk <= 2 ORDER BY channel, rnk",
        DUCKDB,
        (),
    ),
    (
        "WITH m AS (SELECT strftime('%Y-%m', fecha) AS month, SUM(importe) AS revenue FROM ventas GROUP BY month) "
        "SELECT month, revenue, revenue - LAG(revenue) OVER (ORDER BY month) AS change, "
        "ROUND(100.0 * (revenue - LAG(revenue) OVER (ORDER BY month)) / LAG(revenue) OVER (ORDER BY month), 1) AS pct "
        "FROM m ORDER BY month",
        DUCKDB,
        (),
    ),
    (
        "SELECT fecha, AVG(SUM(pedidos)) OVER (ORDER BY fecha ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) AS ma7 "
        "FROM ventas GROUP BY fecha ORDER BY fecha",
        DUCKDB,
        (),
    ),
    (
        "SELECT channel, SUM(importe) AS rev, SUM(importe) * 100.0 / SUM(SUM(importe)) OVER () AS pct "
        "FROM ventas GROUP BY channel ORDER BY channel",
        DUCKDB,
        (),
    ),
    (
        "SELECT fecha, ROW_NUMBER() OVER (ORDER BY creado) AS rn, NTILE(4) OVER (ORDER BY creado) AS quartile "
        "FROM ventas ORDER BY rn LIMIT 30",
        DUCKDB,
        (),
    ),
    # -- CTEs and joins of two datasets
    (
        "WITH t AS (SELECT channel, SUM(importe) AS revenue FROM ventas GROUP BY channel) SELECT c.label, t.revenue, "
        "c.objetivo, ROUND(t.revenue / c.objetivo * 100, 1) AS pct_target FROM t JOIN canales c ON c.channel = t.channel "
        "ORDER BY c.label",
        DUCKDB,
        (),
    ),
    (
        "SELECT c.channel, COUNT(v.fecha) AS n, SUM(v.pedidos) FROM canales c LEFT JOIN ventas v ON v.channel = c.channel "
        "GROUP BY c.channel ORDER BY c.channel",
        DUCKDB,
        (),
    ),
    (
        "SELECT v.fecha, c.label, v.is_new, c.activo, c.meta FROM ventas v JOIN canales c USING (channel) ORDER BY v.creado LIMIT 20",
        DUCKDB,
        (),
    ),
    ("SELECT COUNT(*) FROM ventas WHERE channel IN (SELECT channel FROM canales WHERE activo)", DUCKDB, ()),
    (
        "SELECT c.label FROM canales c WHERE EXISTS (SELECT 1 FROM ventas v WHERE v.channel = c.channel AND v.importe > 850) "
        "ORDER BY c.label",
        DUCKDB,
        (),
    ),
    (
        "SELECT channel, ROUND(100.0 * SUM(importe) / (SELECT SUM(importe) FROM ventas), 2) AS share FROM ventas "
        "GROUP BY channel ORDER BY share DESC",
        DUCKDB,
        (),
    ),
    # -- CASE buckets, iif, NULL handling, HAVING
    (
        "SELECT CASE WHEN importe < 100 THEN 'small' WHEN importe < 500 THEN 'medium' ELSE 'large' END AS bucket, "
        "COUNT(*) AS n FROM ventas GROUP BY bucket ORDER BY bucket",
        DUCKDB,
        (),
    ),
    (
        "SELECT iif(pedidos > 20, 'high', 'low') AS level, COUNT(*) FROM ventas GROUP BY level ORDER BY level",
        DUCKDB,
        (),
    ),
    (
        "SELECT COALESCE(channel, 'unknown') AS ch, COUNT(*) AS n, COUNT(importe) AS with_amount, "
        "SUM(CASE WHEN importe IS NULL THEN 1 ELSE 0 END) AS missing FROM ventas GROUP BY ch ORDER BY ch",
        DUCKDB,
        (),
    ),
    (
        "SELECT channel, SUM(IFNULL(importe, 0)) AS s, AVG(NULLIF(pedidos, 0)) AS avg_nonzero FROM ventas "
        "GROUP BY channel ORDER BY channel",
        DUCKDB,
        (),
    ),
    (
        "SELECT country, COUNT(*) AS n FROM ventas GROUP BY country HAVING COUNT(*) > 60 ORDER BY n DESC, country",
        DUCKDB,
        (),
    ),
    (
        "SELECT channel, SUM(pedidos) AS total FROM ventas GROUP BY channel HAVING total > 1000 ORDER BY total",
        DUCKDB,
        (),
    ),
    ("SELECT fecha, pedidos FROM ventas WHERE pedidos IS NULL OR importe IS NULL ORDER BY creado", DUCKDB, ()),
    # -- booleans
    ("SELECT is_new, COUNT(*) AS n, SUM(importe) FROM ventas GROUP BY is_new ORDER BY is_new", DUCKDB, ()),
    (
        "SELECT channel, SUM(is_new) AS new_customers, AVG(is_new) AS share_new FROM ventas GROUP BY channel ORDER BY channel",
        DUCKDB,
        (),
    ),
    (
        "SELECT COUNT(*), SUM(is_new = 1), SUM(NOT is_new), SUM(importe > 500) FROM ventas "
        "WHERE is_new OR importe > 100",
        DUCKDB,
        (),
    ),
    ("SELECT COUNT(*) FROM ventas WHERE is_new = TRUE AND pedidos > '30'", DUCKDB, ()),
    # -- strings
    (
        "SELECT upper(substr(country, 1, 2)) AS cc, lower(channel) AS ch, length(nota) AS len, instr(nota, 'o') AS pos, "
        "replace(nota, 'promo', 'P') AS short, trim('  ' || channel || '  ') AS trimmed, upper(nota) AS shout "
        "FROM ventas ORDER BY creado LIMIT 40",
        DUCKDB,
        (),
    ),
    ("SELECT COUNT(*) FROM ventas WHERE nota LIKE '%promo%'", DUCKDB, ()),
    (
        "SELECT country, COUNT(*) FROM ventas WHERE country LIKE 'i%' OR country LIKE 'é%' OR country LIKE 'P_' "
        "GROUP BY country ORDER BY country",
        DUCKDB,
        (),
    ),
    (
        "SELECT nota, COUNT(*) FROM ventas WHERE nota LIKE '%!%%' ESCAPE '!' OR nota GLOB 'P*' GROUP BY nota ORDER BY nota",
        DUCKDB,
        (),
    ),
    (
        "SELECT channel || ' (' || country || ')' AS label, COUNT(*) FROM ventas GROUP BY label ORDER BY label",
        DUCKDB,
        (),
    ),
    (
        "SELECT channel, printf('%.2f', SUM(importe)) AS revenue, printf('%d orders', SUM(pedidos)) AS orders, "
        "printf('%5.1f%%', AVG(is_new) * 100) AS share FROM ventas GROUP BY channel ORDER BY channel",
        DUCKDB,
        (),
    ),
    (
        "SELECT fecha, group_concat(channel) FROM ventas WHERE fecha < '2026-05-20' GROUP BY fecha ORDER BY fecha",
        DUCKDB,
        (1,),
    ),
    ("SELECT country, group_concat(DISTINCT channel) FROM ventas GROUP BY country ORDER BY country", DUCKDB, (1,)),
    # -- scalar functions and types
    (
        "SELECT ajuste, ABS(ajuste), MAX(ajuste, 0), MIN(ajuste, pedidos), MAX(importe, ajuste) FROM ventas "
        "ORDER BY creado LIMIT 40",
        DUCKDB,
        (),
    ),
    (
        "SELECT typeof(pedidos), typeof(importe), typeof(fecha), typeof(is_new), COUNT(*) FROM ventas "
        "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
        DUCKDB,
        (),
    ),
    (
        "SELECT CAST(nota AS INTEGER), CAST('12abc' AS INTEGER), CAST(' 3.9e1x' AS REAL), CAST(pedidos AS TEXT) FROM ventas ORDER BY creado LIMIT 10",
        DUCKDB,
        (),
    ),
    ("SELECT 'ventas' AS src, COUNT(*) AS n FROM ventas UNION ALL SELECT 'canales', COUNT(*) FROM canales", DUCKDB, ()),
    # -- what runs on SQLite
    ("SELECT importe || ' EUR' FROM ventas ORDER BY creado LIMIT 5", SQLITE, ()),
    ("SELECT channel, fecha, MAX(importe) AS best FROM ventas GROUP BY channel ORDER BY channel", SQLITE, ()),
    ("SELECT channel, json_extract(meta, '$.tier') AS tier FROM canales ORDER BY channel", SQLITE, ()),
    ("SELECT CAST(fecha AS DATE) AS d, COUNT(*) FROM ventas GROUP BY d ORDER BY d", SQLITE, ()),
    ('SELECT COUNT(*) FROM ventas WHERE channel = "web"', SQLITE, ()),
]

# Edge cases where SQLite and DuckDB differ unless the translation handles them, grouped into queries
# over ventas (ordered by its unique creado): each group runs on DuckDB; the last ones must fall back.
EDGES: list[tuple[str, str]] = [
    (
        "ajuste / 3, ajuste % 3, -ajuste / 2, ajuste / -2, ajuste % -5, pedidos / 0, importe / 0, pedidos % 0, "
        "importe % 2, 7.5 % 2, 1 / 2, 1.0 / 2, pedidos * 1.0 / 3, -pedidos / 3, abs(ajuste), -importe",
        DUCKDB,
    ),
    (
        "round(importe, 1), round(importe), round(ajuste / 3.0, 3), round(importe, 40), round(2.5), round(-2.5), "
        "round(0.49999999999999994), round(1.005, 2), round(2.675, 2), round(-0.001, 2), round(pedidos), round(NULL)",
        DUCKDB,
    ),
    (
        "printf('%.3f', importe), printf('%d', importe), printf('%s|%5d|%-5d|%05d', channel, pedidos, ajuste, ajuste), "
        "printf('%.0f', importe), printf('%+.1f', importe), printf('%i', pedidos), format('%d-%s', pedidos, nota), "
        "printf('%.2f', NULL), printf('%d', NULL), printf('%s', NULL), printf('%d', -7.9), printf('%.1f', -0.04)",
        DUCKDB,
    ),
    (
        "upper(country), lower(country), upper(nota), length(country), length(pedidos), substr(nota, 2, 3), "
        "substr(nota, -3), substr(nota, 0, 2), substr(nota, 3, -2), substr(pedidos, 1, 1), instr(nota, 'o'), "
        "instr(country, 'É'), replace(nota, 'o', '0'), trim(nota, 'P'), ltrim(nota, 'Pr'), rtrim(nota, '%y'), "
        "channel || pedidos, channel || is_new, pedidos || ajuste, nota || NULL",
        DUCKDB,
    ),
    (
        "nota LIKE 'p%', nota NOT LIKE '%O%', country LIKE 'é%', country LIKE 'É%', country LIKE '_ire', "
        "nota LIKE 'x\\%y' ESCAPE '\\', pedidos LIKE '1%', nota GLOB '*o*', country LIKE '%i%', country LIKE '%İ%', "
        "nota LIKE NULL, nota LIKE ''",
        DUCKDB,
    ),
    (
        "CAST(nota AS INTEGER), CAST(nota AS REAL), CAST(importe AS INTEGER), CAST(ajuste AS REAL), "
        "CAST(pedidos AS TEXT), CAST(is_new AS INTEGER), CAST('  -12.5e1 ' AS REAL), CAST('0x10' AS INTEGER), "
        "CAST('+7' AS INTEGER), CAST('abc' AS REAL), CAST(NULL AS INTEGER), CAST(fecha AS INTEGER)",
        DUCKDB,
    ),
    (
        "max(pedidos, ajuste, 5), min(importe, pedidos), max(nota, channel), min(channel, 'm'), coalesce(pedidos, ajuste), "
        "coalesce(importe, pedidos), nullif(ajuste, 0), iif(is_new, 'new', 'old'), "
        "CASE pedidos WHEN 1 THEN 'one' ELSE 'many' END, CASE WHEN pedidos > 100 THEN 'x' END, pedidos IN (1, NULL), "
        "pedidos NOT IN (1, NULL), pedidos = '5', pedidos > '30', channel = 5, pedidos IS ajuste, typeof(pedidos), "
        "typeof(importe), typeof(nota), typeof(is_new), typeof(1.5), typeof(NULL)",
        DUCKDB,
    ),
    (
        "date(fecha, '+1 day'), date(fecha, '-1 days'), date(fecha, '+2 months'), date(fecha, '-1 year'), "
        "date(fecha, 'weekday 1'), date(fecha, 'start of year'), date(fecha, '+1.5 days'), date(fecha, '-13 months'), "
        "datetime(creado, '+36 hours', '-15 minutes', '+30 seconds'), time(creado, '-1 seconds'), "
        "strftime('%Y-%m-%d %H:%M:%f', creado), strftime('%j %W %w %%', fecha), strftime('%s', creado), "
        "julianday(creado), unixepoch(creado, '+1 day'), date(pedidos * 100000, 'unixepoch'), datetime(ajuste + 2460000), "
        "date('2026-01-31', '+1 month'), date('2024-02-29', '+1 year'), date('2026-13-01'), "
        "datetime('2026-07-01T10:00:00+05:00'), date(fecha, 'START OF MONTH')",
        DUCKDB,
    ),
    ("SELECT pedidos, nota FROM ventas ORDER BY pedidos, creado LIMIT 30", DUCKDB),
    ("SELECT pedidos, nota FROM ventas ORDER BY nota DESC, creado LIMIT 30", DUCKDB),
    ("SELECT pedidos, nota FROM ventas ORDER BY pedidos NULLS LAST, creado LIMIT 30", DUCKDB),
    (
        "SELECT sum(pedidos), avg(importe), min(fecha), max(fecha), total(pedidos), group_concat(nota), count(*) "
        "FROM ventas WHERE 1 = 0",
        DUCKDB,
    ),
    ("date(fecha, ' +1 day')", SQLITE),
    ("date('2026-02-30')", SQLITE),
    ("length(importe)", SQLITE),
    ("CAST(importe AS NUMERIC)", SQLITE),
    ("typeof(pedidos + 1)", SQLITE),
    ("coalesce(pedidos, 'x')", SQLITE),
    ("strftime('%J', fecha)", SQLITE),
    ("date(nota)", SQLITE),
    ("is_new = 'true'", SQLITE),
]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> list[Dataset]:
    folder = tmp_path_factory.mktemp("acp-data")
    return [
        write_dataset(folder, "ventas", VENTAS_HEADERS, ventas_rows()),
        write_dataset(folder, "canales", CANALES_HEADERS, canales_rows()),
    ]


@pytest.fixture(scope="module")
def reference(datasets: list[Dataset]) -> sqlite3.Connection:
    """SQLite loaded as the reference bridge did: typed columns from the headers, Python values."""
    types = {"integer": "INTEGER", "number": "REAL", "boolean": "INTEGER"}
    conn = sqlite3.connect(":memory:")
    for dataset in datasets:
        columns = ", ".join(f'"{h["name"]}" {types.get(h["type"], "TEXT")}' for h in dataset.headers)
        conn.execute(f'CREATE TABLE "{dataset.id}" ({columns})')
        with Path(dataset.csv_path).open(encoding="utf-8", newline="") as file:
            rows = list(csv.reader(file))[1:]
        convert = {
            "integer": int,
            "number": float,
            "boolean": lambda text: text == "true",
        }
        values = [
            [
                None if text == "" else convert.get(h["type"], str)(text)
                for h, text in zip(dataset.headers, row, strict=True)
            ]
            for row in rows
        ]
        conn.executemany(f'INSERT INTO "{dataset.id}" VALUES ({", ".join("?" for _ in dataset.headers)})', values)
    return conn


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-12)
    return type(left) is type(right) and left == right


def _normalized(rows: list[tuple[Any, ...]], concat: tuple[int, ...]) -> list[list[Any]]:
    out = []
    for row in rows:
        values = list(row)
        for index in concat:
            if values[index] is not None:
                values[index] = sorted(values[index].split(","))
        out.append(values)
    return out


def _sort_key(row: list[Any]) -> tuple[Any, ...]:
    return tuple((value is not None, str(type(value) is str), str(value)) for value in row)


def _has_top_level_order(sql: str) -> bool:
    import sqlglot

    return sqlglot.parse_one(sql, read="sqlite").args.get("order") is not None


@pytest.mark.parametrize(("sql", "engine", "concat"), CORPUS, ids=[f"q{i:02d}" for i in range(len(CORPUS))])
def test_corpus_query_gives_sqlites_answer(
    sql: str, engine: str, concat: tuple[int, ...], datasets: list[Dataset], reference: sqlite3.Connection
) -> None:
    cursor = reference.execute(sql)
    expected_names = [d[0] for d in cursor.description]
    expected = _normalized(cursor.fetchall(), concat)
    with QueryEngine(lookup_of(datasets)).run(sql) as result:
        got = _normalized([row for batch in result.batches(7) for row in batch], concat)
        assert result.engine == engine, result.notes
        assert [h["name"] for h in result.headers] == expected_names
        assert bool(result.notes) == (engine == SQLITE)
    if not _has_top_level_order(sql):
        expected.sort(key=_sort_key)
        got.sort(key=_sort_key)
    assert len(got) == len(expected)
    for got_row, expected_row in zip(got, expected, strict=True):
        assert len(got_row) == len(expected_row)
        assert all(_same(g, e) for g, e in zip(got_row, expected_row, strict=True)), (got_row, expected_row)


@pytest.mark.parametrize(("sql", "engine"), EDGES, ids=[f"e{i:02d}" for i in range(len(EDGES))])
def test_edge_case_gives_sqlites_answer(
    sql: str, engine: str, datasets: list[Dataset], reference: sqlite3.Connection
) -> None:
    if not sql.startswith("SELECT"):
        sql = f"SELECT {sql} FROM ventas ORDER BY creado"
    test_corpus_query_gives_sqlites_answer(sql, engine, (), datasets, reference)


def test_the_corpus_is_large_and_mostly_runs_on_duckdb() -> None:
    on_duckdb = sum(1 for _, engine, _ in CORPUS if engine == DUCKDB)
    assert len(CORPUS) >= 40
    assert on_duckdb >= 0.9 * len(CORPUS)
