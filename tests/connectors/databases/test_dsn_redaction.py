"""No piece of a password in a connection string reaches the model, the host or the logs, whatever
the form of the string: URL DSNs (``postgres://``, ``postgresql://``, ``mysql://``, ``mariadb://``)
with the password written raw or percent-encoded, key=value DSNs, a missing scheme, a bad port,
an unencoded ``@`` in the user or the password, options the drivers reject.

The passwords hold every character a DSN parser may stop at (``@ : / ? # %`` and a space) and
non-ASCII letters, between random runs of letters; the check is that no run of four characters of
the password appears anywhere in the answer (text, ``_meta``), the server's log lines (at debug
level) or its cache files. In process, against the real servers, as an unknown login and as the
superuser/root.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from loader import load_file

from connectors.databases import CONNECTOR
from connectors.databases.dsn import split_url, userinfo_secrets
from connectors.databases.engine_postgres import ENGINE as POSTGRES
from shared import CredentialsInvalid

pg_server = load_file(Path(__file__).with_name("pg_server.py"), "acp_tests_databases_pg_server")
mysql_server = load_file(Path(__file__).with_name("mysql_server.py"), "acp_tests_databases_mysql_server")
pg_database = pg_server.pg_database  # the module-scoped fixtures
mysql_database = mysql_server.mysql_database

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real servers

# Runs of capitals: no message, id or JSON key holds four of them by chance, and no digits, which a
# duration, pid or port in an answer could match by chance from one run to the next.
_RUN = string.ascii_uppercase


# Which characters a password holds besides its runs: one parser stops at "@", another at "/" or "?",
# libpq refuses a stray "%" or space before connecting, so each set reaches a different code path.
SEPARATORS = {
    "at": "@@",
    "at-colon-slash": "@:/@",
    "query-fragment": "?#@",
    "percent-space-unicode": "% é€@",
    "all": "@:/?#% é€",
}


def generated_password(seed: int, separators: str) -> str:
    rng = random.Random(seed)

    def run() -> str:
        return "".join(rng.choice(_RUN) for _ in range(6))

    marks = list(separators)
    rng.shuffle(marks)
    return run() + "".join(mark + run() for mark in marks)


def leaked_runs(password: str, text: str) -> list[str]:
    """Every run of four characters of ``password`` that appears in ``text``."""
    return sorted({password[i : i + 4] for i in range(len(password) - 3) if password[i : i + 4] in text})


def pg_dsns(user: str, password: str, database: str) -> list[str]:
    encoded = quote(password, safe="")
    escaped = password.replace("\\", "\\\\").replace("'", "\\'")
    where = f"127.0.0.1:{pg_server.PORT}/{database}"
    return [
        f"postgresql://{user}:{password}@{where}",  # raw: every separator unencoded
        f"postgres://{user}:{password}@{where}",
        f"postgresql://{user}:{encoded}@{where}",  # well formed
        f"postgresql://{user}:{encoded}@{where}?sslmode=disable",
        f"host=127.0.0.1 port={pg_server.PORT} user={user} password='{escaped}' dbname={database}",  # well formed
        f"host=127.0.0.1 port={pg_server.PORT} user={user} password={password} dbname={database}",  # unquoted
        f"{user}:{password}@{where}",  # no scheme
        f"{user}:{encoded}@{where}",
        f"postgresql://{user}:{encoded}@127.0.0.1:99999/{database}",  # bad ports
        f"postgresql://{user}:{password}@127.0.0.1:5x/{database}",
        f"postgresql://x@{user}:{password}@{where}",  # an unencoded "@" in the user
        f"postgresql://x@{user}:{encoded}@{where}",
        f"postgresql://:{password}@{where}",  # no user
        f"postgresql://{user}:{encoded}@{where}?sslmode=bogus",  # options libpq rejects
        f"postgresql://{user}:{encoded}@{where}?no_such_option=1",
        f"postgresql://{user}:{encoded}@{where}%zz",
        f"mysql://{user}:{password}@{where}",  # another engine's scheme
    ]


def mysql_dsns(user: str, password: str, database: str) -> list[str]:
    encoded = quote(password, safe="")
    where = f"127.0.0.1:{mysql_server.PORT}/{database}"
    return [
        f"mysql://{user}:{password}@{where}",  # raw: every separator unencoded
        f"mariadb://{user}:{password}@{where}",
        f"mysql://{user}:{encoded}@{where}",  # well formed
        f"mariadb://{user}:{encoded}@{where}?ssl_mode=disabled",
        f"mysql+pymysql://{user}:{encoded}@{where}",
        f"{user}:{password}@{where}",  # no scheme
        f"host=127.0.0.1 user={user} password='{password}' database={database}",  # not a form MySQL takes
        f"mysql://{user}:{encoded}@127.0.0.1:99999/{database}",  # bad ports
        f"mysql://{user}:{password}@127.0.0.1:5x/{database}",
        f"mysql://x@{user}:{password}@{where}",  # an unencoded "@" in the user
        f"mysql://x@{user}:{encoded}@{where}",
        f"mysql://:{password}@{where}",  # no user
        f"mysql://{user}:{encoded}@{where}?ssl_mode=bogus",  # options the connector rejects
        f"mysql://{user}:{encoded}@{where}?charset={encoded}",
        f"postgresql://{user}:{password}@{where}",  # another engine's scheme
    ]


def _cache_text(runtime_dirs: dict[str, str]) -> str:
    root = Path(runtime_dirs["ACP_CACHE_DIR"])
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("separators", list(SEPARATORS))
@pytest.mark.parametrize("engine", ["postgres", "mysql"])
@pytest.mark.parametrize("login", ["unknown", "superuser"])
async def test_no_piece_of_a_dsn_password_reaches_any_answer_or_log(
    engine: str,
    login: str,
    separators: str,
    request: pytest.FixtureRequest,
    in_process: Any,
    runtime_dirs: dict[str, str],
) -> None:
    seed = list(SEPARATORS).index(separators)
    password = generated_password(seed, SEPARATORS[separators])
    if engine == "postgres":
        db = request.getfixturevalue("pg_database")
        user = pg_server.SUPERUSER if login == "superuser" else f"nobody_{seed}"
        dsns, kind = pg_dsns(user, password, db.name), "postgres_dsn"
    else:
        db = request.getfixturevalue("mysql_database")
        user = mysql_server.ROOT if login == "superuser" else f"nobody_{seed}"
        dsns, kind = mysql_dsns(user, password, db.name), "mysql_dsn"
    answers: list[Any] = []
    env = {**runtime_dirs, "ACP_LOG_LEVEL": "debug"}
    async with in_process(CONNECTOR, env=env) as host:
        for dsn in dsns:
            meta = {"credentials": {"type": kind, "dsn": dsn}, "autocontext_delivered": True}
            for tool, arguments in (
                ("execute_sql", {"resource_id": db.name, "sql": "SELECT 1 AS one"}),
                ("autocontext", {}),
            ):
                answers.append((dsn, tool, await host.call(tool, arguments, meta)))
        logs = host.stderr()
    for dsn, tool, answer in answers:
        assert not leaked_runs(password, json.dumps(answer.raw, ensure_ascii=False)), (dsn, tool, answer.raw)
        assert not leaked_runs(password, json.dumps(answer.raw)), (dsn, tool)  # nor \\u-escaped
    assert not leaked_runs(password, logs)
    assert not leaked_runs(password, _cache_text(runtime_dirs))
    # Premises: the unknown login is refused by the server, and the malformed strings by the connector.
    errors = {answer.error_name for _, tool, answer in answers if tool == "execute_sql" and answer.is_error}
    assert "ACP_CREDENTIALS_INVALID" in errors
    assert sum(answer.is_error for _, _, answer in answers) >= len(dsns)


# -- the reading itself, without a server -----------------------------------------------------------


def test_the_userinfo_ends_at_the_last_at_sign() -> None:
    parts = split_url("postgresql://us@er:pa@ss/w?#@db.example.com:5432/shop?sslmode=require")
    assert parts is not None
    assert (parts.scheme, parts.userinfo, parts.rest) == (
        "postgresql",
        "us@er:pa@ss/w?#",
        "db.example.com:5432/shop?sslmode=require",
    )
    assert (parts.user, parts.password) == ("us@er", "pa@ss/w?#")
    assert split_url("host=db user=u password=x") is None


def test_every_piece_of_the_userinfo_past_the_user_is_a_secret() -> None:
    found = set(userinfo_secrets("mysql://reader:p%40ss:w@rd@db/shop"))
    # As written and decoded, whole, and cut at every ":" and "@" that a parser may have stopped at.
    assert {"reader:p%40ss:w@rd", "p%40ss:w@rd", "p@ss:w@rd", "reader:p@ss:w@rd", "p@ss", "ss:w@rd", "w@rd"} <= found
    assert "reader" not in found and "db/shop" not in "".join(found)
    assert userinfo_secrets("mysql://reader@db/shop") == []  # no password, nothing to hide


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://db.example.com/shop?user=reader&password=p%40ss%3Aw", "postgresql://reader@db.example.com/shop?password=x",
     "postgresql://reader:p%40ss%3Aw%2F@db.example.com:5433/shop", "host=db.example.com user=reader password='p@ss w' dbname=shop"],
)  # fmt: skip
def test_well_formed_postgres_dsns_are_read_as_libpq_reads_them(dsn: str) -> None:
    principal = POSTGRES.identify({"type": "postgres_dsn", "dsn": dsn})
    assert principal.identity.startswith("postgres:reader@db.example.com:")


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://reader:pa@ss@db.example.com/shop", "postgresql://reader:pa/ss@db.example.com/shop",
     "postgresql://re@ader:pass@db.example.com/shop", "postgresql://reader:pa?ss@db.example.com/shop?sslmode=a@b"],
)  # fmt: skip
def test_postgres_dsns_libpq_would_misread_are_refused_in_fixed_words(dsn: str) -> None:
    with pytest.raises(CredentialsInvalid) as refused:
        POSTGRES.identify({"type": "postgres_dsn", "dsn": dsn})
    assert "percent-encoded" in refused.value.message
    assert "ss@" not in refused.value.message and "db.example.com" not in refused.value.message
