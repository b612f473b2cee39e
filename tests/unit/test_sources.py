"""References in a sources file (spec 16.3): env, file and projectPath. shared/sources.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.sources import DuplicateKeyError, SourceReferenceError, SourceReferences, load_json_strict

SECRET = "s3cr3t-value-that-must-never-be-echoed"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A sources folder with a secrets file, a project beside it and a folder outside both."""
    sources, project, outside = tmp_path / "config", tmp_path / "project", tmp_path / "outside"
    for folder in (sources / "secrets", project / "data", outside):
        folder.mkdir(parents=True)
    (sources / "secrets" / "sa.json").write_text(f'\n  {{"private_key": "{SECRET}"}}  \n\t', "utf-8")
    (outside / "other.sqlite").write_bytes(b"")
    return {"sources": sources, "project": project, "outside": outside}


def _refs(layout: dict[str, Path], **environ: str) -> SourceReferences:
    return SourceReferences(base_dir=layout["sources"], project_dir=layout["project"], environ=environ)


def test_the_three_references_at_any_depth(layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_TEST_SOURCE_TOKEN", SECRET)
    refs = SourceReferences(base_dir=layout["sources"], project_dir=layout["project"])  # the real environment
    value = {
        "type": "service_account",
        "service_account": {"file": "secrets/sa.json"},
        "token": {"env": "ACP_TEST_SOURCE_TOKEN"},
        "nested": [{"path": {"projectPath": "data/sales.sqlite"}}, 3, None, True, "text"],
    }
    assert refs.resolve(value, "sources[0].credentials") == {
        "type": "service_account",
        "service_account": f'{{"private_key": "{SECRET}"}}',  # the file's text, stripped
        "token": SECRET,
        "nested": [{"path": str(layout["project"].resolve() / "data" / "sales.sqlite")}, 3, None, True, "text"],
    }


def test_resolve_source_resolves_credentials_and_config_only(layout: dict[str, Path]) -> None:
    source = {
        "id": "ventas",
        "acp": "databases",
        "label": {"env": "NOT_A_REFERENCE_HERE"},  # spec 16.3: only credentials and config take references
        "credentials": {"type": "sqlite", "path": {"projectPath": "data/ventas.sqlite"}},
        "config": {"region": {"env": "REGION"}},
    }
    resolved = _refs(layout, REGION="eu").resolve_source(source, "sources[0]")
    assert resolved["label"] == {"env": "NOT_A_REFERENCE_HERE"}
    assert resolved["credentials"]["path"] == str(layout["project"].resolve() / "data" / "ventas.sqlite")
    assert resolved["config"] == {"region": "eu"}
    assert source["config"] == {"region": {"env": "REGION"}}  # the input is left as it was


def test_objects_that_are_not_exactly_a_reference_stay_data(layout: dict[str, Path]) -> None:
    value = {
        "output": {"file": "out.csv", "format": "csv"},  # a reference key among others: a literal object
        "other": {"path": "x"},
        "empty": {},
        "inner": {"mode": "x", "key": {"env": "KEY"}},  # ... whose values are still walked
    }
    assert _refs(layout, KEY="k").resolve(value, "sources[0].config") == {
        "output": {"file": "out.csv", "format": "csv"},
        "other": {"path": "x"},
        "empty": {},
        "inner": {"mode": "x", "key": "k"},
    }


def test_absolute_file_paths_and_empty_env_values(layout: dict[str, Path]) -> None:
    absolute = layout["outside"] / "token.txt"
    absolute.write_text("abc\n", "utf-8")
    refs = _refs(layout, EMPTY="")
    assert refs.resolve({"file": str(absolute)}, "x") == "abc"
    assert refs.resolve({"env": "EMPTY"}, "x") == ""


@pytest.mark.parametrize(
    ("value", "where", "needles"),
    [
        ({"a": {"env": "ACP_TEST_MISSING_VAR"}}, "sources[1].credentials.a", ["ACP_TEST_MISSING_VAR", "is not set"]),
        ({"a": [{"file": "secrets/nope.json"}]}, "sources[1].credentials.a[0]", ["nope.json", "No such file"]),
        ({"a": {"file": "secrets"}}, "sources[1].credentials.a", ["is a folder"]),
        ({"a": {"env": 5}}, "sources[1].credentials.a", ["non-empty string", "variable's name"]),
        ({"a": {"projectPath": ""}}, "sources[1].credentials.a", ["non-empty string"]),
        ({"odd key": {"file": None}}, 'sources[1].credentials["odd key"]', ["file's path"]),
    ],
)
def test_errors_name_where_and_what_to_fix(
    layout: dict[str, Path], value: dict[str, object], where: str, needles: list[str]
) -> None:
    with pytest.raises(SourceReferenceError) as error:
        _refs(layout).resolve(value, "sources[1].credentials")
    assert error.value.where == where and str(error.value).startswith(where + ": ")
    for needle in needles:
        assert needle in str(error.value)


def test_an_unreadable_or_non_text_file_is_an_error_without_its_content(layout: dict[str, Path]) -> None:
    binary = layout["sources"] / "secrets" / "key.bin"
    binary.write_bytes(SECRET.encode() + b"\xff\xfe")
    with pytest.raises(SourceReferenceError, match="not UTF-8") as error:
        _refs(layout).resolve({"file": "secrets/key.bin"}, "sources[0].credentials.key")
    assert SECRET not in str(error.value)
    with pytest.raises(SourceReferenceError, match="Not a directory") as error:  # a path through a file
        _refs(layout).resolve({"file": "secrets/sa.json/inner"}, "sources[0].credentials.service_account")
    assert error.value.where == "sources[0].credentials.service_account" and SECRET not in str(error.value)


def test_an_env_error_never_echoes_other_values(layout: dict[str, Path]) -> None:
    with pytest.raises(SourceReferenceError) as error:
        _refs(layout, PRESENT=SECRET).resolve({"a": {"env": "PRESENT"}, "b": {"env": "ABSENT"}}, "s")
    assert error.value.where == "s.b" and SECRET not in str(error.value)


# -- projectPath stays inside the project ------------------------------------------------------------
def test_project_paths_may_not_exist_yet_and_may_wander_inside(layout: dict[str, Path]) -> None:
    refs = _refs(layout)
    project = layout["project"].resolve()
    assert refs.resolve({"projectPath": "new/db.duckdb"}, "x") == str(project / "new" / "db.duckdb")
    assert refs.resolve({"projectPath": "data/../data/a.sqlite"}, "x") == str(project / "data" / "a.sqlite")
    assert refs.resolve({"projectPath": str(project / "data" / "b.sqlite")}, "x") == str(project / "data" / "b.sqlite")
    assert refs.resolve({"projectPath": "."}, "x") == str(project)


@pytest.mark.parametrize("escape", ["../outside/other.sqlite", "data/../../outside/other.sqlite", "/etc/passwd"])
def test_project_paths_that_leave_the_project_are_refused(layout: dict[str, Path], escape: str) -> None:
    with pytest.raises(SourceReferenceError, match="leads outside the project") as error:
        _refs(layout).resolve({"path": {"projectPath": escape}}, "sources[2].credentials")
    assert error.value.where == "sources[2].credentials.path"


def test_symlinks_out_of_the_project_are_refused_and_inside_are_followed(layout: dict[str, Path]) -> None:
    project = layout["project"]
    (project / "escape").symlink_to(layout["outside"], target_is_directory=True)
    (project / "alias.sqlite").symlink_to(layout["outside"] / "other.sqlite")
    (project / "shortcut").symlink_to(project / "data", target_is_directory=True)
    refs = _refs(layout)
    for escape in ("escape/other.sqlite", "alias.sqlite", "escape"):
        with pytest.raises(SourceReferenceError, match="leads outside the project"):
            refs.resolve({"projectPath": escape}, "x")
    assert refs.resolve({"projectPath": "shortcut/c.sqlite"}, "x") == str(project.resolve() / "data" / "c.sqlite")


def test_a_symlink_loop_and_a_missing_project_folder_are_errors(layout: dict[str, Path]) -> None:
    project = layout["project"]
    (project / "loop").symlink_to(project / "loop")
    with pytest.raises(SourceReferenceError, match="cannot be resolved"):
        _refs(layout).resolve({"projectPath": "loop/x"}, "x")
    without = SourceReferences(base_dir=layout["sources"], environ={})
    with pytest.raises(SourceReferenceError, match="needs a project folder and none was given"):
        without.resolve({"projectPath": "data/x"}, "x")


@pytest.mark.parametrize("pasted", ["sk-live-4f9a8Xq2", "ya29.a0AfH6SMC", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"])
def test_a_secret_pasted_where_a_variable_name_goes_is_not_repeated(layout: dict[str, Path], pasted: str) -> None:
    with pytest.raises(SourceReferenceError, match="is not set") as error:
        _refs(layout).resolve({"env": pasted}, "sources[0].credentials.token")
    assert pasted not in str(error.value) and "never the secret itself" in str(error.value)


def test_a_key_written_twice_is_refused_by_name() -> None:
    with pytest.raises(DuplicateKeyError) as error:
        load_json_strict('{"sources": [{"id": "a", "credentials": {"password": "x", "password": "y"}}]}')
    assert error.value.key == "password"
    assert load_json_strict('{"a": {"b": 1}, "b": 2}') == {"a": {"b": 1}, "b": 2}
