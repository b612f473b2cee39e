"""shared.install: spec 13.1.1's rules for connector zips, and installing, replacing and finding servers."""

from __future__ import annotations

import json
import stat
import sys
import zipfile
from pathlib import Path

import anyio
import pytest

from shared.install import InstallError, check_archive, discover, inspect_zip, install, probe, unpack, unpack_archive

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = {
    "acp_version": "1.0",
    "id": "toy",
    "name": "Toy",
    "version": "1.0.0",
    "description": "A test server.",
}
# A server folder that starts the test-only toy connector: enough to answer initialize and tools/list.
SERVER_SCRIPT = f"""
import runpy, sys
sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
runpy.run_path({str(ROOT / "tests" / "toy_connector.py")!r}, run_name="__main__")
"""
BROKEN_SCRIPT = "import sys\nsys.stderr.write('missing dependency: nothing to import\\n')\nsys.exit(3)\n"


def manifest(**changes: object) -> bytes:
    data = {**MANIFEST, "transport": {"type": "stdio", "command": sys.executable, "args": ["server.py"]}, **changes}
    return json.dumps(data).encode()


def make_zip(path: Path, entries: dict[str, bytes | str], **write: object) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data, **write)  # type: ignore[arg-type]
    return path


def server_zip(path: Path, version: str = "1.0.0", script: str = SERVER_SCRIPT) -> Path:
    return make_zip(path, {"toy/acp.json": manifest(version=version), "toy/server.py": script, "toy/README.md": "x"})


@pytest.fixture
def runtime(tmp_path: Path) -> dict[str, Path]:
    dirs = {"cache_dir": tmp_path / "cache", "tmp_dir": tmp_path / "tmp"}
    for directory in dirs.values():
        directory.mkdir()
    return dirs


# -- spec 13.1.1: which zips a host accepts --------------------------------------------------


def test_the_shallowest_acp_json_wins_and_a_bom_is_tolerated(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "a.zip",
        {
            "toy/acp.json": b"\xef\xbb\xbf" + manifest(),
            "toy/lib/other/acp.json": manifest(id="other"),
            "toy/server.py": "",
            "__MACOSX/toy/._server.py": "resource fork",
        },
    )
    found = inspect_zip(archive)
    assert (found.id, found.name, found.root, found.version) == ("toy", "Toy", "toy/", "1.0.0")
    dest = tmp_path / "out"
    unpack(archive, dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "acp.json",
        "lib/other/acp.json",
        "server.py",
    ]  # what lies outside the manifest's folder is ignored


def test_an_acp_json_at_the_root_of_the_zip_is_accepted(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", {"acp.json": manifest(), "server.py": ""})
    assert inspect_zip(archive).root == ""
    unpack(archive, tmp_path / "out")
    assert (tmp_path / "out" / "server.py").is_file()


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"toy/server.py": ""}, "holds no acp.json"),
        ({"a/acp.json": manifest(), "b/acp.json": manifest()}, "several acp.json at the same depth"),
        ({"toy/acp.json": manifest(id="Bad Id")}, "must match ^[a-z][a-z0-9_-]*$"),
        ({"toy/acp.json": manifest(id="9lives")}, "must match"),
        ({"toy/acp.json": manifest(name="")}, "name must be a non-empty string"),
        ({"toy/acp.json": b"[1, 2]"}, "must hold a JSON object"),
        ({"toy/acp.json": b"{not json"}, "is not valid UTF-8 JSON"),
        ({"toy/acp.json": manifest(), "toy/../evil.py": "x"}, "leaves the folder"),
        ({"toy/acp.json": manifest(), "../../etc/evil": "x"}, "leaves the folder"),
        ({"toy/acp.json": manifest(), "toy\\..\\..\\evil.py": "x"}, "leaves the folder"),
        ({"toy/acp.json": manifest(), "/etc/evil": "x"}, "is an absolute path"),
        ({"toy/acp.json": manifest(), "C:/Windows/evil.dll": "x"}, "is an absolute path"),
    ],
    ids=[
        "missing",
        "ambiguous",
        "bad-id",
        "id-starts-with-digit",
        "empty-name",
        "not-an-object",
        "not-json",
        "dotdot-inside",
        "dotdot-outside",
        "backslash-dotdot",
        "absolute",
        "drive-letter",
    ],
)
def test_bad_zips_are_refused_with_the_reason(tmp_path: Path, entries: dict[str, bytes | str], message: str) -> None:
    archive = make_zip(tmp_path / "bad.zip", entries)
    with pytest.raises(InstallError) as caught:
        inspect_zip(archive)
    assert message in str(caught.value)
    with pytest.raises(InstallError):
        unpack(archive, tmp_path / "out")
    assert not (tmp_path / "evil.py").exists() and not (tmp_path.parent / "evil.py").exists()


