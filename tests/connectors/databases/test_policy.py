"""`hidden` and `table_rules` hold by construction on every engine, as an attacker would test them.

Each engine gets the same small database: ``customers`` (whose ``email`` is hidden), ``payroll``
(hidden whole), ``orders`` (whose own ``email`` column is visible: hiding one table's column must not
hide another's), ``visits`` (a target for ``insert_rows``) and views over them: some derive a column
from hidden data (``v_contacts``, ``v_everything``, ``v_again`` over ``v_contacts``, ``v_renamed``
with its own column names), one reads only hidden data (``v_pay``), one filters on a hidden column
(``v_filtered``, hidden whole), one reads ``customers`` through a name in another letter case
(``v_cased``), and ``v_names`` reads nothing hidden. PostgreSQL and MariaDB run every test as a
least-privilege login that may read everything (only the policy stands between the model and the
data) and as the superuser / root.

Every hidden value is a canary that must appear in no answer; every attack is shown to leak without
the policy first; and queries that touch only visible columns of the same tables answer exactly as
the bare driver does.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from host_tables import StaticTable, StaticTables
from loader import load_file

from connectors.databases import CONNECTOR
from shared.host import AcpHost, ToolResponse

pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")

pytestmark = pytest.mark.anyio

HIDDEN = ["customers\\.email", "payroll"]
EMAILS = [f"canary-{secrets.token_hex(4)}@example.com" for _ in range(3)]
SALARIES = [913_571, 824_613, 735_779]  # canaries too: nothing else in the database has these values
CANARIES = [*EMAILS, *map(str, SALARIES)]
HIDDEN_NAMES = ["salary", "payroll"]  # names that may appear only where the query itself wrote them


def schema_sql(cased: str) -> list[str]:
    """The tables and views; ``cased`` is how ``v_cased`` names ``customers`` (another letter case)."""
    return [
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40), email VARCHAR(80))",
        "CREATE TABLE payroll (id INTEGER PRIMARY KEY, salary INTEGER)",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total INTEGER, email VARCHAR(80))",
        "CREATE TABLE visits (day VARCHAR(10), n INTEGER)",
        "CREATE VIEW v_contacts AS SELECT id, email FROM customers",
        "CREATE VIEW v_everything AS SELECT * FROM customers",
        "CREATE VIEW v_pay AS SELECT id, salary FROM payroll",
        "CREATE VIEW v_names AS SELECT id, name FROM customers",
        "CREATE VIEW v_again AS SELECT id, email AS contact FROM v_contacts",
        "CREATE VIEW v_renamed (ref, who) AS SELECT id, email FROM customers",
        "CREATE VIEW v_chain AS SELECT id AS k, contact AS c FROM v_again",
        "CREATE VIEW v_filtered AS SELECT id, name FROM customers WHERE email LIKE 'canary%'",
        f"CREATE VIEW v_cased AS SELECT * FROM {cased}",
        *(f"INSERT INTO customers VALUES ({i}, 'name {i}', '{email}')" for i, email in enumerate(EMAILS, 1)),
        *(f"INSERT INTO payroll VALUES ({i}, {salary})" for i, salary in enumerate(SALARIES, 1)),
        *(f"INSERT INTO orders VALUES ({i}, {i % 3 + 1}, {i * 10}, 'shop{i}@orders.test')" for i in range(1, 6)),
        "INSERT INTO visits VALUES ('2026-01-01', 1)",
    ]


# -- the attacks ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attack:
    sql: str
    leaks: bool = True  # without the policy its answer shows a canary (else it is an oracle or a name leak)


def A(sql: str) -> Attack:
    return Attack(sql)


def oracle(sql: str) -> Attack:
    return Attack(sql, leaks=False)


PROBE = EMAILS[0]
ATTACKS_EVERYWHERE: dict[str, Attack] = {
    "direct": A("SELECT email FROM customers"),
    "star": A("SELECT * FROM customers"),
    "other-case": A("SELECT * FROM CUSTOMERS"),
    "qualified-star": A("SELECT c.* FROM customers c"),
    "function": A("SELECT lower(email) AS e FROM customers"),
    "coalesce": A("SELECT coalesce(email, name) AS e FROM customers"),
    "case": A("SELECT CASE WHEN id > 0 THEN email END AS e FROM customers"),
    "cte-shadow-in-subquery": A(
        "SELECT email FROM customers WHERE 1 = (WITH customers AS (SELECT 1 AS x) SELECT x FROM customers)"
    ),
    "cte-shadow-in-exists": A(
        "SELECT email FROM customers WHERE EXISTS (WITH customers AS (SELECT 1 AS x) SELECT x FROM customers)"
    ),
    "cte-shadow-in-derived": A(
        "SELECT customers.email FROM customers, (WITH customers AS (SELECT 2 AS y) SELECT y FROM customers) z"
    ),
    "cte-same-name-star": A("WITH customers AS (SELECT * FROM customers) SELECT * FROM customers"),
    "cte-shadow-in-union": A(
        "SELECT email FROM customers UNION ALL SELECT * FROM (WITH customers AS (SELECT 'x' AS email) "
        "SELECT email FROM customers) u"
    ),
    "cte-sibling": A(
        "SELECT (WITH customers AS (SELECT 'x' AS email) SELECT max(email) FROM customers) AS a, "
        "(SELECT max(email) FROM customers) AS b"
    ),
    "cte-body": A("WITH c AS (SELECT email FROM customers) SELECT * FROM c"),
    "cte-star": A("WITH c AS (SELECT * FROM customers) SELECT c.email FROM c"),
    "cte-nested": A("WITH a AS (WITH b AS (SELECT email AS e FROM customers) SELECT e FROM b) SELECT e FROM a"),
    "alias-reused-inner": A("SELECT t.email FROM customers t WHERE EXISTS (SELECT 1 FROM orders t)"),
    "alias-like-table": A("SELECT orders.email FROM customers orders"),
    "subquery-star": A("SELECT x.email FROM (SELECT * FROM customers) x"),
    "derived-renamed": A("SELECT x.e FROM (SELECT email AS e FROM customers) x"),
    "nested-4": A("SELECT e FROM (SELECT e FROM (SELECT e FROM (SELECT email AS e FROM customers) a) b) c"),
    "union": A("SELECT name FROM customers UNION SELECT email FROM customers"),
    "union-visible-first": A("SELECT email FROM orders UNION ALL SELECT email FROM customers"),
    "group-by": A("SELECT email, count(*) AS n FROM customers GROUP BY email"),
    "window-value": A("SELECT name, max(email) OVER (PARTITION BY id) AS e FROM customers"),
    "scalar-subquery": A("SELECT (SELECT max(email) FROM customers) AS e"),
    "correlated": A("SELECT o.id, (SELECT c.email FROM customers c WHERE c.id = o.customer_id) AS e FROM orders o"),
    "correlated-unqualified": A("SELECT c.id, (SELECT email FROM v_names n WHERE n.id = c.id) AS e FROM customers c"),
    "natural-join": oracle(f"SELECT id FROM customers NATURAL JOIN (SELECT '{PROBE}' AS email) probe"),
    "recursive-cte": A(
        "WITH RECURSIVE r(n, e) AS (SELECT 1, email FROM customers UNION ALL SELECT n + 1, e FROM r WHERE n < 2) "
        "SELECT e FROM r"
    ),
    "where": oracle(f"SELECT name FROM customers WHERE email = '{PROBE}'"),
    "order-by": oracle("SELECT name FROM customers ORDER BY email"),
    "having": oracle("SELECT name FROM customers GROUP BY name HAVING max(email) LIKE 'canary%'"),
    "window-partition": oracle("SELECT name, row_number() OVER (PARTITION BY email ORDER BY id) AS r FROM customers"),
    "join-on": oracle("SELECT o.id FROM orders o JOIN customers c ON c.email LIKE 'canary%'"),
    "using-literal": oracle(f"SELECT 1 AS hit FROM customers JOIN (SELECT '{PROBE}' AS email) probe USING (email)"),
    "exists": oracle(
        f"SELECT count(*) AS n FROM orders WHERE EXISTS (SELECT 1 FROM customers WHERE email = '{PROBE}')"
    ),
    "in-subquery": oracle("SELECT name FROM customers WHERE id IN (SELECT id FROM customers WHERE email LIKE 'c%')"),
    "alias-reused-outer": oracle(
        "SELECT c.name FROM v_names c WHERE EXISTS (SELECT 1 FROM customers c WHERE c.email LIKE 'canary%')"
    ),
    "unknown-column": oracle("SELECT emai FROM customers"),
    "view-column": A("SELECT email FROM v_contacts"),
    "view-star": A("SELECT * FROM v_everything"),
    "view-other-case": A("SELECT * FROM V_CONTACTS"),
    "view-hidden-table": A("SELECT * FROM v_pay"),
    "view-hidden-table-count": oracle("SELECT count(*) AS n FROM v_pay"),
    "view-over-view": A("SELECT contact FROM v_again"),
    "view-chain": A("SELECT c FROM v_chain"),
    "view-renamed": A("SELECT who FROM v_renamed"),
    "view-renamed-star": A("SELECT * FROM v_renamed"),
    "view-filtered": oracle("SELECT name FROM v_filtered"),
    "view-cased": A("SELECT * FROM v_cased"),
    "view-in-subquery": A("SELECT x.email FROM (SELECT * FROM v_contacts) x"),
    "view-in-cte": A("WITH c AS (SELECT * FROM v_everything) SELECT * FROM c"),
    "view-joined": A("SELECT n.name, c.email FROM v_names n JOIN v_contacts c ON c.id = n.id"),
    "view-aliased-star": A("SELECT v.* FROM v_pay AS v"),
    "hidden-table": A("SELECT max(salary) AS s FROM payroll"),
    "hidden-table-count": oracle("SELECT count(*) AS n FROM payroll"),
    "hidden-table-exists": oracle(
        "SELECT count(*) AS n FROM orders WHERE EXISTS (SELECT 1 FROM payroll WHERE salary > 900000)"
    ),
}
ENGINE_ATTACKS: dict[str, dict[str, Attack]] = {
    "sqlite": {
        "schema-qualified": A("SELECT * FROM main.customers"),
        "schema-other-case": A("SELECT * FROM MAIN.Customers"),
        "quoted-other-case": A('SELECT "EMAIL" FROM "CUSTOMERS"'),
        "brackets": A("SELECT [email] FROM [customers]"),
        "filter": oracle("SELECT count(*) FILTER (WHERE email LIKE 'canary%') AS n FROM customers"),
        "group-concat": A("SELECT group_concat(email) AS e FROM customers"),
        "json-group": A("SELECT json_group_array(email) AS e FROM customers"),
        "limit-subquery": oracle("SELECT name FROM customers LIMIT (SELECT count(*) FROM customers WHERE email > 'c')"),
        "values-join": oracle(
            "SELECT v.column1 FROM (VALUES ('canary')) v JOIN customers c ON c.email LIKE v.column1 || '%'"
        ),
        "catalog": oracle("SELECT sql FROM sqlite_master"),
        "catalog-schema": oracle("SELECT * FROM sqlite_schema"),
        "pragma-function": oracle("SELECT name FROM pragma_table_info('customers')"),
        "pragma-eponymous": oracle("SELECT name FROM pragma_table_info WHERE arg = 'customers'"),
    },
    "duckdb": {
        "schema-qualified": A("SELECT * FROM main.customers"),
        "schema-other-case": A("SELECT * FROM MAIN.Customers"),
        "catalog-qualified": A("SELECT * FROM people.main.customers"),
        "catalog-two-parts": A("SELECT email FROM people.customers"),
        "from-first": A("FROM customers"),
        "columns-star": A("SELECT COLUMNS(*) FROM customers"),
        "columns-regex": A("SELECT COLUMNS('e.*') FROM customers"),
        "columns-lambda": A("SELECT COLUMNS(lambda c: c LIKE '%mail') FROM customers"),
        "positional": A("SELECT #3 FROM customers"),
        "summarize": A("SELECT * FROM (SUMMARIZE customers)"),
        "summarize-query": A("SELECT * FROM (SUMMARIZE SELECT email FROM customers)"),
        "unpivot": A("SELECT * FROM (UNPIVOT customers ON name, email INTO NAME k VALUE v)"),
        "unpivot-columns": A("SELECT * FROM (UNPIVOT customers ON COLUMNS('mail$') INTO NAME k VALUE v)"),
        "unpivot-clause": A("SELECT * FROM customers UNPIVOT (v FOR k IN (name, email))"),
        "pivot": A("SELECT * FROM (PIVOT customers ON name USING first(email))"),
        "replace": A("SELECT * REPLACE (lower(email) AS name) FROM customers"),
        "rename": A("SELECT * RENAME (email AS e) FROM customers"),
        "star-like": A("SELECT * LIKE '%mail' FROM customers"),
        "star-ilike": A("SELECT * ILIKE '%MAIL' FROM customers"),
        "whole-row": A("SELECT customers FROM customers"),
        "whole-row-alias": A("SELECT c FROM customers c"),
        "struct": A("SELECT struct_pack(e := email) AS s FROM customers"),
        "list": A("SELECT list(email) AS l FROM customers"),
        "implicit-lateral": A("SELECT x FROM customers, (SELECT email AS x) d"),
        "implicit-lateral-range": A("SELECT x FROM customers, (SELECT email AS x FROM range(1)) d"),
        "lateral": A("SELECT x.e FROM customers c, LATERAL (SELECT c.email AS e) x"),
        "recursive-shadow": A(
            "WITH RECURSIVE customers AS (SELECT email FROM customers UNION ALL SELECT email FROM customers "
            "WHERE 1 = 0) SELECT * FROM customers"
        ),
        "lambda-outer": A("SELECT list_transform([1], lambda x: email) AS l FROM customers"),
        "comprehension": A("SELECT [x FOR x IN [email]] AS l FROM customers"),
        "pivot-correlated": oracle(  # DuckDB refuses it too, today
            "SELECT (SELECT * FROM (SELECT 1 AS k, 2 AS v) PIVOT (max(c.email) FOR k IN (1))) AS e FROM customers c"
        ),
        "name-guess-beside-function": oracle("SELECT emai FROM customers, range(3)"),
        "name-guess-in-derived": oracle("SELECT r.emai FROM customers, (SELECT * FROM range(3)) r"),
        # A bare name a pivot's output could hold passes the check: the engine's own error, which
        # suggests close names from every table (email), is what must not reach the model.
        "name-guess-beside-pivot": oracle(
            "SELECT emai FROM customers, (SELECT 1 AS k, 2 AS v) PIVOT (sum(v) FOR k IN (1))"
        ),
        "qualify": oracle("SELECT name FROM customers QUALIFY row_number() OVER (ORDER BY email) = 1"),
        "positional-join": A("SELECT * FROM customers POSITIONAL JOIN orders"),
        "macro": A("SELECT contact(1) AS c"),
        "pg-catalog-unqualified": oracle("SELECT attname FROM pg_attribute"),
        "pg-class-other-case": oracle("SELECT relname FROM PG_CLASS"),
        "information-schema": oracle("SELECT column_name FROM information_schema.columns"),
        "catalog-function": oracle("SELECT * FROM duckdb_columns()"),
        "catalog-view": oracle("SELECT * FROM duckdb_views"),
        "describe": oracle("SELECT * FROM (DESCRIBE customers)"),
        "describe-view": oracle("SELECT * FROM (DESCRIBE v_pay)"),
        "show": oracle("SELECT * FROM (SHOW customers)"),
        "query-table": A("SELECT * FROM query_table('customers')"),
    },
    "postgres": {
        "schema-other-case": A("SELECT * FROM PUBLIC.customers"),
        "quoted": A('SELECT "email" FROM "public"."customers"'),
        "database-qualified": A("SELECT * FROM {database}.public.customers"),
        "table-command": A("TABLE customers"),
        "whole-row": A("SELECT c FROM customers c"),
        "whole-row-text": A("SELECT c::text AS t FROM customers c"),
        "whole-row-json": A("SELECT row_to_json(c) AS j FROM customers c"),
        "whole-row-minus": A("SELECT to_jsonb(c) - 'name' AS j FROM customers c"),
        "whole-row-agg": A("SELECT json_agg(c) AS j FROM customers c"),
        "field-of-row": A("SELECT (c).email FROM customers c"),
        "functional-notation": A("SELECT email(c) FROM customers c"),
        "string-agg": A("SELECT string_agg(email, ',') AS e FROM customers"),
        "filter": oracle("SELECT count(*) FILTER (WHERE email LIKE 'canary%') AS n FROM customers"),
        "distinct-on": A("SELECT DISTINCT ON (email) email FROM customers"),
        "lateral": A("SELECT x.e FROM customers c, LATERAL (SELECT c.email AS e) x"),
        "values-join": oracle(
            "SELECT v.b FROM (VALUES (1, 'canary')) v(a, b) JOIN customers c ON c.email LIKE v.b || '%'"
        ),
        "limit-subquery": oracle("SELECT name FROM customers LIMIT (SELECT count(*) FROM customers WHERE email > 'c')"),
        "row-compare": oracle(f"SELECT name FROM customers WHERE (id, email) = (1, '{PROBE}')"),
        "count-row": oracle("SELECT count(c.*) AS n FROM customers c"),
        "other-schema-shadow": A("SELECT email FROM sales.customers"),
        "inherited-table": A("SELECT email FROM customers_2025"),
        "inherited-table-only": A("SELECT email FROM ONLY customers_2025"),
        "materialized-view": A("SELECT * FROM m_contacts"),
        "user-function": A("SELECT contact(1) AS c"),
        "user-function-qualified": A("SELECT public.contact(2) AS c"),
        "viewdef": oracle("SELECT pg_get_viewdef('v_contacts') AS d"),
        "viewdef-regclass": oracle("SELECT pg_get_viewdef('v_pay'::regclass) AS d"),
        "regclass": oracle("SELECT 'payroll'::regclass AS r"),
        "column-comment": oracle("SELECT col_description('customers'::regclass, 3) AS d"),
        "name-guess": oracle("SELECT emai FROM customers"),
        "name-guess-beside-function": oracle("SELECT emai FROM customers, generate_series(1, 3)"),
        "pg-attribute": oracle("SELECT attname FROM pg_attribute"),
        "pg-class-other-case": oracle("SELECT relname FROM PG_CLASS"),
        "pg-catalog": oracle("SELECT * FROM pg_catalog.pg_class"),
        "information-schema": oracle("SELECT column_name FROM information_schema.columns"),
        "information-schema-other-case": oracle("SELECT * FROM INFORMATION_SCHEMA.COLUMNS"),
        "statistics": A("SELECT histogram_bounds::text AS v FROM pg_stats WHERE tablename = 'customers'"),
        "recursive-shadow": oracle(
            "WITH RECURSIVE customers AS (SELECT email FROM customers UNION ALL SELECT email FROM customers "
            "WHERE 1 = 0) SELECT * FROM customers"
        ),
    },
    "mysql": {
        "database-qualified": A("SELECT * FROM {database}.customers"),
        "backticks": A("SELECT `email` FROM `customers`"),
        "column-other-case": A("SELECT EMAIL FROM customers"),
        "group-concat": A("SELECT GROUP_CONCAT(email) AS e FROM customers"),
        "json-agg": A("SELECT JSON_ARRAYAGG(email) AS e FROM customers"),
        "regexp": oracle("SELECT name FROM customers WHERE email REGEXP '^canary'"),
        "sum-case": oracle("SELECT SUM(CASE WHEN email LIKE 'canary%' THEN 1 ELSE 0 END) AS n FROM customers"),
        "user-function": A("SELECT contact(1) AS c"),
        "information-schema": oracle("SELECT COLUMN_NAME FROM information_schema.COLUMNS"),
        "information-schema-views": oracle("SELECT VIEW_DEFINITION FROM information_schema.VIEWS"),
        "mysql-schema": oracle("SELECT * FROM mysql.column_stats"),
    },
}
# Attacks that leak on some engines only (the others reject them themselves): no premise there.
ENGINE_REJECTS = {
    # SQLite reads a CTE that names itself as recursive, and refuses it without a first part.
    "sqlite": {"scalar-subquery", "window-value", "cte-same-name-star"},
    "mysql": {"other-case", "view-other-case", "cte-shadow-in-derived"},
    "postgres": set[str](),
    "duckdb": set[str](),
}

# -- queries that touch only visible columns --------------------------------------------------------------
VISIBLE_EVERYWHERE = [
    "SELECT name FROM customers WHERE id = 1",
    "SELECT id, name FROM customers ORDER BY id",
    "SELECT count(*) AS n FROM customers",
    "SELECT c.name, o.total FROM customers c JOIN orders o ON o.customer_id = c.id ORDER BY o.id",
    "SELECT c.name, o.total FROM customers c JOIN orders o USING (id) ORDER BY c.id",
    "WITH big AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id) "
    "SELECT c.name, big.t FROM customers c JOIN big ON big.customer_id = c.id ORDER BY c.id",
    "SELECT email FROM orders ORDER BY id",
    "SELECT o.email FROM orders o WHERE o.customer_id IN (SELECT id FROM customers WHERE name LIKE 'name%') "
    "ORDER BY o.id",
    "SELECT name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) ORDER BY name",
    "SELECT name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND email > 'a') "
    "ORDER BY name",
    "SELECT name, row_number() OVER (ORDER BY id) AS r FROM customers ORDER BY id",
    "SELECT name FROM customers UNION SELECT name FROM v_names ORDER BY 1",
    "WITH customers AS (SELECT 1 AS email) SELECT email FROM customers",
    "WITH c AS (SELECT id, name FROM customers) SELECT c.name FROM c ORDER BY c.id",
    "SELECT id, name FROM v_names ORDER BY id",
    "SELECT id FROM v_contacts ORDER BY id",
    "SELECT id, name FROM v_everything ORDER BY id",
    "SELECT ref FROM v_renamed ORDER BY ref",
    "SELECT name FROM v_cased ORDER BY id",
    "SELECT id FROM v_again ORDER BY id",
    "SELECT k FROM v_chain ORDER BY k",
    "SELECT max(total) AS m FROM orders",
]
VISIBLE_BY_ENGINE: dict[str, list[str]] = {
    "sqlite": [
        "SELECT name FROM main.customers WHERE id = 2",
        "SELECT x FROM (SELECT 1 AS x UNION SELECT 2) ORDER BY x",
    ],
    "duckdb": [
        "SELECT * EXCLUDE (email) FROM customers ORDER BY id",
        "SELECT COLUMNS(*) FROM v_names ORDER BY id",
        "FROM v_names ORDER BY id",
        "SELECT name FROM people.customers ORDER BY id",
        "SELECT name FROM people.main.customers ORDER BY id",
        "SELECT #2 FROM v_names ORDER BY 1",
        "SELECT id, name FROM customers QUALIFY row_number() OVER (ORDER BY id) = 1",
        "SELECT column_name FROM (SUMMARIZE v_names) ORDER BY 1",
        "SELECT name, count(*) AS n FROM customers GROUP BY ALL ORDER BY ALL",
        "SELECT x FROM range(3) t(x) ORDER BY x",
        "SELECT [x + 1 FOR x IN [1, 2] IF x > 1] AS l, list_transform([id], lambda i: i * 2) AS d FROM v_names",
        "SELECT * FROM v_names UNPIVOT (v FOR k IN (name)) ORDER BY id",
        "SELECT * FROM (SELECT id, name FROM customers) PIVOT (count(*) FOR name IN ('name 1')) ORDER BY id",
    ],
    "postgres": [
        "SELECT name FROM public.customers WHERE id = 2",
        "SELECT d FROM generate_series(1, 3) AS g(d)",
        "SELECT n.name FROM v_names n, LATERAL (SELECT n.id * 2 AS twice) x ORDER BY x.twice",
        "SELECT DISTINCT ON (name) name FROM customers ORDER BY name",
    ],
    "mysql": [
        "SELECT name FROM {database}.customers WHERE id = 2",
        "SELECT GROUP_CONCAT(name ORDER BY id) AS g FROM customers",
    ],
}


# -- the four engines -------------------------------------------------------------------------------------
@dataclass
class EngineCase:
    """One engine's database: the resource ids, the logins, and a driver connection for expectations."""

    name: str
    database: str
    resource_id: str  # the schema-level (or database-level) resource queries run on
    table_prefix: str  # what goes before a table name in a table-level resource id
    logins: dict[str, dict[str, Any]]
    driver: Callable[[list[str]], list[list[tuple[Any, ...]]]]  # the rows of each query, straight from the driver
    qualified_rules: list[str] = field(default_factory=list)  # table_rules patterns naming visits qualified

    def meta(self, login: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"credentials": self.logins[login], "autocontext_delivered": True, "config": config or {}}

    def sql(self, text: str) -> str:
        return text.replace("{database}", self.database)


