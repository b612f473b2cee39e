"""Build, verify and lock the distributable connector zips (spec 13) and the ACP Bridge's MCP bundle.

    python build/acpzip.py lock [ID ... | bridge]
    python build/acpzip.py build [ID ...] [--platform TAG] [--python 3.11] [--out dist]
    python build/acpzip.py bundle [ID ...] [--platform TAG] [--python 3.11] [--out dist] [--zips dist]
    python build/acpzip.py verify dist/*.zip dist/*.mcpb [--python-exe PATH]

``build`` writes ``dist/<id>-<version>-<cpython tag>-<platform>.zip``: one folder ``<id>/`` with
the generated ``acp.json``, ``launch.py``, the connector's README, icon and skills, the licences
and an SBOM, and ``lib/`` holding the connector, the shared core and every dependency, installed
from ``build/locks/<id>.txt`` (pinned, with hashes) as wheels for the target platform. The same
sources and lock give a byte-identical zip. ``verify`` checks a zip the way a host installs it
(``shared.install``), then starts it twice and checks that it wrote nothing into its folder.

``bundle`` writes ``dist/acp-bridge-<version>-<cpython tag>-<platform>.mcpb``: the ACP Bridge
(spec 16) as an MCP Bundle (MCPB, github.com/modelcontextprotocol/mcpb, manifest spec 0.3), with the
connectors named (default: databases and prediction). At its root:

- ``manifest.json``: ``server.type`` python, and an ``mcp_config`` that runs ``launch.py`` with the
  platform's Python, ``${__dirname}`` as ``--root`` and two settings the host asks for,
  ``project_folder`` (a directory) as ``--project`` and ``sources_file`` as ``--sources``. No
  credential is ever a setting: credentials stay in sources.json. The version is pyproject.toml's
  (strict semver); ``compatibility`` names the one platform and Python the bundle is for.
- ``launch.py``: build/launch.py, running ``python -m bridge`` from ``lib/``. It drops an option
  whose value the host left as an unfilled ``${user_config.*}``, so the bridge's default applies.
- ``lib/``: the ``bridge`` and ``shared`` packages as they are in this checkout, and the
  dependencies pinned in ``build/locks/bridge.txt`` (the ``bridge`` extra and the core).
- ``acps/<id>/``: each connector's zip, as ``build`` makes it for the same target, unpacked
  (``--zips DIR`` takes the zips from DIR instead of building them again).
- ``sources.example.json`` (``bridge/sources.example.json``, or a minimal one listing the
  connectors), a README, the licences and an SBOM of ``lib/``.

One bundle per OS, architecture and CPython minor version; the same inputs give a byte-identical
bundle. ``verify`` takes a ``.mcpb`` as a host would: ``shared.install.check_archive``'s refusals
(path escapes, symlinks, zip64...), the manifest (MCPB fields, strict semver, ``mcp_config``, the
entry point, one platform and Python, no ``sensitive`` setting or credential-like key), every
``acps/<id>/`` by the zip rules; then it unpacks it, starts each connector from its folder, and
starts the bridge exactly as ``mcp_config`` says (``${__dirname}`` and ``${user_config.*}``
substituted as MCPB hosts do, with a temporary project folder) as a plain MCP client, which must
list ``acp_sources``, ``acp_datasets`` and ``acp_query`` and write nothing into its folder.

Connectors are found by their ``acp.json`` under ``connectors/``: a new one needs no change here,
only its lock (``lock``). Building needs ``uv`` (``pip install uv``), which resolves and installs
wheels for another platform correctly (environment markers included).

``[tool.acpzip]`` in ``pyproject.toml`` holds the build settings, checked on every command (an
unknown key or connector id fails the command):

- ``pythons``: the CPython minor versions released.
- In the two tables below, ``<id>`` is a connector id, or ``bridge`` for the bundle's ``lib/``.
- ``[tool.acpzip.exclude]``, ``<id> = ["package", ...]``: distributions left out of the lock, and so
  of the zip, because the connector never imports them.
- ``[tool.acpzip.exclude-files]``, ``<id> = ["glob", "!glob", ...]``: files left out of the vendored
  ``lib/``, for data a distribution ships but the connector never reads, for example
  ``"googleapiclient/discovery_cache/documents/*.json"``. Each glob is a ``/``-separated path
  relative to ``lib/`` (the site-packages root): ``*`` and ``?`` match within one path segment,
  ``[...]`` one character of a set (``[!...]`` one outside it), a whole ``**`` segment any number of
  segments, and a glob that matches a folder matches everything in it.
  ``!glob`` re-includes what an earlier glob left out; the last glob that matches a file decides.
  The globs apply after the installed tree is normalized (no top-level tests/, bytecode or records),
  before the connector and the core are copied in; ``*.dist-info`` folders (licences, metadata)
  always ship. A glob that changes nothing (it matches no file, or only files already decided) is
  printed as a warning, so a stale rule is noticed when a dependency changes.
  ``THIRD_PARTY_NOTICES.md`` and the SBOM say how many files of each distribution were left out and
  by which globs.
- ``[tool.acpzip.verify-imports]``, ``<id> = ["module", ...]``: the modules the connector imports
  lazily (its client libraries), which starting the server does not load. ``verify`` imports each
  one in the installed folder, on its ``lib/`` alone (the launcher's own path set-up), and fails if
  one cannot be imported or comes from anywhere else: a module missing from the zip (a dependency
  left out, a file excluded that it needs) fails the build rather than a user's first call. For the
  bundle, ``bridge`` names the bridge's own, checked in the bundle's ``lib/``, and each connector
  of ``acps/`` is checked by its own entry.
"""

from __future__ import annotations

import argparse
import csv
import email.message
import email.parser
import hashlib
import io
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import tomllib
import uuid
import zipfile
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for shared.install when run as a script

from shared.install import (  # noqa: E402
    InstallError,
    Manifest,
    check_archive,
    inspect_zip,
    install,
    parse_manifest,
    probe,
    unpack,
    unpack_archive,
)

CONNECTORS_DIR = ROOT / "connectors"
BRIDGE = "bridge"  # the bridge's package, extra, lock (build/locks/bridge.txt) and [tool.acpzip] key
BUNDLE_NAME = "acp-bridge"  # the .mcpb's name and the manifest's
BUNDLE_CONNECTORS = ("databases", "prediction")  # what a bundle carries by default (spec 16.2)
LOCKS_DIR = ROOT / "build" / "locks"
LAUNCHER = ROOT / "build" / "launch.py"
ZIP_EPOCH_FLOOR = 315_532_800  # 1980-01-01, the earliest time a zip entry can hold
MAX_ICON_BYTES = 256 * 1024
SIZE_CAP_BYTES = 25 * 1024 * 1024
SKILL_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MANIFEST_FIELDS = ("acp_version", "id", "name", "version", "publisher", "description", "icon", "transport", "http")
# What a server folder never carries (13.1.1 and reproducibility): compiled bytecode, scripts with
# absolute shebangs, installer records with machine-specific paths, and test suites.
FORBIDDEN_PARTS = {"__pycache__", "tests"}
FORBIDDEN_SUFFIXES = (".pyc", ".pyo")
DIST_INFO_DROPPED = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json", "uv_build.json"}


@dataclass(frozen=True)
class Platform:
    """A target: the wheel tag in the zip's name, uv's name for it, and what the launcher checks."""

    tag: str
    uv: str
    sys_platform: str
    machines: tuple[str, ...]
    python_command: str
    environ: tuple[tuple[str, str], ...] = ()
    glibc: tuple[int, int] | None = None


PLATFORMS = {
    p.tag: p
    for p in (
        # glibc 2.28+ (Debian 10, Ubuntu 20.04, RHEL 8 and later)
        Platform(
            "manylinux_2_28_x86_64", "x86_64-manylinux_2_28", "linux", ("x86_64", "amd64"), "python3", glibc=(2, 28)
        ),
        Platform(
            "manylinux_2_28_aarch64", "aarch64-manylinux_2_28", "linux", ("aarch64", "arm64"), "python3", glibc=(2, 28)
        ),
        Platform(
            "macosx_12_0_arm64",
            "aarch64-apple-darwin",
            "darwin",
            ("arm64", "aarch64"),
            "python3",
            (("MACOSX_DEPLOYMENT_TARGET", "12.0"),),
        ),
        Platform("win_amd64", "x86_64-pc-windows-msvc", "win32", ("amd64", "x86_64"), "python"),
    )
}
# Notices that a package's metadata does not carry. Keyed by distribution name.
EXTRA_NOTICES = {
    "psycopg": (
        "LGPL-3.0-only. Shipped unmodified, as separate files under lib/psycopg, which you may replace "
        "with another build of the same version (LGPL-3.0 section 4). Source: https://github.com/psycopg/psycopg"
    ),
    "psycopg-binary": (
        "LGPL-3.0-only, like psycopg; lib/psycopg_binary may be replaced the same way. The wheel bundles "
        "libpq (PostgreSQL licence), OpenSSL (Apache-2.0) and the other shared libraries listed below."
    ),
    "cryptography": "Its compiled module links OpenSSL statically (Apache-2.0; https://www.openssl.org/source/license.html).",
    "duckdb": "MIT. The compiled module includes DuckDB's third-party code (see https://github.com/duckdb/duckdb).",
}


