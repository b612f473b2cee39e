"""The server checklist of spec 14.2, black-box, for every connector in ``connectors/`` and the test-only ones.

Every check runs against the server in this process, over in-memory MCP streams; the checks follow
the capability (no resource checks when ``resource_id.format`` is ``none``, none of the credential
checks that cannot apply to a source without credentials, multi-table results when the extraction
returns them). Smoke runs then go through real processes: every variant over stdio, and one per
connector over HTTP.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from acp_spec import COLUMN_TYPES, SYSTEM_INFO_REQUIRED
from conformance_support import CANARY, ConformanceSource, extraction_arguments, started
from discovery import connector_folders, connector_ids
from profiles import PROFILES, cases, first_cases

from shared import Connector
from shared.host import ACP_HOST_CAPABILITY, ToolResponse

pytestmark = pytest.mark.anyio
CONNECTORS = connector_ids()
SETUP_KEYWORDS = {
    "type",
    "title",
    "description",
    "default",
    "examples",
    "enum",
    "enumNames",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "writeOnly",
    "contentMediaType",
    "const",
}
SECRET_NAME = re.compile(r"(password|secret|token|private|api_key|service_account|dsn)", re.IGNORECASE)
ACP_JSON_FIELDS = {"acp_version", "id", "name", "version", "publisher", "description", "icon", "transport", "http"}
# Published text is English (spec 5.5.0); these Spanish words would betray a slip.
SPANISH = re.compile(r"\b(el|los|las|para|consulta|tabla|fecha|datos|usuario|recurso)\b", re.IGNORECASE)


def test_every_connector_has_a_profile() -> None:
    """Every connector has a profile; the only extra profiles are the test-only connectors'."""
    assert CONNECTORS, "no connector found by acp.json"
    shipped = {name for name, profile in PROFILES.items() if not profile.test_only}
    assert set(CONNECTORS) == shipped, "add the new connector to tests/conformance/profiles.py"


def _declaration(connector: str) -> Connector:
    return PROFILES[connector].declaration()


def _uses_resources(cap: dict[str, Any]) -> bool:
    return bool(cap["resource_id"]["format"] != "none")


def _takes_credentials(cap: dict[str, Any]) -> bool:
    schema = cap["credentials_schema"]
    return bool(schema.get("oneOf") or schema.get("properties"))


def _info_is_complete(info: dict[str, Any]) -> None:
    for key in SYSTEM_INFO_REQUIRED:
        assert key in info, key


