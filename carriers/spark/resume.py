"""What a streaming query restarted from its checkpoint reads before it reaches the version the read gate checks.

A fresh Delta stream reads its source's latest version (its snapshot, then each later commit's adds): the gate checks
that version. A query restarted from a checkpoint does not: it resumes at the offset its checkpoint logged, and reads
the adds of every commit since — files a later commit removed among them (a compaction's originals, rows a ``DELETE``
took out, skipped past with ``skipChangeCommits``), which the latest version, the one checked, no longer holds
(round 24: an unattested append later deleted read by a restarted stream the gate had let through). So the gate also
checks, for a restarted Delta source, every version whose added files the stream reads and the latest version does
not hold: that version's own attestation must cover them.

Offsets are read by Spark's own offset log (``<checkpoint>/offsets/<batch>``; a Delta source's offset names its table
by id, ``reservoirId``). The last batch logged may not have run (no ``commits/`` entry): Spark runs it again from the
batch before's offset, so the earliest of the last two is where the restarted query starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from carriers.spark.plan import opt, scala_map, seq

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CheckpointUnknown", "DeltaResume", "checkpoint_location", "delta_resume", "delta_versions_past",
           "resumed_offsets"]

_RESUME_COMMITS_MAX = 10_000  # commits looked at between a checkpoint's offset and the latest version; more: refused


class CheckpointUnknown(Exception):
    """The checkpoint a query starts from, or what it logged, could not be read: what it resumes from is unknown."""


def checkpoint_location(spark: SparkSession, writer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Where a ``DataStreamWriter.start`` / ``toTable`` call's query keeps its checkpoint, as Spark resolves it
    (``StreamingQueryManager.createQuery``): the ``checkpointLocation`` option (the call's keyword options, then those
    set on the writer; keys ignore case), else ``spark.sql.streaming.checkpointLocation`` / the query's name. None: a
    query without one starts fresh (a temporary checkpoint or a new random folder)."""
    options: dict[str, str] = {}
    jwrite = getattr(writer, "_jwrite", None)
    if jwrite is not None:
        try:
            field = jwrite.getClass().getDeclaredField("extraOptions")
            field.setAccessible(True)
            options = {str(k).lower(): str(v) for k, v in scala_map(field.get(jwrite)).items()}
        except Exception as exc:  # another Spark's writer: the options set on it cannot be seen
            raise CheckpointUnknown(f"the stream writer's options could not be read ({type(exc).__name__})") from exc
    options.update({str(k).lower(): str(v) for k, v in kwargs.items() if v is not None and k not in _CALL_ARGS})
    name = kwargs.get("queryName") or (args[4] if len(args) > 4 else None)  # start / toTable: the fifth argument
    if name:
        options["queryname"] = str(name)
    if options.get("checkpointlocation"):
        return options["checkpointlocation"]
    root = spark.conf.get("spark.sql.streaming.checkpointLocation", None)
    name = options.get("queryname")
    return f"{root.rstrip('/')}/{name}" if root and name else None


_CALL_ARGS = frozenset({"path", "format", "outputMode", "partitionBy", "queryName", "tableName", "clusterBy"})


def resumed_offsets(spark: SparkSession, checkpoint: str) -> list[dict[str, Any]]:
    """The source offsets a query restarted from ``checkpoint`` resumes from: those of its last two logged batches
    (the last may not have run; it is run again from the one before), each a parsed JSON object, read by Spark's own
    offset log (``OffsetSeqLog``: the files Spark takes for batches and the latest it resumes from, as it reads
    them). Empty: the query has logged no batch, and starts fresh."""
    jvm = spark._jvm
    assert jvm is not None
    try:
        folder = jvm.org.apache.hadoop.fs.Path(checkpoint, "offsets")
        if not folder.getFileSystem(spark._jsc.hadoopConfiguration()).exists(folder):
            return []  # (Spark's log makes its folder when opened: a query that never ran leaves nothing behind)
        log = _offset_log(jvm, spark._jsparkSession, str(folder.toString()))
        latest = opt(log.getLatest())
        if latest is None:
            return []
        batch = int(latest._1())
        found: list[dict[str, Any]] = []
        for offsets in (opt(log.get(batch - 1)) if batch > 0 else None, latest._2()):
            for offset in seq(offsets.offsets()) if offsets is not None else ():
                text = opt(offset)
                parsed = None if text is None else json.loads(str(text.json()))
                if isinstance(parsed, dict):
                    found.append(parsed)
        return found
    except Exception as exc:  # a log that cannot be read cannot show where the query resumes
        raise CheckpointUnknown(f"its offsets could not be read ({type(exc).__name__})") from exc