def fail(message: str) -> None:
    raise SystemExit(f"acpzip: {message}")


# -- connectors and their locks --------------------------------------------------------------


def connector_ids() -> list[str]:
    """Every connector, found by its acp.json (a new connector is built without touching this file)."""
    return sorted(json.loads(p.read_text("utf-8-sig"))["id"] for p in CONNECTORS_DIR.glob("*/acp.json"))


def source_manifest(connector_id: str) -> dict[str, Any]:
    path = CONNECTORS_DIR / connector_id / "acp.json"
    if not path.is_file():
        fail(f"no connector {connector_id!r}; known: {', '.join(connector_ids())}")
    manifest: dict[str, Any] = json.loads(path.read_text("utf-8-sig"))
    return manifest


def lock_targets() -> list[str]:
    """What has a lock in build/locks/: every connector's zip, and the bridge's bundle (``bridge``)."""
    return [*connector_ids(), BRIDGE]


def build_settings() -> dict[str, Any]:
    """``[tool.acpzip]`` from pyproject.toml, checked (see ``check_settings``)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    settings: dict[str, Any] = data.get("tool", {}).get("acpzip", {})
    check_settings(settings, lock_targets())
    return settings


SETTINGS_KEYS = ("pythons", "exclude", "exclude-files", "verify-imports")
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")


def check_settings(settings: Mapping[str, Any], known_ids: Sequence[str]) -> None:
    """Fail on what would otherwise be ignored in silence: an unknown key, a connector that does not
    exist (a typo, or one that was renamed), a value that is not a list of strings, a bad glob."""
    unknown = sorted(set(settings) - set(SETTINGS_KEYS))
    if unknown:
        fail(f"[tool.acpzip] has unknown key(s) {', '.join(unknown)}; known: {', '.join(SETTINGS_KEYS)}")
    for table in ("exclude", "exclude-files", "verify-imports"):
        entries = settings.get(table, {})
        if not isinstance(entries, dict):
            fail(f"[tool.acpzip.{table}] must be a table of <connector id> = [...]")
        for connector_id, values in entries.items():
            if connector_id not in known_ids:
                fail(
                    f"[tool.acpzip.{table}] names {connector_id!r}, which is not a connector; "
                    f"known: {', '.join(known_ids)}"
                )
            if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
                fail(f"[tool.acpzip.{table}] {connector_id} must be a list of strings")
            if table == "exclude-files":
                file_rules(values, f"[tool.acpzip.exclude-files] {connector_id}")
            bad_modules = [value for value in values if table == "verify-imports" and not MODULE_NAME.match(value)]
            if bad_modules:
                fail(f"[tool.acpzip.verify-imports] {connector_id}: {bad_modules[0]!r} is not a dotted module name")


def uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        fail("building needs uv: pip install uv (or pip install -e '.[dev]')")
    return found


def lock_path(name: str) -> Path:
    return LOCKS_DIR / f"{name}.txt"


def lock(name: str) -> Path:
    """Resolve the core dependencies plus the extra ``name`` (a connector id, or ``bridge`` for the
    bridge's bundle) for every platform and Python it ships for, pinned with hashes."""
    settings = build_settings()
    if name not in lock_targets():
        fail(f"no connector {name!r}; known: {', '.join(lock_targets())}")
    excluded = settings.get("exclude", {}).get(name, [])
    oldest = min(settings.get("pythons", ["3.11"]), key=lambda v: tuple(map(int, v.split("."))))
    target = lock_path(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    command = [
        uv(), "pip", "compile", str(ROOT / "pyproject.toml"), "--no-config", "--quiet",
        "--extra", name, "--universal", "--python-version", oldest, "--generate-hashes",
        "--no-header", "--no-annotate", "--output-file", str(target),
    ]  # fmt: skip
    for package in excluded:
        command += ["--no-emit-package", package]
    subprocess.run(command, check=True, cwd=ROOT)
    body = target.read_text("utf-8")
    what = "the ACP Bridge's bundle (lib/)" if name == BRIDGE else f"the {name} connector zip"
    header = f"# Pinned dependencies of {what}, with hashes.\n# Regenerate with: python build/acpzip.py lock {name}\n"
    if excluded:
        header += f"# Left out on purpose (see [tool.acpzip.exclude] in pyproject.toml): {', '.join(excluded)}\n"
    target.write_text(header + body, "utf-8")
    return target


# -- building --------------------------------------------------------------------------------


def host_platform() -> Platform:
    machine = platform.machine().lower()
    for candidate in PLATFORMS.values():
        if candidate.sys_platform == sys.platform and machine in candidate.machines:
            return candidate
    fail(f"no zip target for this machine ({sys.platform}, {machine}); pass --platform ({', '.join(PLATFORMS)})")
    raise AssertionError  # unreachable: fail() raises


def source_date_epoch() -> int:
    """SOURCE_DATE_EPOCH, else the last commit's time: the zip's timestamps do not depend on the clock."""
    if value := os.environ.get("SOURCE_DATE_EPOCH"):
        return max(int(value), ZIP_EPOCH_FLOOR)
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        return max(int(out.strip()), ZIP_EPOCH_FLOOR)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return ZIP_EPOCH_FLOOR


def zip_name(connector_id: str, version: str, python: str, target: Platform) -> str:
    return f"{connector_id}-{version}-cp{python.replace('.', '')}-{target.tag}.zip"


def _copy_package(source: Path, dest: Path, leave_out: Iterable[str] = ()) -> None:
    """Copy a package of this checkout without bytecode or tests; ``leave_out`` names entries of
    its top folder that do not go into ``lib/``."""
    top = set(leave_out)

    def ignore(directory: str, names: list[str]) -> set[str]:
        dropped = {n for n in names if n in FORBIDDEN_PARTS or n.endswith(FORBIDDEN_SUFFIXES)}
        return dropped | (top & set(names) if Path(directory) == source else set())

    shutil.copytree(source, dest, ignore=ignore)


def _copy_sources(lib: Path, connector_id: str) -> None:
    """The shared core and the connector's Python code; its acp.json, README, icon and skills go on top."""
    _copy_package(ROOT / "shared", lib / "shared")
    (lib / "connectors").mkdir()
    shutil.copy2(CONNECTORS_DIR / "__init__.py", lib / "connectors" / "__init__.py")
    _copy_package(
        CONNECTORS_DIR / connector_id,
        lib / "connectors" / connector_id,
        leave_out=("acp.json", "README.md", "icon.svg", "skills"),
    )


def _vendor(lib: Path, connector_id: str, python: str, target: Platform) -> None:
    lock_file = lock_path(connector_id)
    if not lock_file.is_file():
        fail(f"no lock for {connector_id}: run python build/acpzip.py lock {connector_id}")
    command = [
        uv(), "pip", "install", "--no-config", "--quiet", "--target", str(lib),
        "--python-platform", target.uv, "--python-version", python,
        "--no-deps", "--require-hashes", "--no-build", "--link-mode", "copy", "-r", str(lock_file),
    ]  # fmt: skip
    env = {**os.environ, **dict(target.environ)}
    result = subprocess.run(command, check=False, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"installing the {connector_id} dependencies for {target.tag}/cp{python} failed:\n{result.stderr}")


def _normalize_vendored(lib: Path) -> None:
    """Make an installed tree reproducible and self-contained: no scripts, bytecode, records or tests."""
    shutil.rmtree(lib / "bin", ignore_errors=True)  # console scripts carry the build machine's shebang
    (lib / ".lock").unlink(missing_ok=True)  # uv's lock on the --target folder while it installed
    for path in sorted(lib.rglob("*"), reverse=True):
        relative = path.relative_to(lib)
        if path.is_dir() and (
            path.name == "__pycache__" or (path.name == "tests" and len(relative.parts) == 2)
        ):  # a vendored package's own test suite
            shutil.rmtree(path)
        elif path.is_file() and (
            path.suffix in FORBIDDEN_SUFFIXES
            or (path.parent.name.endswith(".dist-info") and path.name in DIST_INFO_DROPPED)
        ):
            path.unlink()


@dataclass(frozen=True)
class FileRule:
    """One ``[tool.acpzip.exclude-files]`` glob: ``keep`` for a ``!glob`` that re-includes."""

    text: str
    keep: bool
    regex: re.Pattern[str]


def _segment_regex(segment: str, glob: str, where: str) -> str:
    """One path segment of a glob: ``*`` and ``?`` never cross a ``/``."""
    out, index = [], 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            start = index + 1
            negated = segment.startswith("!", start)
            start += negated
            end = segment.find("]", start + 1)  # a "]" first in the set belongs to it, as in fnmatch
            if end < 0:
                fail(f"{where}: {glob!r} has a '[' without its ']'")
            members = "".join(c if c == "-" else re.escape(c) for c in segment[start:end])
            out.append(f"[^/{members}]" if negated else f"[{members}]")
            index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def file_rules(globs: Sequence[str], where: str) -> list[FileRule]:
    """Compile exclude-files globs (syntax in the module docstring); a malformed one fails the build."""
    rules = []
    for text in globs:
        keep = text.startswith("!")
        pattern = text[1:] if keep else text
        segments = pattern.split("/")
        if not pattern or pattern.startswith("/") or "\\" in pattern:
            fail(f"{where}: {text!r} must be a path relative to lib/, with / between folders")
        if any(segment in ("", ".", "..") for segment in segments):
            fail(f"{where}: {text!r} has an empty, '.' or '..' path segment")
        if any("**" in segment and segment != "**" for segment in segments):
            fail(f"{where}: {text!r}: ** matches whole path segments only (write a/**/b, not a**b)")
        body = ""
        for index, segment in enumerate(segments):
            last = index == len(segments) - 1
            if segment == "**":
                body += ".*" if last else "(?:[^/]+/)*"
            else:
                body += _segment_regex(segment, text, where) + ("" if last else "/")
        # A glob that matches a folder matches everything in it.
        rules.append(FileRule(text, keep, re.compile(f"{body}(?:/.*)?", re.S)))
    return rules


def leave_out_files(lib: Path, rules: Sequence[FileRule], connector_id: str) -> list[str]:
    """Delete the files of ``lib`` that the rules leave out and return their paths (relative, sorted).

    The last rule that matches a file decides. A rule that changes nothing is printed as a warning."""
    files = sorted(p.relative_to(lib).as_posix() for p in lib.rglob("*") if not p.is_dir())
    matched = [False] * len(rules)
    effective = [False] * len(rules)
    left_out = []
    for name in files:
        excluded = False
        for index, rule in enumerate(rules):
            if rule.regex.fullmatch(name):
                matched[index] = True
                if rule.keep == excluded:  # a !glob matters for a file left out; a glob for one kept
                    effective[index] = True
                    excluded = not rule.keep
        if excluded:
            left_out.append(name)
    for rule, was_matched, was_effective in zip(rules, matched, effective, strict=True):
        if not was_effective:
            why = (
                "matches no file in lib/"
                if not was_matched
                else "re-includes nothing: no glob before it leaves out a file it matches"
                if rule.keep
                else "matches only files that the globs before it already leave out"
            )
            print(
                f"acpzip: warning: {connector_id}: [tool.acpzip.exclude-files] {rule.text!r} {why}; "
                "remove or update it",
                file=sys.stderr,
            )
    protected = [name for name in left_out if name.split("/", 1)[0].endswith(".dist-info")]
    if protected:
        fail(
            f"{connector_id}: [tool.acpzip.exclude-files] would leave out {', '.join(protected[:5])}: "
            "*.dist-info folders always ship (the notices and the SBOM read their licences and metadata)"
        )
    size = 0
    for name in left_out:
        path = lib / name
        size += path.lstat().st_size
        path.unlink()
    if left_out:
        print(
            f"acpzip: {connector_id}: [tool.acpzip.exclude-files] left out {len(left_out)} files ({size / 1e6:.1f} MB)",
            file=sys.stderr,
        )
    return left_out


def _record_owners(lib: Path) -> dict[str, str]:
    """Which ``*.dist-info`` folder installed each file of ``lib``, from the RECORDs (read before
    normalizing drops them), so the notices can say whose files were left out."""
    owners = {}
    for record in sorted(lib.glob("*.dist-info/RECORD")):
        with record.open(encoding="utf-8", newline="") as rows:
            for row in csv.reader(rows):
                if row:
                    owners[row[0]] = record.parent.name
    return owners


def _generated_manifest(manifest: dict[str, Any], target: Platform) -> dict[str, Any]:
    http_args = list((manifest.get("http") or {}).get("args", []))
    port = http_args[http_args.index("--port") + 1] if "--port" in http_args else None
    generated = {key: manifest[key] for key in MANIFEST_FIELDS if key in manifest}
    generated["transport"] = {"type": "stdio", "command": target.python_command, "args": ["launch.py"]}
    generated["http"] = {"args": ["launch.py", "--http", *(["--port", port] if port else [])]}
    return generated


def _launcher(name: str, module: str, suffix: str, python: str, target: Platform) -> str:
    """build/launch.py with its constants filled in: ``module`` runs as ``__main__`` from ``lib/``."""
    values: dict[str, object] = {
        "NAME": name,
        "MODULE": module,
        "ARCHIVE_SUFFIX": suffix,
        "PYTHON": tuple(int(part) for part in python.split(".")),
        "PLATFORM": target.tag,
        "SYS_PLATFORM": target.sys_platform,
        "MACHINES": target.machines,
        "GLIBC": target.glibc,
    }
    lines = LAUNCHER.read_text("utf-8").splitlines(keepends=True)
    for index, line in enumerate(lines):
        name = line.split(" = ", 1)[0]
        if name in values:
            lines[index] = f"{name} = {values.pop(name)!r}\n"
    if values:
        fail(f"build/launch.py lost its {', '.join(values)} line(s)")
    return "".join(lines)


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    license: str
    license_files: tuple[str, ...]
    bundled_libraries: tuple[str, ...]
    files_left_out: int = 0  # by [tool.acpzip.exclude-files]


def _license_of(metadata: email.message.Message) -> str:
    if expression := metadata.get("License-Expression"):
        return str(expression)
    declared = (metadata.get("License") or "").strip()
    if declared and "\n" not in declared and len(declared) < 100:
        return declared
    classifiers = [c.split("::")[-1].strip() for c in metadata.get_all("Classifier") or [] if c.startswith("License")]
    return " / ".join(classifiers) or "see the licence files"


def _distributions(lib: Path, left_out: Mapping[str, int]) -> list[Distribution]:
    """The vendored distributions; ``left_out`` counts the files left out of each, by dist-info folder."""
    parser = email.parser.Parser()
    found = []
    for info in sorted(lib.glob("*.dist-info")):
        metadata = parser.parsestr((info / "METADATA").read_text("utf-8", errors="replace"), headersonly=True)
        name = str(metadata["Name"])
        files = sorted(
            str(p.relative_to(lib.parent).as_posix())
            for p in info.rglob("*")
            if p.is_file() and re.match(r"(?i)(licen[cs]e|copying|notice|authors)", p.name)
        )
        stem = name.replace("-", "_").lower()
        # auditwheel and delvewheel put bundled libraries in <package>.libs, delocate in <package>/.dylibs
        bundled = sorted(
            p.name for d in (lib / f"{stem}.libs", lib / stem / ".dylibs") if d.is_dir() for p in d.iterdir()
        )
        found.append(
            Distribution(
                name,
                str(metadata["Version"]),
                _license_of(metadata),
                tuple(files),
                tuple(bundled),
                left_out.get(info.name, 0),
            )
        )
    return found


def _notices(
    name: str, distributions: Sequence[Distribution], excluded: Sequence[str], file_globs: Sequence[str]
) -> str:
    """THIRD_PARTY_NOTICES.md of a connector's zip, or of the bridge's bundle (``name`` ``bridge``)."""
    left_out = sum(dist.files_left_out for dist in distributions)
    bridge = name == BRIDGE
    who = "the bridge" if bridge else "the connector"
    lines = [
        "# Third-party notices: the ACP Bridge" if bridge else f"# Third-party notices: {name} connector",
        "",
        "This folder vendors the Python packages below in `lib/`, unmodified, as their wheels install them"
        + (f", less data files {who} never reads (listed below)." if left_out else "."),
        f"{who.capitalize()}'s own code (`lib/{'bridge' if bridge else 'connectors'}`, `lib/shared`) is "
        "Apache-2.0: see `LICENSE`.",
        "",
    ]
    if bridge:
        lines += ["Each connector in `acps/<id>/` carries its own `THIRD_PARTY_NOTICES.md` and SBOM.", ""]
    if excluded:
        lines += [f"Left out on purpose ({who} does not import them): {', '.join(excluded)}.", ""]
    if left_out:
        globs = ", ".join(f"`{glob}`" for glob in file_globs)
        lines += [
            f"Files left out on purpose ({left_out} in all, {who} never reads them; a glob with `!` "
            f"re-includes): {globs}. Each package's licence files and metadata ship in full.",
            "",
        ]
    for dist in distributions:
        lines.append(f"## {dist.name} {dist.version}")
        lines.append("")
        lines.append(f"- Licence: {dist.license}")
        key = dist.name.lower().replace("_", "-")
        if key in EXTRA_NOTICES:
            lines.append(f"- Note: {EXTRA_NOTICES[key]}")
        for file in dist.license_files:
            lines.append(f"- Licence text: `{file}`")
        if dist.bundled_libraries:
            lines.append(f"- Bundled shared libraries: {', '.join(dist.bundled_libraries)}")
        if dist.files_left_out:
            lines.append(f"- Files left out: {dist.files_left_out}")
        lines.append("")
    return "\n".join(lines)


def _sbom(
    manifest: Mapping[str, Any],
    distributions: Sequence[Distribution],
    lock_digest: str,
    epoch: int,
    name: str,
    file_globs: Sequence[str],
    kind: str = "acp-connector",
) -> str:
    """A CycloneDX 1.6 SBOM; its serial number and timestamp derive from the inputs, not the clock.
    ``manifest`` gives the ``id``, ``version`` and ``description`` of what ships, ``kind`` its ref's prefix."""
    app_ref = f"{kind}:{manifest['id']}@{manifest['version']}"
    components = [
        {
            "type": "library",
            "bom-ref": f"pkg:pypi/{d.name.lower()}@{d.version}",
            "name": d.name,
            "version": d.version,
            "purl": f"pkg:pypi/{d.name.lower()}@{d.version}",
            "licenses": [{"expression": d.license}]
            if re.fullmatch(r"[A-Za-z0-9.+\- ()]+", d.license) and " / " not in d.license
            else [{"license": {"name": d.license}}],
            **(
                {"properties": [{"name": "acp:files-left-out", "value": str(d.files_left_out)}]}
                if d.files_left_out
                else {}
            ),
        }
        for d in distributions
    ]
    properties = [{"name": "acp:lock-sha256", "value": lock_digest}]
    inputs = f"{name}#{lock_digest}"
    if file_globs:  # the same lock with other globs is another bill of materials
        properties.append({"name": "acp:exclude-files", "value": json.dumps(list(file_globs))})
        inputs += f"#{json.dumps(list(file_globs))}"
    document = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, inputs)}",
        "version": 1,
        "metadata": {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)),
            "tools": {"components": [{"type": "application", "name": "acpzip"}]},
            "component": {
                "type": "application",
                "bom-ref": app_ref,
                "name": manifest["id"],
                "version": manifest["version"],
                "description": manifest.get("description", ""),
                "licenses": [{"license": {"id": "Apache-2.0"}}],
            },
            "properties": properties,
        },
        "components": components,
        "dependencies": [{"ref": app_ref, "dependsOn": [c["bom-ref"] for c in components]}],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def write_zip(folder: Path, out: Path, prefix: str, epoch: int) -> None:
    """Deterministic zip: sorted entries, one timestamp, fixed permissions, deflate, never zip64.
    Every entry goes under ``<prefix>/``, or at the root when ``prefix`` is empty (an MCP bundle)."""
    stamp = time.gmtime(epoch)[:6]
    files = sorted((p.relative_to(folder).as_posix(), p) for p in folder.rglob("*") if p.is_file())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, allowZip64=False) as zf:
        for relative, path in files:
            info = zipfile.ZipInfo(f"{prefix}/{relative}" if prefix else relative, date_time=stamp)
            info.create_system = 3  # Unix, so the permissions below are read
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            # Level 6, zlib's default: level 9 took three times as long (13.0 s against 4.2 s for the
            # databases zip, most of it DuckDB's library) for a zip 0.6% smaller.
            zf.writestr(info, path.read_bytes(), compresslevel=6)
    out.write_bytes(buffer.getvalue())


