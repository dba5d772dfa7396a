"""An Iceberg table's data files hashed through obstore (carriers.storage.hashing._root_groups) on a real S3 server
(SeaweedFS, loopback): its storage is rooted at the metadata folder, its data files lie under the table location;
those in the storage's bucket are read by obstore, exactly the objects pyiceberg's FileIO reads for those location
strings, and everything else (another bucket, outside the table's roots, a key with an escape, ``+`` or a space) by
the FileIO, as before. Verdicts and codes are the same with the path on and off (``ATTEST_FAST=0``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from blake3 import blake3

from attest import fast
from attest.tables import DataFile
from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.carrier import attest_after_write as iceberg_attest
from carriers.storage import hashing, objects
from carriers.storage.fileio import FileIOStorage
from carriers.storage.hashing import hash_locations
from tests.objectstore.conftest import S3
from tests.objectstore.test_remote_hashing import write_varied_object
from tests.objectstore.test_stores import catalog_env, cli, parquet_keys, warehouse

PROGRAM = "a" * 64


def _engine_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The locations whose bytes are hashed through the FileIO (the engine's reader), recorded; it still reads them
    (other reads, e.g. the Parquet footers of the stored-type check, are not counted)."""
    asked: list[str] = []
    real = hashing.hash_through_engine

    def counting(storage: Any, remote: Any, *args: Any, **kwargs: Any) -> None:
        asked.extend(f.location for f in remote)
        real(storage, remote, *args, **kwargs)

    monkeypatch.setattr(hashing, "hash_through_engine", counting)
    return asked


def _table(s3: S3, tmp_path: Path, name: str = "store", appends: int = 3) -> tuple[Any, dict[str, str]]:
    from pyiceberg.catalog.sql import SqlCatalog

    wh = warehouse(s3, "wh")
    db = tmp_path / "catalog.db"
    catalog = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=wh, **s3.iceberg_properties)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64()), ("v", pa.binary())]))
    for i in range(appends):
        rows = 30 * (i + 1)
        table.append(
            pa.table(
                {
                    "id": pa.array(range(rows), pa.int64()),
                    "v": pa.array([os.urandom(700) for _ in range(rows)], pa.binary()),
                }
            )
        )
    return table, catalog_env(s3, name, db, wh)


def _codes(report: Any) -> list[tuple[str, str | None]]:
    return sorted((p.code.value, p.path) for p in report.errors)


def _verify(table: Any, monkeypatch: pytest.MonkeyPatch, on: bool) -> tuple[Any, list[str]]:
    monkeypatch.setattr(fast, "ON", on)
    asked = _engine_reads(monkeypatch)
    table.refresh()
    report = verify_table(IcebergCarrier(table), level="bytes")
    monkeypatch.undo()
    return report, asked


