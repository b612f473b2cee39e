"""The three-part result of an extraction (spec 8.2, 8.2.1, 8.4, 8.5, 8.7), shared/results.py."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from shared.protocol import MODEL_ROWS_MULTI, MODEL_ROWS_SINGLE
from shared.results import Delivery, Extraction, extraction_parts, notice_single, system_table, table_notice
from shared.tables import ModelView, TableData

NOT_REQUESTED = "Ask for them with tables only if the analysis needs them."
REDUCED_VIEW = "You see a reduced view; the host stores every table in full."


@pytest.fixture
def build(make_writer):
    """Finish a real TableWriter fed with ``rows`` (dicts)."""

    def factory(name: str = "result", rows=(), **kwargs) -> TableData:
        writer = make_writer(name, **kwargs)
        writer.extend(rows)
        return writer.finish()

    return factory


def delivery(**overrides) -> Delivery:
    settings = {
        "row_limit": 25,
        "field_limit": 20,
        "sampling": "head",
        "multi_table": True,
        "stores_system_data": True,
        "selection": None,
        "catalog_names": frozenset(),
        "required_tables": frozenset(),
    }
    settings.update(overrides)
    return Delivery(**settings)


def numbered(count: int, **extra) -> list[dict]:
    return [{"i": i, **extra} for i in range(count)]


def extraction(*tables: TableData, multi: bool = False, **kwargs) -> Extraction:
    kwargs.setdefault("description", "Test extraction.")
    kwargs.setdefault("dates", ["2026-09-01", "2026-09-30"])
    return Extraction(tables=list(tables), multi=multi, **kwargs)


def read_file_uri(uri: str):
    """Read the JSON array behind a file:// table_uri, keeping every digit."""
    parsed = urlparse(uri)
    assert parsed.scheme == "file"
    return json.loads(Path(unquote(parsed.path)).read_text(encoding="utf-8"), parse_float=Decimal)


# -- notice phrases -------------------------------------------------------------------------


def test_notice_single_normative_phrases():
    """Spec 8.2: the three normative notice phrases."""
    assert notice_single(0, 0) == "The query returned no rows."
    assert notice_single(254, 254) == "Showing all 254 extracted rows."
    assert notice_single(254, 25) == "Showing 25 of 254 extracted rows."


def test_table_notice_forms():
    """Spec 8.2.1: "<name>: no rows.", "<name>: R of N rows, F of T fields." or with all fields / N rows."""
    assert table_notice("cookies", 0, 0, 0, 15) == "cookies: no rows."
    assert table_notice("ga4_hits", 14, 14, 8, 31) == "ga4_hits: 14 rows, 8 of 31 fields."
    assert table_notice("ga4_hits", 60, 10, 8, 31) == "ga4_hits: 10 of 60 rows, 8 of 31 fields."
    assert table_notice("seo", 3, 3, 5, 5) == "seo: 3 rows, all fields."
    assert table_notice("seo", 30, 25, 5, 5) == "seo: 25 of 30 rows, all fields."


# -- single table (spec 8.2) ----------------------------------------------------------------


def test_single_table_no_rows(build):
    table = build(columns=[{"name": "a", "type": "integer"}, {"name": "b", "type": "string"}])
    parts = extraction_parts(extraction(table), delivery())
    model = parts.model_response
    assert model["notice"] == "The query returned no rows."
    assert model["total_rows"] == 0
    assert model["returned_rows"] == 0
    assert model["truncated"] is False
    assert model["columns"] == ["a", "b"]
    assert model["rows"] == []
    assert parts.messages == ["The query returned no rows."]


def test_single_table_all_rows(build):
    table = build(rows=numbered(3, s="x"))
    model = extraction_parts(extraction(table), delivery(row_limit=25)).model_response
    assert model["notice"] == "Showing all 3 extracted rows."
    assert model["total_rows"] == 3
    assert model["returned_rows"] == 3
    assert model["truncated"] is False
    assert model["rows"] == numbered(3, s="x")