def _sqlite(root: Path) -> Iterator[EngineCase]:
    path = root / "people.sqlite"
    with sqlite3.connect(path) as conn:
        for statement in [
            *schema_sql("MAIN.Customers"),
            "CREATE INDEX customers_email ON customers (email)",
            "ANALYZE",
        ]:
            conn.execute(statement)

    def driver(queries: list[str]) -> list[list[tuple[Any, ...]]]:
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
            return [[tuple(r) for r in conn.execute(sql).fetchall()] for sql in queries]

    yield EngineCase("sqlite", "people", "people", "people", {"file": {"type": "sqlite", "path": str(path)}}, driver,
                     qualified_rules=["people\\.visits", "main\\.visits"])  # fmt: skip


def _duckdb(root: Path) -> Iterator[EngineCase]:
    import duckdb

    path = root / "people.duckdb"
    with duckdb.connect(str(path)) as conn:
        for statement in schema_sql("main.Customers"):
            conn.execute(statement)
        conn.execute("CREATE MACRO contact(i) AS (SELECT email FROM customers WHERE id = i)")

    def driver(queries: list[str]) -> list[list[tuple[Any, ...]]]:
        # Another process: this one holds the connector's connections, opened with its own settings.
        script = (
            "import duckdb, json, sys; conn = duckdb.connect(sys.argv[1], read_only=True); "
            "print(json.dumps([conn.execute(q).fetchall() for q in json.loads(sys.stdin.read())]))"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)], input=json.dumps(queries), capture_output=True, text=True,
            check=True, timeout=60,
        )  # fmt: skip
        return [[tuple(r) for r in rows] for rows in json.loads(done.stdout)]

    yield EngineCase("duckdb", "people", "people.main", "people.main", {"file": {"type": "duckdb", "path": str(path)}},
                     driver, qualified_rules=["main\\.visits"])  # fmt: skip


