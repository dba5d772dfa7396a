"""``verify --level files`` looks at storage (issue 35): every live file must be there as a regular file or object
with the size the log records, found by a listing that opens no file. Before, the level compared the log with the
attestation only, and VERIFIED a table whose data file was deleted, or replaced by a FIFO, a folder, a dangling
symlink or bytes of another size. Delta and Iceberg, on local storage and on S3 (SeaweedFS, tests/servers)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyiceberg.table import Table

from attest.verify.table import verify_table
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.carrier import attest_after_write as iceberg_attest
from carriers.storage import listing
from tests.adversarial.conftest import PROGRAM, a_data_file, codes, verify
from tests.adversarial.test_iceberg_attacks import REF, catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.iceberg.conftest import CATALOG, local
from tests.objectstore.test_stores import iceberg_table
from tests.servers.stores import Bucket


# ---- local: what an attacker (or an accident) leaves in place of a data file ---------------------------------------
def _missing(victim: Path, _tmp: Path) -> None:
    victim.unlink()


def _fifo(victim: Path, _tmp: Path) -> None:
    victim.unlink()
    os.mkfifo(victim)


def _folder(victim: Path, _tmp: Path) -> None:
    victim.unlink()
    victim.mkdir()
    (victim / "inside.parquet").write_bytes(b"x")


def _dangling(victim: Path, _tmp: Path) -> None:
    victim.unlink()
    victim.symlink_to(victim.parent / "nowhere.bin")  # inside the table: confinement lets it through


def _link_to_fifo(victim: Path, _tmp: Path) -> None:
    fifo = victim.parent / "fifo.bin"  # inside the table: confinement lets it through, the look must not
    os.mkfifo(fifo)
    victim.unlink()
    victim.symlink_to(fifo)


def _grown(victim: Path, _tmp: Path) -> None:
    with victim.open("ab") as f:
        f.write(b"\0")


def _link_to_shorter(victim: Path, _tmp: Path) -> None:
    other = victim.parent / "shorter.bin"
    other.write_bytes(victim.read_bytes()[:-1])
    victim.unlink()
    victim.symlink_to(other)


TAMPERS: dict[str, tuple[Callable[[Path, Path], None], str, str]] = {
    "missing": (_missing, "file_missing", "not in storage"),
    "fifo": (_fifo, "file_missing", "a FIFO"),
    "folder": (_folder, "file_missing", "a folder"),
    "dangling symlink": (_dangling, "file_missing", "a dangling symlink"),
    "symlink to a FIFO": (_link_to_fifo, "file_missing", "a symlink to a FIFO"),
    "one byte longer": (_grown, "size_mismatch", "storage holds"),
    "symlink to shorter bytes": (_link_to_shorter, "size_mismatch", "storage holds"),
}


def _refused_at_files(target: str, code: str, words: str, *args: str) -> None:
    rc, doc = verify(target, "--level", "files", *args)
    assert rc == 1 and doc["level"] == "files", doc
    assert codes(doc) == [code], doc
    assert words in doc["errors"][0]["message"], doc


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_delta_files_level_looks_at_storage(delta: Path, tmp_path: Path, tamper: str) -> None:
    make, code, words = TAMPERS[tamper]
    make(delta / unquote(a_data_file(delta)), tmp_path)
    _refused_at_files(str(delta), code, words)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_iceberg_files_level_looks_at_storage(table: Table, tmp_path: Path, tamper: str) -> None:  # noqa: F811
    make, code, words = TAMPERS[tamper]
    make(local(IcebergCarrier(table, catalog_name=CATALOG).list_files()[0].location), tmp_path)
    _refused_at_files(REF, code, words)


def test_honest_tables_verify_at_files_level(delta: Path, table: Table) -> None:  # noqa: F811
    for target in (str(delta), REF):
        rc, doc = verify(target, "--level", "files")
        assert rc == 0 and doc["level"] == "files" and doc["files_checked"] > 0, doc


def test_a_symlink_to_the_same_bytes_inside_the_table_verifies_at_files_as_at_bytes(delta: Path) -> None:
    """A symlink is judged by what it leads to, as the bytes level reads it (confinement refuses one leading out)."""
    victim = delta / unquote(a_data_file(delta))
    kept = delta / "kept.bin"
    victim.rename(kept)
    victim.symlink_to(kept)
    for level in ("files", "bytes"):
        rc, doc = verify(str(delta), "--level", level)
        assert rc == 0 and doc["level"] == level, doc


def test_an_allowed_external_symlink_to_a_fifo_is_refused(delta: Path, tmp_path: Path) -> None:
    """With --allow-external-files confinement lets a link out of the table through: the look still follows it."""
    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    victim = delta / unquote(a_data_file(delta))
    victim.unlink()
    victim.symlink_to(fifo)
    _refused_at_files(str(delta), "file_missing", "a symlink to a FIFO", "--allow-external-files")


def test_a_file_removed_by_vacuum_says_so_at_files_level(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    write_deltalake(str(path), pa.table({"v": [3]}), mode="overwrite")
    DeltaTable(str(path)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    rc, doc = verify(str(path), "--version", "0", "--level", "files")
    assert rc == 1 and codes(doc) == ["file_missing"], doc
    assert "VACUUM" in doc["errors"][0]["message"], doc


def test_the_look_opens_no_file(delta: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files level stays a listing: no data file is opened (a FIFO could block, a huge file cost its read)."""
    opened: list[str] = []
    real_open = os.open

    def watching(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".parquet"):
            opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", watching)
    rc, doc = verify(str(delta), "--level", "files")
    assert rc == 0, doc
    assert opened == []


