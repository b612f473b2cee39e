"""build/acpzip.py: every connector's zip builds reproducibly, passes verify, and really serves from its folder."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from acpzip_support import SOURCE_DATE_EPOCH, ZipBuilds, load_acpzip
from bigquery_support import DATASET, PROJECT, bq_env, meta, service_account
from discovery import connector_ids
from fakes.bigquery import FakeBigQuery
from fakes.google_oauth import JWT_BEARER_GRANT, FakeGoogleOAuth
from fakes.http import FakeHttpServer, RecordedRequest, Reply, google_error
from fakes.search_console import FakeSearchConsole
from gsc_support import DOMAIN, by_page_truth, gsc_env, today
from gsc_support import service_account as gsc_service_account

from shared.host import AcpHost
from shared.install import discover, install

pytestmark = pytest.mark.slow  # zip builds: out of the quick tier (README, Development)
ROOT = Path(__file__).resolve().parents[2]
CONNECTORS = connector_ids()
MB = 1024 * 1024


def entries(archive: Path) -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(archive) as zf:
        return zf.infolist()


def names(archive: Path) -> list[str]:
    return [info.filename for info in entries(archive)]


def read(archive: Path, name: str) -> str:
    with zipfile.ZipFile(archive) as zf:
        return zf.read(name).decode("utf-8")


def host_env() -> dict[str, str]:
    """What a host passes: PATH, with no PYTHONPATH, so the folder runs on what it carries."""
    return {"PATH": os.environ["PATH"], "PYTHONPATH": ""}


# -- the build --------------------------------------------------------------------------------


def test_every_connector_is_built_under_its_versioned_name(
    built: Mapping[str, Path], acpzip: ModuleType, python_version: str
) -> None:
    assert sorted(built) == CONNECTORS  # found by acp.json: a new connector is built without any change
    tag = acpzip.host_platform().tag
    for connector_id, archive in built.items():
        version = json.loads((ROOT / "connectors" / connector_id / "acp.json").read_text())["version"]
        assert archive.name == f"{connector_id}-{version}-cp{python_version.replace('.', '')}-{tag}.zip"
        assert {name.split("/")[0] for name in names(archive)} == {connector_id}  # one folder <id>/


@pytest.mark.parametrize("connector_id", CONNECTORS)
def test_a_second_build_is_byte_identical(
    built: Mapping[str, Path],
    acpzip: ModuleType,
    python_version: str,
    connector_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rebuilt here, in this process, against the shared zip (which another worker may have built)."""
    first = built[connector_id]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)  # the shared zips' time
    second = acpzip.build(connector_id, python_version, acpzip.host_platform(), tmp_path)
    assert second != first and second.read_bytes() == first.read_bytes(), f"{connector_id}: the rebuild differs"


@pytest.mark.parametrize("connector_id", CONNECTORS)
def test_source_date_epoch_fixes_every_timestamp(built: Mapping[str, Path], connector_id: str) -> None:
    """The shared zips are built with SOURCE_DATE_EPOCH=1767225600 (2026-01-01T00:00:00Z)."""
    assert SOURCE_DATE_EPOCH == "1767225600"
    archive = built[connector_id]
    assert {info.date_time for info in entries(archive)} == {(2026, 1, 1, 0, 0, 0)}
    sbom = json.loads(read(archive, f"{connector_id}/sbom.cdx.json"))
    assert sbom["metadata"]["timestamp"] == "2026-01-01T00:00:00Z"


