"""Round 33: a data file longer than the size its table states, holding two Parquet files.

Readers read a data file by the size its table states — the log's ``add.size``, the manifest's
``file_size_in_bytes`` — and pyarrow (the digest's reader) and the hashers read to the file's real end. A file that
is one Parquet file in its first ``size`` bytes and another in the whole (``two_in_one``) reads as the first to
delta-rs (its footer found at the stated size), as no row to Spark (the footer at the end, the row groups read
within its split of the stated size), as a refused read to Iceberg Java ("Incorrect length provided"), and as the
second to pyarrow and pyiceberg — measured below:

- a rewrite (``dataChange: false`` / ``replace``) adding such a file, the honest rows at its end and others in its
  stated size: the content digest read the honest rows — ``VERIFIED (content; …, same rows)``, exit 0 — while
  delta-rs read the others (no test held an added file's stored size to its stated one: the files level compares the
  *attested* files' sizes, and an added file has none);
- ``attest record`` of such a file hashed its whole bytes under the log's size, and ``verify --level bytes`` then
  said ``VERIFIED``: the bytes level compared hashes only (``--level files`` said ``size_mismatch``).

Now the files a rewrite added are looked at in storage before their rows are read (``content_changed`` when a size
differs), ``record`` refuses a file whose stored size is not its stated one (``size_mismatch``, nothing written),
and the bytes level makes the files level's look too (``size_mismatch``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from attest.cli import main
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.parquet_thrift import two_in_one
from tests.adversarial.test_content_rewrite_delta import _adds, rewrite
from tests.adversarial.test_rewrite_parquet_layout import delta_rs_rows

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import SparkSession

ROWS = pa.table({"v": pa.array(range(5), pa.int64()), "w": pa.array([f"s{i}" for i in range(5)])})
FORGED = ROWS.set_column(0, "v", pa.array([666, 1, 2, 3, 4], pa.int64()))


def parquet(rows: pa.Table) -> bytes:
    out = io.BytesIO()
    pq.write_table(rows, out)
    return out.getvalue()


def test_one_file_reads_as_two_by_where_its_footer_is_looked_for() -> None:
    """The helper: the forged rows in the first bytes, the honest ones in the whole (pyarrow reads to the end)."""
    first, second = parquet(FORGED), parquet(ROWS)
    both = two_in_one(first, second)
    assert pq.read_table(pa.BufferReader(both)).equals(pq.read_table(pa.BufferReader(second)))
    assert pq.read_table(pa.BufferReader(both[:len(first)])).equals(FORGED)


def state_size(path: Path, version: int, size: int) -> None:
    """The add action of commit ``version`` states ``size`` bytes."""
    commit = path / commit_name(version)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["size"] = size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def rewritten_as(path: Path, rows: pa.Table, make: Callable[[bytes], bytes], stated: int | None = None) -> Path:
    """A Delta table of ``rows`` at ``path``, attested, then rewritten (``dataChange: false``) into one file whose
    bytes are ``make`` of the honest file's, its add stating ``stated`` bytes (default: its size); that file."""
    write_deltalake(str(path), rows)
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    old = list(_adds(path))
    n = rewrite(path, old, [(rows, {})])
    (added,) = (p for p in _adds(path) if p not in old)
    data = make((path / added).read_bytes())
    (path / added).write_bytes(data)
    state_size(path, n, len(data) if stated is None else stated)
    return path / added


def written_as(path: Path, rows: pa.Table, data: bytes, stated: int | None = None) -> None:
    """A Delta table of ``rows`` at ``path`` (not attested) whose one file holds ``data``, its add stating
    ``stated`` bytes (default: its size)."""
    write_deltalake(str(path), rows)
    (rel,) = _adds(path)
    (path / rel).write_bytes(data)
    state_size(path, 0, len(data) if stated is None else stated)


