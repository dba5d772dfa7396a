"""Hash scheme v1: canonical JSON is deterministic, key-order independent, and matches documented identities."""

from __future__ import annotations

import json
import random
from typing import Any

import blake3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest.canonical import CanonicalizationError, canonical_bytes, digest

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


def _shuffle_keys(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffle_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffle_keys(v, rng) for v in value]
    return value


@given(json_values, st.integers(min_value=0, max_value=2**32))
@settings(max_examples=300)
def test_key_order_never_changes_bytes(value: Any, seed: int) -> None:
    assert canonical_bytes(_shuffle_keys(value, random.Random(seed))) == canonical_bytes(value)


@given(json_values)
@settings(max_examples=300)
def test_canonical_bytes_round_trip_and_are_a_fixed_point(value: Any) -> None:
    data = canonical_bytes(value)
    assert json.loads(data.decode("utf-8")) == value
    assert canonical_bytes(json.loads(data)) == data
    assert digest(value) == blake3.blake3(data).hexdigest()


def test_documented_examples() -> None:
    # These exact bytes are in docs/hash-scheme-v1.md; another implementation can check itself against them.
    assert canonical_bytes({}) == b"{}"
    assert digest({}) == blake3.blake3(b"{}").hexdigest()
    assert canonical_bytes({"b": 1, "a": [True, None, "x"]}) == b'{"a":[true,null,"x"],"b":1}'
    assert canonical_bytes({"é": "ü", "z": {"y": 1, "x": 2}}) == '{"z":{"x":2,"y":1},"é":"ü"}'.encode()
    assert canonical_bytes("line\nbreak\u0001") == b'"line\\nbreak\\u0001"'


def test_keys_sort_by_code_point_not_utf16() -> None:
    # U+FF61 sorts before U+1F600 by code point, but after it in UTF-16 code units.
    assert canonical_bytes({"\U0001f600": 1, "\uff61": 2}) == '{"\uff61":2,"\U0001f600":1}'.encode()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, {"a": {1, 2}}, b"bytes", "\ud800"])
def test_refuses_values_without_a_json_form(bad: Any) -> None:
    with pytest.raises(CanonicalizationError):
        canonical_bytes(bad)


def test_digest_is_lowercase_64_hex() -> None:
    value = digest({"a": 1})
    assert len(value) == 64 and value == value.lower() and int(value, 16) >= 0


# ---- numbers, as the reference writes them (docs/hash-scheme-v1.md, "Numbers"; tests/conformance runs the binary) --
# (JSON text in, canonical bytes out): each row is in the docs table.
NUMBER_VECTORS = [
    ("[0,-0,1,-1]", "[0,-0.0,1,-1]"),
    ("[1.0,1e2,100.0,12.5e1]", "[1.0,100.0,100.0,125.0]"),
    ("[1e-7,1E+30,1e+16,1e15]", "[1e-7,1e+30,1e+16,1000000000000000.0]"),
    ("[0.00001,0.000001,2.5e-5]", "[0.00001,1e-6,0.000025]"),
    ("[18446744073709551615,18446744073709551616]", "[18446744073709551615,1.8446744073709552e+19]"),
    ("[-9223372036854775808,-9223372036854775809]", "[-9223372036854775808,-9.223372036854776e+18]"),
    ("[12345678901234567890123]", "[1.2345678901234568e+22]"),
    ("[5e-324,1.7976931348623157e308,1e-400,-1e-400]", "[5e-324,1.7976931348623157e+308,0.0,-0.0]"),
    ("[-1.5e-300,10928588.983213553]", "[-1.4999999999999998e-300,10928588.983213551]"),
]


@pytest.mark.parametrize(("text", "canonical"), NUMBER_VECTORS)
def test_number_vectors(text: str, canonical: str) -> None:
    from attest.model import load_json_document

    assert canonical_bytes(load_json_document(text)) == canonical.encode()


