"""build/acpzip.py bundle: the ACP Bridge as an MCP bundle (.mcpb): its manifest, layout, reproducibility and verify.

The manifest and archive checks run on hand-made data. One real bundle is built per test run (with the
databases connector only, from the run's shared databases zip); the tests that need it are slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from acpzip_support import SOURCE_DATE_EPOCH, ZipBuilds
from loader import load_file

from shared.install import InstallError

ROOT = Path(__file__).resolve().parents[2]
BRIDGE_TOOLS = ["acp_sources", "acp_datasets", "acp_query"]


@pytest.fixture(scope="module")
def launch() -> ModuleType:
    return load_file(ROOT / "build" / "launch.py", "acp_launch")


def good_manifest(acpzip: ModuleType, tag: str = "manylinux_2_28_x86_64", python: str = "3.11") -> dict[str, Any]:
    connectors = [acpzip.source_manifest("databases"), acpzip.source_manifest("prediction")]
    manifest: dict[str, Any] = acpzip._bundle_manifest("0.1.0", python, acpzip.PLATFORMS[tag], connectors)
    return manifest


def changed(manifest: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``manifest`` with the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    copy: dict[str, Any] = json.loads(json.dumps(manifest))
    *parents, last = path.split(".")
    node = copy
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return copy


# -- the manifest ---------------------------------------------------------------------------------


def test_the_generated_manifest_passes_and_follows_the_mcpb_spec(acpzip: ModuleType) -> None:
    manifest = good_manifest(acpzip)
    assert acpzip.check_bundle_manifest(manifest, {"launch.py"}) == []
    assert manifest["manifest_version"] == "0.3" and manifest["name"] == "acp-bridge"
    assert set(manifest) <= set(acpzip.MCPB_FIELDS)
    assert manifest["server"] == {
        "type": "python",
        "entry_point": "launch.py",
        "mcp_config": {
            "command": "python3",
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
    }
    assert manifest["compatibility"] == {"platforms": ["linux"], "runtimes": {"python": ">=3.11.0 <3.12.0"}}
    assert manifest["user_config"]["project_folder"]["type"] == "directory"
    assert manifest["user_config"]["project_folder"]["required"] is True
    assert manifest["user_config"]["sources_file"]["type"] == "file"
    assert [tool["name"] for tool in manifest["tools"]] == BRIDGE_TOOLS and manifest["tools_generated"] is True
    assert "Databases, Prediction" in manifest["description"]


@pytest.mark.parametrize(
    ("tag", "python", "command", "platform", "runtime"),
    [
        ("win_amd64", "3.13", "python", "win32", ">=3.13.0 <3.14.0"),
        ("macosx_12_0_arm64", "3.12", "python3", "darwin", ">=3.12.0 <3.13.0"),
    ],
)
def test_each_bundle_names_its_one_platform_and_python(
    acpzip: ModuleType, tag: str, python: str, command: str, platform: str, runtime: str
) -> None:
    manifest = good_manifest(acpzip, tag, python)
    assert manifest["server"]["mcp_config"]["command"] == command
    assert manifest["compatibility"] == {"platforms": [platform], "runtimes": {"python": runtime}}
    assert acpzip.bundle_name("0.1.0", python, acpzip.PLATFORMS[tag]) == (
        f"acp-bridge-0.1.0-cp{python.replace('.', '')}-{tag}.mcpb"
    )


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("version", "1.0", "version '1.0' must be strict semver"),
        ("version", "v0.1.0", "version 'v0.1.0' must be strict semver"),
        ("version", "01.2.3", "version '01.2.3' must be strict semver"),
        ("server.mcp_config", ..., "server.mcp_config is missing"),
        ("server.mcp_config.command", ..., "server.mcp_config needs a command"),
        ("server.entry_point", "server/main.py", "server.entry_point 'server/main.py' is not a file of the bundle"),
        ("server.type", "node", "server.type must be 'python'"),
        ("manifest_version", "0.9", "manifest_version must be '0.3'"),
        ("author", ..., "author must be an object with a name"),
        ("homepage_url", "https://x", "fields the MCPB spec does not define: homepage_url"),
        ("compatibility.platforms", ["linux", "darwin"], "compatibility.platforms must name one of"),
        ("compatibility.platforms", ["macos"], "compatibility.platforms must name one of"),
        ("compatibility.runtimes", ..., "compatibility.runtimes.python must say"),
        ("user_config.sources_file", ..., "uses ${user_config.sources_file}, which user_config does not declare"),
        ("user_config.project_folder.type", "folder", "user_config.project_folder.type must be one of"),
        (
            "user_config.db_password",
            {"type": "string", "title": "Password", "description": "The database password"},
            "user_config.db_password asks for a credential; credentials stay in sources.json",
        ),
        (
            "user_config.account",
            {"type": "string", "title": "Account", "description": "x", "sensitive": True},
            "user_config.account asks for a credential",
        ),
        (
            "server.mcp_config.env",
            {"API_KEY": "${user_config.api_key}"},
            "mcp_config.env.API_KEY looks like a credential",
        ),
        ("server.mcp_config.env", {"GOOGLE_SERVICE_ACCOUNT": "x"}, "looks like a credential"),
        ("icon", "icon.svg", "icon 'icon.svg' must be a png file inside the bundle"),
    ],
)
def test_a_bad_manifest_says_what_is_wrong(acpzip: ModuleType, path: str, value: Any, message: str) -> None:
    problems = acpzip.check_bundle_manifest(changed(good_manifest(acpzip), path, value), {"launch.py", "icon.svg"})
    assert any(message in problem for problem in problems), problems


# -- the archive ----------------------------------------------------------------------------------


def make_zip(
    path: Path, entries: Mapping[str, str | bytes], edit: Callable[[zipfile.ZipInfo], None] | None = None
) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            if edit:
                edit(info)
            zf.writestr(info, data)
    return path


def as_symlink(info: zipfile.ZipInfo) -> None:
    info.create_system = 3  # Unix, whose mode bits say symbolic link
    info.external_attr = 0o120777 << 16


@pytest.mark.parametrize(
    ("entries", "edit", "message"),
    [
        ({"manifest.json": "{}", "../evil.py": "x"}, None, "leaves the folder ('..')"),
        ({"manifest.json": "{}", "/etc/evil": "x"}, None, "is an absolute path"),
        (
            {"manifest.json": "{}", "lib/link": "/etc/passwd"},
            as_symlink,
            "is a symbolic link",
        ),
        ({"launch.py": "x"}, None, "manifest.json is missing from the bundle's root"),
        ({"manifest.json": "not json"}, None, "manifest.json is not valid UTF-8 JSON"),
        ({"manifest.json": "[]"}, None, "manifest.json must hold a JSON object"),
    ],
)
def test_an_unsafe_or_broken_archive_is_refused(
    acpzip: ModuleType,
    tmp_path: Path,
    entries: dict[str, str],
    edit: Callable[[zipfile.ZipInfo], None] | None,
    message: str,
) -> None:
    problems = acpzip.check_bundle(make_zip(tmp_path / "bad.mcpb", entries, edit))
    assert len(problems) == 1 and message in problems[0], problems


def test_a_zip64_bundle_is_refused(acpzip: ModuleType, tmp_path: Path) -> None:
    archive = tmp_path / "big.mcpb"
    with zipfile.ZipFile(archive, "w") as zf, zf.open("manifest.json", "w", force_zip64=True) as entry:
        entry.write(b"{}")
    (problem,) = acpzip.check_bundle(archive)
    assert "uses zip64" in problem


def test_the_bundled_connectors_are_checked_too(acpzip: ModuleType, tmp_path: Path) -> None:
    """acps/<id>/ must hold a valid acp.json with that id, built for the bundle's Python and platform."""
    manifest = good_manifest(acpzip)
    launcher = acpzip._launcher("acp-bridge", "bridge", ".mcpb", "3.11", acpzip.PLATFORMS["manylinux_2_28_x86_64"])
    other = launcher.replace("PYTHON = (3, 11)", "PYTHON = (3, 12)")
    acp = {"acp_version": "1.0", "id": "databases", "name": "D", "version": "1", "description": "d"}
    entries = {
        "manifest.json": json.dumps(manifest),
        "launch.py": launcher,
        "acps/databases/acp.json": json.dumps({**acp, "transport": {"type": "stdio", "command": "python3"}}),
        "acps/databases/launch.py": other,
        "acps/databases/lib/x/__pycache__/x.cpython-311.pyc": "",
        "acps/renamed/acp.json": json.dumps(acp),
        "acps/broken/acp.json": "{",
    }
    problems = acpzip.check_bundle(make_zip(tmp_path / "b.mcpb", entries))
    expected = [
        "acps/databases/: built for ['PYTHON = (3, 12)'",
        "acps/databases/: lib/x/__pycache__/x.cpython-311.pyc: no __pycache__",
        "acps/renamed/: acp.json's id is 'databases': the bridge would not find it under acps/renamed/",
        "acps/broken/: acps/broken/acp.json is not valid UTF-8 JSON",
        "acps/databases/: no skills/<name>/SKILL.md",
        "sources.example.json is missing",
        "lib/bridge/__init__.py is missing",
    ]
    for message in expected:
        assert any(problem.startswith(message) for problem in problems), (message, problems)