# ---- object stores: a listing of the files' folder, or a HEAD per file -----------------------------------------------
def _tamper_object(store: Bucket, key: str, how: str) -> None:
    if how == "missing":
        store.delete(key)
    elif how == "folder":  # an object store's "folder": objects under the name, none at it
        store.delete(key)
        store.put(f"{key}/inside.parquet", b"x")
    else:  # other bytes of another size
        store.put(key, store.get(key) + b"\0")


OBJECT_TAMPERS = {"missing": "file_missing", "folder": "file_missing", "longer": "size_mismatch"}
WAYS = pytest.mark.parametrize("list_min", [1, 10_000], ids=["listing", "head"])


def _through_obstore(monkeypatch: pytest.MonkeyPatch, list_min: int) -> list[str]:
    """The look made through obstore only (a listing, or a HEAD per file): which ways it took."""
    monkeypatch.setattr(listing, "LIST_MIN", list_min)
    ways: list[str] = []
    for name in ("_listed", "_headed"):
        real = getattr(listing, name)

        def spy(*args: Any, _real: Any = real, _name: str = name) -> Any:
            ways.append(_name)
            return _real(*args)

        monkeypatch.setattr(listing, name, spy)

    def no_engine(_storage: Any, location: str) -> int | str:
        raise AssertionError(f"{location} was asked of the engine")

    monkeypatch.setattr(listing, "_engine_size", no_engine)
    return ways


def _data_keys(store: Bucket, prefix: str) -> list[str]:
    return sorted(k for k in store.keys(prefix) if k.endswith(".parquet") and "/metadata/" not in k)


@WAYS
@pytest.mark.parametrize("how", sorted(OBJECT_TAMPERS))
def test_delta_on_s3_files_level_looks_at_storage(s3: Bucket, monkeypatch: pytest.MonkeyPatch,
                                                  list_min: int, how: str) -> None:
    ways = _through_obstore(monkeypatch, list_min)
    uri = s3.uri("t")
    write_deltalake(uri, pa.table({"v": list(range(6))}), storage_options=s3.storage_options)
    write_deltalake(uri, pa.table({"v": [9]}), mode="append", storage_options=s3.storage_options)
    attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    honest = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert honest.passed and honest.level == "files", honest.human()
    _tamper_object(s3, _data_keys(s3, "t/")[0], how)
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert [e.code.value for e in report.errors] == [OBJECT_TAMPERS[how]], report.human()
    assert set(ways) == {"_listed" if list_min == 1 else "_headed"}


def test_delta_on_s3_with_escaped_keys_is_asked_of_the_engine(s3: Bucket) -> None:
    """Partition values the stores escape differently are not listed by key: each is asked of delta-rs (a HEAD)."""
    from tests.delta.conftest import special_table

    uri = s3.uri("t")
    write_deltalake(uri, special_table(), partition_by=["p"], storage_options=s3.storage_options)
    attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options)
    honest = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert honest.passed, honest.human()
    escaped = [k for k in _data_keys(s3, "t/") if "%" in k]
    assert escaped
    s3.delete(escaped[0])
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="files")
    assert [e.code.value for e in report.errors] == ["file_missing"], report.human()


@WAYS
@pytest.mark.parametrize("how", sorted(OBJECT_TAMPERS))
def test_iceberg_on_s3_files_level_looks_at_storage(s3: Bucket, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, list_min: int, how: str) -> None:
    ways = _through_obstore(monkeypatch, list_min)
    ice, _ = iceberg_table(s3, tmp_path)
    iceberg_attest(ice, model="m", program_hash=PROGRAM)
    honest = verify_table(IcebergCarrier(ice), level="files")
    assert honest.passed and honest.level == "files", honest.human()
    _tamper_object(s3, _data_keys(s3, "wh/")[0], how)
    report = verify_table(IcebergCarrier(ice), level="files")
    assert [e.code.value for e in report.errors] == [OBJECT_TAMPERS[how]], report.human()
    assert set(ways) == {"_listed" if list_min == 1 else "_headed"}



