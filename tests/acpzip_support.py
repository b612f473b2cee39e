"""build/acpzip.py loaded as a module (build/ is a folder of scripts, not a package: the name would
shadow PyPA's build), and the zips (and MCP bundles) the tests build once per test run.

A zip build takes 5 to 25 s, most of it deflating: a test asks ``ZipBuilds.get`` for a zip, and the
first to ask builds it while every other test, in any pytest-xdist worker, waits for it and reuses it.
The cache lives in the run's temporary folder, keyed by the build's inputs, so no run sees another
run's zips (every run tests the build code it has).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType

import pytest
from loader import load_file

ROOT = Path(__file__).resolve().parent.parent
# Every zip the tests build carries this time (2026-01-01T00:00:00Z), not the last commit's: the
# timestamp test checks the shared zips instead of building one more.
SOURCE_DATE_EPOCH = "1767225600"


def load_acpzip() -> ModuleType:
    return load_file(ROOT / "build" / "acpzip.py", "acpzip")


@contextlib.contextmanager
def source_date_epoch() -> Iterator[None]:
    previous = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = SOURCE_DATE_EPOCH
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = previous


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder shared by this run's pytest-xdist workers (each has its own basetemp under the run's
    folder), and by no other run."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


class ZipBuilds:
    """Zips built once per test run: by key (connector, Python, platform, exclude-files globs), under
    a lock file, so that concurrent workers build each zip once and never read a half-written one.
    The bridge's MCP bundles likewise, by (connectors, Python, platform), from this run's zips."""

    def __init__(self, acpzip: ModuleType, folder: Path) -> None:
        self.acpzip = acpzip
        self.folder = folder / "acpzip-builds"
        self.folder.mkdir(exist_ok=True)

    def get(self, connector_id: str, python: str, tag: str, exclude_files: Sequence[str] | None = None) -> Path:
        """The zip, built now if no test of this run has built it yet."""
        key = json.dumps([connector_id, python, tag, exclude_files, SOURCE_DATE_EPOCH])
        target = self.acpzip.PLATFORMS[tag]
        return self._once(key, lambda out: self.acpzip.build(connector_id, python, target, out, exclude_files))

    def bundle(self, connector_ids: Sequence[str], python: str, tag: str) -> Path:
        """The bridge's bundle with these connectors, built now (from this run's zips of them) if no
        test of this run has built it yet."""
        zips = {connector_id: self.get(connector_id, python, tag) for connector_id in connector_ids}
        key = json.dumps(["bundle", sorted(connector_ids), python, tag, SOURCE_DATE_EPOCH])
        target = self.acpzip.PLATFORMS[tag]
        return self._once(key, lambda out: self.acpzip.bundle(connector_ids, python, target, out, zips))

    def _once(self, key: str, build: Callable[[Path], Path]) -> Path:
        """What ``build`` writes into the folder it is given, built once per run for ``key``."""
        name = hashlib.sha256(key.encode()).hexdigest()[:16]
        done = self.folder / name
        lock = os.open(self.folder / f"{name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed, also if this process dies
            if not done.is_dir():
                # Built beside its final place and renamed when complete: a build that failed (or a
                # worker that died) leaves no zip that a later test would take for a good one.
                partial = self.folder / f"{name}.partial"
                shutil.rmtree(partial, ignore_errors=True)  # from a worker that was killed while building
                output = io.StringIO()
                try:
                    with source_date_epoch(), contextlib.redirect_stderr(output):
                        build(partial)
                    (partial / "build-output.txt").write_text(output.getvalue(), "utf-8")
                    partial.rename(done)
                finally:
                    sys.stderr.write(output.getvalue())  # shown with the test that built the zip
                    shutil.rmtree(partial, ignore_errors=True)  # what a failed build left
        finally:
            os.close(lock)
        (archive,) = (path for path in done.iterdir() if path.suffix in (".zip", ".mcpb"))
        return archive

    @staticmethod
    def output(archive: Path) -> str:
        """What the build of a zip from ``get`` printed to stderr (its warnings)."""
        return (archive.parent / "build-output.txt").read_text("utf-8")


class PlatformZips(Mapping[str, Path]):
    """Every connector's zip for one platform and Python, by connector id, built when first read."""

    def __init__(self, builds: ZipBuilds, connector_ids: Sequence[str], python: str, tag: str) -> None:
        self.builds, self.ids, self.python, self.tag = builds, list(connector_ids), python, tag

    def __getitem__(self, connector_id: str) -> Path:
        if connector_id not in self.ids:
            raise KeyError(connector_id)
        return self.builds.get(connector_id, self.python, self.tag)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)
