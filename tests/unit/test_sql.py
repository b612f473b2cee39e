"""Unit tests for shared/sql.py: the parser layer of read-only (spec 10.4), the regenerated SQL that
runs, the allow-lists of functions, the limits on SQL text, and date literals."""

from __future__ import annotations

import re

import pytest

from shared.errors import AcpError, InvalidArguments, ReadOnlyViolation
from shared.sql import FunctionRules, check_query_only, date_literals, describe_syntax_error, function_allow_list

DIALECT = "sqlite"
RULES = FunctionRules(builtin=function_allow_list("sqlite"))
NO_FUNCTIONS = FunctionRules(builtin=frozenset())

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
        check_query_only(sql, DIALECT, RULES)
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
        "SELECT \"readfile\"('/etc/passwd')",
        "SELECT a FROM t ORDER BY writefile('/tmp/x', a)",
    ],
)
def test_a_function_off_the_allow_list_is_read_only_violation_naming_it(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, DIALECT, RULES)
    named = [f for f in ("load_extension", "readfile", "writefile") if f"{f}()" in info.value.message.lower()]
    assert named and named[0] in sql.lower(), info.value.message
    assert "allowed_functions" in info.value.message  # what the operator can do about it


def test_allowed_names_match_case_insensitively() -> None:
    check_query_only("SELECT UPPER(name), Count(*), DaTe('now') FROM t GROUP BY 1", DIALECT, RULES)
    with pytest.raises(ReadOnlyViolation):
        check_query_only("SELECT Load_Extension('x')", DIALECT, RULES)


def test_everything_is_refused_when_nothing_is_allowed() -> None:
    with pytest.raises(ReadOnlyViolation, match=r"upper\(\)"):
        check_query_only("SELECT upper(name) FROM t", DIALECT, NO_FUNCTIONS)
    check_query_only("SELECT name, 1 + 2 FROM t WHERE a IN (1, 2) AND EXISTS (SELECT 1)", DIALECT, NO_FUNCTIONS)


@pytest.mark.parametrize(
    "sql", ["SELECT pg_ls_logicalsnapdir()", "SELECT * FROM PG_LS_DIR('.')", "SELECT pg_catalog.pg_ls_waldir()"]
)
def test_a_new_member_of_a_dangerous_family_is_refused_without_being_named_anywhere(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, "postgres", FunctionRules(builtin=function_allow_list("postgres")))
    assert "pg_ls_" in info.value.message.lower()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM pg_stat_statements_info",
        "SELECT 1 FROM PG_STAT_STATEMENTS",
        "SELECT 1 FROM public.pg_stat_statements AS s",
    ],
)
def test_a_relation_family_ending_in_a_star_refuses_its_members(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation, match="pg_stat_statements"):
        check_query_only(sql, "postgres", NO_FUNCTIONS, {"pg_stat_statements*"})


def test_a_relation_family_refuses_nothing_outside_it() -> None:
    check_query_only("SELECT pg_stat, stat FROM pg_stat AS s", "postgres", NO_FUNCTIONS, {"pg_stat_*"})


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
        check_query_only(sql, "postgres", NO_FUNCTIONS, {"pg_hba_file_rules"})
    assert "pg_hba_file_rules" in info.value.message


def test_a_forbidden_relation_name_as_a_column_or_alias_passes() -> None:
    check_query_only(
        "SELECT pg_hba_file_rules FROM t AS pg_hba_file_rules", "postgres", NO_FUNCTIONS, {"pg_hba_file_rules"}
    )


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
    check_query_only(sql, DIALECT, RULES)


@pytest.mark.parametrize(
    "sql",
    ["SELECT 1; SELECT 2", "SELECT a FROM t; WITH x AS (SELECT 1) SELECT * FROM x", "SELECT 1; /* next */ SELECT 2"],
)
def test_several_statements_are_refused_even_when_harmless(sql: str) -> None:
    """One statement per call is a read-only layer (transaction escapes need several); the message says so."""
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, DIALECT, RULES)
    assert info.value.code == -32019
    assert "one query per call" in info.value.message