def test_single_table_truncated(build):
    table = build(rows=numbered(100, s="x"))
    parts = extraction_parts(extraction(table), delivery(row_limit=25, sampling="head"))
    model = parts.model_response
    assert model["notice"] == "Showing 25 of 100 extracted rows."
    assert model["total_rows"] == 100
    assert model["returned_rows"] == 25
    assert model["truncated"] is True
    assert model["rows"] == numbered(25, s="x")
    assert parts.messages == [model["notice"]]


def test_single_table_spread_sampling_reaches_the_last_row(build):
    table = build(rows=numbered(1_000), head=10, spread=10)
    model = extraction_parts(extraction(table), delivery(row_limit=10, sampling="spread")).model_response
    picked = [row["i"] for row in model["rows"]]
    assert len(picked) == 10
    assert picked[0] == 0
    assert picked[-1] == 999
    assert model["notice"] == "Showing 10 of 1000 extracted rows."


def test_single_table_row_limit_zero_gives_empty_rows(build):
    """Spec 8.2: with row_limit 0 rows is empty; notice, columns and totals remain."""
    table = build(rows=numbered(7, s="x"))
    model = extraction_parts(extraction(table, totals={"i": 21}), delivery(row_limit=0)).model_response
    assert model["rows"] == []
    assert model["returned_rows"] == 0
    assert model["total_rows"] == 7
    assert model["truncated"] is True
    assert model["columns"] == ["i", "s"]
    assert model["totals"] == {"i": 21}
    assert model["notice"] == "Showing 0 of 7 extracted rows."


def test_single_table_columns_match_headers_and_rows_have_exactly_those_keys(build):
    """Spec 8.2: columns equal system_data.headers[].name; rows have exactly the keys of columns."""
    rows = [{"a": 1}, {"a": 2, "b": "x"}, {"c": True}]
    table = build(rows=rows)
    parts = extraction_parts(extraction(table), delivery())
    columns = parts.model_response["columns"]
    assert columns == ["a", "b", "c"]
    assert columns == [h["name"] for h in parts.system_data["headers"]]
    for row in parts.model_response["rows"]:
        assert list(row) == columns
    for row in parts.system_data["table"]:
        assert list(row) == columns


def test_single_table_fields_and_passthrough(build):
    table = build(rows=numbered(2))
    result = extraction(table, totals={"i": 1}, extra={"quota": 3}, dates=["2026-10-01"], description="How.")
    model = extraction_parts(result, delivery()).model_response
    assert model["description"] == "How."
    assert model["dates"] == ["2026-10-01"]
    assert model["totals"] == {"i": 1}
    assert model["extra"] == {"quota": 3}
    assert "warnings" not in model
    assert "tables" not in model


def test_single_table_info_mirrors_model_response(build):
    """Spec 8.4: total_rows, returned_rows and truncated equal model_response's."""
    table = build(rows=numbered(40))
    parts = extraction_parts(extraction(table), delivery(row_limit=10))
    assert parts.info == {"total_rows": 40, "returned_rows": 10, "truncated": True}


def test_single_table_inline_system_data(build):
    """Spec 8.5: inline system_data has format, row_count, headers and table."""
    table = build(rows=numbered(30, s="x"))
    data = extraction_parts(extraction(table), delivery(row_limit=5)).system_data
    assert data["format"] == "inline"
    assert data["row_count"] == 30
    assert data["headers"] == [{"name": "i", "type": "integer"}, {"name": "s", "type": "string"}]
    assert data["table"] == numbered(30, s="x")  # the full table, not the model's sample
    assert "table_uri" not in data


def test_single_table_file_system_data(build):
    """Spec 8.5: a table over inline_max_bytes is delivered by table_uri (file://)."""
    table = build(rows=numbered(50, s="x"), inline_max_bytes=100)
    data = extraction_parts(extraction(table), delivery()).system_data
    assert data["format"] == "file"
    assert data["row_count"] == 50
    assert "table" not in data
    assert data["table_uri"] == table.path.as_uri()
    assert read_file_uri(data["table_uri"]) == numbered(50, s="x")


