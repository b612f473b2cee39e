"""Host side of spec 13.1: install a connector ``.zip`` into a server folder, and find installed ones.

A host (the test host, ``build/acpzip.py verify`` and the later bridge) calls :func:`install`:

1. :func:`inspect_zip` refuses archives a host must not unpack (:func:`check_archive`: zip64,
   encrypted entries, methods other than stored/deflate, symlinks, any entry whose path leaves
   the folder), then reads the shallowest ``acp.json`` (a UTF-8 BOM is tolerated) and validates
   ``id`` and ``name``.
2. The zip is unpacked into a dot-folder beside the destination (hosts ignore dot-folders, so a
   half-written copy is never listed).
3. :func:`probe` starts the server from there, exactly as its ``acp.json`` says, with
   ``ACP_CACHE_DIR``/``ACP_TMP_DIR`` outside the folder, and checks that it announces
   ``capabilities.experimental.acp`` and answers ``tools/list``.
4. Only then is a previous version moved aside and the new folder renamed into place; on any
   failure the previous version is untouched.

An archive that is not one connector's zip (the bridge's MCP bundle, ``build/acpzip.py bundle``)
passes the same :func:`check_archive` and is unpacked whole by :func:`unpack_archive`.

These errors are the host's, not a tool call's: they never reach a model, so they are plain
exceptions with a message for the person installing, not ACP error codes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

__all__ = [
    "ID_PATTERN",
    "InstallError",
    "InstalledServer",
    "Manifest",
    "ProbeResult",
    "check_archive",
    "discover",
    "inspect_zip",
    "install",
    "probe",
    "unpack",
    "unpack_archive",
]

ID_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*$")
MANIFEST = "acp.json"
# Zip bombs: a connector with its vendored wheels is well under these.
MAX_ENTRIES = 100_000
MAX_UNPACKED_BYTES = 2 * 1024**3
_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EXTRA = 0x0001


class InstallError(Exception):
    """A zip or server folder a host must refuse; the message says why and what to do."""


@dataclass(frozen=True)
class Manifest:
    """A validated ``acp.json`` and where its folder sits inside the zip (``""`` = the root)."""

    id: str
    name: str
    data: Mapping[str, Any]
    root: str = ""

    @property
    def version(self) -> str | None:
        value = self.data.get("version")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class InstalledServer:
    """An ACP server folder found by :func:`discover`."""

    folder: Path
    manifest: Manifest
    scope: str  # "project" or "system"


@dataclass(frozen=True)
class ProbeResult:
    """What a server announced when :func:`probe` started it."""

    capability: Mapping[str, Any]
    server_info: Mapping[str, Any]
    tools: list[str] = field(default_factory=list)


# -- reading a zip ---------------------------------------------------------------------------


def parse_manifest(raw: bytes, where: str, root: str = "") -> Manifest:
    """Validate ``acp.json`` bytes (13.1.1 step 1): a JSON object with a valid ``id`` and a ``name``."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InstallError(f"{where} is not valid UTF-8 JSON ({exc}); fix the file and rebuild the zip") from None
    if not isinstance(data, dict):
        raise InstallError(f"{where} must hold a JSON object (spec 13.2)")
    server_id, name = data.get("id"), data.get("name")
    if not isinstance(server_id, str) or not ID_PATTERN.match(server_id):
        raise InstallError(f"{where}: id {server_id!r} must match {ID_PATTERN.pattern} (spec 13.2)")
    if not isinstance(name, str) or not name.strip():
        raise InstallError(f"{where}: name must be a non-empty string (spec 13.2)")
    return Manifest(id=server_id, name=name, data=data, root=root)


def _entry_path(info: zipfile.ZipInfo) -> PurePosixPath:
    """The entry's path, refused if it could land outside the folder it is unpacked into."""
    name = info.filename.replace("\\", "/")  # zips written on Windows sometimes use backslashes
    if "\x00" in name:
        raise InstallError(f"entry {info.filename!r} has a NUL byte in its name; the zip is refused")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise InstallError(f"entry {info.filename!r} is an absolute path; a zip may only hold relative paths")
    path = PurePosixPath(name)
    if ".." in path.parts:
        raise InstallError(f"entry {info.filename!r} leaves the folder ('..'); the zip is refused")
    return path