@pytest.mark.parametrize("sql", ["", "   ", "\n\t", ";", "-- only a comment", "/* nothing */"])
def test_empty_sql_is_invalid_arguments(sql: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        check_query_only(sql, DIALECT, RULES)
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
        check_query_only(sql, dialect, RULES)
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
                check_query_only(sql[:end], dialect, RULES)
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


# -- the SQL that runs is regenerated from the checked tree -------------------------------------------
def _runs(sql: str, dialect: str = DIALECT, rules: FunctionRules = RULES) -> str:
    return check_query_only(sql, dialect, rules).sql()


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        ("sqlite", "SELECT 1 /* c */ -- d\n"),
        ("postgres", "SELECT /* outer /* nested */ still */ 1"),
        ("mysql", "SELECT 1 # hash comment\n"),
        ("mysql", "SELECT 1 -- x\n, 2"),
        ("duckdb", "/* a */ SELECT /* b */ 1 /* c */"),
    ],
)
def test_comments_never_reach_the_text_that_runs(dialect: str, sql: str) -> None:
    text = _runs(sql, dialect, NO_FUNCTIONS)
    assert "/*" not in text and "--" not in text and "#" not in text, text


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres", "mysql"])
def test_the_tree_is_the_text_that_runs_read_back(dialect: str) -> None:
    from sqlglot import parse_one

    checked = check_query_only(
        "WITH r AS (SELECT a, b FROM t WHERE a > 1) SELECT a, count(*) AS n FROM r GROUP BY a ORDER BY n DESC",
        dialect,
        RULES,
    )
    assert parse_one(checked.sql(), read=dialect) == checked.tree
    assert checked.tree.sql(dialect=dialect, comments=False, normalize_functions=False) == checked.sql()


def test_optimizer_hints_are_dropped_from_the_text_that_runs() -> None:
    text = _runs("SELECT /*+ NO_INDEX_MERGE(t) BKA(t) */ a FROM t", "mysql", NO_FUNCTIONS)
    assert text == "SELECT a FROM t"


@pytest.mark.parametrize(
    ("dialect", "sql", "kept"),
    [
        ("postgres", 'SELECT "MyCol", MyOther FROM "My Table"', ['"MyCol"', "MyOther", '"My Table"']),
        ("duckdb", 'SELECT "Upper Case" FROM t', ['"Upper Case"']),
        ("mysql", "SELECT `Weird Name`, `select` FROM `My Table`", ["`Weird Name`", "`select`", "`My Table`"]),
        ("sqlite", 'SELECT "Camel", [bracket] FROM "Tab"', ['"Camel"', '"bracket"', '"Tab"']),
    ],
)
def test_quoted_names_stay_quoted_and_unquoted_ones_unquoted(dialect: str, sql: str, kept: list[str]) -> None:
    text = _runs(sql, dialect, NO_FUNCTIONS)
    assert all(name in text for name in kept), text


def test_a_quoted_function_name_keeps_its_case() -> None:
    """sqlglot upper-cases function names by default, quoted ones too: "pg_read_file" became "PG_READ_FILE"."""
    rules = FunctionRules(builtin=frozenset(), extra=frozenset({"my_Func"}), quoted_names_exact=True)
    assert _runs('SELECT "my_Func"(1)', "postgres", rules) == 'SELECT "my_Func"(1)'


def test_a_construct_that_does_not_read_back_the_same_is_refused_with_what_to_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shared.sql

    # TIMESTAMPADD(MONTH, 1, d) is written DATE_ADD(d, INTERVAL 1 MONTH), which reads back as INTERVAL '1':
    # a text that needs a second round. With one round allowed, it is refused rather than run unchecked.
    sql = "SELECT TIMESTAMPADD(MONTH, 1, d) AS m FROM t"
    assert "DATE_ADD" in _runs(sql, "mysql", FunctionRules(builtin=function_allow_list("mariadb")))
    monkeypatch.setattr(shared.sql, "_REGENERATIONS", 1)
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, "mysql", FunctionRules(builtin=function_allow_list("mariadb")))
    assert "cannot write back" in info.value.message and "Rewrite that part" in info.value.message