def test_lossy_decimal_table_is_delivered_as_file(build):
    table = build(rows=[{"d": Decimal("0.1000000000000000055511151231257827")}])
    data = system_table(table)
    assert data["format"] == "file"
    assert "0.1000000000000000055511151231257827" in table.path.read_text()


def test_stores_system_data_false_omits_system_data(build):
    table = build(rows=numbered(3))
    with_data = extraction_parts(extraction(table), delivery())
    parts = extraction_parts(extraction(table), delivery(stores_system_data=False))
    assert parts.system_data is None
    assert parts.model_response == with_data.model_response
    assert parts.info == with_data.info


def test_no_tables_at_all_is_an_empty_extraction():
    parts = extraction_parts(extraction(), delivery())
    assert parts.model_response["notice"] == "The query returned no rows."
    assert parts.model_response["total_rows"] == 0
    assert parts.model_response["rows"] == []
    assert parts.system_data == {"format": "inline", "row_count": 0, "headers": [], "table": []}


def test_warnings_from_result_and_tables_propagate(build):
    table = build(rows=[{"blob": b"\x00", "x": float("nan")}])
    parts = extraction_parts(extraction(table, warnings=["Metric alias applied."]), delivery())
    assert parts.warnings[0] == "Metric alias applied."
    assert parts.warnings[1:] == table.warnings
    assert len(table.warnings) == 2
    assert parts.model_response["warnings"] == parts.warnings


def test_multi_result_warnings_propagate(build):
    a = build("a", rows=[{"blob": b"\x01"}])
    b = build("b", rows=numbered(1))
    parts = extraction_parts(extraction(a, b, multi=True, warnings=["w"]), delivery())
    assert parts.warnings == ["w", *a.warnings]
    assert parts.model_response["warnings"] == parts.warnings


# -- primary-table fallback (spec 8.2.1, 8.5) -------------------------------------------------


def test_client_without_multi_table_gets_primary_table_in_single_shape(build):
    """Spec 8.2.1: without multi_table the server answers with the primary table in the 8.2 shape."""
    first = build("first", rows=numbered(5), inline_max_bytes=10)
    main = build("main", rows=numbered(3, s="x"), primary=True, inline_max_bytes=10)
    parts = extraction_parts(extraction(first, main, multi=True), delivery(multi_table=False))
    model = parts.model_response
    assert "tables" not in model
    assert model["notice"] == "Showing all 3 extracted rows."
    assert model["columns"] == ["i", "s"]
    assert model["total_rows"] == 3
    assert parts.system_data["format"] == "file"
    assert parts.system_data["table_uri"] == main.path.as_uri()
    assert main.path.exists()
    assert not first.path.exists()  # the non-primary table's file is removed


def test_fallback_without_primary_uses_first_table(build):
    """Spec 8.5: the first with primary, or else simply the first, goes to a client without multi_table."""
    first = build("first", rows=numbered(2))
    second = build("second", rows=numbered(9), inline_max_bytes=10)
    parts = extraction_parts(extraction(first, second, multi=True), delivery(multi_table=False))
    assert parts.model_response["total_rows"] == 2
    assert parts.system_data["table"] == numbered(2)
    assert not second.path.exists()


def test_fallback_applies_row_limit_even_with_model_view(build):
    view = ModelView(fields=("i",))
    table = build("events", rows=numbered(60), model_view=view, primary=True)
    model = extraction_parts(extraction(table, multi=True), delivery(multi_table=False, row_limit=5)).model_response
    assert model["rows"] == numbered(5)
    assert model["notice"] == "Showing 5 of 60 extracted rows."


def test_not_multi_result_is_single_shape_for_multi_table_client(build):
    table = build(rows=numbered(2))
    parts = extraction_parts(extraction(table, multi=False), delivery(multi_table=True))
    assert "tables" not in parts.model_response
    assert parts.system_data["format"] == "inline"


# -- multi-table shape (spec 8.2.1, 8.4, 8.5) --------------------------------------------------