def _postgres(root: Path) -> Iterator[EngineCase]:
    from psycopg import sql as pg_sql

    pg_server.require_server()
    reader, password = f"{pg_server.PREFIX}scope_{secrets.token_hex(4)}", secrets.token_hex(12)
    with pg_server.empty_database("policy") as name:
        with pg_server.admin_connect(name) as conn:
            for statement in schema_sql("PUBLIC.CUSTOMERS"):
                conn.execute(statement)
            conn.execute("CREATE MATERIALIZED VIEW m_contacts AS SELECT id, email FROM customers")
            conn.execute(
                "CREATE FUNCTION contact(i integer) RETURNS text LANGUAGE sql AS "
                "'SELECT email FROM customers WHERE id = i'"
            )
            conn.execute("CREATE TABLE customers_2025 () INHERITS (customers)")  # its rows are customers' too
            conn.execute(f"INSERT INTO customers_2025 VALUES (7, 'name 7', '{EMAILS[2]}')")
            conn.execute("CREATE SCHEMA sales")
            conn.execute("CREATE TABLE sales.customers (id integer, email text)")
            conn.execute(f"INSERT INTO sales.customers VALUES (1, '{EMAILS[1]}')")
            conn.execute("ANALYZE")
            role = pg_sql.Identifier(reader)
            conn.execute(pg_sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, pg_sql.Literal(password)))
            for grant in (
                "GRANT CONNECT ON DATABASE {db} TO {role}",
                "GRANT USAGE ON SCHEMA public, sales TO {role}",
                "GRANT SELECT ON ALL TABLES IN SCHEMA public, sales TO {role}",
                "GRANT INSERT ON public.visits TO {role}",
            ):
                conn.execute(pg_sql.SQL(grant).format(db=pg_sql.Identifier(name), role=role))
        base = {"type": "postgres", "host": pg_server.HOST, "port": pg_server.PORT, "database": name}

        def driver(queries: list[str]) -> list[list[tuple[Any, ...]]]:
            with pg_server.admin_connect(name) as conn:
                return [[tuple(r) for r in conn.execute(sql).fetchall()] for sql in queries]

        try:
            yield EngineCase("postgres", name, f"{name}.public", f"{name}.public",
                             {"reader": {**base, "user": reader, "password": password},
                              "superuser": {**base, "user": pg_server.SUPERUSER}},
                             driver, qualified_rules=["public\\.visits"])  # fmt: skip
        finally:
            with pg_server.admin_connect() as admin:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (reader,))
                admin.execute(pg_sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pg_sql.Identifier(name)))
                admin.execute(pg_sql.SQL("DROP ROLE IF EXISTS {}").format(pg_sql.Identifier(reader)))


