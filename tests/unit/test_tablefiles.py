"""``table_uri`` files (spec 8.5): random names, owner-only permissions, TTL sweep. shared/_tablefiles.py."""

from __future__ import annotations

import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared import _tablefiles as tablefiles
from shared._tablefiles import DEFAULT_TTL_S, TableFiles

NAME_RE = re.compile(r"^unit-[0-9a-f]{32}\.json$")


def make_old(path: Path, age_s: float) -> None:
    past = time.time() - age_s
    os.utime(path, (past, past))


@pytest.fixture
def files(tmp_path: Path) -> TableFiles:
    return TableFiles("unit", str(tmp_path / "tables"), ttl_s=100)


# -- directory ------------------------------------------------------------------------------


def test_configured_directory_is_created_lazily(tmp_path):
    target = tmp_path / "a" / "b"
    table_files = TableFiles("unit", str(target))
    assert not target.exists()
    assert table_files.directory == target.resolve()
    assert target.is_dir()


def test_configured_directory_is_private_when_created(tmp_path):
    target = tmp_path / "private"
    TableFiles("unit", str(target)).directory  # noqa: B018 - the property creates it
    assert stat.S_IMODE(target.stat().st_mode) & 0o077 == 0


def test_existing_configured_directory_is_reused(tmp_path):
    target = tmp_path / "existing"
    target.mkdir()
    marker = target / "keep.txt"
    marker.write_text("x")
    assert TableFiles("unit", str(target)).directory == target.resolve()
    assert marker.read_text() == "x"


def test_default_directory_is_a_private_acp_results_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    directory = TableFiles("unit").directory
    assert directory.parent == tmp_path.resolve()
    assert directory.name.startswith("acp-results-")
    assert stat.S_IMODE(directory.stat().st_mode) & 0o077 == 0


