"""build/acpzip.py's [tool.acpzip.exclude-files]: globs that leave a distribution's unread files out of a zip."""

from __future__ import annotations

import json
import re
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from acpzip_support import SOURCE_DATE_EPOCH, ZipBuilds

# -- the globs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        (
            "googleapiclient/discovery_cache/documents/*.json",
            "googleapiclient/discovery_cache/documents/a.v1.json",
            True,
        ),
        (
            "googleapiclient/discovery_cache/documents/*.json",
            "googleapiclient/discovery_cache/documents/x/a.json",
            False,
        ),
        ("scipy/**/tests/**", "scipy/tests/test_x.py", True),  # ** is zero or more segments
        ("scipy/**/tests/**", "scipy/linalg/tests/data/m.npz", True),
        ("scipy/**/tests/**", "scipy/linalg/_testutils.py", False),
        ("*/tests/*", "pandas/tests/frame/test_api.py", True),  # it matches a folder: everything in it
        ("*/tests/*", "pandas/core/tests.py", False),
        ("*/tests/*", "pandas/core/tests/test_x.py", False),  # * never crosses a /
        ("pandas/tests/**", "pandas/tests/io/data/a.csv", True),
        ("pandas/tests/**", "pandas/testsuite.py", False),
        ("google/cloud/bigquery/magics", "google/cloud/bigquery/magics/magics.py", True),
        ("google/cloud/bigquery/magics", "google/cloud/bigquery/magics_helpers.py", False),
        ("*.pyi", "six.pyi", True),
        ("*.pyi", "pkg/six.pyi", False),
        ("**/*.pyi", "pkg/sub/mod.pyi", True),
        ("data/file?.txt", "data/file1.txt", True),
        ("data/file?.txt", "data/file10.txt", False),
        ("data/[!a-c]*.bin", "data/d.bin", True),
        ("data/[!a-c]*.bin", "data/b.bin", False),
        ("data/[]x]", "data/]", True),  # a ] first in a set belongs to it
        ("a+b(c)/x.json", "a+b(c)/x.json", True),  # regular-expression characters are literal
        ("a+b(c)/x.json", "aab(c)/x.json", False),
    ],
)
def test_globs_match_paths_inside_lib(acpzip: ModuleType, glob: str, path: str, matches: bool) -> None:
    (rule,) = acpzip.file_rules([glob], "test")
    assert bool(rule.regex.fullmatch(path)) is matches
    (keep,) = acpzip.file_rules([f"!{glob}"], "test")
    assert keep.keep and not rule.keep and bool(keep.regex.fullmatch(path)) is matches


def make_lib(root: Path, files: list[str]) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    return root


def listing(lib: Path) -> list[str]:
    return sorted(p.relative_to(lib).as_posix() for p in lib.rglob("*") if p.is_file())