def build(
    connector_id: str, python: str, target: Platform, out_dir: Path, exclude_files: Sequence[str] | None = None
) -> Path:
    """Build one zip into ``out_dir``. ``exclude_files`` replaces the connector's
    ``[tool.acpzip.exclude-files]`` globs (the tests pass their own)."""
    manifest = source_manifest(connector_id)
    source = CONNECTORS_DIR / connector_id
    settings = build_settings()
    excluded = settings.get("exclude", {}).get(connector_id, [])
    file_globs = list(
        settings.get("exclude-files", {}).get(connector_id, []) if exclude_files is None else exclude_files
    )
    rules = file_rules(file_globs, f"{connector_id} exclude-files")
    epoch = source_date_epoch()
    name = zip_name(connector_id, manifest["version"], python, target)
    with tempfile.TemporaryDirectory(prefix="acpzip-") as work:
        folder = Path(work) / connector_id
        lib = folder / "lib"
        lib.mkdir(parents=True)
        _vendor(lib, connector_id, python, target)
        owners = _record_owners(lib)
        _normalize_vendored(lib)
        left_out = Counter(owners.get(name, "") for name in leave_out_files(lib, rules, connector_id))
        _copy_sources(lib, connector_id)
        for item in ("README.md", "icon.svg", "skills"):
            if (source / item).is_dir():
                shutil.copytree(source / item, folder / item)
            elif (source / item).is_file():
                shutil.copy2(source / item, folder / item)
        shutil.copy2(ROOT / "LICENSE", folder / "LICENSE")
        generated = _generated_manifest(manifest, target)
        (folder / "acp.json").write_text(json.dumps(generated, indent=2, ensure_ascii=False) + "\n", "utf-8")
        (folder / "launch.py").write_text(
            _launcher(connector_id, f"connectors.{connector_id}", ".zip", python, target), "utf-8"
        )
        distributions = _distributions(lib, left_out)
        notices = _notices(connector_id, distributions, excluded, file_globs)
        (folder / "THIRD_PARTY_NOTICES.md").write_text(notices, "utf-8")
        lock_digest = hashlib.sha256(lock_path(connector_id).read_bytes()).hexdigest()
        sbom = _sbom(manifest, distributions, lock_digest, epoch, name, file_globs)
        (folder / "sbom.cdx.json").write_text(sbom, "utf-8")
        leaks = _absolute_paths(folder, [work, str(ROOT)])
        if leaks:
            fail(f"{connector_id}: build paths leaked into {', '.join(leaks[:5])}")
        out_dir.mkdir(parents=True, exist_ok=True)
        write_zip(folder, out_dir / name, connector_id, epoch)
    problems = check_contents(out_dir / name)
    if problems:
        (out_dir / name).unlink()  # a zip that breaks the rules is never left in dist/
        fail(f"{name}: " + "; ".join(problems))
    return out_dir / name