def test_sources_example_is_the_bridges_own_when_it_has_one(
    acpzip: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connectors = [acpzip.source_manifest("databases"), acpzip.source_manifest("prediction")]
    monkeypatch.setattr(acpzip, "ROOT", tmp_path)
    generated = json.loads(acpzip._bundle_sources_example(connectors))
    assert [(s["id"], s["acp"]) for s in generated["sources"]] == [
        ("databases", "databases"),
        ("prediction", "prediction"),
    ]
    assert "credentials" not in json.dumps(generated)
    (tmp_path / "bridge").mkdir()
    (tmp_path / "bridge" / "sources.example.json").write_text('{"sources": []}\n')
    assert acpzip._bundle_sources_example(connectors) == '{"sources": []}\n'


def test_the_bridge_lock_pins_its_extra_and_no_connector_dependency() -> None:
    """lib/ runs the bridge only: each connector brings its own dependencies in acps/<id>/lib/."""
    text = (ROOT / "build" / "locks" / "bridge.txt").read_text()
    pinned = {line.split("==")[0] for line in text.splitlines() if "==" in line}
    assert {"duckdb", "sqlglot", "mcp", "pydantic", "anyio"} <= pinned and "sqlglot==30.30.0" in text
    assert not pinned & {"psycopg", "pymysql", "statsmodels", "matplotlib", "google-cloud-bigquery"}
    assert text.startswith("# Pinned dependencies of the ACP Bridge's bundle (lib/), with hashes.\n")


# -- starting it as a host does ----------------------------------------------------------------------


def test_mcp_config_is_resolved_as_mcpb_hosts_do(acpzip: ModuleType, tmp_path: Path) -> None:
    manifest = good_manifest(acpzip)
    manifest["server"]["mcp_config"]["env"] = {"CACHE": "${HOME}/.cache", "DEBUG": "${user_config.debug}"}
    manifest["user_config"]["debug"] = {"type": "boolean", "title": "Debug", "description": "d", "default": False}
    manifest["user_config"]["extra"] = {"type": "directory", "title": "E", "description": "e", "multiple": True}
    manifest["server"]["mcp_config"]["args"].append("${user_config.extra}")
    manifest["server"]["mcp_config"]["platform_overrides"] = {"win32": {"command": "py"}}
    folder = tmp_path / "with space" / "acp-bridge"
    command, args, env = acpzip.resolve_mcp_config(
        manifest, folder, {"project_folder": "/p", "extra": ["/a", "/b"]}, {"HOME": "/home/me"}, "linux"
    )
    assert command == "python3"
    assert args == [
        f"{folder}/launch.py",
        "--root",
        str(folder),
        "--project",
        "/p",
        "--sources",
        "${user_config.sources_file}",  # no value: mcpb leaves it, and launch.py drops it
        "/a",
        "/b",
    ]
    assert env == {"CACHE": "/home/me/.cache", "DEBUG": "false"}
    assert acpzip.resolve_mcp_config(manifest, folder, {}, {}, "win32")[0] == "py"


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (["--project", "/p", "--sources", "${user_config.sources_file}"], ["--project", "/p"]),
        (["--sources=${user_config.sources_file}", "--root", "/r"], ["--root", "/r"]),
        (["${user_config.extra}", "--x"], ["--x"]),
        (["--flag", "--sources", "${user_config.s}", "value"], ["--flag", "value"]),
        (["--project", "/p${x}"], ["--project", "/p${x}"]),  # only a whole placeholder is unset
    ],
)
def test_the_launcher_drops_options_a_host_left_unset(launch: ModuleType, args: list[str], kept: list[str]) -> None:
    assert launch.without_unset_options(args) == kept