def _mysql(root: Path) -> Iterator[EngineCase]:
    mysql_server.require_server()
    token = secrets.token_hex(4)
    name, reader, password = f"{mysql_server.PREFIX}policy_{token}", f"{mysql_server.PREFIX}s_{token}", token * 3
    quoted = mysql_server.quote(name)
    admin = mysql_server.admin_connect()
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {quoted}")
            cur.execute(f"USE {quoted}")
            for statement in schema_sql(f"{quoted}.customers"):
                cur.execute(statement)
            cur.execute(
                "CREATE FUNCTION contact(i INT) RETURNS VARCHAR(80) READS SQL DATA "
                "RETURN (SELECT email FROM customers WHERE id = i)"
            )
            cur.execute(f"CREATE USER '{reader}'@'%' IDENTIFIED BY '{password}'")
            cur.execute(f"GRANT SELECT, SHOW VIEW, EXECUTE ON {quoted}.* TO '{reader}'@'%'")
            cur.execute(f"GRANT INSERT ON {quoted}.visits TO '{reader}'@'%'")
            cur.execute(f"GRANT INSERT ON {quoted}.v_contacts TO '{reader}'@'%'")
            # A login that may read every table and view but not the views' definitions (no SHOW VIEW).
            cur.execute(f"CREATE USER '{reader}b'@'%' IDENTIFIED BY '{password}'")
            cur.execute(f"GRANT SELECT ON {quoted}.* TO '{reader}b'@'%'")
        base = {"type": "mysql", "host": mysql_server.HOST, "port": mysql_server.PORT, "database": name}

        def driver(queries: list[str]) -> list[list[tuple[Any, ...]]]:
            conn = mysql_server.admin_connect(name)
            try:
                with conn.cursor() as cur:
                    out = []
                    for sql in queries:
                        cur.execute(sql)
                        out.append([tuple(r) for r in cur.fetchall()])
                    return out
            finally:
                conn.close()

        yield EngineCase("mysql", name, name, name,
                         {"reader": {**base, "user": reader, "password": password},
                          "root": {**base, "user": mysql_server.ROOT, "password": mysql_server.ROOT_PASSWORD},
                          "blind": {**base, "user": f"{reader}b", "password": password}},
                         driver, qualified_rules=[f"{name}\\.visits"])  # fmt: skip
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {quoted}")
            cur.execute(f"DROP USER IF EXISTS '{reader}'@'%'")
            cur.execute(f"DROP USER IF EXISTS '{reader}b'@'%'")
        admin.close()