def test_a_symlink_entry_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("toy/acp.json", manifest())
        link = zipfile.ZipInfo("toy/passwd")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    with pytest.raises(InstallError, match="symbolic link"):
        inspect_zip(archive)


def test_zip64_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "z64.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("toy/acp.json", manifest())
        with zf.open("toy/server.py", "w", force_zip64=True) as handle:
            handle.write(b"print('hi')\n")
    with pytest.raises(InstallError, match="zip64"):
        inspect_zip(archive)


def test_a_zip64_end_record_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "z64.zip", {"toy/acp.json": manifest()})
    data = archive.read_bytes()
    end = data.rfind(b"PK\x05\x06")
    # A zip64 end-of-central-directory locator right before the classic end record.
    locator = b"PK\x06\x07" + (0).to_bytes(4, "little") + end.to_bytes(8, "little") + (1).to_bytes(4, "little")
    archive.write_bytes(data[:end] + locator + data[end:])
    with pytest.raises(InstallError, match="zip64"):
        inspect_zip(archive)


def test_encrypted_entries_and_other_methods_are_refused(tmp_path: Path) -> None:
    archive = tmp_path / "enc.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("toy/acp.json", manifest())
        zf.writestr("toy/secret.py", b"\x00" * 12 + b"ciphertext")
    _set_encrypted_flag(archive, b"toy/secret.py")  # zipfile cannot write encrypted entries itself
    with pytest.raises(InstallError, match="encrypted"):
        inspect_zip(archive)
    bzip = make_zip(tmp_path / "bz.zip", {"toy/acp.json": manifest()}, compress_type=zipfile.ZIP_BZIP2)
    with pytest.raises(InstallError, match="only stored and deflate"):
        inspect_zip(bzip)
    stored = make_zip(tmp_path / "stored.zip", {"toy/acp.json": manifest()}, compress_type=zipfile.ZIP_STORED)
    assert inspect_zip(stored).id == "toy"


def _set_encrypted_flag(archive: Path, name: bytes) -> None:
    data = bytearray(archive.read_bytes())
    for signature, name_offset, flag_offset in ((b"PK\x03\x04", 30, 6), (b"PK\x01\x02", 46, 8)):
        header = data.find(signature)
        while header != -1:
            if data[header + name_offset : header + name_offset + len(name)] == name:
                data[header + flag_offset] |= 0x1
            header = data.find(signature, header + 4)
    archive.write_bytes(bytes(data))


def test_something_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "server.zip"
    fake.write_text("not a zip")
    with pytest.raises(InstallError, match="not a zip file"):
        inspect_zip(fake)


def test_unpack_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", {"toy/acp.json": manifest()})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    with pytest.raises(InstallError, match="not empty"):
        unpack(archive, tmp_path / "out")


def test_an_archive_that_is_not_a_connector_zip_is_unpacked_whole(tmp_path: Path) -> None:
    """An MCP bundle has manifest.json at its root and connector folders below: unpack_archive takes all of it."""
    archive = make_zip(tmp_path / "b.mcpb", {"manifest.json": "{}", "acps/toy/acp.json": manifest(), "lib/x.py": "x"})
    assert [info.filename for info in check_archive(archive)] == ["manifest.json", "acps/toy/acp.json", "lib/x.py"]
    unpack_archive(archive, tmp_path / "out")
    found = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert found == ["acps/toy/acp.json", "lib/x.py", "manifest.json"]
    assert (tmp_path / "out" / "lib" / "x.py").read_text() == "x"


@pytest.mark.parametrize(
    ("name", "message"),
    [("../evil.py", "leaves the folder"), ("/evil.py", "absolute path"), ("C:/evil.py", "absolute")],
)
def test_unpack_archive_refuses_what_inspect_zip_refuses(tmp_path: Path, name: str, message: str) -> None:
    archive = make_zip(tmp_path / "b.mcpb", {"manifest.json": "{}", name: "x"})
    with pytest.raises(InstallError, match=message):
        unpack_archive(archive, tmp_path / "out")
    assert not (tmp_path / "evil.py").exists() and not (tmp_path / "out").exists()


# -- installing: start first, replace after ---------------------------------------------------


@pytest.mark.anyio
async def test_install_starts_the_server_then_moves_it_into_place(tmp_path: Path, runtime: dict[str, Path]) -> None:
    servers = tmp_path / "servers"
    installed = await install(server_zip(tmp_path / "toy.zip"), servers, **runtime)
    assert installed.folder == servers / "toy" and installed.manifest.version == "1.0.0"
    assert sorted(p.name for p in servers.iterdir()) == ["toy"]  # no staging folder left behind
    result = await probe(installed.folder, **runtime)
    assert result.capability["version"] == "1.0" and "autocontext" in result.tools


