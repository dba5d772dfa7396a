"""The content digest's value: an LtHash<32,1024> state and a row count, added and subtracted lane by lane.

Pure Python and ``blake3`` only: a verifier sums and compares stored digests (a compaction checked from the files it
removed and added) without pyarrow. docs/content-digest.md is the specification.
"""

from __future__ import annotations

from attest.errors import InvalidArgumentError
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
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
_ZERO = bytes(STATE_BYTES)
# The state read as one little-endian integer, split into its even and its odd lanes: each kept lane has 32 zero bits
# above it, so 2^32 additions fit before a lane could carry into the next one kept. A few big-integer operations per
# digest instead of 1024 lane additions in Python.
_EVEN = int.from_bytes(b"\xff\xff\xff\xff\x00\x00\x00\x00" * (LANES // 2), "little")
_ODD = _EVEN << LANE_BITS
_Q_EVEN = int.from_bytes(b"\x00\x00\x00\x00\x01\x00\x00\x00" * (LANES // 2), "little")
_Q_ODD = _Q_EVEN << LANE_BITS
_FLUSH = 1 << 31  # additions between two reductions, far below the 2^32 a lane's headroom holds


def element(row_encoding: bytes) -> bytes:
    """The 4096-byte LtHash element of one row encoding (1024 little-endian 32-bit lanes)."""
    from blake3 import blake3

    return blake3(row_encoding, derive_key_context=CONTEXT).digest(length=STATE_BYTES)


def _join(even: int, odd: int) -> bytes:
    return ((even & _EVEN) | ((odd & _ODD) % (1 << (8 * STATE_BYTES)))).to_bytes(STATE_BYTES, "little")


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
        even, odd, rows, pending = 0, 0, 0, 0
        for d in digests:
            value = int.from_bytes(d.state, "little")
            even += value & _EVEN
            odd += value & _ODD
            rows += d.rows
            pending += 1
            if pending == _FLUSH:
                even, odd, pending = even & _EVEN, odd & _ODD, 0
        return cls(_join(even, odd), rows)

    def __add__(self, other: ContentDigest) -> ContentDigest:
        if not isinstance(other, ContentDigest):
            return NotImplemented
        a, b = int.from_bytes(self.state, "little"), int.from_bytes(other.state, "little")
        return ContentDigest(_join((a & _EVEN) + (b & _EVEN), (a & _ODD) + (b & _ODD)), self.rows + other.rows)

    def __sub__(self, other: ContentDigest) -> ContentDigest:
        if not isinstance(other, ContentDigest):
            return NotImplemented
        # Each lane a + 2^32 - b stays in [1, 2^33): no borrow crosses into the next lane kept.
        a, b = int.from_bytes(self.state, "little"), int.from_bytes(other.state, "little")
        return ContentDigest(_join((a & _EVEN) + _Q_EVEN - (b & _EVEN), (a & _ODD) + _Q_ODD - (b & _ODD)),
                             self.rows - other.rows)

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
