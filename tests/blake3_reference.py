"""BLAKE3 in pure Python: a direct port of the reference implementation in the BLAKE3 specification repository.

An implementation independent of the ``blake3`` package (bindings to the Rust crate) that attest.hashing uses: no
SIMD, no threads, no memory maps — only the spec's compression function, chunk chaining and Merkle tree. Slow
(well under 1 MB/s), so tests feed it files of a few hundred KiB. Regular hashing only (no keyed / derive-key
modes), which is all hash scheme v1 uses.
"""

from __future__ import annotations

OUT_LEN = 32
BLOCK_LEN = 64
CHUNK_LEN = 1024
CHUNK_START = 1 << 0
CHUNK_END = 1 << 1
PARENT = 1 << 2
ROOT = 1 << 3
_MASK = 0xFFFFFFFF
IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
MSG_PERMUTATION = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)


def _rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & _MASK


def _g(s: list[int], a: int, b: int, c: int, d: int, mx: int, my: int) -> None:
    s[a] = (s[a] + s[b] + mx) & _MASK
    s[d] = _rotr(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _MASK
    s[b] = _rotr(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b] + my) & _MASK
    s[d] = _rotr(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _MASK
    s[b] = _rotr(s[b] ^ s[c], 7)


def _round(s: list[int], m: list[int]) -> None:
    _g(s, 0, 4, 8, 12, m[0], m[1])  # columns
    _g(s, 1, 5, 9, 13, m[2], m[3])
    _g(s, 2, 6, 10, 14, m[4], m[5])
    _g(s, 3, 7, 11, 15, m[6], m[7])
    _g(s, 0, 5, 10, 15, m[8], m[9])  # diagonals
    _g(s, 1, 6, 11, 12, m[10], m[11])
    _g(s, 2, 7, 8, 13, m[12], m[13])
    _g(s, 3, 4, 9, 14, m[14], m[15])


def compress(cv: list[int], block: list[int], counter: int, block_len: int, flags: int) -> list[int]:
    state = [*cv, *IV[:4], counter & _MASK, (counter >> 32) & _MASK, block_len, flags]
    m = list(block)
    for r in range(7):
        _round(state, m)
        if r < 6:
            m = [m[i] for i in MSG_PERMUTATION]
    for i in range(8):
        state[i] ^= state[i + 8]
        state[i + 8] ^= cv[i]
    return state


def _words(block: bytes) -> list[int]:
    padded = block.ljust(BLOCK_LEN, b"\0")
    return [int.from_bytes(padded[i : i + 4], "little") for i in range(0, BLOCK_LEN, 4)]


class _Output:
    def __init__(self, cv: list[int], block: list[int], counter: int, block_len: int, flags: int) -> None:
        self.cv, self.block, self.counter, self.block_len, self.flags = cv, block, counter, block_len, flags

    def chaining_value(self) -> list[int]:
        return compress(self.cv, self.block, self.counter, self.block_len, self.flags)[:8]

    def root_bytes(self, length: int) -> bytes:
        out = bytearray()
        counter = 0
        while len(out) < length:
            words = compress(self.cv, self.block, counter, self.block_len, self.flags | ROOT)
            out += b"".join(w.to_bytes(4, "little") for w in words)
            counter += 1
        return bytes(out[:length])


class _ChunkState:
    def __init__(self, key: list[int], chunk_counter: int) -> None:
        self.cv = list(key)
        self.chunk_counter = chunk_counter
        self.block = b""
        self.blocks_compressed = 0

    def __len__(self) -> int:
        return BLOCK_LEN * self.blocks_compressed + len(self.block)

    def _start_flag(self) -> int:
        return CHUNK_START if self.blocks_compressed == 0 else 0

    def update(self, data: bytes) -> None:
        while data:
            if len(self.block) == BLOCK_LEN:  # a full block is compressed only once more input follows it
                self.cv = compress(self.cv, _words(self.block), self.chunk_counter, BLOCK_LEN, self._start_flag())[:8]
                self.blocks_compressed += 1
                self.block = b""
            take = min(BLOCK_LEN - len(self.block), len(data))
            self.block += data[:take]
            data = data[take:]

    def output(self) -> _Output:
        flags = self._start_flag() | CHUNK_END
        return _Output(self.cv, _words(self.block), self.chunk_counter, len(self.block), flags)


def _parent(left: list[int], right: list[int]) -> _Output:
    return _Output(list(IV), [*left, *right], 0, BLOCK_LEN, PARENT)


class Hasher:
    """Incremental BLAKE3 (regular mode)."""

    def __init__(self) -> None:
        self._chunk = _ChunkState(list(IV), 0)
        self._stack: list[list[int]] = []

    def _push_chunk_cv(self, cv: list[int], total_chunks: int) -> None:
        while total_chunks & 1 == 0:  # merge completed subtrees: one per trailing zero bit of the chunk count
            cv = _parent(self._stack.pop(), cv).chaining_value()
            total_chunks >>= 1
        self._stack.append(cv)

    def update(self, data: bytes) -> Hasher:
        while data:
            if len(self._chunk) == CHUNK_LEN:
                total = self._chunk.chunk_counter + 1
                self._push_chunk_cv(self._chunk.output().chaining_value(), total)
                self._chunk = _ChunkState(list(IV), total)
            take = min(CHUNK_LEN - len(self._chunk), len(data))
            self._chunk.update(data[:take])
            data = data[take:]
        return self

    def digest(self, length: int = OUT_LEN) -> bytes:
        output = self._chunk.output()
        for cv in reversed(self._stack):
            output = _parent(cv, output.chaining_value())
        return output.root_bytes(length)

    def hexdigest(self, length: int = OUT_LEN) -> str:
        return self.digest(length).hex()


def blake3_hex(data: bytes) -> str:
    return Hasher().update(data).hexdigest()