def test_data_files_are_read_by_obstore_and_tampering_is_reported_alike(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(objects, "PART", 8 << 10)  # the data files are read in ranged parts and in streamed GETs
    monkeypatch.setattr(objects, "STREAM_MAX", 32 << 10)
    table, _ = _table(s3, tmp_path)
    iceberg_attest(table, model="m", program_hash=PROGRAM)
    keys = parquet_keys(s3, "wh/")
    assert len(keys) == 3 and all("/data/" in k for k in keys)
    sizes = sorted(s3.keys("wh/")[k] for k in keys)
    assert sizes[0] <= 32 << 10 < sizes[-1], sizes

    used: list[int] = []
    real = objects.hash_objects

    def spy(store: Any, objs: Any, **kw: Any) -> Any:
        out = real(store, objs, **kw)
        used.append(sum(d is not None for d in out))
        return out

    monkeypatch.setattr(objects, "hash_objects", spy)
    report, asked = _verify(table, monkeypatch, on=True)
    assert report.passed, _codes(report)
    assert asked == [] and sum(used) == 3  # every data file through obstore, none through the FileIO
    monkeypatch.setattr(objects, "hash_objects", spy)
    report, asked = _verify(table, monkeypatch, on=False)
    assert report.passed and sorted(asked) == sorted(s3.uri(k) for k in keys)  # ATTEST_FAST=0: the FileIO, as before

    s3.flip_byte(keys[0])  # same size, other bytes: read whole by obstore, its digest differs
    monkeypatch.setattr(objects, "PART", 8 << 10)
    monkeypatch.setattr(objects, "STREAM_MAX", 32 << 10)
    fast_report, fast_asked = _verify(table, monkeypatch, on=True)
    slow_report, _ = _verify(table, monkeypatch, on=False)
    assert _codes(fast_report) == _codes(slow_report) == [("artifact_hash_mismatch", keys[0].split("/t/", 1)[1])]
    assert [p.message for p in fast_report.errors] == [p.message for p in slow_report.errors]
    assert fast_report.verdict() == slow_report.verdict() and fast_asked == []

    s3.put(keys[1], s3.get(keys[1]) + b"more")  # replaced by an object of another size
    s3.delete(keys[2])
    fast_report, _ = _verify(table, monkeypatch, on=True)
    slow_report, _ = _verify(table, monkeypatch, on=False)
    assert not fast_report.passed and _codes(fast_report) == _codes(slow_report)
    assert [p.message for p in fast_report.errors] == [p.message for p in slow_report.errors]
    assert fast_report.verdict() == slow_report.verdict()


def test_escaped_plus_and_space_keys_are_the_fileios_literal_objects(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data file whose name holds ``%41``, ``+`` and a space: pyiceberg reads the location string literally, so
    the object is ``data/a%41 b+c.parquet``; the obstore path leaves it to the FileIO (it never decodes the
    escape), while a decoy at the decoded name ``data/aA b+c.parquet`` holds the original bytes."""
    table, _ = _table(s3, tmp_path, appends=1)
    odd = "wh/ns/t/data/a%41 b+c.parquet"
    decoy = "wh/ns/t/data/aA b+c.parquet"
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array([7, 8], pa.int64()), "v": pa.array([b"x", b"y"], pa.binary())}), buf)
    s3.put(odd, buf.getvalue().to_pybytes())
    table.add_files([s3.uri(odd)])
    table.refresh()
    iceberg_attest(table, model="m", program_hash=PROGRAM)

    report, asked = _verify(table, monkeypatch, on=True)
    assert report.passed, _codes(report)
    assert asked == [s3.uri(odd)]  # only the odd name through the FileIO; the appended file through obstore

    s3.put(decoy, s3.get(odd))  # the original bytes at the decoded name
    s3.flip_byte(odd)
    fast_report, asked = _verify(table, monkeypatch, on=True)
    slow_report, _ = _verify(table, monkeypatch, on=False)
    assert _codes(fast_report) == _codes(slow_report) == [("artifact_hash_mismatch", "data/a%41 b+c.parquet")]
    assert asked == [s3.uri(odd)]


def test_only_the_storages_bucket_under_the_tables_roots_is_read_by_obstore(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO

    blobs = {
        "wh/ns/t/data/in.bin": os.urandom(3000),
        "wh/ns/t/data/sub/deeper.bin": os.urandom(20),
        "wh/elsewhere/out.bin": os.urandom(100),
        "wh/ns/t/data/x?y.bin": os.urandom(10),
        "wh/ns/t/data/h#f.bin": os.urandom(10),
        "wh/ns/t/data/../x.bin": os.urandom(10),
    }
    for key, data in blobs.items():
        if ".." not in key:
            s3.put(key, data)
    storage = FileIOStorage(s3.uri("wh/ns/t/metadata"), PyArrowFileIO(s3.iceberg_properties))
    asked = _engine_reads(monkeypatch)
    files = [DataFile(path=k, size=len(b), kind="data", location=s3.uri(k)) for k, b in blobs.items()]
    # a size the listing claims that is not the object's, and a missing object: obstore gives them up, the FileIO
    # reads them (and the verifier reports what it reports today)
    files.append(DataFile(path="wrong-size", size=2999, kind="data", location=s3.uri("wh/ns/t/data/in.bin")))
    files.append(DataFile(path="gone", size=10, kind="data", location=s3.uri("wh/ns/t/data/gone.bin")))
    # another bucket under a root of the table: the FileIO (the options are mapped for the storage's bucket)
    files.append(DataFile(path="other", size=5, kind="data", location=f"s3://{s3.name}x/wh/ns/t/data/o.bin"))
    roots = [s3.uri("wh/ns/t"), f"s3://{s3.name}x/wh/ns/t"]
    got = hash_locations(storage, files, roots=roots)
    # pyiceberg's FileIO cuts a location at "?" and "#" (urlparse): it reads no object for the two names holding
    # them (data/x, data/h do not exist), and neither does the obstore path (it leaves them to the FileIO).
    plain = {k: blake3(b).hexdigest() for k, b in blobs.items() if not any(c in k for c in ("..", "?", "#"))}
    assert got == {**plain, "wrong-size": plain["wh/ns/t/data/in.bin"]}
    assert sorted(asked) == sorted(
        [
            s3.uri("wh/ns/t/data/in.bin"),
            s3.uri("wh/ns/t/data/gone.bin"),
            s3.uri("wh/elsewhere/out.bin"),
            s3.uri("wh/ns/t/data/x?y.bin"),
            s3.uri("wh/ns/t/data/h#f.bin"),
            s3.uri("wh/ns/t/data/../x.bin"),
            f"s3://{s3.name}x/wh/ns/t/data/o.bin",
        ]
    )
    # No roots (the Spark executors' call, a caller of its own): the FileIO for all of them, as before.
    asked.clear()
    assert hash_locations(storage, files) == got and len(asked) == len(files)


def test_an_endpoint_only_the_environment_names_leaves_the_data_to_the_fileio(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``s3.endpoint`` pyarrow and obstore each read endpoint variables of their own from the environment:
    the data objects are then the FileIO's alone."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    s3.put("wh/ns/t/data/f.bin", b"abc")
    props = {k: v for k, v in s3.iceberg_properties.items() if k != "s3.endpoint"}
    storage = FileIOStorage(s3.uri("wh/ns/t/metadata"), PyArrowFileIO(props))
    monkeypatch.setenv("AWS_ENDPOINT", "http://127.0.0.1:9")
    assert not storage._engine_endpoint_mapped()
    with_endpoint = FileIOStorage(s3.uri("wh/ns/t/metadata"), PyArrowFileIO(s3.iceberg_properties))
    assert with_endpoint._engine_endpoint_mapped()
    monkeypatch.delenv("AWS_ENDPOINT")
    assert storage._engine_endpoint_mapped() == (not any(n.upper().startswith("AWS_ENDPOINT") for n in os.environ))


def test_cli_verdicts_are_the_same_with_the_path_on_and_off(s3: S3, tmp_path: Path) -> None:
    table, env = _table(s3, tmp_path, name="icefast", appends=2)
    iceberg_attest(table, model="m", program_hash=PROGRAM)

    def both() -> list[tuple[int, dict[str, Any]]]:
        out = []
        for switch in ("1", "0"):
            done = cli(
                "verify", "iceberg://icefast/ns.t", "--level", "bytes", "--json", env={**env, "ATTEST_FAST": switch}
            )
            document = json.loads(done.stdout)
            document.pop("elapsed_seconds", None)
            out.append((done.returncode, document))
        return out

    intact = both()
    assert intact[0] == intact[1] and intact[0][0] == 0
    s3.flip_byte(parquet_keys(s3, "wh/")[0])
    tampered = both()
    assert tampered[0] == tampered[1] and tampered[0][0] == 1
    assert [e["code"] for e in tampered[0][1]["errors"]] == ["artifact_hash_mismatch"]


_MEASURE = """
import json, resource, sys
from pyiceberg.io.pyarrow import PyArrowFileIO
from attest.tables import DataFile
from carriers.storage.fileio import FileIOStorage
from carriers.storage.hashing import hash_locations
table, size, props = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
storage = FileIOStorage(table + "/metadata", PyArrowFileIO(props))
def refuse(self, location):
    raise AssertionError(location)
FileIOStorage._open_remote = refuse  # obstore alone reads them
small = DataFile(path="small", size=1, kind="data", location=table + "/data/small")
hash_locations(storage, [small], roots=[table])  # warm up
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
big = DataFile(path="big", size=size, kind="data", location=table + "/data/big.bin")
digest = hash_locations(storage, [big], roots=[table])["big"]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"digest": digest, "grew_kib": after - before}))
"""


@pytest.mark.slow
def test_hashing_a_large_iceberg_data_object_stays_under_64_mib(s3: S3) -> None:
    size = 192 << 20
    expected = write_varied_object(s3.fs, f"{s3.name}/wh/ns/t/data/big.bin", size)
    s3.put("wh/ns/t/data/small", b"x")
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, s3.uri("wh/ns/t"), str(size), json.dumps(s3.iceberg_properties)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["digest"] == expected
    assert result["grew_kib"] * 1024 <= 64 << 20, f"peak memory grew by {result['grew_kib'] / 1024:.0f} MiB"


def test_files_under_write_data_path_are_read_by_obstore(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write.data.path`` is a root of the table (``IcebergCarrier.roots``): its files, in the same bucket, are read
    through obstore; the record hashes them so too, and the digests are the files' own."""
    table, _ = _table(s3, tmp_path, appends=0)
    with table.transaction() as tx:
        tx.set_properties({"write.data.path": s3.uri("custom/place")})
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([b"a", b"b"], pa.binary())}))
    keys = [k for k in s3.keys("custom/") if k.endswith(".parquet")]
    assert keys and all(k.startswith("custom/place/") for k in keys)
    asked = _engine_reads(monkeypatch)
    iceberg_attest(table, model="m", program_hash=PROGRAM)
    assert asked == []
    report, asked = _verify(table, monkeypatch, on=True)
    assert report.passed and asked == [], _codes(report)
    s3.flip_byte(keys[0])
    fast_report, asked = _verify(table, monkeypatch, on=True)
    slow_report, _ = _verify(table, monkeypatch, on=False)
    assert asked == [] and _codes(fast_report) == _codes(slow_report)
    assert [code for code, _ in _codes(fast_report)] == ["artifact_hash_mismatch"]