BUILDERS = {"sqlite": _sqlite, "duckdb": _duckdb, "postgres": _postgres, "mysql": _mysql}
LOGINS = {"sqlite": ["file"], "duckdb": ["file"], "postgres": ["reader", "superuser"], "mysql": ["reader", "root"]}


@pytest.fixture(
    scope="module",
    # The database servers' engines are out of the quick tier.
    params=[pytest.param(name, marks=pytest.mark.slow) if name in {"postgres", "mysql"} else name for name in BUILDERS],
)
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineCase]:
    yield from BUILDERS[request.param](tmp_path_factory.mktemp(f"policy-{request.param}"))


@asynccontextmanager
async def started(in_process: Any, runtime_dirs: dict[str, str], **kwargs: Any) -> AsyncIterator[AcpHost]:
    async with in_process(CONNECTOR, env=runtime_dirs, **kwargs) as host:
        yield host


def leaks(response: ToolResponse, sql: str = "") -> list[str]:
    """The canaries an answer shows (but those its query wrote itself, as a probe)."""
    text = json.dumps(response.raw)
    return [canary for canary in CANARIES if canary in text and canary not in sql]


def names_leaked(sql: str, response: ToolResponse) -> list[str]:
    """Hidden names in an answer that the query did not write itself."""
    text = json.dumps(response.raw).lower()
    written = sql.lower()
    shown = [n for n in HIDDEN_NAMES if n in text and n not in written]
    if "email" not in written and "orders" not in written and "email" in text:
        shown.append("email")
    return shown


