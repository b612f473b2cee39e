"""allowed_datasets: the dry run's tables and the parser's, fail-closed."""

from __future__ import annotations

import json
import re

import pytest

from connectors.bigquery.sqlcheck import allowed_patterns, check_allowed, reads_in_sql, split_table
from shared import InvalidArguments

ALLOWED = allowed_patterns(json.dumps([r"analytics_\d+", r"my-proj\.reporting"]))


def tables_in_sql(sql: str, project: str, dataset: str | None) -> set[str] | None:
    reads = reads_in_sql(sql, project, dataset)
    return reads.tables if reads else None


def base_table(name: str) -> str:
    return "TABLE"


def no_lookup(name: str) -> str:
    raise AssertionError(f"tables.get {name}: not needed below 50 referenced tables")


def test_tables_are_qualified_with_the_default_project_and_dataset_and_ctes_are_skipped() -> None:
    sql = "WITH x AS (SELECT 1) SELECT * FROM x, events_20260901 JOIN other.t USING (a), `p2.d2.t2`"
    assert tables_in_sql(sql, "my-proj", "analytics_1") == {
        "my-proj.analytics_1.events_20260901",
        "my-proj.other.t",
        "p2.d2.t2",
    }
    assert tables_in_sql("SELECT * FROM t", "my-proj", None) == {"my-proj.?.t"}
    assert tables_in_sql("SELECT FROM WHERE (((", "p", None) is None
    assert tables_in_sql("BEGIN SELECT 1; END", "p", None) is None


def test_allowed_tables_pass_and_any_other_is_refused_naming_it() -> None:
    sql = "SELECT event_name FROM `my-proj.analytics_123.events_*` JOIN `my-proj.reporting.users` USING (id)"
    check_allowed(ALLOWED, ["my-proj.analytics_123.events_20260901"], [], sql, "my-proj", None, no_lookup)
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], [], "SELECT * FROM `my-proj.billing.invoices`", "my-proj", None, no_lookup)
    assert "my-proj.billing.invoices" in caught.value.message and "allowed_datasets" in caught.value.message


def test_a_table_only_the_dry_run_sees_is_refused() -> None:
    # A view in an allowed dataset that reads a table elsewhere: the dry run lists the source.
    with pytest.raises(InvalidArguments):
        check_allowed(
            ALLOWED,
            ["my-proj.secret.salaries"],
            [],
            "SELECT * FROM `my-proj.reporting.v`",
            "my-proj",
            "reporting",
            no_lookup,
        )


def test_a_table_past_the_dry_runs_50_is_still_caught_by_the_parser() -> None:
    listed = [f"my-proj.analytics_1.t{i}" for i in range(50)]  # BigQuery stops listing at 50
    joined = " UNION ALL ".join(f"SELECT a FROM `my-proj.analytics_1.t{i}`" for i in range(50))
    sql = f"{joined} UNION ALL SELECT a FROM `my-proj.private.t51`"
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, listed, [], sql, "my-proj", None, base_table)
    assert "my-proj.private.t51" in caught.value.message


def test_unparsable_queries_are_refused_only_when_datasets_are_restricted() -> None:
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], [], "SELECT ((", "my-proj", None, no_lookup)
    assert "could not be checked" in caught.value.message
    check_allowed([], [], [], "SELECT ((", "my-proj", None, no_lookup)  # no restriction: BigQuery itself judges the SQL


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ((",
        "SELECT * FROM `my-proj.analytics_1.t WHERE x",
        "SELECT a FROM analytics_1.t WHERE a = = 1",
        'SELECT """unterminated',
        "SELECT * FROM analytics_1.t\nWHERE x IN (1, 2\nORDER BY y",
    ],
)
def test_the_checkers_syntax_errors_are_clean_words_with_the_place(sql: str) -> None:
    """The dry run accepted the SQL and the checker's parser did not: the model learns where it stopped,
    without sqlglot's terminal escape codes or class names."""
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], [], sql, "my-proj", None, no_lookup)
    message = caught.value.message
    assert "\x1b" not in message and "<class" not in message and "sqlglot" not in message.lower(), message
    assert re.search(
        r"could not be checked against them \(the checker's parser stopped at line \d+, column \d+ ", message
    )
    assert message.endswith("Send one plain SELECT with fully qualified table names.")


def test_scripting_the_checker_does_not_model_is_named_as_such() -> None:
    with pytest.raises(InvalidArguments, match="syntax the checker does not model, such as scripting"):
        check_allowed(ALLOWED, [], [], "IF true THEN SELECT 1; END IF", "my-proj", None, no_lookup)


