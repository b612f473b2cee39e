"""A real OAuth 2.0 token endpoint for google-auth credentials, mounted on a ``FakeHttpServer``.

google-auth talks to ``token_uri`` with a form-encoded ``POST``:

- service accounts: ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<RS256 JWT>``.
  The JWT's ``aud`` is always Google's token URL, whatever ``token_uri`` says, and its header ``kid``
  is the key's ``private_key_id``. The fake verifies the signature against the public half of a key
  it issued (``service_account_info``) and checks that ``iss`` is that key's ``client_email``.
- user credentials: ``grant_type=refresh_token&client_id&client_secret&refresh_token[&scope]``,
  checked against what ``oauth_credentials`` issued.

The answer is ``{"access_token", "expires_in", "token_type": "Bearer"}``; a bad grant is
``400 {"error": "invalid_grant", "error_description": …}``, which google-auth raises as ``RefreshError``
after one attempt (it retries 5xx answers itself, about three times in three seconds).

The endpoint remembers the access tokens it issued: an API fake calls ``is_valid_access_token``.
``revoke_access_tokens()`` invalidates all of them, so the next API call gets a 401 and the client's
``AuthorizedSession`` refreshes and replays the request.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import Counter
from typing import Any

from fakes.http import FakeHttpServer, RecordedRequest, Reply

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
REFRESH_TOKEN_GRANT = "refresh_token"
# google-auth signs every service-account assertion for this audience, even with another token_uri.
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
ACCESS_TOKEN_LIFETIME_S = 3599

_rsa_key_lock = threading.Lock()
_rsa_key_pems: list[tuple[str, str]] = []  # filled once: generating an RSA-2048 key takes ~0.1 s


def _shared_rsa_key_pems() -> tuple[str, str]:
    """(private PKCS#8 PEM, public PEM) of one RSA-2048 key shared by every fake in the process."""
    with _rsa_key_lock:
        if not _rsa_key_pems:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import rsa

            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            private_pem = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ).decode()
            public_pem = (
                key.public_key()
                .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
                .decode()
            )
            _rsa_key_pems.append((private_pem, public_pem))
        return _rsa_key_pems[0]


def _oauth_error(status: int, error: str, description: str) -> Reply:
    return Reply(status, {"error": error, "error_description": description})


