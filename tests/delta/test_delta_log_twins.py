"""carriers.delta.log: a checkpoint's JSON statistics and partition values against their typed twins. Every rendering
Spark writes must agree with its typed value (no false alarm); a changed value must not."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

import pytest

from carriers.delta.log import _differs, _partition_differs

UTC = datetime.UTC


def _json(value: Any) -> Any:
    """A JSON value as the replay parses statistics (decimals kept exact)."""
    return json.loads(json.dumps(value), parse_float=Decimal) if not isinstance(value, Decimal) else value


@pytest.mark.parametrize(("text", "typed"), [
    (3, 3), (10_000_000_000, 10_000_000_000), (1.5, 1.5), ("1.1", None),
    (Decimal("1.1"), 1.100000023841858),  # a FLOAT column: the typed value is the decimal rounded to 32 bits
    (Decimal("0.7333333333333333"), 0.7333333333333333), (Decimal("123.456"), Decimal("123.456")),
    ("café", "café"), (True, True), ("2026-01-03", datetime.date(2026, 1, 3)),
    ("2026-01-01T10:00:00.123Z", datetime.datetime(2026, 1, 1, 10, 0, 0, 123000, tzinfo=UTC)),
    ("2026-01-01T11:00:00.123+01:00", datetime.datetime(2026, 1, 1, 10, 0, 0, 123000, tzinfo=UTC)),
    ("2026-01-01T10:00:00.500", datetime.datetime(2026, 1, 1, 10, 0, 0, 500000)),
    ({"x": 1, "y": "z"}, {"x": 1, "y": "z"}), (None, None), ("NaN", float("nan")),
])
def test_renderings_of_one_value_agree(text: Any, typed: Any) -> None:
    if typed is None and text is not None:
        assert _differs(_json(text), typed)  # a value on one side only is a difference
    else:
        assert not _differs(_json(text), typed)


@pytest.mark.parametrize(("text", "typed"), [
    (-1, 3), (3, None), (None, 3), (Decimal("1.2"), 1.100000023841858), (Decimal("123.457"), Decimal("123.456")),
    ("cafe", "café"), (False, True), (1, True), ("2026-01-04", datetime.date(2026, 1, 3)),
    ("2026-01-01T10:00:00.124Z", datetime.datetime(2026, 1, 1, 10, 0, 0, 123000, tzinfo=UTC)),
    ("not a time", datetime.datetime(2026, 1, 1, tzinfo=UTC)), ({"x": 2}, {"x": 1}), ("3", 3),
])
def test_a_changed_rendering_differs(text: Any, typed: Any) -> None:
    assert _differs(_json(text), typed)


@pytest.mark.parametrize(("text", "typed", "differs"), [
    ("1", 1, False), ("2", 1, True), ("a b", "a b", False), (None, None, False), (None, "x", True),
    ("true", True, False), ("false", True, True), ("2026-02-01", datetime.date(2026, 2, 1), False),
    ("1.50", Decimal("1.5"), False), ("x", Decimal("1.5"), True),
])
def test_partition_values_against_their_typed_twins(text: Any, typed: Any, differs: bool) -> None:
    assert _partition_differs(text, typed) is differs
