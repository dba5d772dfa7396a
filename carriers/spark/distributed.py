"""Hashing and verification on Spark executors (docs/distributed.md).

The driver lists a version's files from the carrier (``carrier.state(version)``: engine-resolved, confined to the
table's roots, the reader view bound); the executors read and hash them through the table's own filesystem and
return ``(path, bytes read, BLAKE3)``; the driver decides with the one decision procedure,
``attest.verify.table.verify_state``, handed an ``ExecutorHasher`` instead of this machine's hasher. Nothing about
the verdict is decided on an executor, so the rules, codes and verdict are those of local verification.

- ``ExecutorHasher``: a ``FileHasher`` whose ``hash_files`` runs one Spark job. Files are packed into
  ``defaultParallelism * TASKS_PER_CORE`` buckets, largest first onto the least loaded bucket, one task per bucket;
  a task hashes its files one after another on ``spark.task.cpus`` threads (Spark's unit of CPU: the executors'
  other cores run other tasks). Object-store files are streamed by a few concurrent readers per task.
- ``RoutedHasher``: what the post-write hook uses: writes of at least ``EXECUTOR_HASH_BYTES`` on the executors,
  smaller ones on the driver (a Spark job costs a fixed ~0.1-1 s that a small write does not repay); under a local
  master the driver always (``executor_threshold``).
- ``verify`` / ``executor_hasher``: a table verified with its bytes hashed on executors (the hasher is passed to
  ``verify_state`` / ``record``).

Executors get what they need to open the table's filesystem and nothing else: a ``StorageRecipe`` (Delta: the table
URI and its storage options; Iceberg: the FileIO class and its properties, which carry the catalog's credentials).
The code they run is shipped by the job itself (``ship_code``: the ``attest`` and ``carriers`` packages the driver
imported, zipped once per content and handed to ``SparkContext.addPyFile``); their Python needs the dependencies
(``blake3``; ``deltalake`` / ``pyiceberg`` for object stores). pyspark is imported only by the functions that need it.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from attest.errors import CarrierError, Code
from attest.tables import DataFile, Progress
from carriers.spark.errors import SparkJobError, SparkStartError
from carriers.storage.base import Storage
from carriers.storage.delta import DeltaStorage
from carriers.storage.fileio import FileIOStorage
from carriers.storage.hashing import REMOTE_CHUNK, REMOTE_WORKERS, hash_location, hash_locations
from carriers.storage.options import environment_options

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from attest.content import ContentDigest
    from attest.signing.policy import TrustPolicy
    from attest.verify.report import Report
    from carriers.base import ContentReader
    from carriers.content_store import ContentPass
    from carriers.core import AttestedTable
    from carriers.refs import TableRef

__all__ = [
    "EXECUTOR_HASH_BYTES",
    "TASKS_PER_CORE",
    "ExecutorHasher",
    "HashingStats",
    "RoutedHasher",
    "SessionOnDemand",
    "StorageRecipe",
    "cli_session",
    "code_zip",
    "executor_content",
    "executor_hasher",
    "executor_threshold",
    "plan_buckets",
    "ship_code",
    "storage_recipe",
    "verify",
]

# The hook hashes a write on the executors from this many bytes to hash on (docs/hashing.md, "Where to hash"):
# below it the driver is done before a Spark job has even scheduled its tasks.
EXECUTOR_HASH_BYTES = 512 << 20

# Buckets per core of the cluster: with a few waves of tasks a slow executor or a straggler file costs at most a
# fraction of a wave; many more would add per-task overhead (~10 ms each) for nothing.
TASKS_PER_CORE = 3

# A data file whose rows are digested too (ContentPass) is read once into the task's memory, hashed and parsed from
# that one read, up to this size; a bigger one is hashed as it streams and read again for its rows (its rows are
# decoded into memory either way: pyarrow reads a Parquet file's row groups whole).
SINGLE_READ_BYTES = 512 << 20

JOB_GROUP_PREFIX = "recipe-attest-hash"
_POLL_S = 0.2
_T = TypeVar("_T")


# ---- what executors need to open the table's filesystem ---------------------------------------------------------
@dataclass(frozen=True)
class StorageRecipe:
    """A picklable description of a table's ``Storage``, rebuilt on each executor."""

    kind: Literal["delta", "fileio"]
    uri: str
    options: Mapping[str, str] = field(default_factory=dict)  # Delta storage options / Iceberg FileIO properties
    io_class: str = ""  # "module:QualName" of the Iceberg FileIO

    def open(self) -> Storage:
        if self.kind == "delta":
            return DeltaStorage(self.uri, dict(self.options))
        import importlib

        module, _, name = self.io_class.partition(":")
        cls: Any = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
        return FileIOStorage(self.uri, cls(dict(self.options)))

    def __repr__(self) -> str:  # never print options: they carry credentials
        return f"StorageRecipe({self.kind}, {self.uri!r}, {len(self.options)} option(s))"