def _absolute_paths(folder: Path, needles: Iterable[str]) -> list[str]:
    encoded = [n.encode() for n in needles]
    return [str(p.relative_to(folder)) for p in sorted(folder.rglob("*")) if p.is_file() and _contains(p, encoded)]


def _contains(path: Path, needles: list[bytes]) -> bool:
    data = path.read_bytes()
    return any(n in data for n in needles)


# -- checking a built zip --------------------------------------------------------------------


def _frontmatter(text: str) -> dict[str, str]:
    match = re.match(r"\A---\r?\n(.*?)\r?\n---\r?\n", text, re.S)
    if not match:
        return {}
    fields = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and not line.startswith((" ", "\t")):
            fields[key.strip()] = value.strip().strip("\"'")
    return fields


def check_contents(path: Path) -> list[str]:
    """What spec 13.1.1/13.2/13.4 and reproducibility ask of a connector zip's contents."""
    try:
        manifest = inspect_zip(path)
    except InstallError as exc:
        return [str(exc)]
    with zipfile.ZipFile(path) as zf:
        return _server_folder_problems(zf, manifest.root, manifest.data)


def _content_problems(name: str) -> list[str]:
    """What a file of a server folder (``name`` relative to it) is and must not be."""
    parts = PurePosixPath(name).parts
    problems = []
    if set(parts) & FORBIDDEN_PARTS and not _is_vendored_data(parts):
        problems.append(f"{name}: no __pycache__ or tests in a server folder")
    if name.endswith(FORBIDDEN_SUFFIXES):
        problems.append(f"{name}: compiled bytecode does not ship (it goes to ACP_CACHE_DIR)")
    if parts[:2] == ("lib", "bin"):
        problems.append(f"{name}: scripts with build-machine shebangs do not ship")
    if len(parts) > 1 and parts[-1] in DIST_INFO_DROPPED and parts[-2].endswith(".dist-info"):
        problems.append(f"{name}: installer records are machine-specific")
    return problems


