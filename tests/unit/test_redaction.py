"""Unit tests for shared/_redaction.py: no credential echo in errors or logs (spec 5.4, 10.1.4)."""

from __future__ import annotations

import json
import logging
import sys

from shared._redaction import REDACTED, SecretRegistry, _RedactingJsonFormatter, redact, register_secrets

PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7redactTESTline1\n"
    "k3Jq9xVb5UnW0aZ7o2y4pQ8sRtLmNcVdEfGhIjKlMnOpQrStUvWxYzTESTline2\n"
    "-----END PRIVATE KEY-----\n"
)
PEM_LINE_1 = PEM.splitlines()[1]
PEM_LINE_2 = PEM.splitlines()[2]


def _registry(*secrets: str) -> SecretRegistry:
    registry = SecretRegistry()
    registry.add(secrets)
    return registry


# -- SecretRegistry ----------------------------------------------------------------------------------


def test_registered_secret_is_scrubbed_everywhere_in_the_text() -> None:
    secret = "CANARY-SECRET-123456"
    out = _registry(secret).redact(f"auth failed for {secret}; retry with {secret}")
    assert secret not in out
    assert out == f"auth failed for {REDACTED}; retry with {REDACTED}"


def test_nothing_registered_leaves_text_unchanged() -> None:
    assert SecretRegistry().redact("plain text CANARY-SECRET-123456") == "plain text CANARY-SECRET-123456"


def test_unrelated_text_is_unchanged() -> None:
    registry = _registry("CANARY-SECRET-123456")
    assert registry.redact("Query failed: table not found") == "Query failed: table not found"
    assert registry.redact("") == ""


def test_several_secrets_are_all_scrubbed() -> None:
    registry = _registry("access-token-AAAAAAAA", "refresh-token-BBBBBBBB")
    out = registry.redact("a=access-token-AAAAAAAA r=refresh-token-BBBBBBBB")
    assert "AAAAAAAA" not in out
    assert "BBBBBBBB" not in out
    assert out.count(REDACTED) == 2


def test_secrets_added_later_are_scrubbed_too() -> None:
    registry = _registry("first-secret-111111")
    registry.add(["second-secret-222222"])
    out = registry.redact("first-secret-111111 second-secret-222222")
    assert "111111" not in out
    assert "222222" not in out


def test_longer_secret_wins_over_a_registered_prefix_of_it() -> None:
    # No fragment of the longer secret may survive (spec 10.1.4: "ni fragmentos").
    registry = _registry("prefix-secret", "prefix-secret-and-more-XYZ")
    out = registry.redact("value: prefix-secret-and-more-XYZ.")
    assert out == f"value: {REDACTED}."


def test_secret_with_regex_characters_is_matched_literally() -> None:
    secret = "p@ss.w*rd+(x)|[y]^$"
    registry = _registry(secret)
    assert registry.redact(f"pw={secret}") == f"pw={REDACTED}"
    assert registry.redact("pXssXwXrd") == "pXssXwXrd"


def test_json_escaped_form_is_scrubbed() -> None:
    secret = 'pa"ss\\word-with\tspecials'
    registry = _registry(secret)
    escaped = json.dumps({"password": secret})
    out = registry.redact(escaped)
    assert json.dumps(secret)[1:-1] not in out
    assert "specials" not in out
    assert REDACTED in out


def test_secret_inside_a_json_encoded_service_account_is_scrubbed() -> None:
    # spec 10.2: a service account travels as JSON text inside a string field.
    service_account = json.dumps({"type": "service_account", "private_key": PEM, "client_email": "bot@x.iam"})
    registry = _registry(service_account)
    echoed = json.dumps({"credentials": {"service_account": service_account}})
    out = registry.redact(echoed)
    assert PEM_LINE_1 not in out
    assert PEM_LINE_2 not in out


def test_pem_like_lines_are_scrubbed_one_by_one() -> None:
    registry = _registry(PEM)
    # A library error that echoes only one line of the key.
    out = registry.redact(f"Could not deserialize key data: {PEM_LINE_2}")
    assert PEM_LINE_2 not in out
    assert REDACTED in out
    out = registry.redact(f"line one was {PEM_LINE_1}")
    assert PEM_LINE_1 not in out