def test_multi_table_model_response_shape(build):
    hits = build("ga4_hits", rows=numbered(14), title="GA4 hits", description="Hits of x.", dates=["2026-10-01"])
    cookies = build("cookies", rows=numbered(9, name="_ga"))
    empty = build("network", columns=["url"])
    result = extraction(hits, cookies, empty, multi=True, manifest={"pages": []}, dates=["2026-10-02"])
    model = extraction_parts(result, delivery(row_limit=5)).model_response
    assert model["notice"] == f"Extracted 2 table(s) with data: ga4_hits (14), cookies (9). {REDUCED_VIEW}"
    assert model["description"] == "Test extraction."
    assert model["dates"] == ["2026-10-02"]
    assert model["manifest"] == {"pages": []}
    assert list(model["tables"]) == ["ga4_hits", "cookies", "network"]  # empty tables included
    assert model["tables"]["ga4_hits"] == {
        "title": "GA4 hits",
        "description": "Hits of x.",
        "dates": ["2026-10-01"],
        "notice": "ga4_hits: 5 of 14 rows, all fields.",
        "total_rows": 14,
        "returned_rows": 5,
        "fields": ["i"],
        "fields_total": 1,
        "rows": numbered(5),
    }
    cookies_entry = model["tables"]["cookies"]
    assert "title" not in cookies_entry
    assert cookies_entry["description"] == "Test extraction."  # falls back to the extraction's
    assert cookies_entry["dates"] == ["2026-10-02"]
    assert model["tables"]["network"]["notice"] == "network: no rows."
    assert model["tables"]["network"]["rows"] == []
    assert "not_extracted" not in model


def test_multi_table_without_data_notice(build):
    a = build("a", columns=["x"])
    b = build("b", columns=["y"])
    parts = extraction_parts(extraction(a, b, multi=True), delivery())
    assert parts.model_response["notice"] == "No data was extracted."
    assert parts.messages == ["No data was extracted."]


def test_multi_table_tables_without_view_follow_row_limit_with_all_columns(build):
    """Spec 8.2.1: tables without a view follow 8.2: row_limit rows with every column."""
    columns = [f"c{i}" for i in range(30)]
    rows = [{c: n for c in columns} for n in range(40)]
    wide = build("wide", rows=rows)
    other = build("other", rows=numbered(1))
    entry = extraction_parts(extraction(wide, other, multi=True), delivery(row_limit=12, field_limit=5))
    wide_entry = entry.model_response["tables"]["wide"]
    assert wide_entry["fields"] == columns
    assert wide_entry["returned_rows"] == 12
    assert wide_entry["rows"] == rows[:12]
    assert wide_entry["notice"] == "wide: 12 of 40 rows, all fields."


def test_multi_table_system_data(build):
    """Spec 8.5: format "tables", summed row_count, empty headers, one system_data per table."""
    view = ModelView(fields=("i",), max_value_chars=40)
    hits = build("ga4_hits", rows=numbered(14), title="GA4 hits", model_view=view)
    cookies = build("cookies", rows=numbered(9), inline_max_bytes=10)
    data = extraction_parts(extraction(hits, cookies, multi=True), delivery()).system_data
    assert data["format"] == "tables"
    assert data["row_count"] == 23
    assert data["headers"] == []
    first, second = data["tables"]
    assert first == {
        "name": "ga4_hits",
        "title": "GA4 hits",
        "format": "inline",
        "row_count": 14,
        "headers": [{"name": "i", "type": "integer"}],
        "table": numbered(14),
        "model_view": {"fields": ["i"], "max_value_chars": 40},
    }
    assert second["name"] == "cookies"
    assert "title" not in second
    assert "model_view" not in second
    assert second["format"] == "file"
    assert second["table_uri"] == cookies.path.as_uri()
    assert "table" not in second


