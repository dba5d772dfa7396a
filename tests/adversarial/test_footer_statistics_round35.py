"""Round 35: a Parquet footer bound shorter than one value of its column's type ends the process that reads it.

A footer's minimum and maximum (``Statistics``: ``min_value`` / ``max_value``, the deprecated ``min`` / ``max``) are
each one PLAIN-encoded value: 4 bytes for an INT32, 8 for an INT64 or a DOUBLE, the type length for a
FIXED_LEN_BYTE_ARRAY. pyarrow 26 decodes them when asked for a chunk's ``statistics``; a shorter one makes it throw a
C++ exception (``parquet::ParquetException: Unexpected end of stream``) that no caller can catch, and the process
aborts — measured, found by a differential fuzzer of a rewrite's footer (Spark as the oracle). Before this round,
``attest verify`` of a table whose rewrite added such a file ended with SIGABRT (exit 134, no verdict, no report), as
did ``attest record`` of an Iceberg table appending one and an ``attest audit`` holding such a table — every table
after it unchecked. Now every caller asks for no such chunk's statistics (``content_store.unreadable_statistics``,
read from pyarrow's own serialisation of the footer it parsed): the file is ``content_changed`` in a rewrite and
``table_inconsistent`` at record. Each case runs as a separate process: a verdict, never an ended process.
"""

from __future__ import annotations

import copy
import decimal
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.parquet_thrift import field, with_footer
from tests.adversarial.test_file_size_round33 import rewritten_as
from tests.conftest import run_cli

ROWS = pa.table({
    "b": pa.array([True, False, True], pa.bool_()),
    "i": pa.array([1, -2, 3], pa.int32()),
    "l": pa.array([10, 20, -30], pa.int64()),
    "d": pa.array([0.5, -1.5, 2.0], pa.float64()),
    "dec": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50"), None], pa.decimal128(10, 2)),
    "s": pa.array(["a", "bb", None], pa.string()),
})
COLUMNS = {name: i for i, name in enumerate(ROWS.column_names)}
# Thrift ids of parquet.thrift's Statistics: 1 max, 2 min (deprecated), 5 max_value, 6 min_value.
MAX, MIN, MAX_VALUE, MIN_VALUE = 1, 2, 5, 6


def short_bound(column: str, which: int, length: int, *, deprecated_only: bool = False) -> Callable[[Any], None]:
    """A footer edit: row group 0's chunk of ``column`` given a bound ``which`` of ``length`` bytes (the deprecated
    pair alone, ``min_value`` / ``max_value`` dropped, with ``deprecated_only``)."""

    def edit(meta: Any) -> None:
        chunk = field(field(meta, 4)[2][1][0], 1)[2][1][COLUMNS[column]]  # type: ignore[index]
        stats = field(field(chunk, 3)[2], 12)[2]  # type: ignore[index]
        if deprecated_only:
            stats[:] = [f for f in stats if f[0] not in (MAX_VALUE, MIN_VALUE)]
        entry = field(stats, which)
        if entry is None:
            stats.append([which, 8, b"\x01" * length])
            stats.sort(key=lambda f: f[0])
        else:
            entry[2] = b"\x01" * length

    return edit


def verified_by_content(path: Path) -> None:
    """``attest verify PATH --level bytes`` (a fresh process) says ``VERIFIED (content; compacted …)``, exit 0: the
    control every round-35 case stands beside."""
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["verdict"].startswith("VERIFIED (content; compacted"), \
        (done.stdout[-2000:], done.stderr[-2000:])


def honest_file(rows: pa.Table = ROWS) -> bytes:
    """``rows`` as pyarrow writes them, a row group a row (pyarrow's own read of a file of one row group decodes its
    statistics and refuses a short bound, a catchable error: the digest's read of a file of several does not)."""
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, store_schema=False, row_group_size=1)
    return bytes(sink.getvalue().to_pybytes())


EDITS = {
    "int64 min_value of 7 bytes": short_bound("l", MIN_VALUE, 7),
    "int32 max_value of 3 bytes": short_bound("i", MAX_VALUE, 3),
    "double min_value of no bytes": short_bound("d", MIN_VALUE, 0),
    "boolean max_value of no bytes": short_bound("b", MAX_VALUE, 0),
    "fixed-length decimal(10, 2) min_value of 4 bytes": short_bound("dec", MIN_VALUE, 4),
    "int64 deprecated min of 3 bytes, no min_value": short_bound("l", MIN, 3, deprecated_only=True),
}