# -- characters on which lexers disagree ---------------------------------------------------------------
UNUSUAL = [
    "\u00a0",  # no-break space: "--" followed by it is a comment for sqlglot, code for MariaDB
    "\u2028",  # line separator
    "\u2029",  # paragraph separator
    "\u3000",  # ideographic space
    "\u2003",  # em space
    "\u200b",  # zero-width space
    "\ufeff",  # byte order mark
    "\u202e",  # right-to-left override
    "\u00ad",  # soft hyphen
    "\u0085",  # next line
    "\x0b",  # vertical tab
    "\x0c",  # form feed
    "\x00",
    "\x1b",
    "\x7f",
]


@pytest.mark.parametrize("char", UNUSUAL, ids=[f"U+{ord(c):04X}" for c in UNUSUAL])
@pytest.mark.parametrize(
    ("dialect", "template"),
    [
        ("mysql", "SELECT name FROM t WHERE 1 --{c} AND LOAD_FILE('/etc/passwd')\n"),
        ("postgres", "SELECT 1{c}FROM t"),
        ("sqlite", "SELECT 1 /* {c} */"),
        ("duckdb", "SELECT a,\n  b{c}"),
    ],
)
def test_an_unusual_character_outside_quotes_is_refused_naming_it_and_where(
    char: str, dialect: str, template: str
) -> None:
    sql = template.format(c=char)
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, dialect, RULES)
    at = sql.index(char)
    line = sql.count("\n", 0, at) + 1
    column = at - (sql.rfind("\n", 0, at) + 1) + 1
    assert f"U+{ord(char):04X}" in info.value.message
    assert f"at line {line}, column {column}" in info.value.message
    assert "plain space" in info.value.message


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        ("mysql", "SELECT 'a\u00a0b', `c\u2028d`, \"e\x0bf\" FROM t"),
        ("postgres", "SELECT 'a\u00a0b', \"c\u200bd\", $$e\ufefff$$, E'g\u2029h' FROM t"),
        ("sqlite", "SELECT 'a\u3000b', \"c\x0cd\", [e\u00a0f] FROM t"),
        ("duckdb", "SELECT 'a\u202eb' AS \"c\u00a0d\""),
    ],
)
def test_unusual_characters_inside_quotes_are_kept(dialect: str, sql: str) -> None:
    text = _runs(sql, dialect, NO_FUNCTIONS)
    unusual = [c for c in sql if c in UNUSUAL or ord(c) > 0x7F]
    assert unusual and all(c in text for c in unusual), text


def test_letters_of_any_script_are_names() -> None:
    assert _runs("SELECT café, Ärger, 名前, δ FROM données", "postgres", NO_FUNCTIONS) == (
        "SELECT café, Ärger, 名前, δ FROM données"
    )