def storage_recipe(storage: Storage) -> StorageRecipe:
    """What an executor needs to read the files ``storage`` reads (credentials included: they travel in the task)."""
    if isinstance(storage, DeltaStorage):
        # The driver's environment settings of the store travel too (explicit options win): an executor reads the
        # objects as the driver's delta-rs does, whether or not its own environment names the store.
        return StorageRecipe("delta", storage.uri, {**environment_options(storage.uri), **storage.options})
    if isinstance(storage, FileIOStorage):
        io = storage.io
        cls = type(io)
        return StorageRecipe("fileio", storage.uri, dict(getattr(io, "properties", {}) or {}),
                             io_class=f"{cls.__module__}:{cls.__qualname__}")
    raise CarrierError(f"{type(storage).__name__} cannot be handed to Spark executors (only Delta storage and "
                       "Iceberg FileIO can)", code=Code.UNSUPPORTED_TABLE)


# ---- the code executors run ----------------------------------------------------------------------------------------
SHIPPED_PACKAGES = ("attest", "carriers")
_shipped: dict[str, Path] = {}  # Spark application id -> the zip its executors were given
_ship_lock = threading.Lock()


def _package_files(package: str) -> list[tuple[str, Path]]:
    """(name in the zip, file) for every file of the package the driver imported (no ``__pycache__``, no bytecode)."""
    import importlib

    module = importlib.import_module(package)
    root = Path(module.__file__ or "").resolve().parent
    found: list[tuple[str, Path]] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo") or not path.is_file():
            continue
        found.append(((Path(package) / rel).as_posix(), path))
    return found


def _zip_holds(archive: Path, contents: Sequence[tuple[str, bytes]]) -> bool:
    import zipfile

    try:
        with zipfile.ZipFile(archive) as z:
            return z.namelist() == [n for n, _ in contents] and all(z.read(n) == d for n, d in contents)
    except (OSError, zipfile.BadZipFile, KeyError):
        return False


def code_zip(cache_dir: Path | None = None) -> Path:
    """A zip of the ``attest`` and ``carriers`` packages as this process imported them, for executors to import:
    built once per content (its name is the SHA-256 of the files' names and bytes) under ``<cache>/pyfiles``, and
    rebuilt when the cached one does not hold exactly those files (truncated, or changed by anyone)."""
    import zipfile

    from carriers.spark.jars import default_cache_dir

    files = [entry for package in SHIPPED_PACKAGES for entry in _package_files(package)]
    digest = hashlib.sha256()
    contents: list[tuple[str, bytes]] = []
    for name, path in files:
        data = path.read_bytes()
        contents.append((name, data))
        digest.update(name.encode("utf-8") + b"\0" + len(data).to_bytes(8, "big") + data)
    folder = (cache_dir or default_cache_dir()).expanduser() / "pyfiles"
    target = folder / f"recipe_attest-{digest.hexdigest()[:20]}.zip"
    if _zip_holds(target, contents):  # a cached zip is used only if it holds exactly these files
        return target
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in contents:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # same content, same bytes
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, data)
        os.replace(tmp, target)  # concurrent builders write the same bytes
    finally:
        tmp.unlink(missing_ok=True)
    return target