def test_pyarrow_ends_the_process_on_such_a_bound(tmp_path: Path) -> None:
    """The measurement the round stands on: pyarrow reads the file's metadata, then aborts when asked for the chunk's
    statistics (a child process, so the abort is its own)."""
    import subprocess
    import sys

    path = tmp_path / "f.parquet"
    path.write_bytes(with_footer(honest_file(), EDITS["int64 min_value of 7 bytes"]))
    probe = ("import sys, pyarrow.parquet as pq; m = pq.ParquetFile(sys.argv[1]).metadata; print('read', flush=True); "
             f"m.row_group(0).column({COLUMNS['l']}).statistics; print('decoded')")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["read"] and done.returncode in (-6, 134), (done.returncode, done.stdout,
                                                                              done.stderr)  # SIGABRT
    assert "Unexpected end of stream" in done.stderr, done.stderr


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_rewrite_whose_footer_bound_is_shorter_than_its_type(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: with_footer(honest_file(), EDITS[edit]))
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # 134 before
    doc = json.loads(done.stdout)
    assert [e["code"] for e in doc["errors"]] == ["content_changed"], doc
    assert "fewer bytes than one" in doc["errors"][0]["message"], doc


def test_record_of_a_delta_table_holding_such_a_file(tmp_path: Path) -> None:
    """``attest record`` of a Delta version whose file carries such a bound (another writer's): ``table_inconsistent``,
    nothing written — the process ended before."""
    from tests.adversarial.test_file_size_round33 import written_as

    path = tmp_path / "t"
    written_as(path, ROWS, with_footer(honest_file(), EDITS["int64 min_value of 7 bytes"]))
    done = run_cli("record", str(path), "--model", "m", "--sql", "select 1", "--json")
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # -6 before
    assert "table_inconsistent" in done.stdout and "fewer bytes than one" in done.stdout, done.stdout
    done = run_cli("verify", str(path), "--json")
    assert done.returncode == 1 and '"unattested"' in done.stdout, done.stdout


def extra_chunk(meta: Any) -> None:
    """A footer edit: row group 0 lists its first column chunk once more, after the last (a chunk no schema leaf
    has: pyarrow's reads take the schema's chunks by position and never read it)."""
    chunks = field(field(meta, 4)[2][1][0], 1)[2][1]  # type: ignore[index]
    chunks.append(copy.deepcopy(chunks[0]))


def test_a_rewrite_whose_row_group_lists_more_chunks_than_columns(tmp_path: Path) -> None:
    """pyarrow reads the file (the attested rows), then ends the process when a check asks for the chunk past the
    schema's ("Invalid Column Index: 6 Num columns: 6", measured; found by the fuzzer): ``content_changed`` now."""
    path = tmp_path / "t"
    data = with_footer(honest_file(), extra_chunk)
    assert pq.ParquetFile(pa.BufferReader(data)).read().equals(ROWS)
    rewritten_as(path, ROWS, lambda _: data)
    done = run_cli("verify", str(path), "--level", "bytes", "--json")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # -6 before
    doc = json.loads(done.stdout)
    assert [e["code"] for e in doc["errors"]] == ["content_changed"], doc
    assert "7 column chunks for 6 schema columns" in doc["errors"][0]["message"], doc


def test_a_longer_bound_and_the_honest_file_still_verify(tmp_path: Path) -> None:
    """The control: the same rewrite of the honest file verifies by content, and so does one whose INT64 bound has
    a byte more than its value (pyarrow decodes the first eight, the value's: no reader is refused)."""
    path = tmp_path / "t"
    rewritten_as(path, ROWS, lambda _: honest_file())
    verified_by_content(path)

    def longer(meta: Any) -> None:
        chunk = field(field(meta, 4)[2][1][0], 1)[2][1][COLUMNS["l"]]  # type: ignore[index]
        stats = field(field(chunk, 3)[2], 12)[2]  # type: ignore[index]
        for which in (MAX, MAX_VALUE):  # the deprecated twin alike (pyarrow writes both; they must agree)
            entry = field(stats, which)
            entry[2] = bytes(entry[2]) + b"\x00"  # type: ignore[index]

    other = tmp_path / "u"
    rewritten_as(other, ROWS, lambda _: with_footer(honest_file(), longer))
    done = run_cli("verify", str(other), "--level", "bytes", "--json")
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])