_OFFSET_LOGS = ("org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqLog",  # Spark 4.1
                "org.apache.spark.sql.execution.streaming.OffsetSeqLog")


def _offset_log(jvm: Any, session: Any, path: str) -> Any:
    """Spark's offset log of ``path``, opened as a query opens it."""
    from py4j.java_gateway import JavaClass

    for name in _OFFSET_LOGS:
        cls = jvm
        for part in name.split("."):
            cls = getattr(cls, part)
        if isinstance(cls, JavaClass):
            return cls(session, path)
    raise CheckpointUnknown("Spark's offset log class was not found")


@dataclass(frozen=True)
class DeltaResume:
    """Where a restarted query resumes a Delta source: ``since`` (the first version whose adds it reads, or the
    version whose snapshot it reads first when ``snapshot``)."""

    since: int
    snapshot: bool


def delta_resume(offsets: list[dict[str, Any]], table_id: str) -> DeltaResume | None:
    """The earliest place the offsets resume the Delta table ``table_id`` from, or None when none names it (the
    source starts fresh: its latest version)."""
    mine = [o for o in offsets if o.get("reservoirId") == table_id]
    if not mine:
        return None
    for o in mine:
        if type(o.get("reservoirVersion")) is not int or o["reservoirVersion"] < 0:
            raise CheckpointUnknown(f"an offset of the table names no version ({o.get('reservoirVersion')!r})")
    first = min(mine, key=lambda o: (o["reservoirVersion"], o.get("isStartingVersion") is not True))
    return DeltaResume(first["reservoirVersion"], first.get("isStartingVersion") is True)


def delta_versions_past(carrier: Any, resume: DeltaResume, latest: int) -> list[int]:
    """The versions of a Delta table whose files a query resuming at ``resume`` reads and version ``latest`` does
    not hold (each must verify itself for the read to be checked): a version whose data-change add names a file not
    live at ``latest`` (spelled any way: compared as the carrier reads both), or carries a deletion vector (the rows
    it hides may differ from the latest's); the resumed snapshot's version when it holds any such file. Raises
    ``CheckpointUnknown`` when the commits in between cannot be read or are too many to look at."""
    from carriers.core import canonical_relative
    from carriers.delta.log import read_commit

    if latest - resume.since > _RESUME_COMMITS_MAX:
        raise CheckpointUnknown(f"it resumes {latest - resume.since} versions back, more than "
                                f"{_RESUME_COMMITS_MAX} looked at")
    if resume.since > latest:
        return []
    live = {f.path for f in carrier.state(str(latest)).live_files}
    past: list[int] = []
    if resume.snapshot and not {f.path for f in carrier.state(str(resume.since)).live_files} <= live:
        past.append(resume.since)
    for v in range(resume.since + (1 if resume.snapshot else 0), latest + 1):
        commit = read_commit(carrier.storage, v)
        if commit is None:  # log cleanup: what the stream reads there cannot be looked at
            raise CheckpointUnknown(f"version {v}'s commit is gone from the log")
        for add in commit.adds:
            if add.get("dataChange") is False:  # a compaction's rewrite: the source does not read it
                continue
            path, _ = canonical_relative(str(add.get("path", "")))
            if path is None or path not in live or add.get("deletionVector") is not None:
                past.append(v)
                break
    return past
