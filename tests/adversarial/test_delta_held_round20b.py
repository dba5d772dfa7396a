"""Round 20b (Delta), tried and held (measured with delta-spark 4.4 / Spark 4.1 and delta-rs 1.6;
``test_spark_delta_round20b.py``):

- a ``timestamp_ntz`` column's statistics spelled with a zone (``2024-01-05T10:00:00.000Z``,
  ``2024-01-05 10:00:00 UTC``): delta-rs reads the wall-clock time (the zone dropped), Spark none of it (its NTZ parser
  takes no zone: a bound shifted five hours skipped no file in a UTC or a New York session). Spelled over the rows'
  own times: recorded, VERIFIED; shifted: delta-rs skips by it, ``table_inconsistent`` (an offset,
  ``+05:00``, delta-rs converts to UTC: the same);
- a v2 checkpoint (``v2Checkpoint``) whose top-level file or sidecar disagrees with the JSON commits on ``protocol``
  or ``metaData`` (a property, the schema, the partition columns, a reader feature; a sidecar holding a second
  ``metaData`` or ``protocol`` row): ``table_inconsistent`` (the checkpoint is not the replay of the commits).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, edit_adds, log_state, verify
from tests.adversarial.test_delta_v2_sidecars import _ADD, v2_table

NTZ_ROWS = pa.table(
    {
        "id": pa.array([1, 2], pa.int64()),
        "t": pa.array([dt.datetime(2024, 1, 5, 10), dt.datetime(2024, 1, 5, 11)], pa.timestamp("us")),
    }
)
# (minimum, maximum) of t spelled with a zone: over the rows' own wall-clock times
ZONED_ALIKE = [
    ("2024-01-05T10:00:00.000Z", "2024-01-05T11:00:00.000Z"),
    ("2024-01-05 10:00:00 UTC", "2024-01-05 11:00:00 UTC"),
]
# ... and shifted: delta-rs skips by them (Spark reads none)
ZONED_SHIFTED = [
    ("2024-01-05T15:00:00.000Z", "2024-01-05T16:00:00.000Z"),
    ("2024-01-05T10:00:00+05:00", "2024-01-05T11:00:00+05:00"),
]


def ntz_table(path: Path, lo: str, hi: str) -> Path:
    write_deltalake(str(path), NTZ_ROWS)

    def forge(add: dict[str, Any]) -> None:
        stats = json.loads(add["stats"])
        stats["minValues"]["t"], stats["maxValues"]["t"] = lo, hi
        add["stats"] = json.dumps(stats)

    edit_adds(path / commit_name(0), forge)
    return path


def delta_rs_bounds(path: Path) -> tuple[Any, Any]:
    add = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()[0]
    return add["min.t"], add["max.t"]


@pytest.mark.parametrize(("lo", "hi"), ZONED_ALIKE)
def test_ntz_bounds_spelled_with_a_zone_over_the_rows_verify(tmp_path: Path, lo: str, hi: str) -> None:
    path = ntz_table(tmp_path / "t", lo, hi)
    assert delta_rs_bounds(path) == (dt.datetime(2024, 1, 5, 10), dt.datetime(2024, 1, 5, 11))
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0, doc


@pytest.mark.parametrize(("lo", "hi"), ZONED_SHIFTED)
def test_ntz_bounds_shifted_from_the_rows_are_not_recorded(tmp_path: Path, lo: str, hi: str) -> None:
    path = ntz_table(tmp_path / "t", lo, hi)
    assert delta_rs_bounds(path)[0] != dt.datetime(2024, 1, 5, 10)  # delta-rs skips by another time
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
    assert caught.value.code == "table_inconsistent", caught.value


def _top(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    top = next((path / "_delta_log").glob("*.checkpoint.*.json"))
    actions = [json.loads(line) for line in top.read_text().splitlines()]
    for action in actions:
        edit(action)
    top.write_text("".join(json.dumps(a) + "\n" for a in actions))


def _schema(action: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> None:
    if "metaData" in action:
        schema = json.loads(action["metaData"]["schemaString"])
        edit(schema)
        action["metaData"]["schemaString"] = json.dumps(schema)


def _property(a: dict[str, Any]) -> None:
    if "metaData" in a:
        a["metaData"]["configuration"]["delta.dataSkippingNumIndexedCols"] = "0"


def _type_changes(a: dict[str, Any]) -> None:
    _schema(
        a, lambda s: s["fields"][1].update(metadata={"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]})
    )


def _collation(a: dict[str, Any]) -> None:
    _schema(a, lambda s: s["fields"][2].update(metadata={"__COLLATIONS": {"w": "spark.UTF8_LCASE"}}))


def _partitions(a: dict[str, Any]) -> None:
    if "metaData" in a:
        a["metaData"]["partitionColumns"] = []


def _feature(a: dict[str, Any]) -> None:
    if "protocol" in a:
        a["protocol"]["readerFeatures"] = ["timestampNtz", "v2Checkpoint"]
        a["protocol"]["writerFeatures"] = ["timestampNtz", "v2Checkpoint"]


@pytest.mark.parametrize("edit", [_property, _type_changes, _collation, _partitions, _feature])
def test_a_v2_checkpoint_disagreeing_with_the_commits_gets_no_verdict(tmp_path: Path, edit: Any) -> None:
    path = v2_table(tmp_path)
    _top(path, edit)
    rc, doc = verify(str(path))
    assert rc == 1 and "table_inconsistent" in codes(doc), doc


_META = pa.struct(
    [
        ("id", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", pa.map_(pa.string(), pa.string()))])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", pa.map_(pa.string(), pa.string())),
        ("createdTime", pa.int64()),
    ]
)
_PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)


@pytest.mark.parametrize("kind", ["metaData", "protocol"])
def test_a_v2_sidecar_holding_another_metadata_or_protocol_gets_no_verdict(tmp_path: Path, kind: str) -> None:
    path = v2_table(tmp_path)
    sidecar = next((path / "_delta_log" / "_sidecars").iterdir())
    rows = pq.read_table(sidecar).to_pylist()
    meta = log_state(path).metadata
    if kind == "metaData":
        conf = {**(meta.get("configuration") or {}), "delta.dataSkippingNumIndexedCols": "0"}
        extra = {
            "id": meta["id"],
            "format": {"provider": "parquet", "options": []},
            "schemaString": meta["schemaString"],
            "partitionColumns": meta["partitionColumns"],
            "configuration": list(conf.items()),
            "createdTime": meta.get("createdTime"),
        }
        schema = pa.schema([("add", _ADD), ("metaData", _META)])
    else:
        features = ["deletionVectors", "v2Checkpoint"]
        extra = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features, "writerFeatures": features}
        schema = pa.schema([("add", _ADD), ("protocol", _PROTOCOL)])
    pq.write_table(pa.Table.from_pylist([*rows, {kind: extra}], schema=schema), sidecar)

    def resize(action: dict[str, Any]) -> None:
        if "sidecar" in action:
            action["sidecar"]["sizeInBytes"] = sidecar.stat().st_size

    _top(path, resize)
    rc, doc = verify(str(path))
    assert rc == 1 and "table_inconsistent" in codes(doc), doc