def test_the_launcher_runs_its_module_from_lib_without_unset_options(acpzip: ModuleType, tmp_path: Path) -> None:
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    (tmp_path / "launch.py").write_text(
        acpzip._launcher("acp-bridge", "echo_args", ".mcpb", python, acpzip.host_platform())
    )
    (tmp_path / "lib" / "echo_args").mkdir(parents=True)
    (tmp_path / "lib" / "echo_args" / "__main__.py").write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "launch.py"), "--project", "/p", "--sources", "${user_config.sources_file}"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"]},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["--project", "/p"]


def test_the_command_line_says_what_is_wrong(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "build/acpzip.py", *args],
            cwd=ROOT,
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )

    unknown = run("bundle", "nosuch", "--out", str(tmp_path))
    assert unknown.returncode != 0 and "no connector 'nosuch'" in unknown.stderr
    missing = run("bundle", "databases", "--zips", str(tmp_path), "--out", str(tmp_path))
    assert missing.returncode != 0 and "is missing: build it first" in missing.stderr
    assert list(tmp_path.iterdir()) == []
    broken = make_zip(tmp_path / "broken.mcpb", {"launch.py": "x"})
    refused = run("verify", str(broken))
    assert refused.returncode == 1 and "FAIL" in refused.stderr and "manifest.json is missing" in refused.stderr


