"""A Delta deletion vector's descriptor that Spark resolves to other bytes than delta-rs (redteam13d).

A stored vector (storage type ``u``) names its file by a random folder prefix and a z85 uuid. delta-rs (delta-kernel)
joins the prefix to the table URL, which decodes its percent-escapes; Spark (delta-spark 4.4) builds a Hadoop
``Path`` of it, which reads it as written. Measured: a prefix ``%41`` — delta-rs read
``A/deletion_vector_<uuid>.bin`` (row 1 deleted, the attested rows), Spark ``%41/deletion_vector_<uuid>.bin``
(row 2 deleted): a hand-made ``dataChange: false`` rewrite adding the attested file's bytes with such a vector was
``VERIFIED (content; compacted …, same rows)`` at the bytes level, while Spark read another row (and the file it read is
no file of the version: attest hashed the one delta-rs reads). Now ``path_ambiguous``, and ``record`` refuses it.

A stored vector without an ``offset``: Spark reads it at byte 0 (``offset.getOrElse(0)``) and fails the read
(``DELTA_DELETION_VECTOR_SIZE_MISMATCH``: the version byte is no size), delta-rs at byte 1, the attested rows —
VERIFIED before; ``table_inconsistent`` now.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from attest.errors import CarrierError
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.log import commit_name, z85_encode
from tests.adversarial.conftest import PROGRAM, codes, latest, verify
from tests.adversarial.test_content_rewrite_delta import _adds, _attested
from tests.adversarial.test_delta_dv_cardinality import _delta_rs
from tests.delta.dv import dv_file

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def stored_rewrite(path: Path, files: dict[str, bytes], descriptor: dict[str, Any], *,
                   rewrite: bool = True) -> None:
    """A commit adding the bytes of the file with the (stored) vector under a new name with a vector of
    ``descriptor`` (storage type ``u``, cardinality 1, the uuid and ``files`` — folder → DV file bytes — made here;
    a None value drops the key): ``dataChange: false`` removing that file (``rewrite``), or a DELETE-like commit
    giving the attested file the vector in place (``dataChange: true``)."""
    adds = _adds(path)
    rel = next(r for r, a in adds.items() if a.get("deletionVector"))
    add = adds[rel]
    u = uuid.uuid4()
    for folder, data in files.items():
        (path / folder).mkdir(exist_ok=True)
        (path / folder / f"deletion_vector_{u}.bin").write_bytes(data)
    vector = {"storageType": "u", "cardinality": 1, **descriptor}
    vector["pathOrInlineDv"] = vector.get("pathOrInlineDv", "") + z85_encode(u.bytes)
    vector = {k: v for k, v in vector.items() if v is not None}
    new = rel
    if rewrite:
        new = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        shutil.copy(path / rel, path / new)
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"operation": "OPTIMIZE" if rewrite else "DELETE", "operationParameters": {}}},
        {"remove": {"path": rel, "dataChange": not rewrite, "deletionTimestamp": 1, "extendedFileMetadata": True,
                    "partitionValues": {}, "size": add["size"], "deletionVector": add["deletionVector"]}},
        {"add": {"path": new, "partitionValues": {}, "size": (path / new).stat().st_size, "modificationTime": 2,
                 "dataChange": not rewrite, "stats": add.get("stats"), "deletionVector": vector}}]
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def escaped_prefix(path: Path, prefix: str, decoded: str, *, rewrite: bool = True) -> None:
    """A vector whose prefix ``prefix`` delta-rs decodes to ``decoded``: the file there deletes row 1 (the attested
    vector's row), the file Spark reads (the prefix as written) row 2."""
    data, offset, size = dv_file([1])
    other, _, _ = dv_file([2])
    stored_rewrite(path, {decoded: data, prefix: other},
                   {"pathOrInlineDv": prefix, "offset": offset, "sizeInBytes": size}, rewrite=rewrite)


def no_offset(path: Path, *, rewrite: bool = True) -> None:
    data, _, size = dv_file([1])
    stored_rewrite(path, {"ab": data}, {"pathOrInlineDv": "ab", "offset": None, "sizeInBytes": size},
                   rewrite=rewrite)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """Three files of four rows, row 1 of one file deleted by a stored vector, attested with digests."""
    path = tmp_path / "t"
    _attested(path, partitioned=False, dv=True, nan=False)
    return path


@pytest.mark.parametrize(("prefix", "decoded"), [("%41", "A"), ("a%62", "ab")])
def test_a_rewrite_whose_vector_prefix_holds_an_escape_is_path_ambiguous(table: Path, prefix: str,
                                                                        decoded: str) -> None:
    before = _delta_rs(table)
    escaped_prefix(table, prefix, decoded)
    assert _delta_rs(table) == before  # delta-rs reads the decoded folder's vector: the attested rows
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["path_ambiguous"], doc
    assert "percent-escape" in doc["errors"][0]["message"], doc
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(table)).record(model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "path_ambiguous"


def test_record_refuses_a_vector_prefix_with_an_escape(tmp_path: Path) -> None:
    """Not only a rewrite: a DELETE-like commit giving a file such a vector, then ``record``."""
    path = tmp_path / "t"
    _attested(path, partitioned=False, dv=True, nan=False)
    escaped_prefix(path, "%41", "A", rewrite=False)
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "path_ambiguous" and "%41/deletion_vector_" in err.value.message


def test_a_rewrite_whose_stored_vector_gives_no_offset_is_inconsistent(table: Path) -> None:
    before = _delta_rs(table)
    no_offset(table)
    assert _delta_rs(table) == before  # delta-rs reads it at byte 1
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "gives no offset" in doc["errors"][0]["message"], doc
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(table)).record(model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "table_inconsistent"


def test_an_honest_prefix_and_offset_verify(table: Path) -> None:
    """Control: the same rewrite with a plain prefix (as Spark writes: letters and digits) and its offset."""
    data, offset, size = dv_file([1])
    stored_rewrite(table, {"ab": data}, {"pathOrInlineDv": "ab", "offset": offset, "sizeInBytes": size})
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


@pytest.mark.spark
def test_spark_reads_the_prefix_as_written_and_needs_the_offset(spark: SparkSession, table: Path) -> None:
    before = _delta_rs(table)
    escaped, offsetless = table.parent / "escaped", table.parent / "offsetless"
    shutil.copytree(table, escaped)
    shutil.copytree(table, offsetless)
    escaped_prefix(escaped, "%41", "A")
    no_offset(offsetless)
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # fresh snapshots
    rows = sorted(r["v"] for r in spark.read.format("delta").load(str(escaped)).select("v").collect())
    assert rows != before and len(rows) == len(before)  # row 2 of the file deleted, row 1 back
    assert set(before) - set(rows) and set(rows) - set(before)
    with pytest.raises(Exception, match="DELTA_DELETION_VECTOR_SIZE_MISMATCH"):
        spark.read.format("delta").load(str(offsetless)).select("v").collect()
