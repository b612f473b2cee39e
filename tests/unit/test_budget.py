"""The value cap and the ``model_max_chars`` budget of content[0].text (shared/_budget.py, shared/results.py).

Sizes are checked with the standard library's ``json`` (compact, non-ASCII unescaped), not with the
serializer the core uses, and cuts with a cut written here: the expectations do not come from the
code under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shared._autocontext import SuggestionPage, fit_suggestions
from shared._budget import (
    MARKER,
    SampledRows,
    cap_rows,
    chars,
    fit_blocks,
    fit_error,
    fit_extraction,
    fit_json,
    shrink,
)
from shared.envelope import CallRecord, Envelopes
from shared.errors import UpstreamError
from shared.protocol import MODEL_MAX_VALUE_CHARS, MODEL_MIN_VALUE_CHARS
from shared.results import Delivery, Extraction, Info, extraction_parts
from shared.tables import ModelView, TableData

BIG = "y" * 1_000_000  # one 1 MB text, shared by every cell that holds it
MESSY = 'He said "stop" \\ then\n\tleft.\x01 ' * 70  # characters JSON escapes
WORLD = "naïve café 漢字 🎉 " * 60  # non-ASCII: one character each, several bytes
FLOOR = MODEL_MIN_VALUE_CHARS
BUDGETS = sorted({*range(500, 12_000, 23), 3000, 20_000, 60_000, 200_000, 600_000, 2_000_000})


def text_of(value: Any) -> str:
    """content[0].text as an independent serializer writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def cut(value: Any, limit: int) -> Any:
    if isinstance(value, (dict, list)):
        encoded = text_of(value)
        return value if len(encoded) <= limit else encoded[: limit - 1] + "…"
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value


def wide_rows(count: int, columns: int = 40) -> list[dict[str, Any]]:
    """Wide text rows: 1 MB cells, escaped characters, non-ASCII and short texts around the floor."""
    rows = []
    for r in range(count):
        row: dict[str, Any] = {}
        for c in range(columns):
            kind = c % 4
            if kind == 0:
                row[f"text_{c:02d}"] = BIG
            elif kind == 1:
                row[f"text_{c:02d}"] = f"{r}:{MESSY}"
            elif kind == 2:
                row[f"text_{c:02d}"] = f"{r}:{WORLD}"
            else:
                row[f"text_{c:02d}"] = f"row {r} " + "z" * ((r * 7 + c) % 60)
        rows.append(row)
    return rows


def table_of(rows: list[dict[str, Any]], name: str = "result", **kwargs: Any) -> TableData:
    """A finished table held inline; built directly, since writing 1 MB cells costs seconds."""
    names = list(rows[0]) if rows else []
    headers = [{"name": n, "type": "json" if rows and isinstance(rows[0][n], dict) else "string"} for n in names]
    return TableData(name, headers, len(rows), rows, None, rows[:50], [], **kwargs)  # type: ignore[arg-type]