def test_without_source_date_epoch_the_last_commit_time_is_used(
    acpzip: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    last_commit = subprocess.run(
        ["git", "log", "-1", "--format=%ct"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    assert acpzip.source_date_epoch() == int(last_commit) > int(SOURCE_DATE_EPOCH) - 10 * 365 * 86400


@pytest.mark.parametrize("connector_id", CONNECTORS)
def test_zip_layout_follows_spec_13(built: Mapping[str, Path], acpzip: ModuleType, connector_id: str) -> None:
    archive = built[connector_id]
    assert acpzip.check_contents(archive) == []
    infos = entries(archive)
    listed = [info.filename for info in infos]
    assert listed == sorted(listed)
    assert all(info.compress_type == zipfile.ZIP_DEFLATED and not info.flag_bits & 0x1 for info in infos)
    assert {info.external_attr >> 16 for info in infos} == {0o100644}
    assert len({info.date_time for info in infos}) == 1
    root = f"{connector_id}/"
    manifest = json.loads(read(archive, root + "acp.json"))
    source = json.loads((ROOT / "connectors" / connector_id / "acp.json").read_text())
    assert manifest["transport"] == {"type": "stdio", "command": "python3", "args": ["launch.py"]}
    assert manifest["http"]["args"][:2] == ["launch.py", "--http"]
    assert manifest["http"]["args"][2:] == source["http"]["args"][source["http"]["args"].index("--http") + 1 :]
    for key in ("acp_version", "id", "name", "version", "publisher", "description", "icon"):
        assert manifest[key] == source[key]
    # The connector's own code, the core, its skills; never another connector, tests or bytecode.
    assert f"{root}lib/connectors/{connector_id}/__init__.py" in listed
    assert f"{root}lib/shared/_runtime.py" in listed
    assert f"{root}lib/shared/install.py" in listed
    others = [c for c in CONNECTORS if c != connector_id]
    assert not [n for n in listed if any(n.startswith(f"{root}lib/connectors/{o}/") for o in others)]
    assert not [n for n in listed if "__pycache__" in n or n.endswith(".pyc") or "/tests/" in n]
    assert not [n for n in listed if n.startswith(f"{root}lib/bin/")]
    assert not [n for n in listed if re.search(r"\.dist-info/(RECORD|INSTALLER|REQUESTED|direct_url\.json)$", n)]
    skills = sorted(p.parent.name for p in (ROOT / "connectors" / connector_id / "skills").glob("*/SKILL.md"))
    assert [n for n in listed if n.endswith("/SKILL.md")] == [f"{root}skills/{s}/SKILL.md" for s in skills]


@pytest.mark.parametrize("connector_id", CONNECTORS)
def test_no_build_path_or_secret_location_leaks_into_the_zip(built: Mapping[str, Path], connector_id: str) -> None:
    needles = [str(ROOT).encode(), str(Path.home()).encode() + b"/.cache", b"/tmp/acpzip-"]
    with zipfile.ZipFile(built[connector_id]) as zf:
        leaks = [i.filename for i in zf.infolist() if any(n in zf.read(i) for n in needles)]
    assert leaks == []


def duckdb_share(archive: Path) -> int:
    return sum(i.compress_size for i in entries(archive) if re.search(r"/lib/(_duckdb|duckdb)", i.filename))


# The prediction zip's documented exception (its README): the scientific stack statsmodels and matplotlib need.
_SCIENTIFIC = r"/lib/(numpy|scipy|pandas|statsmodels|matplotlib|fontTools|PIL|pillow|kiwisolver|contourpy|patsy)"


def exception_share(connector_id: str, archive: Path) -> int:
    """The compressed bytes of a connector's documented exception to the 25 MB cap."""
    if connector_id == "prediction":
        return sum(i.compress_size for i in entries(archive) if re.search(_SCIENTIFIC, i.filename))
    return duckdb_share(archive)


@pytest.mark.parametrize("connector_id", CONNECTORS)
def test_zips_stay_under_the_25_mb_cap_except_for_duckdb(built: Mapping[str, Path], connector_id: str) -> None:
    """Only what the connector imports is vendored. Two documented exceptions: DuckDB's engine (about 25 MB
    compressed) in the databases zip, and the scientific stack (numpy, scipy, pandas, statsmodels, matplotlib;
    about 80 MB) in the prediction zip, each by its own share, no more."""
    archive = built[connector_id]
    size = archive.stat().st_size
    assert size - exception_share(connector_id, archive) <= 25 * MB, f"{archive.name}: {size / MB:.1f} MiB"
    if connector_id == "databases":
        assert duckdb_share(archive) > 10 * MB  # the exception is DuckDB's engine, not something else


def test_bigquery_leaves_grpc_out(built: Mapping[str, Path]) -> None:
    listed = names(built["bigquery"])
    assert not [n for n in listed if n.startswith(("bigquery/lib/grpc", "bigquery/lib/grpcio"))]
    assert "grpcio" in read(built["bigquery"], "bigquery/THIRD_PARTY_NOTICES.md")  # said out loud
    assert any(n.startswith("bigquery/lib/google/cloud/bigquery/") for n in listed)


DISCOVERY_DOCUMENTS = "gsc/lib/googleapiclient/discovery_cache/documents/"


def test_gsc_keeps_only_the_search_console_discovery_document(built: Mapping[str, Path]) -> None:
    """google-api-python-client ships ~600 discovery documents (110 MB unpacked): the zip keeps Search Console's
    and stays under the 25 MB cap with no exception."""
    archive = built["gsc"]
    listed = names(archive)
    assert [n for n in listed if n.startswith(DISCOVERY_DOCUMENTS)] == [f"{DISCOVERY_DOCUMENTS}searchconsole.v1.json"]
    assert archive.stat().st_size <= 25 * MB, f"{archive.name}: {archive.stat().st_size / MB:.1f} MiB"
    client_code = {"gsc/lib/googleapiclient/discovery.py", "gsc/lib/googleapiclient/discovery_cache/__init__.py"}
    assert client_code <= set(listed)
    notices = read(archive, "gsc/THIRD_PARTY_NOTICES.md")
    client = notices.split("## google-api-python-client ", 1)[1].split("\n## ", 1)[0]
    left_out = re.search(r"- Files left out: (\d+)\n", client)
    assert left_out and int(left_out.group(1)) >= 500, client  # every other document, said out loud
    assert notices.count("- Files left out:") == 1  # nothing else lost a file


def lock_pins(connector_id: str, python: str = "3.11") -> dict[str, str]:
    """The lock's pins for one Python (the zips here are built for cp311): a universal lock pins some
    packages twice, under markers (numpy 2.5 needs Python 3.12; 3.11 gets 2.4)."""
    from packaging.markers import Marker

    environment = {"python_version": python, "python_full_version": f"{python}.0"}
    text = (ROOT / "build" / "locks" / f"{connector_id}.txt").read_text()
    pins = {}
    for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)(?: ; ([^\\\n]+))?", text, re.M):
        if m.group(3) is None or Marker(m.group(3).strip()).evaluate(environment):
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


@pytest.mark.parametrize("connector_id", CONNECTORS)
def test_notices_and_sbom_name_every_vendored_package(built: Mapping[str, Path], connector_id: str) -> None:
    archive = built[connector_id]
    listed = names(archive)
    vendored = {
        m.group(1).lower().replace("_", "-"): m.group(2)
        for n in listed
        if (m := re.match(rf"{connector_id}/lib/([^/]+?)-([^-/]+)\.dist-info/METADATA$", n))
    }
    assert vendored, "no vendored package found"
    pins = lock_pins(connector_id)
    assert all(pins[name] == version for name, version in vendored.items())  # installed exactly as locked
    notices = read(archive, f"{connector_id}/THIRD_PARTY_NOTICES.md")
    sbom = json.loads(read(archive, f"{connector_id}/sbom.cdx.json"))
    assert sbom["bomFormat"] == "CycloneDX" and sbom["metadata"]["component"]["name"] == connector_id
    in_sbom = {c["name"].lower().replace("_", "-"): c["version"] for c in sbom["components"]}
    assert in_sbom == vendored
    for name, version in vendored.items():
        assert re.search(rf"(?im)^## {re.escape(name)} {re.escape(version)}$", notices.replace("_", "-")), name
    for path in re.findall(r"Licence text: `([^`]+)`", notices):
        assert f"{connector_id}/{path}" in listed
    assert f"{connector_id}/LICENSE" in listed


def test_databases_notices_carry_the_lgpl_and_the_bundled_libpq(built: Mapping[str, Path]) -> None:
    notices = read(built["databases"], "databases/THIRD_PARTY_NOTICES.md")
    section = notices.split("## psycopg-binary", 1)[1].split("\n## ", 1)[0]
    assert "LGPL-3.0" in section and "may be replaced" in section
    assert re.search(r"Bundled shared libraries: .*libpq", section)
    assert re.search(r"Bundled shared libraries: .*libssl", section)


def test_check_contents_catches_what_must_not_ship(
    built: Mapping[str, Path], acpzip: ModuleType, tmp_path: Path
) -> None:
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(built["bigquery"]) as source, zipfile.ZipFile(tampered, "w") as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "bigquery/acp.json":
                manifest = json.loads(data)
                data = json.dumps({**manifest, "tools": ["execute_query"], "icon": "../icon.svg"}).encode()
            out.writestr(info, data)
        out.writestr("bigquery/lib/shared/__pycache__/server.cpython-311.pyc", b"\x00")
        out.writestr("bigquery/lib/bin/uvicorn", "#!/home/builder/.venv/bin/python\n")
        out.writestr("bigquery/lib/six-1.17.0.dist-info/RECORD", "six.py,,\n")
        out.writestr("bigquery/skills/Bad_Name/SKILL.md", "---\nname: Bad_Name\n---\n")
    problems = "\n".join(acpzip.check_contents(tampered))
    for expected in (
        "fields outside spec 13.2: tools",
        "icon '../icon.svg' must be",
        "no __pycache__",
        "compiled bytecode",
        "build-machine shebangs",
        "installer records",
        "skill folder 'Bad_Name'",
        "needs name: Bad_Name and a description",
    ):
        assert expected in problems


# -- verify, and the folder really serving -----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("connector_id", CONNECTORS)
async def test_verify_installs_and_starts_each_zip_as_a_host_does(
    built: Mapping[str, Path], acpzip: ModuleType, connector_id: str
) -> None:
    assert "PYTHONDONTWRITEBYTECODE" not in acpzip._python_env(None, ROOT)  # bytecode is really written
    verified = await acpzip.verify(built[connector_id], sys.executable)
    assert verified.manifest.id == connector_id
    module = __import__(f"connectors.{connector_id}", fromlist=["CONNECTOR"])
    declared = {tool.name for tool in module.CONNECTOR.tools}
    assert declared | {"autocontext", "autocontext_data"} == set(verified.tools)
    # Its client libraries, which start-up does not load, were imported from the folder's lib/.
    assert verified.imported == acpzip.declared_imports(connector_id) != []


@pytest.mark.anyio
async def test_verify_fails_when_a_client_module_is_missing_from_the_zip(
    built: Mapping[str, Path], acpzip: ModuleType, tmp_path: Path
) -> None:
    """The server starts and lists its tools without its client library (imported on the first call): verify's
    import check is what catches a zip that lost it, though the test's own Python has the library installed."""
    tampered = tmp_path / built["bigquery"].name
    with zipfile.ZipFile(built["bigquery"]) as source, zipfile.ZipFile(tampered, "w") as out:
        for info in source.infolist():
            if not info.filename.startswith("bigquery/lib/google/cloud/bigquery/"):
                out.writestr(info, source.read(info))
    assert acpzip.check_contents(tampered) == []  # nothing else would notice
    with pytest.raises(acpzip.InstallError, match=r"google\.cloud\.bigquery cannot be imported from the zip's lib/"):
        await acpzip.verify(tampered, sys.executable)


def test_verify_command_reports_each_zip(built: Mapping[str, Path], acpzip: ModuleType, tmp_path: Path) -> None:
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(broken, "w") as zf:
        zf.writestr("x/acp.json", json.dumps({"id": "x", "name": "X"}))
    result = subprocess.run(
        [
            sys.executable,
            "build/acpzip.py",
            "verify",
            str(built["bigquery"]),
            str(broken),
            "--python-exe",
            sys.executable,
        ],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )
    assert result.returncode == 1
    assert re.search(r"ok   .*bigquery-.*: bigquery \S+, [\d.]+ MB, \d+ tools, first start", result.stdout)
    assert f"s, {len(acpzip.declared_imports('bigquery'))} client modules imported" in result.stdout
    assert "FAIL" in result.stderr and "acp.json lacks" in result.stderr


async def installed(archive: Path, tmp_path: Path) -> Path:
    servers = tmp_path / "servers"
    runtime = {"cache_dir": tmp_path / "cache", "tmp_dir": tmp_path / "tmp"}
    for directory in runtime.values():
        directory.mkdir(exist_ok=True)
    server = await install(archive, servers, env=host_env(), **runtime)
    assert discover(servers)[server.manifest.id].folder == server.folder
    return server.folder


@pytest.mark.anyio
async def test_the_bigquery_zip_queries_with_its_vendored_clients(built: Mapping[str, Path], tmp_path: Path) -> None:
    """The unpacked folder signs a service-account JWT, dry-runs and runs a query against the fake."""
    folder = await installed(built["bigquery"], tmp_path)
    with FakeBigQuery() as fake:
        fake.add_project(PROJECT)
        shards = fake.add_ga4_export(PROJECT, DATASET, start=dt.date(2026, 9, 1), days=2, events_per_day=50)
        env = {**host_env(), **bq_env(fake, tmp_path)}
        async with AcpHost.for_folder(folder, env=env) as host:
            sql = f"SELECT event_name, COUNT(*) AS n FROM `{PROJECT}.{DATASET}.events_*` GROUP BY 1 ORDER BY 1"
            result = await host.call("execute_query", {"query": sql}, meta(service_account(fake)))
        assert result.kind == "extraction", result.error
        expected = Counter(row["event_name"] for shard in shards for row in fake.rows(PROJECT, DATASET, shard))
        assert {r["event_name"]: r["n"] for r in result.rows()} == expected
        assert len(fake.dry_runs) >= 1 and len(fake.executed) >= 1


# Runs in the unpacked gsc folder on its lib/ alone (the launcher's own path setup, as the server gets it), and
# drives the vendored googleapiclient the way the connector does: static discovery, a service account, an endpoint,
# the core's bounded google-api-core retry.
GSC_CLIENT_PROBE = """
import importlib.util, json, runpy, sys
spec = importlib.util.spec_from_file_location("launch", "launch.py")
launch = importlib.util.module_from_spec(spec); spec.loader.exec_module(launch)
runpy.run_module = lambda *args, **kwargs: None
launch.main()
endpoint, key_file = sys.argv[1:3]

from google.api_core.retry import Retry
from googleapiclient import discovery, errors
from shared import google_auth
from shared.google_api import api_error, bounded_retry

credentials = {"type": "service_account", "service_account": open(key_file).read()}
scopes = ["https://www.googleapis.com/auth/webmasters.readonly"]
service = discovery.build("searchconsole", "v1", credentials=google_auth.build(credentials, scopes),
                          static_discovery=True, cache_discovery=False, client_options={"api_endpoint": endpoint})
site = "sc-domain:example.com"
out = {
    "client": discovery.__file__,
    "sites": bounded_retry(Retry(predicate=lambda exc: False), 10)(service.sites().list().execute)(),
    "query": service.searchanalytics().query(siteUrl=site, body={"startDate": "2026-11-01", "endDate": "2026-11-27",
                                             "dimensions": ["query"], "rowLimit": 25000, "startRow": 0}).execute(),
    "inspection": service.urlInspection().index().inspect(
        body={"inspectionUrl": "https://www.example.com/a", "siteUrl": site}).execute(),
}
try:
    service.sitemaps().list(siteUrl="https://www.example.com/").execute()
except errors.HttpError as exc:
    failure = api_error(exc)
    out["sitemaps_error"] = [failure.status, failure.reason]
try:
    discovery.build("webmasters", "v3", credentials=google_auth.build(credentials, scopes), static_discovery=True)
except discovery.UnknownApiNameOrVersion:
    out["webmasters"] = "not shipped"
out["grpc"] = importlib.util.find_spec("grpc") is not None
print(json.dumps(out))
"""


SEARCH_ANALYTICS_ROW = {"clicks": 3, "impressions": 40, "ctr": 0.075, "position": 2.5}


def search_console_stub(server: FakeHttpServer, oauth: FakeGoogleOAuth) -> None:
    """Search Console's routes as the vendored client calls them (paths un-decoded), answering a valid token only."""

    def authorized(answer: Any) -> Any:
        def handle(request: RecordedRequest, match: re.Match[str]) -> Reply:
            if not oauth.bearer_token_is_valid(request):
                return Reply(401, google_error(401, None, "Request had invalid authentication credentials."))
            return Reply(200, answer(request))

        return handle

    sites = {"siteEntry": [{"siteUrl": "sc-domain:example.com", "permissionLevel": "siteOwner"}]}
    server.add_route("GET", r"/webmasters/v3/sites", authorized(lambda request: sites), "sites.list")
    server.add_route(
        "POST",
        r"/webmasters/v3/sites/sc-domain%3Aexample\.com/searchAnalytics/query",
        authorized(
            lambda request: {
                "rows": [{"keys": request.json["dimensions"], **SEARCH_ANALYTICS_ROW}],
                "responseAggregationType": "byProperty",
            }
        ),
        "searchanalytics.query",
    )
    server.add_route(
        "POST",
        r"/v1/urlInspection/index:inspect",
        authorized(lambda request: {"inspectionResult": {"indexStatusResult": {"verdict": "PASS"}}}),
        "urlInspection.index.inspect",
    )
    server.add_route(
        "GET",
        r"/webmasters/v3/sites/https%3A%2F%2Fwww\.example\.com%2F/sitemaps",
        authorized(lambda request: {"sitemap": []}),
        "sitemaps.list",
    )


def test_the_gsc_zip_calls_search_console_with_its_vendored_client(built: Mapping[str, Path], tmp_path: Path) -> None:
    """With only searchconsole.v1.json, the folder's own googleapiclient builds the client offline, signs a
    service-account JWT, refreshes after a 401, and reads answers and errors."""
    folder = unpacked(built["gsc"], tmp_path)
    with FakeHttpServer() as server:
        oauth = FakeGoogleOAuth(server)
        search_console_stub(server, oauth)
        server.fail("searchanalytics.query", 401)  # the client refreshes its token and replays the request
        server.fail("sitemaps.list", 403, reason="forbidden", message="User does not have sufficient permission.")
        key_file = tmp_path / "key.json"
        key_file.write_text(json.dumps(oauth.service_account_info("gsc-zip")))
        result = subprocess.run(
            [sys.executable, "-c", GSC_CLIENT_PROBE, server.url, str(key_file)],
            cwd=folder,
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            env=host_env(),
        )
        assert result.returncode == 0, result.stderr
        out = json.loads(result.stdout)
        assert Path(out["client"]).is_relative_to(folder.resolve() / "lib")
        assert out["sites"]["siteEntry"][0]["siteUrl"] == "sc-domain:example.com"
        assert out["query"]["rows"] == [{"keys": ["query"], **SEARCH_ANALYTICS_ROW}]
        assert out["inspection"]["inspectionResult"]["indexStatusResult"]["verdict"] == "PASS"
        assert out["sitemaps_error"] == [403, "forbidden"]
        assert out["webmasters"] == "not shipped"  # no other document, and no download of it either
        assert out["grpc"] is False  # the host's site-packages stay out (its grpc would fill in)
        assert oauth.tokens_granted[JWT_BEARER_GRANT] == 2  # the first token, and the refresh after the 401
        assert [r.status for r in server.requests_for("searchanalytics.query")] == [401, 200]
        assert server.handler_errors == []


@pytest.mark.anyio
async def test_the_gsc_zip_pulls_search_analytics_with_its_vendored_clients(
    built: Mapping[str, Path], tmp_path: Path
) -> None:
    """The installed folder resolves the property, pages Search Analytics (with google-api-core's retries) and
    inspects a URL against the fake; the rows equal the facts aggregated here."""
    folder = await installed(built["gsc"], tmp_path)
    with FakeSearchConsole(today=today()) as fake:
        end = fake.last_final_date(DOMAIN)
        start = end - dt.timedelta(days=27)
        blog = [{"dimension": "page", "operator": "contains", "expression": "/blog/"}]
        truth = by_page_truth(fake, DOMAIN, ["device"], start, end, blog)
        env = {
            **host_env(),
            **gsc_env(fake),
            "ACP_CACHE_DIR": str(tmp_path / "cache"),
            "ACP_TMP_DIR": str(tmp_path / "tmp"),
            "ACP_GSC_RETRY_S": "30",  # time enough for one retry on a busy machine
        }
        call_meta = {"credentials": gsc_service_account(fake), "autocontext_delivered": True}
        fake.server.fail("searchanalytics.query", 503)  # retried through google.api_core.retry, which needs protobuf
        async with AcpHost.for_folder(folder, env=env) as host:
            arguments = {
                "resource_id": "example.com",  # resolved to the domain property
                "dimensions": ["device"],
                "filters": blog,
                "start_date": str(start),
                "end_date": str(end),
            }
            result = await host.call("search_analytics", arguments, call_meta)
            inspected = await host.call(
                "inspect_url", {"resource_id": DOMAIN, "url": "https://www.example.com/blog/"}, call_meta
            )
        assert result.kind == "extraction", result.error
        assert result.system_info["resource_id"] == DOMAIN
        assert {row["device"]: (row["clicks"], row["impressions"]) for row in result.rows()} == {
            key[0]: (expected.clicks, expected.impressions) for key, expected in truth.items()
        }
        assert inspected.kind == "info", inspected.error
        assert 503 in [r.status for r in fake.server.requests_for("searchanalytics.query")]


@pytest.mark.anyio
async def test_the_ga4_zip_pages_a_report_with_its_vendored_clients(built: Mapping[str, Path], tmp_path: Path) -> None:
    """The installed folder resolves the property through the Admin API, then pages runReport through a retried
    503 over REST; the GA4 clients import gRPC even so, and the folder carries it. Sessions by date equal the
    fake's events counted here."""
    from fakes.ga4 import FakeGA4
    from ga4_support import PROPERTY, ga4_env, sessions_by
    from ga4_support import service_account as ga4_service_account

    listed = names(built["ga4"])
    assert any(n.startswith("ga4/lib/grpc/") for n in listed)  # imported by google-analytics-data and -admin
    assert any(n.startswith("ga4/lib/google/analytics/admin_v1alpha/") for n in listed)
    folder = await installed(built["ga4"], tmp_path)
    with FakeGA4() as fake:
        end = fake.today(PROPERTY) - dt.timedelta(days=1)
        start = end - dt.timedelta(days=13)
        truth = sessions_by(fake, PROPERTY, lambda event: event.date, start, end)
        env = {
            **host_env(),
            **ga4_env(fake),
            "ACP_CACHE_DIR": str(tmp_path / "cache"),
            "ACP_TMP_DIR": str(tmp_path / "tmp"),
            "ACP_GA4_RETRY_S": "30",  # time enough for one retry on a busy machine
        }
        call_meta = {
            "credentials": ga4_service_account(fake),
            "autocontext_delivered": True,
            "config": {"page_size": 5},  # three pages
        }
        fake.data.server.fail("runReport", 503)  # retried through google.api_core.retry
        async with AcpHost.for_folder(folder, env=env) as host:
            arguments = {
                "resource_id": f"properties/{PROPERTY}",
                "dimensions": ["date"],
                "metrics": ["sessions"],
                "start_date": str(start),
                "end_date": str(end),
            }
            result = await host.call("run_report", arguments, call_meta)
        assert result.kind == "extraction", result.error
        assert result.system_info["resource_id"] == PROPERTY
        assert result.system_info["source"]["pages"] == 3
        assert {row["date"]: row["sessions"] for row in result.rows()} == {str(day): n for day, n in truth.items()}
        assert 503 in [r.status for r in fake.data.server.requests_for("runReport")]


@pytest.mark.anyio
async def test_the_databases_zip_reads_sqlite_duckdb_and_postgresql(built: Mapping[str, Path], tmp_path: Path) -> None:
    import duckdb
    import psycopg

    folder = await installed(built["databases"], tmp_path)
    lite = tmp_path / "shop.sqlite"
    with sqlite3.connect(lite) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        db.executemany("INSERT INTO orders (total) VALUES (?)", [(i * 1.5,) for i in range(1, 41)])
    duck = tmp_path / "shop.duckdb"
    with duckdb.connect(str(duck)) as db:
        db.execute("CREATE TABLE visits AS SELECT range AS id, range % 7 AS day FROM range(100)")
    # (credentials, resource_id, sql, expected rows)
    checks: list[tuple[dict[str, Any], str, str, list[dict[str, Any]]]] = [
        (
            {"type": "sqlite", "path": str(lite)},
            "shop",
            "SELECT COUNT(*) AS n, SUM(total) AS s FROM orders",
            [{"n": 40, "s": 1230.0}],
        ),
        ({"type": "duckdb", "path": str(duck)}, "shop", "SELECT COUNT(*) AS n FROM visits WHERE day = 3", [{"n": 14}]),
    ]
    try:
        psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres", connect_timeout=3).close()
        checks.append(
            (
                {"type": "postgres", "host": "127.0.0.1", "port": 5432, "user": "postgres", "database": "postgres"},
                "postgres",
                "SELECT 40 + 2 AS answer, current_database() AS db",
                [{"answer": 42, "db": "postgres"}],
            )
        )
    except psycopg.OperationalError:
        if os.environ.get("ACP_REQUIRE_SERVICES") == "1":
            pytest.fail("PostgreSQL does not answer on 127.0.0.1:5432 (ACP_REQUIRE_SERVICES=1)")
    env = {**host_env(), "ACP_CACHE_DIR": str(tmp_path / "cache"), "ACP_TMP_DIR": str(tmp_path / "tmp")}
    async with AcpHost.for_folder(folder, env=env) as host:
        for credentials, resource_id, sql, expected in checks:
            call_meta = {"credentials": credentials, "autocontext_delivered": True}
            result = await host.call("execute_sql", {"resource_id": resource_id, "sql": sql}, call_meta)
            assert result.kind == "extraction", (credentials["type"], result.error)
            assert result.rows() == expected, credentials["type"]


def unpacked(archive: Path, tmp_path: Path) -> Path:
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(tmp_path / "unpacked")
    return tmp_path / "unpacked" / archive.name.split("-")[0]


def launch(folder: Path, python: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "launch.py"],
        cwd=folder,
        check=False,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], **env},
    )


