"""Unit tests for shared/_settings.py: limits, precedence and setup schemas (spec 5.1-5.5, 10.1)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from shared._settings import (
    UNSET,
    CallMeta,
    Settings,
    check_config,
    check_credentials,
    effective,
    parse_call_meta,
    parse_settings,
    schema_defaults,
    secret_values,
)
from shared.declaration import Defaults
from shared.errors import AcpError, CredentialsInvalid, InvalidArguments, InvalidLimit

CATALOG = frozenset({"ga4_hits", "datalayer", "ecommerce"})
CANARY = "CANARY-SECRET-123456"
CANARY_2 = "CANARY-REFRESH-654321"

# Spec 4.2: the GA4 credentials_schema, extended with two non-secret OAuth fields.
CREDENTIALS_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "title": "Service account",
            "type": "object",
            "properties": {
                "type": {"type": "string", "const": "service_account"},
                "service_account": {
                    "type": "string",
                    "title": "Service account JSON",
                    "contentMediaType": "application/json",
                    "writeOnly": True,
                },
            },
            "required": ["type", "service_account"],
        },
        {
            "title": "OAuth",
            "type": "object",
            "properties": {
                "type": {"type": "string", "const": "oauth"},
                "access_token": {"type": "string", "title": "Access token", "writeOnly": True},
                "refresh_token": {"type": "string", "title": "Refresh token", "writeOnly": True},
                "email": {"type": "string", "title": "Account"},
                "expiry_date": {"type": "integer", "title": "Expiry"},
            },
            "required": ["type", "access_token"],
        },
    ]
}

# Spec 5.5.1: a flat config_schema, plus the keywords the validator must honour.
CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "title": "Location", "examples": ["EU", "US"]},
        "billing_project": {"type": "string", "title": "Billing project"},
        "price_per_tib_usd": {"type": "number", "default": 6.25, "minimum": 0},
        "max_retries": {"type": "integer", "default": 3, "minimum": 0, "maximum": 10},
        "access_mode": {"type": "string", "enum": ["onlyRead", "readAndOnlyAdd", "full"], "default": "onlyRead"},
        "dry_run": {"type": "boolean"},
        "labels_json": {"type": "string", "contentMediaType": "application/json"},
    },
    "required": [],
}


def _assert_no_canary(exc: BaseException, *canaries: str) -> None:
    """Spec 5.5.3 / 10.1.4: no secret value, nor any fragment of it, in an error."""
    texts = [str(exc), getattr(exc, "message", ""), repr(getattr(exc, "data", None))]
    for canary in canaries:
        fragments = {canary[i : i + 8] for i in range(len(canary) - 7)}
        for text in texts:
            assert canary not in text
            for fragment in fragments:
                assert fragment not in text, f"fragment {fragment!r} of a secret leaked: {text!r}"


# -- parse_settings: limits (spec 5.1) ----------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, 50, 5000])
def test_row_limit_accepts_integers_between_0_and_5000(value: int) -> None:
    assert parse_settings({"row_limit": value}, CATALOG).row_limit == value


@pytest.mark.parametrize("value", [-1, 5001, 10**9, True, False, "50", 2.5, None, [50]])
def test_row_limit_outside_range_or_not_integer_is_invalid_limit(value: Any) -> None:
    with pytest.raises(InvalidLimit) as info:
        parse_settings({"row_limit": value}, CATALOG)
    assert info.value.code == -32016
    assert info.value.name == "ACP_INVALID_LIMIT"
    assert "row_limit" in info.value.message
    assert info.value.data == {"field": "row_limit"}


@pytest.mark.parametrize("value", [0, 0.0, 0.5, 2, 1e6])
def test_cost_limit_accepts_finite_numbers_at_least_0(value: float) -> None:
    parsed = parse_settings({"cost_limit_usd": value}, CATALOG).cost_limit_usd
    assert parsed == value
    assert isinstance(parsed, float)


@pytest.mark.parametrize("value", [-0.01, -1, math.nan, math.inf, -math.inf, True, False, "1", None])
def test_cost_limit_negative_non_finite_or_not_number_is_invalid_limit(value: Any) -> None:
    with pytest.raises(InvalidLimit) as info:
        parse_settings({"cost_limit_usd": value}, CATALOG)
    assert info.value.code == -32016
    assert "cost_limit_usd" in info.value.message
    assert info.value.data == {"field": "cost_limit_usd"}


@pytest.mark.parametrize("value", [1, 20, 200])
def test_field_limit_accepts_integers_between_1_and_200(value: int) -> None:
    assert parse_settings({"field_limit": value}, CATALOG).field_limit == value


@pytest.mark.parametrize("value", [0, -5, 201, True, 2.5, "20"])
def test_field_limit_outside_range_or_not_integer_is_invalid_limit(value: Any) -> None:
    with pytest.raises(InvalidLimit) as info:
        parse_settings({"field_limit": value}, CATALOG)
    assert info.value.code == -32016
    assert "field_limit" in info.value.message
    assert info.value.data == {"field": "field_limit"}


def test_limit_error_does_not_echo_string_values() -> None:
    # spec 5.4: a host bug that puts a secret in a limit must not echo it back.
    with pytest.raises(InvalidLimit) as info:
        parse_settings({"row_limit": CANARY}, CATALOG)
    _assert_no_canary(info.value, CANARY)


def test_absent_fields_stay_unset() -> None:
    # spec 5.1: every field is optional and an absent one keeps the previous value.
    parsed = parse_settings({}, CATALOG)
    assert parsed.row_limit is None
    assert parsed.cost_limit_usd is None
    assert parsed.field_limit is None
    assert parsed.tables is None
    assert parsed.credentials is UNSET
    assert parsed.default_resource_id is UNSET
    assert parsed.config == {}


# -- parse_settings: tables, credentials, config, default resource (spec 5.1) ---------------------


def test_tables_within_catalog_keep_their_order() -> None:
    assert parse_settings({"tables": ["datalayer", "ga4_hits"]}, CATALOG).tables == ("datalayer", "ga4_hits")


def test_empty_tables_selects_none() -> None:
    # spec 5.1: "[] no extrae ninguna" -- an empty selection, distinct from "unset".
    assert parse_settings({"tables": []}, CATALOG).tables == ()


def test_table_outside_catalog_is_invalid_arguments_naming_it_and_the_valid_names() -> None:
    with pytest.raises(InvalidArguments) as info:
        parse_settings({"tables": ["ga4_hits", "nope_table"]}, CATALOG)
    assert info.value.code == -32017
    assert "nope_table" in info.value.message
    for name in CATALOG:
        assert name in info.value.message


@pytest.mark.parametrize("parse", [parse_settings, parse_call_meta])
def test_tables_without_a_catalog_are_invalid_arguments_saying_there_is_none(parse: Any) -> None:
    """spec 5.1, 8.7: with no table_catalog every name is outside it, in acp/configure and in _meta.acp."""
    with pytest.raises(InvalidArguments) as info:
        parse({"tables": ["x"]}, frozenset())
    assert info.value.code == -32017
    assert info.value.message.startswith("Unknown table(s) in tables: x.")
    assert "no table_catalog" in info.value.message and "leave tables out" in info.value.message


def test_empty_tables_without_a_catalog_name_nothing_and_pass() -> None:
    assert parse_settings({"tables": []}, frozenset()).tables == ()


@pytest.mark.parametrize("value", ["ga4_hits", [1, 2], {"ga4_hits": True}])
def test_tables_must_be_a_list_of_names(value: Any) -> None:
    with pytest.raises(InvalidArguments):
        parse_settings({"tables": value}, CATALOG)


def test_credentials_object_is_kept() -> None:
    creds = {"type": "oauth", "access_token": CANARY}
    assert parse_settings({"credentials": creds}, CATALOG).credentials == creds


def test_credentials_null_clears_them() -> None:
    # spec 5.1: "null borra las credenciales de la sesión" -- null is a value, not "absent".
    parsed = parse_settings({"credentials": None}, CATALOG)
    assert parsed.credentials is None
    assert parsed.credentials is not UNSET


@pytest.mark.parametrize("value", [CANARY, [CANARY], 12345678])
def test_credentials_that_are_not_an_object_are_invalid_without_echo(value: Any) -> None:
    with pytest.raises(CredentialsInvalid) as info:
        parse_settings({"credentials": value}, CATALOG)
    assert info.value.code == -32012
    _assert_no_canary(info.value, CANARY)


@pytest.mark.parametrize("value", ["EU", ["EU"], None])
def test_config_must_be_an_object(value: Any) -> None:
    with pytest.raises(InvalidArguments):
        parse_settings({"config": value}, CATALOG)


def test_default_resource_id_string_or_null() -> None:
    assert parse_settings({"default_resource_id": "123456789"}, CATALOG).default_resource_id == "123456789"
    assert parse_settings({"default_resource_id": None}, CATALOG).default_resource_id is None


def test_default_resource_id_of_another_type_is_invalid_arguments() -> None:
    with pytest.raises(InvalidArguments):
        parse_settings({"default_resource_id": 123456789}, CATALOG)


# -- Settings.over: acp/configure accumulates per session (spec 5.1) -----------------------------


def test_over_field_set_on_top_wins_and_absent_field_keeps_base() -> None:
    base = Settings(row_limit=50, cost_limit_usd=2.0, field_limit=8, default_resource_id="base-res")
    top = Settings(row_limit=10)
    merged = top.over(base)
    assert merged.row_limit == 10
    assert merged.cost_limit_usd == 2.0
    assert merged.field_limit == 8
    assert merged.default_resource_id == "base-res"


def test_over_zero_limits_are_values_not_absence() -> None:
    merged = Settings(row_limit=0, cost_limit_usd=0.0).over(Settings(row_limit=50, cost_limit_usd=2.0))
    assert merged.row_limit == 0
    assert merged.cost_limit_usd == 0.0


def test_over_config_merges_key_by_key() -> None:
    # spec 5.1: config "se fusiona con la configuración anterior clave a clave".
    base = Settings(config={"location": "EU", "billing_project": "bill-1"})
    top = Settings(config={"location": "US", "dry_run": True})
    assert top.over(base).config == {"location": "US", "billing_project": "bill-1", "dry_run": True}


def test_over_null_credentials_clear_previous_ones() -> None:
    base = Settings(credentials={"type": "oauth", "access_token": CANARY})
    assert Settings(credentials=None).over(base).credentials is None


def test_over_unset_credentials_keep_previous_ones() -> None:
    creds = {"type": "oauth", "access_token": CANARY}
    assert Settings(row_limit=5).over(Settings(credentials=creds)).credentials == creds


def test_over_null_default_resource_clears_it() -> None:
    assert Settings(default_resource_id=None).over(Settings(default_resource_id="x")).default_resource_id is None


def test_over_empty_table_selection_wins_over_base() -> None:
    assert Settings(tables=()).over(Settings(tables=("ga4_hits",))).tables == ()


# -- effective(): _meta.acp > acp/configure > defaults (spec 5.3) ---------------------------------


def _effective(meta: CallMeta, session: Settings, **overrides: Any) -> Any:
    defaults: dict[str, Any] = {"row_limit": 25, "cost_limit_usd": 0.0, "field_limit": None, "tables": None}
    defaults.update(overrides)
    return effective(meta, session, Defaults(**defaults), schema_defaults(CONFIG_SCHEMA))


def test_effective_uses_server_defaults_when_nothing_is_set() -> None:
    eff = _effective(CallMeta(), Settings(), row_limit=25, cost_limit_usd=0.0, tables=("ga4_hits",))
    assert eff.row_limit == 25
    assert eff.cost_limit_usd == 0.0
    assert eff.tables == ("ga4_hits",)
    assert eff.credentials is None
    assert eff.default_resource_id is None


def test_effective_field_limit_defaults_to_20_when_server_declares_none() -> None:
    # spec 4.2: defaults.field_limit "si falta, 20 (ACP_DEFAULT_FIELD_LIMIT)".
    assert _effective(CallMeta(), Settings(), field_limit=None).field_limit == 20
    assert _effective(CallMeta(), Settings(), field_limit=40).field_limit == 40


def test_effective_session_beats_defaults() -> None:
    session = Settings(row_limit=50, cost_limit_usd=2.0, field_limit=30, tables=("datalayer",))
    eff = _effective(CallMeta(), session, row_limit=25, cost_limit_usd=0.0, field_limit=10, tables=("ga4_hits",))
    assert (eff.row_limit, eff.cost_limit_usd, eff.field_limit, eff.tables) == (50, 2.0, 30, ("datalayer",))


def test_effective_meta_beats_session_and_defaults() -> None:
    session = Settings(row_limit=50, cost_limit_usd=2.0, field_limit=30, tables=("datalayer",))
    meta = CallMeta(settings=Settings(row_limit=10, cost_limit_usd=1.5, field_limit=8, tables=("ecommerce",)))
    eff = _effective(meta, session, row_limit=25, field_limit=12, tables=("ga4_hits",))
    assert (eff.row_limit, eff.cost_limit_usd, eff.field_limit, eff.tables) == (10, 1.5, 8, ("ecommerce",))


def test_effective_meta_zero_limits_win() -> None:
    # spec 5.2 example sends "cost_limit_usd": 0 in _meta; 0 rows is also a valid limit.
    meta = CallMeta(settings=Settings(row_limit=0, cost_limit_usd=0.0))
    eff = _effective(meta, Settings(row_limit=50, cost_limit_usd=2.0), row_limit=25, cost_limit_usd=5.0)
    assert eff.row_limit == 0
    assert eff.cost_limit_usd == 0.0


def test_effective_config_merges_defaults_session_and_meta_by_key() -> None:
    session = Settings(config={"location": "EU", "max_retries": 5})
    meta = CallMeta(settings=Settings(config={"location": "US"}))
    eff = _effective(meta, session)
    assert eff.config == {
        "price_per_tib_usd": 6.25,  # schema default
        "max_retries": 5,  # session beats schema default 3
        "access_mode": "onlyRead",  # schema default
        "location": "US",  # meta beats session
    }


def test_effective_credentials_and_default_resource_follow_precedence() -> None:
    session = Settings(credentials={"type": "oauth", "access_token": "session-token"}, default_resource_id="s-res")
    meta = CallMeta(settings=Settings(credentials={"type": "oauth", "access_token": "meta-token"}))
    eff = _effective(meta, session)
    assert eff.credentials == {"type": "oauth", "access_token": "meta-token"}
    assert eff.default_resource_id == "s-res"
    eff2 = _effective(CallMeta(settings=Settings(default_resource_id="m-res")), session)
    assert eff2.credentials == {"type": "oauth", "access_token": "session-token"}
    assert eff2.default_resource_id == "m-res"


def test_effective_sampling_and_inline_max_bytes_defaults() -> None:
    # spec 5.2: sampling "Por defecto head"; inline_max_bytes "Por defecto 5 MiB".
    eff = _effective(CallMeta(), Settings())
    assert eff.sampling == "head"
    assert eff.inline_max_bytes == 5 * 1024 * 1024
    eff2 = _effective(CallMeta(sampling="spread", inline_max_bytes=1000), Settings())
    assert eff2.sampling == "spread"
    assert eff2.inline_max_bytes == 1000


def test_effective_inline_max_bytes_zero_is_kept() -> None:
    assert _effective(CallMeta(inline_max_bytes=0), Settings()).inline_max_bytes == 0


def test_schema_defaults_collects_property_defaults() -> None:
    assert schema_defaults(CONFIG_SCHEMA) == {"price_per_tib_usd": 6.25, "max_retries": 3, "access_mode": "onlyRead"}
    assert schema_defaults(None) == {}


# -- parse_call_meta (spec 5.2) ------------------------------------------------------------------


def test_call_meta_absent_gives_empty_meta() -> None:
    meta = parse_call_meta(None, CATALOG)
    assert meta.session_id is None
    assert meta.autocontext_delivered is None
    assert meta.autocontext_blocks == ()
    assert meta.sampling is None
    assert meta.inline_max_bytes is None
    assert meta.settings == Settings()


def test_call_meta_parses_every_documented_field() -> None:
    raw = {
        "credentials": {"type": "service_account", "service_account": "{}"},
        "row_limit": 25,
        "cost_limit_usd": 0,
        "config": {},
        "default_resource_id": "123456789",
        "field_limit": 8,
        "tables": ["ga4_hits", "datalayer"],
        "session_id": "conv-8f2c",
        "conversation_id": "conv-8f2c",
        "autocontext_delivered": True,
        "autocontext_blocks": ["key_events", "custom_dimensions"],
        "sampling": "head",
        "inline_max_bytes": 5242880,
        "call_id": "call-1",
    }
    meta = parse_call_meta(raw, CATALOG)
    assert meta.session_id == "conv-8f2c"
    assert meta.conversation_id == "conv-8f2c"
    assert meta.call_id == "call-1"
    assert meta.autocontext_delivered is True
    assert meta.autocontext_blocks == ("key_events", "custom_dimensions")
    assert meta.sampling == "head"
    assert meta.inline_max_bytes == 5242880
    assert meta.settings.row_limit == 25
    assert meta.settings.cost_limit_usd == 0.0
    assert meta.settings.field_limit == 8
    assert meta.settings.tables == ("ga4_hits", "datalayer")
    assert meta.settings.default_resource_id == "123456789"
    assert meta.settings.credentials == {"type": "service_account", "service_account": "{}"}


def test_call_meta_autocontext_delivered_false_is_kept_distinct_from_absent() -> None:
    # spec 7.5 distinguishes false from absent.
    assert parse_call_meta({"autocontext_delivered": False}, CATALOG).autocontext_delivered is False
    assert parse_call_meta({}, CATALOG).autocontext_delivered is None


def test_call_meta_ignores_unknown_fields() -> None:
    # spec 12.2: clients and servers MUST ignore fields they do not know.
    meta = parse_call_meta({"future_field": {"x": 1}, "session_id": "s"}, CATALOG)
    assert meta.session_id == "s"


def test_call_meta_spread_sampling() -> None:
    assert parse_call_meta({"sampling": "spread"}, CATALOG).sampling == "spread"


def test_call_meta_must_be_an_object() -> None:
    with pytest.raises(InvalidArguments):
        parse_call_meta(["session_id"], CATALOG)


@pytest.mark.parametrize("key", ["session_id", "conversation_id", "call_id"])
def test_call_meta_ids_must_be_strings(key: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        parse_call_meta({key: 42}, CATALOG)
    assert key in info.value.message


@pytest.mark.parametrize("value", ["true", 1, 0])
def test_call_meta_autocontext_delivered_must_be_boolean(value: Any) -> None:
    with pytest.raises(InvalidArguments) as info:
        parse_call_meta({"autocontext_delivered": value}, CATALOG)
    assert "autocontext_delivered" in info.value.message


@pytest.mark.parametrize("value", ["key_events", [1], {"key_events": True}])
def test_call_meta_autocontext_blocks_must_be_a_list_of_ids(value: Any) -> None:
    with pytest.raises(InvalidArguments) as info:
        parse_call_meta({"autocontext_blocks": value}, CATALOG)
    assert "autocontext_blocks" in info.value.message


@pytest.mark.parametrize("value", ["random", "HEAD", 1, True])
def test_call_meta_sampling_must_be_head_or_spread(value: Any) -> None:
    with pytest.raises(AcpError) as info:
        parse_call_meta({"sampling": value}, CATALOG)
    assert "sampling" in info.value.message


@pytest.mark.parametrize("value", [-1, True, "5242880", 1.5])
def test_call_meta_inline_max_bytes_must_be_a_non_negative_integer(value: Any) -> None:
    with pytest.raises(AcpError) as info:
        parse_call_meta({"inline_max_bytes": value}, CATALOG)
    assert "inline_max_bytes" in info.value.message


def test_call_meta_invalid_limit_fails_with_invalid_limit() -> None:
    # spec 5.3: an invalid effective limit answers ACP_INVALID_LIMIT.
    with pytest.raises(InvalidLimit) as info:
        parse_call_meta({"row_limit": 6000, "session_id": "s"}, CATALOG)
    assert "row_limit" in info.value.message


# -- check_config (spec 5.5.1, 5.5.3) ------------------------------------------------------------


def test_check_config_accepts_valid_values() -> None:
    check_config(
        CONFIG_SCHEMA,
        {
            "location": "EU",
            "price_per_tib_usd": 6,
            "max_retries": 10,
            "access_mode": "full",
            "dry_run": False,
            "labels_json": '{"team": "data"}',
        },
    )
    check_config(CONFIG_SCHEMA, {})
    check_config(None, {})


def test_check_config_unknown_key_names_it_and_lists_valid_keys() -> None:
    with pytest.raises(InvalidArguments) as info:
        check_config(CONFIG_SCHEMA, {"regionn": "EU"})
    assert info.value.code == -32017
    assert "regionn" in info.value.message
    for key in CONFIG_SCHEMA["properties"]:
        assert key in info.value.message


def test_check_config_without_schema_rejects_any_key() -> None:
    with pytest.raises(InvalidArguments) as info:
        check_config(None, {"location": "EU"})
    assert "location" in info.value.message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("location", 5),
        ("price_per_tib_usd", "6.25"),
        ("price_per_tib_usd", True),
        ("max_retries", 2.5),
        ("max_retries", True),
        ("dry_run", 1),
        ("dry_run", "true"),
    ],
)
def test_check_config_wrong_type_names_the_key(key: str, value: Any) -> None:
    with pytest.raises(InvalidArguments) as info:
        check_config(CONFIG_SCHEMA, {key: value})
    assert f"'{key}'" in info.value.message


def test_check_config_enum_lists_allowed_values() -> None:
    with pytest.raises(InvalidArguments) as info:
        check_config(CONFIG_SCHEMA, {"access_mode": "delete_everything"})
    for allowed in ("onlyRead", "readAndOnlyAdd", "full"):
        assert allowed in info.value.message


@pytest.mark.parametrize(("key", "value"), [("price_per_tib_usd", -0.5), ("max_retries", -1), ("max_retries", 11)])
def test_check_config_minimum_and_maximum(key: str, value: float) -> None:
    with pytest.raises(InvalidArguments) as info:
        check_config(CONFIG_SCHEMA, {key: value})
    assert key in info.value.message


def test_check_config_bounds_are_inclusive() -> None:
    check_config(CONFIG_SCHEMA, {"price_per_tib_usd": 0, "max_retries": 0})
    check_config(CONFIG_SCHEMA, {"max_retries": 10})


def test_check_config_json_text_must_parse() -> None:
    # spec 5.5.1: contentMediaType application/json must be valid JSON text.
    with pytest.raises(InvalidArguments) as info:
        check_config(CONFIG_SCHEMA, {"labels_json": "{not json"})
    assert "labels_json" in info.value.message


def test_check_config_string_length_limits() -> None:
    schema = {"properties": {"code": {"type": "string", "minLength": 2, "maxLength": 4}}}
    check_config(schema, {"code": "ab"})
    check_config(schema, {"code": "abcd"})
    for bad in ("a", "abcde"):
        with pytest.raises(InvalidArguments):
            check_config(schema, {"code": bad})


# -- check_credentials (spec 5.5.2, 5.5.3, 10.1.4) -----------------------------------------------


def test_check_credentials_picks_the_variant_by_its_const() -> None:
    oauth = check_credentials(CREDENTIALS_SCHEMA, {"type": "oauth", "access_token": CANARY})
    assert oauth["title"] == "OAuth"
    service = check_credentials(
        CREDENTIALS_SCHEMA, {"type": "service_account", "service_account": '{"private_key": "x"}'}
    )
    assert service["title"] == "Service account"


def test_check_credentials_unknown_variant_lists_the_valid_ones_without_echo() -> None:
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(CREDENTIALS_SCHEMA, {"type": CANARY, "access_token": CANARY_2})
    assert info.value.code == -32012
    assert "service_account" in info.value.message
    assert "oauth" in info.value.message
    _assert_no_canary(info.value, CANARY, CANARY_2)


def test_check_credentials_missing_discriminator_with_variants_is_invalid() -> None:
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(CREDENTIALS_SCHEMA, {"access_token": CANARY})
    _assert_no_canary(info.value, CANARY)


@pytest.mark.parametrize("missing_value", [None, ""])
def test_check_credentials_missing_required_field_is_named_without_echo(missing_value: Any) -> None:
    creds: dict[str, Any] = {"type": "oauth", "refresh_token": CANARY}
    if missing_value is not None:
        creds["access_token"] = missing_value
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(CREDENTIALS_SCHEMA, creds)
    assert "access_token" in info.value.message
    _assert_no_canary(info.value, CANARY)


def test_check_credentials_unknown_field_is_named_without_echo() -> None:
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(CREDENTIALS_SCHEMA, {"type": "oauth", "access_token": CANARY, "client_secret": CANARY_2})
    assert "client_secret" in info.value.message
    _assert_no_canary(info.value, CANARY, CANARY_2)


def test_check_credentials_field_of_another_variant_is_unknown() -> None:
    # spec 5.5.3: only the keys of the chosen variant are sent.
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(CREDENTIALS_SCHEMA, {"type": "oauth", "access_token": CANARY, "service_account": CANARY_2})
    assert "service_account" in info.value.message
    _assert_no_canary(info.value, CANARY, CANARY_2)


@pytest.mark.parametrize(
    ("creds", "field"),
    [
        ({"type": "oauth", "access_token": CANARY, "expiry_date": CANARY_2}, "expiry_date"),
        ({"type": "oauth", "access_token": CANARY, "email": ["x", CANARY_2]}, "email"),
        ({"type": "oauth", "access_token": 123456789, "refresh_token": CANARY}, "access_token"),
    ],
)
def test_check_credentials_wrong_type_is_named_without_echo(creds: dict[str, Any], field: str) -> None:
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(CREDENTIALS_SCHEMA, creds)
    assert f"'{field}'" in info.value.message
    _assert_no_canary(info.value, CANARY, CANARY_2)


def test_check_credentials_invalid_json_text_is_reported_without_echo() -> None:
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(
            CREDENTIALS_SCHEMA, {"type": "service_account", "service_account": '{"private_key": "' + CANARY}
        )
    assert "service_account" in info.value.message
    _assert_no_canary(info.value, CANARY)


def test_check_credentials_flat_schema_without_variants() -> None:
    # spec 5.5.2: a source with one way to authenticate declares a plain object.
    schema = {
        "type": "object",
        "properties": {"api_key": {"type": "string", "writeOnly": True}, "region": {"type": "string"}},
        "required": ["api_key"],
    }
    assert check_credentials(schema, {"api_key": CANARY}) is schema
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(schema, {"region": CANARY})
    assert "api_key" in info.value.message
    _assert_no_canary(info.value, CANARY)


def test_check_credentials_single_variant_with_const_accepts_the_const() -> None:
    schema = {
        "type": "object",
        "properties": {"type": {"type": "string", "const": "api_key"}, "api_key": {"type": "string"}},
        "required": ["type", "api_key"],
    }
    check_credentials(schema, {"type": "api_key", "api_key": CANARY})
    with pytest.raises(CredentialsInvalid) as info:
        check_credentials(schema, {"type": "oauth", "api_key": CANARY})
    _assert_no_canary(info.value, CANARY)


# -- secret_values (spec 5.5.1 writeOnly, 10.1.4) ------------------------------------------------


def test_secret_values_returns_write_only_values_only() -> None:
    creds = {
        "type": "oauth",
        "access_token": CANARY,
        "refresh_token": CANARY_2,
        "email": "person@example.com",
        "expiry_date": 1700000000,
    }
    assert sorted(secret_values(CREDENTIALS_SCHEMA, creds)) == sorted([CANARY, CANARY_2])


def test_secret_values_includes_unknown_fields_and_their_nested_strings() -> None:
    creds = {"type": "oauth", "access_token": "tok-abcdefgh", "password": CANARY, "extra": {"k": [CANARY_2]}}
    assert set(secret_values(CREDENTIALS_SCHEMA, creds)) == {"tok-abcdefgh", CANARY, CANARY_2}


def test_secret_values_write_only_in_any_variant_counts() -> None:
    # service_account is writeOnly in its own variant; sent with the oauth type it is still secret.
    creds = {"type": "oauth", "service_account": CANARY}
    assert CANARY in secret_values(CREDENTIALS_SCHEMA, creds)


def test_secret_values_discriminator_is_not_secret() -> None:
    assert "oauth" not in secret_values(CREDENTIALS_SCHEMA, {"type": "oauth", "access_token": CANARY})


# -- model_max_chars: a character budget for content[0].text (an extension, spec 12.2) -------------
def test_model_max_chars_is_a_limit_that_meta_tightens_over_configure_and_defaults() -> None:
    assert _effective(CallMeta(), Settings()).model_max_chars is None  # no budget unless someone sets one
    assert _effective(CallMeta(), Settings(), model_max_chars=8000).model_max_chars == 8000
    session = parse_settings({"model_max_chars": 4000}, frozenset())
    assert _effective(CallMeta(), session, model_max_chars=8000).model_max_chars == 4000
    meta = parse_call_meta({"model_max_chars": 3000}, frozenset())
    assert _effective(meta, session).model_max_chars == 3000


@pytest.mark.parametrize("value", [0, 499, -1, 3000.5, "3000", True])
def test_model_max_chars_below_the_minimum_or_not_an_integer_is_invalid_limit(value: Any) -> None:
    with pytest.raises(InvalidLimit) as refused:
        parse_settings({"model_max_chars": value}, frozenset())
    assert "model_max_chars" in refused.value.message and "500" in refused.value.message
