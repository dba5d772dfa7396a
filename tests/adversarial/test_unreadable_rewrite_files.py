"""A rewrite whose added data file is there but cannot be read for its content digest (issue 32 leftovers).

An attacker with write access commits a rewrite (Iceberg ``replace``, Delta ``dataChange: false``) whose new file is
in storage, its size the metadata's, but is no Parquet file the table library reads: garbage bytes, or a Parquet file
whose column cannot be read as the table's type. Measured: pyiceberg 0.12's ``scan().to_arrow()`` and delta-rs 1.x
fail on such a table. The verdict must say the file cannot be read (``table_unreadable``, naming the file), not that
it is missing: the Iceberg digest's refusal was swallowed and reported as ``file_missing`` ("cannot be read", as if
the file were gone). A file really gone from storage stays ``file_missing``. Neither is ever VERIFIED.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.errors import AttestError
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.carrier import attest_after_write as delta_attest
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.test_content_rewrite_delta import _adds, rewrite
from tests.iceberg.conftest import CATALOG, catalog_properties, local  # noqa: F401
from tests.iceberg.rewrites import live_data_files, replace

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["a", "b", "c"], pa.string())})
IDS = {b"PARQUET:field_id": b"1"}, {b"PARQUET:field_id": b"2"}
GARBAGE = b"PAR1" + b"\x00not parquet at all\x00" * 40 + b"PAR1"


def _wrong_type() -> pa.Table:
    """The table's columns by their field ids, ``id`` a string: no reader promotes string to long."""
    schema = pa.schema([pa.field("id", pa.string(), metadata=IDS[0]), pa.field("v", pa.string(), metadata=IDS[1])])
    return pa.table({"id": ["1", "2", "3"], "v": ["a", "b", "c"]}, schema=schema)


def _right() -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64(), metadata=IDS[0]), pa.field("v", pa.string(), metadata=IDS[1])])
    return ROWS.cast(schema)



def _iceberg(catalog: SqlCatalog, variant: str) -> Table:
    table = catalog.create_table("ns.t", schema=ROWS.schema)
    table.append(ROWS.slice(0, 1))
    table.append(ROWS.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = replace(catalog, catalog.load_table("ns.t"), [_wrong_type() if variant == "wrong_type" else _right()])
    added = local(str(live_data_files(table)[0].file_path))
    if variant == "garbage":
        size = added.stat().st_size
        added.write_bytes((GARBAGE * (size // len(GARBAGE) + 1))[:size])  # the manifest's size, not Parquet
    elif variant == "gone":
        added.unlink()
    return table


@pytest.mark.parametrize(("variant", "code"), [("garbage", "table_unreadable"), ("wrong_type", "table_unreadable"),
                                               ("gone", "file_missing")])
def test_an_iceberg_rewrite_whose_added_file_cannot_be_read(catalog: SqlCatalog, variant: str, code: str) -> None:
    table = _iceberg(catalog, variant)
    with pytest.raises(Exception):  # noqa: B017 - pyiceberg's own error, whatever its class
        table.scan().to_arrow()
    added = str(live_data_files(table)[0].file_path).rsplit("/", 1)[1]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t", "--level", "schema")
    assert rc != 0 and not doc["passed"] and codes(doc) == [code], json.dumps(doc, indent=1)
    failure = doc["errors"][0]
    assert added in failure["message"] + str(failure.get("path")), failure
    if code == "table_unreadable":
        assert "missing" not in failure["message"] and rc == 2, failure
    else:
        assert "not in storage" in failure["message"], failure
    # the carry-forward the Spark hook runs after maintenance refuses with the same code, writing nothing
    with pytest.raises(AttestError) as raised:
        IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG).carry_forward()
    assert raised.value.code.value == code, raised.value


def _delta(path: Path, variant: str) -> None:
    write_deltalake(str(path), ROWS.slice(0, 1), mode="append")
    write_deltalake(str(path), ROWS.slice(1), mode="append")
    delta_attest(str(path), model="orders", program_hash=PROGRAM)
    new = _wrong_type() if variant == "wrong_type" else ROWS
    rewrite(path, sorted(_adds(path)), [(new, {})])
    added = next(p for p, a in _adds(path).items() if not a.get("dataChange", True))
    if variant == "garbage":
        size = (path / added).stat().st_size
        (path / added).write_bytes((GARBAGE * (size // len(GARBAGE) + 1))[:size])
    elif variant == "gone":
        (path / added).unlink()


@pytest.mark.parametrize(("variant", "code"), [("garbage", "table_unreadable"), ("wrong_type", "content_changed"),
                                               ("gone", "file_missing")])
def test_a_delta_rewrite_whose_added_file_cannot_be_read(tmp_path: Path, variant: str, code: str) -> None:
    """delta-rs casts the string column to the table's long (measured: it reads the attested rows), where the digest
    reads the stored type: a changed type, content_changed (Spark's Parquet reader does not convert string to long)."""
    path = tmp_path / "t"
    _delta(path, variant)
    if variant == "wrong_type":
        assert DeltaTable(str(path)).to_pyarrow_table().sort_by("id").to_pylist() == ROWS.to_pylist()
    else:
        with pytest.raises(Exception):  # noqa: B017 - delta-rs's own error, whatever its class
            DeltaTable(str(path)).to_pyarrow_table()
    rc, doc = verify(str(path), "--level", "schema")
    assert rc != 0 and not doc["passed"] and codes(doc) == [code], json.dumps(doc, indent=1)
    if code == "table_unreadable":
        assert "missing" not in doc["errors"][0]["message"] and rc == 2, doc["errors"][0]
    with pytest.raises(AttestError) as raised:
        DeltaCarrier(str(path)).carry_forward()
    assert raised.value.code.value == code, raised.value


@pytest.mark.parametrize(("order", "values_moved", "verified"), [(("col-yyyy", "col-xxxx"), True, True),
                                                                (("col-yyyy", "col-xxxx"), False, False)])
def test_a_delta_name_mapped_struct_stored_in_another_order(tmp_path: Path, order: tuple[str, str],
                                                            values_moved: bool, verified: bool) -> None:
    """Delta column mapping by name, a rewrite's file whose struct fields are stored in the other order: delta-rs
    reads them by physical name (Spark too: tests/adversarial/test_spark_nested_field_ids.py), and so does the
    digest — the attested rows verify, values under the other field's name are content_changed."""
    from deltalake import QueryBuilder

    from tests.adversarial.test_spark_nested_field_ids import NAMES, _name_table, _named_rows

    path = tmp_path / "t"
    _name_table(path)
    delta_attest(str(path), model="orders", program_hash=PROGRAM)

    def rows() -> list[tuple[int, int, int]]:
        sql = "select a, st['x'] as x, st['y'] as y from t"
        read = QueryBuilder().register("t", DeltaTable(str(path))).execute(sql)
        return sorted((r["a"], r["x"], r["y"]) for r in pa.table(read.read_all()).to_pylist())

    before = rows()
    x, y = [100, 200, 101, 201], [300, 400, 301, 401]
    new = _named_rows([0, 10, 1, 11], y if values_moved else x, x if values_moved else y, (1, 2, 3, 4),
                      (NAMES[0], NAMES[1], *order))
    rewrite(path, sorted(_adds(path)), [(new, {})])
    assert rows() == (before if verified else sorted((a, b, c) for a, c, b in before))  # delta-rs: by name
    rc, doc = verify(str(path), "--level", "bytes")
    if verified:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
    else:
        assert rc == 1 and codes(doc) == ["content_changed"], doc
