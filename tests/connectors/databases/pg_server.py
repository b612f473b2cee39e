"""A real PostgreSQL database for the databases connector tests, and direct reads of it.

The fixture creates a uniquely named database (``acp_test_<hex>``) on the server at
127.0.0.1:5432 with a least-privilege LOGIN role (unique name and password) that may only
connect, use the schemas and read the tables (plus create and insert in a ``scratch``
schema), and drops both at the end. Expectations are computed here with direct ``psycopg``
queries as the ``postgres`` superuser, never with the connector's own code.

Without a server the tests skip with the reason; with ``ACP_REQUIRE_SERVICES=1`` (CI) they fail.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from psycopg import sql

HOST = "127.0.0.1"
PORT = 5432
SUPERUSER = "postgres"
PREFIX = "acp_test_"
SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")
CUSTOMERS = 30
ORDERS = 400
STATUSES = ("new", "paid", "shipped", "cancelled")
BIG = 2**63 - 1
HUGE_ESTIMATE = 50_000_000  # what the catalog claims page_views holds (it holds a few thousand rows)


def admin_connect(dbname: str = "postgres", **kwargs: Any) -> psycopg.Connection[Any]:
    return psycopg.connect(
        host=HOST, port=PORT, user=SUPERUSER, dbname=dbname, autocommit=True, connect_timeout=5, **kwargs
    )


def require_server() -> None:
    """Skip (or fail under ACP_REQUIRE_SERVICES=1) when PostgreSQL does not answer."""
    try:
        admin_connect().close()
    except psycopg.OperationalError as exc:
        reason = f"PostgreSQL does not answer on {HOST}:{PORT} as {SUPERUSER}: {str(exc).strip()[:200]}"
        if os.environ.get("ACP_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{reason} (ACP_REQUIRE_SERVICES=1: the database tests must run)")
        pytest.skip(reason)


SCHEMA_SQL = """
CREATE TABLE public.customers (
    id serial PRIMARY KEY,
    name text NOT NULL,
    email text,
    created_at timestamptz NOT NULL
);
COMMENT ON TABLE public.customers IS 'People who bought at least once';
COMMENT ON COLUMN public.customers.email IS 'Contact address (personal data)';

CREATE TABLE public.orders (
    id bigserial PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES public.customers (id),
    order_date date NOT NULL,
    amount numeric(12, 2),
    status text NOT NULL,
    meta jsonb,
    tags text[],
    big bigint
);
COMMENT ON COLUMN public.orders.amount IS 'Order total in EUR';

CREATE VIEW public.big_orders AS SELECT id, customer_id, amount FROM public.orders WHERE amount > 100;
CREATE MATERIALIZED VIEW public.order_totals AS
    SELECT customer_id, sum(amount) AS total FROM public.orders GROUP BY customer_id;
CREATE SEQUENCE public.invoice_numbers START 1000;

CREATE TABLE public.page_views (id integer, path text, viewed_on date);
CREATE TABLE public.payroll (employee text, salary numeric);

CREATE TABLE public.typed_values (
    n_big bigint, n_num numeric(40, 12), d date, ts timestamptz, tsn timestamp, j jsonb, arr text[],
    b bytea, flag boolean, i integer, t text
);

CREATE FUNCTION public.purge_orders_fn() RETURNS integer LANGUAGE sql AS $$ DELETE FROM public.orders RETURNING 1 $$;
CREATE PROCEDURE public.purge_orders() LANGUAGE sql AS $$ DELETE FROM public.orders $$;

CREATE SCHEMA sales;
CREATE TABLE sales.regions (code text PRIMARY KEY, name text NOT NULL);
CREATE TABLE sales.targets (
    region_code text NOT NULL REFERENCES sales.regions (code),
    month date NOT NULL,
    target numeric(14, 2),
    account_manager integer REFERENCES public.customers (id),
    PRIMARY KEY (region_code, month)
);
COMMENT ON TABLE sales.targets IS 'Monthly sales targets per region';

