"""10,000 files: the attestation adds a bounded number of bytes to metadata.json and still verifies."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import Table

from attest.verify.table import verify_table
from carriers.iceberg.carrier import SUMMARY_BUDGET, IcebergCarrier, attest_after_write
from carriers.properties import KEY_OUTPUTS_COUNT, PREFIX, attestation_keys
from tests.iceberg.conftest import PROGRAM, local, rows

FILES = 10_000


def add_tiny_files(table: Table, directory: Path, count: int) -> None:
    """``count`` one-row Parquet files (same bytes, distinct names) committed in one add_files snapshot."""
    directory.mkdir(parents=True)
    template = io.BytesIO()
    pq.write_table(rows(0, 1), template)
    data = template.getvalue()
    paths = []
    for i in range(count):
        path = directory / f"part-{i:05d}.parquet"
        # Writing one template's bytes is ~100x faster than 10,000 Parquet writes; the table tracks names.
        path.write_bytes(data)
        paths.append(f"file://{path}")
    table.add_files(paths, check_duplicate_files=False)


@pytest.mark.slow
def test_ten_thousand_files_summary_growth_is_bounded(table: Table, carrier: IcebergCarrier, tmp_path: Path) -> None:
    add_tiny_files(table, tmp_path / "warehouse" / "ns" / "t" / "data", FILES)
    before = local(table.metadata_location).stat().st_size
    result = attest_after_write(table, model="orders", program_hash=PROGRAM)
    after = local(table.metadata_location).stat().st_size
    snap = table.current_snapshot()
    assert snap is not None and snap.summary is not None
    keys = attestation_keys(snap.summary.additional_properties)
    assert keys[KEY_OUTPUTS_COUNT] == str(len(carrier.list_files()))
    assert not any(k.startswith(PREFIX + "output_hashes") for k in keys)
    assert len(json.dumps(keys)) <= SUMMARY_BUDGET
    # The whole metadata.json growth (snapshot entry, log entries, Iceberg's own summary fields included).
    assert after - before <= SUMMARY_BUDGET, after - before
    assert result.manifest is not None and len(result.manifest.output_hashes or ()) == FILES
    att = carrier.read()
    assert att is not None and len(att.document["output_hashes"]) == FILES
    report = verify_table(carrier, level="files")
    assert report.passed and report.files_checked == FILES, report.human()
    report = verify_table(carrier)
    assert report.passed and report.level == "bytes", report.human()