def test_patterns_are_case_sensitive_and_domain_scoped_projects_split_right() -> None:
    with pytest.raises(InvalidArguments):
        check_allowed(ALLOWED, [], [], "SELECT 1 FROM `my-proj.ANALYTICS_1.t`", "my-proj", None, no_lookup)
    assert split_table("example.com:proj.ds.t") == ("example.com:proj", "ds", "t")
    domain = allowed_patterns('["example\\\\.com:proj\\\\.ds"]')
    check_allowed(domain, ["example.com:proj.ds.t"], [], "SELECT 1 FROM `example.com:proj.ds.t`", "x", None, no_lookup)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM analytics_1.tvf(1)",
        "SELECT * FROM `my-proj.analytics_1.tvf`(1) AS t",
        "SELECT * FROM EXTERNAL_QUERY('my-proj.eu.conn', 'SELECT 1')",
        "SELECT * FROM ML.PREDICT(MODEL analytics_1.m, TABLE analytics_1.t)",
    ],
)
def test_table_functions_are_refused_when_datasets_are_restricted(sql: str) -> None:
    # Their tables are invisible to the parser; the dry run lists them only up to 50.
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], [], sql, "my-proj", "analytics_1", no_lookup)
    assert "table function" in caught.value.message
    check_allowed([], [], [], sql, "my-proj", "analytics_1", no_lookup)


LISTED = [f"my-proj.analytics_1.t{i:02d}" for i in range(50)]  # a full list: maybe truncated


def test_past_50_tables_a_view_is_refused_since_the_list_may_hide_what_it_reads() -> None:
    # analytics_1.v reads the 50 listed tables and, past the list, a secret one.
    kinds = {"my-proj.analytics_1.v": "VIEW"}
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, LISTED, [], "SELECT a FROM analytics_1.v", "my-proj", None, kinds.__getitem__)
    assert "my-proj.analytics_1.t00 without naming it" in caught.value.message
    named = " UNION ALL ".join(f"SELECT a FROM `{t}`" for t in [*LISTED, "my-proj.analytics_1.v"])
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, LISTED, [], named, "my-proj", None, lambda n: kinds.get(n, "TABLE"))
    assert "my-proj.analytics_1.v is a VIEW" in caught.value.message
    for kind in ("MATERIALIZED_VIEW", "SOMETHING_NEW"):  # fail-closed: only known base kinds pass
        with pytest.raises(InvalidArguments):
            check_allowed(ALLOWED, LISTED, [], named, "my-proj", None, lambda n, kind=kind: kind)


def test_past_50_tables_named_base_tables_and_wildcards_pass() -> None:
    named = " UNION ALL ".join(f"SELECT a FROM `{t}`" for t in LISTED)
    check_allowed(ALLOWED, LISTED, [], named, "my-proj", None, base_table)
    shards = [f"my-proj.analytics_1.events_2026{m:02d}{d:02d}" for m in (8, 9) for d in range(1, 26)]
    check_allowed(ALLOWED, shards, [], "SELECT 1 FROM `my-proj.analytics_1.events_*`", "my-proj", None, no_lookup)


def test_below_50_tables_the_dry_runs_list_is_complete_and_views_need_no_lookup() -> None:
    check_allowed(ALLOWED, LISTED[:49], [], "SELECT a FROM analytics_1.v", "my-proj", None, no_lookup)


@pytest.mark.parametrize(
    ("sql", "routines"),
    [
        ("SELECT otherds.f(x) FROM t", {"my-proj.otherds.f"}),
        ("SELECT p2.ds.f(x) FROM t WHERE ds.g(x) > 0", {"p2.ds.f", "my-proj.ds.g"}),
        ("SELECT `p2.ds.f`(x), `example.com:p3`.ds.h(1) FROM t", {"p2.ds.f", "example.com:p3.ds.h"}),
        ("SELECT ds.f(1).g(2) FROM t", {"my-proj.ds.f", "my-proj.?.g"}),  # a qualifier that is no name
        # Built-ins, plain or in BigQuery's own namespaces, are not routines.
        ("SELECT SAFE_DIVIDE(a, b), PARSE_DATE('%Y%m%d', s), SAFE.PARSE_DATE('%Y', s), NET.HOST(u) FROM t", set()),
        ("SELECT HLL_COUNT.MERGE(s), KEYS.NEW_KEYSET('AEAD_AES_GCM_256') FROM t", set()),
    ],
)
def test_dataset_qualified_calls_are_routines(sql: str, routines: set[str]) -> None:
    reads = reads_in_sql(sql, "my-proj", "analytics_1")
    assert reads is not None and reads.routines == routines


def test_a_routine_outside_the_allowed_datasets_is_refused_naming_it() -> None:
    # A SQL UDF's body may read tables of its own dataset: calling it is reading there.
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], [], "SELECT otherds.f(a) FROM analytics_1.t", "my-proj", None, no_lookup)
    message = caught.value.message
    assert "routine my-proj.otherds.f" in message and "built-in functions" in message
    assert "allowed_datasets" in message
    check_allowed(
        ALLOWED, [], [], "SELECT analytics_1.f(a), reporting.g(a) FROM analytics_1.t", "my-proj", None, no_lookup
    )
    check_allowed([], [], [], "SELECT otherds.f(a) FROM analytics_1.t", "my-proj", None, no_lookup)


def test_a_routine_only_the_dry_run_names_is_refused() -> None:
    # The parser sees only dataset-qualified calls; whatever routine the dry run lists is checked too.
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], ["my-proj.secret.f"], "SELECT f(a) FROM analytics_1.t", "my-proj", None, no_lookup)
    assert "my-proj.secret.f" in caught.value.message
    check_allowed(ALLOWED, [], ["my-proj.analytics_1.f"], "SELECT f(a) FROM analytics_1.t", "my-proj", None, no_lookup)