def ship_code(sc: SparkContext) -> Path | None:
    """Hand the executors of a cluster the code they run (``code_zip`` through ``sc.addPyFile``), once per
    SparkContext, before its first hashing job; None under a local master, whose executors run the driver's own
    interpreter and import what it imports."""
    if str(sc.master).startswith("local"):
        return None
    with _ship_lock:
        app = str(sc.applicationId)
        if app in _shipped:
            return _shipped[app]
        try:
            archive = code_zip()
        except OSError as exc:
            raise SparkJobError(f"could not build the code the executors run ({exc})") from None
        try:
            sc.addPyFile(str(archive))
        except Exception as exc:  # a stopped context, a Py4J error: no job can run, none is started
            raise SparkJobError(f"could not hand the executors the code they run: {_executor_failure(exc)}") from None
        _shipped[app] = archive
        return archive


# ---- planning ---------------------------------------------------------------------------------------------------
def plan_buckets(files: Sequence[DataFile], slots: int) -> list[list[tuple[str, str]]]:
    """``(path, location)`` lists, at most ``slots`` of them, with bytes spread evenly: largest file first onto the
    least loaded bucket (LPT), so no task is left holding the big files at the end of the job."""
    return [[(f.path, f.location) for f in bucket] for bucket in _file_buckets(files, slots)]


def _file_buckets(files: Sequence[DataFile], slots: int) -> list[list[DataFile]]:
    count = min(len(files), max(1, slots))
    buckets: list[list[DataFile]] = [[] for _ in range(count)]
    loads = [(0, i) for i in range(count)]
    for f in sorted(files, key=lambda f: (-f.size, f.path)):
        load, i = heapq.heappop(loads)
        buckets[i].append(f)
        heapq.heappush(loads, (load + max(f.size, 1), i))  # an empty file still costs an open
    return [b for b in buckets if b]


# ---- the executor side ------------------------------------------------------------------------------------------
def _hash_buckets(recipe: StorageRecipe, done_files: Any, done_bytes: Any, cpu_seconds: Any,
                  buckets: Iterable[list[tuple[str, str]]]) -> Iterator[tuple[str, int, str | None]]:
    """Runs in an executor's Python worker: ``(path, bytes read, digest)`` per file, ``(path, -1, None)`` when it
    cannot be read. Local files are hashed one after another on the task's CPUs; object-store reads overlap."""
    from concurrent.futures import ThreadPoolExecutor

    from pyspark import TaskContext

    from carriers.storage.base import local_path_of

    context = TaskContext.get()
    threads = max(1, context.cpus()) if context is not None else 1
    for bucket in buckets:
        started = time.process_time()  # CPU seconds: what the work costs, whatever else shares the machine
        local = [(p, loc) for p, loc in bucket if local_path_of(loc) is not None]
        remote = [(p, loc) for p, loc in bucket if local_path_of(loc) is None]
        results: list[tuple[str, tuple[int, str] | None]] = [
            (p, hash_location(None, loc, threads=threads)) for p, loc in local]
        if remote:
            read = functools.partial(hash_location, recipe.open(), threads=threads)
            with ThreadPoolExecutor(max_workers=min(REMOTE_WORKERS, len(remote))) as pool:
                got = pool.map(read, [loc for _, loc in remote])
                results += [(p, r) for (p, _), r in zip(remote, got, strict=True)]
        cpu_seconds.add(time.process_time() - started)
        for path, result in results:
            done_files.add(1)
            if result is None:
                yield path, -1, None
            else:
                done_bytes.add(result[0])
                yield path, result[0], result[1]