def test_the_launcher_refuses_another_python_with_a_clear_message(built: Mapping[str, Path], tmp_path: Path) -> None:
    folder = unpacked(built["bigquery"], tmp_path)
    script = folder / "launch.py"
    script.write_text(re.sub(r"(?m)^PYTHON = .*$", "PYTHON = (3, 99)", script.read_text()))
    result = launch(folder, sys.executable)
    assert result.returncode == 2
    assert "built for CPython 3.99" in result.stderr and sys.executable in result.stderr
    assert "Install the zip built for this Python" in result.stderr
    assert not list(folder.rglob("__pycache__"))


def test_the_launcher_refuses_a_glibc_older_than_the_wheels_need(built: Mapping[str, Path], tmp_path: Path) -> None:
    folder = unpacked(built["bigquery"], tmp_path)
    script = folder / "launch.py"
    assert re.search(r"(?m)^GLIBC = \(2, 28\)$", script.read_text())
    script.write_text(re.sub(r"(?m)^GLIBC = .*$", "GLIBC = (9, 99)", script.read_text()))
    result = launch(folder, sys.executable)
    assert result.returncode == 2 and "need glibc 9.99 or newer" in result.stderr


def test_without_a_cache_folder_no_bytecode_is_written(built: Mapping[str, Path], tmp_path: Path) -> None:
    folder = unpacked(built["databases"], tmp_path)
    result = launch(folder, sys.executable)  # stdin closes at once: the server starts and exits
    assert result.returncode == 0, result.stderr
    assert not list(folder.rglob("__pycache__")) and not list(folder.rglob("*.pyc"))


