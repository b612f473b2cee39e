"""The parser layer on real engines: what runs is the regenerated SQL, only allowed functions run,
and characters on which lexers disagree never reach a server (issue 11, classes 1 and 2).

Written as an attacker would, per engine and, where the engine has logins, as the least-privilege
login and as the superuser or root: each attempt must come back as ACP_READ_ONLY_VIOLATION naming
what it used, and its effect must not have happened (no lock held afterwards, no file read or
written, no sequence advanced, no session signalled, no hidden value or canary in any answer).
The other half runs what MariaDB needed a generator of its own for, raw and through the connector,
and compares the answers.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from loader import load_file

from connectors.databases import CONNECTOR, engine_sqlite
from shared.host import ToolResponse

pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")
pg_database = pg_server.pg_database  # the module-scoped fixtures
mysql_database = mysql_server.mysql_database

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RO = ("ACP_READ_ONLY_VIOLATION", -32019)
HIDDEN_EMAIL = json.dumps(["customers\\.email"])
PASSWD_MARK = "root:x:0:0"


def _refused(response: ToolResponse, named: str) -> str | None:
    """Why ``response`` is not a read-only refusal that names ``named``, or None."""
    error = response.error or {}
    if (error.get("name"), error.get("code")) != RO:
        return f"not a read-only refusal: {error or response.text[:200]}"
    if named.lower() not in error["message"].lower():
        return f"the message does not name {named!r}: {error['message'][:200]}"
    return None


async def _attack(host: Any, resource: str, meta: dict[str, Any], cases: list[tuple[str, str]]) -> list[str]:
    """Run every (sql, what the refusal must name); return what went wrong, and every answer's text."""
    failures, texts = [], []
    for sql, named in cases:
        response = await host.call("execute_sql", {"resource_id": resource, "sql": sql}, meta)
        texts.append(response.text)
        why = _refused(response, named)
        if why:
            failures.append(f"{sql!r}: {why}")
    return failures + [f"TEXT {t}" for t in texts]


def _split(outcome: list[str]) -> tuple[list[str], str]:
    failures = [line for line in outcome if not line.startswith("TEXT ")]
    return failures, "\n".join(line[5:] for line in outcome if line.startswith("TEXT "))


# =====================================================================================================
# PostgreSQL, as the least-privilege role and as the superuser
# =====================================================================================================
PG_ATTACKS = [
    # SQL given as text, out of the checks' sight (the issue's example returned hidden emails)
    ("SELECT * FROM ts_stat('SELECT to_tsvector(''simple'', email) FROM customers')", "ts_stat()"),
    ("SELECT word FROM ts_stat($$SELECT to_tsvector('simple', email) FROM customers$$) AS s", "ts_stat()"),
    ("SELECT query_to_xml('SELECT email FROM customers', true, false, '')", "query_to_xml()"),
    (
        "SELECT unnest(xpath('//email/text()', query_to_xml('SELECT email FROM customers', true, false, '')))::text",
        "xpath()",
    ),
    ("SELECT table_to_xml('customers', true, false, '')", "table_to_xml()"),
    ("SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, email::tsquery FROM customers')", "ts_rewrite()"),
    ("SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(x int)", "dblink()"),
    # server files, directories and large objects
    ("SELECT pg_read_file('/etc/passwd')", "pg_read_file()"),
    ("SELECT pg_catalog.pg_read_file('/etc/passwd')", "pg_read_file()"),
    ("SELECT \"pg_read_file\"('/etc/passwd')", "pg_read_file()"),
    ("SELECT PG_READ_BINARY_FILE('/etc/passwd')", "pg_read_binary_file()"),
    ("SELECT * FROM pg_ls_dir('/etc') AS d(name)", "pg_ls_dir()"),
    ("SELECT g FROM generate_series(1, 2) AS g, LATERAL pg_ls_dir('/etc') AS d", "pg_ls_dir()"),
    ("SELECT pg_stat_file('/etc/passwd')", "pg_stat_file()"),
    ("SELECT lo_import('/etc/passwd')", "lo_import()"),
    ("SELECT xmlparse(content pg_read_file('/etc/passwd')) AS x", "xmlparse()"),
    ("SELECT pg_read_file('/etc/passwd') AS x ORDER BY 1 USING <", "pg_read_file()"),
    ("SELECT U&\"pg\\005fread_file\"('/etc/passwd')", 'U&"'),
    # locks that outlive the call, writes through the read-only transaction
    ("SELECT pg_advisory_lock(4242)", "pg_advisory_lock()"),
    ("SELECT id FROM orders WHERE pg_try_advisory_lock(id) LIMIT 1", "pg_try_advisory_lock()"),
    ("SELECT 1 FROM orders ORDER BY pg_advisory_lock_shared(4243) LIMIT 1", "pg_advisory_lock_shared()"),
    ("SELECT brin_summarize_new_values('orders_pkey')", "brin_summarize_new_values()"),
    ("SELECT gin_clean_pending_list('orders_pkey')", "gin_clean_pending_list()"),
    # settings, sequences, transaction ids, notifications, waits, signals
    ("SELECT set_config('default_transaction_read_only', 'off', false)", "set_config()"),
    ("SELECT current_setting('data_directory')", "current_setting()"),
    ("SELECT nextval('invoice_numbers')", "nextval()"),
    ("SELECT setval('invoice_numbers', 1)", "setval()"),
    ("SELECT currval('invoice_numbers')", "currval()"),
    ("SELECT txid_current()", "txid_current()"),
    ("SELECT pg_notify('acp_attack', 'x')", "pg_notify()"),
    ("SELECT pg_sleep(30)", "pg_sleep()"),
    ("SELECT count(*) FROM orders GROUP BY status HAVING pg_sleep(1) IS NULL", "pg_sleep()"),
    ("SELECT pg_terminate_backend({victim})", "pg_terminate_backend()"),
    ("SELECT pg_cancel_backend({victim})", "pg_cancel_backend()"),
    # functions of the database's own, and names that only look like built-ins
    ("SELECT purge_orders_fn()", "purge_orders_fn()"),
    ("SELECT public.upper(name) FROM customers", "public.upper()"),
    ('SELECT "Upper"(name) FROM customers', "upper"),
]