def _check_setup_schema(schema: dict[str, Any], secret_fields_write_only: bool) -> None:
    variants = schema.get("oneOf") or [schema]
    discriminators = []
    for variant in variants:
        assert variant.get("type", "object") == "object"
        assert isinstance(variant.get("properties"), dict)
        for name, prop in variant["properties"].items():
            assert prop.get("type") in {"string", "number", "integer", "boolean"}, (name, prop)
            assert set(prop) <= SETUP_KEYWORDS | {k for k in prop if k.startswith("x-acp-")}, (name, prop)
            if "const" not in prop:
                assert prop.get("title"), f"field {name} needs a title (spec 14.2)"
            if secret_fields_write_only and SECRET_NAME.search(name):
                assert prop.get("writeOnly") is True, f"secret field {name} must be writeOnly"
        discriminators.append({n for n, p in variant["properties"].items() if "const" in p})
        for name in variant.get("required", []):
            assert name in variant["properties"]
    if len(variants) > 1:
        assert set.intersection(*discriminators), "oneOf variants need a const discriminator (spec 5.5.2)"


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_handshake_capability_and_tools(connector: str, variant: str, conformance: ConformanceSource) -> None:
    async with started(conformance) as host:
        cap = host.server_capability
        assert cap is not None and cap["version"] == "1.0"
        assert isinstance(cap["defaults"]["row_limit"], int) and 0 <= cap["defaults"]["row_limit"] <= 5000
        assert isinstance(cap["defaults"]["cost_limit_usd"], (int, float))
        _check_setup_schema(cap["credentials_schema"], secret_fields_write_only=True)
        if "config_schema" in cap:
            _check_setup_schema(cap["config_schema"], secret_fields_write_only=False)
        resource = cap["resource_id"]
        assert resource["description"] and resource["format"]
        assert isinstance(resource["examples"], list)
        assert isinstance(cap["autocontext"]["cache_ttl_s"], int)
        assert set(cap["autocontext"]["delivery"]) <= {"inject", "suggest", "on_first_call"}
        assert cap["cost"]["currency"] == "USD" and cap["cost"]["model"] in {"free", "per_query", "per_byte", "per_row"}
        assert cap["cost"]["description"]
        tools = {t["name"]: t for t in await host.list_tools()}
        assert {"autocontext", "autocontext_data"} <= set(tools)
        assert cap["extraction_tools"] and set(cap["extraction_tools"]) <= set(tools)
        assert host.server_info["name"] == connector and host.server_info["version"]
        assert host.initialize_result.get("instructions")
        published = json.dumps([cap, list(tools.values()), host.initialize_result["instructions"]])
        assert not SPANISH.search(published), SPANISH.search(published)
        if _uses_resources(cap):
            assert resource["title"]
        else:
            # Spec 6.1, 6.2: no remote resource, so no examples and no tool publishes resource_id.
            assert resource["examples"] == []
            assert [name for name, tool in tools.items() if "resource_id" in tool["inputSchema"]["properties"]] == []
        for tool in tools.values():
            schema = tool["inputSchema"]
            assert schema["additionalProperties"] is False
            for name, prop in schema["properties"].items():
                if "x-acp-date" in prop:
                    assert prop["x-acp-date"] in {"start", "end", "template"}
                if "x-acp-input" in prop:
                    assert prop["x-acp-input"] == "table_ref", f"{tool['name']}.{name}"
            roles = [p.get("x-acp-date") for p in schema["properties"].values()]
            assert roles.count("start") == roles.count("end")
            for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                assert isinstance(tool["annotations"][hint], bool)
        # Annotations tell the truth (gateway contract): only the tools declared as writing
        # (insert_rows, load_rows…) are not read-only, and none is destructive unless declared so.
        declared = {t.name: t for t in _declaration(connector).tools}
        writes = {name for name, t in declared.items() if not t.read_only}
        for name, tool in tools.items():
            assert tool["annotations"]["readOnlyHint"] is (name not in writes), name
            assert tool["annotations"]["destructiveHint"] is (name in declared and declared[name].destructive), name


@pytest.mark.parametrize("folder", connector_folders(), ids=lambda p: p.name)
def test_distribution_folder(folder: Path) -> None:
    """acp.json holds identity, transport and an icon only (13.2); skills follow 13.4; a README exists."""
    manifest = json.loads((folder / "acp.json").read_text("utf-8-sig"))
    assert set(manifest) <= ACP_JSON_FIELDS
    assert re.fullmatch(r"[a-z][a-z0-9_-]*", manifest["id"]) and manifest["id"] == folder.name
    for key in ("acp_version", "name", "version", "description", "transport"):
        assert manifest[key]
    assert manifest["transport"]["type"] == "stdio" and manifest["transport"]["command"]
    assert manifest["version"] == _declaration(folder.name).version
    icon = folder / manifest.get("icon", "icon.svg")
    assert icon.resolve().is_relative_to(folder.resolve()) and icon.suffix in {".svg", ".png", ".webp"}
    assert icon.stat().st_size <= 256 * 1024
    skills = [p for p in (folder / "skills").iterdir() if p.is_dir()]
    assert skills, "a connector ships at least one skill"
    for skill in skills:
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", skill.name)
        text = (skill / "SKILL.md").read_text("utf-8")
        front = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
        assert front, "SKILL.md starts with YAML frontmatter"
        fields = dict(line.split(":", 1) for line in front.group(1).splitlines() if ":" in line)
        assert fields["name"].strip() == skill.name and fields["description"].strip()
        assert not SPANISH.search(text)
    assert (folder / "README.md").read_text("utf-8").strip()


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_plain_mcp_client(connector: str, variant: str, conformance: ConformanceSource) -> None:
    """Spec 2.2: a client without the ACP capability still lists, reads blocks and gets errors as text."""
    source = conformance.source
    async with started(conformance, capability=None) as host:
        cap = host.server_capability or {}
        assert [t["name"] for t in await host.list_tools()][:2] == ["autocontext", "autocontext_data"]
        blocks = await host.call("autocontext_data", {})
        assert not blocks.is_error and isinstance(blocks.model_response, list)
        tool, _ = source.extraction
        answer = await host.call(tool, await extraction_arguments(host, source))
        if _takes_credentials(cap):
            expected = "ACP_CREDENTIALS_MISSING"  # a plain client sends no _meta.acp
        elif source.host_tables:
            expected = "ACP_HOST_TABLES_UNSUPPORTED"  # nor answers acp/read_table (spec 8.8)
        else:
            expected = None
        if expected is None:
            assert not answer.is_error and json.loads(answer.text)["notice"]
        else:
            assert answer.is_error and json.loads(answer.text)["error"]["name"] == expected