def test_packages_of_the_host_python_do_not_leak_in(built: Mapping[str, Path], tmp_path: Path) -> None:
    """The launcher drops site-packages: a module only the test venv has cannot be imported from the folder."""
    folder = unpacked(built["bigquery"], tmp_path)
    probe = folder / "probe_path.py"  # runs the launcher's path setup, then reports
    probe.write_text(
        "import runpy, sys\n"
        "sys.argv = ['launch.py']\n"
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('launch', 'launch.py')\n"
        "launch = importlib.util.module_from_spec(spec); spec.loader.exec_module(launch)\n"
        "runpy.run_module = lambda *a, **k: None\n"
        "launch.main()\n"
        "import importlib\n"
        "print(importlib.util.find_spec('pytest') is None, importlib.util.find_spec('pydantic').origin)\n"
    )
    result = subprocess.run(
        [sys.executable, "probe_path.py"], cwd=folder, check=False, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    no_pytest, pydantic_origin = result.stdout.split()
    assert no_pytest == "True" and pydantic_origin.startswith(str(folder.resolve() / "lib"))


# -- other Pythons and platforms ---------------------------------------------------------------


# A real 3.12 interpreter, not a pyenv shim (a shim picks its version from the name it is run by).
OTHER_PYTHON = next(iter(sorted(Path("/root/.pyenv/versions").glob("3.12*/bin/python3.12"))), None) or shutil.which(
    "python3.12"
)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_zip_for_another_python_runs_on_that_python(
    acpzip: ModuleType, zip_builds: ZipBuilds, tmp_path: Path
) -> None:
    if OTHER_PYTHON is None:
        if os.environ.get("ACP_REQUIRE_SERVICES") == "1":
            pytest.fail("CI machines have Python 3.12 (pyenv); this test must run there")
        pytest.skip("no Python 3.12 on this machine")
    archive = zip_builds.get("bigquery", "3.12", acpzip.host_platform().tag)
    assert "-cp312-" in archive.name
    verified = await acpzip.verify(archive, str(OTHER_PYTHON))
    assert "execute_query" in verified.tools
    refused = launch(unpacked(archive, tmp_path), sys.executable)  # this session's Python is not 3.12
    assert refused.returncode == 2 and "built for CPython 3.12" in refused.stderr


CROSS = {
    "manylinux_2_28_aarch64": (r"\.cpython-3\d+-aarch64-linux-gnu\.so$", "python3"),
    "macosx_12_0_arm64": (r"\.cpython-3\d+-darwin\.so$", "python3"),
    "win_amd64": (r"\.cp3\d+-win_amd64\.pyd$", "python"),
    "manylinux_2_28_x86_64": (r"\.cpython-3\d+-x86_64-linux-gnu\.so$", "python3"),
}


# This machine's own platform is built and verified above.
OTHER_PLATFORMS = [tag for tag in sorted(CROSS) if tag != load_acpzip().host_platform().tag]


@pytest.mark.slow
@pytest.mark.parametrize("connector_id", CONNECTORS)
@pytest.mark.parametrize("tag", OTHER_PLATFORMS)
def test_other_platforms_resolve_and_build(
    acpzip: ModuleType, zip_builds: ZipBuilds, tag: str, connector_id: str
) -> None:
    """The release workflow's other targets: their wheels resolve from the locks and the zips pass the checks."""
    extension, command = CROSS[tag]
    archive = zip_builds.get(connector_id, "3.11", tag)
    assert archive.name.endswith(f"-cp311-{tag}.zip")
    assert acpzip.check_contents(archive) == []
    listed = names(archive)
    compiled = [n for n in listed if re.search(r"\.(so|pyd)$", n) and "/lib/pydantic_core/" in n]
    assert compiled and all(re.search(extension, n) for n in compiled), compiled
    manifest = json.loads(read(archive, f"{connector_id}/acp.json"))
    assert manifest["transport"]["command"] == command
    launcher = read(archive, f"{connector_id}/launch.py")
    assert f"PLATFORM = {tag!r}" in launcher
    assert ("GLIBC = (2, 28)" if tag.startswith("manylinux") else "GLIBC = None") in launcher
    if tag == "win_amd64":
        assert any("/lib/pywin32" in n or "/lib/win32" in n for n in listed)  # a Windows-only dependency
    assert archive.stat().st_size - exception_share(connector_id, archive) <= 25 * MB


# -- the locks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("connector_id", [*CONNECTORS, "bridge"])  # bridge: the MCP bundle's lib/
def test_each_lock_satisfies_pyproject_and_leaves_out_only_what_it_says(connector_id: str) -> None:
    """A dependency changed in pyproject.toml without `acpzip.py lock` fails here, not in a release."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = lock_pins(connector_id)
    excluded = project["tool"]["acpzip"].get("exclude", {}).get(connector_id, [])
    for line in project["project"]["dependencies"] + project["project"]["optional-dependencies"][connector_id]:
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is missing from build/locks/{connector_id}.txt: run acpzip.py lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} in the lock does not satisfy {requirement.specifier}: run acpzip.py lock"
        )
    assert not set(excluded) & set(pins)
    assert all(
        "--hash=sha256:" in block for block in re.split(r"\n(?=[a-z0-9])", lock_text(connector_id)) if "==" in block
    )


def lock_text(connector_id: str) -> str:
    return (ROOT / "build" / "locks" / f"{connector_id}.txt").read_text()


# -- the command line's bad input ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["build", "nosuch"], "no connector 'nosuch'; known: "),
        (["build", "--python", "three"], "--python takes a CPython minor version such as 3.12"),
        (["build", "--python", "3.9"], "the locks are resolved for Python 3.11 and later"),
        (["build", "--platform", "solaris"], "invalid choice: 'solaris'"),
        (["verify"], "the following arguments are required: zips"),
    ],
)
def test_bad_command_lines_say_what_is_wrong(args: list[str], message: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "build/acpzip.py", *args, *(["--out", str(tmp_path)] if args[0] == "build" else [])],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing half-built is left behind
