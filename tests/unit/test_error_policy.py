"""Error tables: how a row matches a failure, how its message is filled, and that the first match wins."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from shared import CredentialsInvalid, InvalidArguments, ReadOnlyViolation, UpstreamError
from shared.error_policy import Failure, Rule, first_match, is_instance
from shared.errors import timed_out


def _failure(exc: BaseException | None = None, message: str = "boom", **kwargs: object) -> Failure:
    return Failure(exc or ValueError(message), message, **kwargs)


def test_a_row_without_conditions_matches_everything_and_fills_its_template() -> None:
    error = first_match([Rule(UpstreamError, "It failed: {message}. Try again.")], _failure(message="disk full"))
    assert isinstance(error, UpstreamError)
    assert error.message == "It failed: disk full. Try again."
    assert error.data is None


def test_the_first_matching_row_wins() -> None:
    rules = [
        Rule(InvalidArguments, "first", codes=(1064,)),
        Rule(ReadOnlyViolation, "second", codes=(1064,)),
        Rule(UpstreamError, "fallback"),
    ]
    assert first_match(rules, _failure(code=1064)).message == "first"
    assert first_match(rules, _failure(code=1065)).message == "fallback"


def test_no_matching_row_gives_none() -> None:
    assert first_match([Rule(UpstreamError, "x", codes=(500,))], _failure(code=404)) is None
    assert first_match([], _failure()) is None


def test_each_condition_holds_when_any_of_its_values_does_and_all_conditions_must_hold() -> None:
    rule = Rule(InvalidArguments, "x", classes=(KeyError, ValueError), codes=("42P01", "42703"))
    assert rule.matches(_failure(ValueError(), code="42703"))
    assert rule.matches(_failure(KeyError(), code="42P01"))
    assert not rule.matches(_failure(ValueError(), code="25006"))  # right class, wrong code
    assert not rule.matches(_failure(TypeError(), code="42P01"))  # right code, wrong class
    assert not rule.matches(_failure(ValueError()))  # no code at all


def test_codes_compare_by_value_and_type() -> None:
    rule = Rule(UpstreamError, "x", codes=(403,))
    assert rule.matches(_failure(code=403))
    assert not rule.matches(_failure(code="403"))  # a SQLSTATE-like string is not an HTTP status


def test_reasons_match_when_the_failure_gave_any_of_them() -> None:
    rule = Rule(UpstreamError, "x", reasons=("rateLimitExceeded", "RESOURCE_EXHAUSTED"))
    assert rule.matches(_failure(reasons=frozenset({"PERMISSION_DENIED", "rateLimitExceeded"})))
    assert not rule.matches(_failure(reasons=frozenset({"PERMISSION_DENIED"})))
    assert not rule.matches(_failure())


def test_contains_compares_without_case() -> None:
    rule = Rule(ReadOnlyViolation, "x", contains=("read-only mode", "readonly"))
    assert rule.matches(_failure(message="Cannot execute statement in READ-ONLY MODE!"))
    assert rule.matches(_failure(message="attempt to write a readonly database"))
    assert not rule.matches(_failure(message="syntax error"))


def test_when_sees_the_failure() -> None:
    rule = Rule(InvalidArguments, "x", when=lambda f: str(f.code).startswith(("42", "22")))
    assert rule.matches(_failure(code="42601")) and rule.matches(_failure(code="22012"))
    assert not rule.matches(_failure(code="57014"))


def test_classes_by_name_read_the_exception_hierarchy_and_import_nothing() -> None:
    try:
        json.loads("{")
    except json.JSONDecodeError as exc:
        decode_error = exc
    assert is_instance(decode_error, "json.decoder.JSONDecodeError")
    assert is_instance(decode_error, "builtins.ValueError")  # a base class, by name
    assert not is_instance(decode_error, "sqlite3.OperationalError")
    assert is_instance(sqlite3.OperationalError("x"), sqlite3.Error)
    assert not is_instance(ValueError(), "acp_never_imported_library.errors.ApiError")
    assert "acp_never_imported_library" not in sys.modules


def test_the_template_takes_fields_and_format_specifications() -> None:
    rule = Rule(UpstreamError, "{service} failed ({first:.5}): {message}. Try again.")
    failure = _failure(message="long text", fields={"service": "DuckDB", "first": "abcdefghij"})
    assert rule.build(failure).message == "DuckDB failed (abcde): long text. Try again."


def test_braces_in_the_source_text_stay_text() -> None:
    error = Rule(InvalidArguments, "Refused: {message}.").build(_failure(message="no column {service}"))
    assert error.message == "Refused: no column {service}."


def test_data_copies_named_fields() -> None:
    rule = Rule(InvalidArguments, "x", data=("reason",))
    assert rule.build(_failure(fields={"reason": "bytesBilledLimitExceeded"})).data == {
        "reason": "bytesBilledLimitExceeded"
    }


def test_a_template_naming_an_unknown_field_is_a_programming_error() -> None:
    with pytest.raises(KeyError):
        Rule(UpstreamError, "{nope}").build(_failure())


def test_fixed_rows_answer_with_a_ready_made_error_word_for_word() -> None:
    timeout = timed_out("statement_timeout_s")
    rule = Rule.fixed(timeout, codes=("57014",), contains=("statement timeout",))
    error = first_match([rule], _failure(message="canceling statement due to statement timeout", code="57014"))
    assert type(error) is UpstreamError and error.message == timeout.message
    assert first_match([rule], _failure(message="canceling statement due to user request", code="57014")) is None
    braces = Rule.fixed(CredentialsInvalid("Set {type} to oauth."))
    assert braces.build(_failure()).message == "Set {type} to oauth."