# -- a real bundle (slow) ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def bridge_bundle(zip_builds: ZipBuilds, acpzip: ModuleType, python_version: str) -> Path:
    """The bundle with the databases connector only, for this machine and Python, built once per run."""
    return zip_builds.bundle(["databases"], python_version, acpzip.host_platform().tag)


def read_json(archive: Path, name: str) -> Any:
    with zipfile.ZipFile(archive) as zf:
        return json.loads(zf.read(name))


@pytest.mark.slow
def test_the_bundle_is_laid_out_as_bridge_md_says(
    bridge_bundle: Path, zip_builds: ZipBuilds, acpzip: ModuleType, python_version: str
) -> None:
    tag = acpzip.host_platform().tag
    assert bridge_bundle.name == f"acp-bridge-0.1.0-cp{python_version.replace('.', '')}-{tag}.mcpb"
    assert acpzip.check_bundle(bridge_bundle) == []
    with zipfile.ZipFile(bridge_bundle) as zf:
        infos = zf.infolist()
        names = [info.filename for info in infos]
        files = {info.filename: zf.read(info) for info in infos if not info.filename.startswith("lib/")}
    assert names == sorted(names) and {info.date_time for info in infos} == {(2026, 1, 1, 0, 0, 0)}
    assert {name for name in names if "/" not in name} == {
        "manifest.json", "launch.py", "README.md", "LICENSE", "THIRD_PARTY_NOTICES.md", "sbom.cdx.json",
        "sources.example.json",
    }  # fmt: skip
    assert {name.split("/")[0] for name in names} == {*(n for n in names if "/" not in n), "lib", "acps"}
    # lib/: the checkout's bridge and shared packages as they are, and the bridge's dependencies, no connector
    bridge = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "bridge").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    assert sorted(n[len("lib/") :] for n in names if n.startswith("lib/bridge/")) == bridge
    assert "lib/shared/host.py" in names and "lib/duckdb/__init__.py" in names and "lib/sqlglot/__init__.py" in names
    assert not any(n.startswith(("lib/connectors", "lib/psycopg", "lib/.lock")) for n in names)
    # acps/databases/: the run's databases zip, unpacked, byte for byte
    with zipfile.ZipFile(zip_builds.get("databases", python_version, tag)) as connector:
        shipped = {f"acps/{info.filename}": connector.read(info) for info in connector.infolist()}
    assert {name: data for name, data in files.items() if name.startswith("acps/")} == shipped
    manifest = json.loads(files["manifest.json"])
    assert manifest == acpzip._bundle_manifest("0.1.0", python_version, acpzip.host_platform(), [
        acpzip.source_manifest("databases")
    ])  # fmt: skip
    launcher = files["launch.py"].decode()
    assert "MODULE = 'bridge'" in launcher and f"PLATFORM = {tag!r}" in launcher
    assert "acps/databases/" in files["README.md"].decode()
    assert "lib/bridge" in files["THIRD_PARTY_NOTICES.md"].decode()
    assert (
        read_json(bridge_bundle, "sbom.cdx.json")["metadata"]["component"]["bom-ref"] == "acp-bundle:acp-bridge@0.1.0"
    )


