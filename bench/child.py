"""Baselines that run in their own interpreter, so that their peak memory is theirs alone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_child(command: list[str], scratch_file: Path, stdin: str | None = None) -> dict[str, Any]:
    """Run ``command`` from the repository root and return the JSON of its last output line.

    ``scratch_file`` is where the child dumps the rows it fetched; it is removed afterwards.
    """
    done = subprocess.run(command, input=stdin, cwd=ROOT, capture_output=True, text=True, check=False, timeout=3600)
    scratch_file.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"baseline failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