def _rows_follow_the_row_limit(result: ToolResponse, row_limit: int) -> None:
    """Spec 8.2: at most row_limit rows, fewer only when the table has fewer; in multi-table results
    the tables with a model view are cut by fields instead (8.2.1)."""
    assert result.system_info["row_limit"] == row_limit
    if "tables" not in result.model_response:
        model = result.model_response
        assert model["returned_rows"] == len(model["rows"]) == min(row_limit, model["total_rows"])
        return
    views = {t["name"] for t in result.system_data["tables"] if "model_view" in t}
    for name, table in result.model_response["tables"].items():
        if name not in views:
            assert table["returned_rows"] == len(table["rows"]) == min(row_limit, table["total_rows"]), name


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_configuration_rules(connector: str, variant: str, conformance: ConformanceSource) -> None:
    source = conformance.source
    async with started(conformance) as host:
        credentials = {"credentials": source.credentials} if source.credentials is not None else {}
        configured = await host.configure(**credentials, row_limit=7, **source.limits)
        effective = configured["effective"]
        assert effective["has_credentials"] is (source.credentials is not None) and effective["row_limit"] == 7
        assert "credentials" not in effective  # only has_credentials (spec 5.1)
        with pytest.raises(Exception) as raised:
            await host.configure(row_limit=5001)
        assert getattr(raised.value, "code", None) == -32016
        assert (await host.configure())["effective"]["row_limit"] == 7
        tool, _ = source.extraction
        call = await extraction_arguments(host, source)
        meta = {"autocontext_delivered": True}
        _rows_follow_the_row_limit(await host.call(tool, call, meta), 7)
        _rows_follow_the_row_limit(await host.call(tool, call, {**meta, "row_limit": 2}), 2)
        for key in ("row_limit", "credentials", "cost_limit_usd"):
            refused = await host.call(tool, {**call, key: 1})
            assert refused.error_name == "ACP_INVALID_ARGUMENTS" and "_meta.acp" in refused.error["message"]
        bad = await host.call(tool, call, {"row_limit": -1})
        assert bad.error_name == "ACP_INVALID_LIMIT"


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_resources_and_autocontext(connector: str, variant: str, conformance: ConformanceSource) -> None:
    source = conformance.source
    meta = conformance.meta
    tool, arguments = source.extraction
    async with started(conformance) as host:
        cap = host.server_capability or {}
        described = await host.call("autocontext_data", {}, meta)
        assert [b["id"] for b in described.model_response] == [b.id for b in _declaration(connector).blocks]
        if not _uses_resources(cap):
            # Spec 6.1: no remote resource. autocontext answers without one, and nothing needs a resource
            # to be chosen: with no default_resource_id anywhere, the extraction runs.
            # Spec 6.1, 7.3: its blocks describe the source itself, and an unknown one is refused.
            listing = await host.call("autocontext", {}, meta)
            assert listing.kind == "autocontext" and not listing.is_error
            assert listing.system_info["resource_id"] is None
            assert [b["id"] for b in listing.model_response] == [b["id"] for b in described.model_response]
            assert all(("data" in b) != ("error" in b) for b in listing.model_response)
            unknown = await host.call("autocontext", {"request_data": ["no_such"]}, meta)
            assert unknown.error_name == "ACP_UNKNOWN_BLOCK"
            assert (await host.configure())["effective"]["default_resource_id"] is None
            result = await host.call(tool, arguments, {**meta, "autocontext_delivered": True})
            assert result.kind == "extraction" and not result.is_error
            assert result.system_info["resource_id"] is None
            return
        for example in cap["resource_id"]["examples"]:
            assert (await host.call("autocontext_data", {"resource_id": example})).is_error is False
        listing = (
            await host.call("autocontext", {}, {**meta, "default_resource_id": source.resource_id})
        ).model_response
        assert len(listing["resources"]) <= 25 and listing["total_available"] >= 1
        assert listing["resources"][0]["resource_id"] == source.resource_id  # the default comes first
        described = await host.call("autocontext_data", {"resource_id": source.resource_id}, meta)
        expected = [b["id"] for b in described.model_response]
        context = await host.call("autocontext", {"resource_id": source.resource_id}, meta)
        assert not context.is_error
        assert [b["id"] for b in context.model_response] == expected
        assert all(("data" in b) != ("error" in b) for b in context.model_response)
        unknown = await host.call("autocontext", {"resource_id": source.resource_id, "request_data": ["no_such"]}, meta)
        assert unknown.error_name == "ACP_UNKNOWN_BLOCK"
        call = await extraction_arguments(host, source)
        if "resource_id" not in call:
            # A tool that does not use the remote source needs no resource (spec 6.2, 8.8.2).
            alone = await host.call(tool, arguments, {**meta, "autocontext_delivered": True})
            assert alone.kind == "extraction" and alone.system_info["resource_id"] is None
            return
        required = await host.call(tool, arguments, meta)
        assert required.error_name == "ACP_RESOURCE_REQUIRED"
        defaulted = await host.call(
            tool, arguments, {**meta, "default_resource_id": source.resource_id, "autocontext_delivered": True}
        )
        assert defaulted.system_info["resource_id"] == source.resource_id
        if "on_first_call" in cap["autocontext"]["delivery"]:
            first_meta = {**meta, "session_id": "conformance"}
            first = await host.call(tool, call, first_meta)
            second = await host.call(tool, call, first_meta)
            assert first.system_info["autocontext_attached"] is True and "autocontext" in first.model_response
            assert second.system_info["autocontext_attached"] is False


DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _single_table_notice(total: int, returned: int) -> str:
    """The normative notice of spec 8.2."""
    if total == 0:
        return "The query returned no rows."
    if returned >= total:
        return f"Showing all {total} extracted rows."
    return f"Showing {returned} of {total} extracted rows."


def _check_single_table(result: ToolResponse) -> None:
    """The shape of spec 8.2 and 8.5 for one table."""
    model, data = result.model_response, result.system_data or {}
    assert data["format"] in {"inline", "file"}
    assert model["total_rows"] == data["row_count"] == result.system_info["total_rows"]
    assert model["returned_rows"] == len(model["rows"]) <= result.system_info["row_limit"]
    assert model["truncated"] is (model["returned_rows"] < model["total_rows"])
    assert model["notice"] == _single_table_notice(model["total_rows"], model["returned_rows"])
    assert model["columns"] == [h["name"] for h in data["headers"]]
    assert all(h["type"] in COLUMN_TYPES for h in data["headers"])
    assert all(list(row) == model["columns"] for row in model["rows"])
    rows = result.rows()
    assert len(rows) == data["row_count"] and all(list(row) == model["columns"] for row in rows)
    assert model["dates"] and all(DATE.fullmatch(d) for d in model["dates"])


def _table_notice(name: str, total: int, returned: int, shown: int, fields_total: int) -> str:
    """``tables.*.notice`` of spec 8.2.1."""
    if total == 0:
        return f"{name}: no rows."
    rows = f"{total} rows" if returned >= total else f"{returned} of {total} rows"
    fields = "all fields" if shown >= fields_total else f"{shown} of {fields_total} fields"
    return f"{name}: {rows}, {fields}."


