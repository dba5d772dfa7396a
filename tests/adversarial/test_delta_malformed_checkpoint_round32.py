"""Round 32, found by fuzzing an attested Delta table: a checkpoint whose Parquet bytes pyarrow cannot read through
(a struct child cut short, a dictionary index out of bounds: ``ArrowInvalid``) raised out of the log's line reader,
an internal error of the command reading it (measured in the fuzzing campaign: ``verify`` and ``audit``). The reader
now says ``table_unreadable``, naming the checkpoint; where delta-rs refuses the same bytes first, the verdict was
already coded (the second test holds every command to that)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pyarrow as pa
import pytest

from attest.cli import main


def _json(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main([*args, "--json"])
    return code, out.getvalue()


def _unreadable_variant(data: bytes) -> bytes:
    """``data`` with one byte changed so that pyarrow opens it and reading its rows raises ArrowInvalid (the first such
    byte): found by trying, so the test holds whatever pyarrow's page layout."""
    import pyarrow.parquet as pq

    for at in range(4, len(data) - 8):
        for flip in (0xFF, 0x01, 0x80):
            edited = bytearray(data)
            edited[at] ^= flip
            try:
                for _ in pq.ParquetFile(pa.BufferReader(bytes(edited))).iter_batches():
                    pass
            except pa.ArrowInvalid:
                return bytes(edited)
            except Exception:  # another kind of failure: not the one this test is about
                continue
    pytest.fail("no single-byte edit of the checkpoint raised ArrowInvalid")


def _checkpointed(tmp_path: Path) -> tuple[Path, Path]:
    from deltalake import DeltaTable, write_deltalake

    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]}), partition_by=["p"])
    write_deltalake(str(root), pa.table({"id": pa.array([3], pa.int64()), "p": ["a"]}), mode="append",
                    partition_by=["p"])
    DeltaTable(str(root)).create_checkpoint()
    assert _json("record", str(root), "--model", "m", "--sql", "select 1")[0] == 0
    [checkpoint] = (root / "_delta_log").glob("*.checkpoint.parquet")
    return root, checkpoint


def test_the_line_reader_codes_a_checkpoint_arrow_cannot_read(tmp_path: Path) -> None:
    from attest.errors import AttestError, Code
    from carriers.delta.log import _parquet_actions

    _, checkpoint = _checkpointed(tmp_path)
    with pytest.raises(AttestError) as refused:  # was: pyarrow's ArrowInvalid, raised through every command
        list(_parquet_actions(_unreadable_variant(checkpoint.read_bytes())))
    assert refused.value.code == Code.TABLE_UNREADABLE and "checkpoint" in refused.value.message


def test_commands_over_a_checkpoint_arrow_cannot_read_are_coded(tmp_path: Path) -> None:
    root, checkpoint = _checkpointed(tmp_path)
    checkpoint.write_bytes(_unreadable_variant(checkpoint.read_bytes()))
    for args in (("verify", str(root)), ("audit", str(root)), ("show", str(root)), ("lineage", str(root))):
        code, text = _json(*args)
        assert code in (1, 2) and "internal_error" not in text, (args, text)
