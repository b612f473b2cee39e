"""Google credentials for the Google connectors (BigQuery, GA4, Search Console).

Two variants (spec 5.5.2, 10.2): a pasted service-account JSON key, or OAuth tokens that a
host fills in through ``x-acp-login`` with provider ``google`` (spec 5.5.5). This module
validates them without I/O and builds ``google-auth`` credentials (imported lazily, on
first use). Signed assertions and refresh tokens only ever go to Google's token endpoint,
or to a loopback URL (tests, emulators): a pasted ``token_uri`` cannot send them anywhere else.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ._http import is_loopback
from ._redaction import redact
from .declaration import Principal
from .errors import AcpError, CredentialsInvalid, UpstreamError
from .protocol import JsonObject

GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"  # noqa: S105 - a URL, not a secret
# The legacy spellings of the same endpoint still found in older key files.
_GOOGLE_TOKEN_URIS = frozenset(
    {GOOGLE_TOKEN_URI, "https://accounts.google.com/o/oauth2/token", "https://www.googleapis.com/oauth2/v4/token"}
)
TOKEN_URI_ENV = "ACP_GOOGLE_TOKEN_URI"  # noqa: S105 - OAuth refreshes go here instead (loopback only): tests, emulators
_SERVICE_ACCOUNT_FIELDS = ("client_email", "private_key")


def credentials_schema(scopes: Sequence[str], service_account_help: str) -> JsonObject:
    """``credentials_schema``: a service-account key, or OAuth tokens from a Google login."""
    return {
        "oneOf": [
            {
                "title": "Service account",
                "description": service_account_help,
                "type": "object",
                "properties": {
                    "type": {"type": "string", "const": "service_account"},
                    "service_account": {
                        "type": "string",
                        "title": "Service account key (JSON)",
                        "description": "Paste the whole JSON key file of the service account.",
                        "contentMediaType": "application/json",
                        "writeOnly": True,
                    },
                },
                "required": ["type", "service_account"],
            },
            {
                "title": "Google account (OAuth)",
                "description": "Sign in with Google. A refresh token (with its client) keeps working; an access "
                "token alone lasts about an hour.",
                "type": "object",
                "x-acp-login": {"provider": "google", "scopes": list(scopes)},
                "properties": {
                    "type": {"type": "string", "const": "oauth"},
                    "access_token": {
                        "type": "string",
                        "title": "Access token",
                        "writeOnly": True,
                        "x-acp-filled": True,
                    },
                    "refresh_token": {
                        "type": "string",
                        "title": "Refresh token",
                        "writeOnly": True,
                        "x-acp-filled": True,
                    },
                    "client_id": {"type": "string", "title": "OAuth client id", "x-acp-filled": True},
                    "client_secret": {
                        "type": "string",
                        "title": "OAuth client secret",
                        "writeOnly": True,
                        "x-acp-filled": True,
                    },
                    "expiry_date": {
                        "type": "integer",
                        "title": "Access token expiry",
                        "description": "When the access token expires, in milliseconds since the Unix epoch.",
                        "x-acp-filled": True,
                    },
                    "email": {"type": "string", "title": "Account", "format": "email", "x-acp-filled": True},
                },
                "required": ["type"],
            },
        ]
    }


def identify(credentials: Mapping[str, Any]) -> Principal:
    """Validate the (schema-checked) credentials and name who they are; no I/O."""
    if credentials.get("type") == "service_account":
        info = service_account_info(credentials)
        identity = f"sa:{info['client_email']}#{info.get('private_key_id', '')}"
        return Principal(identity=identity, secrets=(str(credentials["service_account"]), str(info["private_key"])))
    access_token = credentials.get("access_token")
    refresh_token = credentials.get("refresh_token")
    if refresh_token:
        missing = [name for name in ("client_id", "client_secret") if not credentials.get(name)]
        if missing:
            raise CredentialsInvalid(
                f"OAuth credentials with a refresh_token also need {' and '.join(missing)}. "
                "Ask the user to sign in with Google again in the source settings."
            )
    elif not access_token:
        raise CredentialsInvalid(
            "OAuth credentials need an access_token, or a refresh_token with its client_id and client_secret. "
            "Ask the user to sign in with Google again in the source settings."
        )
    # A fingerprint of the long-lived token keys caches when the host sends no email.
    who = credentials.get("email") or _fingerprint(str(refresh_token or access_token))
    secret_fields = ("access_token", "refresh_token", "client_secret")
    secrets = tuple(str(credentials[k]) for k in secret_fields if credentials.get(k))
    return Principal(identity=f"oauth:{credentials.get('client_id') or '-'}:{who}", secrets=secrets)


def service_account_info(credentials: Mapping[str, Any]) -> dict[str, Any]:
    """The parsed service-account key; every problem is ACP_CREDENTIALS_INVALID without the value."""
    try:
        info = json.loads(str(credentials.get("service_account", "")))
    except ValueError:
        raise CredentialsInvalid(
            "The service account key is not valid JSON. Ask the user to paste the whole JSON key file again."
        ) from None
    if not isinstance(info, dict) or info.get("type") != "service_account":
        raise CredentialsInvalid(
            'The pasted JSON is not a service account key (its "type" must be "service_account"). '
            "Ask the user to create a key for the service account and paste the file."
        )
    missing = [name for name in _SERVICE_ACCOUNT_FIELDS if not isinstance(info.get(name), str) or not info[name]]
    if missing:
        raise CredentialsInvalid(
            f"The service account key has no {', '.join(missing)}. Ask the user to paste the whole JSON key file."
        )
    if "PRIVATE KEY-----" not in info["private_key"]:
        raise CredentialsInvalid(
            "The service account key's private_key is not a PEM private key. Ask the user to paste the JSON file "
            "exactly as Google produced it."
        )
    token_uri = info.get("token_uri") or GOOGLE_TOKEN_URI
    if not isinstance(token_uri, str) or not _trusted_token_uri(token_uri):
        raise CredentialsInvalid(
            "The service account key's token_uri is not Google's token endpoint, so its signed assertions would go "
            f"to another server. Ask the user to use a key file from Google (token_uri {GOOGLE_TOKEN_URI})."
        )
    return info


def build(credentials: Mapping[str, Any], scopes: Sequence[str], environ: Mapping[str, str] | None = None) -> Any:
    """``google.auth.credentials.Credentials`` for these (already identified) credentials."""
    if credentials.get("type") == "service_account":
        from google.oauth2 import service_account

        info = service_account_info(credentials)
        info.setdefault("token_uri", GOOGLE_TOKEN_URI)
        try:
            return service_account.Credentials.from_service_account_info(info, scopes=list(scopes))  # type: ignore[no-untyped-call]
        except ValueError:
            raise CredentialsInvalid(
                "The service account's private_key could not be read. Ask the user to paste the JSON key file "
                "exactly as Google produced it, or to create a new key."
            ) from None
    import google.oauth2.credentials

    expiry = None
    if credentials.get("expiry_date") is not None:
        # google-auth compares expiries as naive UTC datetimes.
        expiry = dt.datetime.fromtimestamp(int(credentials["expiry_date"]) / 1000, dt.UTC).replace(tzinfo=None)
    return google.oauth2.credentials.Credentials(  # type: ignore[no-untyped-call]
        token=credentials.get("access_token"),
        refresh_token=credentials.get("refresh_token"),
        client_id=credentials.get("client_id"),
        client_secret=credentials.get("client_secret"),
        token_uri=oauth_token_uri(environ),
        expiry=expiry,
    )


def oauth_token_uri(environ: Mapping[str, str] | None = None) -> str:
    """Google's token endpoint, or ``ACP_GOOGLE_TOKEN_URI`` when it is a loopback URL."""
    override = (os.environ if environ is None else environ).get(TOKEN_URI_ENV, "").strip()
    if not override:
        return GOOGLE_TOKEN_URI
    if not _is_loopback_url(override):
        raise UpstreamError(
            f"{TOKEN_URI_ENV} must be a loopback URL (it exists for tests and emulators). Ask the operator to unset "
            "it or point it at 127.0.0.1."
        )
    return override


