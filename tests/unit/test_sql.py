"""Unit tests for shared/sql.py: the parser layer of read-only (spec 10.4) and date literals."""

from __future__ import annotations

import re

import pytest

from shared.errors import AcpError, InvalidArguments, ReadOnlyViolation
from shared.sql import check_query_only, date_literals, describe_syntax_error

DIALECT = "sqlite"
FORBIDDEN = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})

# (statement, the statement type the message must name). Spec 10.4: statements that modify
# data or schema, or have side effects, are refused with ACP_READ_ONLY_VIOLATION.
WRITES: list[tuple[str, str]] = [
    # data modification
    ("INSERT INTO t VALUES (1)", "INSERT"),
    ("INSERT INTO t SELECT * FROM s", "INSERT"),
    ("insert or replace into t values (1)", "INSERT"),
    ("REPLACE INTO t VALUES (1)", "REPLACE"),
    ("INSERT INTO t (a) VALUES (1) ON CONFLICT(a) DO UPDATE SET a = 2", "INSERT"),  # upsert
    ("UPDATE t SET a = 1", "UPDATE"),
    ("update t set a = 1 where b in (select 1)", "UPDATE"),
    ("DELETE FROM t", "DELETE"),
    ("DELETE FROM t WHERE a = 1 RETURNING *", "DELETE"),
    ("WITH x AS (SELECT 1) DELETE FROM t", "DELETE"),
    ("WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM x", "INSERT"),
    # schema
    ("CREATE TABLE t (a INT)", "CREATE"),
    ("CREATE TEMP TABLE x (a)", "CREATE"),
    ("CREATE TABLE t2 AS SELECT * FROM t", "CREATE"),
    ("CREATE VIEW v AS SELECT 1", "CREATE"),
    ("CREATE INDEX i ON t(a)", "CREATE"),
    ("CREATE VIRTUAL TABLE v USING fts5(a)", "CREATE"),
    ("DROP TABLE t", "DROP"),
    ("DROP VIEW IF EXISTS v", "DROP"),
    ("DROP INDEX i", "DROP"),
    ("ALTER TABLE t ADD COLUMN b INT", "ALTER"),
    ("ALTER TABLE t RENAME TO u", "ALTER"),
    # other databases and files
    ("ATTACH DATABASE '/tmp/other.db' AS other", "ATTACH"),
    ("ATTACH '/tmp/other.db' AS other", "ATTACH"),
    ("DETACH DATABASE other", "DETACH"),
    ("DETACH other", "DETACH"),
    ("VACUUM", "VACUUM"),
    ("VACUUM INTO '/tmp/copy.db'", "VACUUM"),
    ("vacuum main into '/tmp/copy.db'", "VACUUM"),
    # pragma assignments
    ("PRAGMA journal_mode = DELETE", "PRAGMA"),
    ("PRAGMA writable_schema = 1", "PRAGMA"),
    ("PRAGMA foreign_keys=OFF", "PRAGMA"),
    ("PRAGMA user_version = 5", "PRAGMA"),
    # transactions
    ("BEGIN", "BEGIN"),
    ("BEGIN TRANSACTION", "BEGIN"),
    ("BEGIN IMMEDIATE", "BEGIN"),
    ("COMMIT", "COMMIT"),
    ("ROLLBACK", "ROLLBACK"),
    ("ROLLBACK TO sp", "ROLLBACK"),
    ("SAVEPOINT sp", "SAVEPOINT"),
    ("RELEASE sp", "RELEASE"),
    # data-modifying CTEs
    ("WITH d AS (DELETE FROM t RETURNING a) SELECT * FROM d", "DELETE"),
    ("WITH d AS (INSERT INTO t VALUES (1) RETURNING a) SELECT * FROM d", "INSERT"),
    ("WITH d AS (UPDATE t SET a = 1 RETURNING a) SELECT * FROM d", "UPDATE"),
    # SELECT ... INTO creates a table
    ("SELECT * INTO t2 FROM t", "INTO"),
    ("select a into newtab from t", "INTO"),
    # several statements
    ("SELECT 1; DROP TABLE t", "DROP"),
    ("DROP TABLE t; SELECT 1", "DROP"),
    ("SELECT 1 /* ; */ ; DELETE FROM t", "DELETE"),
    ("SELECT 1 -- comment\n; DELETE FROM t", "DELETE"),
    ("SELECT 1; /* cleanup */ DROP TABLE t", "DROP"),
    # hidden after comments
    ("/* harmless */ DROP TABLE t", "DROP"),
    ("-- SELECT 1\nDELETE FROM t", "DELETE"),
    ("/* SELECT */ DELETE FROM t", "DELETE"),
    # case tricks
    ("dElEtE fRoM t", "DELETE"),
    ("DrOp TaBlE t", "DROP"),
    ("InSeRt InTo t VaLuEs (1)", "INSERT"),
]