def _check_multi_table(result: ToolResponse) -> None:
    """The shape of spec 8.2.1 and the multi-table system_data of 8.5."""
    model, data, info = result.model_response, result.system_data or {}, result.system_info
    bodies = data["tables"]
    assert data["headers"] == [] and data["row_count"] == sum(t["row_count"] for t in bodies)
    assert model["description"] and model["dates"] and all(DATE.fullmatch(d) for d in model["dates"])
    assert list(model["tables"]) == [t["name"] for t in bodies]
    with_data = [t for t in bodies if t["row_count"]]
    if with_data:
        for body in with_data:
            assert f"{body['name']} ({body['row_count']})" in model["notice"]
    else:
        assert model["notice"].startswith(("No data was extracted.", "No tables were requested"))
    per_table = 10 if len(bodies) > 1 else 50  # ACP_MODEL_ROWS_MULTI / _SINGLE for tables with a model view
    full = result.tables()
    summaries = {t["name"]: t for t in info["tables"]}
    for body in bodies:
        name, names = body["name"], [h["name"] for h in body["headers"]]
        assert re.fullmatch(r"[a-z0-9_]+", name) and body["format"] in {"inline", "file"}
        assert all(h["type"] in COLUMN_TYPES for h in body["headers"])
        assert len(full[name]) == body["row_count"] and all(list(row) == names for row in full[name])
        entry = model["tables"][name]
        assert entry["description"] and entry["dates"] and all(DATE.fullmatch(d) for d in entry["dates"])
        assert entry["total_rows"] == body["row_count"] and entry["fields_total"] == len(names)
        assert entry["returned_rows"] == len(entry["rows"])
        assert set(entry["fields"]) <= set(names)
        assert all(set(row) <= set(entry["fields"]) for row in entry["rows"])
        shown = len(entry["fields"])
        assert entry["notice"] == _table_notice(name, body["row_count"], entry["returned_rows"], shown, len(names))
        if "model_view" in body:
            assert shown <= info["field_limit"] and entry["returned_rows"] <= per_table
        else:
            assert entry["fields"] == names
            assert entry["returned_rows"] == min(info["row_limit"], body["row_count"])
        summary = summaries[name]
        assert (summary["total_rows"], summary["returned_rows"]) == (entry["total_rows"], entry["returned_rows"])
        assert (summary["fields_total"], summary["fields_shown"]) == (len(names), shown)
    assert info["total_rows"] == data["row_count"]
    assert info["returned_rows"] == sum(t["returned_rows"] for t in model["tables"].values())


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_three_part_results_and_errors(connector: str, variant: str, conformance: ConformanceSource) -> None:
    source = conformance.source
    tool, _ = source.extraction
    meta = {**conformance.meta, "autocontext_delivered": True}
    async with started(conformance) as host:
        call = await extraction_arguments(host, source)
        result = await host.call(tool, call, meta)
        assert result.kind == "extraction" and not result.is_error
        _info_is_complete(result.system_info)
        assert (result.system_data or {})["row_count"] == source.extraction_rows
        multi_table = (result.system_data or {})["format"] == "tables"
        if multi_table:
            _check_multi_table(result)
        else:
            _check_single_table(result)
            model = result.model_response
            assert model["notice"] == f"Showing 25 of {source.extraction_rows} extracted rows."
            assert model["returned_rows"] == 25 and model["truncated"] is True
        for args, expected in (
            ((tool, {**call, "nonsense": 1}), "ACP_INVALID_ARGUMENTS"),
            (("no_such_tool", {}), "ACP_INVALID_ARGUMENTS"),
        ):
            error = await host.call(*args, meta)
            assert error.is_error and error.kind == "error" and error.error_name == expected
            assert json.loads(error.text) == {"error": error.error}
            assert error.error["message"].endswith(".")
            _info_is_complete(error.system_info)
    if multi_table:
        # Spec 8.2.1: a host without multi_table gets the primary table only, in the shape of 8.2.
        single_host = {**ACP_HOST_CAPABILITY, "multi_table": False}
        async with started(conformance, capability=single_host) as host:
            fallback = await host.call(tool, call, meta)
        assert fallback.kind == "extraction" and "tables" not in fallback.model_response
        _check_single_table(fallback)


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_canary_secrets_never_leave_the_server(
    connector: str, variant: str, conformance: ConformanceSource, runtime_dirs: dict[str, str]
) -> None:
    """Spec 5.4 and 10.1: no credential in any output, error, log line, cache or temporary file.

    A source without credentials is sent some anyway, as a host could: they must not leak either.
    """
    source = conformance.source
    tool, _ = source.extraction
    seen: list[str] = []
    async with started(conformance, env={"ACP_LOG_LEVEL": "debug"}) as host:
        calls = [("autocontext", {})]
        if _uses_resources(host.server_capability or {}):
            calls.append(("autocontext", {"resource_id": source.resource_id}))
        calls.append((tool, await extraction_arguments(host, source)))
        for credentials in source.canary_credentials:
            for name, args in calls:
                # Valid or not (a trust-auth test server accepts any password), the canary must not leak.
                result = await host.call(name, args, {"credentials": credentials})
                seen.append(json.dumps(result.raw))
            try:
                seen.append(json.dumps(await host.configure(credentials=credentials)))
            except Exception as exc:
                seen.append(repr(exc) + json.dumps(getattr(exc, "data", None)))
    seen.append(host.stderr())
    seen.extend(_runtime_files(runtime_dirs))
    assert source.canary_credentials and all(CANARY in json.dumps(c) for c in source.canary_credentials)
    leaks = [text[:200] for text in seen if CANARY in text]
    assert not leaks, leaks


