"""Deletion vectors matched to their files wherever the table lives (an own finding of this round).

delta-rs's ``deletion_vectors()`` names each file by a URI percent-encoded throughout (``s3://b/t/part-…``,
``file:///…/p=a%2520b/…``), unlike ``file_uris()``, which writes the decoded relative path after the table root. The
content digest matched the two by the local form only, so on an object store no file got its vector: the recorded
digest counted the deleted rows (measured: 3 rows where readers get 2). A rewrite that brought a deleted row back
then matched it — VERIFIED (content; same rows) with a row readers never had; an honest compaction was
``content_changed``. Locally, a file in a partition folder whose name delta-rs escapes (``p=a%20b``) was refused
(``table_inconsistent``: "applies deletion vectors to other files than the log names"), which the Spark hook met on
tables partitioned by such values.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from carriers.delta.carrier import attest_after_write
from tests.adversarial.conftest import PROGRAM, verify
from tests.adversarial.test_content_rewrite_delta import _adds, _engine_rows, _file_rows, rewrite
from tests.delta.dv import add_deletion_vector
from tests.servers.stores import Bucket

TABLE = "t"


def _rows(values: list[str]) -> pa.Table:
    return pa.table({"p": values, "v": pa.array(range(len(values)), pa.int64())})


def _with_dv(path: Path, values: list[str], appends: int = 1) -> str:
    """A table of ``values`` (``appends`` times) partitioned by them, deletion vectors on, row 0 of its first live file
    deleted; the path (as the log spells it) of the file carrying the vector."""
    for _ in range(appends):
        write_deltalake(str(path), _rows(values), partition_by=["p"], mode="append",
                        configuration={"delta.enableDeletionVectors": "true"})
    add_deletion_vector(path, [0])
    return next(str(a["add"]["path"]) for line in sorted((path / "_delta_log").glob("*.json"))[-1:]
                for a in map(json.loads, line.read_text().splitlines()) if "add" in a)


def _recorded_rows(sidecar: str) -> list[int]:
    return [int(n) for n in re.findall(r'"rows":\s*(\d+)', sidecar)]


@pytest.mark.parametrize("value", ["a b", "c:d", "x%y"])
def test_a_deletion_vector_in_an_escaped_partition_folder_is_matched_to_its_file(tmp_path: Path, value: str) -> None:
    path = tmp_path / TABLE
    _with_dv(path, [value, value, "plain"])
    result = attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert result.sidecar is not None
    # Readers get 2 rows: 3 stored, 1 deleted by the vector.
    assert sum(_engine_rows(path).values()) == 2
    assert _recorded_rows(Path(result.sidecar).read_text())[-1] == 2
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes"), doc
    assert doc["content_digest_bound"] is True, doc


def _down(bucket: Bucket, local: Path) -> None:
    for key in bucket.keys(f"{TABLE}/"):
        target = local / key.removeprefix(f"{TABLE}/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bucket.get(key))


def _up(local: Path, bucket: Bucket) -> None:
    held = bucket.keys(f"{TABLE}/")
    for f in sorted(local.rglob("*")):
        key = f"{TABLE}/{f.relative_to(local).as_posix()}"
        if f.is_file() and key not in held:
            bucket.put(key, f.read_bytes())


def _attested_on_store(bucket: Bucket, tmp_path: Path) -> tuple[str, str]:
    """The table built locally with a deletion vector, copied to the bucket, attested there; (table URI, the
    path of the file carrying the vector)."""
    built = tmp_path / "built"
    dv_file = _with_dv(built, ["a", "a", "a", "b"], appends=2)
    _up(built, bucket)
    uri = bucket.uri(TABLE)
    result = attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=bucket.storage_options)
    assert result.sidecar is not None
    sidecar = bucket.get(result.sidecar.split(f"{bucket.name}/", 1)[1]).decode()
    assert _recorded_rows(sidecar)[-1] == 7, sidecar[:2000]  # 8 stored, 1 deleted: what readers get
    return uri, dv_file


def _verify_on_store(bucket: Bucket, uri: str) -> tuple[int, dict[str, Any]]:
    options = [arg for k, v in bucket.storage_options.items() for arg in ("--storage-option", f"{k}={v}")]
    return verify(uri, "--level", "bytes", *options)


def test_the_recorded_content_on_a_store_leaves_the_deleted_rows_out(bucket: Bucket, tmp_path: Path) -> None:
    uri, _ = _attested_on_store(bucket, tmp_path)
    rc, doc = _verify_on_store(bucket, uri)
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes"), doc


def test_a_rewrite_on_a_store_bringing_a_deleted_row_back_is_not_verified(s3: Bucket, tmp_path: Path) -> None:
    uri, dv_file = _attested_on_store(s3, tmp_path)
    local = tmp_path / "copy"
    _down(s3, local)
    # Every stored row of the file, the deleted one included, rewritten as a compaction (dataChange: false).
    values = _adds(local)[dv_file]["partitionValues"]
    rewrite(local, [dv_file], [(_file_rows(local, dv_file), values)], operation="OPTIMIZE")
    _up(local, s3)
    rc, doc = _verify_on_store(s3, uri)
    assert rc == 1 and "content_changed" in [e["code"] for e in doc["errors"]], doc
    assert not doc["verdict"].startswith("VERIFIED"), doc


def test_an_honest_compaction_on_a_store_verifies_by_content(s3: Bucket, tmp_path: Path) -> None:
    uri, _ = _attested_on_store(s3, tmp_path)
    DeltaTable(uri, storage_options=s3.storage_options).optimize.compact()
    rc, doc = _verify_on_store(s3, uri)
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


def test_a_digest_recorded_without_the_vector_applied_is_no_evidence(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An attestation made before the fix on a store (the vectors matched to no file): its recorded digest counts the
    deleted row. A compaction bringing that row back matches it; the file's log entry (numRecords less the vector's
    cardinality) says readers got a row fewer, so it is content_changed."""
    import carriers.delta.content as delta_content

    path = tmp_path / TABLE
    dv_file = _with_dv(path, ["a", "a", "a", "b"], appends=2)
    with monkeypatch.context() as m:  # the old matching, as on a store: no vector found its file
        m.setattr(delta_content, "engine_relative", lambda roots, uri, encoded=False: "")
        # and, as then, no check of the vector's cardinality against the rows it deleted (none: it was refused now)
        m.setattr(delta_content, "_check_cardinality", lambda *args, **kwargs: None)
        result = attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert result.sidecar is not None and _recorded_rows(Path(result.sidecar).read_text())[-1] == 8
    rewrite(path, [dv_file], [(_file_rows(path, dv_file), _adds(path)[dv_file]["partitionValues"])],
            operation="OPTIMIZE")
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and [e["code"] for e in doc["errors"]] == ["content_changed"], doc
    assert "recorded without the deletes applied" in doc["errors"][0]["message"], doc
