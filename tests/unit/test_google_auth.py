"""Google credentials: validation without I/O, trusted token endpoints, building, errors."""

from __future__ import annotations

import datetime as dt
import functools
import json

import pytest

from shared import CredentialsInvalid, UpstreamError, google_auth


@functools.cache
def _pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _sa(**overrides: object) -> dict:
    info = {
        "type": "service_account",
        "project_id": "my-proj",
        "private_key_id": "kid-1",
        "private_key": _pem(),
        "client_email": "reader@my-proj.iam.gserviceaccount.com",
        "client_id": "123",
        "token_uri": "https://oauth2.googleapis.com/token",
        **overrides,
    }
    return {"type": "service_account", "service_account": json.dumps({k: v for k, v in info.items() if v is not None})}


def test_a_service_account_is_identified_by_email_and_key_id_and_its_secrets_are_registered() -> None:
    principal = google_auth.identify(_sa())
    assert principal.identity == "sa:reader@my-proj.iam.gserviceaccount.com#kid-1"
    assert _pem() in principal.secrets


@pytest.mark.parametrize(
    ("credentials", "fragment"),
    [
        ({"type": "service_account", "service_account": "{not json"}, "not valid JSON"),
        ({"type": "service_account", "service_account": '{"type": "authorized_user"}'}, "not a service account"),
        (_sa(private_key=None), "private_key"),
        (_sa(private_key="not a key"), "not a PEM private key"),
        (_sa(token_uri="https://token.example.net/steal"), "token_uri is not Google's"),
        (_sa(token_uri="http://169.254.169.254/token"), "token_uri is not Google's"),
    ],
)
def test_bad_service_accounts_are_refused_without_echoing_the_key(credentials: dict, fragment: str) -> None:
    with pytest.raises(CredentialsInvalid) as caught:
        google_auth.identify(credentials)
    assert fragment in caught.value.message
    assert "PRIVATE KEY" not in caught.value.message and "Ask the user" in caught.value.message


def test_loopback_and_legacy_google_token_uris_are_trusted() -> None:
    google_auth.identify(_sa(token_uri="http://127.0.0.1:8123/token"))
    google_auth.identify(_sa(token_uri="https://accounts.google.com/o/oauth2/token"))
    google_auth.identify(_sa(token_uri=None))  # missing: Google's default


def test_oauth_needs_an_access_token_or_a_refresh_token_with_its_client() -> None:
    with pytest.raises(CredentialsInvalid) as missing:
        google_auth.identify({"type": "oauth"})
    assert "access_token" in missing.value.message
    with pytest.raises(CredentialsInvalid) as half:
        google_auth.identify({"type": "oauth", "refresh_token": "1//secret-refresh", "client_id": "cid"})
    assert "client_secret" in half.value.message and "1//secret-refresh" not in half.value.message
    only_access = google_auth.identify({"type": "oauth", "access_token": "ya29.secret-access"})
    assert "ya29" not in only_access.identity and "ya29.secret-access" in only_access.secrets
    with_email = google_auth.identify({"type": "oauth", "access_token": "ya29.x", "email": "ana@example.com"})
    assert with_email.identity == "oauth:-:ana@example.com"


def test_building_credentials() -> None:
    sa = google_auth.build(_sa(), ["https://www.googleapis.com/auth/bigquery"])
    assert sa.service_account_email == "reader@my-proj.iam.gserviceaccount.com"
    expiry_ms = int(dt.datetime(2030, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    user = google_auth.build(
        {
            "type": "oauth",
            "access_token": "ya29.x",
            "refresh_token": "r",
            "client_id": "c",
            "client_secret": "s",
            "expiry_date": expiry_ms,
        },
        ["https://www.googleapis.com/auth/bigquery"],
        environ={},
    )
    assert user.token == "ya29.x" and user.expiry == dt.datetime(2030, 1, 1)
    assert user.token_uri == google_auth.GOOGLE_TOKEN_URI


def test_the_oauth_token_uri_override_is_loopback_only() -> None:
    assert (
        google_auth.oauth_token_uri({"ACP_GOOGLE_TOKEN_URI": "http://127.0.0.1:9/token"}) == "http://127.0.0.1:9/token"
    )
    with pytest.raises(UpstreamError):
        google_auth.oauth_token_uri({"ACP_GOOGLE_TOKEN_URI": "https://example.com/token"})


def test_refresh_errors_repeat_only_the_oauth_code() -> None:
    from google.auth import exceptions

    error = exceptions.RefreshError("invalid_grant: Token has been expired or revoked for 1//leaky", {"error": "x"})
    mapped = google_auth.translate(error)
    assert isinstance(mapped, CredentialsInvalid)
    assert "(invalid_grant)" in mapped.message and "1//leaky" not in mapped.message
    assert isinstance(google_auth.translate(exceptions.TransportError("down")), UpstreamError)
    assert google_auth.translate(ValueError("unrelated")) is None
