"""attest.jsonscan: the head start's JSON reader gives json.loads's value for every JSON text, and refuses the rest."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest.fast import jsonscan

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=30,
)


@given(_values, st.sampled_from(["", " ", "\n\t ", "\r\n"]))
@settings(max_examples=300, deadline=None)
def test_gives_json_loads_value(value: Any, space: str) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False), json.dumps(value, indent=2)):
        data = f"{space}{text}{space}".encode()
        assert jsonscan.loads(data) == json.loads(data)


@pytest.mark.parametrize("data", [b"", b"  ", b"{", b'{"a": 1} x', b'{"a": NaN}', b"[Infinity]", b'"\x01"',
                                  b"\xff", b'{"a": 1}{"b": 2}', b"01"])
def test_refuses_what_is_not_one_json_text(data: bytes) -> None:
    with pytest.raises(ValueError):
        jsonscan.loads(data)


def test_deep_nesting_raises_and_never_crashes() -> None:
    with pytest.raises((ValueError, RecursionError)):
        jsonscan.loads(b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize("module", ["attest.fast.jsonscan", "attest.verify.artifacts", "carriers.delta.prefetch"])
def test_the_head_starts_import_neither_json_nor_re(module: str) -> None:
    """The point of the module: the head starts begin hashing before json and re are imported."""
    code = (f"import sys, {module}, attest.fast.jsonscan as j; j.loads(b'{{\"a\": [1, 2.5]}}'); "
            "print('json' in sys.modules, 're' in sys.modules)")
    out = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path[:0] = {sys.path!r}; {code}"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"], out  # -S: no site, whose .pth files may import re themselves


@given(_values)
@settings(max_examples=300, deadline=None)
def test_loads_unique_gives_json_loads_value_when_no_key_repeats(value: Any) -> None:
    text = json.dumps(value)  # a dict never repeats a key, so neither does its JSON
    assert jsonscan.loads_unique(text) == json.loads(text)


@pytest.mark.parametrize(("text", "key"), [
    ('{"a": 1, "a": 2}', "a"),
    ('{"a": 1, "b": {"c": 1, "c": 1}}', "c"),  # the same value twice is refused too: readers must not have to agree
    ('[{"x": []}, {"y": 1, "y": [1]}]', "y"),
    ('{"\\u0061": 1, "a": 2}', "a"),  # one key under two spellings
])
def test_loads_unique_refuses_a_key_named_twice(text: str, key: str) -> None:
    with pytest.raises(jsonscan.DuplicateKeyError) as caught:
        jsonscan.loads_unique(text)
    assert caught.value.key == key


@pytest.mark.parametrize("text", ['{"a": NaN}', "[-Infinity]", "{", '{"a": 1} x'])
def test_loads_unique_refuses_what_is_not_json(text: str) -> None:
    with pytest.raises(ValueError):
        jsonscan.loads_unique(text)