def test_multi_table_system_info_summary_and_totals(build):
    """Spec 8.4: field_limit and per-table summaries; top-level totals are the sums."""
    view = ModelView(fields=("b", "a"))
    events = build("events", rows=[{"a": n, "b": n, "c": n} for n in range(30)], title="Events", model_view=view)
    plain = build("plain", rows=numbered(8))
    info = extraction_parts(extraction(events, plain, multi=True), delivery(row_limit=5, field_limit=1)).info
    assert info["field_limit"] == 1
    assert info["tables"] == [
        {
            "name": "events",
            "title": "Events",
            "total_rows": 30,
            "returned_rows": MODEL_ROWS_MULTI,
            "fields_total": 3,
            "fields_shown": 1,
        },
        {"name": "plain", "total_rows": 8, "returned_rows": 5, "fields_total": 1, "fields_shown": 1},
    ]
    assert info["total_rows"] == 38
    assert info["returned_rows"] == MODEL_ROWS_MULTI + 5
    assert info["truncated"] is True


def test_multi_table_not_truncated_when_everything_shown(build):
    a = build("a", rows=numbered(3))
    b = build("b", rows=numbered(2))
    info = extraction_parts(extraction(a, b, multi=True), delivery(row_limit=25)).info
    assert info["truncated"] is False
    assert info["total_rows"] == info["returned_rows"] == 5


def test_multi_table_totals_and_extra_pass_through(build):
    a = build("a", rows=numbered(1))
    model = extraction_parts(extraction(a, multi=True, totals={"i": 0}, extra={"k": 1}), delivery()).model_response
    assert model["totals"] == {"i": 0}
    assert model["extra"] == {"k": 1}


def test_multi_table_stores_system_data_false(build):
    a = build("a", rows=numbered(1))
    assert extraction_parts(extraction(a, multi=True), delivery(stores_system_data=False)).system_data is None


# -- model_view (spec 8.2.1) ----------------------------------------------------------------


def view_entry(build, rows, view, *, others=0, **delivery_overrides):
    """The model_response entry of an ``events`` table with ``view``, next to ``others`` plain tables."""
    events = build("events", rows=rows, model_view=view)
    extra_tables = [build(f"other{i}", rows=numbered(1)) for i in range(others)]
    parts = extraction_parts(extraction(events, *extra_tables, multi=True), delivery(**delivery_overrides))
    return parts.model_response["tables"]["events"]


def test_model_view_fields_existing_in_view_order_up_to_field_limit(build):
    rows = [{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}]
    view = ModelView(fields=("d", "missing", "b", "a", "e"))
    entry = view_entry(build, rows, view, field_limit=3)
    assert entry["fields"] == ["d", "b", "a"]
    assert entry["fields_total"] == 5
    assert entry["rows"] == [{"d": 4, "b": 2, "a": 1}]
    assert entry["notice"] == "events: 1 rows, 3 of 5 fields."


def test_model_view_all_fields_notice(build):
    view = ModelView(fields=("a", "b"))
    entry = view_entry(build, [{"a": 1, "b": 2}, {"a": 3, "b": 4}], view)
    assert entry["fields"] == ["a", "b"]
    assert entry["notice"] == "events: 2 rows, all fields."


def test_model_view_single_table_shows_50_rows_ignoring_row_limit(build):
    """Spec 8.2.1: no row_limit; at most 50 rows when the call returns one table."""
    view = ModelView(fields=("i",))
    entry = view_entry(build, numbered(80), view, row_limit=5)
    assert MODEL_ROWS_SINGLE == 50
    assert entry["returned_rows"] == 50
    assert entry["rows"] == numbered(50)
    assert entry["notice"] == "events: 50 of 80 rows, all fields."


def test_model_view_several_tables_show_10_rows_each(build):
    """Spec 8.2.1: at most 10 rows per table when the call returns several tables."""
    assert MODEL_ROWS_MULTI == 10
    view = ModelView(fields=("i",))
    entry = view_entry(build, numbered(80), view, others=1, row_limit=50)
    assert entry["returned_rows"] == 10
    assert entry["rows"] == numbered(10)
    assert entry["notice"] == "events: 10 of 80 rows, all fields."


def test_model_view_few_rows_shows_them_all(build):
    entry = view_entry(build, numbered(4), ModelView(fields=("i",)), others=1)
    assert entry["rows"] == numbered(4)
    assert entry["notice"] == "events: 4 rows, all fields."