def _server_folder_problems(zf: zipfile.ZipFile, root: str, data: Mapping[str, Any]) -> list[str]:
    """The checks of ``check_contents`` on the server folder at ``root`` of ``zf``, whose acp.json is ``data``."""
    problems = []
    extra = sorted(set(data) - set(MANIFEST_FIELDS))
    if extra:
        problems.append(f"acp.json has fields outside spec 13.2: {', '.join(extra)}")
    for key in ("acp_version", "version", "description", "transport"):
        if not data.get(key):
            problems.append(f"acp.json lacks {key}")
    names = {
        info.filename[len(root) :]: info
        for info in zf.infolist()
        if info.filename.startswith(root) and not info.is_dir()
    }
    for name in names:
        problems += _content_problems(name)
    transport = data.get("transport") or {}
    for arg in transport.get("args", []):
        if arg.endswith(".py") and arg not in names:
            problems.append(f"transport runs {arg}, which is not in the folder")
    icon = data.get("icon")
    if icon is not None:
        info = names.get(str(icon))
        if info is None or not re.search(r"\.(svg|png|webp)$", str(icon)) or ".." in str(icon):
            problems.append(f"icon {icon!r} must be an svg/png/webp file inside the folder")
        elif info.file_size > MAX_ICON_BYTES:
            problems.append(f"icon is {info.file_size} bytes; hosts ignore icons over 256 KB")
    skills = {PurePosixPath(n).parts[1] for n in names if n.startswith("skills/") and n.count("/") >= 2}
    if not skills:
        problems.append("no skills/<name>/SKILL.md")
    for skill in sorted(skills):
        if not SKILL_NAME.match(skill):
            problems.append(f"skill folder {skill!r} must match {SKILL_NAME.pattern}")
        skill_file = f"skills/{skill}/SKILL.md"
        if skill_file not in names:
            problems.append(f"{skill_file} is missing")
            continue
        front = _frontmatter(zf.read(names[skill_file]).decode("utf-8"))
        if front.get("name") != skill or not front.get("description"):
            problems.append(f"{skill_file}: frontmatter needs name: {skill} and a description")
    for required in ("README.md", "LICENSE", "THIRD_PARTY_NOTICES.md", "sbom.cdx.json", "launch.py"):
        if required not in names:
            problems.append(f"{required} is missing")
    return problems


def _is_vendored_data(parts: tuple[str, ...]) -> bool:
    """Package data named like a test folder deeper inside a vendored package is not a test suite."""
    return parts[0] == "lib" and "tests" in parts and parts.index("tests") > 2


@dataclass(frozen=True)
class Verified:
    zip: Path
    manifest: Manifest
    size: int
    tools: list[str]
    first_start_s: float
    second_start_s: float
    imported: list[str]  # the modules of [tool.acpzip.verify-imports], imported from the folder's lib/


def declared_imports(name: str) -> list[str]:
    """``[tool.acpzip.verify-imports]`` of a connector id (or ``bridge``): what ``verify`` imports."""
    modules: list[str] = build_settings().get("verify-imports", {}).get(name, [])
    return modules


# Run with the host's Python in a server folder: the launcher's own path set-up (lib/ first, the
# host's site-packages dropped, bytecode under ACP_CACHE_DIR), then imports instead of the server.
# Prints {module: its file, or "!" and the error}.
IMPORT_PROBE = """
import importlib, importlib.util, json, runpy, sys
sys.dont_write_bytecode = True  # launch.py's own bytecode would land in the folder; launch.main() decides after
spec = importlib.util.spec_from_file_location("launch", "launch.py")
launch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launch)
sys.dont_write_bytecode = False
modules, found = sys.argv[1:], {}


def import_modules(*args, **kwargs):
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            found[name] = f"!{type(exc).__name__}: {exc}"
        else:
            found[name] = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", [])), "")


runpy.run_module = import_modules
launch.main()
print(json.dumps(found))
"""


async def check_imports(
    folder: Path, modules: Sequence[str], env: Mapping[str, str], cache: Path, tmp: Path, timeout_s: float = 120.0
) -> None:
    """Import ``modules`` in the server folder as its launcher sets it up: each must load, from ``lib/``."""
    import anyio

    if not modules:
        return
    command = shutil.which("python3", path=env.get("PATH")) or shutil.which("python", path=env.get("PATH"))
    if command is None:
        raise InstallError(f"{folder.name}: no python3 on the PATH to import its modules with")
    home = tmp / "import-probe-home"  # a library that writes a cache on import (matplotlib) writes it here
    home.mkdir(exist_ok=True)
    run_env = {
        **env,
        "PYTHONPATH": "",
        "ACP_CACHE_DIR": str(cache),
        "ACP_TMP_DIR": str(tmp),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    with anyio.fail_after(timeout_s):
        result = await anyio.run_process([command, "-c", IMPORT_PROBE, *modules], cwd=folder, env=run_env, check=False)
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise InstallError(f"{folder.name}: the import check did not run (exit {result.returncode}):\n{detail}")
    found: dict[str, str] = json.loads(result.stdout)
    lib = (folder / "lib").resolve()
    problems = [
        f"{name} cannot be imported from the zip's lib/ ({where[1:]})"
        if where.startswith("!")
        else f"{name} comes from {where}, not from the zip's lib/"
        for name, where in found.items()
        if where.startswith("!") or not Path(where).resolve().is_relative_to(lib)
    ]
    if problems:
        raise InstallError(f"{folder.name}: " + "; ".join(problems))


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_mode)
        for p in folder.rglob("*")
    }


def _python_env(python: str | None, work: Path) -> dict[str, str]:
    """The environment a host gives the server; ``python`` becomes the python3/python on its PATH."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()  # what the SDK lets a server inherit; PYTHON* variables are not among them
    if python:
        bin_dir = work / "bin"
        bin_dir.mkdir()
        for command in ("python3", "python"):
            (bin_dir / command).symlink_to(python)
        env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    return env


async def verify(path: Path, python: str | None = None, imports: Sequence[str] | None = None) -> Verified:
    """Install ``path`` as a host does, start it twice, import its client modules (``imports``, by
    default its ``[tool.acpzip.verify-imports]``), and check it left its folder untouched."""
    problems = check_contents(path)
    if problems:
        raise InstallError(f"{path.name}: " + "; ".join(problems))
    with tempfile.TemporaryDirectory(prefix="acpzip-verify-") as work_dir:
        work = Path(work_dir)
        servers, cache, tmp = work / "servers", work / "cache", work / "tmp"
        cache.mkdir()
        tmp.mkdir()
        env = _python_env(python, work)  # PYTHONDONTWRITEBYTECODE is not passed: bytecode is really written
        started = time.perf_counter()
        installed = await install(path, servers, cache_dir=cache, tmp_dir=tmp, env=env)
        first = time.perf_counter() - started
        before = _snapshot(installed.folder)
        started = time.perf_counter()
        result = await probe(installed.folder, cache_dir=cache, tmp_dir=tmp, env=env)
        second = time.perf_counter() - started
        modules = declared_imports(installed.manifest.id) if imports is None else list(imports)
        await check_imports(installed.folder, modules, env, cache, tmp)
        after = _snapshot(installed.folder)
        changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
        if changed:
            raise InstallError(f"{path.name}: the server wrote into its own folder: {', '.join(changed[:10])}")
        with zipfile.ZipFile(path) as zf:
            shipped = {i.filename[len(installed.manifest.root) :] for i in zf.infolist() if not i.is_dir()}
        unpacked = {name for name in after if (installed.folder / name).is_file()}
        if unpacked != shipped:
            raise InstallError(f"{path.name}: installed files differ from the zip: {sorted(unpacked ^ shipped)[:10]}")
        if not any((cache / "pycache").rglob("*.pyc")):
            raise InstallError(f"{path.name}: no bytecode was cached under ACP_CACHE_DIR; check launch.py")
        return Verified(path, installed.manifest, path.stat().st_size, result.tools, first, second, modules)


# -- the bridge's MCP bundle -----------------------------------------------------------------

# The MCPB manifest spec (github.com/modelcontextprotocol/mcpb, MANIFEST.md): 0.3 is its current
# version; 0.4 only adds the experimental "uv" server type, which installs wheels at run time.
MCPB_MANIFEST_VERSION = "0.3"
MCPB_FIELDS = (  # every top-level key of the 0.3 schema, which admits no other
    "$schema", "dxt_version", "manifest_version", "name", "display_name", "version", "description",
    "long_description", "author", "repository", "homepage", "documentation", "support", "icon", "icons",
    "screenshots", "localization", "server", "tools", "tools_generated", "prompts", "prompts_generated",
    "keywords", "license", "privacy_policies", "compatibility", "user_config", "_meta",
)  # fmt: skip
MCPB_USER_CONFIG_TYPES = ("string", "number", "boolean", "directory", "file")
MCPB_USER_CONFIG_FIELDS = ("type", "title", "description", "required", "default", "multiple", "sensitive", "min", "max")
MCPB_PLATFORMS = ("darwin", "win32", "linux")
# semver.org's own pattern: MAJOR.MINOR.PATCH, an optional pre-release and build metadata.
SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
# A user_config or env key that would carry a secret: credentials live in sources.json only (16.3).
CREDENTIAL_KEY = re.compile(
    r"(?i)(passw|secret|token|api[_-]?key|credential|private[_-]?key|auth|dsn|connection[_-]?string|"
    r"service[_-]?account)"
)
USER_CONFIG_REF = re.compile(r"\$\{user_config\.([^}]+)\}")
BRIDGE_TOOLS = {
    "acp_sources": "The sources of sources.json with their connectors, or what is wrong with the file.",
    "acp_datasets": "The datasets saved in the project's acp-data/ folder: ids, columns, rows and origin.",
    "acp_query": "SQLite-dialect SELECT over the saved datasets (run on DuckDB); can save the result as a dataset.",
}


def project_version() -> str:
    """The bundle's version: pyproject.toml's, which MCPB wants as strict semver."""
    version = str(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"])
    if not SEMVER.fullmatch(version):
        fail(f"pyproject.toml's version {version!r} is not strict semver (MAJOR.MINOR.PATCH), which MCPB requires")
    return version


def bundle_name(version: str, python: str, target: Platform) -> str:
    return f"{BUNDLE_NAME}-{version}-cp{python.replace('.', '')}-{target.tag}.mcpb"


def _bundle_manifest(
    version: str, python: str, target: Platform, connectors: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """manifest.json: the launcher started with the host's Python, the project folder and the
    sources file as the person's settings, and never a credential (those stay in sources.json)."""
    minor = int(python.split(".")[1])
    names = ", ".join(str(c["name"]) for c in connectors)
    return {
        "manifest_version": MCPB_MANIFEST_VERSION,
        "name": BUNDLE_NAME,
        "display_name": "ACP Bridge",
        "version": version,
        "description": f"ACP connectors ({names}) from any MCP client, with SQL over the datasets they extract.",
        "long_description": (
            "The ACP Bridge is an MCP server that acts as an ACP host. It serves the tools of the connectors in "
            f"its acps/ folder ({names}) for the sources of your sources.json, saves every table they extract "
            "as a CSV dataset in the project's acp-data/ folder, and runs SQL over those datasets with acp_query. "
            "Credentials stay in sources.json: they are never asked for here, and never reach the model."
        ),
        "author": {"name": "ACP connectors contributors"},
        "license": "Apache-2.0",
        "keywords": ["acp", "analytics", "sql", "duckdb", "csv", *(str(c["id"]) for c in connectors)],
        "server": {
            "type": "python",
            "entry_point": "launch.py",
            "mcp_config": {
                "command": target.python_command,
                "args": [
                    "${__dirname}/launch.py",
                    "--root",
                    "${__dirname}",
                    "--project",
                    "${user_config.project_folder}",
                    "--sources",
                    "${user_config.sources_file}",
                ],
            },
        },
        "tools": [{"name": name, "description": text} for name, text in BRIDGE_TOOLS.items()],
        "tools_generated": True,  # <source>__<tool> for each source of sources.json
        "compatibility": {
            "platforms": [target.sys_platform],
            "runtimes": {"python": f">=3.{minor}.0 <3.{minor + 1}.0"},  # the vendored wheels load on this minor only
        },
        "user_config": {
            "project_folder": {
                "type": "directory",
                "title": "Project folder",
                "description": "Where extracted tables are saved (acp-data/) and where sources.json's "
                "projectPath references point.",
                "required": True,
            },
            "sources_file": {
                "type": "file",
                "title": "Sources file",
                "description": "Your sources.json: the accounts of each connector and where their credentials are "
                "(start from sources.example.json). Empty: sources.json in the bundle's folder.",
                "required": False,
            },
        },
    }