def test_a_rewrite_whose_file_holds_other_rows_in_its_stated_size(tmp_path: Path) -> None:
    path = tmp_path / "t"
    first = parquet(FORGED)
    rewritten_as(path, ROWS, lambda honest: two_in_one(first, honest), stated=len(first))
    assert sorted(r["v"] for r in delta_rs_rows(path)) == [1, 2, 3, 4, 666]  # delta-rs reads the stated size
    for level in ("schema", "files", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc == 1 and codes(doc) == ["content_changed"], doc  # VERIFIED (content; …, same rows) before
        assert "readers read it by the stated size" in doc["errors"][0]["message"], doc
    # and no carry-forward is written over it
    assert main(["record", str(path), "--model", "m", "--sql", "select 1", "--json"]) != 0
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc


def _two_in_one_table(path: Path) -> None:
    """A table whose one file is the forged rows in its logged size and the honest ones in the whole."""
    first = parquet(FORGED)
    written_as(path, ROWS, two_in_one(first, parquet(ROWS)), stated=len(first))  # pyarrow: no page index to move
    assert sorted(r["v"] for r in delta_rs_rows(path)) == [1, 2, 3, 4, 666]


def test_record_refuses_a_file_of_another_size_than_the_log_states(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "t"
    _two_in_one_table(path)
    assert main(["record", str(path), "--model", "m", "--sql", "select 1", "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert [e["code"] for e in out["errors"]] == ["size_mismatch"], out
    assert not (path / "_recipe_attest").exists() or not any((path / "_recipe_attest").iterdir())
    rc, doc = verify(str(path))
    assert rc == 1 and codes(doc) == ["unattested"], doc


def test_an_attestation_hashing_such_a_file_whole_is_not_verified(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded as before round 33 (no look at the sizes): the bytes level said VERIFIED, the files level
    size_mismatch; both say size_mismatch now."""
    path = tmp_path / "t"
    _two_in_one_table(path)
    with monkeypatch.context() as patched:
        patched.setattr("carriers.content_store.sized_otherwise", lambda *a, **k: None)
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    for level in ("files", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc == 1 and codes(doc) == ["size_mismatch"], doc


def iceberg_file_of_two(table: Any) -> Any:
    """A DataFile of ``table`` (columns ``v``, ``w``: field ids 1, 2) stating the forged rows' size, its bytes the
    forged rows then the honest ones."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from tests.iceberg.rewrites import with_ids, write_file

    data_file = write_file(table, with_ids(ROWS, [1, 2]))
    local = Path(str(data_file.file_path).removeprefix("file://"))
    first = parquet(with_ids(FORGED, [1, 2]))
    local.write_bytes(two_in_one(first, local.read_bytes()))
    return DataFile.from_args(content=DataFileContent.DATA, file_path=data_file.file_path,
                              file_format=FileFormat.PARQUET, partition=Record(), record_count=5,
                              file_size_in_bytes=len(first), spec_id=0)


def test_an_iceberg_replace_whose_file_holds_other_rows_in_its_stated_size(catalog: SqlCatalog) -> None:
    """pyiceberg reads the whole file (the honest rows: what the digest reads); Iceberg Java refuses it
    (test_spark_reads_the_stated_size). Refused before too, by chance: Java's split rule (round 20) found the honest
    row group's midpoint past the stated size; now by its size first."""
    from carriers.iceberg.carrier import attest_after_write as attest_iceberg
    from tests.iceberg.conftest import CATALOG
    from tests.iceberg.rewrites import replace

    table = catalog.create_table("ns.t", schema=ROWS.schema)
    table.append(ROWS)
    attest_iceberg(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    stated = iceberg_file_of_two(table)
    table = replace(catalog, table, data_files=[stated])
    assert sorted(table.scan().to_arrow().column("v").to_pylist()) == list(range(5))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "readers read it by the stated size" in doc["errors"][0]["message"], doc


@pytest.mark.spark
def test_spark_reads_the_stated_size(spark: SparkSession, spark_warehouse: Path, tmp_path: Path) -> None:
    """Measured: Spark reads a Delta file's row groups within the log's size — its footer taken from the file's
    end, whose row groups lie past that size: no row; Iceberg Java refuses a file of another length than the
    manifest's ("Incorrect length provided"); delta-rs (above) reads the forged rows, pyiceberg the honest ones."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_spark_rewrite_readers import spark_rows
    from tests.iceberg.rewrites import live_data_files, replace

    path = tmp_path / "t"
    _two_in_one_table(path)
    # Spark reads the footer at the file's end and the row groups in its split, 0 to the stated size: none of them
    assert spark_rows(spark, path) == []

    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.r33")
    spark.sql("CREATE TABLE iceberg.r33.t (v BIGINT, w STRING) USING iceberg")
    spark.sql("INSERT INTO iceberg.r33.t VALUES (0, 's0')")
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    table = catalog.load_table("r33.t")
    stated = iceberg_file_of_two(table)
    replace(catalog, table, remove=live_data_files(table), data_files=[stated], operation="append")
    assert sorted(catalog.load_table("r33.t").scan().to_arrow().column("v").to_pylist()) == list(range(5))
    spark.sql("REFRESH TABLE iceberg.r33.t")
    with pytest.raises(Exception, match="Incorrect length provided"):  # Iceberg Java refuses the read
        spark.sql("SELECT v FROM iceberg.r33.t").collect()
