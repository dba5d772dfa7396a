"""A carrier kept open — in a notebook, a service, an audit — answers every verification from the table as it is at
that moment, never from what it read before: later commits and metadata rewritten in place are seen."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.carrier import attest_after_write as attest_delta
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.carrier import attest_after_write as attest_iceberg
from tests.adversarial.conftest import PROGRAM
from tests.iceberg.conftest import CATALOG, catalog_properties, rows


def _codes(report: object) -> list[str]:
    return [p.code.value for p in report.errors]  # type: ignore[attr-defined]


def test_a_kept_iceberg_carrier_sees_a_later_append(tmp_path: Path) -> None:
    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=rows(0).schema)
    table.append(rows(0))
    attest_iceberg(table, model="orders", program_hash=PROGRAM)
    carrier = IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG)
    assert verify_table(carrier).passed
    catalog.load_table("ns.t").append(rows(10))  # another writer, another handle
    report = verify_table(carrier)
    assert not report.passed and _codes(report) == ["stale"], report.human()


def test_a_kept_delta_carrier_sees_a_commit_rewritten_in_place(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    attest_delta(str(path), model="orders", program_hash=PROGRAM)
    carrier = DeltaCarrier(str(path))
    assert verify_table(carrier).passed
    commit = path / "_delta_log" / "00000000000000000000.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
    for action in actions:
        if "add" in action:  # forged statistics: a filter on id > 3 would now skip the file
            stats = json.loads(action["add"]["stats"])
            stats["maxValues"]["id"] = 3 if stats["maxValues"]["id"] != 3 else 2
            action["add"]["stats"] = json.dumps(stats)
    commit.write_text("".join(json.dumps(a) + "\n" for a in actions))
    report = verify_table(carrier)
    assert not report.passed and "reader_view_changed" in _codes(report), report.human()
