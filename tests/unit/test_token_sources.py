"""Token-bound sources: the file's validation, the frozen source and the reloads. shared/_token_sources.py."""

from __future__ import annotations

import io
import json
import os
import secrets
from pathlib import Path
from typing import Any

import pytest
from toy_connector import CONNECTOR as TOY

from shared import _redaction
from shared._http import HttpOptions, StartRefused, check_options
from shared._session import Limits
from shared._settings import CallMeta, Settings, parse_settings
from shared._token_sources import (
    SourcesFileError,
    TokenSources,
    load_sources,
    token_digest,
    token_problem,
)
from shared.cli import main
from shared.declaration import Principal, ResourceRef
from shared.errors import InvalidArguments, InvalidLimit, ResourceNotFound

CANARY = "CANARY-" + secrets.token_hex(12)  # a secret written literally in the file
TOKEN = secrets.token_urlsafe(32)
OTHER_TOKEN = secrets.token_urlsafe(32)
LIMITS = Limits(TOY)


@pytest.fixture(autouse=True)
def fresh_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_redaction, "SECRETS", _redaction.SecretRegistry())


def _entry(**fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "team-a",
        "token_sha256": token_digest(TOKEN).hex(),
        "credentials": {"type": "api_key", "account": "team-a", "api_key": CANARY},
    }
    entry.update(fields)
    return entry


def _write(folder: Path, content: Any, mode: int = 0o600) -> Path:
    path = folder / "sources.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    path.chmod(mode)
    return path


def _refusal(folder: Path, content: Any, **kwargs: Any) -> str:
    with pytest.raises(SourcesFileError) as refused:
        load_sources(_write(folder, content), TOY, **kwargs)
    message = str(refused.value)
    assert CANARY not in message and TOKEN not in message
    return message


def test_a_valid_file_binds_each_token_to_its_frozen_source(tmp_path: Path) -> None:
    content = {
        "defaults": {"row_limit": 20, "model_max_chars": 3000},
        "sources": [
            _entry(config={"region": "us"}, default_resource_id="acc_2", row_limit=10, cost_limit_usd=0.5),
            _entry(
                id="team-b",
                token_sha256=[token_digest(OTHER_TOKEN).hex().upper(), "ab" * 32],  # several tokens, any case
                resources=["acc_3", "acc_4.web"],
                field_limit=5,
                tables=["cookies"],
            ),
        ],
    }
    mapping = load_sources(_write(tmp_path, content), TOY)
    assert len(mapping.tokens) == 3 and mapping.sources == 2
    a, b = mapping.lookup(token_digest(TOKEN)), mapping.lookup(token_digest(OTHER_TOKEN))
    assert a is not None and b is not None and mapping.lookup(token_digest("nope" * 10)) is None
    assert a.id == "team-a" and b.id == "team-b"
    assert (a.ceiling.row_limit, a.ceiling.cost_limit_usd, a.ceiling.model_max_chars) == (10, 0.5, 3000)
    assert a.ceiling.config == {"region": "us"} and a.ceiling.default_resource_id == "acc_2"
    assert a.ceiling.credentials == {"type": "api_key", "account": "team-a", "api_key": CANARY}
    assert (b.ceiling.row_limit, b.ceiling.field_limit, b.ceiling.tables) == (20, 5, ("cookies",))
    assert b.ceiling.config == {"region": "eu"}  # the schema default, as for any source
    # The secret is registered for redaction the moment it is read.
    assert _redaction.redact(f"x {CANARY} y") == "x [REDACTED] y"


