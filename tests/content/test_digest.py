"""ContentDigest arithmetic against lane-by-lane integers, serialisation, and its refusals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest.content import STATE_BYTES, ContentDigest, element
from attest.errors import InvalidArgumentError

# States from a seed (a 4 KiB binary strategy is too large an example), plus all-ones and all-zeros lanes.
_state = st.one_of(st.integers(0, 2**64).map(lambda seed: element(seed.to_bytes(9, "big"))),
                   st.just(b"\xff" * STATE_BYTES), st.just(bytes(STATE_BYTES)))
_digest = st.builds(ContentDigest, _state, st.integers(-2**40, 2**40))


def _lanes(state: bytes) -> list[int]:
    return [int.from_bytes(state[i:i + 4], "little") for i in range(0, STATE_BYTES, 4)]


@settings(max_examples=60, deadline=None)
@given(_digest, _digest, st.lists(_digest, max_size=5))
def test_arithmetic_is_lane_wise_mod_2_32(a: ContentDigest, b: ContentDigest, more: list[ContentDigest]) -> None:
    assert (a + b).lanes() == [(x + y) % 2**32 for x, y in zip(_lanes(a.state), _lanes(b.state), strict=True)]
    assert (a - b).lanes() == [(x - y) % 2**32 for x, y in zip(_lanes(a.state), _lanes(b.state), strict=True)]
    assert (a + b).rows == a.rows + b.rows and (a - b).rows == a.rows - b.rows
    assert a - b + b == a and a + b == b + a and a - a == ContentDigest.zero()
    total = ContentDigest.total([a, b, *more])
    assert total.lanes() == [sum(lane) % 2**32 for lane in zip(*(_lanes(d.state) for d in [a, b, *more]),
                                                                  strict=True)]
    assert ContentDigest.from_bytes(a.to_bytes()) == a and len(a.to_bytes()) == STATE_BYTES + 8


def test_lanes_that_wrap() -> None:
    full = ContentDigest(b"\xff" * STATE_BYTES, 1)
    one = ContentDigest(b"\x01\x00\x00\x00" * (STATE_BYTES // 4), 1)
    assert (full + one).state == bytes(STATE_BYTES)
    assert (ContentDigest.zero() - one).state == b"\xff" * STATE_BYTES
    assert ContentDigest.total([full] * 3 + [one] * 3).state == bytes(STATE_BYTES)


def test_zero_short_id_and_an_element() -> None:
    import blake3

    assert ContentDigest.zero().short_id() == blake3.blake3(bytes(STATE_BYTES)).hexdigest()
    e = element(b"row")
    assert len(e) == STATE_BYTES and ContentDigest.of_element(e).rows == 1
    assert len(ContentDigest.of_element(e).short_id()) == 64


@pytest.mark.parametrize("data", [b"", bytes(STATE_BYTES), bytes(STATE_BYTES + 9)])
def test_from_bytes_refuses_other_lengths(data: bytes) -> None:
    with pytest.raises(InvalidArgumentError, match="4104 bytes"):
        ContentDigest.from_bytes(data)


def test_a_state_of_another_size_is_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        ContentDigest(bytes(2048), 0)
    with pytest.raises(InvalidArgumentError):
        ContentDigest(bytes(STATE_BYTES), True)
    assert ContentDigest.zero().__add__(3) is NotImplemented  # type: ignore[operator]