_TOO_BIG = object()


def _read_once(location: str, size: int, storage: Callable[[], Storage], limit: int) -> Any:
    """The bytes of the file at ``location`` in one read: bytes, None when it cannot be read (the hashing rule:
    unreadable is absent), or _TOO_BIG above ``limit`` bytes."""
    from attest.hashing import open_regular
    from carriers.storage.base import local_path_of

    if size > limit:
        return _TOO_BIG
    local = local_path_of(location)
    try:
        if local is not None:
            fd, actual = open_regular(local)  # a FIFO or a device is never read, never waited on
            if actual > limit:
                os.close(fd)
                return _TOO_BIG
            with open(fd, "rb") as handle:
                return handle.read()
        stream = storage().open_location(location)
    except Exception:
        return None
    try:
        chunks: list[bytes] = []
        read = 0
        while chunk := stream.read(REMOTE_CHUNK):
            chunks.append(bytes(chunk))
            read += len(chunk)
            if read > limit:
                return _TOO_BIG
        return b"".join(chunks)
    except Exception:
        return None
    finally:
        stream.close()


def _hash_and_digest_one(f: DataFile, reader: ContentReader, storage: Callable[[], Storage], threads: int,
                         limit: int) -> tuple[tuple[int, str] | None, bytes | None]:
    """((bytes read, BLAKE3) or None, the 4104-byte content digest or None) of one file; a data file of ``reader``
    is read once for both (up to ``limit`` bytes), any other is only hashed."""
    from blake3 import blake3

    from carriers.storage.base import local_path_of

    def hashed() -> tuple[int, str] | None:
        return hash_location(None if local_path_of(f.location) is not None else storage(), f.location,
                             threads=threads)

    if f.kind != "data" or f.path not in reader.paths:
        return hashed(), None
    data = _read_once(f.location, f.size, storage, limit)
    if data is None:
        return None, None
    if data is _TOO_BIG:
        result, data = hashed(), None
        if result is None:
            return None, None
    else:
        result = (len(data), blake3(data, max_threads=threads).hexdigest() if threads > 1 else
                  blake3(data).hexdigest())
    try:
        digest = reader.digest(f, storage(), data)
    except Exception:  # the driver digests it again, with the error its own read gives
        return result, None
    return result, None if digest is None else digest.to_bytes()


def _hash_and_digest_buckets(recipe: StorageRecipe, reader: ContentReader, limit: int, done_files: Any,
                             done_bytes: Any, cpu_seconds: Any, buckets: Iterable[list[DataFile]]
                             ) -> Iterator[tuple[str, int, str | None, bytes | None]]:
    """Runs in an executor's Python worker: ``(path, bytes read, BLAKE3, content digest)`` per file (-1 and Nones
    when it cannot be read, a None digest when its rows could not be digested here). Files are read one after
    another: a file's bytes and rows are in memory while it is digested."""
    from pyspark import TaskContext

    context = TaskContext.get()
    threads = max(1, context.cpus()) if context is not None else 1
    opened: list[Storage] = []

    def storage() -> Storage:
        if not opened:
            opened.append(recipe.open())
        return opened[0]

    for bucket in buckets:
        for f in bucket:
            started = time.process_time()
            result, digest = _hash_and_digest_one(f, reader, storage, threads, limit)
            cpu_seconds.add(time.process_time() - started)
            done_files.add(1)
            if result is None:
                yield f.path, -1, None, None
            else:
                done_bytes.add(result[0])
                yield f.path, result[0], result[1], digest


