"""verify --level bytes holds attested data files to the record's stored-type rule on an object store too (SeaweedFS,
loopback): the footer read through the table's storage (tests/adversarial/test_stored_types_verify_round19.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from attest import fast
from attest.errors import AttestError
from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.carrier import attest_after_write as iceberg_record
from tests.adversarial.test_delta_round19 import KEPT, LOSSY, stored_as
from tests.adversarial.test_iceberg_round17b import narrow_file
from tests.adversarial.test_stored_types_verify_round19 import before_the_rule
from tests.delta.conftest import PROGRAM
from tests.objectstore.conftest import S3
from tests.objectstore.test_stores import warehouse

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table


def upload(s3: S3, tmp_path: Path, kind: str, column: pa.Array) -> str:
    """The one-file Delta table of ``stored_as``, its objects put under ``t/`` in the bucket."""
    local = stored_as(tmp_path / "t", kind, column)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        s3.put(f"t/{path.relative_to(local).as_posix()}", path.read_bytes())
    return s3.uri("t")


def test_an_old_record_over_a_column_read_with_a_loss_is_not_verified_on_s3(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = upload(s3, tmp_path, *LOSSY["an int32 past 16 bits in a short column"])
    with before_the_rule(monkeypatch):
        attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="bytes")
    assert not report.passed and [p.code.value for p in report.errors] == ["table_inconsistent"], report.human()
    assert report.errors[0].path == "part-00000.parquet" and "with a loss" in report.errors[0].message


def test_an_honest_table_verifies_on_s3_its_footers_read(s3: S3, tmp_path: Path) -> None:
    uri = upload(s3, tmp_path, *KEPT["an int32 that fits in a short column"])
    attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="bytes")
    assert report.passed and report.level == "bytes", report.human()
    assert not any("could not be read as Parquet" in n for n in report.notes), report.notes


# ---- Iceberg ---------------------------------------------------------------------------------------------------------
# The FileIO's stream of an object is not seekable (the hashing reads it in order): the footers were not read, every
# verdict said "stored types not checked: N data file(s) not read as Parquet" and record did not hold the rule on a
# store. The footer is now read through a seekable input (FileIOStorage.open_footer_location).


def iceberg_catalog(s3: S3, tmp_path: Path) -> SqlCatalog:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "store", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=warehouse(s3, "wh"), **s3.iceberg_properties
    )
    catalog.create_namespace("ns")
    return catalog


def iceberg_narrow(s3: S3, tmp_path: Path, values: list[int]) -> Table:
    """``narrow_table`` on the store: a table ``ns.t`` (v int) whose one data file, put under its data folder and added
    by pyiceberg's ``add_files``, stores ``values`` as INT32 annotated INT(8)."""
    catalog = iceberg_catalog(s3, tmp_path)
    table = catalog.create_table("ns.t", schema=pa.schema([pa.field("v", pa.int32())]))
    data = narrow_file(tmp_path / "narrow.parquet", values)
    key = f"{table.location().split(f'{s3.name}/', 1)[1]}/data/narrow.parquet"
    s3.put(key, data.read_bytes())
    table.add_files([s3.uri(key)])
    return catalog.load_table("ns.t")


def test_iceberg_an_honest_table_verifies_on_s3_its_footers_read(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = iceberg_catalog(s3, tmp_path).create_table("ns.t", schema=pa.schema([pa.field("v", pa.int32())]))
    for i in range(3):
        table.append(pa.table({"v": pa.array(range(10 * i, 10 * i + 10), pa.int32())}))
    iceberg_record(table, model="orders", program_hash=PROGRAM)
    for on in (True, False):  # data files hashed by obstore, and by the FileIO (ATTEST_FAST=0)
        monkeypatch.setattr(fast, "ON", on)
        report = verify_table(IcebergCarrier(table), level="bytes")
        assert report.passed and report.level == "bytes", report.human()
        assert report.stored_types_unchecked == "" and "stored_types_unchecked" not in report.to_json(), report.notes
        assert not any("could not be read as Parquet" in n for n in report.notes), report.notes
        assert "stored types not checked" not in report.verdict(), report.verdict()


def test_iceberg_an_old_record_over_integers_past_their_annotation_is_not_verified_on_s3(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = iceberg_narrow(s3, tmp_path, [300, 1])
    with before_the_rule(monkeypatch):
        iceberg_record(table, model="orders", program_hash=PROGRAM)
    for on in (True, False):
        monkeypatch.setattr(fast, "ON", on)
        report = verify_table(IcebergCarrier(table), level="bytes")
        assert not report.passed and [p.code.value for p in report.errors] == ["table_inconsistent"], report.human()
        assert report.errors[0].path == "data/narrow.parquet", report.errors[0]
        assert "column 'v'" in report.errors[0].message and "past the width" in report.errors[0].message
    report = verify_table(IcebergCarrier(table), level="files")  # no file read: as before
    assert report.passed and report.level == "files", report.human()


def test_iceberg_record_refuses_integers_past_their_annotation_on_s3(s3: S3, tmp_path: Path) -> None:
    table = iceberg_narrow(s3, tmp_path, [300, 1])
    with pytest.raises(AttestError) as caught:
        iceberg_record(table, model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "past the width" in str(caught.value) and "narrow.parquet" in str(caught.value), caught.value


def test_iceberg_narrow_integers_that_fit_record_and_verify_on_s3(s3: S3, tmp_path: Path) -> None:
    table = iceberg_narrow(s3, tmp_path, [100, -1])
    iceberg_record(table, model="orders", program_hash=PROGRAM)
    report = verify_table(IcebergCarrier(table), level="bytes")
    assert report.passed and report.stored_types_unchecked == "", report.human()