def test_number_vector_identities_in_the_docs() -> None:
    from attest.model import load_json_document

    assert digest(load_json_document("[-0]")) == "999679f282a8c9d5e7e654e764f0042a50ddcc21d4788e86127f6251ddae0685"
    assert digest(load_json_document("[1e-7,1e30]")) == \
        "38a173ec310480fff0825dd6a6f92c348e5bea438695488f317ee59af5c9ad32"
    assert digest(load_json_document("[18446744073709551616]")) == \
        "c9faf8c53ce27378bd030a30538e793ccbeb02b646b5da65a2ede99e576768c1"


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=2000)
def test_an_f64_is_written_in_its_shortest_round_trip_form(value: float) -> None:
    import math
    import re
    from decimal import Decimal

    from attest.numbers import format_f64

    text = format_f64(value)
    assert float(text) == value and math.copysign(1, float(text)) == math.copysign(1, value)
    assert re.fullmatch(r"-?(\d+\.\d+|\d(\.\d+)?e[+-][1-9]\d{0,2})", text), text
    # As few significant digits as Python's shortest repr (tests/conformance checks the digits against zmij).
    assert Decimal(text).normalize().as_tuple().digits == Decimal(repr(value)).normalize().as_tuple().digits
    # Plain notation exactly for decimal exponents -5..15 of the first digit, exponent form outside.
    exponent = Decimal(text).adjusted() if value else 0
    assert ("e" in text) == (not -5 <= exponent <= 15)


@given(st.integers(min_value=2**64, max_value=2**1100) | st.integers(min_value=-(2**1100), max_value=-(2**63) - 1))
@settings(max_examples=300)
def test_an_int_beyond_64_bits_is_the_f64_the_reference_reads_from_its_text(value: int) -> None:
    from attest.errors import ManifestMalformedError
    from attest.model import load_json_document

    try:
        expected = canonical_bytes(load_json_document(f"[{value}]"))
    except ManifestMalformedError:
        with pytest.raises(CanonicalizationError, match="out of range"):
            canonical_bytes([value])
        return
    assert canonical_bytes([value]) == expected
    assert b"e+" in expected or b"." in expected


def test_in_range_ints_and_floats_keep_their_kind() -> None:
    assert canonical_bytes([2**64 - 1, -(2**63), 1.0, -0.0, 0.0]) == b"[18446744073709551615,-9223372036854775808," \
        b"1.0,-0.0,0.0]"
    assert canonical_bytes({"b": [0.1], "a": 1}) == b'{"a":1,"b":[0.1]}'


def test_canonical_depth_limit() -> None:
    deep: Any = []
    for _ in range(126):
        deep = [deep]
    assert canonical_bytes(deep) == b"[" * 127 + b"]" * 127
    with pytest.raises(CanonicalizationError, match="deeper than 127"):
        canonical_bytes([deep])
    hostile: Any = {}
    for _ in range(100_000):
        hostile = {"a": hostile}
    with pytest.raises(CanonicalizationError, match="deeper than 127"):
        canonical_bytes(hostile)


class _Text(str):
    pass


_wide_leaves = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats()
                | st.text(max_size=5) | st.builds(_Text, st.text(max_size=3)) | st.just(b"x") | st.just({1, 2}))
_wide_values = st.recursive(
    _wide_leaves,
    lambda children: (st.lists(children, max_size=4) | st.lists(children, max_size=3).map(tuple)
                      | st.dictionaries(st.text(max_size=4) | st.integers(0, 3), children, max_size=4)),
    max_leaves=25,
)


@given(_wide_values)
@settings(max_examples=500, deadline=None)
def test_the_fast_walk_answers_as_the_walk_that_names_places(value: Any) -> None:
    """canonical_bytes decides with _scan and asks _check only for messages: the two must agree on every value."""
    from attest.canonical import _check, _NotCanonical, _scan

    try:
        expected: Any = _check(value, "$", 0)
    except CanonicalizationError:
        expected = CanonicalizationError
    try:
        got: Any = _scan(value, 0)
    except (_NotCanonical, CanonicalizationError):
        got = CanonicalizationError
    assert got == expected


HEX_64 = "0123456789abcdef" * 4


@pytest.mark.parametrize(("values", "expected"), [
    ([], True),
    ([HEX_64] * 3, True),
    ([HEX_64, HEX_64[:63], HEX_64 + "0"], False),  # 63 + 65 characters: joined, still runs of 64 hex digits
    ([HEX_64, HEX_64.upper()], False),
    ([HEX_64, "\u0660" * 64], False),  # digits, not hex digits
    ([HEX_64, "g" * 64], False),
    ([HEX_64, HEX_64[:32] + "\n" + HEX_64[:31]], False),
    ([HEX_64, 7], False),
    ([HEX_64, None], False),
    ([HEX_64, HEX_64.encode()], False),
])
def test_all_hex_digests(values: list[Any], expected: bool) -> None:
    from attest.canonical import all_hex_digests

    assert all_hex_digests(values) is expected
    assert all_hex_digests(values[::-1]) is expected
