"""Round 20 (Delta): variants tried and held — measured in delta-rs 1.6 and delta-spark 4.4 (Spark's side in
``test_spark_delta_round20.py``), each pinned at the verdict it gets.

- a ``float`` partition value written just below the midpoint of two floats (``1.0000001788139343261718749``: its
  nearest double is the midpoint, so a reader rounding through a double would take the upper float), ``decimal``
  values spelled ``0100.00``, ``-0.00``, ``.00``: both engines read the attested value, VERIFIED (``1e2``, ``100``,
  ``-0`` for a decimal and ``1e0`` for a long: Spark reads them, delta-rs refuses the table — ``table_unreadable``);
- float partition values respelled by a ``dataChange: false`` rewrite that both engines read alike: ``nan``, ``NAN``,
  ``+NaN`` for NaN, ``INF``, ``infinity``, ``+inf``, ``Infinity`` for +∞, ``-INF``, ``-infinity``, ``-1e400`` for −∞:
  VERIFIED (``+nan`` / ``-nan`` are not: test_delta_round20.py). ``-NaN`` both read as NaN, but delta-rs's NaN keeps
  the sign bit, so the digest differs: ``content_changed`` (a refusal, not an over-claim);
- a rewrite whose new file holds the attested rows plus one more (777), deleted by a deletion vector of its own, with
  statistics exact over the stored rows (``maxValues`` 777, ``tightBounds`` true, absent or false): delta-rs reads the
  attested rows, and Spark reads them too and answers ``COUNT`` / ``MIN`` / ``MAX`` from them, not from the file's
  statistics (it does not answer from those of a file with a vector): VERIFIED;
- spellings a partition value ``timestamp`` that delta-rs refuses (``2024-01-05``, ``2024-01-05 10``,
  ``2024-01-05T10``, a trailing blank, ``+00`` or ``GMT`` as the zone): ``table_unreadable``, never VERIFIED;
- a rewrite's add whose ``partitionValues`` lack the column (null to both), name it under its logical name in a
  column-mapped table, in another case, or name a data column: delta-rs reads null (``content_changed``) or refuses
  the table (``Partition column … not found in schema``: ``table_unreadable``);
- a rewrite changing a row that also carries the table's own ``metaData`` or ``protocol`` (unchanged): not a rewrite,
  ``compacted`` (NOT VERIFIED); one carrying a ``txn`` or ``domainMetadata``: a rewrite, its rows judged
  (``content_changed``).
"""

from __future__ import annotations

import decimal
import json
import math
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name, z85_encode
from tests.adversarial.conftest import PROGRAM, codes, latest, log_state, verify
from tests.adversarial.test_delta_partition_spellings import STAMP, attested, delta_rs, rewrite
from tests.delta.dv import dv_file

# (the attested value, spellings both engines read as it)
FLOATS_ALIKE: list[tuple[float, list[str]]] = [
    (float("nan"), ["nan", "NAN", "+NaN"]),
    (float("inf"), ["INF", "infinity", "+inf", "Infinity"]),
    (float("-inf"), ["-INF", "-infinity", "-1e400"]),
]


# (the attested column, a spelling both engines read as its value): a float32 written just below the midpoint of two
# floats whose nearest double is that midpoint (a reader rounding through a double would take the upper float: neither
# does), a decimal with a leading zero, a negative zero or no integer digit.
OTHER_ALIKE: list[tuple[pa.Array, str]] = [
    (pa.array([1.00000011920928955078125], pa.float32()), "1.0000001788139343261718749"),
    (pa.array([decimal.Decimal("100.00")], pa.decimal128(10, 2)), "0100.00"),
    (pa.array([decimal.Decimal("0.00")], pa.decimal128(10, 2)), "-0.00"),
    (pa.array([decimal.Decimal("0.00")], pa.decimal128(10, 2)), ".00"),
]


@pytest.mark.parametrize(("values", "spelling"), OTHER_ALIKE)
def test_other_spellings_both_engines_read_alike_verify(tmp_path: Path, values: pa.Array, spelling: str) -> None:
    path = attested(tmp_path / "t", values)
    rewrite(path, [spelling])
    assert delta_rs(path) == values.to_pylist()
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"], doc


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize(("value", "spelling"), [(v, s) for v, spellings in FLOATS_ALIKE for s in spellings])
def test_float_spellings_both_engines_read_alike_verify(tmp_path: Path, value: float, spelling: str) -> None:
    path = attested(tmp_path / "t", pa.array([value]))
    rewrite(path, [spelling])
    (read,) = delta_rs(path)
    assert _same(read, value)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 0 and doc["passed"], doc


def test_a_negative_nan_is_a_changed_digest(tmp_path: Path) -> None:
    path = attested(tmp_path / "t", pa.array([float("nan")]))
    rewrite(path, ["-NaN"])
    (read,) = delta_rs(path)
    assert math.isnan(read) and math.copysign(1.0, read) == -1.0  # the sign bit kept
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["content_changed"], doc


@pytest.mark.parametrize(
    "spelling",
    [
        "2024-01-05",
        "2024-01-05 10",
        "2024-01-05T10",
        "2024-01-05 10:00:00 ",
        "2024-01-05T10:00:00+00",
        "2024-01-05T10:00:00 GMT",
    ],
)
def test_timestamp_spellings_delta_rs_refuses_are_unreadable(tmp_path: Path, spelling: str) -> None:
    path = attested(tmp_path / "t", STAMP, "2024-01-05T10:00:00.000000Z")
    rewrite(path, [spelling])
    with pytest.raises(Exception, match="Failed to parse value"):
        delta_rs(path)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 2 and codes(doc) == ["table_unreadable"], doc