def delivery(**overrides: Any) -> Delivery:
    settings: dict[str, Any] = {
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


def extraction(*tables: TableData, **kwargs: Any) -> Extraction:
    kwargs.setdefault("description", "Wide test table.")
    kwargs.setdefault("dates", ["2026-09-01"])
    return Extraction(tables=list(tables), **kwargs)


def notice_for(shown: int, total: int, budget: int, cut_to: int | None) -> str:
    head = f"Showing all {total} extracted rows." if shown == total else f"Showing {shown} of {total} extracted rows."
    if shown < total:
        head = f"{head[:-1]} (model budget {budget} characters)."
    return head + (f" Longer values are cut to {cut_to} characters (ending in …)." if cut_to else "")


@pytest.fixture(scope="module")
def wide_table() -> TableData:
    return table_of(wide_rows(25))


@pytest.fixture(scope="module")
def wide_answers(wide_table: TableData) -> dict[int, Any]:
    """The extraction of the wide table under each budget of BUDGETS."""
    return {b: extraction_parts(extraction(wide_table), delivery(model_max_chars=b)) for b in BUDGETS}


# -- one table under every budget --------------------------------------------------------------------------------
def test_every_budget_from_500_up_gives_valid_json_within_the_budget(wide_answers, wide_table) -> None:
    for budget, parts in wide_answers.items():
        text = parts.fitted.text
        assert len(text) <= budget, budget
        model = json.loads(text)  # valid JSON: nothing is cut mid-string
        assert model == json.loads(text_of(parts.model_response)), budget
        returned = len(model["rows"])
        assert model["returned_rows"] == returned and model["total_rows"] == 25
        assert model["truncated"] is (returned < 25)
        assert parts.info == {"total_rows": 25, "returned_rows": returned, "truncated": returned < 25}
        assert parts.messages[0] == model["notice"]
        assert all(list(row) == model["columns"] for row in model["rows"])
        # system_data is never cut: the very row objects of the table, whole.
        assert parts.system_data["table"] is wide_table.rows and wide_table.rows[0]["text_00"] is BIG


def test_the_notice_says_how_many_rows_the_budget_left_and_the_cut(wide_answers) -> None:
    shown = {}
    for budget, parts in wide_answers.items():
        model = parts.model_response
        returned = model["returned_rows"]
        shown[budget] = returned
        if model["columns"][-1].startswith(MARKER):
            continue  # the last resort (columns alone over the budget), checked below
        cut_to = parts.fitted.trim.max_value_chars
        assert model["notice"] == notice_for(returned, 25, budget, cut_to), budget
        report = parts.fitted.trim.report(len(parts.fitted.text))
        assert report is not None and report["rows_dropped"] == 25 - returned if returned < 25 else True
    assert shown[3000] >= 1 and shown[2_000_000] == 25
    assert [shown[b] for b in BUDGETS] == sorted(shown[b] for b in BUDGETS)  # more budget, never fewer rows


def test_rows_are_dropped_only_after_values_are_cut_to_the_floor(wide_answers, wide_table) -> None:
    """With r of 25 rows shown, r + 1 rows whose values were all cut to the floor would not fit."""
    checked = 0
    for budget, parts in wide_answers.items():
        model = parts.model_response
        returned = model["returned_rows"]
        if returned == 25 or model["columns"][-1].startswith(MARKER):
            continue
        more = dict(model)
        more["rows"] = [{k: cut(v, FLOOR) for k, v in row.items()} for row in wide_table.head[: returned + 1]]
        more["returned_rows"] = returned + 1
        more["truncated"] = returned + 1 < 25
        more["notice"] = notice_for(returned + 1, 25, budget, FLOOR)
        assert len(text_of(more)) > budget, budget
        checked += 1
    assert checked > 100


def test_the_rows_that_fit_get_the_longest_values_that_fit(wide_answers, wide_table) -> None:
    """Once the row count is set, values are as long as the budget allows: one character more is over."""
    for budget, parts in wide_answers.items():
        model = parts.model_response
        cap = parts.fitted.trim.max_value_chars
        if not model["rows"] or cap is None or cap == MODEL_MAX_VALUE_CHARS:
            continue
        returned = model["returned_rows"]
        assert model["rows"] == [{k: cut(v, cap) for k, v in row.items()} for row in wide_table.head[:returned]]
        longer = {**model, "rows": [{k: cut(v, cap + 1) for k, v in row.items()} for row in wide_table.head[:returned]]}
        longer["notice"] = notice_for(returned, 25, budget, cap + 1)
        assert len(text_of(longer)) > budget, budget


def test_the_last_resort_keeps_notice_and_counts_when_the_columns_alone_are_over() -> None:
    rows = [{f"a_rather_long_column_name_number_{c:04d}": "v" for c in range(300)} for _ in range(3)]
    parts = extraction_parts(extraction(table_of(rows)), delivery(model_max_chars=500))
    model = json.loads(parts.fitted.text)
    assert len(parts.fitted.text) <= 500
    assert model["notice"] == "Showing 0 of 3 extracted rows (model budget 500 characters)."
    assert (model["total_rows"], model["returned_rows"], model["truncated"], model["rows"]) == (3, 0, True, [])
    assert model["columns"][-1].startswith(f"{MARKER} ") and model["columns"][-1].endswith(" more")
    assert "structure" in parts.fitted.trim.parts_shortened
    assert len(parts.system_data["headers"]) == 300


# -- the value cap, with no budget ----------------------------------------------------------------------------------
def test_without_a_budget_each_value_is_cut_to_the_default_cap(wide_table) -> None:
    parts = extraction_parts(extraction(wide_table), delivery())
    model = json.loads(parts.fitted.text)
    assert model["returned_rows"] == 25 and len(model["rows"]) == 25
    assert model["rows"] == [{k: cut(v, MODEL_MAX_VALUE_CHARS) for k, v in r.items()} for r in wide_table.head]
    first = model["rows"][0]
    assert len(first["text_00"]) == MODEL_MAX_VALUE_CHARS and first["text_00"].endswith("…")
    assert len(first["text_02"]) == MODEL_MAX_VALUE_CHARS  # characters, not bytes
    assert first["text_03"] == wide_table.rows[0]["text_03"]  # short texts stay whole
    assert model["notice"] == "Showing all 25 extracted rows. Longer values are cut to 500 characters (ending in …)."
    assert len(parts.fitted.text) < 25 * 40 * (MODEL_MAX_VALUE_CHARS + 20)  # not 26 MB
    assert parts.system_data["table"][0]["text_00"] is BIG
    report = parts.fitted.trim.report(len(parts.fitted.text))
    assert report == {
        "max_value_chars": 500,
        "values_shortened": 25 * 30,  # the 1 MB, escaped and non-ASCII columns; not the short ones
        "text_chars": len(parts.fitted.text),
    }


def test_short_values_leave_the_answer_and_its_notice_as_before(make_writer) -> None:
    writer = make_writer()
    writer.extend({"date": "2026-09-01", "channel": "Organic", "url": "https://shop.example/" + "p" * 300}
                  for _ in range(3))  # fmt: skip
    parts = extraction_parts(extraction(writer.finish()), delivery())
    assert parts.model_response["notice"] == "Showing all 3 extracted rows."
    assert parts.fitted.trim.report(len(parts.fitted.text)) is None
    assert parts.model_response["rows"][0]["url"].endswith("p" * 300)


def test_objects_and_arrays_stay_objects_when_short_and_become_cut_json_when_long(make_writer) -> None:
    small, big = {"a": [1, 2]}, {"items": [{"sku": f"SKU-{i:04d}", "qty": i} for i in range(100)]}
    writer = make_writer()
    writer.append({"small": small, "big": big, "list": list(range(400))})
    parts = extraction_parts(extraction(writer.finish()), delivery())
    row = parts.model_response["rows"][0]
    assert row["small"] == small
    assert isinstance(row["big"], str) and row["big"] == text_of(big)[:499] + "…"
    assert isinstance(row["list"], str) and len(row["list"]) == 500 and row["list"].startswith("[0,1,2,")
    assert parts.system_data["table"][0]["big"] == big


def test_cap_rows_counts_cuts_and_never_changes_the_rows_it_was_given() -> None:
    rows = [{"s": "x" * 50, "n": 7, "o": {"k": "v" * 60}}, {"s": "short", "n": None, "o": {"k": 1}}]
    shown, cuts = cap_rows(rows, 40)
    assert cuts == 2 and shown[0] == {"s": "x" * 39 + "…", "n": 7, "o": text_of({"k": "v" * 60})[:39] + "…"}
    assert shown[1] is rows[1] and rows[0]["s"] == "x" * 50


def test_model_view_tables_keep_their_own_cap_under_the_default(make_writer) -> None:
    writer = make_writer("events", model_view=ModelView(fields=("s",), max_value_chars=80))
    writer.append({"s": "q" * 300})
    parts = extraction_parts(extraction(writer.finish(), multi=True), delivery())
    assert parts.model_response["tables"]["events"]["rows"] == [{"s": "q" * 79 + "…"}]
    assert "Longer values" not in parts.model_response["notice"]  # the view's own cut, declared by it


# -- what may give way: description, warnings, extras ------------------------------------------------------------
def test_extras_give_way_to_rows_down_to_half_the_budget(wide_table) -> None:
    long_description = "SELECT " + ", ".join(f"column_{i}" for i in range(2000)) + " FROM t"
    warnings = [f"warning {i}: " + "w" * 200 for i in range(30)]
    parts = extraction_parts(
        extraction(wide_table, description=long_description, warnings=warnings, extra={"sql": long_description}),
        delivery(model_max_chars=6000),
    )
    model = json.loads(parts.fitted.text)
    assert len(parts.fitted.text) <= 6000 and model["returned_rows"] >= 1
    assert model["description"].endswith("…") and model["description"].startswith("SELECT column_0, ")
    assert model["warnings"][-1].endswith(" more")
    extras = {k: model[k] for k in ("description", "warnings", "extra")}
    assert len(text_of(extras)) <= 3000
    assert set(parts.fitted.trim.parts_shortened) == {"description", "warnings", "extra"}
    assert parts.warnings == warnings  # system_info keeps every warning whole


def test_when_no_row_fits_the_extras_shrink_further_and_the_notice_columns_and_counts_stay(wide_table) -> None:
    long_description = "d" * 5000
    parts = extraction_parts(
        extraction(wide_table, description=long_description, totals={f"m{i}": i for i in range(200)}),
        delivery(model_max_chars=900),
    )
    model = json.loads(parts.fitted.text)
    assert len(parts.fitted.text) <= 900
    assert model["returned_rows"] == 0 and model["rows"] == [] and model["total_rows"] == 25
    assert model["columns"] == wide_table.columns
    assert model["notice"] == "Showing 0 of 25 extracted rows (model budget 900 characters)."
    assert len(model["description"]) < 500


def test_attached_autocontext_keeps_its_block_ids(wide_table) -> None:
    blocks = [
        {"id": "fields", "description": "Fields.", "data": [{"name": f"f{i}", "type": "string"} for i in range(500)]},
        {"id": "broken", "description": "Fails.", "error": "e" * 2000},
        {"id": "small", "description": "Small.", "data": {"ok": True}},
    ]
    parts = extraction_parts(extraction(wide_table), delivery(model_max_chars=4000), blocks)
    model = json.loads(parts.fitted.text)
    assert len(parts.fitted.text) <= 4000
    assert [b["id"] for b in model["autocontext"]] == ["fields", "broken", "small"]
    assert model["autocontext"][0]["truncated"] is True and model["autocontext"][2] == blocks[2]


# -- several tables (spec 8.2.1) ----------------------------------------------------------------------------------
def test_multi_table_answers_share_the_budget_fairly_and_stay_valid() -> None:
    tables = [table_of(wide_rows(n, 12), name) for name, n in (("alpha", 25), ("beta", 25), ("gamma", 3))]
    for budget in range(500, 30_000, 97):
        parts = extraction_parts(extraction(*tables, multi=True), delivery(model_max_chars=budget))
        text = parts.fitted.text
        assert len(text) <= budget, budget
        model = json.loads(text)
        entries = model["tables"]
        if "structure" in parts.fitted.trim.parts_shortened:
            continue  # the last resort: the table entries alone are over the budget
        counts = {name: len(entry["rows"]) for name, entry in entries.items()}
        assert all(entries[n]["returned_rows"] == counts[n] for n in counts)
        open_counts = [counts[n] for n, full in (("alpha", 25), ("beta", 25), ("gamma", 3)) if counts[n] < full]
        assert max(open_counts, default=0) - min(open_counts, default=0) <= 1, (budget, counts)
        assert min(counts["alpha"], counts["beta"]) >= min(counts["gamma"], 3) or counts["gamma"] == 3
        for name, full in (("alpha", 25), ("beta", 25), ("gamma", 3)):
            if counts[name] < full:
                expected = f"{name}: {counts[name]} of {full} rows, all fields (model budget {budget} characters)."
                assert entries[name]["notice"] == expected
        assert [t["returned_rows"] for t in parts.info["tables"]] == list(counts.values())
        assert parts.info["returned_rows"] == sum(counts.values())
        if sum(counts.values()) < 53:
            assert f"The reduced view fits a model budget of {budget} characters." in model["notice"]
        assert parts.system_data["tables"][0]["table"] is tables[0].rows


def test_spread_sampling_keeps_rows_from_both_ends() -> None:
    rows = wide_rows(200, 8)
    table = TableData("result", [{"name": k, "type": "string"} for k in rows[0]], 200, rows, None, rows[:50], rows)
    parts = extraction_parts(extraction(table), delivery(model_max_chars=3000, sampling="spread"))
    shown = parts.model_response["rows"]
    assert 2 <= len(shown) < 25
    assert shown[0]["text_03"].startswith("row 0 ") and shown[-1]["text_03"].startswith("row 199 ")


# -- a plain client (spec 2.2, 4.1) ---------------------------------------------------------------------------------
def test_a_plain_client_gets_no_system_data_and_its_table_file_is_removed(make_writer) -> None:
    writer = make_writer(inline_max_bytes=10)
    writer.extend({"i": i, "s": "x" * 50} for i in range(30))
    table = writer.finish()
    assert table.path is not None and table.path.exists()
    parts = extraction_parts(extraction(table), delivery(stores_system_data=False, acp_client=False))
    assert parts.system_data is None and not Path(table.path).exists()
    assert parts.model_response["returned_rows"] == 25
    assert parts.messages[-1] == "system_data is left out: the client declared no ACP capability (spec 2.2, 4.1)."
    host = extraction_parts(extraction(table_of([{"i": 1}])), delivery(stores_system_data=False))
    assert host.messages[-1] == "system_data is left out: the host declared stores_system_data false (spec 4.1)."


# -- autocontext, errors, info ------------------------------------------------------------------------------------
def _blocks() -> list[dict[str, Any]]:
    return [
        {"id": "tables", "description": "Tables. " * 20, "data": [{"name": f"t{i}", "rows": i} for i in range(400)]},
        {"id": "schema", "description": "Columns.", "data": {"orders": [f"col_{i} {MESSY[:30]}" for i in range(200)]}},
        {"id": "denied", "description": "Denied.", "error": "No permission (403). " * 40},
        {"id": "tiny", "description": "Tiny.", "data": [1]},
    ]


def test_blocks_keep_every_id_and_mark_the_shortened_ones_under_every_budget() -> None:
    blocks = _blocks()
    for budget in range(500, 20_000, 61):
        fitted = fit_blocks(blocks, budget)
        assert len(fitted.text) <= budget
        shown = json.loads(fitted.text)
        assert [b["id"] for b in shown] == ["tables", "schema", "denied", "tiny"]
        for original, block in zip(blocks, shown, strict=True):
            content = {k: v for k, v in block.items() if k != "truncated"}
            assert block.get("truncated", False) is (content != original)  # marked exactly when shortened
    assert fit_blocks(blocks, None).model is blocks
    assert json.loads(fit_blocks(blocks, 10**7).text) == blocks


def test_block_descriptors_are_shortened_without_a_mark() -> None:
    descriptors = [{"id": f"block_{i}", "description": "d" * 300, "applies_to": ["table"]} for i in range(10)]
    fitted = fit_blocks(descriptors, 800, mark=False)
    shown = json.loads(fitted.text)
    assert len(fitted.text) <= 800 and [d["id"] for d in shown] == [f"block_{i}" for i in range(10)]
    assert all("truncated" not in d for d in shown) and shown[0]["description"].endswith("…")


def test_errors_keep_code_and_name_whole_and_cut_data_then_message() -> None:
    payload = {
        "code": -32018,
        "name": "ACP_UPSTREAM_ERROR",
        "message": "The source failed: " + "m" * 5000 + ". Try again.",
        "data": {"rows": [{"sql": "SELECT 1", "detail": "x" * 300} for _ in range(50)]},
    }
    for budget in range(500, 30_000, 53):
        fitted = fit_error(payload, budget)
        assert len(fitted.text) <= budget
        error = json.loads(fitted.text)["error"]
        assert (error["code"], error["name"]) == (-32018, "ACP_UPSTREAM_ERROR")
        assert error["message"].startswith("The source failed: ")
        if error["message"] != payload["message"]:
            assert "data" not in error and error["message"].endswith("…")
    assert fit_error(payload, None).model == {"error": payload}
    small = {"code": -32013, "name": "ACP_RESOURCE_REQUIRED", "message": "Missing resource_id."}
    assert fit_error(small, 500).text == text_of({"error": small})


def test_free_json_fits_every_budget_and_marks_what_it_cut() -> None:
    data = {"tables": [{"name": f"t{i}", "ddl": MESSY[:400]} for i in range(100)], "note": WORLD}
    for budget in range(500, 40_000, 131):
        fitted = fit_json(data, budget)
        assert len(fitted.text) <= budget and json.loads(fitted.text) == json.loads(text_of(fitted.model))
    shrunk = shrink(data, 2)
    assert shrunk["tables"][-1] == "… 96 more" and shrunk["note"].endswith("…") and len(shrunk["note"]) == 32
    assert shrink(data, 17) is data


def test_the_resource_page_says_how_many_resources_it_shows() -> None:
    resources = [{"resource_id": f"acc_{i}", "name": f"Account {i} " + "n" * 80} for i in range(25)]
    page = SuggestionPage(resources, pool=60, total=60, query=None, default_id=None)
    for budget in (500, 900, 2000, 5000):
        fitted = fit_suggestions(page, budget)
        model = json.loads(fitted.text)
        assert len(fitted.text) <= budget
        shown = len(model["resources"])
        assert model["notice"].startswith(f"Showing {shown} of 60 available resources") or shown == 0
        assert (f"model budget of {budget} characters" in model["notice"]) is (shown < 25)
    assert json.loads(fit_suggestions(page, None).text)["resources"] == resources


def test_chars_counts_characters_as_the_text_holds_them() -> None:
    for value in (BIG[:1000], MESSY, WORLD, {"k": [WORLD, MESSY, 1.5, None, True]}):
        assert chars(value) == len(text_of(value))


def test_fit_extraction_without_rows_or_budget_is_one_pass() -> None:
    def render(counts: list[int], cut_to: int | None, parts: dict[str, Any]) -> tuple[Any, list[Any]]:
        model = {"notice": f"{counts} {cut_to}", "rows": []}
        return model, [model]

    fitted = fit_extraction([SampledRows([{"a": "b" * 600}], 500)], {}, render, None, 500)
    assert fitted.model["notice"] == "[1] 500" and fitted.model["rows"][0]["a"] == "b" * 499 + "…"


# -- the envelope: what reaches the text, system_info and structuredContent ----------------------------------------
def _record(**fields: Any) -> CallRecord:
    return CallRecord(tool="execute_sql", arguments={}, call_id="call-test", **fields)


def test_an_error_text_fits_the_budget_while_meta_acp_error_keeps_it_whole() -> None:
    message = "The query failed near 'FROM': " + "detail " * 500 + "Fix the SQL and call again."
    error = UpstreamError(message, {"position": 7, "context": ["line " * 50 for _ in range(20)]})
    result = Envelopes("databases").error(_record(model_max_chars=500, acp_client=False), error)
    text = result.content[0].text
    shown = json.loads(text)["error"]
    assert len(text) <= 500 and (shown["code"], shown["name"]) == (-32018, "ACP_UPSTREAM_ERROR")
    assert shown["message"].startswith("The query failed near 'FROM': detail") and shown["message"].endswith("…")
    meta = result.meta["acp"]
    assert meta["error"]["message"] == message and meta["error"]["data"]["position"] == 7
    info = meta["system_info"]
    assert info["model_max_chars"] == 500 and info["model_trim"]["parts_shortened"] == ["data", "message"]
    assert result.structured_content == json.loads(text) and result.is_error


def test_an_acp_client_gets_no_structured_content_and_no_budget_report_without_a_budget() -> None:
    envelopes = Envelopes("toy")
    answer = envelopes.info(_record(), Info(data={"ok": True, "note": "x" * 5000}))
    assert answer.structured_content is None and json.loads(answer.content[0].text)["note"] == "x" * 5000
    info = answer.meta["acp"]["system_info"]
    assert "model_max_chars" not in info and "model_trim" not in info
    plain = envelopes.info(_record(acp_client=False, model_max_chars=600), Info(data={"ok": True, "note": "x" * 5000}))
    assert plain.structured_content == json.loads(plain.content[0].text)
    assert len(plain.content[0].text) <= 600 and plain.structured_content["note"].endswith("…")
    listed = envelopes.answer(_record(acp_client=False), "autocontext_data", fit_blocks([{"id": "a"}], None))
    assert listed.structured_content is None  # an array: MCP's structuredContent is an object
