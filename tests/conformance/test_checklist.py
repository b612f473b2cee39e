"""The server checklist of spec 14.2, black-box over stdio and over HTTP, for every connector in ``connectors/``."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from acp_spec import COLUMN_TYPES, SYSTEM_INFO_REQUIRED
from conformance_support import CANARY, ConformanceSource, started
from discovery import connector_folders, connector_ids
from profiles import PROFILES, cases

from shared import Connector
from shared.host import AcpHost

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
    assert CONNECTORS, "no connector found by acp.json"
    assert set(CONNECTORS) == set(PROFILES), "add the new connector to tests/conformance/profiles.py"


def _declaration(connector: str) -> Connector:
    return __import__(f"connectors.{connector}", fromlist=["CONNECTOR"]).CONNECTOR


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
    async with started(connector, conformance) as host:
        cap = host.server_capability
        assert cap is not None and cap["version"] == "1.0"
        assert isinstance(cap["defaults"]["row_limit"], int) and 0 <= cap["defaults"]["row_limit"] <= 5000
        assert isinstance(cap["defaults"]["cost_limit_usd"], (int, float))
        _check_setup_schema(cap["credentials_schema"], secret_fields_write_only=True)
        if "config_schema" in cap:
            _check_setup_schema(cap["config_schema"], secret_fields_write_only=False)
        resource = cap["resource_id"]
        assert resource["title"] and resource["description"] and resource["format"]
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
    async with started(connector, conformance, capability=None) as host:
        assert [t["name"] for t in await host.list_tools()][:2] == ["autocontext", "autocontext_data"]
        blocks = await host.call("autocontext_data", {})
        assert not blocks.is_error and isinstance(blocks.model_response, list)
        tool, arguments = conformance.source.extraction
        missing = await host.call(tool, {"resource_id": conformance.source.resource_id, **arguments})
        assert missing.is_error and json.loads(missing.text)["error"]["name"] == "ACP_CREDENTIALS_MISSING"


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_configuration_rules(connector: str, variant: str, conformance: ConformanceSource) -> None:
    source = conformance.source
    async with started(connector, conformance) as host:
        configured = await host.configure(credentials=source.credentials, row_limit=7, **source.limits)
        effective = configured["effective"]
        assert effective["has_credentials"] is True and effective["row_limit"] == 7
        assert "credentials" not in effective  # only has_credentials (spec 5.1)
        with pytest.raises(Exception) as raised:
            await host.configure(row_limit=5001)
        assert getattr(raised.value, "code", None) == -32016
        assert (await host.configure())["effective"]["row_limit"] == 7
        tool, arguments = source.extraction
        call = {"resource_id": source.resource_id, **arguments}
        meta = {"autocontext_delivered": True}
        assert (await host.call(tool, call, meta)).model_response["returned_rows"] == 7
        assert (await host.call(tool, call, {**meta, "row_limit": 3})).model_response["returned_rows"] == 3
        for key in ("row_limit", "credentials", "cost_limit_usd"):
            refused = await host.call(tool, {**call, key: 1})
            assert refused.error_name == "ACP_INVALID_ARGUMENTS" and "_meta.acp" in refused.error["message"]
        bad = await host.call(tool, call, {"row_limit": -1})
        assert bad.error_name == "ACP_INVALID_LIMIT"


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_resources_and_autocontext(connector: str, variant: str, conformance: ConformanceSource) -> None:
    source = conformance.source
    meta = {"credentials": source.credentials, **source.limits}
    async with started(connector, conformance) as host:
        cap = host.server_capability or {}
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
        tool, arguments = source.extraction
        required = await host.call(tool, arguments, meta)
        assert required.error_name == "ACP_RESOURCE_REQUIRED"
        defaulted = await host.call(
            tool, arguments, {**meta, "default_resource_id": source.resource_id, "autocontext_delivered": True}
        )
        assert defaulted.system_info["resource_id"] == source.resource_id
        if "on_first_call" in cap["autocontext"]["delivery"]:
            first_meta = {**meta, "session_id": "conformance"}
            first = await host.call(tool, {"resource_id": source.resource_id, **arguments}, first_meta)
            second = await host.call(tool, {"resource_id": source.resource_id, **arguments}, first_meta)
            assert first.system_info["autocontext_attached"] is True and "autocontext" in first.model_response
            assert second.system_info["autocontext_attached"] is False


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_three_part_results_and_errors(connector: str, variant: str, conformance: ConformanceSource) -> None:
    source = conformance.source
    tool, arguments = source.extraction
    meta = {"credentials": source.credentials, "autocontext_delivered": True, **source.limits}
    async with started(connector, conformance) as host:
        result = await host.call(tool, {"resource_id": source.resource_id, **arguments}, meta)
        assert result.kind == "extraction" and not result.is_error
        model, data = result.model_response, result.system_data
        _info_is_complete(result.system_info)
        assert model["total_rows"] == source.extraction_rows == data["row_count"]
        assert model["notice"] == f"Showing 25 of {source.extraction_rows} extracted rows."
        assert model["returned_rows"] == len(model["rows"]) == 25 and model["truncated"] is True
        assert model["columns"] == [h["name"] for h in data["headers"]]
        assert all(h["type"] in COLUMN_TYPES for h in data["headers"])
        assert all(list(row) == model["columns"] for row in result.rows())
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in model["dates"]) and model["dates"]
        for call, expected in (
            ((tool, {"resource_id": source.resource_id, **arguments, "nonsense": 1}), "ACP_INVALID_ARGUMENTS"),
            (("no_such_tool", {}), "ACP_INVALID_ARGUMENTS"),
        ):
            error = await host.call(*call, meta)
            assert error.is_error and error.kind == "error" and error.error_name == expected
            assert json.loads(error.text) == {"error": error.error}
            assert error.error["message"].endswith(".")
            _info_is_complete(error.system_info)


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_canary_secrets_never_leave_the_server(
    connector: str, variant: str, conformance: ConformanceSource, runtime_dirs: dict[str, str]
) -> None:
    """Spec 5.4 and 10.1: no credential in any output, error, log line, cache or temporary file."""
    source = conformance.source
    tool, arguments = source.extraction
    seen: list[str] = []
    async with started(connector, conformance, env={"ACP_LOG_LEVEL": "debug"}) as host:
        for credentials in source.canary_credentials:
            for name, args in (
                ("autocontext", {}),
                ("autocontext", {"resource_id": source.resource_id}),
                (tool, {"resource_id": source.resource_id, **arguments}),
            ):
                # Valid or not (a trust-auth test server accepts any password), the canary must not leak.
                result = await host.call(name, args, {"credentials": credentials})
                seen.append(json.dumps(result.raw))
            try:
                seen.append(json.dumps(await host.configure(credentials=credentials)))
            except Exception as exc:
                seen.append(repr(exc) + json.dumps(getattr(exc, "data", None)))
    seen.append(host.stderr())
    for folder in runtime_dirs.values():
        for path in Path(folder).rglob("*"):
            if path.is_file():
                seen.append(path.name + path.read_text("utf-8", errors="replace"))
    assert source.canary_credentials and all(CANARY in json.dumps(c) for c in source.canary_credentials)
    leaks = [text[:200] for text in seen if CANARY in text]
    assert not leaks, leaks


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_extraction_tools_never_write(connector: str, variant: str, conformance: ConformanceSource) -> None:
    """Spec 10.4, 10.6: access_mode defaults to onlyRead, and a write statement sent to any SQL
    extraction tool is ACP_READ_ONLY_VIOLATION in every access mode, with the data untouched."""
    source = conformance.source
    tool, arguments = source.extraction
    meta = {"credentials": source.credentials, "autocontext_delivered": True, **source.limits}
    async with started(connector, conformance) as host:
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
        after = await host.call(tool, {"resource_id": source.resource_id, **arguments}, meta)
        assert after.model_response["total_rows"] == source.extraction_rows


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
    tool, arguments = source.extraction
    meta = {"credentials": source.credentials, "autocontext_delivered": True, **source.limits}
    async with started(connector, conformance) as host:
        result = await host.call(tool, {"resource_id": source.resource_id, **arguments}, meta)
        rows = result.rows()
    headers = {h["name"]: h["type"] for h in result.system_data["headers"]}
    assert len(rows) == source.extraction_rows
    wrong = [(name, row[name]) for row in rows for name, kind in headers.items() if not _is_value_of(kind, row[name])]
    assert not wrong, (headers, wrong[:5])


@pytest.mark.parametrize(("connector", "variant"), cases())
async def test_published_resource_examples_resolve(
    connector: str, variant: str, conformance: ConformanceSource
) -> None:
    """Spec 6.1: the server accepts the examples it publishes in resource_id.examples."""
    source = conformance.source
    meta = {"credentials": source.credentials, **source.limits}
    async with started(connector, conformance) as host:
        examples = (host.server_capability or {})["resource_id"]["examples"]
        assert source.absent_examples <= set(examples)
        for example in examples:
            result = await host.call("autocontext", {"resource_id": example}, meta)
            if example in source.absent_examples:
                assert result.error_name == "ACP_RESOURCE_NOT_FOUND", (example, result.error)
            else:
                assert not result.is_error, (example, result.error)
                assert result.system_info["resource_id"] is not None


@pytest.mark.parametrize("connector", CONNECTORS)
async def test_resource_id_is_published_exactly_where_a_tool_needs_one(connector: str) -> None:
    """Spec 6.2: a tool that needs a resource publishes an optional resource_id string whose
    description repeats resource_id.description; a tool with requiresResource false publishes none."""
    declaration = __import__(f"connectors.{connector}", fromlist=["CONNECTOR"]).CONNECTOR
    async with AcpHost.for_module(connector) as host:
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