class FakeGoogleOAuth:
    """The token endpoint ``POST /token`` (route name ``"token"``) on ``server``."""

    TOKEN_PATH = "/token"

    def __init__(self, server: FakeHttpServer) -> None:
        self._server = server
        self._lock = threading.Lock()
        self._service_account_keys: dict[str, tuple[str, str]] = {}  # private_key_id → (client_email, public PEM)
        self._refresh_tokens: dict[str, tuple[str, str]] = {}  # refresh_token → (client_id, client_secret)
        self._access_tokens: set[str] = set()
        self._token_requests: Counter[str] = Counter()
        self._granted: Counter[str] = Counter()
        server.add_route(
            "POST", re.escape(self.TOKEN_PATH), self._handle_token, "token", error_formatter=self._format_fault
        )

    # ----------------------------------------------------------------- issuing

    @property
    def token_uri(self) -> str:
        return self._server.url + self.TOKEN_PATH

    def service_account_info(self, project_id: str, client_email: str | None = None) -> dict[str, Any]:
        """A complete service-account key file (as a dict) whose ``token_uri`` is this endpoint."""
        private_pem, public_pem = _shared_rsa_key_pems()
        key_id = secrets.token_hex(20)
        email = client_email or f"connector-{secrets.token_hex(3)}@{project_id}.iam.gserviceaccount.com"
        with self._lock:
            self._service_account_keys[key_id] = (email, public_pem)
        return {
            "type": "service_account",
            "project_id": project_id,
            "private_key_id": key_id,
            "private_key": private_pem,
            "client_email": email,
            "client_id": str(secrets.randbelow(10**20)),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "universe_domain": "googleapis.com",
        }

    def oauth_credentials(self, with_access_token: bool = True) -> dict[str, Any]:
        """An authorized-user grant: ``refresh_token``, ``client_id``, ``client_secret``, ``token_uri``.

        With ``with_access_token``, also an ``access_token`` that is already valid and its
        ``expiry_date`` (epoch milliseconds, one hour ahead), as stored by apps that saved a consent.
        """
        client_id = f"{secrets.randbelow(10**12)}-fake.apps.googleusercontent.com"
        client_secret = "GOCSPX-" + secrets.token_urlsafe(18)
        refresh_token = "1//fake-" + secrets.token_urlsafe(24)
        with self._lock:
            self._refresh_tokens[refresh_token] = (client_id, client_secret)
        credentials: dict[str, Any] = {
            "refresh_token": refresh_token,
            "client_id": client_id,
            "client_secret": client_secret,
            "token_uri": self.token_uri,
        }
        if with_access_token:
            credentials["access_token"] = self._issue_access_token()
            credentials["expiry_date"] = int((time.time() + 3600) * 1000)
        return credentials

    def _issue_access_token(self) -> str:
        token = "ya29.fake-" + secrets.token_urlsafe(24)
        with self._lock:
            self._access_tokens.add(token)
        return token

    # ----------------------------------------------------------------- checking

    def is_valid_access_token(self, token: str | None) -> bool:
        with self._lock:
            return token is not None and token in self._access_tokens

    def bearer_token_is_valid(self, request: RecordedRequest) -> bool:
        """Whether ``request`` carries ``Authorization: Bearer <a token this endpoint issued>``."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.is_valid_access_token(token.strip())

    def revoke_access_tokens(self) -> None:
        """Invalidate every access token issued so far; refresh tokens and keys stay valid."""
        with self._lock:
            self._access_tokens.clear()

    @property
    def token_requests(self) -> Counter[str]:
        """Requests received per ``grant_type`` (granted or not), e.g. ``[JWT_BEARER_GRANT]``."""
        with self._lock:
            return Counter(self._token_requests)

    @property
    def tokens_granted(self) -> Counter[str]:
        """Access tokens granted per ``grant_type``."""
        with self._lock:
            return Counter(self._granted)

    # ----------------------------------------------------------------- the endpoint

    def _handle_token(self, request: RecordedRequest, match: re.Match[str]) -> Reply:
        form = request.form()
        grant_type = form.get("grant_type", "")
        with self._lock:
            self._token_requests[grant_type] += 1
        if grant_type == JWT_BEARER_GRANT:
            reply = self._grant_jwt_bearer(form.get("assertion", ""))
        elif grant_type == REFRESH_TOKEN_GRANT:
            reply = self._grant_refresh_token(form)
        else:
            reply = _oauth_error(400, "unsupported_grant_type", f"Invalid grant_type: {grant_type}")
        if reply.status == 200:
            with self._lock:
                self._granted[grant_type] += 1
        return reply

    def _grant_jwt_bearer(self, assertion: str) -> Reply:
        from google.auth import exceptions as auth_exceptions
        from google.auth import jwt

        try:
            header = jwt.decode_header(assertion)
        except (ValueError, auth_exceptions.GoogleAuthError) as exc:
            return _oauth_error(400, "invalid_grant", f"Invalid JWT: {exc}")
        if header.get("alg") != "RS256":
            return _oauth_error(400, "invalid_grant", f"Invalid JWT: algorithm {header.get('alg')!r} is not RS256")
        with self._lock:
            issued = dict(self._service_account_keys)
        key = issued.get(header.get("kid", ""))
        if key is None:
            return _oauth_error(400, "invalid_grant", "Invalid JWT Signature: unknown key id")
        client_email, public_pem = key
        try:
            claims = jwt.decode(assertion, certs=public_pem, audience=GOOGLE_TOKEN_AUDIENCE)
        except (ValueError, auth_exceptions.GoogleAuthError) as exc:
            return _oauth_error(400, "invalid_grant", f"Invalid JWT Signature: {exc}")
        if claims.get("iss") != client_email:
            return _oauth_error(400, "invalid_grant", "Invalid JWT: iss is not the key's client_email")
        return Reply(
            200,
            {"access_token": self._issue_access_token(), "expires_in": ACCESS_TOKEN_LIFETIME_S, "token_type": "Bearer"},
        )

    def _grant_refresh_token(self, form: dict[str, str]) -> Reply:
        with self._lock:
            client = self._refresh_tokens.get(form.get("refresh_token", ""))
        if client is None:
            return _oauth_error(400, "invalid_grant", "Token has been expired or revoked.")
        if (form.get("client_id"), form.get("client_secret")) != client:
            return _oauth_error(400, "invalid_grant", "The OAuth client was not found or the secret is wrong.")
        body: dict[str, Any] = {
            "access_token": self._issue_access_token(),
            "expires_in": ACCESS_TOKEN_LIFETIME_S,
            "token_type": "Bearer",
        }
        if form.get("scope"):
            # google-auth compares granted with requested scopes; echo what was asked.
            body["scope"] = form["scope"]
        return Reply(200, body)

    @staticmethod
    def _format_fault(status: int, reason: str | None, message: str) -> Reply:
        """An injected fault in the token endpoint's own format (not a Google API envelope)."""
        error = reason or ("invalid_grant" if status < 500 else "internal_failure")
        return _oauth_error(status, error, message)