def test_references_resolve_and_project_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "key.txt").write_text(f"  {CANARY}\n", "utf-8")
    credentials = {"type": "api_key", "account": {"env": "TEAM_ACCOUNT"}, "api_key": {"file": "key.txt"}}
    path = _write(tmp_path, {"sources": [_entry(credentials=credentials)]})
    environ = {"TEAM_ACCOUNT": "team-z"}
    before = dict(os.environ)
    source = load_sources(path, TOY, environ).lookup(token_digest(TOKEN))
    assert source is not None
    assert source.ceiling.credentials == {"type": "api_key", "account": "team-z", "api_key": CANARY}
    assert dict(os.environ) == before  # references are read, never copied into the environment
    message = _refusal(tmp_path, {"sources": [_entry(credentials=credentials)]}, environ={})
    assert "sources[0] ('team-a').credentials.account" in message and "TEAM_ACCOUNT is not set" in message
    project = {**credentials, "account": {"projectPath": "x"}}
    message = _refusal(tmp_path, {"sources": [_entry(credentials=project)]}, environ=environ)
    assert "projectPath" in message and "no project folder" in message and "absolute path" in message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"sources": [', "not valid JSON (line 1, column 14)"),
        ('{"sources": [], "sources": []}', "the key 'sources' appears twice"),
        ({"source": []}, 'a "sources" list'),
        ({"sources": [], "extra": 1}, "the file: unknown key(s) extra"),
        ({"defaults": {"credentials": {}}, "sources": []}, "defaults: unknown key(s) credentials"),
        ({"sources": [_entry(password="x")]}, "sources[0] ('team-a'): unknown key(s) password"),
        ({"sources": [_entry(id="Team A")]}, "sources[0]: id is required: lowercase"),
        ({"sources": [_entry(), _entry(token_sha256="ab" * 32)]}, "sources[1] ('team-a'): the id 'team-a' is already"),
        ({"sources": [_entry(), _entry(id="team-b")]}, "a token_sha256 is also bound to sources[0] ('team-a')"),
        ({"sources": [_entry(token_sha256=TOKEN)]}, "store the digest, never the token"),
        ({"sources": [_entry(token_sha256=[])]}, "64 hex digits"),
        ({"sources": [_entry(token_sha256=["ab" * 32, "AB" * 32])]}, "lists the same digest twice"),
        (
            {"sources": [_entry(row_limit=9000)]},
            "sources[0] ('team-a'): row_limit must be an integer between 0 and 5000",
        ),
        (
            {"defaults": {"model_max_chars": 10}, "sources": [_entry()]},
            "model_max_chars must be an integer of at least",
        ),
        ({"sources": [_entry(cost_limit_usd=-1)]}, "cost_limit_usd must be a number greater than or equal to 0"),
        ({"sources": [_entry(tables=["nope"])]}, "Unknown table(s) in tables: nope"),
        ({"sources": [_entry(config={"colour": "x"})]}, "sources[0] ('team-a').config: Unknown config key 'colour'"),
        ({"sources": [_entry(config={"region": "mars"})]}, "Config 'region' must be one of: eu, us"),
        ({"sources": [_entry(credentials=None)]}, "credentials are required"),
        (
            {"sources": [_entry(credentials={"type": "api_key", "account": "a", "api_key": CANARY, "pin": CANARY})]},
            "Unknown credential field 'pin'",
        ),
        (
            {"sources": [_entry(credentials={"type": "api_key", "api_key": CANARY})]},
            "Missing credential field 'account'",
        ),
        ({"sources": [_entry(default_resource_id="shop")]}, "default_resource_id: Invalid resource_id"),
        ({"sources": [_entry(resources=[])]}, "resources must be a non-empty list"),
        (
            {"sources": [_entry(resources=["acc_1"], default_resource_id="acc_2")]},
            "default_resource_id 'acc_2' is outside its resources",
        ),
    ],
)
def test_every_mistake_names_the_entry_and_never_a_secret(tmp_path: Path, content: Any, expected: str) -> None:
    assert expected in _refusal(tmp_path, content)


def test_the_file_must_be_owner_only_and_acp_http_token_stays_ordinary(tmp_path: Path) -> None:
    for mode in (0o640, 0o604, 0o660):
        with pytest.raises(SourcesFileError) as refused:
            load_sources(_write(tmp_path, {"sources": [_entry()]}, mode), TOY)
        assert f"mode {mode:03o}" in str(refused.value) and f"chmod 600 {tmp_path / 'sources.json'}" in str(
            refused.value
        )
    assert load_sources(_write(tmp_path, {"sources": [_entry()]}, 0o400), TOY).sources == 1
    message = _refusal(tmp_path, {"sources": [_entry()]}, reserved=token_digest(TOKEN))
    assert "its token is ACP_HTTP_TOKEN" in message