# ---- the driver side --------------------------------------------------------------------------------------------
@dataclass
class HashingStats:
    """Where files were hashed (the hook shows these as ``hook.hashing``)."""

    driver_files: int = 0
    driver_bytes: int = 0
    executor_files: int = 0
    executor_bytes: int = 0
    tasks: int = 0
    seconds: float = 0.0  # wall time of the executor jobs, as the driver saw them
    executor_cpu_seconds: float = 0.0  # CPU time the tasks spent reading and hashing
    job_groups: list[str] = field(default_factory=list)  # Spark job groups of the hashing jobs (status tracker)
    fallbacks: int = 0  # executor jobs that failed and were redone on the driver (the hook only)
    executor_content_files: int = 0  # data files whose content digest the executors computed (in the hashing task)


def _context(spark: Any) -> SparkContext:
    try:
        sc: SparkContext = spark.sparkContext
    except Exception as exc:  # Spark Connect sessions have no SparkContext
        raise SparkJobError("hashing on executors needs a classic SparkSession (the RDD API); Spark Connect sessions "
                            "have none") from exc
    return sc


class SessionOnDemand:
    """The command line's SparkSession, started the first time bytes are to be hashed: a table that is stale,
    unattested or checked at the files level never pays for a JVM."""

    def __init__(self, master: str | None = None) -> None:
        self.master = master
        self.spark: SparkSession | None = None

    def get(self) -> SparkSession:
        if self.spark is None:
            self.spark = cli_session(self.master)
        return self.spark

    def stop(self) -> None:
        if self.spark is not None:
            self.spark.stop()
            self.spark = None


class ExecutorHasher:
    """A ``FileHasher`` (attest.verify.table) that hashes on Spark executors; one Spark job per call."""

    def __init__(self, spark: SparkSession | SparkContext | SessionOnDemand, storage: Storage, *, label: str = "",
                 stats: HashingStats | None = None, tasks_per_core: int = TASKS_PER_CORE) -> None:
        self._spark = spark
        self.recipe = storage_recipe(storage)
        self.label = label or storage.uri
        self.stats = stats if stats is not None else HashingStats()
        self.tasks_per_core = tasks_per_core

    @property
    def sc(self) -> SparkContext:
        spark: Any = self._spark
        if isinstance(spark, SessionOnDemand):
            spark = spark.get()
        # A SparkContext is taken as is (it has parallelize); a SparkSession gives its context.
        return spark if hasattr(spark, "parallelize") else _context(spark)

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        """BLAKE3 of each file, keyed by ``DataFile.path``; a file no executor could read is absent (the verifier
        reports it). Raises SparkJobError when the job itself fails (executors without recipe-attest, ...)."""
        if progress is not None:
            progress(0, len(files), 0)
        if not files:
            return {}
        sc = self.sc
        task = functools.partial(_hash_buckets, self.recipe)
        rows = self._run(sc, plan_buckets(files, self._slots(sc)), task, f"hashing {len(files)} file(s)", len(files),
                         progress)
        wanted = {f.path for f in files}
        out: dict[str, str] = {}
        for path, size, digest in rows:
            if digest is not None and path in wanted:
                out[path] = digest
                self.stats.executor_files += 1
                self.stats.executor_bytes += size
        return out

    def hash_and_digest(self, files: Sequence[DataFile], reader: Callable[[], ContentReader | None], *,
                        progress: Progress | None = None) -> tuple[dict[str, str], dict[str, ContentDigest]]:
        """(BLAKE3 of each file, the content digest of each data file ``reader()`` reads), in one Spark job whose
        tasks read each data file once for both; a file no executor could read is absent from both, one whose rows
        could not be digested there from the digests (the caller digests it on the driver: the same code, the same
        result or error). ``reader`` returning None (the format cannot build one): only hashes."""
        if progress is not None:
            progress(0, len(files), 0)
        if not files:
            return {}, {}
        sc = self.sc
        content = reader()
        if content is None:
            return self.hash_files(files, progress=progress), {}
        from attest.content import ContentDigest

        task = functools.partial(_hash_and_digest_buckets, self.recipe, content, SINGLE_READ_BYTES)
        rows = self._run(sc, _file_buckets(files, self._slots(sc)), task,
                         f"hashing and digesting {len(files)} file(s)", len(files), progress)
        wanted = {f.path for f in files}
        hashes: dict[str, str] = {}
        digests: dict[str, ContentDigest] = {}
        for path, size, blake3_hex, digest in rows:
            if blake3_hex is None or path not in wanted:
                continue
            hashes[path] = blake3_hex
            self.stats.executor_files += 1
            self.stats.executor_bytes += size
            if digest is not None and path in content.paths:
                digests[path] = ContentDigest.from_bytes(digest)
                self.stats.executor_content_files += 1
        return hashes, digests

    def _slots(self, sc: SparkContext) -> int:
        """How many buckets a job's files are planned into: ``tasks_per_core`` per default-parallelism slot."""
        return sc.defaultParallelism * self.tasks_per_core

    def _run(self, sc: SparkContext, buckets: Sequence[Any], task: Callable[..., Iterator[Any]], doing: str,
             total: int, progress: Progress | None) -> list[Any]:
        """One Spark job, the same for every kind of task: the code shipped, one bucket per partition mapped by
        ``task(done_files, done_bytes, cpu_seconds, buckets)`` (accumulators it adds to), collected in a job group of
        its own described as ``doing`` (``_collect``: progress, Ctrl-C); the job's time, CPU, tasks and group go to
        ``stats``. The rows the tasks yielded."""
        ship_code(sc)
        done_files, done_bytes, cpu = sc.accumulator(0), sc.accumulator(0), sc.accumulator(0.0)
        # One bucket per partition: parallelize slices a list of n items into n partitions of one item each.
        rdd = sc.parallelize(buckets, len(buckets)).mapPartitions(functools.partial(task, done_files, done_bytes,
                                                                                    cpu))
        group = f"{JOB_GROUP_PREFIX}-{uuid.uuid4().hex[:12]}"
        start = time.monotonic()
        rows = _collect(sc, rdd, group, f"recipe-attest: {doing} of {self.label}", total, progress, done_files,
                        done_bytes)
        self.stats.seconds += time.monotonic() - start
        self.stats.executor_cpu_seconds += float(cpu.value)
        self.stats.tasks += len(buckets)
        self.stats.job_groups.append(group)
        return rows


