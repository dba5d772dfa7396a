"""Held in Delta attack round 16, second part (rt16e): Spark-versus-delta-rs readings tried and found safe.

- timestamp partition values Spark reads and delta-rs refuses to parse (an hour-only offset ``+05``, a seconds offset
  ``+05:30:15``, zone names ``America/New_York`` / ``GMT`` / ``EST`` / ``UT``, ``GMT+05:00``, a date alone, ``10:00``
  without seconds, a trailing space or ``.``): the rewritten table is unreadable to delta-rs — never VERIFIED;
- spellings both read as one instant (``-0500``, `` -05:00``, `` +0000``, `` UTC``, ``-00:00``, a leading space, ``+``
  before the year, ``2024-1-5``, nanoseconds): VERIFIED, and Spark reads the attested instant
  (test_spark_delta_round16b.py);
- ``domainMetadata`` actions (``delta.clustering``, ``delta.rowTracking``'s high-water mark, a user domain) committed
  after the attested version, and ``tags`` on the files a rewrite adds: no row changes for either engine, VERIFIED.
"""

from __future__ import annotations

import datetime
import json
import shutil
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.adversarial.test_content_rewrite_delta import _adds
from tests.adversarial.test_delta_partition_spellings import attested, delta_rs, rewrite

ZULU = "2024-01-05T10:00:00.000000Z"
TEN = datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.UTC)
UNPARSED = ["2024-01-05T10:00:00+05", "2024-01-05T10:00:00+05:30:15", "2024-01-05T10:00:00America/New_York",
            "2024-01-05T10:00:00 America/New_York", "2024-01-05T10:00:00GMT", "2024-01-05T10:00:00EST",
            "2024-01-05T10:00:00 UT", "2024-01-05T10:00:00GMT+05:00", "2024-01-05", "2024-01-05 10:00",
            "2024-01-05T10:00:00Z ", "2024-01-05T10:00:00.Z"]
# (spelling, the instant both engines read)
ALIKE = [("2024-01-05T05:00:00-0500", TEN), ("2024-01-05T05:00:00 -05:00", TEN), ("2024-01-05 10:00:00 +0000", TEN),
         ("2024-01-05T10:00:00 UTC", TEN), ("2024-01-05T10:00:00-00:00", TEN), (" 2024-01-05T10:00:00Z", TEN),
         ("+2024-01-05T10:00:00Z", TEN), ("2024-1-5T10:00:00Z", TEN), ("2024-01-05T10:00:00.000000000Z", TEN)]
STAMP = pa.array([TEN.replace(tzinfo=None)], pa.timestamp("us", "UTC"))


@pytest.mark.parametrize("spelling", UNPARSED)
def test_a_spelling_delta_rs_cannot_parse_is_never_verified(tmp_path: Path, spelling: str) -> None:
    path = attested(tmp_path / "t", STAMP, ZULU)
    rewrite(path, [spelling])
    rc, doc = verify(str(path), "--level", "schema")
    assert rc != 0 and codes(doc) == ["table_unreadable"], doc


@pytest.mark.parametrize(("spelling", "when"), ALIKE)
def test_a_spelling_both_engines_read_alike_verifies(tmp_path: Path, spelling: str, when: datetime.datetime) -> None:
    path = attested(tmp_path / "t", STAMP, ZULU)
    rewrite(path, [spelling])
    assert delta_rs(path) == [when]
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"], doc


def commit(path: Path, actions: list[dict[str, Any]]) -> None:
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def domain_metadata(path: Path) -> Path:
    """Rows 1, 2, 3 attested at version 0; then the domainMetadata writer feature and three domains committed."""
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    commit(path, [{"commitInfo": {"operation": "SET TBLPROPERTIES"}},
                  {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["domainMetadata"]}}])
    domains = {"delta.clustering": {"clusteringColumns": [["v"]]}, "delta.rowTracking": {"rowIdHighWaterMark": 99},
               "user.x": {"a": 1}}
    commit(path, [{"commitInfo": {"operation": "CLUSTER BY"}},
                  *({"domainMetadata": {"domain": d, "configuration": json.dumps(c), "removed": False}}
                    for d, c in domains.items())])
    return path


def tagged(path: Path) -> Path:
    """Rows 1, 2, 3 attested; then a rewrite copying the file byte for byte to a new path with ``tags``."""
    write_deltalake(str(path), pa.table({"v": [1, 2, 3]}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    (raw, add), = _adds(path).items()
    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    shutil.copy(path / unquote(raw), path / rel)
    commit(path, [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}},
                  {"remove": {"path": raw, "dataChange": False, "deletionTimestamp": 1}},
                  {"add": {**add, "path": rel, "dataChange": False,
                           "tags": {"INSERTION_TIME": "1", "ZCUBE_ID": "x", "MIN_INSERTION_TIME": "0"}}}])
    return path


@pytest.mark.parametrize("make", [domain_metadata, tagged])
def test_domain_metadata_and_tags_change_no_rows(tmp_path: Path, make: Any) -> None:
    path = make(tmp_path / "t")
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2, 3]
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"], doc