def test_a_call_may_lower_limits_and_nothing_else(tmp_path: Path) -> None:
    content = {"sources": [_entry(row_limit=10, model_max_chars=3000, default_resource_id="acc_2")]}
    source = load_sources(_write(tmp_path, content), TOY).lookup(token_digest(TOKEN))
    assert source is not None
    lower = parse_settings(
        {"row_limit": 5, "cost_limit_usd": 0, "model_max_chars": 1000, "field_limit": 3}, frozenset()
    )
    source.check_overrides(lower, "_meta.acp")
    eff = source.effective(CallMeta(settings=lower), Settings(), LIMITS)
    assert (eff.row_limit, eff.model_max_chars, eff.field_limit, eff.default_resource_id) == (5, 1000, 3, "acc_2")
    assert eff.credentials is not None and eff.credentials["api_key"] == CANARY
    for field, value in (("row_limit", 11), ("model_max_chars", 3001), ("field_limit", 9), ("cost_limit_usd", 0.01)):
        with pytest.raises(InvalidLimit) as wider:
            source.check_overrides(parse_settings({field: value}, frozenset()), "acp/configure")
        assert "the server operator fixes" in wider.value.message and wider.value.data == {
            "field": field,
            "bound_by_operator": True,
        }
    replaced = (
        {"credentials": {"type": "api_key", "account": "x", "api_key": "y" * 10}},
        {"credentials": None},
        {"config": {"region": "us"}},
        {"default_resource_id": "acc_3"},
        {"tables": ["hits"]},
    )
    for raw in replaced:
        with pytest.raises(InvalidArguments) as refused:
            source.check_overrides(parse_settings(raw, frozenset({"hits"})), "_meta.acp")
        assert f"_meta.acp.{next(iter(raw))} cannot be set" in refused.value.message
        assert "bound this token to the source 'team-a'" in refused.value.message
    source.check_overrides(parse_settings({"config": {}}, frozenset()), "_meta.acp")  # an empty config changes nothing
    # A session that lowered a limit keeps it; one set before the operator lowered the source is capped again.
    assert source.effective(CallMeta(), Settings(row_limit=7), LIMITS).row_limit == 7
    assert source.effective(CallMeta(), Settings(row_limit=40), LIMITS).row_limit == 10


def test_allowed_resources_cover_their_children_only(tmp_path: Path) -> None:
    content = {
        "sources": [
            _entry(resources=["acc_1", "acc_2.web"]),
            _entry(id="by-default", token_sha256="cd" * 32, default_resource_id="acc_5"),
            _entry(id="everything", token_sha256="ef" * 32),
        ]
    }
    mapping = load_sources(_write(tmp_path, content), TOY)
    listed = mapping.lookup(token_digest(TOKEN))
    by_default, everything = mapping.lookup(bytes.fromhex("cd" * 32)), mapping.lookup(bytes.fromhex("ef" * 32))
    assert listed is not None and by_default is not None and everything is not None

    def ref(text: str) -> ResourceRef:
        assert TOY.resources.normalize is not None
        return TOY.resources.normalize(text, None)

    assert [listed.allows(ref(r)) for r in ("acc_1", "acc_1.web", "acc_2.web", "acc_2", "acc_2.app", "acc_10")] == [
        True,
        True,
        True,
        False,
        False,
        False,  # a prefix of the text is not a parent: acc_10 is not under acc_1
    ]
    assert [by_default.allows(ref(r)) for r in ("acc_5", "acc_5.web", "acc_6")] == [True, True, False]
    assert everything.resources is None and everything.allows(ref("acc_60"))
    with pytest.raises(ResourceNotFound) as outside:
        listed.require_allowed(ref("acc_2"))
    assert "outside the resources this source allows (acc_1, acc_2.web" in outside.value.message
    # Without normalized parts, ids compare whole or at a separator.
    assert by_default.allows(ResourceRef(id="acc_5/x", level="segment")) and not by_default.allows(
        ResourceRef(id="acc_55", level="account")
    )


def test_entries_with_the_same_credentials_share_no_identity(tmp_path: Path) -> None:
    content = {"sources": [_entry(), _entry(id="team-a-readers", token_sha256="ab" * 32)]}
    mapping = load_sources(_write(tmp_path, content), TOY)
    a, b = mapping.lookup(token_digest(TOKEN)), mapping.lookup(bytes.fromhex("ab" * 32))
    assert a is not None and b is not None
    principal = Principal("toy:team-a", secrets=(CANARY,))
    assert a.scoped(principal).identity != b.scoped(principal).identity != principal.identity
    assert a.scoped(principal).secrets == (CANARY,)