# -- limits on the SQL text --------------------------------------------------------------------------
def test_sql_over_the_size_limit_is_refused_before_parsing() -> None:
    from shared.sql import MAX_SQL_BYTES

    exactly = "SELECT '" + "x" * (MAX_SQL_BYTES - 9) + "'"
    assert len(exactly.encode()) == MAX_SQL_BYTES
    check_query_only(exactly, DIALECT, NO_FUNCTIONS)
    for over in (exactly + " ", "SELECT '" + "é" * (MAX_SQL_BYTES // 2) + "'"):  # UTF-8 bytes count, not characters
        with pytest.raises(InvalidArguments) as info:
            check_query_only(over, DIALECT, NO_FUNCTIONS)
        assert "256 KB" in info.value.message and "Shorten it" in info.value.message


def test_sql_over_the_token_limit_is_refused_before_parsing() -> None:
    from shared.sql import MAX_SQL_TOKENS

    def sql(tokens: int) -> str:  # SELECT 1 is 2 tokens, each ", 1" 2 more
        return "SELECT 1" + ", 1" * ((tokens - 2) // 2)

    check_query_only(sql(MAX_SQL_TOKENS), DIALECT, NO_FUNCTIONS)
    with pytest.raises(InvalidArguments) as info:
        check_query_only(sql(MAX_SQL_TOKENS + 2), DIALECT, NO_FUNCTIONS)
    assert f"{MAX_SQL_TOKENS:,}" in info.value.message and "tokens" in info.value.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * 3000 + "1" + ")" * 3000,
        "SELECT " + "abs(" * 500 + "1" + ")" * 500,
        "SELECT " + "(SELECT " * 500 + "1" + ")" * 500,
        "SELECT * FROM t WHERE " + "NOT " * 1500 + "a",
    ],
    ids=["parentheses", "calls", "subqueries", "nots"],
)
def test_nesting_too_deep_is_refused_cleanly_in_a_worker_thread(sql: str) -> None:
    """The checks run off the event loop: a RecursionError there must still become a typed refusal."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool, pytest.raises(InvalidArguments) as info:
        pool.submit(check_query_only, sql, DIALECT, RULES).result()
    assert "nests too deeply" in info.value.message and "CTE" in info.value.message


def test_realistic_nesting_is_well_within_reach() -> None:
    check_query_only("SELECT " + "coalesce(" * 25 + "a" + ", 0)" * 25 + " FROM t", DIALECT, RULES)
    check_query_only("SELECT * FROM " + "(SELECT * FROM " * 20 + "t" + ") AS s" * 20, DIALECT, RULES)


# -- the allow-lists ---------------------------------------------------------------------------------------
LISTS = ("sqlite", "duckdb", "postgres", "mariadb")
# The parser layer's deny-lists before the allow-lists (main at 60ad7ee): none of these may run now.
FORMERLY_REFUSED = {
    "sqlite": ["load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"],
    "postgres": [
        "lo_*", "pg_read_*", "pg_ls_*", "pg_file_*", "pg_stat_file", "pg_logdir_ls", "pg_current_logfile",
        "pg_hba_file_rules", "pg_ident_file_mappings", "pg_show_all_file_settings", "pg_stat_reset*",
        "pg_stat_statements_reset", "pg_logical_*", "pg_replication_*", "pg_log_*", "pg_create_*", "pg_drop_*",
        "pg_copy_*", "pg_promote", "pg_switch_*", "pg_wal_replay_*", "pg_backup_*", "pg_start_backup",
        "pg_stop_backup", "pg_cancel_backend", "pg_terminate_backend", "pg_reload_conf", "pg_rotate_logfile*",
        "pg_import_system_collations", "nextval", "setval", "set_config", "pg_notify", "pg_advisory_*",
        "pg_try_advisory_*", "txid_current", "pg_current_xact_id", "dblink*", "query_to_xml", "query_to_xmlschema",
        "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema", "table_to_xml", "table_to_xmlschema",
        "table_to_xml_and_xmlschema", "schema_to_xml", "database_to_xml", "xpath_table",
    ],
    "duckdb": [
        "read_*", "parquet_*", "iceberg_*", "delta_*", "sqlite_*", "postgres_*", "mysql_*", "st_read*", "glob",
        "sniff_csv", "import_database", "copy_database", "pandas_scan", "arrow_scan*", "python_*", "getenv",
        "current_setting", "duckdb_settings", "duckdb_extensions", "duckdb_extension_repositories",
        "duckdb_temporary_files", "duckdb_external_file_cache", "query", "query_table", "json_execute_serialized_sql",
        "duckdb_secrets", "which_secret", "add_parquet_key", "checkpoint", "force_checkpoint", "duckdb_log*",
        "truncate_duckdb_logs", "write_log", "enable_*", "disable_*", "nextval", "setval", "setseed",
        "create_external_resource", "register_external_resource", "register_external_resource_type",
        "destroy_external_resource", "deregister_external_resource", "add_grammar_extension",
        "remove_grammar_extension", "install_extension", "load_extension", "histogram", "histogram_values",
        "pragma_storage_info", "storage_info", "pragma_metadata_info", "duckdb_table_sample",
    ],
    "mariadb": [
        "load_file", "binlog_gtid_pos", "get_lock", "release_lock", "release_all_locks", "benchmark",
        "master_pos_wait", "master_gtid_wait", "source_pos_wait", "wait_for_executed_gtid_set",
        "wait_until_sql_thread_after_gtids", "wsrep_sync_wait_upto_gtid", "nextval", "setval", "sys_exec", "sys_eval",
        "sys_get", "sys_set", "sys_bineval", "spider_*",
    ],
}  # fmt: skip
# Named in the issue or found since: refused on every engine that has them.
NEWLY_REFUSED = {
    "sqlite": ["zeroblob", "randomblob", "sqlite_version", "changes", "last_insert_rowid", "pragma_table_info"],
    "postgres": [
        "ts_stat", "ts_rewrite", "ts_debug", "xpath", "xmlparse", "xmltable", "brin_summarize_new_values",
        "brin_summarize_range", "gin_clean_pending_list", "pg_sleep", "pg_sleep_for", "pg_sleep_until", "currval",
        "lastval", "setseed", "current_setting", "txid_current_if_assigned", "pg_get_viewdef", "version",
    ],
    "duckdb": ["sleep_ms", "getvariable", "currval", "json_serialize_sql", "json_serialize_plan", "pg_sleep",
               "duckdb_tables", "pragma_table_info", "summary", "txid_current", "version"],
    "mariadb": ["sleep", "is_free_lock", "is_used_lock", "name_const", "values", "lastval", "last_insert_id",
                "found_rows", "row_count", "connection_id", "uuid_short", "extractvalue", "updatexml", "version",
                "user", "current_user"],
}  # fmt: skip


@pytest.mark.parametrize("engine", LISTS)
def test_each_allow_list_is_data_the_checker_reads(engine: str) -> None:
    from pathlib import Path

    import shared

    text = (Path(shared.__file__).parent / "sql_functions" / f"{engine}.txt").read_text("utf-8")
    lines = [line.strip() for line in text.splitlines()]
    names = [line for line in lines if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in names), names
    assert len(names) == len(set(names))  # each name once
    assert set(names) == function_allow_list(engine)
    assert sum(line.startswith("# -- ") for line in lines) >= 6  # by family, each with its comment
    assert {"count", "sum", "avg", "min", "max", "row_number", "lag", "coalesce", "cast", "round"} <= set(names)


@pytest.mark.parametrize("engine", LISTS)
def test_nothing_refused_before_is_allowed_now_nor_what_is_named_as_dangerous(engine: str) -> None:
    from shared.sql import _Names

    formerly = _Names(FORMERLY_REFUSED[engine])
    allowed = function_allow_list(engine)
    assert not [name for name in allowed if name in formerly]
    assert not set(NEWLY_REFUSED[engine]) & allowed


def test_qualified_calls_match_only_the_built_in_schema_or_the_configured_name() -> None:
    rules = FunctionRules(
        builtin=frozenset({"upper"}),
        extra=frozenset({"my_udf", "analytics.score"}),
        builtin_schemas=frozenset({"pg_catalog"}),
        quoted_names_exact=True,
    )
    assert rules.allows(("upper",), quoted=False)
    assert rules.allows(("UPPER",), quoted=False)
    assert rules.allows(("pg_catalog", "upper"), quoted=False)
    assert not rules.allows(("public", "upper"), quoted=False)  # someone's own upper(), not the built-in
    assert not rules.allows(("Upper",), quoted=True)  # "Upper" is not upper on PostgreSQL
    assert rules.allows(("upper",), quoted=True)
    assert rules.allows(("my_udf",), quoted=False)
    assert rules.allows(("shop", "my_udf"), quoted=False)  # a bare configured name allows it in any schema
    assert rules.allows(("Analytics", "score"), quoted=False)
    assert not rules.allows(("score",), quoted=False)
    assert not rules.allows(("other", "score"), quoted=False)


def test_allowed_functions_extend_the_list_and_the_refusal_names_the_function() -> None:
    sql = "SELECT similarity(name, 'acme') AS s, upper(name) FROM t"
    builtin = function_allow_list("postgres")
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, "postgres", FunctionRules(builtin=builtin))
    assert info.value.message.startswith("The function similarity() is not allowed")
    assert '"similarity"' in info.value.message and "allowed_functions" in info.value.message
    assert "similarity(name, 'acme')" in _runs(sql, "postgres", FunctionRules(builtin, frozenset({"similarity"})))
    with pytest.raises(ReadOnlyViolation, match="in the source's allowed_functions either"):
        check_query_only(sql, "postgres", FunctionRules(builtin, frozenset({"other"})))


def test_calls_are_checked_by_the_name_the_engine_runs_not_the_one_written() -> None:
    """DuckDB's string_agg runs as LISTAGG and sqlite's ifnull as COALESCE: the regenerated text decides."""
    duckdb = FunctionRules(builtin=frozenset({"string_agg"}))
    with pytest.raises(ReadOnlyViolation, match=r"listagg\(\)"):
        check_query_only("SELECT string_agg(a, ',') FROM t", "duckdb", duckdb)
    check_query_only("SELECT string_agg(a, ',') FROM t", "duckdb", FunctionRules(builtin=frozenset({"listagg"})))
    check_query_only("SELECT ifnull(a, 0) FROM t", "sqlite", FunctionRules(builtin=frozenset({"coalesce"})))


@pytest.mark.parametrize(
    ("dialect", "sql", "named"),
    [
        ("duckdb", "SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
        ("duckdb", "SELECT * FROM t, LATERAL glob('/*')", "glob"),
        ("postgres", "SELECT * FROM pg_catalog.pg_ls_dir('.') AS d(name)", "pg_catalog.pg_ls_dir"),
        ("postgres", "SELECT * FROM ROWS FROM (generate_series(1, 2), pg_ls_dir('.')) AS r", "pg_ls_dir"),
        ("sqlite", "SELECT * FROM t JOIN pragma_table_info('t') AS p", "pragma_table_info"),
        ("mysql", "SELECT * FROM JSON_TABLE(LOAD_FILE('/etc/passwd'), '$' COLUMNS (a INT PATH '$')) AS j", "load_file"),
    ],
)
def test_table_functions_are_on_the_allow_list_too(dialect: str, sql: str, named: str) -> None:
    engine = {"mysql": "mariadb"}.get(dialect, dialect)
    with pytest.raises(ReadOnlyViolation) as info:
        check_query_only(sql, dialect, FunctionRules(builtin=function_allow_list(engine)))
    assert f"{named}()" in info.value.message


def test_a_call_in_sql_that_does_not_parse_is_named_as_a_function() -> None:
    """Fixing the syntax would not make it run: say so rather than report the syntax."""
    with pytest.raises(ReadOnlyViolation, match=r"pg_read_file\(\)"):
        check_query_only(
            "SELECT pg_read_file('/etc/passwd') ORDER BY 1 USING <",
            "postgres",
            FunctionRules(builtin=function_allow_list("postgres")),
        )


# -- what sqlglot reads differently from the engines ----------------------------------------------------------
@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres", "mysql"])
def test_a_json_arrow_in_a_call_is_a_column_read_not_a_lambda(dialect: str) -> None:
    """sqlglot read length(email -> 'x') as a lambda with a parameter named email, and no column email:
    a check that looks for columns would not have seen the one the engine reads."""
    from sqlglot import exp

    rules = FunctionRules(builtin=frozenset({"length", "upper", "json_extract", "json_unquote"}))
    tree = check_query_only("SELECT length(email -> 'x'), upper(email ->> 'y') FROM t", dialect, rules).tree
    assert not list(tree.find_all(exp.Lambda))
    assert [c.name for c in tree.find_all(exp.Column)] == ["email", "email"]


def test_duckdb_lambdas_stay_lambdas_in_its_list_functions() -> None:
    rules = FunctionRules(builtin=function_allow_list("duckdb"))
    text = _runs("SELECT list_transform(l, x -> x + 1), list_filter(l, lambda y: y > 1) FROM t", "duckdb", rules)
    assert text == "SELECT LIST_TRANSFORM(l, LAMBDA x : x + 1), LIST_FILTER(l, LAMBDA y : y > 1) FROM t"


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT @v := 1", "Assigning a variable"),
        ("SELECT a, @total := @total + a FROM t", "Assigning a variable"),
    ],
)
def test_assigning_a_session_variable_is_refused(sql: str, message: str) -> None:
    with pytest.raises(ReadOnlyViolation, match=message):
        check_query_only(sql, "mysql", NO_FUNCTIONS)


def test_operator_by_name_is_refused() -> None:
    with pytest.raises(ReadOnlyViolation, match=r"OPERATOR\(…\)"):
        check_query_only("SELECT 1 OPERATOR(public.+++) 2", "postgres", NO_FUNCTIONS)


@pytest.mark.parametrize(
    ("dialect", "sql", "expected"),
    [
        ("sqlite", "SELECT a, count(*), a+1, 'x', b AS c FROM t GROUP BY a",
         'SELECT a, COUNT(*) AS "count(*)", a + 1 AS "a+1", \'x\', b AS c FROM t GROUP BY a'),
        ("mysql", "SELECT count( * ), x->>'$.a' FROM t",
         "SELECT COUNT(*) AS `count( * )`, x ->> '$.a' AS `x->>'$.a'` FROM t"),
        ("sqlite", "WITH c AS (SELECT 1 AS n) SELECT max(n) FROM c UNION ALL SELECT min(n) FROM c",
         'WITH c AS (SELECT 1 AS n) SELECT MAX(n) AS "max(n)" FROM c UNION ALL SELECT MIN(n) FROM c'),
        ("mysql", "SELECT /*+ BKA(t) */ DISTINCT count(*) FROM t", "SELECT DISTINCT COUNT(*) AS `count(*)` FROM t"),
        ("postgres", "SELECT count(*) FROM t", "SELECT COUNT(*) FROM t"),  # PostgreSQL names it "count" anyway
    ],
)  # fmt: skip
def test_a_column_named_after_its_text_keeps_its_name(dialect: str, sql: str, expected: str) -> None:
    from shared.sql import check_query_only as check

    rules = FunctionRules(builtin=frozenset({"count", "max", "min", "json_unquote", "json_extract"}))
    assert check(sql, dialect, rules, columns_named_by_text=dialect != "postgres").sql() == expected


def test_a_pivot_statement_says_what_to_write_instead() -> None:
    for sql in ("PIVOT t ON year USING sum(x)", "UNPIVOT t ON a, b INTO NAME k VALUE v"):
        with pytest.raises(InvalidArguments) as info:
            check_query_only(sql, "duckdb", RULES)
        assert "SELECT * FROM (PIVOT" in info.value.message and "FILTER (WHERE" in info.value.message
    text = _runs("SELECT * FROM (PIVOT t ON year USING sum(x) GROUP BY k)", "duckdb", RULES)
    assert text == "SELECT * FROM (PIVOT t ON year USING SUM(x) GROUP BY k)"


@pytest.mark.parametrize(
    "sql",
    [
        # sqlglot writes date_part's field, a string, back as a word: the string's content becomes code.
        "SELECT date_part('year from d)) AS x, (SELECT pg_read_file(''/etc/passwd'')', d) FROM t",
        "SELECT date_part('year from d)) AS x, pg_read_file(''/etc/passwd'') AS y, extract(year', d) FROM t",
        "SELECT date_part('year\u00a0x', d) FROM t",
        "SELECT date_part('year FROM d) + pg_read_file(''x'') + extract(year', d) FROM t",  # reads back the same
    ],
)
def test_code_that_regeneration_makes_out_of_a_string_is_checked_as_code(sql: str) -> None:
    with pytest.raises((ReadOnlyViolation, InvalidArguments)) as info:
        check_query_only(sql, "postgres", FunctionRules(builtin=function_allow_list("postgres")))
    message = info.value.message
    assert "pg_read_file()" in message or "U+00A0" in message or "write back" in message, message
