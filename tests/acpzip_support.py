"""build/acpzip.py loaded as a module: build/ is a folder of scripts, not a package (the name would
shadow PyPA's build)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load_acpzip() -> ModuleType:
    if "acpzip" in sys.modules:
        return sys.modules["acpzip"]
    spec = importlib.util.spec_from_file_location("acpzip", ROOT / "build" / "acpzip.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["acpzip"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