def _collect(sc: SparkContext, rdd: Any, group: str, description: str, total: int, progress: Progress | None,
             done_files: Any, done_bytes: Any) -> list[Any]:
    """``rdd.collect()`` in a job group, reporting progress on the calling thread while the job runs; Ctrl-C
    cancels the job."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            sc.setJobGroup(group, description, interruptOnCancel=True)
            result.extend(rdd.collect())
        except BaseException as exc:  # handed to the calling thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="attest-executor-hash", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_POLL_S)
            if progress is not None and worker.is_alive():
                progress(min(int(done_files.value), total - 1), total, int(done_bytes.value))
    except BaseException:
        sc.cancelJobGroup(group)
        raise
    if failure:
        raise SparkJobError(f"the hashing job failed on the executors: {_executor_failure(failure[0])}. The Python "
                            "Spark runs there (spark.pyspark.python / PYSPARK_PYTHON) needs recipe-attest's "
                            "dependencies (blake3; deltalake or pyiceberg for object stores)") from None
    if progress is not None:
        progress(total, total, int(done_bytes.value))
    return result


_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)): (.*)$")


def _executor_failure(exc: BaseException) -> str:
    """The one line that says why: the executor's Python exception when there is one, else the first line."""
    text = str(exc)
    found = [m for m in (_PY_ERROR.match(line.strip()) for line in text.splitlines()) if m]
    python = [m for m in found if not m.group(1).startswith(("org.", "java.", "scala.", "py4j."))]
    pick = python[-1] if python else (found[0] if found else None)
    if pick is not None:
        return f"{pick.group(1).rsplit('.', 1)[-1]}: {pick.group(2)[:300]}"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:300]