def _bundle_sources_example(connectors: Sequence[Mapping[str, Any]]) -> str:
    """bridge/sources.example.json when the checkout has it; else the smallest example: one source per connector."""
    written = ROOT / BRIDGE / "sources.example.json"
    if written.is_file():
        return written.read_text("utf-8")
    sources = [{"id": str(c["id"]), "acp": str(c["id"]), "label": str(c["name"])} for c in connectors]
    return json.dumps({"defaults": {"row_limit": 25}, "sources": sources}, indent=2) + "\n"


def _bundle_readme(version: str, python: str, target: Platform, connectors: Sequence[Mapping[str, Any]]) -> str:
    listed = "\n".join(f"- `acps/{c['id']}/`: {c['name']} {c['version']}. {c['description']}" for c in connectors)
    example = {
        "mcpServers": {
            BUNDLE_NAME: {
                "command": target.python_command,
                "args": [
                    "/path/to/acp-bridge/launch.py",
                    "--project",
                    "/path/to/project",
                    "--sources",
                    "/path/to/sources.json",
                ],
            }
        }
    }
    return f"""# ACP Bridge {version} (MCP bundle for CPython {python} on {target.tag})

An MCP server that acts as an ACP host (spec Part III, section 16): any MCP client uses the ACP connectors
in `acps/` through it. Every table a connector extracts is saved as a CSV dataset in the project's
`acp-data/` folder, and `acp_query` runs SQL over those datasets.

{listed}

## Install

**Claude Desktop and other MCP bundle hosts:** open this `.mcpb` file. The host asks for

- **Project folder**: where datasets are saved (`acp-data/`) and where `{{"projectPath"}}` references of
  `sources.json` point;
- **Sources file** (optional): your `sources.json`. Empty, the bridge reads `sources.json` in the bundle's folder;
  keep yours elsewhere, since an update of the bundle replaces that folder.

The host runs `{target.python_command} launch.py` with a Python of its machine, which must be CPython {python}
(`launch.py` refuses another one with a message that names the right bundle).

**Any other MCP client:** unzip the `.mcpb` into a folder and register it as a stdio server:

```json
{json.dumps(example, indent=2)}
```

## sources.json

Copy `sources.example.json`, keep it outside this folder, and describe your accounts there (spec 16.3).
Credentials are read from that file, or from the environment variables and files it points to, and from nowhere
else: the bundle's settings never ask for them, and they never reach the model.

## What is inside

- `manifest.json`: the MCP bundle manifest; `launch.py`: checks the Python and the platform, puts `lib/` first on
  `sys.path`, and runs the bridge (`python -m bridge`).
- `lib/`: the bridge, the shared ACP core and their dependencies, built for {target.tag} and CPython {python}
  (`THIRD_PARTY_NOTICES.md`, `sbom.cdx.json`).
- `acps/<id>/`: each connector's zip, unpacked, with its own notices and SBOM.
"""


def bundle(
    connector_ids: Iterable[str],
    python: str,
    target: Platform,
    out_dir: Path,
    connector_zips: Mapping[str, Path] | None = None,
) -> Path:
    """Build the ACP Bridge's MCP bundle into ``out_dir``, with the connectors ``connector_ids``
    in ``acps/``. Each connector is its zip for the same Python and platform, unpacked: built here
    by ``build``, or taken from ``connector_zips`` when it has one (already built by ``build``)."""
    ids = sorted(set(connector_ids))  # one bundle for one set of connectors, whatever order they were named in
    if not ids:
        fail("a bundle needs at least one connector")
    sources = {connector_id: source_manifest(connector_id) for connector_id in ids}
    settings = build_settings()
    excluded = settings.get("exclude", {}).get(BRIDGE, [])
    file_globs = list(settings.get("exclude-files", {}).get(BRIDGE, []))
    rules = file_rules(file_globs, f"{BRIDGE} exclude-files")
    version = project_version()
    epoch = source_date_epoch()
    name = bundle_name(version, python, target)
    with tempfile.TemporaryDirectory(prefix="acpzip-bundle-") as work:
        folder = Path(work) / BUNDLE_NAME
        lib = folder / "lib"
        lib.mkdir(parents=True)
        _vendor(lib, BRIDGE, python, target)
        owners = _record_owners(lib)
        _normalize_vendored(lib)
        left_out = Counter(owners.get(file, "") for file in leave_out_files(lib, rules, BRIDGE))
        _copy_package(ROOT / "shared", lib / "shared")
        _copy_package(ROOT / BRIDGE, lib / BRIDGE)
        for connector_id in ids:
            expected = zip_name(connector_id, sources[connector_id]["version"], python, target)
            archive = (connector_zips or {}).get(connector_id) or build(
                connector_id, python, target, Path(work) / "zips"
            )
            if archive.name != expected:
                fail(f"{archive.name} is not the {connector_id} zip this bundle needs ({expected})")
            unpack(archive, folder / "acps" / connector_id)
        connectors = [sources[connector_id] for connector_id in ids]
        manifest = _bundle_manifest(version, python, target, connectors)
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
        (folder / "launch.py").write_text(_launcher(BUNDLE_NAME, BRIDGE, ".mcpb", python, target), "utf-8")
        (folder / "README.md").write_text(_bundle_readme(version, python, target, connectors), "utf-8")
        (folder / "sources.example.json").write_text(_bundle_sources_example(connectors), "utf-8")
        shutil.copy2(ROOT / "LICENSE", folder / "LICENSE")
        distributions = _distributions(lib, left_out)
        (folder / "THIRD_PARTY_NOTICES.md").write_text(_notices(BRIDGE, distributions, excluded, file_globs), "utf-8")
        lock_digest = hashlib.sha256(lock_path(BRIDGE).read_bytes()).hexdigest()
        described = {"id": BUNDLE_NAME, "version": version, "description": manifest["description"]}
        sbom = _sbom(described, distributions, lock_digest, epoch, name, file_globs, kind="acp-bundle")
        (folder / "sbom.cdx.json").write_text(sbom, "utf-8")
        leaks = _absolute_paths(folder, [work, str(ROOT)])
        if leaks:
            fail(f"{BUNDLE_NAME}: build paths leaked into {', '.join(leaks[:5])}")
        out_dir.mkdir(parents=True, exist_ok=True)
        write_zip(folder, out_dir / name, "", epoch)
    problems = check_bundle(out_dir / name)
    if problems:
        (out_dir / name).unlink()  # a bundle that breaks the rules is never left in dist/
        fail(f"{name}: " + "; ".join(problems))
    return out_dir / name