def translate(exc: BaseException) -> AcpError | None:
    """``google-auth`` failures as ACP errors; None for anything else."""
    from google.auth import exceptions as auth_errors

    if isinstance(exc, auth_errors.RefreshError):
        code = _oauth_error_code(exc)
        because = f" ({code})" if code else ""
        return CredentialsInvalid(
            f"Google refused the credentials when issuing an access token{because}. The key may be deleted or "
            "disabled, or the sign-in revoked or expired. Ask the user to reconnect the source."
        )
    if isinstance(exc, auth_errors.TransportError):
        return UpstreamError(
            "Google's token endpoint could not be reached to authenticate. Try again in a moment; if it keeps "
            "failing, check the machine's network."
        )
    if isinstance(exc, auth_errors.GoogleAuthError):
        return CredentialsInvalid(
            f"The Google credentials cannot be used ({redact(str(exc))[:160]}). Ask the user to reconnect the source."
        )
    return None


def _oauth_error_code(exc: BaseException) -> str | None:
    # RefreshError's text starts with the OAuth error code ("invalid_grant: …"); only the code is
    # repeated, since descriptions can quote what was sent.
    text = str(exc.args[0]) if exc.args else ""
    match = re.match(r"\s*\(?'?([a-z_]{3,40})\b", text)
    return match.group(1) if match else None


def _trusted_token_uri(uri: str) -> bool:
    return uri in _GOOGLE_TOKEN_URIS or _is_loopback_url(uri)


def _is_loopback_url(uri: str) -> bool:
    parts = urllib.parse.urlsplit(uri)
    return parts.scheme in ("http", "https") and bool(parts.hostname) and is_loopback(parts.hostname or "")


def _fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()[:16]
