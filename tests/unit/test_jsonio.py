"""Exact JSON serialization (spec 8.6: 64-bit integers and decimals keep their digits), shared/_jsonio.py."""

from __future__ import annotations

import json
from decimal import Decimal

import orjson
import pytest

from shared import _jsonio as jsonio


def parse_exact(data: bytes | str):
    """Strict parse (no NaN/Infinity) that keeps every digit: ints exact, decimals as Decimal."""

    def reject(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(data, parse_float=Decimal, parse_constant=reject)


def test_dumps_returns_compact_utf8_bytes():
    out = jsonio.dumps({"a": [1, 2], "b": "x"})
    assert isinstance(out, bytes)
    assert out == b'{"a":[1,2],"b":"x"}'


def test_dumps_keeps_non_ascii_text_as_utf8():
    out = jsonio.dumps({"city": "Málaga", "arrow": "→"})
    assert "Málaga".encode() in out
    assert parse_exact(out) == {"city": "Málaga", "arrow": "→"}


def test_dumps_text_is_the_decoded_dumps():
    value = {"k": ["ñ", 1, None, True]}
    text = jsonio.dumps_text(value)
    assert isinstance(text, str)
    assert text == jsonio.dumps(value).decode("utf-8")


@pytest.mark.parametrize("number", [2**63 - 1, -(2**63), 2**64 - 1])
def test_dumps_64_bit_integers_exact(number):
    assert jsonio.dumps(number) == str(number).encode()
    assert parse_exact(jsonio.dumps({"n": number})) == {"n": number}


@pytest.mark.parametrize("number", [2**64, 2**100 + 7, -(2**63) - 1, -(10**40) - 3])
def test_dumps_integers_beyond_64_bits_exact(number):
    """Spec 8.6 (core rule): integers larger than 64 bits are written verbatim."""
    assert jsonio.dumps(number) == str(number).encode()


def test_dumps_big_integers_nested_in_lists_dicts_and_tuples():
    big = 2**80 + 1
    value = {"rows": [{"id": big, "ok": True}, (big, -big)], "flag": False, "small": 3}
    out = jsonio.dumps(value)
    assert str(big).encode() in out
    assert parse_exact(out) == {"rows": [{"id": big, "ok": True}, [big, -big]], "flag": False, "small": 3}


def test_dumps_bools_stay_bools_next_to_big_integers():
    out = jsonio.dumps([True, False, 2**70])
    assert out == b"[true,false," + str(2**70).encode() + b"]"


@pytest.mark.parametrize(
    "digits",
    ["0.1000000000000000055511151231257827", "12345678901234567890.123456789", "-0.000000000000000000001", "1.50"],
)
def test_dumps_decimals_keep_their_digits(digits):
    """Spec 8.6 (core rule): Decimal values are written with their exact digits."""
    value = Decimal(digits)
    out = jsonio.dumps({"v": value})
    assert out == b'{"v":' + str(value).encode() + b"}"
    parsed = parse_exact(out)["v"]
    assert parsed == value
    assert parsed.as_tuple().digits == value.as_tuple().digits


def test_dumps_decimals_alongside_big_integers():
    value = [Decimal("3.14159265358979323846"), 2**90]
    out = jsonio.dumps(value)
    assert parse_exact(out) == value
    assert out == b"[3.14159265358979323846," + str(2**90).encode() + b"]"


def test_dumps_decimal_with_exponent_is_valid_json():
    out = jsonio.dumps([Decimal("1E+2"), Decimal("1.5E-7")])
    assert parse_exact(out) == [Decimal(100), Decimal("1.5E-7")]


def test_dumps_float_nan_is_null():
    assert parse_exact(jsonio.dumps([float("nan"), float("inf")])) == [None, None]


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_dumps_non_finite_decimal_is_still_valid_json(text):
    """Whatever dumps writes must be JSON (spec 8: every part is JSON); NaN/Infinity are not JSON."""
    try:
        out = jsonio.dumps({"v": Decimal(text)})
    except TypeError:
        return  # refusing the value is also acceptable
    parsed = parse_exact(out)
    assert parsed["v"] is None


def test_dumps_unsupported_type_raises_type_error():
    with pytest.raises(TypeError):
        jsonio.dumps({"v": object()})


def test_dumps_unsupported_type_next_to_big_integer_raises_type_error():
    with pytest.raises(TypeError):
        jsonio.dumps([2**70, object()])


def test_loads_parses_json_bytes_and_text():
    assert jsonio.loads(b'{"a":[1,2.5,null,true]}') == {"a": [1, 2.5, None, True]}
    assert jsonio.loads('["ñ"]') == ["ñ"]


def test_loads_round_trips_dumps_for_plain_values():
    value = {"s": "x", "i": -5, "f": 0.0421, "b": False, "n": None, "l": [1, {"z": "w"}]}
    assert jsonio.loads(jsonio.dumps(value)) == value


def test_loads_rejects_invalid_json():
    with pytest.raises(orjson.JSONDecodeError):
        jsonio.loads(b"{not json}")


def test_write_rows_writes_lines_of_exact_objects_and_returns_their_inline_size():
    import io

    names = ["n", "d"]
    rows = [[i, Decimal("0.10")] for i in range(jsonio.ROWS_PER_LINE + 3)] + [[2**70, None], [7]]
    out = io.BytesIO()
    size = jsonio.write_rows(out, names, rows)
    data = out.getvalue()
    assert data.startswith(jsonio.LINE_SEPARATOR)
    assert data.count(b"\n") == 2  # two lines: a full one, then the rest
    text = b"[" + data[len(jsonio.LINE_SEPARATOR) - 1 :] + b"]"
    expected = [{"n": i, "d": Decimal("0.10")} for i in range(jsonio.ROWS_PER_LINE + 3)]
    assert parse_exact(text) == [*expected, {"n": 2**70, "d": None}, {"n": 7}]  # a short row leaves names out
    inline = jsonio.dumps([dict(zip(names, r, strict=False)) for r in rows])
    assert size == len(inline) - 1  # what the rows take as inline JSON: one comma or bracket a row