@pytest.mark.slow
def test_a_second_bundle_is_byte_identical(
    bridge_bundle: Path,
    zip_builds: ZipBuilds,
    acpzip: ModuleType,
    python_version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tag = acpzip.host_platform().tag
    monkeypatch.setenv("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
    zips = {"databases": zip_builds.get("databases", python_version, tag)}
    second = acpzip.bundle(["databases"], python_version, acpzip.host_platform(), tmp_path, zips)
    assert second != bridge_bundle and second.read_bytes() == bridge_bundle.read_bytes()


def with_bridge(bundle: Path, out: Path, main: str) -> Path:
    """``bundle`` with ``lib/bridge/__main__.py`` replaced by ``main`` (stored, not deflated: it is only read here)."""
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            if info.filename != "lib/bridge/__main__.py":
                target.writestr(info.filename, source.read(info))
        target.writestr("lib/bridge/__main__.py", main)
    return out


# A stand-in for the bridge, served from the bundle's lib/: it checks it was started with the folder and
# the project as mcp_config says (and no --sources, which the host left unset), then serves `tools` (a
# bridge that does not start with those arguments fails the test that uses it with another message).
FAKE_BRIDGE = """
import os, sys
from mcp.server.mcpserver import MCPServer

args = sys.argv[1:]
root, project = args[args.index("--root") + 1], args[args.index("--project") + 1]
if "--sources" in args or not os.path.isfile(os.path.join(root, "manifest.json")) or not os.path.isdir(project):
    sys.exit(f"started with {{args}}")
server = MCPServer("fake-bridge")
for name in {tools!r}:
    server.tool(name=name)(lambda: "ok")
server.run()
"""


@pytest.mark.slow
def test_verify_names_the_tools_a_bridge_does_not_list(bridge_bundle: Path, acpzip: ModuleType, tmp_path: Path) -> None:
    bundle = with_bridge(bridge_bundle, tmp_path / bridge_bundle.name, FAKE_BRIDGE.format(tools=BRIDGE_TOOLS[:2]))
    with pytest.raises(InstallError, match=r"the bridge does not list acp_query"):
        anyio.run(acpzip.verify_bundle, bundle)


@pytest.mark.slow
def test_verify_reports_why_a_bridge_did_not_start(bridge_bundle: Path, acpzip: ModuleType, tmp_path: Path) -> None:
    bundle = with_bridge(bridge_bundle, tmp_path / bridge_bundle.name, "import sys\nsys.exit('no bridge today')\n")
    with pytest.raises(InstallError, match=r"(?s)did not start as manifest.json's mcp_config says.*no bridge today"):
        anyio.run(acpzip.verify_bundle, bundle)


@pytest.mark.slow
def test_the_real_bridge_in_the_bundle_answers_as_an_mcp_server(bridge_bundle: Path, acpzip: ModuleType) -> None:
    """The bundle as built from this checkout, started as its manifest says: the bridge answers as an MCP server."""
    verified = anyio.run(acpzip.verify_bundle, bridge_bundle)
    assert set(BRIDGE_TOOLS) <= set(verified.tools) and verified.connectors == ["databases"]
    assert verified.manifest["name"] == "acp-bridge" and verified.size == bridge_bundle.stat().st_size
