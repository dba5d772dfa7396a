"""Content digests computed where the bytes are hashed (carriers/content_store.py ``ContentPass``, the executor task
of carriers/spark/distributed.py), without Spark: the executor code itself (``_hash_and_digest_one``) run in this
process on a reader and a storage recipe that went through pickle, as a Spark task gets them.

The same table attested both ways must give byte-identical companion files and an identical sidecar ``content``
object, with no row read by the driver path (``file_content_digests`` never called): Delta partitioned with a
deletion vector, a deletion vector added to an attested file, an OPTIMIZE carried forward; Iceberg with a position
delete file. tests/spark/test_executor_content.py runs the same through real Spark executors.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from attest.content import ContentDigest
from attest.tables import DataFile, Progress
from carriers.base import ContentReader
from carriers.content_store import COMPANION_SUFFIX, record_content
from carriers.core import AttestedTable
from carriers.delta.carrier import DeltaCarrier
from carriers.iceberg.carrier import IcebergCarrier
from carriers.spark.distributed import SINGLE_READ_BYTES, _hash_and_digest_one, storage_recipe
from carriers.storage.hashing import hash_locations
from tests.delta.dv import add_deletion_vector
from tests.iceberg.conftest import CATALOG, catalog_properties, commit_delete_file, local, rows

PROGRAM = "c" * 64


class InProcessExecutors:
    """A hasher with ``hash_and_digest`` as ExecutorHasher has it, whose "tasks" run here: the reader and the
    storage recipe pickled and unpickled, each file read through the rebuilt storage by the executor code."""

    def __init__(self, carrier: AttestedTable, *, limit: int = SINGLE_READ_BYTES) -> None:
        self.storage = carrier.storage
        self.recipe = storage_recipe(carrier.storage)
        self.limit = limit
        self.digested: list[str] = []
        self.jobs = 0

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        return hash_locations(self.storage, files)

    def hash_and_digest(self, files: Sequence[DataFile], reader: Callable[[], ContentReader | None], *,
                        progress: Progress | None = None) -> tuple[dict[str, str], dict[str, ContentDigest]]:
        made = reader()
        assert made is not None
        self.jobs += 1
        shipped: ContentReader = pickle.loads(pickle.dumps(made))
        storage = pickle.loads(pickle.dumps(self.recipe)).open()
        hashes: dict[str, str] = {}
        digests: dict[str, ContentDigest] = {}
        for f in pickle.loads(pickle.dumps(list(files))):
            result, digest = _hash_and_digest_one(f, shipped, lambda: storage, 1, self.limit)
            if result is not None:
                hashes[f.path] = result[1]
            if digest is not None:
                digests[f.path] = ContentDigest.from_bytes(digest)
                self.digested.append(f.path)
        return hashes, digests


@pytest.fixture
def driver_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every data file whose rows the driver path reads (the formats' file_content_digests), by path."""
    seen: list[str] = []
    for cls in (DeltaCarrier, IcebergCarrier):
        original = cls.file_content_digests

        def counted(self: Any, version: Any, files: Sequence[DataFile], *, progress: Any = None,
                    statistics: bool = False, _original: Any = original) -> dict[str, ContentDigest]:
            seen.extend(f.path for f in files if f.kind == "data")
            return _original(self, version, files, progress=progress,  # type: ignore[no-any-return]
                             statistics=statistics)

        monkeypatch.setattr(cls, "file_content_digests", counted)
    return seen


def _companions(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.rglob(f"*{COMPANION_SUFFIX}"))}


def _content(carrier: AttestedTable) -> dict[str, Any]:
    att = carrier.read(None)
    assert att is not None and att.content is not None and not att.problems
    return dict(att.content)


def _batch(i: int) -> pa.Table:
    return pa.table({"p": ["a", "a", "b", "a"], "v": pa.array([10 * i + k for k in range(4)], pa.int64()),
                     "s": [f"s{i}", None, "", "z"]})


