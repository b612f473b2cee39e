"""References in a sources file (spec 16.3): a value given by where it lives, not written out.

Any value inside a source's ``credentials`` and ``config``, at any depth, may be a reference:

==========================  ===================================================================
``{"env": "NAME"}``         the environment variable ``NAME`` (missing: an error)
``{"file": "path"}``        the file's UTF-8 text, stripped of surrounding whitespace; a relative
                            path starts at the sources file's folder (unreadable: an error)
``{"projectPath": "path"}`` the absolute path of ``path`` inside the project folder; ``..``,
                            absolute paths and symlinks that lead outside it are refused (the
                            path need not exist yet: a database file may be created there)
==========================  ===================================================================

A reference is an object with exactly one of those keys. Anything else is data: an object
with another single key, and an object that has one of those keys *among others* (say
``{"file": "out.csv", "format": "csv"}`` in a config), stays an object, and its values are
walked for references like any other. A reference key with a value that is not a non-empty
string is an error, since that object can only have been meant as a reference.

One :class:`SourceReferences` serves every source file: the ACP bridge's ``sources.json``
and the HTTP server's token-bound sources both resolve through it. Errors are
:class:`SourceReferenceError`: the message names where the reference sits (for example
``sources[1].credentials.service_account``) and what to fix, and never a resolved value.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["REFERENCE_KEYS", "DuplicateKeyError", "SourceReferenceError", "SourceReferences", "load_json_strict"]

REFERENCE_KEYS = ("env", "file", "projectPath")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Only a name written the conventional way is repeated in a message: a reference that holds a pasted
# secret instead of a variable's name must not carry that secret into an error the model may read.
_SHOWN_VARIABLE = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")


class SourceReferenceError(ValueError):
    """A reference that cannot be resolved. ``where`` is its path in the file; the message says the fix."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where


@dataclass(frozen=True)
class SourceReferences:
    """Resolves the references of one sources file.

    ``base_dir`` is the sources file's folder (``file`` paths start there); ``project_dir``
    the project folder (``projectPath`` stays inside it; ``None``: projectPath is refused);
    ``environ`` the variables ``env`` reads (the process's by default).
    """

    base_dir: Path
    project_dir: Path | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)

    def resolve(self, value: Any, where: str) -> Any:
        """``value`` with every reference replaced; ``where`` names ``value`` in error messages."""
        if isinstance(value, dict):
            if len(value) == 1:
                key, target = next(iter(value.items()))
                if key in REFERENCE_KEYS:
                    return self._reference(key, target, where)
            return {k: self.resolve(v, _member(where, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    def resolve_source(self, source: Mapping[str, Any], where: str) -> dict[str, Any]:
        """A source entry with its ``credentials`` and ``config`` resolved (spec 16.3); the rest is kept."""
        resolved = dict(source)
        for key in ("credentials", "config"):
            if key in resolved:
                resolved[key] = self.resolve(resolved[key], _member(where, key))
        return resolved

    # -- the three references ------------------------------------------------------------------
    def _reference(self, key: str, target: Any, where: str) -> str:
        if not isinstance(target, str) or not target.strip():
            raise SourceReferenceError(
                where, f'a {{"{key}": …}} reference needs a non-empty string; write the {_WHAT[key]} there.'
            )
        if key == "env":
            return self._env(target, where)
        if key == "file":
            return self._file(target, where)
        return self._project_path(target, where)

    def _env(self, name: str, where: str) -> str:
        value = self.environ.get(name)
        if value is None:
            named = name if _SHOWN_VARIABLE.match(name) else "it names (not repeated: it is not an UPPER_CASE name)"
            raise SourceReferenceError(
                where,
                f"the environment variable {named} is not set; set it where the server starts, or change the "
                'reference (an {"env"} reference holds the variable\'s name, never the secret itself).',
            )
        return value

    def _file(self, written: str, where: str) -> str:
        path = self.base_dir / written  # an absolute path stays as it is
        try:
            return path.read_text("utf-8").strip()
        except UnicodeDecodeError:
            raise SourceReferenceError(
                where, f"the file {path} is not UTF-8 text; point the reference at a text file."
            ) from None
        except IsADirectoryError:
            raise SourceReferenceError(where, f"{path} is a folder; point the reference at a file.") from None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise SourceReferenceError(
                where,
                f"cannot read the file {path} ({reason}). Relative paths start at {self.base_dir}; fix the path "
                "or the file's permissions.",
            ) from None

    def _project_path(self, written: str, where: str) -> str:
        if self.project_dir is None:
            raise SourceReferenceError(
                where,
                "projectPath needs a project folder and none was given; give one (the bridge's --project) "
                "or write the path itself.",
            )
        try:
            project = self.project_dir.resolve()
            # resolve() follows every symlink that exists, so a link inside the project that leads out is caught.
            resolved = (project / written).resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise SourceReferenceError(
                where, f"projectPath {written!r} cannot be resolved ({exc}); fix the path."
            ) from None
        if not resolved.is_relative_to(project):
            raise SourceReferenceError(
                where, f"projectPath {written!r} leads outside the project {project}; use a path inside it."
            )
        return str(resolved)


_WHAT = {"env": "variable's name", "file": "file's path", "projectPath": "path inside the project"}


def _member(where: str, key: str) -> str:
    return f"{where}.{key}" if _PLAIN_KEY.match(key) else f"{where}[{json.dumps(key)}]"


class DuplicateKeyError(ValueError):
    """A sources file writes one key twice in one object; ``key`` is the key."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A key written twice would silently keep the last value: a credential the user thinks is set may not be.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def load_json_strict(text: str) -> Any:
    """``json.loads`` of a sources file, refusing a key written twice in one object (:class:`DuplicateKeyError`)."""
    return json.loads(text, object_pairs_hook=_no_duplicate_keys)
