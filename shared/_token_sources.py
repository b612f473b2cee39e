"""Token-bound sources for ``--http``: an operator's file maps each bearer token to one source.

A gateway or a plain MCP client sends no ``_meta.acp`` and no ``acp/configure`` (spec 2.2):
it only has a bearer token. With ``--sources FILE`` (or ``ACP_SOURCES_FILE``) the server
looks the token up here and runs the request with that token's source, as if the host had
sent it in ``_meta.acp`` (spec 5.2). The source is frozen: a call may tighten its limits and
nothing else, and it reaches only the resources the entry allows.

The file (JSON, owner-only permissions)::

    {
      "defaults": {"row_limit": 25, "model_max_chars": 3000},
      "sources": [
        {
          "id": "sales",
          "token_sha256": "<64 hex digits: python -m connectors.<id> --hash-token>",
          "credentials": {"type": "sqlite", "path": "/srv/data/sales.sqlite"},
          "config": {"statement_timeout_s": 30},
          "default_resource_id": "sales",
          "resources": ["sales"],
          "row_limit": 50, "cost_limit_usd": 0, "model_max_chars": 3000, "field_limit": 20
        }
      ]
    }

Values inside ``credentials`` and ``config`` may be ``{"env": NAME}`` or ``{"file": path}``
references (:class:`shared.sources.SourceReferences`, as in the bridge's sources.json, spec
16.3); ``projectPath`` is refused, since a server has no project folder.

Tokens are stored as SHA-256 digests: they are long random secrets, not passwords, so a
slow password hash would add latency to every request without making a guess any less
hopeless. Every error names the entry (``sources[2] ('sales')``) and the field, never a
value, and every secret the file holds is registered for redaction as soon as it is read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from ._redaction import register_secrets
from ._session import Limits
from ._settings import (
    UNSET,
    CallMeta,
    Effective,
    Settings,
    check_config,
    check_credentials,
    parse_settings,
    secret_values,
)
from .declaration import Connector, Principal, ResourceRef
from .errors import AcpError, InvalidArguments, InvalidLimit, ResourceNotFound
from .sources import DuplicateKeyError, SourceReferenceError, SourceReferences, load_json_strict

log = logging.getLogger("acp")

MIN_TOKEN_CHARS: Final = 32
MIN_TOKEN_DISTINCT_CHARS: Final = 12
HOW_TO_GENERATE: Final = 'generate one with: python -c "import secrets; print(secrets.token_urlsafe(32))"'
# RFC 6750 §2.1 b64token: what an Authorization: Bearer header can carry.
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_SOURCE_ID = re.compile(r"[a-z0-9_-]{1,40}")  # as the bridge's source ids (spec 16.3)
LIMIT_KEYS: Final = ("row_limit", "cost_limit_usd", "field_limit", "model_max_chars")
_ENTRY_KEYS: Final = frozenset(
    {"id", "label", "token_sha256", "credentials", "config", "default_resource_id", "resources", "tables", *LIMIT_KEYS}
)
_FILE_KEYS: Final = frozenset({"defaults", "sources"})
_DEFAULT_KEYS: Final = frozenset({*LIMIT_KEYS, "tables"})


class SourcesFileError(Exception):
    """The sources file cannot be used; the message names the entry and the fix, never a secret."""


def token_problem(token: str) -> str | None:
    """Why ``token`` is too weak to bind a source, or None.

    A bound token is the only thing between the network and a source's credentials, so it
    must be a random secret: long, in the characters a bearer header carries, and not a
    few characters repeated.
    """
    if len(token) < MIN_TOKEN_CHARS:
        return f"The token has {len(token)} characters; use at least {MIN_TOKEN_CHARS} random ones ({HOW_TO_GENERATE})."
    if not _B64TOKEN.fullmatch(token):
        return (
            "The token has characters a bearer token cannot carry (RFC 6750: letters, digits and -._~+/, "
            f"then '=' padding); {HOW_TO_GENERATE}."
        )
    if len(set(token)) < MIN_TOKEN_DISTINCT_CHARS:
        return f"The token repeats too few characters to be random; {HOW_TO_GENERATE}."
    return None


def token_digest(token: str | bytes) -> bytes:
    """The SHA-256 digest a sources file stores for ``token``."""
    return hashlib.sha256(token.encode() if isinstance(token, str) else token).digest()


@dataclass(frozen=True)
class BoundSource:
    """One entry of the sources file, resolved: what every request with its token runs with.

    ``settings`` play the part of ``_meta.acp`` (spec 5.2); ``ceiling`` holds the limits a
    call starts from (the entry's, else the connector's defaults), which a call may lower
    but never raise. ``resources`` are the resource prefixes the token may reach; None when
    the entry allows everything its credentials reach.
    """

    id: str
    settings: Settings
    ceiling: Effective
    resources: tuple[ResourceRef, ...] | None
    separators: tuple[str, ...] = (".",)

    # -- what a call may change ---------------------------------------------------------------
    def check_overrides(self, update: Settings, channel: str) -> None:
        """Refuse anything in ``update`` (from ``channel``) but limits at or below the bound ones."""
        if update.credentials is not UNSET:
            self._refuse("credentials", channel)
        if update.config:
            self._refuse("config", channel)
        if update.default_resource_id is not UNSET:
            self._refuse("default_resource_id", channel)
        if update.tables is not None:
            self._refuse("tables", channel)
        for name in LIMIT_KEYS:
            value, ceiling = getattr(update, name), getattr(self.ceiling, name)
            if value is not None and ceiling is not None and value > ceiling:
                raise InvalidLimit(
                    f"{name} {value:g} is above {ceiling:g}, the limit of this token's source ('{self.id}'), which "
                    f"the server operator fixes. Send {name} at or below {ceiling:g}, or leave it out.",
                    {"field": name, "bound_by_operator": True},
                )

    def _refuse(self, name: str, channel: str) -> None:
        raise InvalidArguments(
            f"{channel}.{name} cannot be set: the server operator bound this token to the source '{self.id}', "
            "with its credentials, config, default resource and tables. Leave it out; only row_limit, "
            "cost_limit_usd, field_limit and model_max_chars may be lowered.",
            {"field": name, "bound_by_operator": True},
        )

    def effective(self, meta: CallMeta, session: Settings, limits: Limits) -> Effective:
        """The call's values: the bound source, with the limits the call or the session lowered (spec 5.3).

        A session's limits were checked when it configured them, but the operator may have
        lowered the source since (a reload): the ceiling applies again here.
        """
        lowered = meta.settings.over(session)
        overlay = Settings(**{name: getattr(lowered, name) for name in LIMIT_KEYS})
        eff = limits.effective(replace(meta, settings=overlay.over(self.settings)), Settings())
        ceiling = self.ceiling
        budget = eff.model_max_chars
        if ceiling.model_max_chars is not None:
            budget = min(budget if budget is not None else ceiling.model_max_chars, ceiling.model_max_chars)
        return replace(
            eff,
            row_limit=min(eff.row_limit, ceiling.row_limit),
            cost_limit_usd=min(eff.cost_limit_usd, ceiling.cost_limit_usd),
            field_limit=min(eff.field_limit, ceiling.field_limit),
            model_max_chars=budget,
        )

    # -- what a call may reach ----------------------------------------------------------------
    def allows(self, ref: ResourceRef) -> bool:
        """Whether ``ref`` is an allowed resource or lies under one (``db.schema.table`` under ``db``)."""
        return self.resources is None or within(ref, self.resources, self.separators)

    def require_allowed(self, ref: ResourceRef) -> None:
        """ACP_RESOURCE_NOT_FOUND ("unknown resource or no access", spec 12.1) for a resource outside ``resources``."""
        if not self.allows(ref):
            listed = ", ".join(r.id for r in (self.resources or ()))
            raise ResourceNotFound(
                f"'{ref.id}' is outside the resources this source allows ({listed}, and what lies under them). "
                "Use one of those; call autocontext without arguments to list them.",
                {"resource_id": ref.id},
            )

    def scoped(self, principal: Principal) -> Principal:
        """The principal with this source in its identity: caches, recency and first-call state are
        per source, so two entries bound to the same credentials share nothing (spec 10.1.5)."""
        return Principal(identity=f"{principal.identity}#bound-source:{self.id}", secrets=principal.secrets)


def within(ref: ResourceRef, allowed: tuple[ResourceRef, ...], separators: tuple[str, ...]) -> bool:
    """Whether ``ref`` is one of ``allowed`` or a child of one: normalized parts when the connector
    has them, else the id itself or the id followed by a separator."""
    for parent in allowed:
        if ref.parts and parent.parts:
            if ref.parts[: len(parent.parts)] == parent.parts:
                return True
        elif ref.id == parent.id or any(ref.id.startswith(parent.id + sep) for sep in separators):
            return True
    return False


@dataclass(frozen=True)
class SourceMapping:
    """Token digests to sources, as read from one version of the file."""

    tokens: tuple[tuple[bytes, BoundSource], ...]

    @property
    def sources(self) -> int:
        """How many entries (a source may have several tokens)."""
        return len({id(source) for _, source in self.tokens})

    def lookup(self, digest: bytes) -> BoundSource | None:
        """The source of a token digest. Every entry is compared in constant time, with no early exit."""
        found = None
        for known, source in self.tokens:
            if hmac.compare_digest(known, digest):
                found = source
        return found


# -- reading the file ---------------------------------------------------------------------------
def load_sources(
    path: Path, connector: Connector, environ: Mapping[str, str] | None = None, reserved: bytes | None = None
) -> SourceMapping:
    """Read, resolve and validate the whole file; any problem raises :class:`SourcesFileError`.

    ``reserved`` is the digest of ``ACP_HTTP_TOKEN``, which no entry may bind.
    """
    _check_private(path)
    try:
        raw = load_json_strict(path.read_text("utf-8"))
    except UnicodeDecodeError:
        raise SourcesFileError(f"{path} is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:  # the position only: the text may hold secrets
        raise SourcesFileError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}).") from None
    except DuplicateKeyError as exc:
        raise SourcesFileError(f"{path}: the key '{exc}' appears twice in one object; keep one.") from None
    except OSError as exc:
        raise SourcesFileError(f"Cannot read {path} ({exc.strerror or type(exc).__name__}).") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("sources"), list):
        raise SourcesFileError(f'{path}: the file must be a JSON object with a "sources" list.')
    _no_unknown(raw, _FILE_KEYS, "the file")
    defaults = raw.get("defaults", {})
    if not isinstance(defaults, dict):
        raise SourcesFileError('"defaults" must be an object of limits.')
    _no_unknown(defaults, _DEFAULT_KEYS, "defaults")
    reader = _EntryReader(connector, SourceReferences(path.parent, None, os.environ if environ is None else environ))
    tokens: list[tuple[bytes, BoundSource]] = []
    owners: dict[bytes, str] = {}
    ids: set[str] = set()
    for index, entry in enumerate(raw["sources"]):
        where = f"sources[{index}]"
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and _SOURCE_ID.fullmatch(entry["id"]):
            where += f" ('{entry['id']}')"
        source, digests = reader.read(entry, defaults, where)
        if source.id in ids:
            raise SourcesFileError(f"{where}: the id '{source.id}' is already used by another entry; ids are unique.")
        ids.add(source.id)
        for digest in digests:
            if reserved is not None and hmac.compare_digest(digest, reserved):
                raise SourcesFileError(
                    f"{where}: its token is ACP_HTTP_TOKEN, which opens ordinary ACP sessions; bind another token."
                )
            if digest in owners:
                raise SourcesFileError(
                    f"{where}: a token_sha256 is also bound to {owners[digest]}; a token binds one source only."
                )
            owners[digest] = where
            tokens.append((digest, source))
    return SourceMapping(tuple(tokens))


def _check_private(path: Path) -> None:
    """The file holds credentials: refuse it unless only its owner can read or write it.

    Windows has no POSIX mode bits (its ACLs are out of reach of ``os.stat``), so the check
    is skipped there and the README says to restrict the file's ACL by hand.
    """
    try:
        info = path.stat()
    except OSError as exc:
        raise SourcesFileError(f"Cannot read the sources file {path} ({exc.strerror or type(exc).__name__}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise SourcesFileError(f"The sources file {path} is not a regular file.")
    if os.name != "nt" and info.st_mode & 0o077:
        raise SourcesFileError(
            f"The sources file {path} is open to other users (mode {stat.S_IMODE(info.st_mode):03o}) and it holds "
            f"credentials. Make it owner-only: chmod 600 {path}"
        )


def _no_unknown(raw: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SourcesFileError(f"{where}: unknown key(s) {', '.join(unknown)}. Valid keys: {', '.join(sorted(known))}.")


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


class _EntryReader:
    """Validates one entry against the connector's schemas, without I/O at the source."""

    def __init__(self, connector: Connector, references: SourceReferences) -> None:
        self.connector = connector
        self.references = references
        self.limits = Limits(connector)
        self.separators = tuple(connector.resources.separators) or (".",)

    def read(self, entry: Any, defaults: Mapping[str, Any], where: str) -> tuple[BoundSource, list[bytes]]:
        if not isinstance(entry, dict):
            raise SourcesFileError(f"{where}: each source is a JSON object.")
        _no_unknown(entry, _ENTRY_KEYS, where)
        source_id = entry.get("id")
        if not isinstance(source_id, str) or not _SOURCE_ID.fullmatch(source_id):
            raise SourcesFileError(f"{where}: id is required: lowercase letters, digits, _ or -, up to 40 characters.")
        digests = self._digests(entry.get("token_sha256"), where)
        if "label" in entry and not isinstance(entry["label"], str):
            raise SourcesFileError(f"{where}: label must be a string.")
        resolved = self._resolve(entry, where)
        credentials = self._credentials(resolved.get("credentials"), where)
        config = resolved.get("config", {})
        if not isinstance(config, dict):
            raise SourcesFileError(f"{where}.config must be an object of the connector's settings.")
        try:
            check_config(self.connector.config_schema, config)
        except AcpError as exc:
            raise SourcesFileError(f"{where}.config: {exc.message}") from None
        limits = {
            key: entry[key] if key in entry else defaults[key]
            for key in _DEFAULT_KEYS
            if key in entry or key in defaults
        }
        try:
            bounded = parse_settings(limits, self.limits.catalog_names)
        except AcpError as exc:
            first_sentence = exc.message.split(". ")[0].rstrip(".")
            raise SourcesFileError(f"{where}: {first_sentence}.") from None
        default_ref = self._resource(entry.get("default_resource_id"), credentials, f"{where}.default_resource_id")
        allowed = self._allowed(entry, credentials, default_ref, where)
        settings = replace(
            bounded,
            credentials=credentials,
            config=dict(config),
            default_resource_id=default_ref.id if default_ref else None,
        )
        ceiling = self.limits.effective(CallMeta(settings=settings), Settings())
        return BoundSource(source_id, settings, ceiling, allowed, self.separators), digests

    def _digests(self, value: Any, where: str) -> list[bytes]:
        written = value if isinstance(value, list) else [value]
        if not written or not all(isinstance(v, str) and _DIGEST.fullmatch(v.strip().lower()) for v in written):
            # Never echo the value: an operator may have pasted the token itself.
            raise SourcesFileError(
                f"{where}: token_sha256 must be the SHA-256 hex digest (64 hex digits) of the token, or a list of "
                "them; store the digest, never the token. Compute it with: python -m connectors.<id> --hash-token "
                "(reads the token on stdin)."
            )
        digests = [bytes.fromhex(v.strip().lower()) for v in written]
        if len(set(digests)) != len(digests):
            raise SourcesFileError(f"{where}: token_sha256 lists the same digest twice.")
        return digests

    def _resolve(self, entry: Mapping[str, Any], where: str) -> dict[str, Any]:
        for key in ("credentials", "config"):
            for value in _walk(entry.get(key)):
                if isinstance(value, dict) and len(value) == 1 and "projectPath" in value:
                    raise SourcesFileError(
                        f"{where}.{key}: a projectPath reference has no meaning on a server (there is no project "
                        'folder); write the absolute path, or use an {"env": …} or {"file": …} reference.'
                    )
        try:
            resolved = self.references.resolve_source(entry, where)
        except SourceReferenceError as exc:
            raise SourcesFileError(str(exc)) from None
        if isinstance(resolved.get("credentials"), dict):
            # Registered before anything can fail, so no later message or log line can carry them.
            register_secrets(secret_values(self.connector.credentials.schema, resolved["credentials"]))
        return resolved

    def _credentials(self, credentials: Any, where: str) -> dict[str, Any] | None:
        spec = self.connector.credentials
        if not spec.required:
            if credentials:
                raise SourcesFileError(f"{where}: this connector takes no credentials; remove them.")
            return None
        if not isinstance(credentials, dict) or not credentials:
            raise SourcesFileError(
                f"{where}: credentials are required (an object as the connector's credentials_schema)."
            )
        try:
            check_credentials(spec.schema, credentials)
            principal = spec.identify(credentials)
        except AcpError as exc:
            raise SourcesFileError(f"{where}.credentials: {exc.message}") from None
        except Exception as exc:  # a connector's identify may raise anything on odd input
            raise SourcesFileError(f"{where}.credentials are not valid ({type(exc).__name__}).") from None
        register_secrets(principal.secrets)
        return credentials

    def _resource(self, value: Any, credentials: dict[str, Any] | None, where: str) -> ResourceRef | None:
        if value is None:
            return None
        if not self.connector.resources.used:
            raise SourcesFileError(f"{where}: this connector has no resources; remove it.")
        if not isinstance(value, str) or not value.strip():
            raise SourcesFileError(f"{where} must be a non-empty resource id ({self.connector.resources.format}).")
        normalize = self.connector.resources.normalize
        if normalize is None:
            return ResourceRef(id=value.strip(), level=(self.connector.resources.levels or ("resource",))[0])
        try:
            return normalize(value, credentials)
        except AcpError as exc:
            raise SourcesFileError(f"{where}: {exc.message}") from None

    def _allowed(
        self, entry: Mapping[str, Any], credentials: dict[str, Any] | None, default: ResourceRef | None, where: str
    ) -> tuple[ResourceRef, ...] | None:
        if "resources" not in entry:
            return (default,) if default is not None else None
        listed = entry["resources"]
        if not isinstance(listed, list) or not listed:
            raise SourcesFileError(f"{where}.resources must be a non-empty list of resource ids.")
        allowed = []
        for index, value in enumerate(listed):
            ref = self._resource(value, credentials, f"{where}.resources[{index}]")
            assert ref is not None
            allowed.append(ref)
        if default is not None and not within(default, tuple(allowed), self.separators):
            raise SourcesFileError(
                f"{where}: default_resource_id '{default.id}' is outside its resources; add it, or one above it."
            )
        return tuple(allowed)


