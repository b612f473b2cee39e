"""A small TPC-H-shaped dataset, the same on every engine, and the analytics query corpus that reads it.

The data is generated in Python with a fixed seed (:func:`generate`), so every engine holds the
same rows and every run the same values: the eight TPC-H tables at a tiny scale (1,200 orders,
about 4,800 line items), with dates, decimals and free-text comments, plus ``orders.o_meta``, a
JSON document per order (channel, tags, device, coupon, rating) for the JSON queries, and one
unrelated table, ``staff (id, name, ssn)``, whose ``ssn`` the corpus's sources hide (``HIDDEN``).
The clerks of ``orders.o_clerk`` are the staff (``Clerk#000000007`` is ``staff.id`` 7), so some
queries join them.

The queries live next to this file, one file per engine in that engine's own dialect
(``sqlite.sql``, ``duckdb.sql``, ``postgres.sql``, ``mariadb.sql``), each query under a
``-- name: qNN_what_it_answers`` line (:func:`queries`).

:func:`canonical` and :func:`differences` compare two results the way the tests and
``bench/sql_roundtrip.py`` need: names, then rows, in order only where the query's top-level
``ORDER BY`` orders them (:func:`ordered`), floats and decimals with a relative tolerance.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 20261201
ENGINES = ("sqlite", "duckdb", "postgres", "mariadb")
# What every corpus source hides: the corpus's queries never read it, so every query must pass.
HIDDEN = ["staff\\.ssn"]

REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
NATIONS = (
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
    ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2),
    ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3),
    ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
)  # fmt: skip
COLORS = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
]
TYPE_SIZES = ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
TYPE_FINISHES = ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
TYPE_METALS = ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")
CONTAINER_SIZES = ("SM", "LG", "MED", "JUMBO", "WRAP")
CONTAINER_KINDS = ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM")
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
INSTRUCTIONS = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
SHIP_MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
WORDS = [
    "furiously",
    "carefully",
    "blithely",
    "quickly",
    "slyly",
    "final",
    "regular",
    "express",
    "pending",
    "ironic",
    "bold",
    "even",
    "silent",
    "unusual",
    "special",
    "requests",
    "deposits",
    "accounts",
    "packages",
    "instructions",
    "theodolites",
    "foxes",
    "ideas",
    "dependencies",
    "excuses",
    "platelets",
    "asymptotes",
    "courts",
    "dolphins",
    "sleep",
    "wake",
    "haggle",
    "nag",
    "use",
    "boost",
    "affix",
    "detect",
    "integrate",
    "cajole",
    "among",
    "above",
    "according",
    "across",
    "after",
    "along",
]
CHANNELS = ("web", "mobile", "phone", "store")
TAGS = ("gift", "rush", "b2b", "promo", "fragile")
SYSTEMS = ("ios", "android", "windows", "macos", "linux")
STAFF_NAMES = (
    "Ada Byron", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth",
    "Frances Allen", "John Backus", "Niklaus Wirth", "Margaret Hamilton", "Ken Thompson", "Dennis Ritchie",
    "Radia Perlman", "Tony Hoare", "Leslie Lamport", "Shafi Goldwasser", "Robin Milner", "Jim Gray",
    "Edgar Codd", "Michael Stonebraker", "Juris Hartmanis", "Butler Lampson", "Karen Jones", "Peter Naur",
    "Kristen Nygaard",
)  # fmt: skip

SUPPLIERS, CUSTOMERS, PARTS, ORDERS = 40, 300, 200, 1200
START, END = dt.date(1992, 1, 1), dt.date(1998, 8, 2)
CURRENT = dt.date(1995, 6, 17)  # TPC-H's "current date": what shipped after it is still open
CENTS = Decimal("0.01")

# Column types by kind; each engine's DDL maps a kind to its own type.
KINDS = {
    "sqlite": {"int": "INTEGER", "money": "DECIMAL(15,2)", "text": "TEXT", "flag": "TEXT", "date": "DATE",
               "json": "TEXT"},
    "duckdb": {"int": "INTEGER", "money": "DECIMAL(15,2)", "text": "VARCHAR", "flag": "VARCHAR(1)", "date": "DATE",
               "json": "JSON"},
    "postgres": {"int": "integer", "money": "numeric(15,2)", "text": "varchar(152)", "flag": "char(1)",
                 "date": "date", "json": "jsonb"},
    "mariadb": {"int": "INT", "money": "DECIMAL(15,2)", "text": "VARCHAR(152)", "flag": "CHAR(1)", "date": "DATE",
                "json": "JSON"},
}  # fmt: skip
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "region": (("r_regionkey", "int"), ("r_name", "text"), ("r_comment", "text")),
    "nation": (("n_nationkey", "int"), ("n_name", "text"), ("n_regionkey", "int"), ("n_comment", "text")),
    "supplier": (
        ("s_suppkey", "int"), ("s_name", "text"), ("s_address", "text"), ("s_nationkey", "int"),
        ("s_phone", "text"), ("s_acctbal", "money"), ("s_comment", "text"),
    ),
    "customer": (
        ("c_custkey", "int"), ("c_name", "text"), ("c_address", "text"), ("c_nationkey", "int"),
        ("c_phone", "text"), ("c_acctbal", "money"), ("c_mktsegment", "text"), ("c_comment", "text"),
    ),
    "part": (
        ("p_partkey", "int"), ("p_name", "text"), ("p_mfgr", "text"), ("p_brand", "text"), ("p_type", "text"),
        ("p_size", "int"), ("p_container", "text"), ("p_retailprice", "money"), ("p_comment", "text"),
    ),
    "partsupp": (
        ("ps_partkey", "int"), ("ps_suppkey", "int"), ("ps_availqty", "int"), ("ps_supplycost", "money"),
        ("ps_comment", "text"),
    ),
    "orders": (
        ("o_orderkey", "int"), ("o_custkey", "int"), ("o_orderstatus", "flag"), ("o_totalprice", "money"),
        ("o_orderdate", "date"), ("o_orderpriority", "text"), ("o_clerk", "text"), ("o_shippriority", "int"),
        ("o_comment", "text"), ("o_meta", "json"),
    ),
    "lineitem": (
        ("l_orderkey", "int"), ("l_partkey", "int"), ("l_suppkey", "int"), ("l_linenumber", "int"),
        ("l_quantity", "money"), ("l_extendedprice", "money"), ("l_discount", "money"), ("l_tax", "money"),
        ("l_returnflag", "flag"), ("l_linestatus", "flag"), ("l_shipdate", "date"), ("l_commitdate", "date"),
        ("l_receiptdate", "date"), ("l_shipinstruct", "text"), ("l_shipmode", "text"), ("l_comment", "text"),
    ),
    "staff": (("id", "int"), ("name", "text"), ("ssn", "text")),
}  # fmt: skip
PRIMARY_KEYS = {
    "region": "r_regionkey", "nation": "n_nationkey", "supplier": "s_suppkey", "customer": "c_custkey",
    "part": "p_partkey", "partsupp": "ps_partkey, ps_suppkey", "orders": "o_orderkey",
    "lineitem": "l_orderkey, l_linenumber", "staff": "id",
}  # fmt: skip
INDEXES = {
    "lineitem_part_supp": ("lineitem", "l_partkey, l_suppkey"),
    "lineitem_ship": ("lineitem", "l_shipdate"),
    "orders_customer": ("orders", "o_custkey"),
    "orders_date": ("orders", "o_orderdate"),
    "partsupp_supplier": ("partsupp", "ps_suppkey"),
}


# -- the data -------------------------------------------------------------------------------------
def generate(seed: int = SEED) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, in TABLES' column order: the same for the same seed."""
    rng = random.Random(seed)

    def comment(low: int = 4, high: int = 10) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))

    def money(low: float, high: float) -> Decimal:
        return Decimal(rng.randint(round(low * 100), round(high * 100))) * CENTS

    def phone(nation: int) -> str:
        return f"{10 + nation}-{rng.randint(100, 999)}-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"

    def address() -> str:
        return f"{rng.randint(1, 999)} {rng.choice(COLORS).title()} {rng.choice(('St', 'Ave', 'Rd', 'Way'))}"

    data: dict[str, list[tuple[Any, ...]]] = {}
    data["region"] = [(key, name, comment()) for key, name in enumerate(REGIONS)]
    data["nation"] = [(key, name, region, comment()) for key, (name, region) in enumerate(NATIONS)]
    suppliers = []
    for key in range(1, SUPPLIERS + 1):
        nation = (key - 1) % len(NATIONS)
        note = comment()
        if key % 9 == 0:  # TPC-H Q16 skips suppliers with complaints
            note = f"{rng.choice(WORDS)} Customer {rng.choice(WORDS)} Complaints {comment(1, 3)}"
        suppliers.append((key, f"Supplier#{key:09d}", address(), nation, phone(nation), money(-999.99, 9999.99), note))
    data["supplier"] = suppliers
    customers = []
    for key in range(1, CUSTOMERS + 1):
        nation = rng.randrange(len(NATIONS))
        customers.append(
            (key, f"Customer#{key:09d}", address(), nation, phone(nation), money(-999.99, 9999.99),
             rng.choice(SEGMENTS), comment())
        )  # fmt: skip
    data["customer"] = customers
    parts, prices = [], {}
    for key in range(1, PARTS + 1):
        maker = rng.randint(1, 5)
        price = Decimal(90000 + (key // 10) % 20001 + 100 * (key % 1000)) * CENTS
        prices[key] = price
        parts.append(
            (key, " ".join(rng.sample(COLORS, 5)), f"Manufacturer#{maker}", f"Brand#{maker}{rng.randint(1, 5)}",
             f"{rng.choice(TYPE_SIZES)} {rng.choice(TYPE_FINISHES)} {rng.choice(TYPE_METALS)}", rng.randint(1, 50),
             f"{rng.choice(CONTAINER_SIZES)} {rng.choice(CONTAINER_KINDS)}", price, comment(2, 5))
        )  # fmt: skip
    data["part"] = parts
    partsupp, suppliers_of = [], {}
    for part in range(1, PARTS + 1):
        chosen = [(part + i * (SUPPLIERS // 4 + (part - 1) // SUPPLIERS)) % SUPPLIERS + 1 for i in range(4)]
        suppliers_of[part] = chosen
        for supplier in chosen:
            partsupp.append((part, supplier, rng.randint(1, 9999), money(1, 1000), comment(6, 14)))
    data["partsupp"] = partsupp
    orders, lineitems = [], []
    buyers = [c for c in range(1, CUSTOMERS + 1) if c % 3 != 0]  # TPC-H: a third of the customers never order
    for key in range(1, ORDERS + 1):
        ordered = START + dt.timedelta(days=rng.randint(0, (END - START).days - 151))
        total, statuses = Decimal(0), set()
        for line in range(1, rng.randint(1, 7) + 1):
            part = rng.randint(1, PARTS)
            quantity = Decimal(rng.randint(1, 50))
            price = quantity * prices[part]
            discount, tax = Decimal(rng.randint(0, 10)) * CENTS, Decimal(rng.randint(0, 8)) * CENTS
            shipped = ordered + dt.timedelta(days=rng.randint(1, 121))
            committed = ordered + dt.timedelta(days=rng.randint(30, 90))
            received = shipped + dt.timedelta(days=rng.randint(1, 30))
            status = "O" if shipped > CURRENT else "F"
            statuses.add(status)
            flag = rng.choice("RA") if received <= CURRENT else "N"
            total += (price * (1 + tax) * (1 - discount)).quantize(CENTS)
            lineitems.append(
                (key, part, rng.choice(suppliers_of[part]), line, quantity, price, discount, tax, flag, status,
                 shipped, committed, received, rng.choice(INSTRUCTIONS), rng.choice(SHIP_MODES), comment(3, 7))
            )  # fmt: skip
        note = comment()
        if key % 13 == 0:  # TPC-H Q13 leaves out orders with special requests
            note = f"{rng.choice(WORDS)} special {rng.choice(WORDS)} requests {comment(1, 3)}"
        meta: dict[str, Any] = {
            "channel": rng.choice(CHANNELS),
            "tags": rng.sample(TAGS, rng.randint(0, 3)),
            "device": {"os": rng.choice(SYSTEMS), "version": f"{rng.randint(8, 17)}.{rng.randint(0, 4)}"},
            "coupon": rng.choice((None, None, "SAVE10", "WELCOME", "SPRING")),
        }
        if rng.random() < 0.7:
            meta["rating"] = rng.randint(1, 5)
        status = "F" if statuses == {"F"} else "O" if statuses == {"O"} else "P"
        orders.append(
            (key, rng.choice(buyers), status, total, ordered, rng.choice(PRIORITIES),
             f"Clerk#{rng.randint(1, len(STAFF_NAMES)):09d}", 0, note, json.dumps(meta, separators=(",", ":")))
        )  # fmt: skip
    data["orders"] = orders
    data["lineitem"] = lineitems
    data["staff"] = [
        (key, name, f"{rng.randint(100, 899)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}")
        for key, name in enumerate(STAFF_NAMES, 1)
    ]
    return data


# -- loading it -----------------------------------------------------------------------------------
def ddl(engine: str) -> list[str]:
    """CREATE TABLE and CREATE INDEX statements for one engine."""
    types = KINDS[engine]
    out = []
    for table, columns in TABLES.items():
        body = ", ".join(f"{name} {types[kind]}" for name, kind in columns)
        out.append(f"CREATE TABLE {table} ({body}, PRIMARY KEY ({PRIMARY_KEYS[table]}))")
    out += [f"CREATE INDEX {name} ON {table} ({columns})" for name, (table, columns) in INDEXES.items()]
    return out


def _insert(table: str, marker: str) -> str:
    return f"INSERT INTO {table} VALUES ({', '.join([marker] * len(TABLES[table]))})"


def load_sqlite(path: Path, data: dict[str, list[tuple[Any, ...]]]) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        for statement in ddl("sqlite"):
            conn.execute(statement)
        for table, rows in data.items():
            # SQLite has no date or decimal type: ISO texts and floats, as an application stores them.
            conn.executemany(_insert(table, "?"), [tuple(_sqlite_value(v) for v in row) for row in rows])
        conn.commit()
        conn.execute("ANALYZE")
    finally:
        conn.close()


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def load_duckdb(path: Path, data: dict[str, list[tuple[Any, ...]]]) -> None:
    import csv
    import tempfile

    import duckdb

    conn = duckdb.connect(str(path))
    try:
        for statement in ddl("duckdb"):
            conn.execute(statement)
        # DuckDB binds executemany row by row and reads long VALUES lists slowly (0.4-1.7 s for the line
        # items); its CSV reader takes 70 ms for every table. The data holds no NULL.
        with tempfile.TemporaryDirectory() as folder:
            for table, rows in data.items():
                file = Path(folder) / f"{table}.csv"
                with file.open("w", newline="", encoding="utf-8") as handle:
                    csv.writer(handle).writerows(rows)
                conn.execute(f"COPY {table} FROM '{file}' (HEADER false)")
        conn.execute("CHECKPOINT")
    finally:
        conn.close()


def load_postgres(conn: Any, data: dict[str, list[tuple[Any, ...]]], schema: str) -> None:
    """Create ``schema`` and the tables in it through a superuser psycopg connection (autocommit)."""
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"SET search_path TO {schema}")
    for statement in ddl("postgres"):
        conn.execute(statement)
    with conn.cursor() as cursor:
        for table, rows in data.items():
            with cursor.copy(f"COPY {table} FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
    conn.execute("ANALYZE")
    conn.execute("RESET search_path")


def load_mariadb(conn: Any, data: dict[str, list[tuple[Any, ...]]]) -> None:
    """Create the tables in the current database of a root PyMySQL connection (autocommit)."""
    with conn.cursor() as cursor:
        for statement in ddl("mariadb"):
            cursor.execute(statement)
        for table, rows in data.items():
            cursor.executemany(_insert(table, "%s"), rows)  # PyMySQL sends one multi-row INSERT
        cursor.execute(f"ANALYZE TABLE {', '.join(TABLES)}")
        cursor.fetchall()


# -- the queries ------------------------------------------------------------------------------------
_NAME = re.compile(r"^-- name: (q\d\d_[a-z0-9_]+)\s*$", re.MULTILINE)


def queries(engine: str) -> dict[str, str]:
    """An engine's corpus: name → SQL, in file order (the header comment lines are not part of the SQL)."""
    text = (HERE / f"{engine}.sql").read_text("utf-8")
    parts = _NAME.split(text)
    out: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in out:
            raise ValueError(f"{engine}.sql: {name} appears twice")
        sql = "\n".join(line for line in body.strip().splitlines() if not line.startswith("-- ")).strip()
        out[name] = sql.rstrip(";").rstrip()
    return out


_QUOTED = re.compile(r"'(?:[^']|'')*'")


def ordered(sql: str) -> bool:
    """Whether the query's top level (outside every bracket) has an ORDER BY: the corpus writes such
    queries so that they order their rows fully, and their rows are compared in order."""
    depth, text = 0, _QUOTED.sub("''", sql)
    for match in re.finditer(r"[()]|\border\s+by\b", text, re.IGNORECASE):
        token = match.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif depth == 0:
            return True
    return False


# -- comparing results ----------------------------------------------------------------------------------
def canonical(value: Any, kind: str = "") -> Any:
    """A driver's value as the connector writes it into JSON, for a column of the connector's type
    ``kind``: ISO dates and timestamps (SQLite's ``YYYY-MM-DD HH:MM:SS`` texts too), timedelta text,
    numbers as floats (compared with a tolerance), JSON text parsed in a JSON column."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2**53 else float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, str) and kind == "datetime":
        try:
            return dt.datetime.fromisoformat(value).isoformat()
        except ValueError:
            return value
    if isinstance(value, str) and kind == "json":
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    return value


def _close(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return bool(a == b)


def _sort_key(row: Sequence[Any]) -> tuple[Any, ...]:
    """Rows sort by type, then value, numbers rounded so that near-equal floats sort together."""

    def key(value: Any) -> tuple[int, Any]:
        if value is None:
            return (0, 0)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (1, float(f"{value:.9g}"))
        if isinstance(value, str):
            return (2, value)
        return (3, json.dumps(value, sort_keys=True, default=str))

    return tuple(key(v) for v in row)


def differences(
    expected: tuple[Sequence[str], Sequence[Sequence[Any]]],
    actual: tuple[Sequence[str], Sequence[Sequence[Any]]],
    in_order: bool,
) -> str | None:
    """Why two canonical results differ, in one line, or None when they are the same."""
    (names, rows), (got_names, got_rows) = expected, actual
    if list(names) != list(got_names):
        return f"columns {list(got_names)} instead of {list(names)}"
    if len(rows) != len(got_rows):
        return f"{len(got_rows)} rows instead of {len(rows)}"
    left, right = (
        (list(rows), list(got_rows)) if in_order else (sorted(rows, key=_sort_key), sorted(got_rows, key=_sort_key))
    )
    for index, (a, b) in enumerate(zip(left, right, strict=True)):
        if not all(_close(x, y) for x, y in zip(a, b, strict=True)):
            if in_order and differences(expected, actual, in_order=False) is None:
                return f"the same rows in another order (first at row {index}: {list(b)} instead of {list(a)})"
            return f"row {index}: {list(b)} instead of {list(a)}"
    return None


def rows_of(cursor: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of an executed DB-API cursor."""
    names = [d[0] for d in cursor.description or ()]
    return names, [tuple(r) for r in cursor.fetchall()]