def check_bundle_manifest(data: Mapping[str, Any], names: Collection[str]) -> list[str]:
    """What the MCPB manifest spec (0.3) and this project ask of an MCP bundle's manifest.json;
    ``names`` are the files of the bundle (for the entry point)."""
    problems = []
    unknown = sorted(set(data) - set(MCPB_FIELDS))
    if unknown:
        problems.append(f"manifest.json has fields the MCPB spec does not define: {', '.join(unknown)}")
    if data.get("manifest_version") != MCPB_MANIFEST_VERSION:
        problems.append(f"manifest_version must be {MCPB_MANIFEST_VERSION!r}, not {data.get('manifest_version')!r}")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            problems.append(f"manifest.json needs a {key}")
    version = data.get("version")
    if not isinstance(version, str) or not SEMVER.fullmatch(version):
        problems.append(f"version {version!r} must be strict semver (MAJOR.MINOR.PATCH)")
    author = data.get("author")
    if not isinstance(author, dict) or not isinstance(author.get("name"), str) or not author["name"]:
        problems.append("author must be an object with a name")
    problems += _server_problems(data.get("server"), names)
    problems += _compatibility_problems(data.get("compatibility"))
    user_config = data.get("user_config", {})
    if not isinstance(user_config, dict):
        problems.append("user_config must be an object")
        user_config = {}
    for key, option in user_config.items():
        problems += _user_config_problems(key, option)
    server = data.get("server")
    mcp_config = server.get("mcp_config") if isinstance(server, dict) else None
    if isinstance(mcp_config, dict):
        env = mcp_config.get("env", {})
        for key in env if isinstance(env, dict) else ():
            if CREDENTIAL_KEY.search(key):
                problems.append(f"mcp_config.env.{key} looks like a credential; credentials stay in sources.json")
        for ref in sorted(set(USER_CONFIG_REF.findall(json.dumps(mcp_config)))):
            if ref not in user_config:
                problems.append(f"mcp_config uses ${{user_config.{ref}}}, which user_config does not declare")
    tools = data.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
        problems.append("tools must be a list of objects with a name")
    icon = data.get("icon")
    if icon is not None and (not isinstance(icon, str) or not icon.endswith(".png") or icon not in names):
        problems.append(f"icon {icon!r} must be a png file inside the bundle")
    return problems


def _server_problems(server: Any, names: Collection[str]) -> list[str]:
    if not isinstance(server, dict):
        return ["manifest.json needs a server object"]
    problems = []
    unknown = sorted(set(server) - {"type", "entry_point", "mcp_config"})
    if unknown:
        problems.append(f"server has fields the MCPB spec does not define: {', '.join(unknown)}")
    if server.get("type") != "python":
        problems.append(f"server.type must be 'python', not {server.get('type')!r}")
    entry_point = server.get("entry_point")
    if not isinstance(entry_point, str) or entry_point not in names:
        problems.append(f"server.entry_point {entry_point!r} is not a file of the bundle")
    mcp_config = server.get("mcp_config")
    if not isinstance(mcp_config, dict):
        return [*problems, "server.mcp_config is missing: a host would not know how to start the bundle"]
    unknown = sorted(set(mcp_config) - {"command", "args", "env", "platform_overrides"})
    if unknown:
        problems.append(f"server.mcp_config has fields the MCPB spec does not define: {', '.join(unknown)}")
    if not isinstance(mcp_config.get("command"), str) or not mcp_config["command"]:
        problems.append("server.mcp_config needs a command")
    args = mcp_config.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        problems.append("server.mcp_config.args must be a list of strings")
    elif isinstance(entry_point, str) and f"${{__dirname}}/{entry_point}" not in args:
        problems.append(f"server.mcp_config.args must run ${{__dirname}}/{entry_point}")
    env = mcp_config.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        problems.append("server.mcp_config.env must map names to strings")
    return problems


def _compatibility_problems(compatibility: Any) -> list[str]:
    """One bundle per OS and Python minor version: the manifest names exactly one of each."""
    if not isinstance(compatibility, dict):
        return ["compatibility must name the bundle's platform and Python"]
    problems = []
    platforms = compatibility.get("platforms")
    if not isinstance(platforms, list) or len(platforms) != 1 or platforms[0] not in MCPB_PLATFORMS:
        problems.append(f"compatibility.platforms must name one of {', '.join(MCPB_PLATFORMS)}, not {platforms!r}")
    runtimes = compatibility.get("runtimes")
    if not isinstance(runtimes, dict) or not isinstance(runtimes.get("python"), str):
        problems.append("compatibility.runtimes.python must say which Python the bundle's wheels load on")
    return problems


def _user_config_problems(key: str, option: Any) -> list[str]:
    if not isinstance(option, dict):
        return [f"user_config.{key} must be an object"]
    problems = []
    unknown = sorted(set(option) - set(MCPB_USER_CONFIG_FIELDS))
    if unknown:
        problems.append(f"user_config.{key} has fields the MCPB spec does not define: {', '.join(unknown)}")
    if option.get("type") not in MCPB_USER_CONFIG_TYPES:
        problems.append(f"user_config.{key}.type must be one of {', '.join(MCPB_USER_CONFIG_TYPES)}")
    for field in ("title", "description"):
        if not isinstance(option.get(field), str):
            problems.append(f"user_config.{key} needs a {field}")
    if "sensitive" in option or CREDENTIAL_KEY.search(key):
        problems.append(
            f"user_config.{key} asks for a credential; credentials stay in sources.json, never in the manifest"
        )
    return problems


