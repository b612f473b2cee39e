"""A real MariaDB/MySQL database for the databases connector tests, and direct reads of it.

The fixture creates a uniquely named database (``acp_test_<hex>``) and a scratch database
(``acp_test_<hex>_scratch``) on the server at 127.0.0.1:3306, with a least-privilege login
user (unique name and password) granted only SELECT on the test tables (not on ``payroll``),
plus SELECT, INSERT and CREATE on the scratch database; both databases and the user are
dropped at the end. Expectations are computed here with direct ``pymysql`` queries as
``root``, never with the connector's own code.

Without a server the tests skip with the reason; with ``ACP_REQUIRE_SERVICES=1`` (CI) they fail.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest

HOST = "127.0.0.1"
PORT = 3306
ROOT = "root"
ROOT_PASSWORD = os.environ.get("ACP_TEST_MYSQL_ROOT_PASSWORD", "")
PREFIX = "acp_test_"
CUSTOMERS = 30
ORDERS = 400
STATUSES = ("new", "paid", "shipped", "cancelled")
CHANNELS = ("web", "shop", "phone")
BIG = 2**63 - 1
UBIG = 2**64 - 1


def admin_connect(database: str | None = None, autocommit: bool = True, **kwargs: Any) -> pymysql.Connection[Any]:
    return pymysql.connect(
        host=HOST, port=PORT, user=ROOT, password=ROOT_PASSWORD, database=database, autocommit=autocommit,
        connect_timeout=5, charset="utf8mb4", **kwargs,
    )  # fmt: skip


def require_server() -> None:
    """Skip (or fail under ACP_REQUIRE_SERVICES=1) when MariaDB/MySQL does not answer."""
    try:
        admin_connect().close()
    except pymysql.err.MySQLError as exc:
        reason = f"MariaDB/MySQL does not answer on {HOST}:{PORT} as {ROOT}: {str(exc).strip()[:200]}"
        if os.environ.get("ACP_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{reason} (ACP_REQUIRE_SERVICES=1: the database tests must run)")
        pytest.skip(reason)


def quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


TABLES_SQL = (
    """CREATE TABLE customers (
        id INT PRIMARY KEY AUTO_INCREMENT,
        name VARCHAR(80) NOT NULL,
        country CHAR(2) NOT NULL COMMENT 'ISO country code',
        email VARCHAR(120),
        created_at DATETIME(6) NOT NULL
    ) ENGINE = InnoDB COMMENT = 'People who bought at least once'""",
    """CREATE TABLE orders (
        id BIGINT PRIMARY KEY,
        customer_id INT NOT NULL,
        order_date DATE NOT NULL,
        amount DECIMAL(12, 2) COMMENT 'Order total in EUR',
        status VARCHAR(16) NOT NULL,
        channel ENUM('web', 'shop', 'phone'),
        note TEXT,
        meta JSON,
        paid_at DATETIME NULL,
        CONSTRAINT orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
    ) ENGINE = InnoDB""",
    """CREATE TABLE order_items (
        order_id BIGINT NOT NULL,
        line INT NOT NULL,
        sku VARCHAR(20) NOT NULL,
        qty INT NOT NULL,
        PRIMARY KEY (order_id, line),
        CONSTRAINT items_order FOREIGN KEY (order_id) REFERENCES orders (id)
    ) ENGINE = InnoDB""",
    """CREATE TABLE typed_values (
        id INT PRIMARY KEY,
        n_big BIGINT, n_ubig BIGINT UNSIGNED, n_dec DECIMAL(40, 12), d DATE, dt DATETIME(6), j JSON,
        bin VARBINARY(16), flag TINYINT(1), bits BIT(8), f DOUBLE, t TIME, y YEAR, e ENUM('x', 'y'), s TEXT
    ) ENGINE = InnoDB""",
    "CREATE TABLE notes (id INT PRIMARY KEY, body TEXT) ENGINE = MyISAM",
    "CREATE TABLE payroll (employee VARCHAR(40) PRIMARY KEY, salary DECIMAL(10, 2)) ENGINE = InnoDB",
    "CREATE VIEW big_orders AS SELECT id, customer_id, amount FROM orders WHERE amount > 100",
)


def _fill(cursor: Any) -> None:
    base = dt.datetime(2025, 1, 1, 8, 0)
    cursor.executemany(
        "INSERT INTO customers (id, name, country, email, created_at) VALUES (%s, %s, %s, %s, %s)",
        [(i, f"Customer {i:02d}", ("ES", "FR", "PT", "DE")[i % 4], f"c{i:02d}@example.com",
          base + dt.timedelta(days=3 * i, hours=i, microseconds=i * 1001))
         for i in range(1, CUSTOMERS + 1)],
    )  # fmt: skip
    cursor.executemany(
        "INSERT INTO orders (id, customer_id, order_date, amount, status, channel, note, meta, paid_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [
            (i, 1 + i % CUSTOMERS, dt.date(2025, 1, 1) + dt.timedelta(days=i % 365),
             Decimal(5 + (i * 37) % 400) + Decimal(i % 100) / 100, STATUSES[(i * 7) % 4 if i % 5 else 1],
             CHANNELS[i % 3], f"Order number {i} with a longer free-text note to make rows wide enough",
             f'{{"n": {i}, "tags": ["t{i % 5}", null]}}',
             None if i % 4 == 0 else dt.datetime(2025, 1, 2, 9, 30) + dt.timedelta(days=i % 365, minutes=i))
            for i in range(1, ORDERS + 1)
        ],
    )  # fmt: skip
    cursor.executemany(
        "INSERT INTO order_items (order_id, line, sku, qty) VALUES (%s, %s, %s, %s)",
        [(1 + i % ORDERS, 1 + i // ORDERS, f"SKU-{i % 17:03d}", 1 + i % 4) for i in range(600)],
    )
    cursor.execute(
        "INSERT INTO typed_values VALUES "
        "(1, 9223372036854775807, 18446744073709551615, 12345678901234567890.123456789012, '2025-02-28', "
        "'2025-03-30 02:30:00.123456', '{\"a\": [1, 2, {\"b\": null}], \"s\": \"x\"}', X'00FF10', 1, b'10100101', "
        "0.1, '-838:59:59', 2024, 'x', 'plain'), "
        "(2, -9223372036854775808, 0, -0.000000000001, '1999-12-31', '1999-12-31 23:59:59', '[1, \"two\"]', X'', "
        "0, b'0', -1.5e300, '12:00:00', 1999, 'y', NULL), "
        "(3, 9007199254740993, 9007199254740993, 1.5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    cursor.executemany("INSERT INTO notes (id, body) VALUES (%s, %s)", [(i, f"note {i}") for i in range(1, 6)])
    cursor.execute("INSERT INTO payroll VALUES ('Ada', 91000), ('Linus', 87000)")


@dataclass
class MysqlDatabase:
    """The test databases, the least-privilege user, and direct reads as root."""

    name: str
    scratch: str
    user: str
    password: str
    mariadb: bool
    file_dir: Path  # where the server may write files (secure_file_priv), for the write corpus

    # -- credentials -------------------------------------------------------------------------
    def credentials(self, *, root: bool = False, database: str | None = None, **extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "mysql", "host": HOST, "port": PORT, "database": database or self.name}
        if root:
            out.update(user=ROOT, password=ROOT_PASSWORD)
        else:
            out.update(user=self.user, password=self.password)
        return {**out, **extra}

    def dsn(self, password: str | None = None, database: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"mysql://{self.user}:{secret}@{HOST}:{PORT}/{database or self.name}?ssl_mode=preferred"

    def meta(self, *, root: bool = False, config: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        """``_meta.acp`` for a call; the autocontext counts as delivered."""
        out: dict[str, Any] = {"credentials": self.credentials(root=root), "autocontext_delivered": True}
        if config:
            out["config"] = config
        return {**out, **extra}

    # -- direct reads ---------------------------------------------------------------------------
    def connect(self, database: str | None = None) -> pymysql.Connection[Any]:
        return admin_connect(database or self.name)

    def query(self, text: str, params: Any = None, database: str | None = None) -> list[dict[str, Any]]:
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                cur.execute(text, params)
                names = [d[0] for d in cur.description or ()]
                return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        finally:
            conn.close()

    def rows(self, text: str, params: Any = None, database: str | None = None) -> list[tuple[Any, ...]]:
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                cur.execute(text, params)
                return [tuple(r) for r in cur.fetchall()]
        finally:
            conn.close()

    def scalar(self, text: str, params: Any = None) -> Any:
        rows = self.rows(text, params)
        return rows[0][0] if rows else None

    def base_tables(self, database: str | None = None) -> list[str]:
        return [
            r[0]
            for r in self.rows(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                "AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
                (database or self.name,),
            )
        ]

    def checksums(self, database: str | None = None) -> dict[str, tuple[Any, str]]:
        """Per base table: CHECKSUM TABLE and a sha256 of every row in primary-key order."""
        database = database or self.name
        out = {}
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                for table in self.base_tables(database):
                    cur.execute(f"CHECKSUM TABLE {quote(table)} EXTENDED")
                    checksum = cur.fetchone()[1]
                    cur.execute(f"SELECT * FROM {quote(table)} ORDER BY 1, 2")
                    digest = hashlib.sha256()
                    for row in cur.fetchall():
                        digest.update(repr(row).encode())
                    out[table] = (checksum, digest.hexdigest())
        finally:
            conn.close()
        return out

    def state(self) -> dict[str, Any]:
        """Everything a write could change: rows, table definitions, routines, triggers, events,
        databases and users (of this run), the user's grants and a few global settings."""
        out: dict[str, Any] = {
            "checksums": self.checksums(),
            "scratch_checksums": self.checksums(self.scratch),
        }
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                definitions = {}
                cur.execute(
                    "SELECT TABLE_NAME, TABLE_TYPE, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                    "ORDER BY TABLE_NAME",
                    (self.name,),
                )
                objects = cur.fetchall()
                for table, _kind, _engine in objects:
                    cur.execute(f"SHOW CREATE TABLE {quote(table)}")
                    definitions[table] = cur.fetchone()[1]
                out["objects"] = objects
                out["definitions"] = definitions
                for key, sql in {
                    "routines": "SELECT ROUTINE_SCHEMA, ROUTINE_NAME FROM information_schema.ROUTINES "
                    "WHERE ROUTINE_SCHEMA IN (%(db)s, %(scratch)s) ORDER BY 1, 2",
                    "triggers": "SELECT TRIGGER_SCHEMA, TRIGGER_NAME FROM information_schema.TRIGGERS "
                    "WHERE TRIGGER_SCHEMA IN (%(db)s, %(scratch)s) ORDER BY 1, 2",
                    "events": "SELECT EVENT_SCHEMA, EVENT_NAME FROM information_schema.EVENTS ORDER BY 1, 2",
                    "indexes": "SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
                    "WHERE TABLE_SCHEMA = %(db)s ORDER BY 1, 2, 3",
                    # Other runs' objects (this suite's, the conformance suite's) are left out; anything
                    # named after this run's database or user, or any other new name, is in.
                    "databases": "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA "
                    "WHERE (SCHEMA_NAME NOT LIKE 'acp\\_test\\_%%' AND SCHEMA_NAME NOT LIKE 'acp\\_conf\\_%%') "
                    "OR SCHEMA_NAME LIKE CONCAT(%(db)s, '%%') ORDER BY 1",
                    "users": "SELECT User, Host FROM mysql.user WHERE (User NOT LIKE 'acp\\_test\\_%%' "
                    "AND User NOT LIKE 'acp\\_reader\\_%%') OR User LIKE CONCAT(%(user)s, '%%') ORDER BY 1, 2",
                    "globals": "SELECT @@GLOBAL.max_connections, @@GLOBAL.read_only, @@GLOBAL.general_log, "
                    "@@GLOBAL.sql_mode, @@GLOBAL.event_scheduler",
                }.items():
                    cur.execute(sql, {"db": self.name, "scratch": self.scratch, "user": self.user})
                    out[key] = cur.fetchall()
                cur.execute(f"SHOW GRANTS FOR {self.account}")
                out["grants"] = sorted(r[0] for r in cur.fetchall())
                if self.mariadb:
                    cur.execute("SELECT next_not_cached_value FROM invoice_numbers")
                    out["sequence"] = cur.fetchall()
        finally:
            conn.close()
        return out

    @property
    def account(self) -> str:
        return f"'{self.user}'@'%'"

    def server_sees_file(self, path: Path) -> bool:
        """Whether the server process can read ``path`` (LOAD_FILE as root), or we can see it."""
        return path.exists() or self.scalar("SELECT LOAD_FILE(%s) IS NOT NULL", (str(path),)) == 1

    def processes(self, marker: str) -> list[dict[str, Any]]:
        """Running statements (other than ours) whose text holds ``marker``."""
        return [
            row
            for row in self.query("SELECT ID, COMMAND, TIME, INFO FROM information_schema.PROCESSLIST")
            if marker in str(row["INFO"] or "") and "PROCESSLIST" not in str(row["INFO"])
        ]