def shown(response: ToolResponse) -> str:
    """What the model sees, as JSON text (not escaped inside the MCP content)."""
    return json.dumps(response.model_response)


def attacks_of(case: EngineCase) -> dict[str, Attack]:
    return {**ATTACKS_EVERYWHERE, **ENGINE_ATTACKS[case.name]}


# -- tests ------------------------------------------------------------------------------------------------
async def test_every_attack_leaks_without_the_policy_and_is_refused_with_it(
    case: EngineCase, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    attacks = attacks_of(case)
    assert len(attacks) >= len(ATTACKS_EVERYWHERE) + 10
    hidden = {"hidden": json.dumps(HIDDEN)}
    async with started(in_process, runtime_dirs) as host:
        for login in LOGINS[case.name]:
            for label, attack in attacks.items():
                sql = case.sql(attack.sql)
                arguments = {"resource_id": case.resource_id, "sql": sql}
                # The premise once, as the most privileged login: the attack is real.
                if attack.leaks and label not in ENGINE_REJECTS[case.name] and login == LOGINS[case.name][-1]:
                    bare = await host.call("execute_sql", arguments, case.meta(login))
                    premise = bare.error_name in ("ACP_READ_ONLY_VIOLATION",) or leaks(bare, sql)
                    assert premise, (login, label, "no canary without the policy", bare.error or bare.text[:300])
                response = await host.call("execute_sql", arguments, case.meta(login, hidden))
                assert response.is_error, (login, label, response.text[:300])
                assert response.error_name in ("ACP_INVALID_ARGUMENTS", "ACP_READ_ONLY_VIOLATION"), (
                    label,
                    response.error,
                )
                assert leaks(response, sql) == [], (login, label)
                assert names_leaked(sql, response) == [], (login, label, response.error)


async def test_queries_on_visible_columns_answer_as_the_driver(
    case: EngineCase, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    hidden = {"hidden": json.dumps(HIDDEN)}
    queries = [case.sql(q) for q in [*VISIBLE_EVERYWHERE, *VISIBLE_BY_ENGINE[case.name]]]
    expected = dict(zip(queries, case.driver(queries), strict=True))
    async with started(in_process, runtime_dirs) as host:
        for login in LOGINS[case.name]:
            for sql in queries:
                response = await host.call(
                    "execute_sql", {"resource_id": case.resource_id, "sql": sql}, case.meta(login, hidden)
                )
                assert not response.is_error, (login, sql, response.error)
                rows = [tuple(row.values()) for row in response.rows()]
                assert rows == [tuple(_plain(v) for v in row) for row in expected[sql]], (login, sql)
                assert leaks(response) == [], sql


def _plain(value: Any) -> Any:
    return int(value) if type(value).__name__ == "Decimal" else value


def schema_of(case: EngineCase) -> str:
    """What a pattern names as the schema: SQLite's is main, a MySQL database is its own schema."""
    return {"sqlite": "main", "duckdb": "main", "postgres": "public", "mysql": case.database}[case.name]


def pattern_forms(case: EngineCase) -> list[str]:
    """Every documented form of a pattern for customers.email, as an operator may write it."""
    forms = [
        "customers\\.email",
        "CUSTOMERS\\.EMAIL",
        "customers\\.e.*",
        f"{re.escape(schema_of(case))}\\.customers\\.email",
    ]
    if case.name == "sqlite":
        forms.append("people\\.customers\\.email")  # the database is the schema
    return forms


async def test_patterns_match_qualified_and_unqualified_names_alike(
    case: EngineCase, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    login = LOGINS[case.name][0]
    qualified = {"sqlite": "main.customers", "duckdb": "people.main.customers", "postgres": "public.customers",
                 "mysql": f"{case.database}.customers"}[case.name]  # fmt: skip
    reads = ["SELECT email FROM customers", "SELECT * FROM v_contacts", "SELECT who FROM v_renamed",
             f"SELECT lower(email) AS e FROM {qualified}"]  # fmt: skip
    async with started(in_process, runtime_dirs) as host:
        for pattern in pattern_forms(case):
            config = {"hidden": json.dumps([pattern])}
            for sql in reads:
                response = await host.call(
                    "execute_sql", {"resource_id": case.resource_id, "sql": sql}, case.meta(login, config)
                )
                assert response.error_name == "ACP_INVALID_ARGUMENTS", (pattern, sql, response.text[:200])
                assert leaks(response) == [], (pattern, sql)
            fine = await host.call(
                "execute_sql",
                {"resource_id": case.resource_id, "sql": "SELECT email FROM orders ORDER BY id"},
                case.meta(login, config),
            )
            assert not fine.is_error, (pattern, fine.error)
        # A whole table named with its schema: hidden from unqualified queries, listings and the views over it.
        config = {"hidden": json.dumps([f"{re.escape(schema_of(case))}\\.customers"])}
        response = await host.call(
            "execute_sql", {"resource_id": case.resource_id, "sql": "SELECT count(*) AS n FROM customers"},
            case.meta(login, config),
        )  # fmt: skip
        assert response.error_name == "ACP_INVALID_ARGUMENTS", response.text[:200]
        listed = await host.call("autocontext", {"resource_id": case.resource_id}, case.meta(login, config))
        assert not listed.is_error, listed.error
        text = shown(listed)
        assert '"customers"' not in text and '"v_names"' not in text and leaks(listed) == []
        assert '"orders"' in text  # premise: the listing is there


async def test_blocks_and_descriptions_resolve_views_like_queries(
    case: EngineCase, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    login = LOGINS[case.name][0]
    hidden = {"hidden": json.dumps(HIDDEN)}
    async with started(in_process, runtime_dirs) as host:
        bare = await host.call("autocontext", {"resource_id": case.resource_id}, case.meta(login))
        assert not bare.is_error, bare.error
        assert leaks(bare), "premise: sample_values shows the canaries without the policy"
        context = await host.call("autocontext", {"resource_id": case.resource_id}, case.meta(login, hidden))
        assert not context.is_error, context.error
        assert leaks(context) == []
        text = shown(context)
        assert "v_names" in text and "v_contacts" in text  # a view with a visible column stays listed
        for name in ("v_pay", "v_filtered", "payroll", "salary"):
            assert name not in text, name
        described = {}
        for view in ("v_contacts", "v_renamed", "v_cased", "v_again", "v_everything", "customers"):
            response = await host.call(
                "describe_table", {"resource_id": f"{case.table_prefix}.{view}"}, case.meta(login, hidden)
            )
            assert not response.is_error, (view, response.error)
            described[view] = [c["name"] for c in response.model_response["columns"]]
            per_table = await host.call(
                "autocontext", {"resource_id": f"{case.table_prefix}.{view}"}, case.meta(login, hidden)
            )
            assert not per_table.is_error and leaks(per_table) == [], (view, per_table.error)
            assert '"email"' not in shown(per_table) and '"who"' not in shown(per_table), view
        assert described == {
            "v_contacts": ["id"], "v_renamed": ["ref"], "v_cased": ["id", "name"], "v_again": ["id"],
            "v_everything": ["id", "name"], "customers": ["id", "name"],
        }  # fmt: skip
        for view in ("v_pay", "v_filtered", "payroll"):
            for tool in ("describe_table", "autocontext"):
                response = await host.call(
                    tool, {"resource_id": f"{case.table_prefix}.{view}"}, case.meta(login, hidden)
                )
                assert response.error_name == "ACP_RESOURCE_NOT_FOUND", (tool, view, response.error)
                assert leaks(response) == [] and "salary" not in json.dumps(response.raw)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["postgres"], indirect=True)
async def test_postgres_schema_patterns_follow_the_search_path(
    case: EngineCase, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    """A pattern that names public.customers holds wherever the query runs (schema, database level) and
    however it names the table; sales.customers, another table with the same name, stays readable."""
    config = {"hidden": json.dumps(["public\\.customers\\.email"])}
    refused = {
        case.resource_id: ["SELECT email FROM customers", "SELECT email FROM public.customers"],
        f"{case.database}.sales": ["SELECT email FROM public.customers", "SELECT c.email FROM PUBLIC.CUSTOMERS c"],
        case.database: ["SELECT email FROM customers", "SELECT * FROM customers", "SELECT email FROM customers_2025"],
    }
    async with started(in_process, runtime_dirs) as host:
        for login in LOGINS[case.name]:
            for resource, queries in refused.items():
                for sql in queries:
                    response = await host.call("execute_sql", {"resource_id": resource, "sql": sql},
                                               case.meta(login, config))  # fmt: skip
                    assert response.error_name == "ACP_INVALID_ARGUMENTS", (login, resource, sql, response.text[:200])
                    assert leaks(response) == [], (login, resource, sql)
            other = await host.call(
                "execute_sql", {"resource_id": f"{case.database}.sales", "sql": "SELECT email FROM customers"},
                case.meta(login, config),
            )  # fmt: skip
            assert not other.is_error, other.error
            assert [row["email"] for row in other.rows()] == [EMAILS[1]]  # sales.customers: not the hidden table


@pytest.mark.slow
@pytest.mark.parametrize("case", ["mysql"], indirect=True)
async def test_a_view_the_login_cannot_inspect_is_hidden_whole(
    case: EngineCase, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    """Without SHOW VIEW, MariaDB shows a login no view definition: the checker cannot tell what a view
    reads, so every view is hidden whole for that login, while the tables stay readable."""
    hidden = {"hidden": json.dumps(HIDDEN)}
    async with started(in_process, runtime_dirs) as host:
        for login, view_readable in (("reader", True), ("blind", False)):
            response = await host.call(
                "execute_sql", {"resource_id": case.resource_id, "sql": "SELECT id, name FROM v_names ORDER BY id"},
                case.meta(login, hidden),
            )  # fmt: skip
            assert response.is_error is not view_readable, (login, response.error)
            context = await host.call("autocontext", {"resource_id": case.resource_id}, case.meta(login, hidden))
            assert not context.is_error and leaks(context) == [], context.error
            assert ('"v_names"' in shown(context)) is view_readable, login
            assert '"orders"' in shown(context)
        table = await host.call(
            "execute_sql", {"resource_id": case.resource_id, "sql": "SELECT name FROM customers WHERE id = 1"},
            case.meta("blind", hidden),
        )  # fmt: skip
        assert not table.is_error and table.rows() == [{"name": "name 1"}], table.error


def _visits(case: EngineCase) -> int:
    return int(case.driver(["SELECT count(*) FROM visits"])[0][0][0])


async def test_insert_rows_resolves_its_target_before_the_rules(
    case: EngineCase, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    headers = [{"name": "day", "type": "string"}, {"name": "n", "type": "integer"}]
    tables = StaticTables({
        "ds_visits": StaticTable(headers=headers, rows=[{"day": "2026-02-01", "n": 5}]),
        "ds_contacts": StaticTable(headers=[{"name": "id", "type": "integer"}, {"name": "email", "type": "string"}],
                                   rows=[{"id": 9, "email": "planted@example.com"}]),
        "ds_people": StaticTable(headers=[{"name": "name", "type": "string"}, {"name": "phone", "type": "string"}],
                                 rows=[{"name": "x", "phone": "1"}]),
    })  # fmt: skip
    adding = {"access_mode": "readAndOnlyAdd", "hidden": json.dumps(HIDDEN)}
    other_case = {"sqlite": "VISITS", "duckdb": "VISITS", "postgres": "visits", "mysql": "visits"}[case.name]
    async with started(in_process, runtime_dirs, tables=tables) as host:
        for login in LOGINS[case.name]:
            before = _visits(case)
            for pattern in case.qualified_rules:
                closed = {**adding, "table_rules": json.dumps([{"pattern": pattern, "mode": "onlyRead"}])}
                for table in ("visits", other_case):
                    response = await host.call(
                        "insert_rows", {"resource_id": f"{case.table_prefix}.{table}", "table_ref": "ds_visits"},
                        case.meta(login, closed),
                    )  # fmt: skip
                    assert response.error_name == "ACP_READ_ONLY_VIOLATION", (login, pattern, table, response.error)
            assert _visits(case) == before
            for view in ("v_contacts", "v_names", "v_pay"):
                response = await host.call(
                    "insert_rows", {"resource_id": f"{case.table_prefix}.{view}", "table_ref": "ds_contacts"},
                    case.meta(login, adding),
                )  # fmt: skip
                assert response.error_name == "ACP_INVALID_ARGUMENTS", (login, view, response.error)
                assert "view" in response.error["message"] or "hidden" in response.error["message"], response.error
            assert "planted@example.com" not in json.dumps(case.driver(["SELECT email FROM customers"]))
            unknown = await host.call(
                "insert_rows", {"resource_id": f"{case.table_prefix}.customers", "table_ref": "ds_people"},
                case.meta(login, adding),
            )  # fmt: skip
            assert unknown.error_name == "ACP_INVALID_ARGUMENTS", unknown.error
            assert "phone" in unknown.error["message"] and "email" not in unknown.error["message"], unknown.error
            appended = await host.call(
                "insert_rows", {"resource_id": f"{case.table_prefix}.{other_case}", "table_ref": "ds_visits"},
                case.meta(login, adding),
            )  # fmt: skip
            assert not appended.is_error, (login, appended.error)
            assert _visits(case) == before + 1  # into visits itself, whatever the letter case


# SQL each engine's checks refuse before reaching the database: clauses, operators, quotes.
BROKEN_SQL = [
    "SELECT name FROM customers WHERE",
    "SELECT name FROM customers WHERE id = = 1",
    "SELECT count(* FROM customers",
    "SELECT name FROM customers\nWHERE id IN (1, 2\nORDER BY name",
    "SELECT name FROM customers WHERE name = 'unterminated",
]


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "postgres", "mysql"])
def test_syntax_errors_reach_the_model_as_clean_words(kind: str) -> None:
    """Each engine's parser layer says what is wrong and where, in words: no terminal escape codes, Python
    class names or sqlglot's name (no database is reached for these). The `hidden` check only ever sees
    the tree this layer approved."""
    from connectors.databases.engine import engine_for
    from shared import AcpError

    engine = engine_for({"type": kind})
    for sql in BROKEN_SQL:
        with pytest.raises(AcpError) as caught:
            engine.check_sql(sql)
        message = caught.value.message
        assert "\x1b" not in message and "<class" not in message and "sqlglot" not in message.lower(), message
        assert re.search(r"syntax error at line \d+, column \d+ \(", message), message