class RoutedHasher:
    """The hook's hasher: at least ``threshold`` bytes to hash go to the executors, fewer (or any, with ``threshold``
    None) stay on the driver. A failed executor job is redone on the driver (same bytes, same hashes): a write is
    never left unattested because the executors could not hash it."""

    def __init__(self, spark: SparkSession, storage: Storage, *, threshold: int | None = EXECUTOR_HASH_BYTES,
                 stats: HashingStats | None = None, label: str = "") -> None:
        self.spark = spark
        self.storage = storage
        self.threshold = threshold
        self.stats = stats if stats is not None else HashingStats()
        self.label = label

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        hashed = self._on_executors(files, lambda hasher: hasher.hash_files(files, progress=progress))
        return hashed if hashed is not None else self._on_driver(files, progress)

    def hash_and_digest(self, files: Sequence[DataFile], reader: Callable[[], ContentReader | None], *,
                        progress: Progress | None = None) -> tuple[dict[str, str], dict[str, ContentDigest]]:
        """As ``hash_files``, with the data files' content digests computed in the same executor tasks when the
        files go to the executors (``ExecutorHasher.hash_and_digest``); below the threshold, or when the job fails,
        only hashes (the content digests are then computed on the driver, as without executors)."""
        done = self._on_executors(files, lambda hasher: hasher.hash_and_digest(files, reader, progress=progress))
        return done if done is not None else (self._on_driver(files, progress), {})

    def _on_executors(self, files: Sequence[DataFile], job: Callable[[ExecutorHasher], _T]) -> _T | None:
        """``job`` on an ExecutorHasher when ``files`` hold at least ``threshold`` bytes; None when they stay on the
        driver, or when the executor job failed (logged, counted in ``stats.fallbacks``)."""
        total = sum(max(f.size, 0) for f in files)
        if self.threshold is None or total < self.threshold or not files:
            return None
        try:
            return job(ExecutorHasher(self.spark, self.storage, label=self.label, stats=self.stats))
        except (SparkJobError, CarrierError) as exc:
            from attest.render.terminal import terminal_safe_logger

            terminal_safe_logger("attest.spark").warning("attest.spark: hashing %d file(s) on the executors "
                                                         "failed (%s); hashing them on the driver", len(files),
                                                         exc.message)
            self.stats.fallbacks += 1
            return None

    def _on_driver(self, files: Sequence[DataFile], progress: Progress | None) -> dict[str, str]:
        hashes = hash_locations(self.storage, files, progress=progress)
        self.stats.driver_files += len(hashes)
        self.stats.driver_bytes += sum(f.size for f in files if f.path in hashes)
        return hashes


# ---- verification -------------------------------------------------------------------------------------------------
def executor_threshold(spark: Any, explicit: int | None = None) -> int | None:
    """The hook's threshold: ``explicit`` when given (any master); else EXECUTOR_HASH_BYTES on a cluster, and None
    (always the driver) under a local master: its executors are the driver's own cores, so a Spark job would only
    add its fixed cost and hash on one thread per task what the driver hashes on all of them."""
    if explicit is not None:
        return explicit
    try:
        master = str(spark.sparkContext.master)
    except Exception:  # no SparkContext (Spark Connect): nothing to hand work to
        return None
    return None if master.startswith("local") else EXECUTOR_HASH_BYTES


def executor_hasher(carrier: AttestedTable, spark: SparkSession | SparkContext | SessionOnDemand, *,
                    stats: HashingStats | None = None) -> ExecutorHasher:
    """A hasher of ``carrier``'s live files on ``spark``'s executors (its ``stats`` say what it did), to pass to
    ``verify_state`` / ``verify_table`` / ``record``."""
    return ExecutorHasher(spark, carrier.storage, label=carrier.reference, stats=stats)


