"""``readers_agree`` (an Iceberg record without a content digest) on a snapshot that lists no delete file takes the
listing's facts (``IcebergCarrier.undeleted_records``) instead of reading the manifests again: the only file it then has
to read is a data file whose entry says 0 records, and that check still refuses (pyiceberg skips such a file, Java
reads its rows: tests/adversarial/test_spark_data_file_record_count.py)."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from pyiceberg.manifest import DataFile as IcebergDataFile
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.table import Table
from pyiceberg.typedef import Record

import carriers.iceberg.content as content
from attest.errors import AttestError, Code, UnsupportedTableError
from carriers.iceberg.carrier import IcebergCarrier
from tests.iceberg.conftest import PROGRAM, local, rows


@pytest.fixture
def undigested(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """No content digest (refused as ``unsupported_table``, so ``readers_agree`` runs); counts ``_plans`` calls."""
    def none(*_a: Any, **_k: Any) -> Any:
        raise UnsupportedTableError("test: no digest")

    monkeypatch.setattr(IcebergCarrier, "file_content_digests", none)
    calls: list[int] = []
    plans = content._plans

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return plans(*a, **k)

    monkeypatch.setattr(content, "_plans", counted)
    return calls


def _add_copy(table: Table, record_count: int) -> None:
    """Commit (fast append) a copy of the table's first data file (3 rows) whose entry says ``record_count``."""
    source = local(next(iter(table.scan().plan_files())).file.file_path)
    copy = source.with_name("zz-copy.parquet")
    shutil.copy(source, copy)
    entry = IcebergDataFile.from_args(
        _table_format_version=2, content=DataFileContent.DATA, file_path=f"file://{copy}",
        file_format=FileFormat.PARQUET, partition=Record(), record_count=record_count,
        file_size_in_bytes=copy.stat().st_size, spec_id=0)
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        append.append_data_file(entry)


def test_no_delete_file_records_without_reading_the_manifests_again(table: Table, undigested: list[int]) -> None:
    table.append(rows(0))
    _add_copy(table, 3)
    carrier = IcebergCarrier(table, catalog_name="attesttest")
    result = carrier.record(model="m", program_hash=PROGRAM)
    assert result.attested_version is not None and result.content is None
    assert undigested == []  # the listing's facts were used: no second planning


def test_a_file_of_record_count_0_holding_rows_is_still_refused(table: Table, undigested: list[int]) -> None:
    table.append(rows(0))
    _add_copy(table, 0)
    carrier = IcebergCarrier(table, catalog_name="attesttest")
    with pytest.raises(AttestError) as raised:
        carrier.record(model="m", program_hash=PROGRAM)
    assert raised.value.code == Code.TABLE_INCONSISTENT, raised.value
    assert undigested == []
    assert carrier.read() is None  # nothing recorded