def _delta(path: Path, *, dv: bool = True) -> None:
    for i in range(3):
        write_deltalake(str(path), _batch(i), mode="append", partition_by=["p"],
                        configuration={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    if dv:
        add_deletion_vector(path, [0])


def _record(path: Path, hasher: Any = None) -> None:
    DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM, hasher=hasher)


def test_delta_digests_on_executors_are_the_drivers(tmp_path: Path, driver_reads: list[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _delta(a, dv=False)
    shutil.copytree(a, b)
    _record(a)  # the driver path
    assert driver_reads, "the driver path reads the rows"
    driver_reads.clear()
    executors = InProcessExecutors(DeltaCarrier(str(b)))
    _record(b, executors)
    assert driver_reads == [] and executors.jobs == 1
    assert sorted(executors.digested) == sorted(f.path for f in DeltaCarrier(str(b)).state().live_files
                                                if f.kind == "data")
    assert _companions(a) == _companions(b) and _companions(a)
    assert _content(DeltaCarrier(str(a))) == _content(DeltaCarrier(str(b)))

    # A deletion vector on an attested file: its bytes are not hashed again, its rows are digested again (the
    # executors read it for its rows only).
    for root in (a, b):
        add_deletion_vector(root, [0])
    _record(a)
    driver_reads.clear()
    executors = InProcessExecutors(DeltaCarrier(str(b)))
    _record(b, executors)
    assert driver_reads == [] and len(executors.digested) == 1
    assert _companions(a) == _companions(b)
    assert _content(DeltaCarrier(str(a))) == _content(DeltaCarrier(str(b)))


def test_a_delta_compaction_carried_forward_on_executors(tmp_path: Path, driver_reads: list[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for i in range(4):
        write_deltalake(str(a), _batch(i), mode="append", partition_by=["p"])
    _record(a)
    DeltaTable(str(a)).optimize.compact()
    shutil.copytree(a, b)
    _record(a)
    driver_reads.clear()
    executors = InProcessExecutors(DeltaCarrier(str(b)))
    _record(b, executors)
    assert driver_reads == [] and executors.jobs == 1 and executors.digested  # the judge's reads were the pass's
    content_a, content_b = _content(DeltaCarrier(str(a))), _content(DeltaCarrier(str(b)))
    assert content_b.get("continues") and content_a == content_b
    assert _companions(a) == _companions(b)


def test_a_file_bigger_than_one_read_is_read_twice_with_the_same_digest(tmp_path: Path,
                                                                        driver_reads: list[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _delta(a)
    shutil.copytree(a, b)
    _record(a)
    driver_reads.clear()
    executors = InProcessExecutors(DeltaCarrier(str(b)), limit=16)  # every file is bigger
    _record(b, executors)
    assert driver_reads == [] and executors.digested
    assert _companions(a) == _companions(b)
    assert _content(DeltaCarrier(str(a))) == _content(DeltaCarrier(str(b)))


def test_a_file_the_executors_cannot_digest_is_digested_by_the_driver(tmp_path: Path,
                                                                      driver_reads: list[str]) -> None:
    """An executor that cannot read a file's rows hands it back: the driver's path gives the verdict it gives."""
    a = tmp_path / "a"
    _delta(a)
    carrier = DeltaCarrier(str(a))
    executors = InProcessExecutors(carrier)
    broken = next(f for f in carrier.state().live_files if f.kind == "data")

    class Flaky(InProcessExecutors):
        def hash_and_digest(self, files: Sequence[DataFile], reader: Callable[[], ContentReader | None], *,
                            progress: Progress | None = None) -> tuple[dict[str, str], dict[str, ContentDigest]]:
            hashes, digests = super().hash_and_digest(files, reader, progress=progress)
            digests.pop(broken.path)
            return hashes, digests

    flaky = Flaky(carrier)
    _record(a, flaky)
    assert driver_reads == [broken.path]
    assert executors.jobs == 0 and flaky.jobs == 1


def test_iceberg_digests_on_executors_are_the_drivers(tmp_path: Path, driver_reads: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from carriers.iceberg import content

    served: list[str] = []  # data files pyiceberg read from the bytes the task had just hashed
    opened = content._BytesInput.open
    monkeypatch.setattr(content._BytesInput, "open", lambda self, seekable=True: served.append(self.location)
                        or opened(self, seekable))
    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=rows(0).schema)
    for i in range(3):
        table.append(rows(10 * i, 4))
    commit_delete_file(table, local(table.location()) / "data" / "deletes.parquet")
    table = catalog.load_table("ns.t")
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    executors = InProcessExecutors(carrier)
    carrier.record(model="orders", program_hash=PROGRAM, hasher=executors)
    # (each file may be opened more than once: its metrics are held to its rows too, read without its deletes)
    assert driver_reads == [] and len(executors.digested) == 3 and sorted(set(served)) == sorted(
        f.location for f in carrier.state().live_files if f.kind == "data")

    # The driver's path on the same snapshot: the same companion file (write_once refuses other bytes under its
    # name) and the same content object.
    again = IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG)
    att = again.read(None)
    assert att is not None and att.content is not None and att.attested_version is not None
    v = again._resolve(att.attested_version)
    before = _companions(local(table.location()))
    driver = record_content(again, v, again._live(v), None)
    assert len(driver_reads) == 3
    assert driver == json.loads(json.dumps(att.content))
    assert _companions(local(table.location())) == before


def test_a_failed_executor_job_leaves_the_digests_to_the_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                driver_reads: list[str]) -> None:
    """The hook's hasher redoes a failed job on the driver: the hashes there, the digests by the driver's path, the
    same attestation."""
    from carriers.spark.distributed import ExecutorHasher, HashingStats, RoutedHasher
    from carriers.spark.errors import SparkJobError

    a, b = tmp_path / "a", tmp_path / "b"
    _delta(a)
    shutil.copytree(a, b)
    _record(a)

    def failing(self: ExecutorHasher, files: Any, reader: Any, *, progress: Any = None) -> Any:
        raise SparkJobError("executors are gone")

    monkeypatch.setattr(ExecutorHasher, "hash_and_digest", failing)
    driver_reads.clear()
    routed = RoutedHasher(None, DeltaCarrier(str(b)).storage, threshold=1, stats=HashingStats())  # type: ignore[arg-type]
    _record(b, routed)
    data = sorted(f.path for f in DeltaCarrier(str(b)).state().live_files if f.kind == "data")
    assert routed.stats.fallbacks == 1 and routed.stats.executor_content_files == 0
    assert sorted(driver_reads) == data
    assert _companions(a) == _companions(b)
    assert _content(DeltaCarrier(str(a))) == _content(DeltaCarrier(str(b)))
