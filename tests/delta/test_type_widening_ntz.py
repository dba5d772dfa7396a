"""Delta type widening of a date column to ``timestamp_ntz`` (docs/content-digest.md, "Delta type widening"; issue
32): Delta requires the ``timestampNtz`` table feature for it, so the widening adds that reader feature too
(delta-spark 4.4 refuses the ALTER without it; tests/spark/test_type_widening_delta.py measures Spark's own). A
rewrite after it verifies by content, naming the widening — it was ``reader_view_changed`` ("reader_features
changed") — while another reader feature added beside it, ``timestampNtz`` added without a widening to
timestamp_ntz, or a partition value moved stay refused. Hand-made widenings of a delta-rs table, as Spark writes
them."""

from __future__ import annotations

import datetime
import json
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, log_state, verify, write_commit
from tests.adversarial.test_content_rewrite_delta import rewrite
from tests.delta.test_type_widening_nested import _change, _compacted

DAYS = (datetime.date(2024, 1, 5), datetime.date(2024, 1, 6))


def _dated_table(path: Path) -> None:
    """Two appends to each of two date partitions, attested (reader version 1: no reader feature)."""
    for day in DAYS:
        for start in (0, 100):
            write_deltalake(str(path), pa.table({"id": pa.array(range(start, start + 3), pa.int32()),
                                                 "d": pa.array([day] * 3, pa.date32()),
                                                 "p": pa.array([day] * 3, pa.date32())}),
                            mode="append", partition_by=["p"])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc


def _widen(path: Path, columns: dict[str, tuple[str, str]], features: list[str]) -> None:
    """One commit as Spark's ``CHANGE COLUMN`` writes it after ``delta.feature.timestampNtz = supported`` (and the
    widening enabled, then dropped): the schema's columns retyped (``columns``: name → (from, to)), with their
    ``delta.typeChanges``, and the protocol naming ``features`` as reader features."""
    meta = json.loads(json.dumps(log_state(path).metadata))
    schema = json.loads(meta["schemaString"])
    for field in schema["fields"]:
        if field["name"] in columns:
            field["type"] = columns[field["name"]][1]
            _change(field, *columns[field["name"]])
    meta["schemaString"] = json.dumps(schema)
    writer = [*features, "invariants", "appendOnly"]  # as after Spark's DROP FEATURE typeWidening (measured)
    write_commit(path, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                                      "writerFeatures": writer}}, {"metaData": meta}])


def _rewrite(path: Path, spelled: dict[str, str], schema: pa.Schema) -> None:
    """Each partition's files compacted into one, read as ``schema``; ``spelled``: each partition's new value."""
    # delta-rs 1.6 cannot open the table between the widening and the rewrite (it parses no '2024-01-05' as a
    # timestamp_ntz partition value, measured; Spark reads it as midnight): the latest version from the log listing.
    def last(p: Path) -> int:
        return max(int(f.stem) for f in (p / "_delta_log").glob("*.json"))

    with mock.patch("tests.adversarial.conftest.latest", last), \
            mock.patch("tests.adversarial.test_content_rewrite_delta.latest", last):
        adds = log_state(path).adds
        by_p: dict[str, list[str]] = {}
        for rel, add in adds.items():
            by_p.setdefault(str((add.get("partitionValues") or {}).get("p")), []).append(rel)
        for p, rels in sorted(by_p.items()):  # one rewrite a partition, into a folder named without ':' or ' '
            rewrite(path, sorted(rels), [(_compacted(path, schema, sorted(rels)), {"p": spelled[p]})],
                    same_path=f"p={p}-wide/part-00000-{uuid.uuid4()}.c000.snappy.parquet")


NTZ = pa.schema([("id", pa.int32()), ("d", pa.timestamp("us"))])
HONEST = {"2024-01-05": "2024-01-05 00:00:00", "2024-01-06": "2024-01-06 00:00:00"}


def test_a_rewrite_after_a_date_to_timestamp_ntz_widening_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _dated_table(path)
    _widen(path, {"d": ("date", "timestamp_ntz"), "p": ("date", "timestamp_ntz")}, ["timestampNtz"])
    _rewrite(path, HONEST, NTZ)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at versions 6, 7: 4 files → 2, same "
                                                 "rows "
                                                 "read as the types widened since the attestation"), doc
    assert sorted(doc["content"]["widened"]) == ["d: date → timestamp_ntz", "p: date → timestamp_ntz"], doc


@pytest.mark.parametrize("attack", ["partition value moved", "another reader feature", "no widening to ntz"])
def test_what_a_timestamp_ntz_widening_does_not_carry(tmp_path: Path, attack: str) -> None:
    """A partition's rows committed an hour later; ``deletionVectors`` enabled beside ``timestampNtz``; the
    ``timestampNtz`` feature added beside an int → long widening (no timestamp_ntz column needs it)."""
    path = tmp_path / "t"
    _dated_table(path)
    spelled: dict[str, str] = dict(HONEST)
    schema: Any = NTZ
    if attack == "partition value moved":
        spelled["2024-01-06"] = "2024-01-06 01:00:00"
        _widen(path, {"d": ("date", "timestamp_ntz"), "p": ("date", "timestamp_ntz")}, ["timestampNtz"])
    elif attack == "another reader feature":
        _widen(path, {"d": ("date", "timestamp_ntz"), "p": ("date", "timestamp_ntz")},
               ["deletionVectors", "timestampNtz"])
    else:
        _widen(path, {"id": ("integer", "long")}, ["timestampNtz"])
        spelled = {p: p for p in HONEST}
        schema = pa.schema([("id", pa.int64()), ("d", pa.date32())])
    _rewrite(path, spelled, schema)
    rc, doc = verify(str(path), "--level", "bytes")
    want = "content_changed" if attack == "partition value moved" else "reader_view_changed"
    assert rc != 0 and codes(doc) == [want], doc