def _file_dir(cur: Any) -> Path:
    """Where a FILE-privileged user may write: secure_file_priv's folder, or /tmp when it is unset."""
    cur.execute("SELECT @@GLOBAL.secure_file_priv")
    value = cur.fetchone()[0]
    if value:  # MySQL's default (/var/lib/mysql-files/) or a configured folder
        return Path(str(value))
    return Path("/tmp")  # NULL (MariaDB) or '': no restriction, so the shared /tmp is the target


def create_database() -> MysqlDatabase:
    token = secrets.token_hex(5)
    name = f"{PREFIX}{token}"
    admin = admin_connect()
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT VERSION()")
            mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
            db = MysqlDatabase(
                name=name, scratch=f"{name}_scratch", user=f"{PREFIX}r_{token}",
                password=f"pw-{secrets.token_hex(12)}", mariadb=mariadb, file_dir=_file_dir(cur),
            )  # fmt: skip
    finally:
        admin.close()
    try:
        _build(db)
    except BaseException:
        drop_database(db)
        raise
    return db


def _build(db: MysqlDatabase) -> None:
    admin = admin_connect()
    try:
        with admin.cursor() as cur:
            for database in (db.name, db.scratch):
                cur.execute(f"CREATE DATABASE {quote(database)} CHARACTER SET utf8mb4")
            cur.execute(f"USE {quote(db.name)}")
            cur.execute("SET SESSION sql_mode = ''")  # a zero date below, whatever the server's default
            for statement in TABLES_SQL:
                cur.execute(statement)
            if db.mariadb:
                cur.execute("CREATE SEQUENCE invoice_numbers START WITH 1000")
            _fill(cur)
            cur.execute(f"CREATE TABLE {quote(db.scratch)}.events (id INT, label VARCHAR(40), happened DATE)")
            cur.execute(f"INSERT INTO {quote(db.scratch)}.events VALUES (1, 'seed', '2025-01-01')")
            cur.execute(f"CREATE USER {db.account} IDENTIFIED BY '{db.password}'")  # hex: nothing to escape
            for table in ("customers", "orders", "order_items", "typed_values", "notes", "big_orders"):
                cur.execute(f"GRANT SELECT ON {quote(db.name)}.{quote(table)} TO {db.account}")
            # payroll: no grant at all (a table the user cannot read)
            cur.execute(f"GRANT SELECT, INSERT, CREATE ON {quote(db.scratch)}.* TO {db.account}")
            cur.execute(f"ANALYZE TABLE {quote(db.name)}.customers, {quote(db.name)}.orders")
            cur.fetchall()
    finally:
        admin.close()


def drop_database(db: MysqlDatabase) -> None:
    admin = admin_connect()
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", (db.user,))
            for (thread,) in cur.fetchall():
                with contextlib.suppress(pymysql.err.MySQLError):  # it ended on its own meanwhile
                    cur.execute(f"KILL {int(thread)}")
            for database in (db.name, db.scratch):
                cur.execute(f"DROP DATABASE IF EXISTS {quote(database)}")
            cur.execute(f"DROP USER IF EXISTS {db.account}")
    finally:
        admin.close()


@pytest.fixture(scope="module")
def mysql_database() -> Iterator[MysqlDatabase]:
    """Fresh databases and a least-privilege user for one test module; all dropped at the end."""
    require_server()
    db = create_database()
    try:
        yield db
    finally:
        drop_database(db)