def _runtime_files(runtime_dirs: dict[str, str]) -> list[str]:
    """The name and text of every file the server left in its cache and table folders."""
    return [
        path.name + path.read_text("utf-8", errors="replace")
        for folder in runtime_dirs.values()
        for path in Path(folder).rglob("*")
        if path.is_file()
    ]


def _total_rows(result: ToolResponse) -> int:
    model = result.model_response
    if "tables" in model:
        return sum(int(t["total_rows"]) for t in model["tables"].values())
    return int(model["total_rows"])


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_extraction_tools_never_write(connector: str, variant: str, conformance: ConformanceSource) -> None:
    """Spec 10.4, 10.6: access_mode defaults to onlyRead, and a write statement sent to any SQL
    extraction tool is ACP_READ_ONLY_VIOLATION in every access mode, with the data untouched."""
    source = conformance.source
    tool, _ = source.extraction
    meta = {**conformance.meta, "autocontext_delivered": True}
    async with started(conformance) as host:
        cap = host.server_capability or {}
        access_mode = cap.get("config_schema", {}).get("properties", {}).get("access_mode")
        if access_mode is not None:
            assert access_mode["default"] == "onlyRead"
        tools = {t["name"]: t for t in await host.list_tools()}
        takes_sql = {
            name
            for name in cap["extraction_tools"]
            if any(
                p.get("contentMediaType") == "application/sql"
                for p in tools[name]["inputSchema"]["properties"].values()
            )
        }
        assert set(source.writes) == takes_sql, "profiles.py: give a write statement for each SQL extraction tool"
        for mode in access_mode["enum"] if access_mode is not None else [None]:
            config = {"config": {"access_mode": mode}} if mode is not None else {}
            for name, write in source.writes.items():
                refused = await host.call(name, {"resource_id": source.resource_id, **write}, {**meta, **config})
                assert refused.error_name == "ACP_READ_ONLY_VIOLATION", (name, mode, refused.error)
        after = await host.call(tool, await extraction_arguments(host, source), meta)
        assert _total_rows(after) == source.extraction_rows


