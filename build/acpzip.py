"""Build, verify and lock the distributable connector zips (spec 13).

    python build/acpzip.py lock [ID ...]
    python build/acpzip.py build [ID ...] [--platform TAG] [--python 3.11] [--out dist]
    python build/acpzip.py verify dist/*.zip [--python PATH]

``build`` writes ``dist/<id>-<version>-<cpython tag>-<platform>.zip``: one folder ``<id>/`` with
the generated ``acp.json``, ``launch.py``, the connector's README, icon and skills, the licences
and an SBOM, and ``lib/`` holding the connector, the shared core and every dependency, installed
from ``build/locks/<id>.txt`` (pinned, with hashes) as wheels for the target platform. The same
sources and lock give a byte-identical zip. ``verify`` checks a zip the way a host installs it
(``shared.install``), then starts it twice and checks that it wrote nothing into its folder.

Connectors are found by their ``acp.json`` under ``connectors/``: a new one needs no change here,
only its lock (``lock``). Building needs ``uv`` (``pip install uv``), which resolves and installs
wheels for another platform correctly (environment markers included).

``[tool.acpzip]`` in ``pyproject.toml`` holds the build settings, checked on every command (an
unknown key or connector id fails the command):

- ``pythons``: the CPython minor versions released.
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for shared.install when run as a script

from shared.install import InstallError, Manifest, inspect_zip, install, probe  # noqa: E402

CONNECTORS_DIR = ROOT / "connectors"
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


def build_settings() -> dict[str, Any]:
    """``[tool.acpzip]`` from pyproject.toml, checked (see ``check_settings``)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    settings: dict[str, Any] = data.get("tool", {}).get("acpzip", {})
    check_settings(settings, connector_ids())
    return settings


SETTINGS_KEYS = ("pythons", "exclude", "exclude-files")


def check_settings(settings: Mapping[str, Any], known_ids: Sequence[str]) -> None:
    """Fail on what would otherwise be ignored in silence: an unknown key, a connector that does not
    exist (a typo, or one that was renamed), a value that is not a list of strings, a bad glob."""
    unknown = sorted(set(settings) - set(SETTINGS_KEYS))
    if unknown:
        fail(f"[tool.acpzip] has unknown key(s) {', '.join(unknown)}; known: {', '.join(SETTINGS_KEYS)}")
    for table in ("exclude", "exclude-files"):
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


def uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        fail("building needs uv: pip install uv (or pip install -e '.[dev]')")
    return found


def lock_path(connector_id: str) -> Path:
    return LOCKS_DIR / f"{connector_id}.txt"


