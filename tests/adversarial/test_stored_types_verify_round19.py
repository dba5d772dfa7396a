"""Round 19: an attestation recorded before the stored-type rule still VERIFIED.

``record`` refuses a data file whose readers read other values than it stores (``table_inconsistent``): a column
stored as a type the schema's converts with a loss (Delta, ``test_delta_round19.py``: an int32 of 70000 in a
``short`` column, which Spark reads as 4464), integers past their Parquet INT(8) / INT(16) annotation (Delta and
Iceberg, ``test_iceberg_round17b.py``: 300 under INT(8), which Iceberg Java reads as stored and pyiceberg as 44). But
``attest verify`` did not look at the files' stored types: a table recorded by an older version of the tool (or by
another producer following the spec) over such a file — its digest and bytes bound to values no reader gets alike —
was VERIFIED at ``--level bytes``. The bytes level now holds each attested data file to the record's rule (its
footer, and the values of a column the footer flags): NOT VERIFIED, ``table_inconsistent``, naming the file.
``--level files`` reads no file: VERIFIED as before (docs/verify.md says stored types are not checked there).

The old record is made here by switching the rule off while recording (``before_the_rule``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from carriers.delta.carrier import attest_after_write as delta_record
from carriers.iceberg.carrier import attest_after_write as iceberg_record
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.test_delta_round19 import KEPT, LOSSY, stored_as
from tests.adversarial.test_iceberg_round17b import REF, narrow_file, narrow_table
from tests.iceberg.conftest import CATALOG, catalog_properties, local  # noqa: F401

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog


@contextmanager
def before_the_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``record`` as it was before the stored-type rule (or as a producer not holding it records): no check of a
    column stored as a type read with a loss, nor of integers past their annotation's width."""
    with monkeypatch.context() as patched:
        patched.setattr("carriers.content_store.narrow_integer_problems", lambda *_a, **_k: [])
        patched.setattr("carriers.delta.content._stored_otherwise", lambda *_a, **_k: None)
        yield


def refused(target: str, *args: str) -> dict[str, object]:
    rc, doc = verify(target, "--level", "bytes", *args)
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    return doc


@pytest.mark.parametrize("case", sorted(LOSSY))
def test_delta_an_old_record_over_a_column_read_with_a_loss_is_not_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    kind, column = LOSSY[case]
    path = stored_as(tmp_path / "t", kind, column)
    with before_the_rule(monkeypatch):
        delta_record(str(path), model="orders", program_hash=PROGRAM)
    doc = refused(str(path))
    error = doc["errors"][0]  # type: ignore[index]
    assert error["path"] == "part-00000.parquet", doc
    assert "column 'v'" in error["message"] and "with a loss" in error["message"], doc
    # files: no file is read, so stored types are not judged (docs/verify.md); the verdict says bytes were not
    rc, files = verify(str(path), "--level", "files")
    assert rc == 0 and files["level"] == "files", files


def delta_narrow(path: Path, values: list[int]) -> Path:
    """A one-file Delta table of a ``short`` column whose file stores ``values`` as INT32 annotated INT(16)."""
    stored_as(path, "short", pa.array([1], pa.int16()))
    data = narrow_file(path / "part-00000.parquet", values, pa.int16())
    commit = next((path / "_delta_log").glob("*.json"))
    text = re.sub(r'"size": \d+', f'"size": {data.stat().st_size}', commit.read_text())
    commit.write_text(text.replace('\\"numRecords\\": 1', f'\\"numRecords\\": {len(values)}'))
    return path


def test_delta_an_old_record_over_integers_past_their_annotation_is_not_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = delta_narrow(tmp_path / "t", [70000, 1])
    with before_the_rule(monkeypatch):
        delta_record(str(path), model="orders", program_hash=PROGRAM)
    doc = refused(str(path))
    assert "past the width" in json.dumps(doc) and "part-00000.parquet" in json.dumps(doc), doc


def test_delta_narrow_integers_that_fit_verify(tmp_path: Path) -> None:
    path = delta_narrow(tmp_path / "t", [7000, -1])
    delta_record(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc


@pytest.mark.parametrize("case", sorted(KEPT))
def test_delta_an_old_record_over_a_column_read_without_a_loss_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    kind, column = KEPT[case]
    path = stored_as(tmp_path / "t", kind, column)
    with before_the_rule(monkeypatch):
        delta_record(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc


def test_delta_a_file_past_the_attested_bytes_is_judged_by_its_hash_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose bytes differ from the attested ones is artifact_hash_mismatch, not judged again by its types."""
    kind, column = LOSSY["an int32 past 16 bits in a short column"]
    path = stored_as(tmp_path / "t", kind, column)
    with before_the_rule(monkeypatch):
        delta_record(str(path), model="orders", program_hash=PROGRAM)
    data = path / "part-00000.parquet"
    raw = bytearray(data.read_bytes())
    raw[4] ^= 0xFF  # the same size, other bytes
    data.write_bytes(bytes(raw))
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["artifact_hash_mismatch"], doc


@pytest.mark.parametrize(("kind", "values"), [(pa.int8(), [300, 1]), (pa.int16(), [70000, 1])])
def test_iceberg_an_old_record_over_integers_past_their_annotation_is_not_verified(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch, kind: pa.DataType, values: list[int]
) -> None:
    table = narrow_table(catalog, values, kind)
    with before_the_rule(monkeypatch):
        iceberg_record(table, model="orders", program_hash=PROGRAM)
    doc = refused(REF)
    assert "past the width" in json.dumps(doc) and "narrow.parquet" in json.dumps(doc), doc
    rc, files = verify(REF, "--level", "files")
    assert rc == 0 and files["level"] == "files", files


def test_iceberg_an_int_column_promoted_to_long_verifies(catalog: SqlCatalog) -> None:
    """Honest: files written as int (INT32) before the column was promoted to long, and as long after."""
    from pyiceberg.types import LongType

    table = catalog.create_table("ns.t", schema=pa.schema([pa.field("v", pa.int32())]))
    table.append(pa.table({"v": pa.array([1, 2**31 - 1], pa.int32())}))
    with table.update_schema() as update:
        update.update_column("v", LongType())
    table = catalog.load_table("ns.t")
    table.append(pa.table({"v": pa.array([2**40, -5], pa.int64())}))
    iceberg_record(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    rc, doc = verify(REF, "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc
    assert doc["files_checked"] == 2, doc