def _is_value_of(kind: str, value: Any) -> bool:
    """Spec 8.6: the JSON value each column type carries (any cell may be null)."""
    if value is None:
        return True
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "json":
        return isinstance(value, (dict, list))
    if not isinstance(value, str):
        return False
    try:
        if kind == "date":
            return re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None and bool(dt.date.fromisoformat(value))
        return kind == "datetime" and bool(dt.datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return False


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_rows_hold_values_of_their_header_types(
    connector: str, variant: str, conformance: ConformanceSource
) -> None:
    source = conformance.source
    tool, _ = source.extraction
    meta = {**conformance.meta, "autocontext_delivered": True}
    async with started(conformance) as host:
        result = await host.call(tool, await extraction_arguments(host, source), meta)
        data = result.system_data or {}
        tables = (
            [(t["headers"], result.tables()[t["name"]]) for t in data["tables"]]
            if data["format"] == "tables"
            else [(data["headers"], result.rows())]
        )
    assert sum(len(rows) for _, rows in tables) == source.extraction_rows
    for header_list, rows in tables:
        headers = {h["name"]: h["type"] for h in header_list}
        wrong = [
            (name, row[name]) for row in rows for name, kind in headers.items() if not _is_value_of(kind, row[name])
        ]
        assert not wrong, (headers, wrong[:5])


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_published_resource_examples_resolve(
    connector: str, variant: str, conformance: ConformanceSource
) -> None:
    """Spec 6.1: the server accepts the examples it publishes in resource_id.examples (none with format none)."""
    source = conformance.source
    async with started(conformance) as host:
        examples = (host.server_capability or {})["resource_id"]["examples"]
        assert source.absent_examples <= set(examples)
        for example in examples:
            result = await host.call("autocontext", {"resource_id": example}, conformance.meta)
            if example in source.absent_examples:
                assert result.error_name == "ACP_RESOURCE_NOT_FOUND", (example, result.error)
            else:
                assert not result.is_error, (example, result.error)
                assert result.system_info["resource_id"] is not None


@pytest.mark.parametrize("connector", list(PROFILES))
async def test_resource_id_is_published_exactly_where_a_tool_needs_one(connector: str, in_process) -> None:
    """Spec 6.2: a tool that needs a resource publishes an optional resource_id string whose
    description repeats resource_id.description; a tool with requiresResource false publishes none."""
    declaration = _declaration(connector)
    async with in_process(declaration) as host:
        cap = host.server_capability or {}
        published = {t["name"]: t["inputSchema"] for t in await host.list_tools()}
    for tool in declaration.tools:
        schema = published[tool.name]
        if tool.requires_resource and declaration.resources.used:
            assert schema["properties"]["resource_id"]["type"] == "string", tool.name
            assert cap["resource_id"]["description"] in schema["properties"]["resource_id"]["description"]
            assert "resource_id" not in schema.get("required", []), tool.name
        else:
            assert "resource_id" not in schema["properties"], tool.name


def _tables_of(result: ToolResponse) -> list[dict[str, Any]]:
    data = result.system_data or {}
    return list(data["tables"]) if data["format"] == "tables" else [data]


def _all_rows(result: ToolResponse) -> list[Any]:
    data = result.system_data or {}
    return list(result.tables().values()) if data["format"] == "tables" else [result.rows()]


# Every variant over stdio (what its process writes on stderr is checked there), and one per connector over
# HTTP; real processes, so out of the quick tier.
SMOKE_RUNS = cases("stdio", slow=True) + first_cases("http", slow=True)


@pytest.mark.parametrize(("connector", "variant", "transport"), SMOKE_RUNS)
async def test_smoke_over_a_real_transport(
    connector: str, variant: str, transport: str, conformance: ConformanceSource, runtime_dirs: dict[str, str]
) -> None:
    """The connector as a process (the checks above run in this process): each variant over stdio, one over HTTP.

    It starts from its command; the capability and a configured session hold over the transport;
    a large table travels as a ``file://`` path on stdio and as a single-use link over HTTP (spec
    8.5) and reads back equal to the inline one; host tables come over ``acp/read_table`` (8.8);
    every line on stderr is a JSON log line, and no credential reaches stderr, the answers or the
    server's folders (5.4, 10.1).
    """
    source = conformance.source
    tool, _ = source.extraction
    declaration = _declaration(connector)
    seen: list[str] = []
    async with started(conformance, transport, env={"ACP_LOG_LEVEL": "debug"}) as host:
        cap = host.server_capability or {}
        assert cap["version"] == "1.0" and host.server_info["name"] == connector
        listed = [t["name"] for t in await host.list_tools()]
        assert listed == ["autocontext", "autocontext_data", *(t.name for t in declaration.tools)]
        if source.credentials is not None:
            configured = await host.configure(credentials=source.credentials, **source.limits)
            assert configured["effective"]["has_credentials"] is True
        call = await extraction_arguments(host, source)
        meta = {**source.limits, "autocontext_delivered": True}  # the credentials come from the session
        inline = await host.call(tool, call, meta)
        assert not inline.is_error and _total_rows(inline) == source.extraction_rows
        assert all(body["format"] == "inline" for body in _tables_of(inline))
        by_reference = await host.call(tool, call, {**meta, "inline_max_bytes": 1})
        scheme = "file://" if transport == "stdio" else f"{(host.url or '').rsplit('/mcp', 1)[0]}/tables/"
        assert all(body["table_uri"].startswith(scheme) for body in _tables_of(by_reference))
        assert _all_rows(by_reference) == _all_rows(inline)
        for credentials in source.canary_credentials:
            for name, args in (("autocontext", {}), (tool, call)):
                seen.append(json.dumps((await host.call(name, args, {"credentials": credentials})).raw))
    stderr = host.stderr()
    for line in stderr.splitlines():
        json.loads(line)  # structured logs: one JSON object per line
    seen.append(stderr)
    seen.extend(_runtime_files(runtime_dirs))
    leaks = [text[:200] for text in seen if CANARY in text]
    assert not leaks, leaks
