"""Round 18 without Spark: what Iceberg Java reads of a position delete file, held at record time (the Spark
measurements are in test_spark_iceberg_round18.py).

- Its Parquet footer: Java reads a position delete file for one data file through ``file_path = <location>`` and skips
  row groups by their footer statistics (measured with Spark, executor cache off), pyiceberg reads every row. A file
  whose footer minimum and maximum of ``file_path`` were rewritten above its rows' location (the entry honest) was
  attested with pyiceberg's rows.
- Its positions: Java's position bitmap refuses ``pos`` -1 (Spark's read fails, measured), pyiceberg ignores it.
Both are ``table_inconsistent`` now; the honest file attests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attest.errors import AttestError
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.test_iceberg_delete_physical_types import _read, _rows
from tests.iceberg.conftest import PROGRAM, commit_delete_file, local
from tests.iceberg.rewrites import live_data_files

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table



def _plain(table: pa.Table) -> pa.Table:
    return table


def _with_negative(table: pa.Table) -> pa.Table:
    extra = pa.Table.from_pylist([{"file_path": table.column("file_path")[0].as_py(), "pos": -1}], schema=table.schema)
    return pa.concat_tables([extra, table])


def _deleted(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch, *, forge: bool, negative: bool = False) -> Table:
    """ids 1, 2 in one file; a position delete file hiding id 1 (written uncompressed and plain), its footer's
    ``file_path`` statistics rewritten above the location when ``forge``, a row of ``pos`` -1 beside when
    ``negative``."""
    table = catalog.create_table("ns.t", schema=_rows([]).schema)
    table.append(_rows([1, 2]))
    (first,) = live_data_files(table)
    path = local(table.location()) / "data" / "pos.parquet"
    real = pq.write_table

    def plain(t: pa.Table, where: object, **kw: object) -> None:
        real(t, where, compression="NONE", use_dictionary=False)  # type: ignore[arg-type]

    with monkeypatch.context() as patched:
        patched.setattr(pq, "write_table", plain)
        commit_delete_file(table, path, target=first.file_path, stored=_with_negative if negative else _plain)
    if forge:
        raw = bytearray(path.read_bytes())
        size = int.from_bytes(raw[-8:-4], "little")
        start = len(raw) - 8 - size
        location = first.file_path.encode()
        footer = bytes(raw[start:-8])
        assert location in footer
        raw[start:-8] = footer.replace(location, b"z" + location[1:])  # as long: the file's size unchanged
        path.write_bytes(bytes(raw))
    return catalog.load_table("ns.t")


@pytest.mark.parametrize(("forge", "negative"), [(True, False), (False, True)])
def test_a_position_delete_file_java_reads_otherwise_is_not_attested(
    catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch, forge: bool, negative: bool
) -> None:
    table = _deleted(catalog, monkeypatch, forge=forge, negative=negative)
    assert _read(table) == [2]  # pyiceberg reads every row of the delete file, ignores -1
    with pytest.raises(AttestError) as refused:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert refused.value.code.value == "table_inconsistent", refused.value.message
    assert ("footer" if forge else "position -1") in refused.value.message, refused.value.message


def test_the_honest_plain_position_delete_file_attests(catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _deleted(catalog, monkeypatch, forge=False)
    assert _read(table) == [2]
    attest_after_write(table, model="orders", program_hash=PROGRAM)