def test_model_view_max_rows_zero_shows_no_rows(build):
    """Spec 8.2.1: with model_view.max_rows 0 the model sees only the notice and the fields."""
    entry = view_entry(build, numbered(7, s="x"), ModelView(fields=("s", "i"), max_rows=0))
    assert entry["rows"] == []
    assert entry["returned_rows"] == 0
    assert entry["fields"] == ["s", "i"]
    assert entry["notice"] == "events: 0 of 7 rows, all fields."


def test_model_view_max_rows_caps_rows(build):
    entry = view_entry(build, numbered(20), ModelView(fields=("i",), max_rows=3))
    assert entry["rows"] == numbered(3)


def test_model_view_truncates_long_values_with_ellipsis(build):
    """Spec 8.2.1: each value is cut to max_value_chars characters, ending in "…"."""
    long_text = "x" * 30 + "y" * 70
    rows = [{"long": long_text, "exact": "z" * 80, "short": "ok"}]
    entry = view_entry(build, rows, ModelView(fields=("long", "exact", "short")))
    row = entry["rows"][0]
    assert len(row["long"]) == 80
    assert row["long"].endswith("…")
    assert row["long"][:-1] == long_text[:79]
    assert row["exact"] == "z" * 80  # exactly at the limit: unchanged
    assert row["short"] == "ok"


def test_model_view_custom_max_value_chars(build):
    entry = view_entry(build, [{"s": "abcdefghij"}], ModelView(fields=("s",), max_value_chars=4))
    assert entry["rows"] == [{"s": "abc…"}]


def test_model_view_serializes_objects_and_arrays_to_json_first(build):
    """Spec 8.2.1: objects and arrays are serialized to JSON before the cut."""
    small = {"k": "v"}
    big = [{"item_id": f"SKU-{n:04d}", "price": n} for n in range(20)]
    entry = view_entry(build, [{"small": small, "big": big}], ModelView(fields=("small", "big"), max_value_chars=60))
    row = entry["rows"][0]
    assert isinstance(row["small"], str)
    assert json.loads(row["small"]) == small
    assert isinstance(row["big"], str)
    assert len(row["big"]) == 60
    assert row["big"].endswith("…")
    assert row["big"].startswith('[{"item_id":"SKU-0000"')


def test_model_view_omits_null_and_empty_cells(build):
    """Spec 8.2.1: null or "" cells are left out of the row."""
    rows = [{"a": None, "b": "", "c": 0, "d": False}, {"a": "x", "b": "y", "c": None, "d": None}]
    entry = view_entry(build, rows, ModelView(fields=("a", "b", "c", "d")))
    assert entry["rows"] == [{"c": 0, "d": False}, {"a": "x", "b": "y"}]


def test_model_view_does_not_truncate_system_data(build):
    long_text = "q" * 500
    events = build("events", rows=[{"s": long_text}], model_view=ModelView(fields=("s",), max_value_chars=10))
    data = extraction_parts(extraction(events, multi=True), delivery()).system_data
    assert data["tables"][0]["table"] == [{"s": long_text}]


# -- catalog selection (spec 8.7) -------------------------------------------------------------


@pytest.fixture
def browser_tables(build):
    """A browser-like extraction: three catalog tables (one empty) and one table outside the catalog."""

    def factory():
        return {
            "ga4_hits": build("ga4_hits", rows=numbered(14)),
            "cookies": build("cookies", rows=numbered(9), inline_max_bytes=10),
            "seo": build("seo", columns=["url"]),
            "summary": build("summary", rows=numbered(2)),
        }

    return factory


CATALOG = frozenset({"ga4_hits", "cookies", "seo"})


