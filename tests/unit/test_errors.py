"""The one exception hierarchy and the codes of spec 12.1."""

from __future__ import annotations

import pytest

from shared import errors

# Spec 12.1, table "Códigos ACP".
SPEC_CODES = {
    -32010: "ACP_COST_LIMIT_EXCEEDED",
    -32011: "ACP_CREDENTIALS_MISSING",
    -32012: "ACP_CREDENTIALS_INVALID",
    -32013: "ACP_RESOURCE_REQUIRED",
    -32014: "ACP_RESOURCE_NOT_FOUND",
    -32015: "ACP_UNKNOWN_BLOCK",
    -32016: "ACP_INVALID_LIMIT",
    -32017: "ACP_INVALID_ARGUMENTS",
    -32018: "ACP_UPSTREAM_ERROR",
    -32019: "ACP_READ_ONLY_VIOLATION",
    -32020: "ACP_HOST_TABLES_UNSUPPORTED",
    -32021: "ACP_TABLE_NOT_FOUND",
    -32022: "ACP_TABLE_TRUNCATED",
}


def test_every_spec_code_has_exactly_one_class() -> None:
    assert {code: cls.name for code, cls in errors.ERRORS_BY_CODE.items()} == SPEC_CODES
    for cls in errors.ERRORS_BY_CODE.values():
        assert issubclass(cls, errors.AcpError)


@pytest.mark.parametrize("code", sorted(SPEC_CODES))
def test_error_from_code_rebuilds_the_typed_error(code: int) -> None:
    error = errors.error_from_code(code, "Pass another id.", {"ref": "x"})
    assert (error.code, error.name, error.message, error.data) == (
        code,
        SPEC_CODES[code],
        "Pass another id.",
        {"ref": "x"},
    )


def test_unknown_codes_become_upstream_errors_and_data_must_be_an_object() -> None:
    error = errors.error_from_code(-32601, "Method not found", data="acp/read_table")
    assert isinstance(error, errors.UpstreamError)
    assert error.data is None


def test_payload_has_data_only_when_there_is_some() -> None:
    assert errors.InvalidArguments("Fix it.").payload() == {
        "code": -32017,
        "name": "ACP_INVALID_ARGUMENTS",
        "message": "Fix it.",
    }
    assert errors.CostLimitExceeded("Narrow it.", {"estimate_usd": 3.8}).payload()["data"] == {"estimate_usd": 3.8}