def lock(connector_id: str) -> Path:
    """Resolve the connector's extra for every platform and Python it ships for, pinned with hashes."""
    settings = build_settings()
    excluded = settings.get("exclude", {}).get(connector_id, [])
    oldest = min(settings.get("pythons", ["3.11"]), key=lambda v: tuple(map(int, v.split("."))))
    target = lock_path(connector_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    command = [
        uv(), "pip", "compile", str(ROOT / "pyproject.toml"), "--no-config", "--quiet",
        "--extra", connector_id, "--universal", "--python-version", oldest, "--generate-hashes",
        "--no-header", "--no-annotate", "--output-file", str(target),
    ]  # fmt: skip
    for package in excluded:
        command += ["--no-emit-package", package]
    subprocess.run(command, check=True, cwd=ROOT)
    body = target.read_text("utf-8")
    header = (
        f"# Pinned dependencies of the {connector_id} connector zip, with hashes.\n"
        f"# Regenerate with: python build/acpzip.py lock {connector_id}\n"
    )
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


def _copy_sources(lib: Path, connector_id: str) -> None:
    """The shared core and the connector's Python code; its acp.json, README, icon and skills go on top."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if n in FORBIDDEN_PARTS or n.endswith(FORBIDDEN_SUFFIXES)}

    shutil.copytree(ROOT / "shared", lib / "shared", ignore=ignore)
    (lib / "connectors").mkdir()
    shutil.copy2(CONNECTORS_DIR / "__init__.py", lib / "connectors" / "__init__.py")
    source = CONNECTORS_DIR / connector_id
    shutil.copytree(
        source,
        lib / "connectors" / connector_id,
        ignore=lambda d, names: (
            ignore(d, names) | ({"acp.json", "README.md", "icon.svg", "skills"} if Path(d) == source else set())
        ),
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


def _launcher(connector_id: str, python: str, target: Platform) -> str:
    values: dict[str, object] = {
        "CONNECTOR_ID": connector_id,
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
    connector_id: str, distributions: Sequence[Distribution], excluded: Sequence[str], file_globs: Sequence[str]
) -> str:
    left_out = sum(dist.files_left_out for dist in distributions)
    lines = [
        f"# Third-party notices: {connector_id} connector",
        "",
        "This folder vendors the Python packages below in `lib/`, unmodified, as their wheels install them"
        + (", less data files the connector never reads (listed below)." if left_out else "."),
        "The connector's own code (`lib/connectors`, `lib/shared`) is Apache-2.0: see `LICENSE`.",
        "",
    ]
    if excluded:
        lines += [f"Left out on purpose (the connector does not import them): {', '.join(excluded)}.", ""]
    if left_out:
        globs = ", ".join(f"`{glob}`" for glob in file_globs)
        lines += [
            f"Files left out on purpose ({left_out} in all, the connector never reads them; a glob with `!` "
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
    manifest: dict[str, Any],
    distributions: Sequence[Distribution],
    lock_digest: str,
    epoch: int,
    name: str,
    file_globs: Sequence[str],
) -> str:
    """A CycloneDX 1.6 SBOM; its serial number and timestamp derive from the inputs, not the clock."""
    app_ref = f"acp-connector:{manifest['id']}@{manifest['version']}"
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
    """Deterministic zip: sorted entries, one timestamp, fixed permissions, deflate, never zip64."""
    stamp = time.gmtime(epoch)[:6]
    files = sorted((p.relative_to(folder).as_posix(), p) for p in folder.rglob("*") if p.is_file())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, allowZip64=False) as zf:
        for relative, path in files:
            info = zipfile.ZipInfo(f"{prefix}/{relative}", date_time=stamp)
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
        (folder / "launch.py").write_text(_launcher(connector_id, python, target), "utf-8")
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
    problems = []
    data = manifest.data
    extra = sorted(set(data) - set(MANIFEST_FIELDS))
    if extra:
        problems.append(f"acp.json has fields outside spec 13.2: {', '.join(extra)}")
    for key in ("acp_version", "version", "description", "transport"):
        if not data.get(key):
            problems.append(f"acp.json lacks {key}")
    with zipfile.ZipFile(path) as zf:
        names = {
            info.filename[len(manifest.root) :]: info
            for info in zf.infolist()
            if info.filename.startswith(manifest.root) and not info.is_dir()
        }
        for name in names:
            parts = PurePosixPath(name).parts
            if set(parts) & FORBIDDEN_PARTS and not _is_vendored_data(parts):
                problems.append(f"{name}: no __pycache__ or tests in a server folder")
            if name.endswith(FORBIDDEN_SUFFIXES):
                problems.append(f"{name}: compiled bytecode does not ship (it goes to ACP_CACHE_DIR)")
            if parts[:2] == ("lib", "bin"):
                problems.append(f"{name}: scripts with build-machine shebangs do not ship")
            if parts[-1] in DIST_INFO_DROPPED and parts[-2].endswith(".dist-info"):
                problems.append(f"{name}: installer records are machine-specific")
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


async def verify(path: Path, python: str | None = None) -> Verified:
    """Install ``path`` as a host does, start it twice, and check it left its folder untouched."""
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
        return Verified(path, installed.manifest, path.stat().st_size, result.tools, first, second)


# -- command line ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python build/acpzip.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    lock_cmd = commands.add_parser("lock", help="pin a connector's dependencies with hashes")
    lock_cmd.add_argument("ids", nargs="*", help="connector ids (default: all)")
    build_cmd = commands.add_parser("build", help="build connector zips into --out")
    build_cmd.add_argument("ids", nargs="*", help="connector ids (default: all)")
    build_cmd.add_argument("--platform", choices=sorted(PLATFORMS), help="target (default: this machine)")
    build_cmd.add_argument("--python", help="target CPython minor version, e.g. 3.12 (default: this one)")
    build_cmd.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default: dist/)")
    verify_cmd = commands.add_parser("verify", help="install each zip as a host does and start it")
    verify_cmd.add_argument("zips", nargs="+", help="zip files")
    verify_cmd.add_argument("--python-exe", help="the interpreter a host runs as python3 (default: PATH's)")
    args = parser.parse_args(argv)

    if args.command == "lock":
        for connector_id in args.ids or connector_ids():
            print(lock(connector_id).relative_to(ROOT))
        return 0
    if args.command == "build":
        target = PLATFORMS[args.platform] if args.platform else host_platform()
        python = args.python or f"{sys.version_info[0]}.{sys.version_info[1]}"
        if not re.fullmatch(r"3\.\d{1,2}", python):
            fail(f"--python takes a CPython minor version such as 3.12, not {python!r}")
        supported = build_settings().get("pythons", [])
        if supported and tuple(map(int, python.split("."))) < min(tuple(map(int, v.split("."))) for v in supported):
            fail(f"the locks are resolved for Python {min(supported)} and later; --python {python} is older")
        for connector_id in args.ids or connector_ids():
            out = build(connector_id, python, target, Path(args.out))
            print(f"{out}  {out.stat().st_size / 1e6:.1f} MB")
        return 0

    import anyio

    failures = 0
    for item in args.zips:
        try:
            verified = anyio.run(verify, Path(item), args.python_exe)
        except InstallError as exc:
            failures += 1
            print(f"FAIL {item}: {exc}", file=sys.stderr)
            continue
        print(
            f"ok   {item}: {verified.manifest.id} {verified.manifest.version}, {verified.size / 1e6:.1f} MB, "
            f"{len(verified.tools)} tools, first start {verified.first_start_s:.2f} s, "
            f"second start {verified.second_start_s:.2f} s"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