def test_the_last_matching_glob_decides_and_globs_that_change_nothing_are_warned_about(
    acpzip: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = make_lib(
        tmp_path,
        ["pkg/data/a.json", "pkg/data/b.json", "pkg/data/keep.json", "pkg/sub/tests/t.py", "pkg/mod.py"],
    )
    rules = acpzip.file_rules(
        [
            "pkg/data/*.json",
            "!pkg/data/keep.json",
            "pkg/**/tests/**",
            "pkg/data/a.json",  # already left out above
            "!pkg/mod.py",  # nothing above leaves it out
            "gone/**",  # matches no file (a dependency stopped shipping it)
        ],
        "test",
    )
    left_out = acpzip.leave_out_files(lib, rules, "toy")
    assert left_out == ["pkg/data/a.json", "pkg/data/b.json", "pkg/sub/tests/t.py"]
    assert listing(lib) == ["pkg/data/keep.json", "pkg/mod.py"]  # really deleted
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [
        "acpzip: warning: toy: [tool.acpzip.exclude-files] 'pkg/data/a.json' matches only files that the globs "
        "before it already leave out; remove or update it",
        "acpzip: warning: toy: [tool.acpzip.exclude-files] '!pkg/mod.py' re-includes nothing: no glob before it "
        "leaves out a file it matches; remove or update it",
        "acpzip: warning: toy: [tool.acpzip.exclude-files] 'gone/**' matches no file in lib/; remove or update it",
    ]


def test_a_later_glob_can_leave_out_again_what_a_re_include_kept(acpzip: ModuleType, tmp_path: Path) -> None:
    lib = make_lib(tmp_path, ["docs/a.json", "docs/b.json"])
    rules = acpzip.file_rules(["docs/*.json", "!docs/*", "docs/b.json"], "test")
    assert acpzip.leave_out_files(lib, rules, "toy") == ["docs/b.json"]


@pytest.mark.parametrize("glob", ["*.dist-info/LICENSE", "pkg-1.0.dist-info", "**/METADATA"])
def test_licences_and_metadata_always_ship(acpzip: ModuleType, tmp_path: Path, glob: str) -> None:
    lib = make_lib(tmp_path, ["pkg/mod.py", "pkg-1.0.dist-info/LICENSE", "pkg-1.0.dist-info/METADATA"])
    with pytest.raises(SystemExit, match=r"would leave out pkg-1\.0\.dist-info/.*always ship"):
        acpzip.leave_out_files(lib, acpzip.file_rules([glob], "test"), "toy")
    assert len(listing(lib)) == 3  # nothing was deleted


# -- the settings ------------------------------------------------------------------------------


KNOWN = ["bigquery", "databases"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"exclude-file": {}},
            "[tool.acpzip] has unknown key(s) exclude-file; known: pythons, exclude, exclude-files, verify-imports",
        ),
        (
            {"exclude-files": {"gsc": ["x/*"]}},
            "[tool.acpzip.exclude-files] names 'gsc', which is not a connector; known: bigquery, databases",
        ),
        (
            {"exclude": {"bigqeury": ["grpcio"]}},
            "[tool.acpzip.exclude] names 'bigqeury', which is not a connector; known: bigquery, databases",
        ),
        ({"exclude-files": []}, "[tool.acpzip.exclude-files] must be a table of <connector id> = [...]"),
        ({"exclude-files": {"bigquery": "x/*"}}, "[tool.acpzip.exclude-files] bigquery must be a list of strings"),
        ({"exclude-files": {"bigquery": ["/abs/x"]}}, "'/abs/x' must be a path relative to lib/"),
        ({"exclude-files": {"bigquery": ["a\\b"]}}, "'a\\\\b' must be a path relative to lib/"),
        ({"exclude-files": {"bigquery": ["!"]}}, "'!' must be a path relative to lib/"),
        ({"exclude-files": {"bigquery": ["a/../b"]}}, "'a/../b' has an empty, '.' or '..' path segment"),
        ({"exclude-files": {"bigquery": ["a//b"]}}, "'a//b' has an empty, '.' or '..' path segment"),
        ({"exclude-files": {"bigquery": ["a**b/c"]}}, "'a**b/c': ** matches whole path segments only"),
        ({"exclude-files": {"bigquery": ["a/[bc"]}}, "'a/[bc' has a '[' without its ']'"),
        (
            {"verify-imports": {"ga5": ["google.analytics.data_v1beta"]}},
            "[tool.acpzip.verify-imports] names 'ga5', which is not a connector; known: bigquery, databases",
        ),
        (
            {"verify-imports": {"bigquery": "sqlglot"}},
            "[tool.acpzip.verify-imports] bigquery must be a list of strings",
        ),
        (
            {"verify-imports": {"bigquery": ["google..cloud"]}},
            "[tool.acpzip.verify-imports] bigquery: 'google..cloud' is not a dotted module name",
        ),
        ({"verify-imports": {"bigquery": ["google-cloud-bigquery"]}}, "'google-cloud-bigquery' is not a dotted module"),
    ],
)
def test_bad_settings_fail_with_what_to_fix(acpzip: ModuleType, settings: dict[str, Any], message: str) -> None:
    with pytest.raises(SystemExit) as failure:
        acpzip.check_settings(settings, KNOWN)
    assert message in str(failure.value)
    assert str(failure.value).startswith("acpzip: ")


def test_the_project_settings_pass_their_own_checks(acpzip: ModuleType) -> None:
    settings = acpzip.build_settings()  # checks them
    assert set(settings) <= set(acpzip.SETTINGS_KEYS) and settings["pythons"]
    # Every zip (and the bundle's lib/) names the client modules it imports on first use, for verify to import.
    assert sorted(settings["verify-imports"]) == sorted(acpzip.lock_targets())
    assert all(settings["verify-imports"].values())


# -- a real build --------------------------------------------------------------------------------

# The kind of rule Search Console needs (every discovery document but its own), on what the BigQuery
# zip carries: googleapis-common-protos ships the .proto sources of modules it also ships compiled.
RULES = [
    "google/**/*.proto",
    "!google/rpc/status.proto",
    "google/cloud/bigquery/magics",  # a folder: the IPython magics, which the connector never loads
    "nosuch_package/**",  # stale: reported, not fatal
]


