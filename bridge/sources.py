"""``sources.json`` and the installed connectors (spec 16.2, 16.3).

A *source* is one account of one installed ACP connector: an id that prefixes its tools, a label
for the descriptions, and the ``credentials``, ``config``, ``default_resource_id`` and limits the
bridge sends in ``_meta.acp`` of each call (spec 5.2). The file::

    {
      "defaults": {"row_limit": 25},
      "sources": [
        {"id": "ventas", "acp": "databases", "label": "Ventas (SQLite)", "default_resource_id": "ventas",
         "credentials": {"type": "sqlite", "path": {"projectPath": "data/ventas.sqlite"}}},
        {"id": "prevision", "acp": "prediction", "label": "Previsión local"}
      ]
    }

Values inside ``credentials`` and ``config`` may be ``{"env"}``, ``{"file"}`` or ``{"projectPath"}``
references, resolved by :class:`shared.sources.SourceReferences`.

A broken file never stops the bridge (spec 16.3): :func:`load_sources` returns the sources it
could use and a :class:`SourceProblem` for everything else, which ``acp_sources`` shows. A bad
source does not hide the good ones; both sources of a duplicated id are refused, since neither
can be told apart from the other. No message here ever holds a value from the file: they name
where the problem is (``sources[1] ('ventas').credentials.path``) and what to do.

Connectors are found by :func:`find_connectors`: ``<root>/acps/*/acp.json`` (where the zips of
``build/acpzip.py`` install, launched by their ``transport``, spec 13.3), or, in a source checkout
without ``acps/``, the checkout's own ``connectors/*``, run as ``python -m connectors.<id>``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from shared.host import AcpHost
from shared.install import discover
from shared.protocol import MAX_FIELD_LIMIT, MAX_ROW_LIMIT, JsonObject
from shared.sources import DuplicateKeyError, SourceReferenceError, SourceReferences, load_json_strict

__all__ = [
    "LIMIT_KEYS",
    "SOURCE_ID",
    "DeclaredSource",
    "InstalledConnector",
    "Source",
    "SourceProblem",
    "SourcesFile",
    "find_connectors",
    "load_sources",
]

SOURCE_ID = re.compile(r"^[a-z0-9_-]{1,40}$")
LIMIT_KEYS = ("row_limit", "field_limit", "cost_limit_usd")
_SOURCE_KEYS = frozenset({"id", "acp", "label", "credentials", "config", "default_resource_id", *LIMIT_KEYS})
_FILE_KEYS = frozenset({"defaults", "sources"})
ProblemKind = Literal["file", "credentials", "limits", "source"]


# -- installed connectors -------------------------------------------------------------------------
@dataclass(frozen=True)
class InstalledConnector:
    """One installed ACP connector: its id, its ``acp.json`` name and how to launch it.

    ``module`` is the package name to run with ``python -m connectors.<module>`` (a source
    checkout); ``None`` launches the folder by its ``acp.json`` transport (``acps/``).
    """

    id: str
    name: str
    folder: Path
    module: str | None = None

    def host(self, env: Mapping[str, str], **kwargs: Any) -> AcpHost:
        """An :class:`AcpHost` that launches this connector (not started yet)."""
        if self.module is not None:
            return AcpHost.for_module(self.module, env=env, **kwargs)
        return AcpHost.for_folder(self.folder, env=env, **kwargs)


def find_connectors(root: Path) -> dict[str, InstalledConnector]:
    """The connectors the bridge can serve, by id: ``<root>/acps/*`` or the checkout's ``connectors/*``."""
    acps = root / "acps"
    if acps.is_dir():
        return {
            cid: InstalledConnector(cid, server.manifest.name, server.folder)
            for cid, server in sorted(discover(acps).items())
        }
    return {
        cid: InstalledConnector(cid, server.manifest.name, server.folder, module=server.folder.name)
        for cid, server in sorted(discover(root / "connectors").items())
        if server.folder.name.isidentifier()
    }


def connector_environment(root: Path, installed: Mapping[str, InstalledConnector]) -> dict[str, str]:
    """What the launched connectors get on top of the SDK's safe variables.

    The bridge's own ``ACP_*`` settings (``ACP_CACHE_DIR``, ``ACP_TMP_DIR``, ``ACP_LOG_LEVEL``…) pass
    through, so a client that sets them for the bridge sets them for its connectors. A checkout's
    connectors run from the checkout, so it goes first on ``PYTHONPATH``.
    """
    env = {k: v for k, v in os.environ.items() if k.startswith("ACP_") and not k.startswith("ACP_BRIDGE_")}
    if any(c.module is not None for c in installed.values()):
        inherited = os.environ.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join([str(root), *([inherited] if inherited else [])])
    return env


# -- sources --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """One usable source, its references resolved. ``credentials`` never leave :meth:`acp_meta`."""

    id: str
    acp: str
    label: str
    credentials: JsonObject | None = field(default=None, repr=False)
    config: JsonObject | None = field(default=None, repr=False)
    default_resource_id: str | None = None
    limits: dict[str, int | float] = field(default_factory=dict)

    @property
    def has_credentials(self) -> bool:
        return bool(self.credentials)

    def acp_meta(self, session_id: str) -> JsonObject:
        """``_meta.acp`` of a call of this source (spec 5.2, 16.5); ``session_id`` is also the conversation."""
        meta: JsonObject = {"session_id": session_id, "conversation_id": session_id, **self.limits}
        if self.credentials is not None:
            meta["credentials"] = self.credentials
        if self.config is not None:
            meta["config"] = self.config
        if self.default_resource_id is not None:
            meta["default_resource_id"] = self.default_resource_id
        return meta


@dataclass(frozen=True)
class SourceProblem:
    """Why (part of) the sources file cannot be used.

    ``source_id`` names the refused source when it has a valid id; ``kind`` is ``file`` (the whole
    file or its ``defaults``), ``credentials``, ``limits`` or ``source`` (any other field).
    """

    message: str
    kind: ProblemKind = "source"
    source_id: str | None = None


@dataclass(frozen=True)
class DeclaredSource:
    """What ``acp_sources`` shows of every entry with a valid id, usable or not (never a credential)."""

    id: str
    acp: str | None
    label: str | None
    has_credentials: bool


@dataclass(frozen=True)
class SourcesFile:
    """The sources file as the bridge uses it: the good sources (file order) and every problem.

    ``declared`` lists every entry with a valid id (the first of a duplicated id), ``refused_ids``
    those of them that cannot be used.
    """

    path: Path
    sources: dict[str, Source]
    problems: list[SourceProblem]
    declared: list[DeclaredSource] = field(default_factory=list)
    refused_ids: frozenset[str] = frozenset()

    def problems_of(self, source_id: str) -> list[SourceProblem]:
        return [p for p in self.problems if p.source_id == source_id]


class _Refused(Exception):
    def __init__(self, problem: SourceProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def load_sources(
    path: Path,
    project: Path,
    installed: Mapping[str, InstalledConnector],
    environ: Mapping[str, str] | None = None,
) -> SourcesFile:
    """Read and check ``path``; never raises for anything the file holds."""
    references = SourceReferences(
        base_dir=path.parent, project_dir=project, environ=os.environ if environ is None else environ
    )
    try:
        document = _read(path)
    except _Refused as refused:
        return SourcesFile(path, {}, [refused.problem])
    problems: list[SourceProblem] = []
    unknown = sorted(set(document) - _FILE_KEYS)
    if unknown:
        problems.append(
            _file_problem(f"{path}: unknown key(s) {_names(unknown)} at the top; it takes defaults and sources.")
        )
    defaults = _defaults(document.get("defaults", {}), path, problems)
    entries = document.get("sources")
    if not isinstance(entries, list):
        problems.append(
            _file_problem(
                f'{path}: it needs a "sources" list, for example "sources": [{{"id": "sales", "acp": "databases", …}}].'
            )
        )
        return SourcesFile(path, {}, problems)
    reader = _SourceReader(installed, references, defaults)
    read: list[tuple[int, Source]] = []
    for index, entry in enumerate(entries):
        source, found = reader.read(index, entry)
        problems.extend(found)
        if source is not None:
            read.append((index, source))
    positions: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and SOURCE_ID.match(entry["id"]):
            positions.setdefault(entry["id"], []).append(index)
    duplicated = {sid for sid, where in positions.items() if len(where) > 1}
    for sid in sorted(duplicated):
        places = " and ".join(f"sources[{i}]" for i in positions[sid])
        problems.append(
            SourceProblem(
                f"The id '{sid}' is used by {places}, so neither is served: give each source an id of its own "
                f"in {path} and restart the bridge.",
                "source",
                sid,
            )
        )
    sources = {source.id: source for _, source in read if source.id not in duplicated}
    refused_ids = frozenset(p.source_id for p in problems if p.source_id is not None)
    declared = [_declared(sid, entries[where[0]]) for sid, where in positions.items()]
    return SourcesFile(path, sources, problems, declared, refused_ids)


def _declared(source_id: str, entry: dict[str, Any]) -> DeclaredSource:
    acp, label, credentials = entry.get("acp"), entry.get("label"), entry.get("credentials")
    return DeclaredSource(
        source_id,
        acp if isinstance(acp, str) else None,
        label if isinstance(label, str) else None,
        bool(credentials) if isinstance(credentials, dict) else False,
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _Refused(
            _file_problem(
                f"there is no sources file at {path}. Create it from sources.example.json (in the bundle's "
                "folder, or bridge/ in a source checkout) with your sources, then restart the bridge from the "
                "MCP client.",
            )
        ) from None
    except OSError as exc:
        raise _Refused(_file_problem(f"cannot read {path} ({exc.strerror}); fix its permissions.")) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Refused(_file_problem(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8.")) from None
    try:
        document = load_json_strict(text)
    except json.JSONDecodeError as exc:
        # The position and the parser's reason only: never the text around it, which may be a secret.
        raise _Refused(
            _file_problem(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.")
        ) from None
    except DuplicateKeyError as exc:
        raise _Refused(
            _file_problem(f"{path} has the key {exc.key!r} twice in one object; keep one of them.")
        ) from None
    if not isinstance(document, dict):
        raise _Refused(_file_problem(f"{path} must hold a JSON object with a sources list (spec 16.3)."))
    return document


def _file_problem(message: str) -> SourceProblem:
    return SourceProblem(message, "file")


def _names(keys: list[str]) -> str:
    return ", ".join(repr(k) for k in keys)


def _defaults(value: Any, path: Path, problems: list[SourceProblem]) -> dict[str, int | float]:
    if not isinstance(value, dict):
        problems.append(_file_problem(f'{path}: "defaults" must be an object of limits, like {{"row_limit": 25}}.'))
        return {}
    unknown = sorted(set(value) - set(LIMIT_KEYS))
    if unknown:
        problems.append(
            _file_problem(f"{path}: unknown key(s) {_names(unknown)} in defaults; it takes {', '.join(LIMIT_KEYS)}.")
        )
    limits: dict[str, int | float] = {}
    for key in LIMIT_KEYS:
        if key in value:
            problem = _limit_problem(key, value[key])
            if problem:
                problems.append(_file_problem(f"{path}: defaults.{key} {problem}"))
            else:
                limits[key] = value[key]
    return limits


def _limit_problem(key: str, value: Any) -> str | None:
    """Spec 5.1's ranges, checked here so that a bad limit is a file error rather than every call's."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if key == "row_limit" and not (is_int and 0 <= value <= MAX_ROW_LIMIT):
        return f"must be an integer from 0 to {MAX_ROW_LIMIT} (the rows the model sees; the CSV keeps them all)."
    if key == "field_limit" and not (is_int and 1 <= value <= MAX_FIELD_LIMIT):
        return f"must be an integer from 1 to {MAX_FIELD_LIMIT}."
    if key == "cost_limit_usd":
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (is_number and math.isfinite(value) and value >= 0):
            return "must be a number of US dollars, 0 or more."
    return None


class _SourceReader:
    def __init__(
        self,
        installed: Mapping[str, InstalledConnector],
        references: SourceReferences,
        defaults: dict[str, int | float],
    ) -> None:
        self.installed = installed
        self.references = references
        self.defaults = defaults

    def read(self, index: int, entry: Any) -> tuple[Source | None, list[SourceProblem]]:
        where = f"sources[{index}]"
        if not isinstance(entry, dict):
            return None, [SourceProblem(f"{where} must be an object with at least an id and an acp.")]
        source_id = entry.get("id")
        sid = source_id if isinstance(source_id, str) and SOURCE_ID.match(source_id) else None
        if sid is not None:
            where = f"{where} ('{sid}')"
        problems: list[SourceProblem] = []

        def refuse(message: str, kind: ProblemKind = "source") -> None:
            problems.append(SourceProblem(f"{where}: {message}", kind, sid))

        if sid is None:
            refuse("id is required: 1 to 40 lowercase letters, digits, _ or - (it prefixes the source's tools).")
        unknown = sorted(set(entry) - _SOURCE_KEYS)
        if unknown:
            refuse(f"unknown key(s) {_names(unknown)}; a source takes {', '.join(sorted(_SOURCE_KEYS))}.")
        acp = entry.get("acp")
        if not isinstance(acp, str) or not acp:
            refuse(f"acp is required: the id of an installed ACP ({self._installed_ids()}).")
        elif acp not in self.installed:
            refuse(
                f"the ACP '{acp}' is not installed (installed: {self._installed_ids()}). Install it, "
                "or fix the acp of this source."
            )
        if "label" in entry and not isinstance(entry["label"], str):
            refuse("label must be a string (the name shown in the tools' descriptions).")
        for key in ("credentials", "config"):
            if key in entry and not isinstance(entry[key], dict):
                what = "credentials_schema" if key == "credentials" else "config_schema"
                refuse(
                    f"{key} must be an object, as the ACP's {what} asks.",
                    "credentials" if key == "credentials" else "source",
                )
        resource = entry.get("default_resource_id")
        if "default_resource_id" in entry and not (isinstance(resource, str) and resource.strip()):
            refuse("default_resource_id must be a non-empty string (a resource id of the ACP).")
        limits = dict(self.defaults)
        for key in LIMIT_KEYS:
            if key in entry:
                problem = _limit_problem(key, entry[key])
                if problem:
                    refuse(f"{key} {problem}", "limits")
                else:
                    limits[key] = entry[key]
        if problems:
            return None, problems
        assert sid is not None
        assert isinstance(acp, str)
        try:
            resolved = self.references.resolve_source(entry, f"sources[{index}] ('{sid}')")
        except SourceReferenceError as exc:
            kind: ProblemKind = "credentials" if ".credentials" in exc.where else "source"
            return None, [SourceProblem(str(exc), kind, sid)]
        label = entry.get("label")
        return (
            Source(
                id=sid,
                acp=acp,
                label=label.strip() if isinstance(label, str) and label.strip() else sid,
                credentials=resolved.get("credentials"),
                config=resolved.get("config"),
                default_resource_id=resource.strip() if isinstance(resource, str) else None,
                limits=limits,
            ),
            [],
        )

    def _installed_ids(self) -> str:
        return ", ".join(sorted(self.installed)) or "none"