def vector_table(path: Path, tight: bool | None) -> Path:
    """[1, 2, 3] attested in a table with deletion vectors, then a rewrite adding a file of [1, 2, 3, 777] whose own
    vector deletes 777, its statistics exact over the stored rows (``tight``: its ``tightBounds``, None: absent)."""
    write_deltalake(
        str(path),
        pa.table({"v": pa.array([1, 2, 3], pa.int64())}),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rel, add = sorted(log_state(path).adds.items())[0]
    new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"v": pa.array([1, 2, 3, 777], pa.int64())}), path / new)
    u = uuid.uuid4()
    (path / "ab").mkdir()
    data, offset, size = dv_file([3])
    (path / f"ab/deletion_vector_{u}.bin").write_bytes(data)
    stats: dict[str, Any] = {"numRecords": 4, "minValues": {"v": 1}, "maxValues": {"v": 777}, "nullCount": {"v": 0}}
    if tight is not None:
        stats["tightBounds"] = tight
    vector = {
        "storageType": "u",
        "pathOrInlineDv": "ab" + z85_encode(u.bytes),
        "offset": offset,
        "sizeInBytes": size,
        "cardinality": 1,
    }
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"operation": "OPTIMIZE"}},
        {
            "remove": {
                "path": rel,
                "dataChange": False,
                "deletionTimestamp": 1,
                "extendedFileMetadata": True,
                "partitionValues": {},
                "size": add["size"],
            }
        },
        {
            "add": {
                "path": new,
                "partitionValues": {},
                "size": (path / new).stat().st_size,
                "modificationTime": 2,
                "dataChange": False,
                "stats": json.dumps(stats),
                "deletionVector": vector,
            }
        },
    ]
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return path


@pytest.mark.parametrize("tight", [True, None, False])
def test_a_rewrite_adding_a_vector_to_its_own_file_verifies(tmp_path: Path, tight: bool | None) -> None:
    path = vector_table(tmp_path / "t", tight)
    read = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("select v from t").read_all())
    assert sorted(read.column("v").to_pylist()) == [1, 2, 3]
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def _partition_rewrite(path: Path, edit: Any) -> None:
    """An OPTIMIZE-like commit: each live file copied to a new path, its add's partition values edited by ``edit``."""
    from urllib.parse import unquote

    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}}]
    for raw, add in sorted(log_state(path).adds.items()):
        rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        shutil.copy(path / unquote(raw), path / rel)
        actions.append(
            {
                "remove": {
                    "path": raw,
                    "dataChange": False,
                    "deletionTimestamp": 1,
                    "extendedFileMetadata": True,
                    "partitionValues": add["partitionValues"],
                    "size": add["size"],
                }
            }
        )
        new = {
            "path": rel,
            "partitionValues": dict(add["partitionValues"]),
            "size": (path / rel).stat().st_size,
            "modificationTime": 2,
            "dataChange": False,
            "stats": add.get("stats"),
        }
        edit(new["partitionValues"])
        actions.append({"add": new})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _logical(values: dict[str, Any]) -> None:
    ((_, value),) = values.items()
    values.clear()
    values["p"] = value


def _upper(values: dict[str, Any]) -> None:
    ((key, value),) = values.items()
    values.clear()
    values[key.upper()] = value


@pytest.mark.parametrize(
    ("mapped", "edit", "code"),
    [
        (False, dict.clear, "content_changed"),  # no value: null to both
        (True, _logical, "table_unreadable"),
        (False, _upper, "table_unreadable"),
        (False, lambda values: values.update(v="5"), "table_unreadable"),  # a data column named
    ],
)
def test_partition_values_keyed_otherwise_are_never_verified(
    tmp_path: Path, mapped: bool, edit: Any, code: str
) -> None:
    path = tmp_path / "t"
    write_deltalake(
        str(path),
        pa.table({"p": pa.array([1, 2], pa.int32()), "v": [10, 20]}),
        partition_by=["p"],
        configuration={"delta.columnMapping.mode": "name"} if mapped else None,
    )
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    _partition_rewrite(path, edit)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and codes(doc) == [code], doc


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ("metaData", "compacted"),
        ("protocol", "compacted"),
        ("txn", "content_changed"),
        ("domainMetadata", "content_changed"),
    ],
)
def test_a_rewrite_carrying_another_action_is_never_verified(tmp_path: Path, extra: str, code: str) -> None:
    """A ``dataChange: false`` commit changing a row (3 → 999) that also carries the table's own ``metaData`` or
    ``protocol`` (no change: not a rewrite, ``compacted`` — NOT VERIFIED, content not carried), or a ``txn`` /
    ``domainMetadata`` (a rewrite still: its rows judged)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2, 3], pa.int64())}))
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    state = log_state(path)
    rel, add = sorted(state.adds.items())[0]
    new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"v": pa.array([1, 2, 999], pa.int64())}), path / new)
    stats = {"numRecords": 3, "minValues": {"v": 1}, "maxValues": {"v": 999}, "nullCount": {"v": 0}}
    bodies: dict[str, Any] = {
        "metaData": state.metadata,
        "protocol": state.protocol,
        "txn": {"appId": "x", "version": 1},
        "domainMetadata": {"domain": "u", "configuration": "{}", "removed": False},
    }
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"operation": "OPTIMIZE"}},
        {extra: bodies[extra]},
        {"remove": {"path": rel, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                    "partitionValues": {}, "size": add["size"]}},
        {"add": {"path": new, "partitionValues": {}, "size": (path / new).stat().st_size, "modificationTime": 2,
                 "dataChange": False, "stats": json.dumps(stats)}},
    ]  # fmt: skip
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    for level in ("schema", "bytes"):
        rc, doc = verify(str(path), "--level", level)
        assert rc == 1 and not doc["passed"] and codes(doc) == [code], doc