# -- the live mapping ---------------------------------------------------------------------------
class TokenSources:
    """The mapping in use, re-read on request: SIGHUP (:meth:`reload`), or a change of the file's
    modification time when ``poll_interval_s`` is set (platforms without SIGHUP).

    A request takes the mapping that is current when it arrives and keeps that
    :class:`BoundSource` to its end, so a reload never changes a call in flight. A file that no
    longer loads leaves the previous mapping in place, and the reason is logged.
    """

    def __init__(
        self,
        path: Path,
        connector: Connector,
        *,
        poll_interval_s: float | None = None,
        environ: Mapping[str, str] | None = None,
        reserved: bytes | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # Not resolved: a secret store may swap a symlink to publish a new version (Kubernetes does).
        self.path = path.absolute()
        self.connector = connector
        self.poll_interval_s = poll_interval_s
        self._environ = environ
        self._reserved = reserved
        self._clock = clock
        self._stamp = self._file_stamp()
        self.mapping = load_sources(self.path, connector, environ, reserved)  # at start, a bad file is fatal
        self._checked = clock()

    def lookup(self, digest: bytes) -> BoundSource | None:
        """The source bound to a presented bearer token's digest (:func:`token_digest`), or None."""
        if self.poll_interval_s is not None:
            self.poll()
        return self.mapping.lookup(digest)

    def poll(self) -> None:
        """Reload when the file changed, checking at most once per ``poll_interval_s``."""
        now = self._clock()
        if self.poll_interval_s is None or now - self._checked < self.poll_interval_s:
            return
        self._checked = now
        if self._file_stamp() != self._stamp:
            self.reload()

    def reload(self) -> bool:
        """Re-read the file; True when the new mapping is in use."""
        self._stamp = self._file_stamp()  # a broken version is tried once, not on every poll
        try:
            mapping = load_sources(self.path, self.connector, self._environ, self._reserved)
        except SourcesFileError as exc:
            log.warning("sources file not reloaded, the previous %d sources stay in use: %s", self.mapping.sources, exc)
            return False
        self.mapping = mapping
        log.info("sources file reloaded: %d sources, %d tokens", mapping.sources, len(mapping.tokens))
        return True

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size, info.st_ino
