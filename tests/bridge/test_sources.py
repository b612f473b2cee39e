"""sources.json (spec 16.3) and the installed connectors: every field checked, nothing ever stops the bridge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from discovery import ROOT

from bridge.sources import InstalledConnector, Source, find_connectors, load_sources

SECRET = "s3cr3t-SENTINEL-7f1e2d"
INSTALLED = {
    cid: InstalledConnector(cid, cid.title(), ROOT / "connectors" / cid, module=cid)
    for cid in ("databases", "prediction")
}


def _load(tmp_path: Path, document: Any, environ: dict[str, str] | None = None):
    path = tmp_path / "conf" / "sources.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document), "utf-8")
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return load_sources(path, project, INSTALLED, environ or {})


def _messages(loaded) -> str:
    return "\n".join(p.message for p in loaded.problems)


# -- connectors ------------------------------------------------------------------------------------
def test_a_checkout_without_acps_serves_its_own_connectors_as_modules() -> None:
    found = find_connectors(ROOT)
    assert {"databases", "prediction"} <= set(found)
    assert found["databases"].module == "databases"
    assert found["databases"].name == "Databases"


def test_an_acps_folder_wins_and_its_servers_launch_by_their_manifest(tmp_path: Path) -> None:
    (tmp_path / "connectors" / "databases").mkdir(parents=True)
    (tmp_path / "connectors" / "databases" / "acp.json").write_text('{"id": "databases", "name": "Databases"}')
    folder = tmp_path / "acps" / "toy"
    folder.mkdir(parents=True)
    (folder / "acp.json").write_text(
        json.dumps({"id": "toy", "name": "Toy", "transport": {"type": "stdio", "command": "x"}})
    )
    (tmp_path / "acps" / "broken").mkdir()
    (tmp_path / "acps" / "broken" / "acp.json").write_text("{not json")
    found = find_connectors(tmp_path)
    assert list(found) == ["toy"]
    assert found["toy"].module is None
    assert found["toy"].folder == folder


# -- a good file -----------------------------------------------------------------------------------
def test_the_spec_example_loads_with_its_references_resolved(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "token.txt").write_text(f"  {SECRET}-file\n")
    loaded = _load(
        tmp_path,
        {
            "defaults": {"row_limit": 25, "cost_limit_usd": 1.5},
            "sources": [
                {
                    "id": "ventas",
                    "acp": "databases",
                    "label": "Ventas (SQLite)",
                    "default_resource_id": "ventas",
                    "credentials": {"type": "sqlite", "path": {"projectPath": "data/ventas.sqlite"}},
                    "row_limit": 10,
                },
                {
                    "id": "pg-main",
                    "acp": "databases",
                    "credentials": {"type": "postgres_dsn", "dsn": {"env": "PG_DSN"}},
                    "config": {"statement_timeout_s": 30, "token": {"file": "token.txt"}},
                    "field_limit": 5,
                },
                {"id": "prevision", "acp": "prediction", "label": "Previsión local"},
            ],
        },
        environ={"PG_DSN": SECRET},
    )
    assert loaded.problems == []
    ventas, pg, prevision = loaded.sources.values()
    assert ventas.credentials == {
        "type": "sqlite",
        "path": str((tmp_path / "project" / "data" / "ventas.sqlite").resolve()),
    }
    assert ventas.limits == {"row_limit": 10, "cost_limit_usd": 1.5}
    assert ventas.label == "Ventas (SQLite)"
    assert pg.credentials == {"type": "postgres_dsn", "dsn": SECRET}
    assert pg.config == {"statement_timeout_s": 30, "token": f"{SECRET}-file"}
    assert pg.limits == {"row_limit": 25, "cost_limit_usd": 1.5, "field_limit": 5}
    assert pg.label == "pg-main"  # no label: the id
    assert prevision.has_credentials is False
    assert pg.has_credentials is True
    assert SECRET not in repr(pg)
    assert [d.id for d in loaded.declared] == ["ventas", "pg-main", "prevision"]


def test_the_meta_of_a_call_carries_the_source_and_the_session() -> None:
    source = Source(
        "ventas", "databases", "Ventas", {"type": "sqlite", "path": "/p"}, {"max_rows": 9}, "ventas", {"row_limit": 3}
    )
    assert source.acp_meta("bridge-1:ventas") == {
        "session_id": "bridge-1:ventas",
        "conversation_id": "bridge-1:ventas",
        "row_limit": 3,
        "credentials": {"type": "sqlite", "path": "/p"},
        "config": {"max_rows": 9},
        "default_resource_id": "ventas",
    }
    assert Source("p", "prediction", "P").acp_meta("s") == {"session_id": "s", "conversation_id": "s"}


# -- a broken file never raises ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ('{"sources": [', "is not valid JSON: Expecting value at line 1, column 14"),
        ('{\n  "sources": []\n  "defaults": {}\n}', "at line 3, column 3"),
        ("[]", "must hold a JSON object"),
        ('{"sources": {}}', 'needs a "sources" list'),
        ('{"sources": [], "sources": []}', "has the key 'sources' twice"),
        ('{"sources": [], "extra": 1}', "unknown key(s) 'extra' at the top"),
        ('{"sources": [], "defaults": []}', '"defaults" must be an object'),
        ('{"sources": [], "defaults": {"rows": 5}}', "unknown key(s) 'rows' in defaults"),
        ('{"sources": [], "defaults": {"row_limit": 5001}}', "defaults.row_limit must be an integer from 0 to 5000"),
    ],
)
def test_a_broken_file_is_a_problem_with_its_place(tmp_path: Path, document: str, expected: str) -> None:
    loaded = _load(tmp_path, document)
    assert expected in _messages(loaded)
    assert all(p.kind == "file" for p in loaded.problems)


def test_a_missing_file_says_how_to_create_it(tmp_path: Path) -> None:
    loaded = load_sources(tmp_path / "nope.json", tmp_path, INSTALLED, {})
    assert loaded.sources == {}
    assert "there is no sources file at" in _messages(loaded)
    assert "sources.example.json" in _messages(loaded)


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sources.json"
    path.write_bytes(b'{"sources": [{"id": "caf\xe9"}]}')
    assert "is not UTF-8 text" in _messages(load_sources(path, tmp_path, INSTALLED, {}))


@pytest.mark.parametrize(
    ("entry", "kind", "expected"),
    [
        ({"id": "Ventas", "acp": "databases"}, "source", "id is required: 1 to 40 lowercase"),
        ({"id": "x" * 41, "acp": "databases"}, "source", "id is required"),
        ({"acp": "databases"}, "source", "id is required"),
        ({"id": "a", "acp": "databases", "colour": 1}, "source", "unknown key(s) 'colour'"),
        ({"id": "a"}, "source", "acp is required: the id of an installed ACP (databases, prediction)"),
        ({"id": "a", "acp": "ga4"}, "source", "the ACP 'ga4' is not installed (installed: databases, prediction)"),
        ({"id": "a", "acp": "databases", "label": 3}, "source", "label must be a string"),
        ({"id": "a", "acp": "databases", "credentials": "x"}, "credentials", "credentials must be an object"),
        ({"id": "a", "acp": "databases", "config": []}, "source", "config must be an object"),
        ({"id": "a", "acp": "databases", "default_resource_id": " "}, "source", "default_resource_id must be"),
        ({"id": "a", "acp": "databases", "row_limit": 5001}, "limits", "row_limit must be an integer from 0 to 5000"),
        ({"id": "a", "acp": "databases", "row_limit": -1}, "limits", "row_limit must be"),
        ({"id": "a", "acp": "databases", "row_limit": 2.5}, "limits", "row_limit must be"),
        ({"id": "a", "acp": "databases", "row_limit": True}, "limits", "row_limit must be"),
        ({"id": "a", "acp": "databases", "field_limit": 0}, "limits", "field_limit must be an integer from 1 to 200"),
        ({"id": "a", "acp": "databases", "cost_limit_usd": -0.5}, "limits", "cost_limit_usd must be a number"),
        ({"id": "a", "acp": "databases", "cost_limit_usd": "1"}, "limits", "cost_limit_usd must be a number"),
        (
            {"id": "a", "acp": "databases", "credentials": {"type": "postgres_dsn", "dsn": {"env": "NOPE"}}},
            "credentials",
            "sources[1] ('a').credentials.dsn: the environment variable NOPE is not set",
        ),
        (
            {"id": "a", "acp": "databases", "credentials": {"password": {"file": "missing.txt"}}},
            "credentials",
            "cannot read the file",
        ),
        (
            {"id": "a", "acp": "databases", "credentials": {"path": {"projectPath": "../outside.sqlite"}}},
            "credentials",
            "leads outside the project",
        ),
        (
            {"id": "a", "acp": "databases", "config": {"x": {"env": ""}}},
            "source",
            "needs a non-empty string",
        ),
    ],
)
def test_a_bad_source_is_refused_and_the_good_one_stays(tmp_path: Path, entry: Any, kind: str, expected: str) -> None:
    good = {"id": "good", "acp": "prediction"}
    loaded = _load(tmp_path, {"sources": [good, entry]})
    assert list(loaded.sources) == ["good"]
    assert expected in _messages(loaded)
    assert {p.kind for p in loaded.problems} == {kind}


def test_both_sources_of_a_duplicated_id_are_refused(tmp_path: Path) -> None:
    loaded = _load(
        tmp_path,
        {
            "sources": [
                {"id": "dup", "acp": "databases", "label": "first"},
                {"id": "ok", "acp": "prediction"},
                {"id": "dup", "acp": "prediction", "label": "second"},
            ]
        },
    )
    assert list(loaded.sources) == ["ok"]
    assert "The id 'dup' is used by sources[0] and sources[2]" in _messages(loaded)
    assert loaded.refused_ids == {"dup"}
    assert [(d.id, d.label) for d in loaded.declared] == [("dup", "first"), ("ok", None)]


def test_no_problem_ever_shows_a_value_from_the_file(tmp_path: Path) -> None:
    """Every refusal names places and fixes: a secret, wherever it sits in credentials, never comes back."""
    secret_file = tmp_path / "conf" / "secret.txt"
    secret_file.parent.mkdir()
    secret_file.write_text(SECRET)
    documents: list[Any] = [
        f'{{"sources": [{{"id": "a", "credentials": "{SECRET}"',  # JSON cut just after a secret
        f'{{"sources": [{{"id": "a", "credentials": {{"password": "{SECRET}" "x": 1}}}}]}}',  # the error is beside it
        {"sources": [{"id": "a", "acp": "databases", "credentials": SECRET}]},
        {"sources": [{"id": "a", "acp": "databases", "config": SECRET}]},
        {"sources": [{"id": "a", "acp": "ga4", "credentials": {"password": {"file": "secret.txt"}}}]},
        {"sources": [{"id": "a", "acp": "databases", "row_limit": SECRET, "cost_limit_usd": SECRET}]},
        {"sources": [], "defaults": {"row_limit": SECRET}},
        {"sources": [{"id": "a", "acp": "databases", "credentials": {"user": {"env": "U"}, "x": {"env": "MISSING"}}}]},
    ]
    for document in documents:
        loaded = _load(tmp_path, document, environ={"U": SECRET})
        assert loaded.problems, document
        assert SECRET not in _messages(loaded) + repr(loaded.declared) + repr(loaded.sources), document


def test_the_example_file_loads_cleanly(tmp_path: Path) -> None:
    """bridge/sources.example.json is what people copy: every source in it must be valid as written."""
    example = ROOT / "bridge" / "sources.example.json"
    loaded = load_sources(example, tmp_path, INSTALLED, {"ALMACEN_PASSWORD": SECRET})
    assert loaded.problems == []
    assert list(loaded.sources) == ["ventas", "almacen", "prevision"]