def test_unselected_catalog_tables_are_dropped_and_listed(browser_tables):
    tables = browser_tables()
    parts = extraction_parts(
        extraction(*tables.values(), multi=True),
        delivery(selection=["ga4_hits"], catalog_names=CATALOG),
    )
    model = parts.model_response
    assert list(model["tables"]) == ["ga4_hits", "summary"]
    assert [t["name"] for t in parts.system_data["tables"]] == ["ga4_hits", "summary"]
    assert [t["name"] for t in parts.info["tables"]] == ["ga4_hits", "summary"]
    assert parts.system_data["row_count"] == 16
    assert model["not_extracted"] == {"cookies": 9}  # seo had no rows
    assert model["notice"] == (
        f"Extracted 2 table(s) with data: ga4_hits (14), summary (2). {REDUCED_VIEW}"
        f" Not extracted because they were not requested: cookies (9). {NOT_REQUESTED}"
    )
    assert not tables["cookies"].path.exists()  # an unrequested table is not kept for the host


def test_tables_outside_the_catalog_are_always_delivered(browser_tables):
    tables = browser_tables()
    parts = extraction_parts(
        extraction(*tables.values(), multi=True),
        delivery(selection=[], catalog_names=CATALOG),
    )
    assert list(parts.model_response["tables"]) == ["summary"]
    assert parts.model_response["not_extracted"] == {"ga4_hits": 14, "cookies": 9}


def test_required_tables_are_always_delivered(browser_tables):
    tables = browser_tables()
    parts = extraction_parts(
        extraction(*tables.values(), multi=True),
        delivery(selection=[], catalog_names=CATALOG, required_tables=frozenset({"cookies"})),
    )
    assert list(parts.model_response["tables"]) == ["cookies", "summary"]
    assert parts.model_response["not_extracted"] == {"ga4_hits": 14}
    assert tables["cookies"].path.exists()


def test_empty_selection_notice(build):
    """Spec 8.7: with selection [] the notice says no tables were requested."""
    hits = build("ga4_hits", rows=numbered(3))
    cookies = build("cookies", columns=["name"])
    result = extraction(hits, cookies, multi=True, manifest={"pages": [1]})
    parts = extraction_parts(result, delivery(selection=[], catalog_names=frozenset({"ga4_hits", "cookies"})))
    model = parts.model_response
    assert model["notice"] == (
        "No tables were requested, so no data was extracted."
        f" Not extracted because they were not requested: ga4_hits (3). {NOT_REQUESTED}"
    )
    assert model["tables"] == {}
    assert model["manifest"] == {"pages": [1]}  # spec 8.7: the manifest is always delivered
    assert parts.system_data["tables"] == []
    assert parts.system_data["row_count"] == 0


def test_empty_selection_without_any_data(build):
    cookies = build("cookies", columns=["name"])
    parts = extraction_parts(
        extraction(cookies, multi=True), delivery(selection=[], catalog_names=frozenset({"cookies"}))
    )
    assert parts.model_response["notice"] == "No tables were requested, so no data was extracted."
    assert "not_extracted" not in parts.model_response


def test_selecting_every_table_extracts_everything(browser_tables):
    tables = browser_tables()
    parts = extraction_parts(
        extraction(*tables.values(), multi=True),
        delivery(selection=sorted(CATALOG), catalog_names=CATALOG),
    )
    assert list(parts.model_response["tables"]) == ["ga4_hits", "cookies", "seo", "summary"]
    assert "not_extracted" not in parts.model_response
    assert "Not extracted" not in parts.model_response["notice"]


def test_without_selection_nothing_is_filtered(browser_tables):
    tables = browser_tables()
    parts = extraction_parts(extraction(*tables.values(), multi=True), delivery(selection=None, catalog_names=CATALOG))
    assert list(parts.model_response["tables"]) == ["ga4_hits", "cookies", "seo", "summary"]
    assert tables["cookies"].path.exists()


def test_selection_applies_before_primary_fallback(build):
    main = build("main", rows=numbered(3), primary=True, inline_max_bytes=10)
    side = build("side", rows=numbered(5))
    parts = extraction_parts(
        extraction(main, side, multi=True),
        delivery(multi_table=False, selection=["side"], catalog_names=frozenset({"main", "side"})),
    )
    assert parts.model_response["total_rows"] == 5
    assert parts.system_data["table"] == numbered(5)
    assert not main.path.exists()