@pytest.mark.parametrize("superuser", [False, True], ids=["role", "superuser"])
async def test_postgres_refuses_every_function_off_the_allow_list_and_none_took_effect(
    superuser: bool, pg_database: Any, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    db = pg_database
    victim = db.connect()  # a session the attacker would terminate
    listener = db.connect()
    listener.execute("LISTEN acp_attack")
    try:
        pid = victim.execute("SELECT pg_backend_pid()").fetchone()[0]
        before = db.state()
        cases = [(sql.replace("{victim}", str(pid)), named) for sql, named in PG_ATTACKS]
        meta = db.meta(superuser=superuser, config={"hidden": HIDDEN_EMAIL})
        async with in_process(CONNECTOR, env=runtime_dirs) as host:
            failures, text = _split(await _attack(host, db.name, meta, cases))
            # While the connector's pooled session is still open: it holds no advisory lock.
            held = db.rows("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        assert failures == [], failures
        assert held == [(0,)]
        assert victim.execute("SELECT 1").fetchone() == (1,)  # not terminated
        assert list(listener.notifies(timeout=0.2, stop_after=1)) == []  # nothing was notified
        assert db.state() == before  # rows, sequences, large objects, relations, functions
        emails = [row["email"] for row in db.query("SELECT email FROM customers WHERE email IS NOT NULL")]
        passwd = db.server_read("/etc/passwd")
        assert emails and PASSWD_MARK in passwd  # premise: a leak would be visible
        assert not [e for e in emails if e in text]
        assert PASSWD_MARK not in text
    finally:
        victim.close()
        listener.close()


async def test_allowed_functions_extends_the_list_for_the_operator_s_own_function(
    pg_database: Any, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    db = pg_database
    with db.connect() as admin:
        admin.execute("CREATE OR REPLACE FUNCTION public.acp_double(x integer) RETURNS integer "
                      "LANGUAGE sql IMMUTABLE AS 'SELECT x * 2'")  # fmt: skip
    sql = "SELECT acp_double(21) AS d"
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        refused = await host.call("execute_sql", {"resource_id": db.name, "sql": sql}, db.meta())
        allowed = await host.call(
            "execute_sql",
            {"resource_id": db.name, "sql": sql},
            db.meta(config={"allowed_functions": json.dumps(["acp_double"])}),
        )
        qualified = await host.call(
            "execute_sql",
            {"resource_id": db.name, "sql": "SELECT public.acp_double(21) AS d"},
            db.meta(config={"allowed_functions": json.dumps(["public.acp_double"])}),
        )
        other = await host.call(
            "execute_sql",
            {"resource_id": db.name, "sql": sql},
            db.meta(config={"allowed_functions": json.dumps(["acp_triple"])}),
        )
        malformed = await host.call(
            "execute_sql", {"resource_id": db.name, "sql": sql}, db.meta(config={"allowed_functions": '{"a": 1}'})
        )
    assert _refused(refused, "acp_double()") is None
    assert '"acp_double"' in refused.error["message"] and "allowed_functions" in refused.error["message"]
    assert allowed.rows() == [{"d": 42}]
    assert qualified.rows() == [{"d": 42}]
    assert _refused(other, "acp_double()") is None and "allowed_functions either" in other.error["message"]
    assert malformed.error_name == "ACP_INVALID_ARGUMENTS" and "allowed_functions" in malformed.error["message"]


async def test_postgres_reads_string_literals_as_the_checker_does_whatever_the_database_says(
    pg_database: Any, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    """With standard_conforming_strings off, PostgreSQL reads '…\\' as an escaped quote: the rest of the
    regenerated text would become string and string code. The connector turns it on per transaction."""
    db = pg_database
    with db.connect() as admin:
        admin.execute(f'ALTER ROLE "{db.role}" SET standard_conforming_strings = off')
    try:
        sql = "SELECT 'a\\' AS s, 'b' AS t"
        async with in_process(CONNECTOR, env=runtime_dirs) as host:
            response = await host.call("execute_sql", {"resource_id": db.name, "sql": sql}, db.meta())
        with db.connect(as_role=True) as role:  # premise: the role's own sessions read it otherwise
            assert role.execute("SHOW standard_conforming_strings").fetchone() == ("off",)
        assert not response.is_error, response.error
        assert response.rows() == [{"s": "a\\", "t": "b"}]
    finally:
        with db.connect() as admin:
            admin.execute(f'ALTER ROLE "{db.role}" RESET standard_conforming_strings')


# =====================================================================================================
# MariaDB, as the least-privilege user and as root
# =====================================================================================================
MARIADB_ATTACKS = [
    # the parser differential: "--" then U+00A0 is a comment for sqlglot and code for MariaDB
    ("SELECT name FROM customers WHERE id = 1 --\u00a0 UNION SELECT LOAD_FILE('/etc/passwd')", "U+00A0"),
    ("SELECT 1 --\u00a0\n, GET_LOCK('acp_attack', 0)", "U+00A0"),
    ("SELECT name FROM customers --\u00a0\n WHERE 1 = 0 UNION SELECT email FROM customers", "U+00A0"),
    ("SELECT 1\u2028, GET_LOCK('acp_attack', 0)", "U+2028"),
    ("SELECT 1 #\u0085 , GET_LOCK('acp_attack', 0)", "U+0085"),
    # files, named locks, waits
    ("SELECT LOAD_FILE('/etc/passwd')", "load_file()"),
    ("SELECT `load_file`('/etc/passwd')", "load_file()"),
    ("SELECT JSON_VALUE(LOAD_FILE('/etc/passwd'), '$') AS j", "load_file()"),
    ("SELECT GET_LOCK('acp_attack', 0)", "get_lock()"),
    ("SELECT id FROM customers WHERE GET_LOCK('acp_attack', 0) = 1", "get_lock()"),
    ("SELECT RELEASE_LOCK('acp_attack')", "release_lock()"),
    ("SELECT IS_USED_LOCK('acp_attack')", "is_used_lock()"),
    ("SELECT SLEEP(30)", "sleep()"),
    ("SELECT BENCHMARK(1000000000, MD5('x'))", "benchmark()"),
    ("SELECT MASTER_POS_WAIT('log.000001', 4, 1)", "master_pos_wait()"),
    ("SELECT NAME_CONST('a', 1)", "name_const()"),
    ("SELECT EXTRACTVALUE('<a>1</a>', '/a')", "extractvalue()"),
    ("SELECT UPDATEXML('<a/>', '/a', CONCAT('<b>', (SELECT email FROM customers LIMIT 1), '</b>'))", "updatexml()"),
    ("SELECT sys_exec('id')", "sys_exec()"),
    ("SELECT NEXTVAL(invoice_numbers)", "nextval()"),
    ("SELECT LASTVAL(invoice_numbers)", "lastval()"),
    ("SELECT LAST_INSERT_ID(42)", "last_insert_id()"),
    ("SELECT {db}.acp_double(21)", "acp_double()"),
    ("SELECT acp_double(21)", "acp_double()"),
    # session state
    ("SELECT @acp := (SELECT email FROM customers LIMIT 1)", "Assigning a variable"),
]


@pytest.mark.parametrize("root", [False, True], ids=["reader", "root"])
async def test_mariadb_refuses_every_function_off_the_allow_list_and_none_took_effect(
    root: bool, mysql_database: Any, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    db = mysql_database
    _create_double(db)
    before = db.state()
    cases = [(sql.replace("{db}", db.name), named) for sql, named in MARIADB_ATTACKS]
    meta = db.meta(root=root, config={"hidden": HIDDEN_EMAIL})
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        failures, text = _split(await _attack(host, db.name, meta, cases))
        lock_free = db.scalar("SELECT IS_FREE_LOCK('acp_attack')")  # while the pooled session is open
    assert failures == [], failures
    assert lock_free == 1
    assert db.state() == before
    emails = [row["email"] for row in db.query("SELECT email FROM customers WHERE email IS NOT NULL")]
    assert emails and not [e for e in emails if e in text]
    assert PASSWD_MARK not in text


def _create_double(db: Any) -> None:
    admin = mysql_server.admin_connect(db.name)
    try:
        with admin.cursor() as cursor:
            cursor.execute("CREATE FUNCTION IF NOT EXISTS acp_double(x INT) RETURNS INT DETERMINISTIC RETURN x * 2")
            cursor.execute(f"GRANT EXECUTE ON FUNCTION {mysql_server.quote(db.name)}.acp_double TO {db.account}")
    finally:
        admin.close()


async def test_mariadb_allowed_functions_runs_the_operator_s_stored_function(
    mysql_database: Any, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    db = mysql_database
    _create_double(db)
    meta = db.meta(config={"allowed_functions": json.dumps(["acp_double"])})
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        response = await host.call("execute_sql", {"resource_id": db.name, "sql": "SELECT acp_double(21) AS d"}, meta)
    assert response.rows() == [{"d": 42}]


# What sqlglot's MySQL dialect wrote in forms MariaDB 10.11 lacks or reads differently: through the
# connector (regenerated by dialect_mariadb), each must answer exactly what the raw text answers.
MARIADB_SAME_ANSWER = [
    "SELECT id, name FROM customers WHERE name REGEXP 'Customer 0[1-3]' AND email RLIKE '^c0' ORDER BY id",
    "SELECT COUNT(*) AS n FROM orders WHERE note NOT REGEXP 'number 1'",
    "SELECT id, CAST(MEDIAN(amount) OVER (PARTITION BY customer_id) AS CHAR) AS m FROM orders ORDER BY id LIMIT 8",
    "SELECT customer_id, GROUP_CONCAT(DISTINCT status ORDER BY status DESC SEPARATOR '; ' LIMIT 2) AS s "
    "FROM orders GROUP BY customer_id ORDER BY customer_id",
    "SELECT GROUP_CONCAT(id ORDER BY id LIMIT 1, 3) AS g, GROUP_CONCAT(id ORDER BY id DESC LIMIT 2) AS h FROM orders",
    "SELECT JSON_VALUE(meta, '$.n') AS n, JSON_UNQUOTE(JSON_EXTRACT(meta, '$.tags[0]')) AS t FROM orders "
    "ORDER BY id LIMIT 3",
    "SELECT REGEXP_REPLACE(note, '[0-9]+', '#') AS r, REGEXP_SUBSTR(note, '[0-9]+') AS s, "
    "REGEXP_INSTR(note, 'longer') AS i FROM orders ORDER BY id LIMIT 3",
    "SELECT status, COUNT(*) AS n FROM orders GROUP BY status WITH ROLLUP",
    "SELECT DATE_FORMAT(order_date, '%Y-%m %W %j %e %c') AS f, CAST(order_date + INTERVAL 1 MONTH AS CHAR) AS a, "
    "CAST(DATE_SUB(order_date, INTERVAL 2 DAY) AS CHAR) AS b, CAST(TIMESTAMPADD(WEEK, 1, order_date) AS CHAR) AS c "
    "FROM orders ORDER BY id LIMIT 3",
    "SELECT 'it\\'s' AS a, 'back\\\\slash' AS b, 'tab\\there' AS c, \"dq\" AS d, 'x''y' AS e, '50\\%' AS f",
    "SELECT TO_DAYS(order_date) AS d, CHR(65) AS c, CAST(LOG10(1000) AS CHAR) AS l, CAST(LOG2(8) AS CHAR) AS m "
    "FROM orders ORDER BY id LIMIT 2",
    "SELECT UTC_DATE() = DATE(UTC_TIMESTAMP()) AS same",
    "SELECT COUNT(*), MAX(id), count( DISTINCT status ) FROM orders",
    "SELECT CONCAT_WS('-', name, country) AS c, SUBSTRING_INDEX(email, '@', 1) AS u, IFNULL(NULL, 'x') AS i "
    "FROM customers ORDER BY id LIMIT 3",
]


async def test_mariadb_runs_what_the_raw_text_would_answer(
    mysql_database: Any, in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    db = mysql_database
    assert db.mariadb  # premise: the generator is for MariaDB
    differences = []
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        for sql in MARIADB_SAME_ANSWER:
            response = await host.call("execute_sql", {"resource_id": db.name, "sql": sql}, db.meta())
            direct = [{k: _plain(v) for k, v in row.items()} for row in db.query(sql)]
            if response.is_error or response.rows() != direct:
                differences.append((sql, response.error or response.rows()[:3], direct[:3]))
    assert differences == []


def _plain(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


# =====================================================================================================
# DuckDB and SQLite
# =====================================================================================================
CANARY = f"acp-canary-{secrets.token_hex(6)}"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    secret = tmp_path / "secret.csv"
    secret.write_text(f"word\n{CANARY}\n")
    sqlite_path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(sqlite_path)
    conn.executescript(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT);"
        "INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com'), (2, 'Linus', 'linus@example.com');"
    )
    conn.commit()
    conn.close()
    duck_path = tmp_path / "shop.duckdb"
    duck = duckdb.connect(str(duck_path))
    duck.execute("CREATE TABLE customers (id INTEGER, name VARCHAR, email VARCHAR)")
    duck.execute("INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com'), (2, 'Linus', 'linus@example.com')")
    duck.execute("CREATE SEQUENCE invoice_numbers START 1000")
    duck.close()
    return {"secret": secret, "sqlite": sqlite_path, "duckdb": duck_path, "written": tmp_path / "written.txt"}


DUCKDB_ATTACKS = [
    ("SELECT * FROM read_csv('{secret}')", "read_csv()"),
    ("SELECT * FROM read_csv_auto('{secret}')", "read_csv_auto()"),
    ("SELECT content FROM read_text('{secret}')", "read_text()"),
    ("SELECT * FROM read_blob('{secret}')", "read_blob()"),
    ("SELECT * FROM glob('{folder}/*')", "glob()"),
    ("SELECT * FROM sniff_csv('{secret}')", "sniff_csv()"),
    ("SELECT * FROM query('SELECT email FROM customers')", "query()"),
    ("SELECT * FROM query_table('customers')", "query_table()"),
    (
        "SELECT json_execute_serialized_sql(json_serialize_sql('SELECT email FROM customers'))",
        "json_execute_serialized_sql()",
    ),
    ("SELECT getenv('HOME')", "getenv()"),
    ("SELECT current_setting('home_directory')", "current_setting()"),
    ("SELECT * FROM duckdb_settings()", "duckdb_settings()"),
    ("SELECT * FROM pragma_table_info('customers')", "pragma_table_info()"),
    ("SELECT * FROM duckdb_tables()", "duckdb_tables()"),
    ("SELECT nextval('invoice_numbers')", "nextval()"),
    ("SELECT setseed(0.5)", "setseed()"),
    ("SELECT sleep_ms(30000)", "sleep_ms()"),
    ("SELECT pg_sleep(30)", "pg_sleep()"),
    ("SELECT * FROM histogram('customers', id)", "histogram()"),
    ("SELECT name FROM customers --\u00a0\n UNION ALL SELECT email FROM customers", "U+00A0"),
]
SQLITE_ATTACKS = [
    ("SELECT load_extension('/tmp/evil.so')", "load_extension()"),
    ("SELECT readfile('{secret}')", "readfile()"),
    ("SELECT writefile('{written}', 'x')", "writefile()"),
    ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer()"),
    ("SELECT zeroblob(1000000000)", "zeroblob()"),
    ("SELECT * FROM pragma_table_info('customers')", "pragma_table_info()"),
    ("SELECT name FROM customers WHERE 1 /*\u200b*/ OR readfile('{secret}') IS NOT NULL", "U+200B"),
]


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
async def test_file_engines_refuse_every_function_off_the_allow_list_and_none_took_effect(
    kind: str, files: dict[str, Path], in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    attacks = DUCKDB_ATTACKS if kind == "duckdb" else SQLITE_ATTACKS
    values = {"secret": files["secret"], "folder": files["secret"].parent, "written": files["written"]}
    cases = [(sql.format(**values), named) for sql, named in attacks]
    meta = {
        "credentials": {"type": kind, "path": str(files[kind])},
        "autocontext_delivered": True,
        "config": {"hidden": HIDDEN_EMAIL},
    }
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        failures, text = _split(await _attack(host, files[kind].stem, meta, cases))
    assert failures == [], failures
    assert CANARY not in text and "example.com" not in text
    assert not files["written"].exists()
    if kind == "duckdb":
        with duckdb.connect(str(files["duckdb"]), read_only=True) as duck:
            last = duck.execute("SELECT last_value FROM duckdb_sequences()").fetchall()
        assert last == [(None,)]  # the sequence never advanced


async def test_the_engine_runs_the_regenerated_text_not_the_raw_one(
    files: dict[str, Path], in_process: Any, runtime_dirs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    stream: Callable[..., Any] = engine_sqlite.Database.stream

    def recorded(self: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        ran.append(sql)
        return stream(self, sql, *args, **kwargs)

    monkeypatch.setattr(engine_sqlite.Database, "stream", recorded)
    meta = {"credentials": {"type": "sqlite", "path": str(files["sqlite"])}, "autocontext_delivered": True}
    sql = "/* report */ select id, upper(name) -- the name\n from customers where id = 1 /* done */"
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        response = await host.call("execute_sql", {"resource_id": "shop", "sql": sql}, meta)
    assert ran == ['SELECT id, UPPER(name) AS "upper(name)" FROM customers WHERE id = 1']
    assert response.rows() == [{"id": 1, "upper(name)": "ADA"}]  # the column keeps the name SQLite gives it


# =====================================================================================================
# What analysts write passes: every family of the allow-lists, in each engine's own dialect
# =====================================================================================================
REALISTIC = {
    "postgres": [
        "SELECT date_trunc('month', o.order_date) AS month, count(*) AS n, sum(o.amount) AS total, avg(o.amount), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY o.amount) AS median, mode() WITHIN GROUP (ORDER BY o.status), "
        "stddev_samp(o.amount), count(*) FILTER (WHERE o.status = 'paid') AS paid, string_agg(DISTINCT o.status, ',') "
        "FROM orders o GROUP BY ROLLUP (1) ORDER BY 1",
        "SELECT id, lag(amount) OVER w, lead(amount, 2) OVER w, row_number() OVER w, rank() OVER w, "
        "ntile(4) OVER w, first_value(amount) OVER w, sum(amount) OVER (PARTITION BY customer_id ORDER BY id "
        "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM orders WINDOW w AS (ORDER BY order_date, id)",
        "SELECT extract(year FROM order_date), date_part('dow', order_date), to_char(order_date, 'YYYY-MM'), "
        "age(now(), order_date), order_date + interval '7 days', make_date(2025, 1, 1), "
        "to_date('2025-01-02', 'YYYY-MM-DD'), date_bin('1 hour', now(), timestamp '2025-01-01') FROM orders",
        "SELECT meta->>'channel', meta->'nested'->0, jsonb_array_length(meta->'nested'), jsonb_typeof(meta), "
        "jsonb_build_object('a', id), jsonb_path_query_first(meta, '$.n'), to_jsonb(status), meta ? 'n', "
        "meta @> '{\"n\": 1}' FROM orders",
        "SELECT regexp_replace(status, '[aeiou]', '', 'g'), regexp_match(status, '(p)aid'), split_part(status, 'a', 1), "
        "status ~* '^p', upper(left(status, 2)), lpad(id::text, 6, '0'), initcap(status), length(status), "
        "concat_ws('-', status, id), coalesce(amount, 0), nullif(status, ''), greatest(amount, 10), round(amount, 1), "
        "abs(amount), ceil(amount), floor(amount), power(2, 3), sqrt(4), ln(2), log(100), mod(id, 3), "
        "width_bucket(amount, 0, 500, 10), md5(status), cast(amount AS integer), amount::text "
        "FROM orders",
        "SELECT s.n, t.x FROM generate_series(1, 5) AS s(n), unnest(ARRAY[1, 2]) WITH ORDINALITY AS t(x, i), "
        "jsonb_each('{\"a\": 1}'::jsonb) AS j WHERE array_position(ARRAY[1, 2], s.n) IS NOT NULL "
        "AND cardinality(ARRAY[1]) = 1 AND to_tsvector('simple', 'a b') @@ plainto_tsquery('simple', 'a')",
        "SELECT pg_size_pretty(pg_total_relation_size('orders')), current_database(), pg_typeof(1), "
        "gen_random_uuid() IS NOT NULL, random() < 2",
    ],
    "duckdb": [
        "SELECT date_trunc('month', d) AS m, count(*), sum(x), median(x), quantile_cont(x, 0.9), mode(g), "
        "arg_max(g, x), approx_count_distinct(g), string_agg(g, ','), list(g), count_if(x > 1), "
        "histogram_exact(x, [1, 2]), avg(x) FILTER (WHERE x > 0) FROM t GROUP BY ALL ORDER BY ALL",
        "SELECT * FROM t QUALIFY row_number() OVER (PARTITION BY g ORDER BY d DESC) = 1",
        "SELECT strftime(d, '%Y-%m'), strptime('2025-01-02', '%Y-%m-%d'), date_diff('day', d, today()), "
        "d + INTERVAL 1 MONTH, last_day(d), dayname(d), epoch(ts), make_date(2025, 1, 1), "
        "time_bucket(INTERVAL '1 hour', ts) FROM t",
        "SELECT j->>'$.a', json_extract_string(j, '$.b'), json_array_length(j, '$.c'), json_keys(j), "
        "to_json(g), j::JSON->'x' FROM t",
        "SELECT list_transform(l, x -> x * 2), list_filter(l, lambda x: x > 1), list_sum(l), len(l), l[1], "
        "list_distinct(l), flatten([l, l]), struct_pack(a := 1).a, map_keys(MAP {'k': 1}), unnest(l) FROM t",
        "SELECT regexp_extract(g, '(\\d+)', 1), regexp_matches(g, '^a'), regexp_replace(g, 'a', 'b', 'g'), "
        "g SIMILAR TO 'a.*', split_part(g, '-', 1), levenshtein(g, 'abc'), upper(g), lpad(g, 5, '0'), "
        "starts_with(g, 'a'), coalesce(g, ''), round(x, 2), try_cast(g AS INTEGER), x::DECIMAL(10, 2) FROM t",
        "SELECT * FROM range(3) AS r(i), generate_series(1, 3) AS s(j), unnest([1, 2]) AS u(k)",
        "SELECT COLUMNS('x|g'), * EXCLUDE (l) FROM t",
        "SELECT * FROM (PIVOT t ON g USING sum(x) GROUP BY d)",
    ],
    "sqlite": [
        "SELECT strftime('%Y-%m', d) AS m, count(*), sum(x), total(x), avg(x), min(x), max(x), "
        "group_concat(g, ','), count(DISTINCT g) FROM t GROUP BY 1 ORDER BY 1",
        "SELECT row_number() OVER w, lag(x) OVER w, sum(x) OVER (ORDER BY d ROWS 2 PRECEDING), ntile(4) OVER w, "
        "percent_rank() OVER w FROM t WINDOW w AS (PARTITION BY g ORDER BY d)",
        "SELECT date(d, '+1 month'), datetime(ts, 'start of day'), julianday(d) - julianday('2025-01-01'), "
        "unixepoch(ts), time(ts) FROM t",
        "SELECT json_extract(j, '$.a'), j ->> '$.b', json_array_length(j, '$.c'), json_type(j), json_valid(j), "
        "json_group_array(g), json_object('a', x) FROM t",
        "SELECT substr(g, 1, 2), instr(g, 'a'), replace(g, 'a', 'b'), trim(g), upper(g), length(g), "
        "printf('%05d', x), coalesce(g, ''), ifnull(x, 0), iif(x > 1, 'big', 'small'), nullif(g, ''), "
        "abs(x), round(x, 2), cast(x AS INTEGER), typeof(x), hex(g), g GLOB 'a*', g LIKE 'a%' FROM t",
        "SELECT key, value FROM t, json_each(t.j)",
    ],
    "mysql": [
        "SELECT DATE_FORMAT(d, '%Y-%m') AS m, COUNT(*), SUM(x), AVG(x), STDDEV(x), GROUP_CONCAT(DISTINCT g "
        "ORDER BY g SEPARATOR ', ') FROM t GROUP BY m WITH ROLLUP",
        "SELECT ROW_NUMBER() OVER w, LAG(x) OVER w, NTILE(4) OVER w, MEDIAN(x) OVER (PARTITION BY g), "
        "PERCENT_RANK() OVER w FROM t WINDOW w AS (PARTITION BY g ORDER BY d)",
        "SELECT DATEDIFF(d, '2025-01-01'), TIMESTAMPDIFF(DAY, d, ts), d + INTERVAL 1 MONTH, "
        "DATE_SUB(d, INTERVAL 7 DAY), LAST_DAY(d), YEAR(d), WEEK(d, 3), STR_TO_DATE('02/01/2025', '%d/%m/%Y'), "
        "UNIX_TIMESTAMP(ts), FROM_UNIXTIME(0), CURDATE() FROM t",
        "SELECT JSON_EXTRACT(j, '$.a'), JSON_UNQUOTE(JSON_EXTRACT(j, '$.b')), JSON_VALUE(j, '$.c'), "
        "JSON_LENGTH(j), JSON_CONTAINS(j, '1', '$.a'), JSON_OBJECT('k', x), JSON_ARRAYAGG(x) FROM t GROUP BY g",
        "SELECT g REGEXP '^a', REGEXP_REPLACE(g, 'a', 'b'), REGEXP_SUBSTR(g, '[0-9]+'), CONCAT_WS('-', g, x), "
        "SUBSTRING_INDEX(g, '.', 1), LPAD(x, 5, '0'), IF(x > 1, 'big', 'small'), IFNULL(x, 0), COALESCE(g, ''), "
        "ROUND(x, 2), TRUNCATE(x, 1), CAST(x AS SIGNED), CONVERT(x, CHAR), FORMAT(x, 2), LOCATE('a', g) FROM t",
    ],
}


@pytest.mark.parametrize("kind", list(REALISTIC))
def test_realistic_analytics_sql_passes_the_allow_list(kind: str) -> None:
    from connectors.databases.engine import engine_for

    engine = engine_for({"type": kind})
    for sql in REALISTIC[kind]:
        engine.check_sql(sql)  # raises, naming the function, on a false refusal


async def test_sqlite_table_functions_on_the_list_run_under_the_authorizer(
    files: dict[str, Path], in_process: Any, runtime_dirs: dict[str, str]
) -> None:
    """json_each declares its virtual table on first use, which SQLite's authorizer saw as a write."""
    meta = {"credentials": {"type": "sqlite", "path": str(files["sqlite"])}, "autocontext_delivered": True}
    sql = (
        "SELECT e.value AS v, t.key AS k FROM json_each('[1, 2]') AS e, json_tree('{\"a\": 1}') AS t WHERE t.key = 'a'"
    )
    async with in_process(CONNECTOR, env=runtime_dirs) as host:
        response = await host.call("execute_sql", {"resource_id": "shop", "sql": sql}, meta)
    assert response.rows() == [{"v": 1, "k": "a"}, {"v": 2, "k": "a"}], response.error


def test_duckdb_sql_is_written_for_the_installed_version() -> None:
    """sqlglot writes DuckDB by version (a ~ 'x' matched the whole text before 2.0, anywhere since)."""
    from connectors.databases.engine import engine_for

    engine = engine_for({"type": "duckdb"})
    assert engine.dialect == f"duckdb, version={'.'.join(duckdb.__version__.split('.')[:3])}"
    text = engine.check_sql("SELECT 'abc' ~ 'b' AS m").sql()
    with duckdb.connect() as conn:
        assert conn.execute(text).fetchall() == conn.execute("SELECT 'abc' ~ 'b' AS m").fetchall()