@pytest.mark.parametrize(("sql", "statement"), WRITES, ids=[w[0] for w in WRITES])
def test_write_or_side_effect_statement_is_read_only_violation_naming_it(sql: str, statement: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, DIALECT, FORBIDDEN)
    assert info.value.code == -32019
    assert info.value.name == "ACP_READ_ONLY_VIOLATION"
    assert statement in info.value.message


def test_write_corpus_is_large_enough() -> None:
    assert len(WRITES) >= 30


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT load_extension('/tmp/evil.so')",
        "select LOAD_EXTENSION('/tmp/evil.so')",
        "SELECT readfile('/etc/passwd')",
        "SELECT writefile('/tmp/x', 'y')",
        "SELECT upper(load_extension('x'))",
        "SELECT * FROM t WHERE a = (SELECT load_extension('x'))",
        "WITH a AS (SELECT readfile('/etc/passwd') AS c) SELECT c FROM a",
    ],
)
def test_forbidden_function_is_read_only_violation_naming_it(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, DIALECT, FORBIDDEN)
    named = [f for f in ("load_extension", "readfile", "writefile") if f in info.value.message]
    assert named, info.value.message
    assert named[0] in sql.lower()


def test_forbidden_functions_match_case_insensitively() -> None:
    with pytest.raises(ReadOnlyViolation):
        check_query_only("SELECT load_extension('x')", DIALECT, {"LOAD_EXTENSION"})


def test_ordinary_functions_are_not_forbidden() -> None:
    check_query_only("SELECT upper(name), count(*), date('now') FROM t GROUP BY 1", DIALECT, FORBIDDEN)


@pytest.mark.parametrize(
    "sql", ["SELECT pg_ls_logicalsnapdir()", "SELECT * FROM PG_LS_DIR('.')", "SELECT pg_catalog.pg_ls_waldir()"]
)
def test_a_name_ending_in_a_star_forbids_its_whole_family(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, "postgres", {"pg_ls_*"})
    assert "pg_ls_" in info.value.message


def test_a_family_prefix_forbids_nothing_outside_it() -> None:
    check_query_only("SELECT pg_size_pretty(1), pg_lsn('0/0'), ls_count FROM t", "postgres", {"pg_ls_*", "ls_*"})


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM pg_hba_file_rules",
        "select * from pg_catalog.PG_HBA_FILE_RULES",
        'SELECT * FROM "pg_hba_file_rules"',
        "SELECT 1 WHERE EXISTS (SELECT 1 FROM pg_hba_file_rules)",
        "SELECT t.a FROM t JOIN pg_hba_file_rules r ON true",
        "WITH x AS (SELECT * FROM pg_hba_file_rules) SELECT * FROM x",
    ],
)
def test_forbidden_relation_is_read_only_violation_naming_it(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, "postgres", (), {"pg_hba_file_rules"})
    assert "pg_hba_file_rules" in info.value.message


def test_a_forbidden_relation_name_as_a_column_or_alias_passes() -> None:
    check_query_only("SELECT pg_hba_file_rules FROM t AS pg_hba_file_rules", "postgres", (), {"pg_hba_file_rules"})


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "select * from t",
        "SELECT a, b FROM t WHERE a > 1 ORDER BY b LIMIT 5",
        "SELECT count(*) FROM t GROUP BY a HAVING count(*) > 1",
        "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT x FROM c",
        "SELECT 1 UNION SELECT 2",
        "SELECT 1 UNION ALL SELECT 2",
        "SELECT 1 INTERSECT SELECT 1",
        "SELECT 1 EXCEPT SELECT 2",
        "SELECT * FROM (SELECT a FROM t) s WHERE a IN (SELECT b FROM u)",
        "SELECT * FROM (VALUES (1), (2))",
        "VALUES (1, 2), (3, 4)",
        "SELECT 'DELETE FROM t; DROP TABLE t'",
        'SELECT "delete", "update" FROM t',
        "SELECT 1;",
        "/* a comment */ SELECT 1",
        "SELECT 1 -- DROP TABLE t",
        "SELECT 1; -- done",
        "SELECT 1; /* end */",
    ],
)
def test_read_only_query_passes(sql: str) -> None:
    check_query_only(sql, DIALECT, FORBIDDEN)