def left_out_by_rules(listed: list[str]) -> set[str]:
    """What RULES mean, written out by hand over the full zip's listing."""
    return {
        n
        for n in listed
        if (
            n.startswith("bigquery/lib/google/")
            and n.endswith(".proto")
            and n != "bigquery/lib/google/rpc/status.proto"
        )
        or n.startswith("bigquery/lib/google/cloud/bigquery/magics/")
    }


@pytest.fixture(scope="module")
def excluded(acpzip: ModuleType, zip_builds: ZipBuilds, python_version: str) -> Path:
    return zip_builds.get("bigquery", python_version, acpzip.host_platform().tag, RULES)


def names(archive: Path) -> list[str]:
    with zipfile.ZipFile(archive) as zf:
        return [info.filename for info in zf.infolist()]


def read(archive: Path, name: str) -> str:
    with zipfile.ZipFile(archive) as zf:
        return zf.read(name).decode("utf-8")


def test_excluded_files_are_absent_and_re_included_ones_present(
    excluded: Path, built: Mapping[str, Path], acpzip: ModuleType
) -> None:
    full = names(built["bigquery"])
    expected = left_out_by_rules(full)
    assert len([n for n in expected if n.endswith(".proto")]) >= 30
    assert any("/magics/" in n for n in expected)
    assert "bigquery/lib/google/rpc/status.proto" in full
    assert set(full) - set(names(excluded)) == expected  # exactly those, nothing else
    assert set(names(excluded)) <= set(full)
    assert "bigquery/lib/google/rpc/status.proto" in names(excluded)
    assert acpzip.check_contents(excluded) == []
    output = ZipBuilds.output(excluded)
    assert f"[tool.acpzip.exclude-files] left out {len(expected)} files" in output
    assert "warning: bigquery: [tool.acpzip.exclude-files] 'nosuch_package/**' matches no file in lib/" in output
    assert output.count("warning") == 1


def test_notices_and_sbom_say_what_was_left_out_of_which_package(excluded: Path, built: Mapping[str, Path]) -> None:
    expected = left_out_by_rules(names(built["bigquery"]))
    protos = len([n for n in expected if n.endswith(".proto")])
    notices = read(excluded, "bigquery/THIRD_PARTY_NOTICES.md")
    assert "less data files the connector never reads" in notices
    assert f"Files left out on purpose ({len(expected)} in all" in notices
    assert all(f"`{rule}`" in notices for rule in RULES)

    def section(package: str) -> str:
        return notices.split(f"## {package} ", 1)[1].split("\n## ", 1)[0]

    assert f"- Files left out: {protos}\n" in section("googleapis-common-protos")
    assert f"- Files left out: {len(expected) - protos}\n" in section("google-cloud-bigquery")
    assert notices.count("- Files left out:") == 2
    for licence in re.findall(r"Licence text: `([^`]+)`", notices):
        assert f"bigquery/{licence}" in names(excluded)  # every licence file still ships

    sbom = json.loads(read(excluded, "bigquery/sbom.cdx.json"))
    full_sbom = json.loads(read(built["bigquery"], "bigquery/sbom.cdx.json"))
    left = {
        c["name"]: int(p["value"])
        for c in sbom["components"]
        for p in c.get("properties", [])
        if p["name"] == "acp:files-left-out"
    }
    assert left == {"googleapis-common-protos": protos, "google-cloud-bigquery": len(expected) - protos}
    assert [c["name"] for c in sbom["components"]] == [c["name"] for c in full_sbom["components"]]
    assert {"name": "acp:exclude-files", "value": json.dumps(RULES)} in sbom["metadata"]["properties"]
    assert sbom["serialNumber"] != full_sbom["serialNumber"]  # another bill of materials


@pytest.mark.anyio
async def test_a_zip_with_excluded_files_still_passes_verify(excluded: Path, acpzip: ModuleType) -> None:
    verified = await acpzip.verify(excluded, sys.executable)
    assert verified.manifest.id == "bigquery" and "execute_query" in verified.tools


def test_a_zip_with_excluded_files_rebuilds_byte_identical(
    excluded: Path, acpzip: ModuleType, python_version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
    again = acpzip.build("bigquery", python_version, acpzip.host_platform(), tmp_path, RULES)
    assert again.read_bytes() == excluded.read_bytes()