def _has_zip64_end_record(path: Path) -> bool:
    size = path.stat().st_size
    with path.open("rb") as handle:
        handle.seek(max(0, size - 65_557))  # the end record plus the longest possible comment
        tail = handle.read()
    at = tail.rfind(_EOCD)
    return at >= 20 and tail[at - 20 : at - 16] == _ZIP64_LOCATOR


def _has_zip64_extra(extra: bytes) -> bool:
    offset = 0
    while offset + 4 <= len(extra):
        header_id = int.from_bytes(extra[offset : offset + 2], "little")
        length = int.from_bytes(extra[offset + 2 : offset + 4], "little")
        if header_id == _ZIP64_EXTRA:
            return True
        offset += 4 + length
    return False


def _local_extra(handle: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    """The extra field of an entry's local header, which may say zip64 when the central directory does not."""
    handle.seek(info.header_offset)
    header = handle.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise InstallError(f"entry {info.filename!r} has no valid local header; the zip is damaged")
    name_length = int.from_bytes(header[26:28], "little")
    extra_length = int.from_bytes(header[28:30], "little")
    handle.seek(info.header_offset + 30 + name_length)
    return handle.read(extra_length)


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return info.create_system == 3 and stat.S_ISLNK(info.external_attr >> 16)


def check_archive(path: str | os.PathLike[str]) -> list[zipfile.ZipInfo]:
    """The checks of spec 13.1.1 that hold for any archive a host unpacks, whatever it carries (a
    connector zip, the bridge's MCP bundle): a plain zip (no zip64, no encryption, stored or
    deflate), no symbolic link, no entry whose path leaves the folder, and bounded in size.
    Returns its entries."""
    archive = Path(path)
    if not zipfile.is_zipfile(archive):
        raise InstallError(f"{archive.name} is not a zip file")
    if _has_zip64_end_record(archive):
        raise InstallError(f"{archive.name} is a zip64 archive; spec 13.1.1 admits only plain zips (stored or deflate)")
    with archive.open("rb") as raw, zipfile.ZipFile(raw) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_ENTRIES:
            raise InstallError(f"{archive.name} has {len(infos)} entries (limit {MAX_ENTRIES})")
        if sum(info.file_size for info in infos) > MAX_UNPACKED_BYTES:
            raise InstallError(f"{archive.name} unpacks to more than {MAX_UNPACKED_BYTES // 1024**3} GiB")
        for info in infos:
            _entry_path(info)
            if info.flag_bits & 0x1:
                raise InstallError(f"entry {info.filename!r} is encrypted; spec 13.1.1 refuses encrypted zips")
            if _has_zip64_extra(info.extra) or _has_zip64_extra(_local_extra(raw, info)):
                raise InstallError(f"entry {info.filename!r} uses zip64; spec 13.1.1 admits only plain zips")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise InstallError(
                    f"entry {info.filename!r} uses compression method {info.compress_type}; "
                    "only stored and deflate are admitted (spec 13.1.1)"
                )
            if _is_symlink(info):
                raise InstallError(f"entry {info.filename!r} is a symbolic link; a server folder holds plain files")
    return infos


def inspect_zip(path: str | os.PathLike[str]) -> Manifest:
    """Check a connector zip as spec 13.1.1 asks, without unpacking it; return its manifest."""
    archive = Path(path)
    infos = check_archive(archive)
    candidates: list[tuple[int, str, zipfile.ZipInfo]] = []
    for info in infos:
        entry = _entry_path(info)
        if entry.name == MANIFEST and not info.is_dir():
            candidates.append((len(entry.parts), str(entry), info))
    if not candidates:
        raise InstallError(f"{archive.name} holds no acp.json; zip the server folder that contains it")
    candidates.sort(key=lambda item: (item[0], item[1]))
    depth = candidates[0][0]
    shallowest = [c for c in candidates if c[0] == depth]
    if len(shallowest) > 1:
        names = ", ".join(c[1] for c in shallowest)
        raise InstallError(f"{archive.name} has several acp.json at the same depth ({names}); keep one server")
    _, where, info = shallowest[0]
    root = str(PurePosixPath(where).parent)
    with zipfile.ZipFile(archive) as zf:
        raw_manifest = zf.read(info)
    return parse_manifest(raw_manifest, f"{archive.name}:{where}", "" if root == "." else root + "/")


def _members(zf: zipfile.ZipFile, root: str) -> Iterator[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """The entries inside the folder ``root`` of the zip, relative to it; everything else is ignored (13.1.1)."""
    for info in zf.infolist():
        name = str(_entry_path(info))
        if root and not name.startswith(root):
            continue
        relative = PurePosixPath(name[len(root) :])
        if relative.parts:
            yield info, relative


def _extract(path: str | os.PathLike[str], root: str, dest: str | os.PathLike[str]) -> None:
    """Unpack the entries under ``root`` into ``dest`` (created; must not exist or be empty)."""
    target = Path(dest)
    target.mkdir(parents=True, exist_ok=True)
    if any(target.iterdir()):
        raise InstallError(f"{target} is not empty; unpack into a new folder")
    base = target.resolve()
    with zipfile.ZipFile(path) as zf:
        for info, relative in _members(zf, root):
            out = base.joinpath(*relative.parts)
            if not out.resolve().is_relative_to(base):  # belt and braces after _entry_path
                raise InstallError(f"entry {info.filename!r} leaves the folder; the zip is refused")
            if info.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as source, out.open("wb") as sink:
                shutil.copyfileobj(source, sink, 1024 * 1024)
            executable = info.create_system == 3 and (info.external_attr >> 16) & 0o111
            out.chmod(0o755 if executable else 0o644)


def unpack(path: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Manifest:
    """Unpack the server folder of a checked zip into ``dest`` (created; must not exist or be empty)."""
    manifest = inspect_zip(path)
    _extract(path, manifest.root, dest)
    return manifest


def unpack_archive(path: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Unpack a whole archive that passes :func:`check_archive` into ``dest`` (created; must not
    exist or be empty), for archives that are not one connector's zip, such as an MCP bundle."""
    check_archive(path)
    _extract(path, "", dest)


# -- starting a server from its folder -------------------------------------------------------


async def probe(
    folder: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str],
    tmp_dir: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
) -> ProbeResult:
    """Start the server in ``folder`` from its ``acp.json`` and check it (13.1.1 step 3).

    ``cache_dir`` and ``tmp_dir`` must lie outside the folder: a server never writes into it.
    """
    import anyio

    from shared.host import AcpHost

    root, manifest = await anyio.to_thread.run_sync(_probe_target, folder, cache_dir, tmp_dir)
    # PYTHONPATH is emptied so that the folder runs only on what it carries.
    run_env = {"PYTHONPATH": "", **dict(env or {}), "ACP_CACHE_DIR": str(cache_dir), "ACP_TMP_DIR": str(tmp_dir)}
    host = AcpHost.for_folder(root, env=run_env, read_timeout_s=timeout_s)
    try:
        with anyio.fail_after(timeout_s):
            async with host:
                capability = host.server_capability
                if not capability:
                    raise InstallError(f"{manifest.id} started but does not announce capabilities.experimental.acp")
                tools = [tool["name"] for tool in await host.list_tools()]
                return ProbeResult(capability=capability, server_info=host.server_info, tools=tools)
    except InstallError:
        raise
    except Exception as exc:  # whatever failed, the host reports it and installs nothing
        detail = host.stderr().strip()[-2000:] if host.stderr_path else ""
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise InstallError(
            f"{manifest.id} did not start from its folder ({reason})"
            + (f"\nserver stderr:\n{detail}" if detail else "")
        ) from exc


def _probe_target(
    folder: str | os.PathLike[str], cache_dir: str | os.PathLike[str], tmp_dir: str | os.PathLike[str]
) -> tuple[Path, Manifest]:
    root = Path(folder).resolve()
    for label, directory in (("ACP_CACHE_DIR", cache_dir), ("ACP_TMP_DIR", tmp_dir)):
        if Path(directory).resolve().is_relative_to(root):
            raise InstallError(f"{label} must lie outside the server folder (spec 13.1)")
    manifest = parse_manifest((root / MANIFEST).read_bytes(), str(root / MANIFEST))
    transport = manifest.data.get("transport")
    if not isinstance(transport, dict) or transport.get("type") != "stdio" or not transport.get("command"):
        raise InstallError(f"{manifest.id}: acp.json needs a stdio transport with a command to be started here")
    return root, manifest


# -- installing and finding servers ----------------------------------------------------------


async def install(
    path: str | os.PathLike[str],
    servers_dir: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str],
    tmp_dir: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    before_replace: Callable[[Manifest], None] | None = None,
    scope: str = "system",
    timeout_s: float = 60.0,
) -> InstalledServer:
    """Install a connector zip as ``<servers_dir>/<id>/`` (spec 13.1.1).

    A previous version is replaced only after the new one has started and answered; on any
    failure it stays intact. ``before_replace`` is where a host stops a running process with
    the same id.
    """
    import anyio

    directory = Path(servers_dir)
    manifest, staging = await anyio.to_thread.run_sync(_stage, path, directory)
    try:
        await probe(staging, cache_dir=cache_dir, tmp_dir=tmp_dir, env=env, timeout_s=timeout_s)
        if before_replace is not None:
            before_replace(manifest)
        target = await anyio.to_thread.run_sync(_swap_in, staging, directory / manifest.id)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return InstalledServer(folder=target, manifest=manifest, scope=scope)


def _stage(path: str | os.PathLike[str], directory: Path) -> tuple[Manifest, Path]:
    """Unpack into a dot-folder beside the destination: hosts ignore it while it is incomplete,
    and the final rename stays on one file system."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = inspect_zip(path)
    staging = Path(tempfile.mkdtemp(prefix=f".installing-{manifest.id}-", dir=directory))
    try:
        unpack(path, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest, staging


def _swap_in(staging: Path, target: Path) -> Path:
    """Replace ``target`` with ``staging``; if the rename fails, the previous version is put back."""
    retired = target.with_name(f".replaced-{target.name}-{uuid.uuid4().hex[:8]}")
    if target.exists():
        target.rename(retired)
    try:
        staging.rename(target)
    except BaseException:
        if retired.exists() and not target.exists():
            retired.rename(target)
        raise
    shutil.rmtree(retired, ignore_errors=True)
    return target


def _servers_in(directory: Path, scope: str) -> Iterator[InstalledServer]:
    if not directory.is_dir():
        return
    for folder in sorted(directory.iterdir()):
        if folder.name.startswith(".") or (scope == "project" and folder.name == "sources"):
            continue
        manifest_path = folder / MANIFEST
        if not folder.is_dir() or not manifest_path.is_file():
            continue
        try:
            manifest = parse_manifest(manifest_path.read_bytes(), str(manifest_path))
        except InstallError:
            continue  # a broken folder is not listed; installing it again reports why
        yield InstalledServer(folder=folder, manifest=manifest, scope=scope)


def discover(
    system_dir: str | os.PathLike[str] | None, project_dir: str | os.PathLike[str] | None = None
) -> dict[str, InstalledServer]:
    """The servers a host lists, by id: a project's server hides the system one with the same id (13.1)."""
    found: dict[str, InstalledServer] = {}
    for directory, scope in ((system_dir, "system"), (project_dir, "project")):
        if directory is None:
            continue
        scoped: dict[str, InstalledServer] = {}
        for server in _servers_in(Path(directory), scope):
            # Two folders with one id in the same scope: the one named after the id wins (13.1 SHOULD).
            if server.manifest.id not in scoped or server.folder.name == server.manifest.id:
                scoped[server.manifest.id] = server
        found.update(scoped)
    return found