def test_directory_is_stable_across_calls(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    table_files = TableFiles("unit")
    assert table_files.directory == table_files.directory
    assert len(list(tmp_path.iterdir())) == 1


# -- from_environment -----------------------------------------------------------------------


def test_from_environment_reads_dir_and_ttl(tmp_path, monkeypatch):
    monkeypatch.setenv("ACP_TMP_DIR", str(tmp_path / "env-dir"))
    monkeypatch.setenv("ACP_TABLE_TTL_S", "12.5")
    table_files = TableFiles.from_environment("sqlite")
    assert table_files.prefix == "sqlite"
    assert table_files.ttl_s == 12.5
    assert table_files.directory == (tmp_path / "env-dir").resolve()


def test_from_environment_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("ACP_TMP_DIR", raising=False)
    monkeypatch.delenv("ACP_TABLE_TTL_S", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    table_files = TableFiles.from_environment("sqlite")
    assert table_files.ttl_s == DEFAULT_TTL_S
    assert table_files.directory.name.startswith("acp-results-")


def test_from_environment_empty_dir_means_default(tmp_path, monkeypatch):
    monkeypatch.setenv("ACP_TMP_DIR", "")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert TableFiles.from_environment("sqlite").directory.name.startswith("acp-results-")


# -- create ---------------------------------------------------------------------------------


def test_create_returns_json_file_in_directory_with_random_name(files):
    path, handle = files.create()
    with handle:
        handle.write(b"[]")
    assert path.parent == files.directory
    assert NAME_RE.match(path.name)
    assert path.read_bytes() == b"[]"


def test_create_gives_owner_only_permissions(files):
    """Spec 8.5 (core rule): the file is readable and writable by its owner only."""
    path, handle = files.create()
    handle.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_create_names_are_unique(files):
    paths = set()
    for _ in range(20):
        path, handle = files.create()
        handle.close()
        paths.add(path)
    assert len(paths) == 20


def test_create_never_overwrites_an_existing_file(files, monkeypatch):
    monkeypatch.setattr(tablefiles.secrets, "token_hex", lambda n: "0" * (2 * n))
    path, handle = files.create()
    with handle:
        handle.write(b"first")
    with pytest.raises(FileExistsError):
        files.create()
    assert path.read_bytes() == b"first"


def test_create_handle_is_binary_and_writable(files):
    path, handle = files.create()
    with handle:
        assert not handle.closed
        handle.write("ñ".encode())
    assert path.read_text(encoding="utf-8") == "ñ"


def test_create_sweeps_expired_files_first(files):
    old = files.directory / "unit-old.json"
    old.write_text("[]")
    make_old(old, files.ttl_s + 50)
    path, handle = files.create()
    handle.close()
    assert not old.exists()
    assert path.exists()


def test_artifacts_are_owner_only_and_swept_with_the_tables(files):
    """spec 8.10: a chart lives with the table files and expires after the same TTL."""
    path, handle = files.create(".png")
    with handle:
        handle.write(b"\x89PNG")
    assert re.fullmatch(r"unit-[0-9a-f]{32}\.png", path.name) and path.parent == files.directory
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    make_old(path, files.ttl_s + 10)
    assert files.sweep(force=True) == 1 and not path.exists()


def test_create_refuses_a_suffix_the_sweep_would_not_see(files):
    with pytest.raises(ValueError, match="unsupported file suffix"):
        files.create(".txt")
    assert not any(files.directory.iterdir())


# -- sweep ----------------------------------------------------------------------------------


def test_sweep_removes_only_expired_files_of_this_prefix(files):
    directory = files.directory
    expired = directory / "unit-expired.json"
    fresh = directory / "unit-fresh.json"
    other_prefix = directory / "other-expired.json"
    similar_prefix = directory / "unitx-expired.json"
    other_suffix = directory / "unit-expired.txt"
    for path in (expired, fresh, other_prefix, similar_prefix, other_suffix):
        path.write_text("[]")
    for path in (expired, other_prefix, similar_prefix, other_suffix):
        make_old(path, files.ttl_s + 10)

    assert files.sweep(force=True) == 1
    assert not expired.exists()
    assert fresh.exists()
    assert other_prefix.exists()
    assert similar_prefix.exists()
    assert other_suffix.exists()


def test_sweep_counts_every_removed_file(files):
    for i in range(3):
        path = files.directory / f"unit-{i}.json"
        path.write_text("[]")
        make_old(path, files.ttl_s * 2)
    assert files.sweep(force=True) == 3
    assert list(files.directory.iterdir()) == []


def test_sweep_is_throttled_unless_forced(files):
    assert files.sweep() == 0  # first sweep runs (nothing to remove)
    late = files.directory / "unit-late.json"
    late.write_text("[]")
    make_old(late, files.ttl_s + 10)
    assert files.sweep() == 0
    assert late.exists()
    assert files.sweep(force=True) == 1
    assert not late.exists()


def test_first_unforced_sweep_runs(files):
    old = files.directory / "unit-old.json"
    old.write_text("[]")
    make_old(old, files.ttl_s + 10)
    assert files.sweep() == 1
    assert not old.exists()


def test_sweep_survives_a_missing_directory(files):
    directory = files.directory
    directory.rmdir()
    assert files.sweep(force=True) == 0


def _wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_expired_files_go_without_a_new_extraction(tmp_path):
    """The sweep runs on a timer: a file expires even when create() is never called again."""
    files = TableFiles("unit", str(tmp_path), ttl_s=0.2)
    path, handle = files.create()
    handle.close()
    assert _wait_until(lambda: not path.exists())


def _sweepers(files: TableFiles) -> list[threading.Thread]:
    """The live threads sweeping ``files``: other threads of this process (servers that other tests ran in
    process, idle worker threads) come and go on their own schedule, so the count of all threads proves nothing."""
    return [
        t
        for t in threading.enumerate()
        if isinstance(t, threading.Timer) and getattr(t.function, "__self__", None) is files
    ]


def test_background_sweep_stops_when_no_file_remains(tmp_path):
    files = TableFiles("unit", str(tmp_path), ttl_s=0.2)
    assert _sweepers(files) == []
    path, handle = files.create()
    handle.close()
    assert len(_sweepers(files)) == 1
    assert _wait_until(lambda: not path.exists() and _sweepers(files) == [])
