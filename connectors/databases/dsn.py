"""URL connection strings read so that no part of a password can reach a message.

In ``scheme://user:password@host:port/database?options`` a password may hold ``@ : / ? #`` that
were meant to be percent-encoded, and parsers disagree on where such a password ends: libpq
read ``postgresql://u:pa@ss@h/db`` as host ``ss@h`` and ``postgresql://u:pa/ss@h/db`` as host
``u``, port ``pa`` — then quoted that "host" and "port" in its errors. So, by construction:

* the *userinfo* is everything between ``://`` and the **last** ``@`` of the string: the widest
  span that may be password. It is never put in a message, and it is registered as a secret
  (:func:`userinfo_secrets`: whole, decoded, and cut at every ``:`` and ``@``);
* the driver's own reading of the user and password must agree with that span
  (:func:`require_agreement`), or the string is refused with fixed words that say how to write it;
* messages about a connection string name only its parsed host, port and database, which lie
  after the last ``@`` and so cannot hold any of the password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from shared import CredentialsInvalid

_SCHEME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.\-]*)://")
_SEPARATORS = re.compile(r"[:@]")


@dataclass(frozen=True)
class UrlParts:
    """A URL connection string cut at ``://`` and at its last ``@``."""

    scheme: str  # lower case
    userinfo: str | None  # as written (percent-encoded); None when there is no "@"
    rest: str  # host[:port][/database][?options]

    @property
    def user(self) -> str | None:
        if self.userinfo is None:
            return None
        return unquote(self.userinfo.split(":", 1)[0])

    @property
    def password(self) -> str | None:
        if self.userinfo is None or ":" not in self.userinfo:
            return None
        return unquote(self.userinfo.split(":", 1)[1])


def split_url(dsn: str) -> UrlParts | None:
    """The parts of ``scheme://…``; None when the text does not start with a scheme and ``://``."""
    match = _SCHEME.match(dsn)
    if match is None:
        return None
    body = dsn[match.end() :]
    at = body.rfind("@")
    if at < 0:
        return UrlParts(match.group(1).lower(), None, body)
    return UrlParts(match.group(1).lower(), body[:at], body[at + 1 :])


def userinfo_secrets(dsn: str) -> list[str]:
    """Strings to redact for a connection string: its userinfo as written and decoded, and every
    span of it between two of its ``:`` and ``@`` (or its ends) that reaches past the user name,
    since any of them may be the password a driver or a person meant. The user name alone (before
    the first ``:``) is not a secret: redacting it would only blur the messages that name it."""
    parts = split_url(dsn)
    if parts is None or not parts.userinfo or ":" not in parts.userinfo:
        return []
    found: set[str] = set()
    for text in {parts.userinfo, unquote(parts.userinfo)}:
        user_end = text.index(":")
        separators = list(_SEPARATORS.finditer(text))
        starts = [0, *(m.end() for m in separators)]
        ends = [*(m.start() for m in separators), len(text)]
        found.update(text[start:end] for start in starts for end in ends if end > max(start, user_end))
    return sorted(found, key=len, reverse=True)


def require_agreement(parts: UrlParts, user: str | None, password: str | None, engine: str, shape: str) -> None:
    """Refuse a string whose driver reading (``user``, ``password``) differs from the split at the
    last ``@``: a character of the user or password was not percent-encoded, and what the driver
    would take for the host, port or database may be a piece of the password. Without an ``@`` there
    is nothing to misread, and without a ``:`` in the userinfo the password may come from the options
    (``?password=…``)."""
    if parts.userinfo is None:
        return
    disagree = (user or None) != (parts.user or None)
    if parts.password is not None:
        disagree = disagree or (password or None) != (parts.password or None)
    if disagree:
        raise CredentialsInvalid(
            f"The {engine} connection string cannot be read safely: a character in its user name or password "
            "(such as @ : / ? # % or a space) is not percent-encoded (write @ as %40, : as %3A, / as %2F, "
            f"? as %3F, # as %23, % as %25, a space as %20). Ask the user to re-enter it as {shape}."
        )