def test_an_audit_reports_every_table_beside_such_a_rewrite(tmp_path: Path) -> None:
    """An audit of a lake holding such a table and an honest one: a line for each (it ended at the first before)."""
    lake = tmp_path / "lake"
    rewritten_as(lake / "a_bad", ROWS, lambda _: with_footer(honest_file(), EDITS["int64 min_value of 7 bytes"]))
    rewritten_as(lake / "b_good", ROWS, lambda _: honest_file())
    done = run_cli("audit", str(lake), "--json", "--jobs", "1")
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    doc = json.loads(done.stdout)
    verdicts = {Path(t["table"]).name: t for t in doc["tables"]}
    assert set(verdicts) == {"a_bad", "b_good"}, doc
    assert verdicts["b_good"]["outcome"] == "VERIFIED", verdicts["b_good"]
    assert verdicts["a_bad"]["outcome"] == "NOT VERIFIED" and verdicts["a_bad"]["code"] == "content_changed", verdicts


def _iceberg_with(catalog: Any, data: bytes, *, rewrite: bool, rows: pa.Table = ROWS) -> None:
    """Table ``ns.t`` of ``rows`` (field ids 1, 2, ...): with ``rewrite``, attested, then a ``replace`` of its file by
    ``data`` (those rows);
    else a snapshot appending ``data`` (a DataFile made by hand: pyiceberg's ``add_files`` asks pyarrow for the
    footer's statistics, which would end this process)."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from carriers.iceberg.carrier import attest_after_write
    from tests.iceberg.conftest import local
    from tests.iceberg.rewrites import replace

    table = catalog.create_table("ns.t", schema=rows.schema)
    if rewrite:
        table.append(rows)
        attest_after_write(table, model="m", program_hash="a" * 64)
        table = catalog.load_table("ns.t")
    folder = local(table.location()) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "added.parquet"
    path.write_bytes(data)
    added = DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{path}",
                               file_format=FileFormat.PARQUET, partition=Record(), record_count=rows.num_rows,
                               file_size_in_bytes=len(data), spec_id=0)
    replace(catalog, table, remove=None if rewrite else [], data_files=[added],
            operation="replace" if rewrite else "append")


def _ids(rows: pa.Table) -> pa.Table:
    from tests.iceberg.rewrites import with_ids

    return with_ids(rows, range(1, rows.num_columns + 1))


@pytest.mark.parametrize("rewrite", [True, False], ids=["a rewrite", "record of an append"])
def test_iceberg_reads_refuse_such_a_file_first(catalog: Any, rewrite: bool) -> None:
    """Held, Iceberg: pyiceberg reads a data file through pyarrow's dataset reader, which decodes every row group's
    statistics and refuses a short bound with an error it raises (a catchable one), before any check asks for them:
    ``table_unreadable`` for a rewrite's file and at ``record`` of an append (exit 2, nothing written)."""
    from tests.iceberg.conftest import CATALOG

    _iceberg_with(catalog, with_footer(honest_file(_ids(ROWS)), EDITS["int64 min_value of 7 bytes"]), rewrite=rewrite)
    args = ("verify", f"iceberg://{CATALOG}/ns.t", "--level", "bytes") if rewrite else \
        ("record", f"iceberg://{CATALOG}/ns.t", "--model", "m", "--sql", "select 1")
    done = run_cli(*args, "--json")
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "table_unreadable" in done.stdout and "Unexpected end of stream" in done.stdout, done.stdout


def test_an_iceberg_rewrite_whose_row_group_lists_more_chunks_than_columns(catalog: Any) -> None:
    from tests.iceberg.conftest import CATALOG

    _iceberg_with(catalog, with_footer(honest_file(_ids(ROWS)), extra_chunk), rewrite=True)
    done = run_cli("verify", f"iceberg://{CATALOG}/ns.t", "--level", "bytes", "--json")
    assert done.returncode in (1, 2), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert not json.loads(done.stdout)["passed"], done.stdout


def test_the_honest_iceberg_rewrite_verifies(catalog: Any) -> None:
    from tests.iceberg.conftest import CATALOG

    _iceberg_with(catalog, honest_file(_ids(ROWS)), rewrite=True)
    done = run_cli("verify", f"iceberg://{CATALOG}/ns.t", "--level", "bytes", "--json")
    assert done.returncode == 0 and '"VERIFIED (content; compacted' in done.stdout, (done.stdout[-2000:],
                                                                                      done.stderr[-2000:])
