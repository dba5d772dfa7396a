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
