"""allowed_datasets: the dry run's tables and the parser's, fail-closed."""

from __future__ import annotations

import json

import pytest

from connectors.bigquery.sqlcheck import allowed_patterns, check_allowed, split_table, tables_in_sql
from shared import InvalidArguments

ALLOWED = allowed_patterns(json.dumps([r"analytics_\d+", r"my-proj\.reporting"]))


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
    check_allowed(ALLOWED, ["my-proj.analytics_123.events_20260901"], sql, "my-proj", None)
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], "SELECT * FROM `my-proj.billing.invoices`", "my-proj", None)
    assert "my-proj.billing.invoices" in caught.value.message and "allowed_datasets" in caught.value.message


def test_a_table_only_the_dry_run_sees_is_refused() -> None:
    # A view in an allowed dataset that reads a table elsewhere: the dry run lists the source.
    with pytest.raises(InvalidArguments):
        check_allowed(
            ALLOWED, ["my-proj.secret.salaries"], "SELECT * FROM `my-proj.reporting.v`", "my-proj", "reporting"
        )


def test_a_table_past_the_dry_runs_50_is_still_caught_by_the_parser() -> None:
    listed = [f"my-proj.analytics_1.t{i}" for i in range(50)]  # BigQuery stops listing at 50
    joined = " UNION ALL ".join(f"SELECT a FROM `my-proj.analytics_1.t{i}`" for i in range(50))
    sql = f"{joined} UNION ALL SELECT a FROM `my-proj.private.t51`"
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, listed, sql, "my-proj", None)
    assert "my-proj.private.t51" in caught.value.message


def test_unparsable_queries_are_refused_only_when_datasets_are_restricted() -> None:
    with pytest.raises(InvalidArguments) as caught:
        check_allowed(ALLOWED, [], "SELECT ((", "my-proj", None)
    assert "could not be checked" in caught.value.message
    check_allowed([], [], "SELECT ((", "my-proj", None)  # no restriction: BigQuery itself judges the SQL


def test_patterns_are_case_sensitive_and_domain_scoped_projects_split_right() -> None:
    with pytest.raises(InvalidArguments):
        check_allowed(ALLOWED, [], "SELECT 1 FROM `my-proj.ANALYTICS_1.t`", "my-proj", None)
    assert split_table("example.com:proj.ds.t") == ("example.com:proj", "ds", "t")
    domain = allowed_patterns('["example\\\\.com:proj\\\\.ds"]')
    check_allowed(domain, ["example.com:proj.ds.t"], "SELECT 1 FROM `example.com:proj.ds.t`", "x", None)
