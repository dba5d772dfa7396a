"""Delta type widening of nested fields and partition columns (docs/content-digest.md, "Delta type widening";
issue 32): a struct's field, a list's element, a map's key or value, and a partition column widened, then a rewrite
writing the rows as the wider types. The removed files, read again from their attested bytes as the wider types
(partition values cast too), hold the added files' rows: VERIFIED, naming the widened fields; a changed value or
partition value, or a nested change that is no widening, is still refused. Hand-made widenings of a delta-rs table,
as Spark's ``ALTER TABLE … CHANGE COLUMN`` writes them (tests/spark/test_type_widening_delta.py measures Spark's)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, codes, log_state, metadata_commit, verify
from tests.adversarial.test_content_rewrite_delta import rewrite

NARROW = pa.schema([("id", pa.int32()), ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
                    ("a", pa.list_(pa.field("element", pa.int32()))), ("mp", pa.map_(pa.int16(), pa.int32()))])
WIDE = pa.schema([("id", pa.int32()), ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
                  ("a", pa.list_(pa.field("element", pa.int64()))), ("mp", pa.map_(pa.int32(), pa.float64()))])
NESTED = ["st.x: integer → long", "a.element: integer → long", "mp.key: short → integer",
          "mp.value: integer → double"]


def _nested_table(path: Path) -> None:
    for start in (0, 10):
        write_deltalake(str(path), pa.table({
            "id": pa.array(range(start, start + 4), pa.int32()),
            "st": pa.array([{"x": i, "y": f"y{i}"} for i in range(start, start + 3)] + [None],
                              NARROW.field("st").type),
            "a": pa.array([[start, -start], None, [], [2147483647]], NARROW.field("a").type),
            "mp": pa.array([[(start, start * 3)], [], None, [(-32768, -2147483648)]], NARROW.field("mp").type),
        }), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc


def _change(field: dict[str, Any], from_type: str, to_type: str, field_path: str | None = None) -> None:
    change: dict[str, Any] = {"toType": to_type, "fromType": from_type}
    if field_path is not None:
        change["fieldPath"] = field_path
    field.setdefault("metadata", {}).setdefault("delta.typeChanges", []).append(change)


def _widen_nested(meta: dict[str, Any], *, x_type: str = "long") -> None:
    """The metaData Spark writes for ``CHANGE COLUMN st.x TYPE BIGINT``, ``a.element``, ``mp.key``, ``mp.value``
    (delta-spark 4.4: a struct field's change on the field, an element's / key's / value's on the column with its
    ``fieldPath``)."""
    schema = json.loads(meta["schemaString"])
    fields = {f["name"]: f for f in schema["fields"]}
    x = fields["st"]["type"]["fields"][0]
    x["type"] = x_type
    _change(x, "integer", x_type)
    fields["a"]["type"]["elementType"] = "long"
    _change(fields["a"], "integer", "long", "element")
    fields["mp"]["type"]["keyType"], fields["mp"]["type"]["valueType"] = "integer", "double"
    _change(fields["mp"], "short", "integer", "key")
    _change(fields["mp"], "integer", "double", "value")
    meta["schemaString"] = json.dumps(schema)


def _compacted(path: Path, schema: pa.Schema, rels: list[str] | None = None) -> pa.Table:
    rows = pa.concat_tables([pq.read_table(path / r) for r in rels or sorted(log_state(path).adds)])
    return rows.cast(schema)


def _engine_rows(path: Path) -> list[Any]:
    return sorted(json.dumps(r, sort_keys=True, default=str)
                  for r in pa.table(DeltaTable(str(path)).to_pyarrow_table()).to_pylist())


def test_a_rewrite_after_nested_widenings_verifies_naming_them(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _nested_table(path)
    metadata_commit(path, _widen_nested)
    rewrite(path, sorted(log_state(path).adds), [(_compacted(path, WIDE), {})])
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 4: 2 files → 1, same rows "
                                                 "read as the types widened since the attestation ("), doc
    assert doc["content"]["widened"] == NESTED, doc


def _set_x(rows: pa.Table, value: int) -> pa.Table:
    st = rows.column("st").to_pylist()
    st[0] = {**st[0], "x": value}
    return rows.set_column(1, "st", pa.array(st, rows.schema.field("st").type))


def _set_value(rows: pa.Table, value: float) -> pa.Table:
    mp = rows.column("mp").to_pylist()
    mp[0] = [(mp[0][0][0], value)]
    return rows.set_column(3, "mp", pa.array(mp, rows.schema.field("mp").type))


@pytest.mark.parametrize("attack", ["struct field changed", "map value changed", "not a widening"])
def test_what_a_nested_widening_does_not_carry(tmp_path: Path, attack: str) -> None:
    """A changed nested value beside honest widenings, or a nested type change Delta does not allow (long → integer
    is a narrowing): content_changed."""
    path = tmp_path / "t"
    _nested_table(path)
    change: Callable[[pa.Table], pa.Table] = {
        "struct field changed": lambda t: _set_x(t, 999),
        "map value changed": lambda t: _set_value(t, 0.5),
        "not a widening": lambda t: t,
    }[attack]
    if attack == "not a widening":
        metadata_commit(path, lambda meta: _widen_nested(meta, x_type="string"))
        schema = pa.schema([WIDE.field("id"), pa.field("st", pa.struct([("x", pa.string()), ("y", pa.string())])),
                            WIDE.field("a"), WIDE.field("mp")])
    else:
        metadata_commit(path, _widen_nested)
        schema = WIDE
    rewrite(path, sorted(log_state(path).adds), [(change(_compacted(path, schema)), {})])
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc != 0 and not doc["verdict"].startswith("VERIFIED") and codes(doc) == ["content_changed"], doc
    # The refusal names every changed type, list elements and map keys and values too.
    message = doc["errors"][0]["message"]
    x = "st.x: integer → string (type changed)" if attack == "not a widening" else "st.x: integer → long (widened)"
    assert all(t in message for t in (x, "a.element: integer → long (widened)", "mp.key: short → integer (widened)",
                                      "mp.value: integer → double (widened)")), message


def _partitioned_table(path: Path) -> None:
    for p in (1, 2):
        write_deltalake(str(path), pa.table({"id": pa.array(range(p * 10, p * 10 + 3), pa.int32()),
                                             "p": pa.array([p] * 3, pa.int32())}),
                        mode="append", partition_by=["p"])
        write_deltalake(str(path), pa.table({"id": pa.array([p * 100], pa.int32()), "p": pa.array([p], pa.int32())}),
                        mode="append", partition_by=["p"])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["content_digest_bound"] is True, doc


def _widen_partition(meta: dict[str, Any]) -> None:
    schema = json.loads(meta["schemaString"])
    for field in schema["fields"]:
        if field["name"] in ("p", "id"):
            field["type"] = "long"
            _change(field, "integer", "long")
    meta["schemaString"] = json.dumps(schema)


def _partition_rewrite(path: Path, values: dict[str, str]) -> None:
    """Each partition's files compacted into one, written as the wider type; ``values``: the partition value each
    new file is committed under (``{"1": "1", "2": "2"}``: honest)."""
    adds = log_state(path).adds
    by_p: dict[str, list[str]] = {}
    for rel, add in adds.items():
        by_p.setdefault(str((add.get("partitionValues") or {}).get("p")), []).append(rel)
    wide = pa.schema([("id", pa.int64())])
    new: list[tuple[pa.Table, dict[str, str | None]]] = [(_compacted(path, wide, sorted(rels)), {"p": values[p]})
           for p, rels in sorted(by_p.items())]
    rewrite(path, sorted(adds), new)


@pytest.mark.parametrize("attack", [None, "partition value changed"])
def test_a_widened_partition_column(tmp_path: Path, attack: str | None) -> None:
    """A partition column widened (int → long, as id): the removed files' partition values are read again as the
    wider type. Honest: VERIFIED naming both; a partition value moved (the rows of p=2 committed under p=3): not."""
    path = tmp_path / "t"
    _partitioned_table(path)
    before = _engine_rows(path)
    metadata_commit(path, _widen_partition)
    _partition_rewrite(path, {"1": "1", "2": "3" if attack else "2"})
    rc, doc = verify(str(path), "--level", "bytes")
    if attack:
        assert rc != 0 and codes(doc) == ["content_changed"], doc
        return
    assert _engine_rows(path) == before  # delta-rs reads the same values, as longs
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 6: 4 files → 2, same rows "
                                                 "read as the types widened since the attestation (id: integer → "
                                                 "long, p: integer → long)"), doc


def _feature_on(path: Path) -> None:
    """What Spark's ``SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')`` then ``CHANGE COLUMN id TYPE BIGINT``
    commit: the typeWidening reader and writer feature, then the wider type (the files keep their INT32 values)."""
    from tests.adversarial.conftest import write_commit
    from tests.adversarial.test_delta_protocol_view import protocol

    write_commit(path, [protocol(3, 7, ["typeWidening"], ["typeWidening"])])
    metadata_commit(path, _widen_partition)


@pytest.mark.parametrize("attack", [None, "value changed"])
def test_a_table_attested_with_the_type_widening_feature_on(tmp_path: Path, attack: str | None) -> None:
    """It was table_unreadable (delta-rs 1.6 reads no deletion vector of a table with the typeWidening reader feature,
    and the digest asked it for them). Now, with no deletion vector in the log, the files are digested as readers
    get them — the INT32 ids as longs — so the attestation records the widened rows, and a rewrite writing them as
    longs verifies by its recorded digests alone (no re-read); a changed value is content_changed."""
    from carriers.delta.carrier import DeltaCarrier

    path = tmp_path / "t"
    for p in (1, 2):
        write_deltalake(str(path), pa.table({"id": pa.array(range(p * 10, p * 10 + 3), pa.int32()),
                                             "p": pa.array([p] * 3, pa.int32())}),
                        mode="append", partition_by=["p"])
    _feature_on(path)
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert result.attested_version == "3"
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes") and doc["content_digest_bound"], doc
    values = {"1": "1", "2": "2"}
    if attack:
        adds = log_state(path).adds
        rels = sorted(rel for rel, add in adds.items() if add["partitionValues"]["p"] == "1")
        rows = _compacted(path, pa.schema([("id", pa.int64())]), rels)
        rows = rows.set_column(0, "id", pa.array([999, *rows.column("id").to_pylist()[1:]], pa.int64()))
        rewrite(path, rels, [(rows, {"p": "1"})])
    else:
        _partition_rewrite(path, values)
    rc, doc = verify(str(path), "--level", "bytes")
    if attack:
        assert rc != 0 and codes(doc) == ["content_changed"], doc
    else:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 5: 2 files → 2, same "
                                                     "rows; bytes"), doc
        assert "widened" not in doc["content"], doc  # the recorded digests are of the widened rows already


def test_record_after_a_widening_digests_the_widened_rows(tmp_path: Path) -> None:
    """Attested before the widening (INT32 digests), then the feature on and id, p widened, then `record`: an
    ordinary attestation (the schema changed: a carry-forward needs the attested reader view), whose digests are of
    the rows as the version's readers get them, longs — it reused the narrower recorded digests, so the rewrite
    Spark's OPTIMIZE then writes (longs) was content_changed. Now it verifies by the recorded digests."""
    from carriers.delta.carrier import DeltaCarrier

    path = tmp_path / "t"
    _partitioned_table(path)
    _feature_on(path)
    result = DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert result.continues is None
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes"), doc
    _partition_rewrite(path, {"1": "1", "2": "2"})
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version 8: 4 files → 2, same rows; "
                                                 "bytes"), doc