def executor_content(carrier: AttestedTable, spark: SparkSession | SparkContext | SessionOnDemand, *,
                     stats: HashingStats | None = None) -> ContentPass:
    """Hand ``carrier``'s content digests to ``spark``'s executors: the digests its ``state`` needs (the files a
    rewrite added, checked against the recorded ones) are computed there, each file hashed in the same read, and the
    returned ContentPass — the FileHasher to verify with — does not read those files again. Installed on the carrier
    (``_content_pass``) until it is closed; its ``hasher`` is the ExecutorHasher (its ``stats`` for the note)."""
    from carriers.content_store import ContentPass

    current = carrier._content_pass
    if current is not None and isinstance(current.hasher, ExecutorHasher):
        return current
    content = ContentPass(carrier, executor_hasher(carrier, spark, stats=stats))
    carrier._content_pass = content
    return content


def executor_note(hasher: ExecutorHasher) -> str | None:
    """The report's note on where bytes were hashed (None when nothing was)."""
    stats = hasher.stats
    if not stats.tasks:
        return None
    return (f"bytes hashed on Spark executors ({hasher.sc.master}): {stats.executor_files} file(s), "
            f"{stats.executor_bytes:,} bytes in {stats.tasks} task(s)")


def verify(spark: SparkSession, table: str | TableRef | AttestedTable, *, version: str | int | None = None,
           level: Literal["schema", "files", "bytes"] | None = "bytes",
           storage_options: Mapping[str, str] | None = None, allow_external: bool = False,
           progress: Progress | None = None, policy: TrustPolicy | None = None) -> Report:
    """Verify a table version with its bytes hashed on ``spark``'s executors: the same checks, codes and verdict
    as local verification (``attest.verify.table.verify_table``), which decides on the driver; with ``policy``,
    the attestation's signature is judged too (docs/signing.md)."""
    from attest.verify.table import verify_table
    from carriers.core import AttestedTable
    from carriers.refs import open_table, parse_ref

    if isinstance(table, AttestedTable):
        carrier = table
    else:
        ref = parse_ref(table) if isinstance(table, str) else table
        if version is None:
            version = ref.version
        carrier = open_table(ref, storage_options=storage_options, allow_external=allow_external)
    content = executor_content(carrier, spark)
    try:
        report = verify_table(carrier, version=version, level=level, progress=progress, policy=policy,
                              hasher=content)
    finally:
        carrier._content_pass = None
    hasher = content.hasher
    assert isinstance(hasher, ExecutorHasher)
    note = executor_note(hasher)
    if note is not None:
        report.notes.append(note)
    return report


# ---- a session for the command line -----------------------------------------------------------------------------
@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While the JVM starts: it (and the Python workers it forks later) inherit fd 1, and whatever they print must
    not land in the one JSON object ``--json`` prints on stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def cli_session(master: str | None = None, *, app_name: str = "attest") -> SparkSession:
    """A SparkSession for ``attest verify/audit --spark``: plain Spark (the driver reads tables with delta-rs and
    pyiceberg, so no Delta or Iceberg jars), ``master`` default ``local[*]``. For a local master the executors run
    this interpreter (``PYSPARK_PYTHON``, unless already set), which has recipe-attest."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    from carriers.spark.java import use_java

    runtime = use_java()
    master = master or "local[*]"
    local = master.startswith("local")
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log4j = Path(__file__).with_name("log4j2.xml").as_uri()
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={log4j}",
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile={log4j}",
    }
    if local:
        conf.update({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        with _stdout_to_stderr():
            spark = builder.getOrCreate()
    except PySparkRuntimeError as exc:
        raise SparkStartError(f"Spark ({runtime.describe()}, master {master}) did not start: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    except Exception as exc:  # a bad master URL and the like surface as Py4J/Java errors
        raise SparkStartError(f"Spark (master {master}) did not start: {_executor_failure(exc)}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark
