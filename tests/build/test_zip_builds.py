"""tests/acpzip_support.ZipBuilds: two processes (as pytest-xdist workers are) that ask for one zip build it once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# A worker: asks ZipBuilds for one zip, with a stand-in for build/acpzip.py that records each build.
WORKER = """
import sys, time, types
from pathlib import Path

sys.path[:0] = [{tests!r}]
from acpzip_support import ZipBuilds

folder, log, me, other = (Path(arg) for arg in sys.argv[1:5])
fail_first = sys.argv[5] == "fail-first"


def build(connector_id, python, target, out_dir, exclude_files=None):
    with log.open("a") as lines:
        lines.write(f"{{me.name}}\\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    half = out_dir / f"{{connector_id}}-{{python}}-{{target}}.zip"
    if fail_first and len(log.read_text().splitlines()) == 1:
        half.write_bytes(b"half-written")
        raise SystemExit("acpzip: the first build fails")
    deadline = time.monotonic() + 30
    while not other.exists() and time.monotonic() < deadline:  # the other worker is asking now
        time.sleep(0.02)
    time.sleep(0.3)  # and then blocked on the lock
    half.write_bytes(b"PK")


acpzip = types.SimpleNamespace(build=build, PLATFORMS={{"linux": "linux"}})
me.touch()
try:
    print(ZipBuilds(acpzip, folder).get("toy", "3.11", "linux"))
except SystemExit as exc:
    print(exc)
"""


def run_two_workers(tmp_path: Path, mode: str) -> tuple[list[str], list[str]]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(tests=str(TESTS)))
    log = tmp_path / "builds.log"
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), str(log), str(tmp_path / me), str(tmp_path / other), mode],
            stdout=subprocess.PIPE,
            text=True,
        )
        for me, other in (("gw0", "gw1"), ("gw1", "gw0"))
    ]
    outputs = [worker.communicate(timeout=120)[0].strip() for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    return outputs, log.read_text().splitlines()


def test_two_workers_asking_for_one_zip_build_it_once(tmp_path: Path) -> None:
    outputs, builds = run_two_workers(tmp_path, "")
    assert len(builds) == 1
    assert outputs[0] == outputs[1] and outputs[0].endswith("/toy-3.11-linux.zip")
    assert Path(outputs[0]).read_bytes() == b"PK"
    assert Path(outputs[0]).parent.parent == tmp_path / "acpzip-builds"
    assert not list((tmp_path / "acpzip-builds").glob("*.partial"))


def test_a_failed_build_leaves_nothing_and_the_next_worker_builds_again(tmp_path: Path) -> None:
    outputs, builds = run_two_workers(tmp_path, "fail-first")
    assert len(builds) == 2  # the second worker did not take the failed build's leftovers for a zip
    assert "acpzip: the first build fails" in outputs
    (built,) = (output for output in outputs if output.endswith("/toy-3.11-linux.zip"))
    assert Path(built).read_bytes() == b"PK"
    assert not list((tmp_path / "acpzip-builds").glob("*.partial"))