def test_delta_files_level_on_each_store(bucket: Bucket) -> None:
    """GCS (fake-gcs-server) and Azure (Azurite) as S3: honest verifies at files level, a deleted object does not."""
    uri = bucket.uri("t")
    write_deltalake(uri, pa.table({"v": list(range(4))}), storage_options=bucket.storage_options)
    attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=bucket.storage_options)
    honest = verify_table(DeltaCarrier(uri, storage_options=bucket.storage_options), level="files")
    assert honest.passed and honest.level == "files", honest.human()
    bucket.delete(_data_keys(bucket, "t/")[0])
    report = verify_table(DeltaCarrier(uri, storage_options=bucket.storage_options), level="files")
    assert [e.code.value for e in report.errors] == ["file_missing"], report.human()


def test_a_file_outside_the_tables_roots_is_asked_alone_never_a_bucket_listing(s3: Bucket,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Files under the table's root are listed together (the folder they share); one elsewhere in the bucket (an
    Iceberg file added from another prefix) is a HEAD of its own through the engine, so it never widens the listing
    to the whole bucket."""
    from attest.tables import DataFile
    from carriers.storage import DeltaStorage

    monkeypatch.setattr(listing, "LIST_MIN", 1)
    for i in range(3):
        s3.put(f"t/data/part-{i}.parquet", b"x" * (i + 1))
    s3.put("other/x.parquet", b"abc")
    files = [DataFile(path=f"data/part-{i}.parquet", size=i + 1, location=s3.uri(f"t/data/part-{i}.parquet"))
             for i in range(4)]  # part-3 is not there
    files.append(DataFile(path=s3.uri("other/x.parquet"), size=3, location=s3.uri("other/x.parquet")))
    prefixes: list[str | None] = []
    import obstore

    real = obstore.list

    def spy(store: Any, prefix: str | None = None, **kwargs: Any) -> Any:
        prefixes.append(f"{store.prefix}|{prefix}")
        return real(store, prefix, **kwargs)

    monkeypatch.setattr(obstore, "list", spy)
    asked: list[str] = []
    real_engine = listing._engine_size
    monkeypatch.setattr(listing, "_engine_size", lambda st, loc: asked.append(loc) or real_engine(st, loc))
    storage = DeltaStorage(s3.uri("t"), s3.storage_options)
    got = listing.stored_sizes(storage, files, [s3.uri("t")])
    assert got == {"data/part-0.parquet": 1, "data/part-1.parquet": 2, "data/part-2.parquet": 3,
                   "data/part-3.parquet": "missing", s3.uri("other/x.parquet"): 3}
    assert prefixes == ["t/data|None"], prefixes  # the table's data folder, listed once
    assert asked == [s3.uri("other/x.parquet")]


# ---- Spark-written Delta: escaped partition folders and deletion vectors, as Spark lays them out ------------------
@pytest.mark.spark
def test_a_spark_written_table_is_looked_up_where_spark_wrote_it(spark: Any, required_hook: Any) -> None:
    """Partition values Spark escapes in folder names (``p=x%2Fy%3Dz%25``), and deletion-vector files: the honest
    tables verify at the files level (each file looked up where Spark wrote it); a data file removed from an escaped
    folder is file_missing. The deletion vectors sit in escaped partition folders too: delta-rs names their files by
    URIs encoded throughout, which are matched to the log's paths decoded (such a table could not be attested
    before: "applies deletion vectors to other files than the log names"); it verifies at bytes, its content bound."""
    from tests.spark.test_hook import _delta_path, _uid

    escaped, vectors = f"fl_{_uid()}", f"fl_{_uid()}"
    spark.createDataFrame([(i, p) for i in range(10) for p in ("a b", "x/y=z%", "日本")], "id int, p string") \
        .write.format("delta").partitionBy("p").saveAsTable(escaped)
    spark.sql(f"CREATE TABLE {vectors} (id INT, p STRING) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO {vectors} SELECT id, CASE id % 3 WHEN 0 THEN 'a b' WHEN 1 THEN 'x/y=z%' ELSE '日本' END "
              "FROM range(1000)")
    spark.sql(f"DELETE FROM {vectors} WHERE id % 7 = 0")  # a deletion vector, not a rewrite
    required_hook.flush()
    assert required_hook.failed == 0, required_hook.errors
    tables = {name: Path(_delta_path(spark, name)) for name in (escaped, vectors)}
    for path in tables.values():
        rc, doc = verify(str(path), "--level", "files")
        assert rc == 0 and doc["level"] == "files", doc
    assert list(tables[vectors].rglob("deletion_vector_*.bin"))
    rc, doc = verify(str(tables[vectors]), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (bytes") and doc["content_digest_bound"] is True, doc
    next(f for f in tables[escaped].rglob("*.parquet") if "%" in f.parent.name).unlink()
    rc, doc = verify(str(tables[escaped]), "--level", "files")
    assert rc == 1 and codes(doc) == ["file_missing"], doc
