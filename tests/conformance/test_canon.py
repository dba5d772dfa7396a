"""(d) `attest digest` equals rocky-canon on generated JSON text: nesting, unicode and escapes, every kind of
number (huge integers, -0, exponents, long fractions, floats near the f64 limits), whitespace.

Documents are generated as *text* (the reference hashes what serde_json reads from text), batched into one
array per example so one process run checks many documents. Either both sides accept a batch with the same
canonical bytes and identity, or both refuse it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attest.canonical import canonical_bytes, digest
from attest.errors import ManifestMalformedError
from attest.model import load_json_document
from tests.conformance.reference import rocky_canon, rocky_canon_text
from tests.conftest import run_cli

pytestmark = pytest.mark.usefixtures("reference_built")

CONFORMANCE = settings(max_examples=150, deadline=None, derandomize=False,
                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                              HealthCheck.function_scoped_fixture])

# ---- number literals ------------------------------------------------------------------------------------------------
LIMITS = [
    "0", "-0", "0.0", "-0.0", "1", "-1", "1.0", "0e0", "0E-0", "-0e+5", "1e0",
    "9007199254740992", "9007199254740993", "-9007199254740993",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "-18446744073709551615", "-18446744073709551616",
    "1844674407370955161", "18446744073709551610.5", "18446744073709551616.0", "184467440737095516159",
    "1.7976931348623157e308", "1.7976931348623158e308", "-1.7976931348623157e308", "179769313486231570" + "0" * 291,
    "2.2250738585072014e-308", "2.2250738585072011e-308", "4.9e-324", "5e-324", "2.4703282292062328e-324",
    "2.4703282292062327e-324", "1e-324", "1e-400", "-1e-400", "0e99999999999", "1e-99999999999",
    "1e-7", "1E+30", "1e+16", "1e15", "1e16", "1e22", "1e23", "8.98846567431158e307", "0.1", "0.2", "0.3",
    "0.30000000000000004", "100", "1e2", "12.5e1", "0.00001", "0.000001", "123456789.12345678",
    "10928588.983213553", "-1.5e-300", "3.141592653589793238462643383279", "1" + "0" * 40 + ".5e-41",
    "0." + "0" * 2000 + "1e2000", "1e" + "0" * 60 + "5", "-0.0000000e0000000001", "0." + "0" * 400 + "1",
    "1" + "0" * 2000 + "e-2000", "9" * 25 + "." + "9" * 25, "18446744073709551615.5", "1844674407370955161.5e1",
]
OUT_OF_RANGE = ["1e309", "-1e309", "1.7976931348623159e308", "1e400", "1" + "0" * 400, "-1" + "0" * 400,
                "1e2147483648", "1e99999999999", "179769313486231580" + "0" * 291]

digits = st.text(alphabet="0123456789", min_size=1, max_size=30)


@st.composite
def decimal_literal(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "-"]))
    integer = draw(st.sampled_from(["0"]) | digits.map(lambda d: "1" + d if d.startswith("0") else d))
    fraction = draw(st.sampled_from([""]) | digits.map(lambda d: "." + d))
    exponent = ""
    if draw(st.booleans()):
        exponent = (draw(st.sampled_from(["e", "E"])) + draw(st.sampled_from(["", "+", "-"]))
                    + str(draw(st.integers(0, 340) | st.integers(0, 2**40))))
    return sign + integer + fraction + exponent


number_literal = st.one_of(
    st.sampled_from(LIMITS),
    st.integers(-(2**64), 2**64).map(str),
    st.integers(-(10**400), 10**400).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:.25e}"),
    decimal_literal(),
)

# ---- strings, written with every escape form ---------------------------------------------------------------------
SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@st.composite
def string_literal(draw: st.DrawFn, value: str) -> str:
    out = ['"']
    for char in value:
        code = ord(char)
        style = draw(st.integers(0, 3))
        if char in SHORT and (style < 2 or code < 0x20 or char in '"\\'):
            out.append(SHORT[char] if char != "/" or style == 0 else "/")
        elif code < 0x20 or style == 3:
            if code > 0xFFFF:  # a surrogate pair, escaped
                high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
                hexes = f"\\u{high:04x}\\u{low:04x}"
            else:
                hexes = f"\\u{code:04x}"
            out.append(hexes.upper().replace("\\U", "\\u") if draw(st.booleans()) else hexes)
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


texts = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12) | st.sampled_from(
    ["", "\u2028\u2029\u0085", "\x7f\x00\x1f", "\ufeff\uffff\U0010ffff", "\U0001f600\uff61", "é", "e\u0301"])
whitespace = st.text(alphabet=" \t\n\r", max_size=2)


@st.composite
def json_text(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.integers(0, 9)) if depth < 6 else draw(st.integers(0, 5))
    if kind <= 2:
        return draw(number_literal)
    if kind == 3:
        return draw(st.sampled_from(["true", "false", "null"]))
    if kind <= 5:
        return draw(string_literal(draw(texts)))
    ws = draw(whitespace)
    if kind <= 7:
        items = draw(st.lists(json_text(depth + 1), max_size=4))
        return "[" + ws + ("," + ws).join(items) + ws + "]"
    keys = draw(st.lists(texts, max_size=4, unique=True))
    members = [draw(string_literal(k)) + ws + ":" + ws + draw(json_text(depth + 1)) for k in keys]
    return "{" + ws + ("," + ws).join(members) + ws + "}"


def ours(text: str) -> tuple[bytes, str] | None:
    try:
        document = load_json_document(text)
    except ManifestMalformedError:
        return None
    return canonical_bytes(document), digest(document)


def agree(text: str) -> None:
    mine = ours(text)
    code, canonical, identity = rocky_canon_text(text)
    if mine is None:
        assert code == 2, f"we refuse, the reference accepts: {text[:300]!r}"
        return
    assert code == 0, f"the reference refuses, we accept: {text[:300]!r}"
    assert mine == (canonical, identity), f"{text[:300]!r}\nours   {mine[0][:300]!r}\ntheirs {canonical!r}"


@given(st.lists(json_text(), min_size=1, max_size=25))
@CONFORMANCE
def test_digest_equals_rocky_canon_on_generated_documents(documents: list[str]) -> None:
    agree("[" + ",".join(documents) + "]")


@given(st.lists(number_literal, min_size=1, max_size=200))
@CONFORMANCE
def test_every_kind_of_number(literals: list[str]) -> None:
    agree("[" + ",".join(literals) + "]")


@pytest.mark.parametrize("literal", LIMITS + OUT_OF_RANGE)
def test_numbers_near_the_limits(literal: str) -> None:
    agree(f"[{literal}]")
    agree(f'{{"n": {literal}}}')


@pytest.mark.parametrize("depth", [1, 126, 127, 128, 129, 100_000])
def test_nesting_accepted_and_refused_alike(depth: int) -> None:
    agree("[" * depth + "]" * depth)
    agree('{"a":' * depth + "0" + "}" * depth)


@pytest.mark.parametrize("text", ['"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud83d\\ude00"', '"\\uDBFF\\uDFFF"',
                                  '{"\\ud800": 1}', '"\\\\ud800"', '"a\\/b"', "\ufeff{}", "{} ", " [1] \n", "[1,]",
                                  "[01]", "[1.]", "[.5]", "[+1]", "[1e]", "[-]", '{"a" 1}', "", "nul", "[NaN]",
                                  '"\x01"', '"\x7f"'])
def test_edge_texts_accepted_and_refused_alike(text: str) -> None:
    agree(text)


def test_duplicate_keys_are_the_one_deliberate_difference() -> None:
    # serde_json keeps the last value; we refuse the document (two readers could see two documents).
    assert rocky_canon_text('{"a":1,"a":2}')[1] == b'{"a":2}'
    assert ours('{"a":1,"a":2}') is None


@given(st.lists(json_text(), min_size=20, max_size=40))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_the_attest_digest_command_equals_rocky_canon(documents: list[str]) -> None:
    text = "[" + ",".join(documents) + "]"
    code, _, identity = rocky_canon_text(text)
    result = run_cli("digest", "-", stdin=text.encode("utf-8"))
    assert result.returncode == (0 if code == 0 else 2)
    if code == 0:
        assert result.stdout.strip() == identity


def test_rocky_canon_helper_hashes_values() -> None:
    value: Any = {"b": [1, "\u00e9", None], "a": {"y": True}}
    assert rocky_canon(value) == digest(value)
    assert rocky_canon(json.dumps(value)) == digest(value)
