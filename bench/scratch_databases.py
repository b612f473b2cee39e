"""Throwaway databases for the benchmarks, on the local servers as the superuser / root.

PostgreSQL (127.0.0.1:5432, ``postgres``, trust) and MariaDB (127.0.0.1:3306, ``root``, no password)
must be running. Each function creates an empty database with a unique name and returns it with the
function that drops it: a benchmark fills it, and drops it at the end, even after a failure.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
MY = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}


def create_postgres(prefix: str) -> tuple[str, Callable[[], None]]:
    """A new PostgreSQL database ``<prefix><hex>``, and its drop (which ends the sessions still in it)."""
    import psycopg
    from psycopg import sql

    name = f"{prefix}{secrets.token_hex(4)}"

    def run(statement: sql.Composed) -> None:
        with psycopg.connect(**PG, dbname="postgres", autocommit=True, connect_timeout=5) as admin:
            admin.execute(statement)

    run(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name, lambda: run(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def create_mariadb(prefix: str) -> tuple[str, Callable[[], None]]:
    """A new MariaDB database ``<prefix><hex>`` (utf8mb4), and its drop."""
    import pymysql

    name = f"{prefix}{secrets.token_hex(4)}"

    def run(statement: str) -> None:
        conn = pymysql.connect(**MY, autocommit=True, connect_timeout=5)
        try:
            with conn.cursor() as cursor:
                cursor.execute(statement)
        finally:
            conn.close()

    run(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")  # a hex name: nothing to quote
    return name, lambda: run(f"DROP DATABASE IF EXISTS `{name}`")