CREATE SCHEMA scratch;
CREATE TABLE scratch.events (id integer, label text, happened date, value numeric);
"""


def _fill(conn: psycopg.Connection[Any]) -> None:
    base = dt.datetime(2025, 1, 1, 8, 0, tzinfo=dt.UTC)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO public.customers (name, email, created_at) VALUES (%s, %s, %s)",
            [(f"Customer {i:02d}", f"c{i:02d}@example.com", base + dt.timedelta(days=3 * i, hours=i))
             for i in range(1, CUSTOMERS + 1)],
        )  # fmt: skip
        cur.executemany(
            "INSERT INTO public.orders (customer_id, order_date, amount, status, meta, tags, big) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (1 + i % CUSTOMERS, dt.date(2025, 1, 1) + dt.timedelta(days=i % 365),
                 Decimal(5 + (i * 37) % 400) + Decimal(i % 100) / 100, STATUSES[(i * 7) % 4 if i % 5 else 1],
                 psycopg.types.json.Jsonb({"channel": ("web", "shop", "phone")[i % 3], "n": i, "nested": [i, None]}),
                 [f"t{i % 23}", f"u{i % 29}"], BIG - i)
                for i in range(ORDERS)
            ],
        )  # fmt: skip
        cur.execute(
            "INSERT INTO public.orders (customer_id, order_date, amount, status) VALUES (2, '2025-12-31', NULL, 'new')"
        )
        cur.executemany(
            "INSERT INTO public.page_views (id, path, viewed_on) VALUES (%s, %s, %s)",
            [(i, f"/p/{i % 7}", dt.date(2024, 6, 1) + dt.timedelta(days=i % 90)) for i in range(3000)],
        )
        cur.execute("INSERT INTO public.payroll VALUES ('Ada', 91000), ('Linus', 87000)")
        cur.execute(
            "INSERT INTO sales.regions VALUES ('N', 'North'), ('S', 'South'), ('E', 'East'), ('W', 'West'), ('C', 'Centre')"
        )
        cur.executemany(
            "INSERT INTO sales.targets VALUES (%s, %s, %s, %s)",
            [(code, dt.date(2025, m, 1), Decimal(1000 * m) + Decimal("0.50"), 1 + m % CUSTOMERS)
             for code in ("N", "S", "E", "W", "C") for m in range(1, 13)],
        )  # fmt: skip
        cur.execute("INSERT INTO scratch.events VALUES (1, 'seed', '2025-01-01', 1.5)")
        cur.execute(
            """INSERT INTO public.typed_values VALUES
            (9223372036854775807, 12345678901234567890.123456789012, '2025-02-28', '2025-03-30 01:30:00.25+02',
             '2025-03-30 02:30:00.123456', '{"a": [1, 2, {"b": null}], "s": "x"}', '{x,"y z",NULL}', '\\x00ff10',
             true, 7, 'plain'),
            (-9223372036854775808, -0.000000000001, '1999-12-31', '1999-12-31 23:59:59-08', '1999-12-31 23:59:59',
             '[1, "two"]', '{}', '', false, -1, NULL),
            (9007199254740993, 1.5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"""
        )
        cur.execute("SELECT nextval('public.invoice_numbers')")
        cur.execute("REFRESH MATERIALIZED VIEW public.order_totals")
        cur.execute("SELECT lo_from_bytea(0, 'acp large object')")


@dataclass
class PgDatabase:
    """The test database, its least-privilege role, and direct reads as the superuser."""

    name: str
    role: str
    password: str
    large_object: int
    closed: str  # a second database the role may not connect to

    # -- credentials -------------------------------------------------------------------------
    def credentials(self, *, superuser: bool = False, database: str | None = None, **extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "postgres", "host": HOST, "port": PORT, "database": database or self.name}
        if superuser:
            out["user"] = SUPERUSER
        else:
            out.update(user=self.role, password=self.password)
        return {**out, **extra}

    def dsn_credentials(self, password: str | None = None) -> dict[str, Any]:
        secret = self.password if password is None else password
        return {"type": "postgres_dsn", "dsn": f"postgresql://{self.role}:{secret}@{HOST}:{PORT}/{self.name}"}

    def meta(self, *, superuser: bool = False, config: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        """``_meta.acp`` for a call; the autocontext counts as delivered."""
        out: dict[str, Any] = {"credentials": self.credentials(superuser=superuser), "autocontext_delivered": True}
        if config:
            out["config"] = config
        return {**out, **extra}

    # -- direct reads ---------------------------------------------------------------------------
    def connect(self, *, as_role: bool = False) -> psycopg.Connection[Any]:
        if as_role:
            return psycopg.connect(
                host=HOST, port=PORT, user=self.role, password=self.password, dbname=self.name,
                autocommit=True, connect_timeout=5,
            )  # fmt: skip
        return admin_connect(self.name)

    def query(self, text: str | sql.Composable, params: Any = (), *, as_role: bool = False) -> list[dict[str, Any]]:
        with self.connect(as_role=as_role) as conn, conn.cursor() as cur:
            cur.execute(text, params)
            names = [d.name for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def rows(self, text: str | sql.Composable, params: Any = ()) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            return [tuple(r) for r in conn.execute(text, params).fetchall()]

    def scalar(self, text: str | sql.Composable, params: Any = ()) -> Any:
        with self.connect() as conn:
            row = conn.execute(text, params).fetchone()
            return None if row is None else row[0]

    def relations(self, kinds: str = "rvmpf") -> list[tuple[str, str, str]]:
        """(schema, name, relkind) of every user relation of these kinds."""
        return self.rows(
            "SELECT n.nspname, c.relname, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind::text = ANY(%s) AND n.nspname <> ALL(%s) AND n.nspname !~ '^pg_temp|^pg_toast_temp' "
            "ORDER BY 1, 2",
            (list(kinds), list(SYSTEM_SCHEMAS)),
        )

    def state(self) -> dict[str, Any]:
        """Everything a write could change: rows of every table, catalog objects, ACLs, comments,
        sequences, roles, large objects, advisory locks and the server's file settings."""
        out: dict[str, Any] = {}
        with self.connect() as conn:
            checksums = {}
            for schema, name, _kind in self.relations("rmp"):
                # The rows' content, and their physical versions (ctid, xmin): an UPDATE that rewrites
                # a row with the same values still shows.
                row = conn.execute(
                    sql.SQL(
                        "SELECT count(*), md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')), "
                        "md5(coalesce(string_agg(t.ctid::text || ':' || t.xmin::text, ',' ORDER BY t.ctid), '')) "
                        "FROM {} t"
                    ).format(sql.Identifier(schema, name))
                ).fetchone()
                checksums[f"{schema}.{name}"] = tuple(row) if row else None
            out["checksums"] = checksums
            out["relations"] = conn.execute(
                "SELECT n.nspname, c.relname, c.relkind::text, c.relfilenode::bigint, c.relacl::text, "
                "obj_description(c.oid, 'pg_class'), "
                "(SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod) || ':' "
                "|| coalesce(col_description(c.oid, a.attnum), ''), ',' ORDER BY a.attnum) FROM pg_attribute a "
                "WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
            ).fetchall()
            out["maintenance"] = conn.execute(
                "SELECT schemaname, relname, last_vacuum, last_analyze, vacuum_count, analyze_count "
                "FROM pg_stat_user_tables ORDER BY 1, 2"
            ).fetchall()
            out["schemas"] = conn.execute("SELECT nspname, nspacl::text FROM pg_namespace ORDER BY 1").fetchall()
            out["functions"] = conn.execute(
                "SELECT n.nspname, p.proname, p.proacl::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
            ).fetchall()
            out["sequences"] = conn.execute(
                "SELECT schemaname, sequencename, last_value, start_value FROM pg_sequences ORDER BY 1, 2"
            ).fetchall()
            out["extensions"] = conn.execute("SELECT extname, extversion FROM pg_extension ORDER BY 1").fetchall()
            out["large_objects"] = conn.execute(
                "SELECT oid::bigint, lomacl::text FROM pg_largeobject_metadata ORDER BY 1"
            ).fetchall()
            out["large_object_data"] = conn.execute(
                "SELECT md5(coalesce(string_agg(data::text, '' ORDER BY loid, pageno), '')) FROM pg_largeobject"
            ).fetchone()
            out["rules_triggers_policies"] = conn.execute(
                "SELECT 'rule', rulename FROM pg_rules WHERE schemaname <> 'pg_catalog' UNION ALL "
                "SELECT 'trigger', tgname FROM pg_trigger WHERE NOT tgisinternal UNION ALL "
                "SELECT 'policy', policyname FROM pg_policies ORDER BY 1, 2"
            ).fetchall()
            out["advisory_locks"] = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()
            out["database"] = conn.execute(
                "SELECT datname, datacl::text, datallowconn, datconnlimit FROM pg_database WHERE datname = current_database()"
            ).fetchone()
            out["role_settings"] = conn.execute(
                "SELECT setdatabase, setrole, setconfig::text FROM pg_db_role_setting WHERE setrole = 0 "
                "OR setrole IN (SELECT oid FROM pg_roles WHERE rolname IN (%s, %s)) "
                "OR setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY 1, 2",
                (self.role, SUPERUSER),
            ).fetchall()
            out["file_settings"] = conn.execute(
                "SELECT sourcefile, name, setting FROM pg_file_settings ORDER BY 1, 2, 3"
            ).fetchall()
            # Cluster-wide objects: other sessions on the server may create their own, so only ours,
            # the superuser and anything the corpus tries to create (named evil…) are compared.
            mine = "rolname IN (%s, %s) OR rolname LIKE 'evil%%'"
            out["roles"] = conn.execute(
                "SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, "
                f"rolbypassrls, rolconnlimit, rolvaliduntil FROM pg_roles WHERE {mine} ORDER BY 1",
                (self.role, SUPERUSER),
            ).fetchall()
            out["memberships"] = conn.execute(
                "SELECT r.rolname, m.rolname FROM pg_auth_members am JOIN pg_roles r ON r.oid = am.roleid "
                "JOIN pg_roles m ON m.oid = am.member WHERE m.rolname IN (%s, %s) OR r.rolname IN (%s, %s) ORDER BY 1, 2",
                (self.role, SUPERUSER, self.role, SUPERUSER),
            ).fetchall()
            out["databases"] = conn.execute(
                "SELECT datname, datacl::text FROM pg_database WHERE datname IN (%s, %s) OR datname LIKE 'evil%%' "
                "ORDER BY 1",
                (self.name, self.closed),
            ).fetchall()
        return out

    def server_file_exists(self, path: str) -> bool:
        """Whether the server process sees ``path`` (its own /tmp may differ from ours)."""
        return self.scalar("SELECT (pg_stat_file(%s, true)).size IS NOT NULL", (path,)) is True

    def server_read(self, path: str) -> str:
        return str(self.scalar("SELECT pg_read_file(%s)", (path,)))

    def busy(self, wait_event: str | None = None) -> list[dict[str, Any]]:
        """pg_stat_activity rows of other sessions running a statement in this database.

        A server-side cursor shows as ``FETCH …`` there, so ``wait_event`` (``PgSleep``) picks a sleep.
        """
        return self.query(
            "SELECT pid, state, query, wait_event, application_name FROM pg_stat_activity WHERE datname = %s "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state = 'active' AND (%s::text IS NULL OR wait_event = %s)",
            (self.name, wait_event, wait_event),
        )


def _grants(cur: psycopg.Cursor[Any], role: str) -> None:
    who = sql.Identifier(role)
    for statement in (
        "REVOKE ALL ON SCHEMA public FROM PUBLIC",
        "GRANT USAGE ON SCHEMA public, sales, scratch TO {who}",
        "GRANT SELECT ON public.customers, public.orders, public.big_orders, public.order_totals, public.page_views, "
        "public.typed_values, sales.regions, sales.targets TO {who}",
        "GRANT SELECT ON SEQUENCE public.invoice_numbers TO {who}",
        "GRANT CREATE ON SCHEMA scratch TO {who}",
        "GRANT SELECT, INSERT ON scratch.events TO {who}",
        # payroll: no grant at all (a table the role cannot read)
    ):
        cur.execute(sql.SQL(statement).format(who=who))


def create_database() -> PgDatabase:
    token = secrets.token_hex(5)
    name = f"{PREFIX}{token}"
    db = PgDatabase(
        name=name, role=f"{PREFIX}reader_{token}", password=f"pw-{secrets.token_hex(12)}", large_object=0,
        closed=f"{name}_closed",
    )  # fmt: skip
    try:
        _build(db)
    except BaseException:
        drop_database(db)
        raise
    return db


def _build(db: PgDatabase) -> None:
    role = sql.Identifier(db.role)
    with admin_connect() as admin, admin.cursor() as cur:
        cur.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(db.password)))
        # The role's sessions are not in UTC: timestamps must still come out in UTC.
        cur.execute(sql.SQL("ALTER ROLE {} SET TimeZone = 'Asia/Kolkata'").format(role))
        for database in (db.name, db.closed):
            cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            cur.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database)))
        cur.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(db.name), role))
    with admin_connect(db.name) as conn:
        conn.execute(SCHEMA_SQL)  # several statements: the simple protocol, on purpose
        _fill(conn)
        with conn.cursor() as cur:
            _grants(cur, db.role)
        conn.execute("ANALYZE")
        # Stale statistics (a row added after ANALYZE) tell exact counts from catalog estimates apart,
        # and page_views looks huge to the catalog, as a table whose count must not run.
        conn.execute("INSERT INTO public.customers (name, email, created_at) VALUES ('Late', NULL, now())")
        conn.execute("UPDATE pg_class SET reltuples = %s WHERE oid = 'public.page_views'::regclass", (HUGE_ESTIMATE,))
        db.large_object = int(conn.execute("SELECT min(oid) FROM pg_largeobject_metadata").fetchone()[0])  # type: ignore[index]


def drop_database(db: PgDatabase) -> None:
    with admin_connect() as admin:
        for database in (db.name, db.closed):
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,))
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (db.role,))
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(db.role)))


@contextlib.contextmanager
def empty_database(label: str) -> Iterator[str]:
    """A new empty database (its name) for a test that builds its own objects as the superuser; dropped after."""
    require_server()
    name = f"{PREFIX}{label}_{secrets.token_hex(4)}"
    with admin_connect() as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with admin_connect() as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def pg_database() -> Iterator[PgDatabase]:
    """A fresh database and least-privilege role for one test module; both dropped at the end."""
    require_server()
    db = create_database()
    try:
        yield db
    finally:
        drop_database(db)