def check_bundle(path: Path) -> list[str]:
    """What an MCP bundle must be: an archive a host may unpack (``shared.install.check_archive``),
    a valid manifest.json, and valid connector folders in ``acps/`` (``check_contents``' rules)."""
    try:
        check_archive(path)
    except InstallError as exc:
        return [str(exc)]
    with zipfile.ZipFile(path) as zf:
        infos = {info.filename: info for info in zf.infolist() if not info.is_dir()}
        if "manifest.json" not in infos:
            return ["manifest.json is missing from the bundle's root"]
        try:
            data = json.loads(zf.read("manifest.json").decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return [f"manifest.json is not valid UTF-8 JSON ({exc})"]
        if not isinstance(data, dict):
            return ["manifest.json must hold a JSON object"]
        problems = check_bundle_manifest(data, infos)
        required = ("launch.py", "README.md", "LICENSE", "THIRD_PARTY_NOTICES.md", "sbom.cdx.json")
        for name in (*required, "sources.example.json", f"lib/{BRIDGE}/__init__.py", "lib/shared/__init__.py"):
            if name not in infos:
                problems.append(f"{name} is missing")
        if "sources.example.json" in infos:
            try:
                json.loads(zf.read("sources.example.json").decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                problems.append(f"sources.example.json is not valid JSON ({exc})")
        for name in infos:
            if not name.startswith("acps/"):
                problems += _content_problems(name)
        launcher = zf.read("launch.py").decode("utf-8") if "launch.py" in infos else ""
        built_for = re.findall(r"(?m)^(?:PYTHON|PLATFORM) = .*$", launcher)
        folders = sorted({name.split("/")[1] for name in infos if name.startswith("acps/") and name.count("/") >= 2})
        if not folders:
            problems.append("acps/ holds no connector")
        for folder in folders:
            problems += [f"acps/{folder}/: {p}" for p in _bundled_connector_problems(zf, folder, infos, built_for)]
    return problems


def _bundled_connector_problems(
    zf: zipfile.ZipFile, folder: str, infos: Mapping[str, zipfile.ZipInfo], built_for: Sequence[str]
) -> list[str]:
    root = f"acps/{folder}/"
    if f"{root}acp.json" not in infos:
        return ["acp.json is missing"]
    try:
        manifest = parse_manifest(zf.read(f"{root}acp.json"), f"{root}acp.json")
    except InstallError as exc:
        return [str(exc)]
    problems = _server_folder_problems(zf, root, manifest.data)
    if manifest.id != folder:
        problems.append(f"acp.json's id is {manifest.id!r}: the bridge would not find it under acps/{folder}/")
    if f"{root}launch.py" in infos:
        connector_built_for = re.findall(r"(?m)^(?:PYTHON|PLATFORM) = .*$", zf.read(f"{root}launch.py").decode())
        if connector_built_for != built_for:
            problems.append(f"built for {connector_built_for}, but the bundle for {built_for}")
    return problems


def resolve_mcp_config(
    manifest: Mapping[str, Any],
    folder: Path,
    user_config: Mapping[str, str | list[str]],
    system_dirs: Mapping[str, str],
    platform_name: str = sys.platform,
) -> tuple[str, list[str], dict[str, str]]:
    """The command, arguments and environment an MCPB host starts the bundle with.

    As the reference implementation (mcpb's ``getMcpConfigForManifest``) does: the platform's
    override applies, then ``${__dirname}``, ``${HOME}``…, ``${/}`` and ``${user_config.KEY}``
    (the person's value, else the manifest's default) are substituted. An argument that is exactly
    ``${user_config.KEY}`` takes a list as several arguments; with no value it is left as it is."""
    config = dict(manifest["server"]["mcp_config"])
    override = (config.pop("platform_overrides", None) or {}).get(platform_name, {})
    command = override.get("command") or config["command"]
    args = list(override.get("args") or config.get("args", []))
    env = {**config.get("env", {}), **override.get("env", {})}
    values: dict[str, Any] = {
        key: option["default"] for key, option in manifest.get("user_config", {}).items() if "default" in option
    }
    values.update(user_config)
    variables: dict[str, str | list[str]] = {"__dirname": str(folder), "pathSeparator": os.sep, "/": os.sep}
    variables.update(system_dirs)
    for key, value in values.items():
        if isinstance(value, list):
            variables[f"user_config.{key}"] = [str(item) for item in value]
        else:
            variables[f"user_config.{key}"] = ("true" if value else "false") if isinstance(value, bool) else str(value)

    def substitute(text: str) -> str:
        for key, value in variables.items():
            if isinstance(value, str):  # a list cannot go inside a string: the variable stays
                text = text.replace(f"${{{key}}}", value)
        return text

    resolved: list[str] = []
    for arg in args:
        whole = USER_CONFIG_REF.fullmatch(arg)
        value = variables.get(f"user_config.{whole.group(1)}") if whole else None
        if isinstance(value, list):
            resolved += value
        elif whole:
            resolved.append(value or arg)  # no value (or an empty one): left as it is
        else:
            resolved.append(substitute(arg))
    return substitute(command), resolved, {key: substitute(value) for key, value in env.items()}


@dataclass(frozen=True)
class VerifiedBundle:
    path: Path
    manifest: Mapping[str, Any]
    size: int
    connectors: list[str]
    tools: list[str]
    start_s: float


async def verify_bundle(path: Path, python: str | None = None, timeout_s: float = 120.0) -> VerifiedBundle:
    """Check an MCP bundle, unpack it as a host does, start each connector of ``acps/`` from its
    folder, then start the bridge exactly as manifest.json's mcp_config says, as a plain MCP
    client, and check that it lists its own tools and wrote nothing into its folder."""
    import anyio

    from shared.host import AcpHost

    problems = check_bundle(path)
    if problems:
        raise InstallError(f"{path.name}: " + "; ".join(problems))
    with tempfile.TemporaryDirectory(prefix="acpzip-verify-") as work_dir:
        work = Path(work_dir)
        folder = work / "Extensions with spaces" / BUNDLE_NAME  # hosts install under such paths
        project, home, cache, tmp = work / "project", work / "home", work / "cache", work / "tmp"
        for made in (project, home, cache, tmp):
            made.mkdir()
        unpack_archive(path, folder)
        manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
        env = _python_env(python, work)
        before = _snapshot(folder)
        connectors = sorted(p.name for p in (folder / "acps").iterdir())
        for connector in connectors:
            await probe(folder / "acps" / connector, cache_dir=cache, tmp_dir=tmp, env=env)
            await check_imports(folder / "acps" / connector, declared_imports(connector), env, cache, tmp)
        await check_imports(folder, declared_imports(BRIDGE), env, cache, tmp)
        command, args, extra_env = resolve_mcp_config(
            manifest, folder, {"project_folder": str(project)}, {"HOME": str(home)}
        )
        program = shutil.which(command, path=env.get("PATH")) or command
        host = AcpHost([program, *args], env={**env, "PYTHONPATH": "", **extra_env}, cwd=home, capability=None)
        started = time.perf_counter()
        try:
            with anyio.fail_after(timeout_s):
                async with host:
                    tools = [str(tool["name"]) for tool in await host.list_tools()]
        except Exception as exc:
            detail = host.stderr().strip()[-2000:]
            raise InstallError(
                f"{path.name}: the bridge did not start as manifest.json's mcp_config says "
                f"({type(exc).__name__}: {exc})" + (f"\nserver stderr:\n{detail}" if detail else "")
            ) from exc
        elapsed = time.perf_counter() - started
        missing = sorted(set(BRIDGE_TOOLS) - set(tools))
        if missing:
            raise InstallError(f"{path.name}: the bridge does not list {', '.join(missing)} (it lists {tools})")
        after = _snapshot(folder)
        changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
        if changed:
            raise InstallError(f"{path.name}: the bundle wrote into its own folder: {', '.join(changed[:10])}")
        return VerifiedBundle(path, manifest, path.stat().st_size, connectors, tools, elapsed)


# -- command line ----------------------------------------------------------------------------


def _target(args: argparse.Namespace) -> tuple[str, Platform]:
    """The CPython minor version and the platform that ``build`` and ``bundle`` were asked for."""
    target = PLATFORMS[args.platform] if args.platform else host_platform()
    python = args.python or f"{sys.version_info[0]}.{sys.version_info[1]}"
    if not re.fullmatch(r"3\.\d{1,2}", python):
        fail(f"--python takes a CPython minor version such as 3.12, not {python!r}")
    supported = build_settings().get("pythons", [])
    if supported and tuple(map(int, python.split("."))) < min(tuple(map(int, v.split("."))) for v in supported):
        fail(f"the locks are resolved for Python {min(supported)} and later; --python {python} is older")
    return python, target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python build/acpzip.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    lock_cmd = commands.add_parser("lock", help="pin a connector's (or the bridge's) dependencies with hashes")
    lock_cmd.add_argument("ids", nargs="*", help="connector ids, or bridge (default: all)")
    build_cmd = commands.add_parser("build", help="build connector zips into --out")
    build_cmd.add_argument("ids", nargs="*", help="connector ids (default: all)")
    bundle_cmd = commands.add_parser("bundle", help="build the ACP Bridge's MCP bundle (.mcpb) into --out")
    bundle_cmd.add_argument("ids", nargs="*", help=f"connectors for acps/ (default: {' '.join(BUNDLE_CONNECTORS)})")
    bundle_cmd.add_argument(
        "--zips", help="take the connector zips from this folder (as build wrote them) instead of building them"
    )
    for command in (build_cmd, bundle_cmd):
        command.add_argument("--platform", choices=sorted(PLATFORMS), help="target (default: this machine)")
        command.add_argument("--python", help="target CPython minor version, e.g. 3.12 (default: this one)")
        command.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default: dist/)")
    verify_cmd = commands.add_parser("verify", help="install each zip (or .mcpb bundle) as a host does and start it")
    verify_cmd.add_argument("zips", nargs="+", help="zip and .mcpb files")
    verify_cmd.add_argument("--python-exe", help="the interpreter a host runs as python3 (default: PATH's)")
    args = parser.parse_args(argv)

    if args.command == "lock":
        for name in args.ids or lock_targets():
            print(lock(name).relative_to(ROOT))
        return 0
    if args.command == "build":
        python, target = _target(args)
        for connector_id in args.ids or connector_ids():
            out = build(connector_id, python, target, Path(args.out))
            print(f"{out}  {out.stat().st_size / 1e6:.1f} MB")
        return 0
    if args.command == "bundle":
        python, target = _target(args)
        ids = args.ids or list(BUNDLE_CONNECTORS)
        zips = {}
        if args.zips:
            for connector_id in ids:
                archive = Path(args.zips) / zip_name(
                    connector_id, source_manifest(connector_id)["version"], python, target
                )
                if not archive.is_file():
                    fail(f"{archive} is missing: build it first (python build/acpzip.py build {connector_id} ...)")
                zips[connector_id] = archive
        out = bundle(ids, python, target, Path(args.out), zips)
        print(f"{out}  {out.stat().st_size / 1e6:.1f} MB")
        return 0

    import anyio

    failures = 0
    for item in args.zips:
        try:
            if item.endswith(".mcpb"):
                checked = anyio.run(verify_bundle, Path(item), args.python_exe)
                print(
                    f"ok   {item}: {checked.manifest['name']} {checked.manifest['version']}, "
                    f"{checked.size / 1e6:.1f} MB, connectors {', '.join(checked.connectors)}, "
                    f"{len(checked.tools)} tools, started in {checked.start_s:.2f} s"
                )
                continue
            verified = anyio.run(verify, Path(item), args.python_exe)
        except InstallError as exc:
            failures += 1
            print(f"FAIL {item}: {exc}", file=sys.stderr)
            continue
        print(
            f"ok   {item}: {verified.manifest.id} {verified.manifest.version}, {verified.size / 1e6:.1f} MB, "
            f"{len(verified.tools)} tools, first start {verified.first_start_s:.2f} s, "
            f"second start {verified.second_start_s:.2f} s, {len(verified.imported)} client modules imported"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