@pytest.mark.parametrize(
    "sql",
    ["SELECT 1; SELECT 2", "SELECT a FROM t; WITH x AS (SELECT 1) SELECT * FROM x", "SELECT 1; /* next */ SELECT 2"],
)
def test_several_statements_are_refused_even_when_harmless(sql: str) -> None:
    """One statement per call is a read-only layer (transaction escapes need several); the message says so."""
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, DIALECT, FORBIDDEN)
    assert info.value.code == -32019
    assert "one query per call" in info.value.message


@pytest.mark.parametrize("sql", ["", "   ", "\n\t", ";", "-- only a comment", "/* nothing */"])
def test_empty_sql_is_invalid_arguments(sql: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        check_query_only(sql, DIALECT, FORBIDDEN)
    assert "empty" in info.value.message.lower()


# -- date_literals ---------------------------------------------------------------------------------


def test_date_literals_finds_dashed_and_compact_dates_in_order() -> None:
    sql = "SELECT * FROM t WHERE d BETWEEN '2024-01-05' AND '20240131'"
    assert date_literals(sql, DIALECT) == ["2024-01-05", "2024-01-31"]


def test_date_literals_keeps_order_of_appearance_not_sorted() -> None:
    sql = "SELECT * FROM t WHERE d = '2024-05-01' OR d = '2024-01-01'"
    assert date_literals(sql, DIALECT) == ["2024-05-01", "2024-01-01"]


def test_date_literals_are_unique() -> None:
    sql = "SELECT * FROM t WHERE a = '2024-02-01' OR b = '20240201' OR c = '2024-02-01' OR d = '2024-03-01'"
    assert date_literals(sql, DIALECT) == ["2024-02-01", "2024-03-01"]


@pytest.mark.parametrize(
    "literal", ["2024-04-02 10:00:00", "2024-04-02T10:00:00Z", "2024-04-02 10:00:00.123+02:00", "2024-04-02T23:59"]
)
def test_date_literals_takes_the_day_of_timestamp_literals(literal: str) -> None:
    assert date_literals(f"SELECT * FROM t WHERE ts >= '{literal}'", DIALECT) == ["2024-04-02"]


def test_date_literals_ignores_identifiers_and_numbers() -> None:
    sql = 'SELECT "2024-01-01", [2024-01-02], `2024-01-03`, 20240104 FROM events_20240105'
    assert date_literals(sql, DIALECT) == []


@pytest.mark.parametrize(
    "literal",
    ["2024-02-30", "2023-02-29", "2024-13-01", "20240230", "20241301", "2024-6-1", "2024/06/01", "12345678", "abc"],
)
def test_date_literals_ignores_invalid_or_non_date_strings(literal: str) -> None:
    assert date_literals(f"SELECT * FROM t WHERE a = '{literal}'", DIALECT) == []


def test_date_literals_ignores_an_iso_week_string() -> None:
    # '2024-W01-1' is neither YYYY-MM-DD nor YYYYMMDD.
    assert date_literals("SELECT * FROM t WHERE week = '2024-W01-1'", DIALECT) == []


def test_date_literals_ignores_commented_out_dates() -> None:
    assert date_literals("SELECT '2024-01-01' -- '2024-01-02'", DIALECT) == ["2024-01-01"]


def test_date_literals_mixes_valid_and_invalid() -> None:
    sql = "SELECT * FROM t WHERE a IN ('2024-02-30', '2024-03-01', 'x', '20240302')"
    assert date_literals(sql, DIALECT) == ["2024-03-01", "2024-03-02"]


def test_date_literals_of_untokenizable_or_empty_sql_is_empty() -> None:
    assert date_literals("SELECT 'unterminated", DIALECT) == []
    assert date_literals("", DIALECT) == []


# -- syntax errors in words -------------------------------------------------------------------------
DIALECTS = ("sqlite", "duckdb", "postgres", "mysql", "bigquery")
# SQL every dialect's parser or tokenizer refuses: broken clauses, operators, parentheses, quotes.
BROKEN_EVERYWHERE = [
    "SELECT * FROM t WHERE",
    "SELECT a FROM t WHERE a = = 1",
    "SELECT 1 +",
    "SELECT (1",
    "SELECT count(* FROM t",
    "SELECT * FROM (SELECT 1",
    "SELECT a FROM t ORDER BY a LIMIT",
    "SELECT CASE WHEN a THEN FROM t",
    "SELECT * FROM t WHERE a = 1 AND",
    "SELECT * FROM t\nWHERE x IN (1, 2\nORDER BY y",
    "SELECT 'unterminated",
    "SELECT a FROM t WHERE b = 'it''s",
    "WITH c AS (SELECT 1) SELECT * FROM c WHERE (a > 1",
    "SELECT CAST(a AS) FROM t",
    "SELECT substr(1, 2, 3, 4, 5) FROM t",
]
BROKEN_IN_DIALECT = {
    "sqlite": ['SELECT "unterminated', "SELECT [unterminated", "SELECT 1 /* unterminated"],
    "duckdb": ['SELECT "unterminated', "SELECT a::", "SELECT {'a': 1"],
    "postgres": ["SELECT $$unterminated", "SELECT $tag$ unterminated", "SELECT E'unterminated", "SELECT a::"],
    "mysql": ["SELECT `unterminated", "SELECT x'ZZ'", "SELECT a FROM t WHERE a = 1 AND"],
    "bigquery": ["SELECT * FROM `p.d.t WHERE x", 'SELECT """unterminated', "SELECT r'unterminated"],
}
# Valid queries whose every prefix is fed to the checker: whatever a prefix breaks, the words stay clean.
PREFIXED = [
    "WITH recent AS (SELECT id, total FROM orders WHERE day >= '2026-01-01') "
    "SELECT r.id, CAST(r.total AS INTEGER) AS total, CASE WHEN r.total > 10 THEN 'big' ELSE 'small' END AS size "
    "FROM recent AS r JOIN customers c ON c.id = r.id WHERE c.name IN ('a', 'b') AND r.total BETWEEN 1 AND 9 "
    "GROUP BY r.id, r.total HAVING count(*) > 1 ORDER BY total DESC LIMIT 10",
]


def _assert_clean(message: str) -> None:
    assert "\x1b" not in message and "<class" not in message and "sqlglot" not in message.lower(), message
    assert "<Token" not in message and "TokenType" not in message and "Error tokenizing" not in message, message


def _refusal(sql: str, dialect: str) -> AcpError:
    with pytest.raises((InvalidArguments, ReadOnlyViolation)) as caught:
        check_query_only(sql, dialect)
    return caught.value


@pytest.mark.parametrize("dialect", DIALECTS)
def test_syntax_errors_reach_the_model_as_clean_words_with_the_place_and_the_next_step(dialect: str) -> None:
    for sql in BROKEN_EVERYWHERE + BROKEN_IN_DIALECT[dialect]:
        message = _refusal(sql, dialect).message
        _assert_clean(message)
        assert re.search(r"syntax error at line \d+, column \d+ \((\"[^\"]*\" in|near) \".+?\"\): \S", message), message
        assert message.endswith(("Fix it and call again.", "Write it as a single plain SELECT.")), message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_prefix_of_a_query_fails_in_clean_words(dialect: str) -> None:
    for sql in PREFIXED:
        for end in range(1, len(sql)):
            try:
                check_query_only(sql[:end], dialect)
            except AcpError as refusal:
                _assert_clean(refusal.message)


def test_a_syntax_error_says_what_is_wrong_where_and_what_to_do() -> None:
    """The report that started this: sqlglot's own text carried escape codes and a Python class."""
    assert _refusal("SELECT * FROM t WHERE", "sqlite").message == (
        'The SQL has a syntax error at line 1, column 17 ("WHERE" in "SELECT * FROM t WHERE"): the WHERE clause '
        "is incomplete: a part it needs is missing. Fix it and call again."
    )
    # Lines and columns count from 1, at the start of the token; the excerpt is on one line.
    multiline = _refusal("SELECT *\n  FROM t\n  WHERE x IN (1, 2\n  ORDER BY y", "postgres")
    assert 'at line 4, column 3 ("ORDER BY" in "SELECT * FROM t WHERE x IN (1, 2 ORDER BY y"): ")" is expected.' in (
        multiline.message
    )
    # An unclosed quote is found by the tokenizer: the place is where the quote opens.
    unclosed = _refusal("SELECT a\nFROM t WHERE b = 'oops", "mysql")
    assert 'at line 2, column 18 (near "SELECT a FROM t WHERE b = \'oops"): a quoted text or name starts here' in (
        unclosed.message
    )


def test_a_long_query_is_quoted_around_the_error_only() -> None:
    columns = ", ".join(f"column_{i}" for i in range(40))
    message = _refusal(f"SELECT {columns} FROM t WHERE a = = 1 ORDER BY column_1, column_2, column_3", "duckdb").message
    excerpt = re.search(r'\("=" in "(.*?)"\)', message)
    assert excerpt and excerpt.group(1).startswith("…") and excerpt.group(1).endswith("…")
    assert "t WHERE a = = 1" in excerpt.group(1) and len(excerpt.group(1)) < 80


def test_describe_syntax_error_cleans_any_sqlglot_error() -> None:
    from sqlglot.errors import ParseError

    raw = ParseError("Unsupported \x1b[4mthing\x1b[0m for <class 'sqlglot.expressions.core.Thing'>")
    assert describe_syntax_error(raw, "SELECT 1") == "(Unsupported thing for Thing)"
