"""build/acpzip.py loaded as a module: build/ is a folder of scripts, not a package (the name would
shadow PyPA's build)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from loader import load_file

ROOT = Path(__file__).resolve().parent.parent


def load_acpzip() -> ModuleType:
    return load_file(ROOT / "build" / "acpzip.py", "acpzip")