def test_reload_swaps_the_mapping_and_a_broken_file_keeps_the_old_one(tmp_path: Path) -> None:
    path = _write(tmp_path, {"sources": [_entry()]})
    sources = TokenSources(path, TOY)
    first = sources.lookup(token_digest(TOKEN))
    assert first is not None
    stream = io.StringIO()
    with _redaction.logging_to(stream, "info"):
        _write(tmp_path, {"sources": [_entry(token_sha256=token_digest(OTHER_TOKEN).hex(), row_limit=3)]})
        assert sources.reload() is True
        assert sources.lookup(token_digest(TOKEN)) is None
        second = sources.lookup(token_digest(OTHER_TOKEN))
        assert second is not None and second.ceiling.row_limit == 3
        assert first.ceiling.row_limit == 25  # a call that started with the old source keeps it whole
        _write(tmp_path, '{"sources": [' + json.dumps(_entry()))  # cut short while being edited
        assert sources.reload() is False
        assert sources.lookup(token_digest(OTHER_TOKEN)) is second
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["level"], line["msg"][:26]) for line in lines] == [
        ("info", "sources file reloaded: 1 s"),
        ("warning", "sources file not reloaded,"),
    ]
    assert "previous 1 sources stay in use" in lines[1]["msg"] and "not valid JSON" in lines[1]["msg"]
    assert CANARY not in stream.getvalue()


def test_a_reload_follows_a_swapped_symlink(tmp_path: Path) -> None:
    """Secret stores (Kubernetes volumes) publish a new version by swapping a symlink: a reload reads the new target."""
    first, second = tmp_path / "v1", tmp_path / "v2"
    first.mkdir(), second.mkdir()
    _write(first, {"sources": [_entry()]})
    _write(second, {"sources": [_entry(token_sha256=token_digest(OTHER_TOKEN).hex())]})
    link = tmp_path / "sources.json"
    link.symlink_to(first / "sources.json")
    sources = TokenSources(link, TOY)
    staged = tmp_path / "staged"
    staged.symlink_to(second / "sources.json")
    staged.replace(link)
    assert sources.reload() is True and sources.lookup(token_digest(OTHER_TOKEN)) is not None


def test_without_sighup_the_file_is_polled_for_changes(tmp_path: Path) -> None:
    """The Windows path, run here: a request reloads a changed file, at most once per interval."""
    now = [0.0]
    path = _write(tmp_path, {"sources": [_entry()]})
    sources = TokenSources(path, TOY, poll_interval_s=2.0, clock=lambda: now[0])
    _write(tmp_path, {"sources": [_entry(token_sha256=token_digest(OTHER_TOKEN).hex())]})
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    now[0] = 1.0
    assert sources.lookup(token_digest(TOKEN)) is not None  # too soon to look at the file again
    now[0] = 2.5
    assert sources.lookup(token_digest(TOKEN)) is None and sources.lookup(token_digest(OTHER_TOKEN)) is not None
    mapping = sources.mapping
    now[0] = 10.0
    assert sources.lookup(token_digest(OTHER_TOKEN)) is not None
    assert sources.mapping is mapping  # an unchanged file is not read again


def test_a_weak_token_is_refused_and_hash_token_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert token_problem(TOKEN) is None and token_problem(secrets.token_hex(16)) is None
    assert "at least 32" in (token_problem("short") or "")
    assert "cannot carry" in (token_problem("é" * 40) or "")
    assert "too few characters" in (token_problem("ab" * 20) or "")
    for given, code in ((TOKEN + "\n", 0), ("password123\n", 2)):
        monkeypatch.setattr("sys.stdin", io.StringIO(given))
        with pytest.raises(SystemExit) as done:
            main(TOY, ["--hash-token"])
        assert done.value.code == code
        out, err = capsys.readouterr()
        if code == 0:
            assert out.strip() == token_digest(TOKEN).hex() and err == ""
        else:
            assert out == "" and "secrets.token_urlsafe(32)" in err and "password123" not in err


def test_sources_needs_http(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ACP_SOURCES_FILE", "/nowhere/sources.json")
    with pytest.raises(SystemExit) as done:
        main(TOY, [])
    assert done.value.code == 2 and "add --http" in capsys.readouterr().err


def test_a_sources_file_counts_as_a_token_for_a_non_loopback_bind(tmp_path: Path) -> None:
    sources = TokenSources(_write(tmp_path, {"sources": [_entry()]}), TOY)
    check_options(HttpOptions(host="10.0.0.5", sources=sources, behind_tls_proxy=True))
    with pytest.raises(StartRefused, match="--sources"):
        check_options(HttpOptions(host="10.0.0.5", behind_tls_proxy=True))
    with pytest.raises(StartRefused, match="TLS"):  # the token does not replace TLS
        check_options(HttpOptions(host="10.0.0.5", sources=sources))
