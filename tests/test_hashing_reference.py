"""attest.hashing against an independent BLAKE3: the pure-Python port of the spec's reference implementation.

tests/test_hashing.py compares with ``b3sum`` where it is installed (`make` builds it from crates.io when cargo is
there); this comparison needs nothing but Python, so it runs on every machine. The reference shares no code with the
``blake3`` package (Rust, SIMD, threads, mmap) behind attest.hashing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attest import hashing
from attest.hashing import hash_bytes, hash_file, hash_files, hash_stream
from tests.blake3_reference import CHUNK_LEN, blake3_hex
from tests.test_hashing import VECTORS, vector_input, write

# Every tree shape the reference can afford: empty, partial / whole / one-past blocks and chunks, subtree
# merges at 2, 3, 4, 8 chunks, and sizes with a ragged last chunk.
SIZES = [0, 1, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3 * 1024 + 7, 4 * 1024, 8 * 1024 + 1, 31 * 1024 + 5]


@pytest.mark.parametrize("n", [n for n in sorted(VECTORS) if n <= 16384])
def test_reference_reproduces_the_official_vectors(n: int) -> None:
    assert blake3_hex(vector_input(n)) == VECTORS[n]


def test_reference_is_not_the_blake3_package() -> None:
    import tests.blake3_reference as ref

    assert "blake3" not in {getattr(v, "__module__", "").split(".")[0] for v in vars(ref).values()}
    assert blake3_hex(b"abc") != blake3_hex(b"abd")


@pytest.mark.parametrize("n", SIZES)
def test_every_entry_point_matches_the_reference(tmp_path: Path, n: int) -> None:
    data = os.urandom(n)
    expected = blake3_hex(data)
    path = write(tmp_path / "f", data)
    assert hash_bytes(data) == expected
    assert hash_file(path) == expected
    with path.open("rb") as fh:
        assert hash_stream(fh, chunk_size=1000) == expected  # reads not aligned to BLAKE3's 1 KiB chunks


def test_memory_mapped_multithreaded_path_matches_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The mmap + threads path normally starts at 8 MiB, far too much for the reference: lower the bar so a few
    # hundred KiB take it (many 1 KiB chunks, so blake3 really splits the tree across threads).
    monkeypatch.setattr(hashing, "MMAP_THRESHOLD", 64 * 1024)
    files = {
        "ragged": os.urandom(200 * CHUNK_LEN + 321),
        "pattern": vector_input(102400),
        "small": os.urandom(5000),  # stays below the lowered threshold: the buffered path
    }
    paths = [write(tmp_path / name, data) for name, data in files.items()]
    expected = [blake3_hex(data) for data in files.values()]
    assert expected[1] == VECTORS[102400]
    assert [hash_file(p) for p in paths] == expected
    assert [hash_file(p, threads=2) for p in paths] == expected
    batch = hash_files(paths)
    assert [batch[str(p)] for p in paths] == expected
