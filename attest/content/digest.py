"""The content digest's value: an LtHash<32,1024> state and a row count, added and subtracted lane by lane.

Pure Python and ``blake3`` only: a verifier sums and compares stored digests (a compaction checked from the files it
removed and added) without pyarrow. docs/content-digest.md is the specification.
"""

from __future__ import annotations

from attest.errors import InvalidArgumentError
from attest.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/record.py; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["CONTEXT", "LANES", "LANE_BITS", "SCHEME", "STATE_BYTES", "ContentDigest", "element"]

#: The scheme's name as carriers record it beside a digest (docs/content-digest.md, "Parameters").
SCHEME = "content-digest-v1/lthash32x1024/blake3"
#: BLAKE3 derive_key context: each row's element is BLAKE3.derive_key(CONTEXT, row encoding), read to STATE_BYTES.
CONTEXT = "recipe-attest 2026-12-03 content-digest v1 LtHash<32,1024> row element"
LANE_BITS = 32
LANES = 1024
STATE_BYTES = LANES * LANE_BITS // 8  # 4096
_MASK = (1 << LANE_BITS) - 1
_ZERO = bytes(STATE_BYTES)
# Lanes spread one per 64 bits in a Python integer: 2^32 additions fit before a lane could carry into the next.
_SPREAD_BYTES = 2 * STATE_BYTES
_MODULUS_SPREAD = int.from_bytes(b"".join((b"\x00\x00\x00\x00\x01\x00\x00\x00",) * LANES), "little")


def element(row_encoding: bytes) -> bytes:
    """The 4096-byte LtHash element of one row encoding (1024 little-endian 32-bit lanes)."""
    from blake3 import blake3

    return blake3(row_encoding, derive_key_context=CONTEXT).digest(length=STATE_BYTES)


def _spread(state: bytes) -> int:
    wide = bytearray(_SPREAD_BYTES)
    for i in range(4):
        wide[i::8] = state[i::4]
    return int.from_bytes(wide, "little")


def _gather(value: int) -> bytes:
    wide = (value % (1 << (8 * _SPREAD_BYTES))).to_bytes(_SPREAD_BYTES, "little")
    state = bytearray(STATE_BYTES)
    for i in range(4):
        state[i::4] = wide[i::8]
    return bytes(state)


@record(frozen=True)
class ContentDigest:
    """The content digest of a multiset of rows: ``state`` (LtHash<32,1024>, 4096 bytes) and ``rows`` (how many).

    Digests add (``d + e``: the union of two multisets) and subtract (``d - e``: the difference, meaningful when the
    rows of ``e`` are among those of ``d``); equal digests mean equal multisets of rows up to the scheme's security
    (docs/content-digest.md, "Security"). ``rows`` is a plain count, negative only for a difference that removed more
    rows than it had.
    """

    state: bytes
    rows: int

    def __post_init__(self) -> None:
        if not isinstance(self.state, bytes) or len(self.state) != STATE_BYTES:
            raise InvalidArgumentError(f"a content digest state is {STATE_BYTES} bytes")
        if not isinstance(self.rows, int) or isinstance(self.rows, bool):
            raise InvalidArgumentError("a content digest's row count is an integer")

    @classmethod
    def zero(cls) -> ContentDigest:
        """The digest of no rows: every lane 0."""
        return cls(_ZERO, 0)

    @classmethod
    def of_element(cls, element_bytes: bytes, rows: int = 1) -> ContentDigest:
        """The digest of one row from its element (``element(encoding)``)."""
        return cls(bytes(element_bytes), rows)

    @classmethod
    def total(cls, digests: Iterable[ContentDigest]) -> ContentDigest:
        """The sum of many digests in one pass (a version's total from its files' digests)."""
        acc, rows, pending = 0, 0, 0
        for d in digests:
            acc += _spread(d.state)
            rows += d.rows
            pending += 1
            if pending == 1 << 31:  # far below the 2^32 additions a spread lane holds
                acc, pending = _spread(_gather(acc)), 0
        return cls(_gather(acc), rows)

    def __add__(self, other: ContentDigest) -> ContentDigest:
        if not isinstance(other, ContentDigest):
            return NotImplemented
        return ContentDigest(_gather(_spread(self.state) + _spread(other.state)), self.rows + other.rows)

    def __sub__(self, other: ContentDigest) -> ContentDigest:
        if not isinstance(other, ContentDigest):
            return NotImplemented
        # Each lane a + 2^32 - b stays in [1, 2^33): no borrow crosses into the next lane.
        value = _spread(self.state) + _MODULUS_SPREAD - _spread(other.state)
        return ContentDigest(_gather(value), self.rows - other.rows)

    def lanes(self) -> list[int]:
        """The 1024 lanes as integers (tests and third-party checks)."""
        return [int.from_bytes(self.state[i : i + 4], "little") for i in range(0, STATE_BYTES, 4)]

    def to_bytes(self) -> bytes:
        """The state (4096 bytes) then the row count (8 bytes, big-endian two's complement): 4104 bytes."""
        return self.state + self.rows.to_bytes(8, "big", signed=True)

    @classmethod
    def from_bytes(cls, data: bytes) -> ContentDigest:
        """The digest ``to_bytes`` wrote; any other length is refused (InvalidArgumentError)."""
        if len(data) != STATE_BYTES + 8:
            raise InvalidArgumentError(f"a serialised content digest is {STATE_BYTES + 8} bytes, not {len(data)}")
        return cls(bytes(data[:STATE_BYTES]), int.from_bytes(data[STATE_BYTES:], "big", signed=True))

    def short_id(self) -> str:
        """64 hex digits for display: BLAKE3 of the state (the row count is shown beside it, not in it)."""
        from blake3 import blake3

        return str(blake3(self.state).hexdigest())