def test_whole_pem_and_its_json_escaped_form_are_scrubbed() -> None:
    registry = _registry(PEM)
    for text in (PEM, json.dumps(PEM)):
        out = registry.redact(f"key={text}")
        assert PEM_LINE_1 not in out
        assert PEM_LINE_2 not in out


def test_short_strings_are_not_treated_as_secrets() -> None:
    # Short values ("root", "5432") are too common to scrub blindly.
    registry = _registry("root", "5432", "abc")
    text = "user root on port 5432 reading table abc"
    assert registry.redact(text) == text


def test_short_lines_of_a_long_secret_are_not_scrubbed() -> None:
    registry = _registry("ab\nCANARY-SECRET-123456\ncd")
    out = registry.redact("ab cd CANARY-SECRET-123456")
    assert out.startswith("ab cd ")
    assert "CANARY-SECRET-123456" not in out


def test_non_string_secrets_are_ignored() -> None:
    registry = SecretRegistry()
    registry.add([12345678, None])  # type: ignore[list-item]
    assert registry.redact("12345678 None") == "12345678 None"


# -- module-level registry and the JSON log formatter ------------------------------------------------


def _record(msg: str, *args: object, exc_info: object = None, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("acp.test", logging.WARNING, "test_redaction.py", 1, msg, args, exc_info)  # type: ignore[arg-type]
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_module_redact_uses_registered_secrets() -> None:
    secret = "module-level-secret-9f8e7d"
    register_secrets([secret])
    assert redact(f"x {secret} y") == f"x {REDACTED} y"


def test_formatter_outputs_one_json_object_with_the_message() -> None:
    line = _RedactingJsonFormatter().format(_record("hello %s", "world", call_id="c-1", tool="run_report"))
    entry = json.loads(line)
    assert "\n" not in line
    assert entry["msg"] == "hello world"
    assert entry["level"] == "warning"
    assert entry["logger"] == "acp.test"
    assert entry["call_id"] == "c-1"
    assert entry["tool"] == "run_report"


def test_formatter_redacts_message_arguments() -> None:
    secret = "formatter-secret-ABCDEF123"
    register_secrets([secret])
    line = _RedactingJsonFormatter().format(_record("token %s rejected", secret))
    assert secret not in line
    assert json.loads(line)["msg"] == f"token {REDACTED} rejected"


def test_formatter_redacts_exception_traces() -> None:
    secret = "exception-secret-QWERTY987"
    register_secrets([secret])
    try:
        raise ValueError(f"bad key {secret}")
    except ValueError:
        exc_info = sys.exc_info()
    line = _RedactingJsonFormatter().format(_record("call failed", exc_info=exc_info))
    assert secret not in line
    assert REDACTED in json.loads(line)["exc"]


def test_formatter_redacts_extra_fields() -> None:
    secret = "extra-field-secret-ZXCVB"
    register_secrets([secret])
    line = _RedactingJsonFormatter().format(_record("call", session=f"s-{secret}"))
    assert secret not in line


def test_formatter_redacts_secrets_that_json_escaping_changes() -> None:
    secret = 'quote"and\\backslash-secret'
    register_secrets([secret])
    line = _RedactingJsonFormatter().format(_record("value %s", secret))
    assert secret not in json.loads(line)["msg"]
    assert "backslash-secret" not in line


def test_formatter_redacts_multiline_pem_in_a_message() -> None:
    pem = PEM.replace("TESTline", "FMTline")
    register_secrets([pem])
    line = _RedactingJsonFormatter().format(_record("loaded key %s", pem))
    for key_line in pem.splitlines()[1:3]:
        assert key_line not in line
        assert key_line not in json.loads(line)["msg"]


def test_formatter_redacts_non_ascii_secret_with_a_quote() -> None:
    # The log line is written with ensure_ascii=False: a secret like this one appears there
    # escaped ("\"") but not \u-escaped; it must still be scrubbed (spec 10.1.4: logs too).
    secret = 'pässwörd"with-quote-XYZ'
    register_secrets([secret])
    line = _RedactingJsonFormatter().format(_record("login failed for %s", secret))
    assert secret not in json.loads(line)["msg"]
    assert "with-quote-XYZ" not in line