@pytest.mark.anyio
async def test_a_version_that_does_not_start_leaves_the_previous_one_intact(
    tmp_path: Path, runtime: dict[str, Path]
) -> None:
    servers = tmp_path / "servers"
    await install(server_zip(tmp_path / "v1.zip", "1.0.0"), servers, **runtime)
    before = {p: p.read_bytes() for p in (servers / "toy").rglob("*") if p.is_file()}
    stopped: list[str] = []
    with pytest.raises(InstallError) as caught:
        await install(
            server_zip(tmp_path / "v2.zip", "2.0.0", BROKEN_SCRIPT),
            servers,
            before_replace=lambda m: stopped.append(m.id),
            **runtime,
        )
    assert "toy did not start from its folder" in str(caught.value)
    assert "missing dependency" in str(caught.value)  # the server's stderr tells the person why
    assert stopped == []  # the running server is not stopped for a version that failed
    assert {p: p.read_bytes() for p in (servers / "toy").rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in servers.iterdir()) == ["toy"]

    await install(
        server_zip(tmp_path / "v3.zip", "3.0.0"), servers, before_replace=lambda m: stopped.append(m.id), **runtime
    )
    assert stopped == ["toy"]
    assert json.loads((servers / "toy" / "acp.json").read_text())["version"] == "3.0.0"
    assert sorted(p.name for p in servers.iterdir()) == ["toy"]


@pytest.mark.anyio
async def test_a_refused_zip_installs_nothing(tmp_path: Path, runtime: dict[str, Path]) -> None:
    servers = tmp_path / "servers"
    archive = make_zip(tmp_path / "bad.zip", {"toy/acp.json": manifest(), "toy/../x": "x"})
    with pytest.raises(InstallError, match="leaves the folder"):
        await install(archive, servers, **runtime)
    assert not servers.exists() or list(servers.iterdir()) == []


@pytest.mark.anyio
async def test_probe_refuses_runtime_folders_inside_the_server_folder(tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "acp.json").write_bytes(manifest())
    with pytest.raises(InstallError, match="ACP_CACHE_DIR must lie outside"):
        await probe(folder, cache_dir=folder / "cache", tmp_dir=tmp_path)


@pytest.mark.anyio
async def test_probe_needs_a_stdio_transport(tmp_path: Path, runtime: dict[str, Path]) -> None:
    folder = tmp_path / "remote"
    folder.mkdir()
    (folder / "acp.json").write_bytes(manifest(transport={"type": "http", "url": "https://example.test/mcp"}))
    with pytest.raises(InstallError, match="needs a stdio transport"):
        await probe(folder, **runtime)


@pytest.mark.anyio
async def test_a_server_that_never_answers_times_out(tmp_path: Path, runtime: dict[str, Path]) -> None:
    archive = server_zip(tmp_path / "slow.zip", script="import time\ntime.sleep(60)\n")
    with pytest.raises(InstallError, match="did not start"):
        with anyio.fail_after(30):
            await install(archive, tmp_path / "servers", timeout_s=2, **runtime)


# -- finding servers: precedence and ignored folders (13.1) ----------------------------------


def _folder(parent: Path, name: str, server_id: str | None = None, version: str = "1.0.0") -> None:
    (parent / name).mkdir(parents=True)
    (parent / name / "acp.json").write_bytes(manifest(id=server_id or name, version=version))


def test_discover_prefers_the_project_and_ignores_dot_folders_and_sources(tmp_path: Path) -> None:
    system, project = tmp_path / "system", tmp_path / "project"
    _folder(system, "ga4", version="1.0.0")
    _folder(system, "bigquery")
    _folder(system, "sources")  # only a project's sources folder is reserved
    _folder(system, ".installing-x", "hidden")
    _folder(project, "ga4", version="2.0.0")
    _folder(project, "sources")
    _folder(project, ".cache", "dotted")
    (project / "notes").mkdir()  # no acp.json: not a server
    _folder(project, "broken")
    (project / "broken" / "acp.json").write_text("{")
    found = discover(system, project)
    assert sorted(found) == ["bigquery", "ga4", "sources"]
    assert found["ga4"].scope == "project" and found["ga4"].manifest.version == "2.0.0"
    assert found["bigquery"].scope == "system" and found["sources"].scope == "system"
    assert discover(None, project).keys() == {"ga4"}
    assert discover(tmp_path / "missing") == {}


def test_within_one_folder_the_one_named_after_its_id_wins(tmp_path: Path) -> None:
    _folder(tmp_path, "a-copy", "ga4", version="0.9.0")
    _folder(tmp_path, "ga4", "ga4", version="1.0.0")
    _folder(tmp_path, "z-copy", "ga4", version="0.8.0")
    assert discover(tmp_path)["ga4"].manifest.version == "1.0.0"
