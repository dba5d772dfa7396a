"""Reading a Spark write command's analysed plan: target, versions read, and the program identity.

Everything JVM-side goes through py4j ``JavaObject``s handed in by the listener; nothing here imports pyspark.
The canonical program document (``program_document``) is pure Python over ``LogicalPlan.toJSON()`` so it is
unit-testable without a JVM. What is in and out of it: docs/spark.md, "Program identity".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from attest.canonical import digest
from attest.identity.inputs import ObservedInput

__all__ = [
    "CHANGES_READ",
    "ICEBERG_CHANGE_OPTIONS",
    "OPAQUE_CODE",
    "PYTHON_CODE",
    "RDD_LEAVES",
    "Changes",
    "LeafInfo",
    "cached_versions",
    "canonical_plan",
    "carrier_uri",
    "iceberg_change_options",
    "leaves",
    "lenient_confs",
    "local_inputs",
    "local_rows_digest",
    "mark_cached",
    "opaque_code",
    "opaque_inputs",
    "opt",
    "program_document",
    "program_hash_from_json",
    "python_functions",
    "result_confs",
    "scala_map",
    "seq",
    "simple_name",
]

# Relation leaves: replaced by their table identity (or schema) in the program document.
RELATION_CLASSES = frozenset({
    "LogicalRelation", "DataSourceV2Relation", "DataSourceV2ScanRelation", "HiveTableRelation", "LogicalRDD",
    "LocalRelation", "StreamingRelation", "StreamingRelationV2", "ExternalRDD", "OneRowRelation",
    # a streaming query's sources once it runs (docs/streaming.md): replaced by what they read, never offsets
    "StreamingExecutionRelation", "StreamingDataSourceV2ScanRelation", "StreamingDataSourceV2Relation",
})
# Iceberg's Spark identifiers that select a snapshot of a table rather than name one (SparkCatalog.loadTable).
_ICEBERG_REF_PREFIXES = ("branch_", "tag_", "snapshot_id_", "at_timestamp_")
# Keys that are run- or environment-specific, never logic: JVM ids, streaming flags, statistics, plan ids.
_DROP_KEYS = frozenset({"jvmId", "isStreaming", "stats", "planId", "evalContext",
                        # uuid()/shuffle() seeds: drawn by the analyzer per run, never written by the user
                        "randomSeed"})


# Expressions and plan nodes that run user code the plan does not show (a Python function's pickled bytes, a JVM
# closure, a static method called by reflection): what they compute and what they read are not in the plan.
PYTHON_CODE = frozenset({"PythonUDF", "PythonUDAF", "PythonUDTF"})
OPAQUE_CODE = PYTHON_CODE | frozenset({
    "MapInPandas", "MapInArrow", "FlatMapGroupsInPandas", "FlatMapGroupsInArrow", "FlatMapCoGroupsInPandas",
    "FlatMapCoGroupsInArrow", "FlatMapGroupsInPandasWithState", "PythonMapInArrow",
    "ScalaUDF", "ScalaUDAF", "ScalaAggregator", "CallMethodViaReflection", "TryReflect",
    "MapPartitions", "MapPartitionsInR", "MapElements", "MapGroups", "FlatMapGroupsWithState", "CoGroup",
    "PythonDataSourcePartitions",
})
# Leaves whose rows an RDD computes (``df.rdd.map(f).toDF()``, ``createDataFrame(rdd)``, ``localCheckpoint()``):
# the RDD's functions and what its lineage read are in no plan.
RDD_LEAVES = frozenset({"LogicalRDD", "ExternalRDD"})
_CLASS_RE = re.compile(r'"class"\s*:\s*"[^"]*[.$]([A-Za-z0-9_]+)"')


def opaque_code(plan_json: str) -> set[str]:
    """The classes of ``OPAQUE_CODE`` a plan's JSON names, at any depth."""
    return {m for m in _CLASS_RE.findall(plan_json) if m in OPAQUE_CODE}


def opaque_inputs(classes: Sequence[str]) -> list[ObservedInput]:
    """User code the plan runs but does not show (a Python UDF, ``mapInPandas``, a JVM UDF, ``reflect``, an RDD's
    rows) can read anything — a file, a URL, a table outside the plan: one heuristic input ``code:<classes>`` says
    so, so that inputs are never ``strong`` on the word of the plan's relations alone (docs/spark.md, "Inputs")."""
    if not classes:
        return []
    return [ObservedInput(table="code:" + ",".join(sorted(set(classes))),
                          watermark="user code ran that the plan does not show: what it read is not known")]


def local_inputs(local_rows: Sequence[str]) -> list[ObservedInput]:
    """Rows a plan holds itself (a ``LocalRelation``: SQL ``VALUES``, ``INSERT INTO t VALUES``, ``MERGE … USING
    (VALUES …)``, Scala's ``Seq(...).toDF``): not in the program document (only their schema; ``toJSON`` writes the
    rows as ``"data": null``) nor a table read, so one heuristic input ``data:LocalRelation`` says so — whether or
    not the job read tables beside them — and the inputs are never ``strong`` on the word of the plan alone.
    ``local_rows``: each relation's ``local_rows_digest``, in plan order; they are the input's watermark, so two
    writes of other rows have other ``inputs_hash``es."""
    if not local_rows:
        return []
    return [ObservedInput(table="data:LocalRelation",
                          watermark="rows the plan holds itself: in neither the program nor a table read: "
                                    + "; ".join(local_rows))]


# Rows of a LocalRelation digested: beyond this many, only their count is recorded.
LOCAL_ROWS_DIGEST_LIMIT = 10_000


def local_rows_digest(node: Any, jvm: Any, limit: int = LOCAL_ROWS_DIGEST_LIMIT) -> str | None:
    """``<n> row(s), blake3 <hex>`` of a ``LocalRelation``'s rows — BLAKE3 over its schema and the Java serialization
    of its rows (``InternalRow``s: every value's exact binary form, in order; one py4j call, whatever the number of
    rows, so the listener callback it runs in does no per-row work) — None when it holds no row. More rows than
    ``limit`` or rows that cannot be read: their count (or that they are unknown) only — the input stays heuristic
    either way.

    Never through a generated class (``UnsafeProjection.create`` compiles one per schema, every one named
    ``GeneratedClass$SpecificUnsafeProjection``): py4j caches a method by its class's *name*, so a second schema's
    projection was called with the first one's method, failed, and two writes of other rows got one digest."""
    import blake3

    try:
        data = node.data()
        count = int(data.length())
    except Exception:
        return "rows not readable"
    if count == 0:
        return None
    noun = "row" if count == 1 else "rows"
    if count > limit:
        return f"{count} {noun}, not digested (more than {limit})"
    try:
        schema = str(node.schema().json()).encode()
        raw = bytes(jvm.org.apache.spark.util.Utils.serialize(data))
    except Exception:
        return f"{count} {noun}, not digested (unreadable)"
    h = blake3.blake3(len(schema).to_bytes(8, "big") + schema)
    h.update(raw)
    return f"{count} {noun}, blake3 {h.hexdigest()}"


def python_functions(plan: Any, limit: int = 10_000) -> list[str]:
    """The BLAKE3 of every Python function's pickled command in ``plan`` (UDFs, pandas UDFs, UDTFs, the function of
    ``mapInPandas`` / ``applyInPandas``), in plan pre-order. ``LogicalPlan.toJSON()`` writes a Python function as
    ``"func": null``: without these, two jobs differing only in a UDF's body have one program document."""
    import blake3

    out: list[str] = []
    stack: list[Any] = [plan]
    seen = 0
    while stack and seen < limit:  # bounded, as leaves(): a foreign structure is never trusted blindly
        seen += 1
        node = stack.pop()
        exprs = list(reversed(seq(node.expressions())))
        while exprs and seen < limit:
            seen += 1
            e = exprs.pop()
            if simple_name(e) in PYTHON_CODE:
                try:
                    command = bytes(e.func().command().unsafeArray())
                except Exception:  # another runtime's layout: a function we cannot name is not one we skip
                    command = b"<unreadable python function: " + str(e.toString()).encode() + b">"
                out.append(blake3.blake3(command).hexdigest())
            exprs.extend(reversed(seq(e.children())))
        stack.extend(child for child, _ in reversed(list(_children(node))))
    return out


def carrier_uri(location: str) -> str:
    """A location as Spark prints a Hadoop ``Path`` (``Path.toString()``: the path *unescaped*, ``file:/w/t%41`` for a
    folder literally named ``t%41``) as the URI the carriers take (``DeltaCarrier``, ``signed_table_uri``), which
    percent-decode a URI and stop its path at ``#`` / ``?``: ``%``, ``#`` and ``?`` escaped, nothing else changed (a
    plain path, without a scheme, is read literally already). Unescaped, the carriers opened another folder than Spark
    read (``t%41`` as ``tA``; round 20): the hook recorded that table's content as the input and the read gate verified
    it instead. Spark-side uses of the location (SQL ``delta.`path```, the program document's scrub) keep Spark's own
    spelling."""
    from attest.locations import is_uri

    if not is_uri(location):
        return location  # a plain path: the carriers read it literally
    scheme, _, rest = location.partition(":")
    return f"{scheme}:{rest.replace('%', '%25').replace('#', '%23').replace('?', '%3F')}"


def seq(s: Any) -> list[Any]:
    """A Scala Seq as a list."""
    it = s.iterator()
    out: list[Any] = []
    while it.hasNext():
        out.append(it.next())
    return out


def opt(o: Any) -> Any:
    """A Scala Option's value or None."""
    return o.get() if o is not None and o.isDefined() else None


def simple_name(o: Any) -> str:
    return str(o.getClass().getSimpleName())


CHANGES_READ = "its changes between versions (change-data files, files of other versions, rows later versions removed)"


@dataclass(frozen=True)
class Changes:
    """A relation that reads no one version of a table (round 23): its changes between versions — change-data files,
    files of versions other than the one pinned, rows later versions removed — or its metadata (an Iceberg metadata
    table). No attestation of a table version covers what it reads."""

    format: str  # "delta" | "iceberg"
    table: str  # the Delta table's URI, or ``iceberg://<catalog>/<namespace>.<table>``
    what: str  # how the read asked for them, as a refusal names it
    reads: str = CHANGES_READ  # what it reads that no attestation covers, as the refusal says it


# Iceberg read options that make a batch scan read the appends between two snapshots (IncrementalAppendScan) or a
# stream start in the past, not the snapshot the relation pins (SparkReadOptions).
ICEBERG_CHANGE_OPTIONS = ("start-snapshot-id", "end-snapshot-id", "start-timestamp", "end-timestamp",
                          "stream-from-timestamp")
# Iceberg's Spark table that reads a table's changelog (``t.changes``, ``create_changelog_view``).
_ICEBERG_CHANGELOG = "SparkChangelogTable"


@dataclass(frozen=True)
class LeafInfo:
    """A leaf relation of a plan: what it reads (format, name, location, pinned version)."""

    kind: str  # "delta" | "iceberg" | "path" | "memory"
    name: str | None = None  # catalog name (spark_catalog.default.t / iceberg.db.t) when there is one
    location: str | None = None  # Delta table root URI / file source path
    version: str | None = None  # Delta version / Iceberg snapshot id pinned at analysis
    catalog: str | None = None  # Spark catalog name (Iceberg)
    identifier: tuple[str, ...] | None = None  # namespace parts + table name within the catalog (Iceberg)
    in_tree: bool = True  # reached through children() (the order toJSON lists nodes in), not a subquery
    schema: list[str] = field(default_factory=list)
    read_version: str | None = None  # Iceberg: the snapshot the relation reads (pinned, else the loaded current one)
    # The JVM expression ids of the relation's output: how its node is recognised at any depth of the plan JSON
    # (nested plans inside commands and subquery expressions are not in toJSON's top-level pre-order list).
    expr_ids: tuple[int, ...] = ()
    # Delta: False when the read is not time travel. Delta then scans the log's latest snapshot when the query
    # executes (TahoeLogFileIndex.getSnapshotToScan), not ``version`` (snapshotAtAnalysis): a DataFrame analysed
    # before another writer committed reads that writer's rows.
    pinned: bool = True
    # Delta, unpinned: the newest version the relation's own DeltaLog knew when the leaf was read — after the query
    # ran, an upper bound of the version its scan read (the scan updated that very DeltaLog).
    latest: str | None = None
    cached: bool = False  # the query read this relation through Spark's cache (rows of an unknown version)
    # Marked cached because the cache held this table when the write was called and was changed before the listener
    # could ask it (a drop from the JVM side): the query may have read it (hook.Hook.note_cache).
    cache_dropped: bool = False
    # Why the scan may have skipped some of the version's files (``ignoreMissingFiles`` / ``ignoreCorruptFiles``
    # on): its rows are then a subset of the version's, never its content. None: every file was read or failed.
    lenient: str | None = None
    # A LocalRelation: its rows' count and digest (local_rows_digest); None for other leaves and an empty relation.
    rows: str | None = None
    # Iceberg: the branch the read named (``t.branch_b``, ``option("branch", b)``); None: main or a snapshot.
    branch: str | None = None
    # A read of changes across versions rather than of one version's rows (a Delta change data feed, an Iceberg
    # changelog or incremental read): what it reads, for the read gate's refusal and the hook's heuristic input.
    changes: Changes | None = None
    # A file source (kind "path"): its root paths one by one, as Spark prints them (``location`` joins them with ",").
    roots: tuple[str, ...] = ()
    # Delta, unpinned: brings the relation's own DeltaLog up to the log's latest version now and returns it (the read
    # gate under ``stalenessLimit``, where the scan reads that DeltaLog's cached snapshot, however old).
    refresh: Callable[[], str] | None = field(default=None, compare=False, repr=False)
    # A file source: its JVM file index (what Spark listed at analysis), for the read gate's look at the folders the
    # files are in (carriers/spark/gate.py ``folder_reads``); never compared, printed or recorded.
    index: Any = field(default=None, compare=False, repr=False)
    # A Hive-format table (``HiveTableRelation``, read by Hive's SerDe): its JVM ``CatalogTable``, whose partitions
    # (each at a location of its own) the read gate looks at; never compared, printed or recorded.
    catalog_table: Any = field(default=None, compare=False, repr=False)

    def cache_keys(self) -> set[str]:
        """How a cached plan's leaf and a write's leaf are matched: the same table by its name or its location."""
        return {f"{self.kind}:{v}" for v in (self.name, self.location) if v}

    def program_identity(self) -> str:
        """The name a program refers to this relation by: never a version, snapshot id or (if avoidable) path."""
        if self.kind == "memory":
            return "memory"
        return f"{self.kind}:{self.name or self.location or '?'}"


def _children(node: Any) -> Iterator[tuple[Any, bool]]:
    for child in seq(node.children()):
        yield child, True
    for extra in seq(node.innerChildren()):  # e.g. CTE definitions, command sub-plans: LogicalPlans only
        try:
            extra.output()  # only QueryPlans answer output(); expressions and other nodes raise
        except Exception:
            continue
        yield extra, False
    try:
        subqueries = seq(node.subqueries())  # plans inside expressions (EXISTS, IN, scalar subqueries) read too
    except Exception:
        subqueries = []
    for sub in subqueries:
        yield sub, False


def leaves(plan: Any, jvm: Any, *, rows: bool = True) -> list[LeafInfo]:
    """The relation leaves of ``plan`` in pre-order (children first, then inner plans), with pinned versions; with
    ``rows``, each LocalRelation's rows digested (``local_rows_digest``)."""
    out: list[LeafInfo] = []
    hadoop = jvm.java.lang.Class.forName("org.apache.spark.sql.execution.datasources.HadoopFsRelation")
    stack: list[tuple[Any, bool]] = [(plan, True)]
    seen = 0
    while stack and seen < 10_000:  # bounded: a plan is a tree, but never trust a foreign structure blindly
        seen += 1
        node, in_tree = stack.pop()
        cls = simple_name(node)
        if cls in RELATION_CLASSES:
            leaf = _leaf(node, cls, hadoop, in_tree)
            if rows and cls == "LocalRelation":
                leaf = replace(leaf, rows=local_rows_digest(node, jvm))
            out.append(leaf)
            continue
        kids = list(_children(node))
        for child, direct in reversed(kids):
            stack.append((child, in_tree and direct))
    return out


def _output(node: Any) -> tuple[list[str], tuple[int, ...]]:
    """The relation's output as ``name:type`` strings, and its expression ids."""
    try:
        attrs = seq(node.output())
        return ([f"{a.name()}:{a.dataType().simpleString()}" for a in attrs],
                tuple(int(a.exprId().id()) for a in attrs))
    except Exception:
        return [], ()


def ident_parts(ident: Any) -> tuple[str, ...]:
    """A Spark Identifier as plain parts: toString() quotes parts with special characters, which no catalog
    lookup by name would then find."""
    return (*(str(p) for p in ident.namespace()), str(ident.name()))


def _leaf(node: Any, cls: str, hadoop: Any, in_tree: bool) -> LeafInfo:
    info = _leaf_info(node, cls, hadoop, in_tree)
    schema, expr_ids = _output(node)
    return replace(info, schema=schema, expr_ids=expr_ids)


def _leaf_info(node: Any, cls: str, hadoop: Any, in_tree: bool) -> LeafInfo:
    if cls == "LogicalRelation":
        rel = node.relation()
        table = opt(node.catalogTable())
        name = None if table is None else str(table.identifier().unquotedString())
        if hadoop.isInstance(rel):
            location = rel.location()
            if simple_name(location) in ("TahoeLogFileIndex", "TahoeLogFileIndexWithCloudFetch") \
                    or hasattr(location, "snapshotAtAnalysis"):
                try:
                    version = str(location.snapshotAtAnalysis().version())
                    pinned, latest = _delta_scan(location, lambda: bool(location.isTimeTravelQuery()))
                    return LeafInfo("delta", name=name, location=str(location.path().toString()),
                                    version=version, in_tree=in_tree, pinned=pinned, latest=latest,
                                    lenient=_lenient_options(rel),
                                    refresh=None if pinned else _refresher(location))
                except Exception:
                    pass
            roots = [str(p.toString()) for p in seq(location.rootPaths())]
            return LeafInfo("path", name=name, location=",".join(roots), in_tree=in_tree, roots=tuple(roots),
                            index=location)
        if simple_name(rel) == "DeltaCDFRelation":  # readChangeFeed, table_changes(), table_changes_by_path()
            where = str(rel.deltaLog().dataPath().toString())
            span = f"from version {_scala_text(rel.startingVersion())} to {_scala_text(rel.endingVersion())}"
            return LeafInfo("path", name=name, location=where, in_tree=in_tree,
                            changes=Changes("delta", where, f"a Delta change data feed {span}"))
        return LeafInfo("path", name=name, location=str(rel.toString()), in_tree=in_tree)
    if cls in ("DataSourceV2Relation", "DataSourceV2ScanRelation"):
        rel = node.relation() if cls == "DataSourceV2ScanRelation" else node
        catalog = opt(rel.catalog())
        ident = opt(rel.identifier())
        table = rel.table()
        tcls = simple_name(table)
        if tcls == "RowLevelOperationTable":  # an Iceberg MERGE/UPDATE/DELETE reading its own target
            table = table.table()
            tcls = simple_name(table)
        cat_name = None if catalog is None else str(catalog.name())
        parts = None if ident is None else ident_parts(ident)
        name = ".".join(p for p in (cat_name, *(parts or ())) if p)
        if tcls == _ICEBERG_CHANGELOG:
            base = parts[:-1] if parts and parts[-1] == "changes" else parts  # t.changes: the table is t
            label = f"iceberg://{cat_name}/{'.'.join(base or ())}" if cat_name else (name or str(table.name()))
            return LeafInfo("path", name=name or str(table.name()), in_tree=in_tree,
                            changes=Changes("iceberg", label, "an Iceberg changelog (the table's changes between "
                                                              "snapshots: create_changelog_view, <table>.changes)"))
        if tcls == "SparkTable" and _iceberg_metadata_table(table.table()):
            # ``t.snapshots``, ``t.files``, ``t.position_deletes``…: the table's metadata, no snapshot's rows. Round
            # 23: read as a table named ``t.files``, which the hook failed to load (a job saving ``t.snapshots`` was
            # never attested) and the gate refused as unreadable.
            base = parts[:-1] if parts else parts
            label = f"iceberg://{cat_name}/{'.'.join(base or ())}" if cat_name else (name or str(table.name()))
            kind = parts[-1] if parts else str(table.name())
            return LeafInfo("path", name=name or str(table.name()), in_tree=in_tree, changes=Changes(
                "iceberg", label, f"an Iceberg metadata table ({kind})",
                reads="the table's metadata (snapshots, manifests, file lists and their statistics, delete files), "
                      "not a snapshot's rows"))
        if tcls == "SparkTable":
            sid = table.snapshotId()
            read = sid
            if read is None:
                current = table.table().currentSnapshot()
                read = None if current is None else current.snapshotId()
            parts = iceberg_table_parts(parts, table)
            asked = iceberg_change_options(rel.options())
            changes = None
            if asked:
                changes = Changes("iceberg", f"iceberg://{cat_name}/{'.'.join(parts or ())}",
                                  f"an Iceberg incremental read ({asked}): the appends between snapshots")
            return LeafInfo("iceberg", name=name or str(table.name()), version=None if sid is None else str(sid),
                            catalog=cat_name, identifier=parts, location=str(table.table().location()),
                            in_tree=in_tree, read_version=None if read is None else str(read), changes=changes,
                            branch=iceberg_branch(table, rel.options()))
        if tcls == "DeltaTableV2":
            pinned, latest = _delta_scan(table, lambda: bool(table.timeTravelOpt().isDefined()))
            return LeafInfo("delta", name=name or None, location=str(table.path().toString()),
                            version=str(table.initialSnapshot().version()), in_tree=in_tree, pinned=pinned,
                            latest=latest, refresh=None if pinned else _refresher(table))
        return LeafInfo("path", name=name or str(table.name()), in_tree=in_tree)
    if cls == "HiveTableRelation":
        # A Hive-format table read by its SerDe (not converted to a file source): its files are read from its
        # location and its partitions' own. Round 23: it was "memory", no input — a job reading it and an attested
        # table was recorded strong — and the read gate never looked where its partitions are.
        meta = node.tableMeta()
        where = opt(meta.storage().locationUri())
        location = None if where is None else str(where)
        return LeafInfo("path", name=str(meta.identifier().unquotedString()), location=location, in_tree=in_tree,
                        roots=(location,) if location else (), catalog_table=meta)
    return LeafInfo("memory", name=cls, in_tree=in_tree)  # the class: an RDD's rows are opaque (RDD_LEAVES)


# File-source options (and their session confs) under which a scan skips files it cannot open instead of failing
# (FileScanRDD): the rows read are then a subset of the version's, with nothing in the plan to say so.
LENIENT_READS = {"ignoremissingfiles": "spark.sql.files.ignoreMissingFiles",
                 "ignorecorruptfiles": "spark.sql.files.ignoreCorruptFiles"}


def _lenient_options(rel: Any) -> str | None:
    """The lenient-read options a HadoopFsRelation was read with (``.option("ignoreMissingFiles", "true")``)."""
    try:
        options = {str(k).lower(): str(v) for k, v in scala_map(rel.options()).items()}
    except Exception:  # options we cannot read: the session's confs still apply (lenient_confs)
        return None
    on = [key for key in LENIENT_READS if options.get(key, "").strip().lower() == "true"]
    return lenient_reason(on) if on else None


def lenient_confs(jspark: Any) -> str | None:
    """Why every file-source scan of a session may skip files: ``spark.sql.files.ignoreMissingFiles`` /
    ``ignoreCorruptFiles`` set to true. Cautious: a relation's own option ``false`` would override it, and is not
    looked for (the read is then recorded heuristic while it could have been strong)."""
    conf = jspark.sessionState().conf()
    on = [key for key, name in LENIENT_READS.items()
          if str(conf.getConfString(name, "false")).strip().lower() == "true"]
    return lenient_reason(on) if on else None


def lenient_reason(keys: Sequence[str]) -> str:
    names = ", ".join(LENIENT_READS[k].rsplit(".", 1)[-1] for k in keys)
    return f"read with {names}: files the scan could not open were skipped, not failed"


def _iceberg_metadata_table(table: Any) -> bool:
    """Whether an Iceberg ``Table`` (a SparkTable's) is a metadata table: a subclass of ``BaseMetadataTable``."""
    try:
        cls = table.getClass().getSuperclass()
        for _ in range(8):  # AllDataFilesTable -> BaseFilesTable -> BaseMetadataTable: a short chain
            if cls is None:
                return False
            if str(cls.getSimpleName()) == "BaseMetadataTable":
                return True
            cls = cls.getSuperclass()
    except Exception:
        return False
    return False


def iceberg_table_parts(parts: tuple[str, ...] | None, table: Any) -> tuple[str, ...] | None:
    """The identifier of the table an Iceberg ``SparkTable`` loaded by ``parts``: ``t.branch_audit``, ``t.tag_x``,
    ``t.snapshot_id_N``, ``t.at_timestamp_N`` name table ``t`` (the suffix selects a snapshot or a branch); a table
    literally so named keeps its name (Iceberg loads it first)."""
    if parts and len(parts) > 2 and parts[-1].startswith(_ICEBERG_REF_PREFIXES) and \
            str(table.table().name()).rsplit(".", 1)[-1] != parts[-1]:
        return parts[:-1]
    return parts


def iceberg_branch(table: Any, options: Any) -> str | None:
    """The branch an Iceberg read names: ``t.branch_b`` (Iceberg's ``SparkTable.branch()``) or the ``branch`` read
    option; None for main, or when neither can be read (the read is then judged as main's: its snapshot is checked
    all the same, only a trust policy's glob naming the branch's line would not apply)."""
    try:
        named = table.branch()
    except Exception:
        named = None
    if named is None:
        try:
            named = next((v for k, v in dict(options).items() if str(k).lower() == "branch"), None)
        except Exception:
            named = None
    return None if named is None or str(named) == "main" else str(named)


def iceberg_change_options(options: Any) -> str | None:
    """The options of an Iceberg relation (a Java map: ``.option(...)``, SQL ``WITH (...)``) that make it read changes
    rather than one snapshot, as ``k=v`` text; None when it asks for none. Keys are matched as Spark matches them,
    ignoring case. Options that cannot be read are taken as asking for changes: the read is then refused, not let
    through unchecked."""
    try:
        pairs = {str(k).lower(): str(v) for k, v in dict(options).items()}
    except Exception:
        return "options that could not be read"
    asked = [f"{k}={pairs[k]}" for k in ICEBERG_CHANGE_OPTIONS if k in pairs]
    return ", ".join(asked) or None


def _scala_text(value: Any) -> str:
    """A Scala Option (or a plain value) as text: ``latest`` for None."""
    try:
        if hasattr(value, "isDefined"):
            return str(value.get()) if value.isDefined() else "latest"
    except Exception:
        return "?"
    return str(value)


def scala_map(m: Any) -> dict[Any, Any]:
    """A Scala Map as a dict (its iterator of tuples, one py4j call per entry)."""
    out: dict[Any, Any] = {}
    it = m.iterator()
    while it.hasNext():
        kv = it.next()
        out[kv._1()] = kv._2()
    return out


def _delta_scan(source: Any, time_travel: Any) -> tuple[bool, str | None]:
    """(pinned, latest) of a Delta relation (a TahoeLogFileIndex or a DeltaTableV2): whether it reads a time-travel
    snapshot, and else the newest version its DeltaLog knows now. Unknown is unpinned with no bound: the reader of
    the leaf then bounds the scan by the table's latest version itself."""
    try:
        if time_travel():
            return True, None
    except Exception:
        return False, None
    try:
        return False, str(source.deltaLog().unsafeVolatileSnapshot().version())
    except Exception:
        return False, None


def mark_cached(plan: Any, found: list[LeafInfo], jvm: Any, jspark: Any) -> list[LeafInfo]:
    """``found`` (the leaves of ``plan``) with those the query read through Spark's cache marked ``cached``.

    Spark executes a plan with every fragment that matches a cached one (``df.cache()``, ``CACHE TABLE``) replaced
    by the cached rows (``CacheManager.useCachedData``), whatever version of the table they were read at: a Delta
    table changed outside this session since, or read before a later write, still returns its old rows while the
    analysed plan names the version it has now. The leaves missing from the plan with the cache applied are those."""
    if not found:
        return found
    try:
        manager = jspark.sharedState().cacheManager()
        if manager.isEmpty():
            return found
        used = leaves(manager.useCachedData(plan), jvm, rows=False)
    except Exception:
        # The cache cannot be asked (another Spark's API): whatever the plan read may have come from it.
        return [replace(leaf, cached=True) for leaf in found]
    kept = {leaf.expr_ids for leaf in used}
    return [leaf if leaf.expr_ids and leaf.expr_ids in kept else replace(leaf, cached=True) for leaf in found]


def cached_versions(jspark: Any, jvm: Any) -> dict[str, set[str | None]]:
    """The versions Spark's cache entries read each table at, by ``LeafInfo.cache_keys``: a Delta leaf's version at
    analysis (its rows were scanned then or later), an Iceberg leaf's snapshot. Empty: nothing cached."""
    manager = jspark.sharedState().cacheManager()
    if manager.isEmpty():
        return {}
    found: dict[str, set[str | None]] = {}
    for entry in seq(manager.cachedData()):
        try:
            plan = entry.plan()
        except Exception:
            plan = entry.logicalPlan()
        for leaf in leaves(plan, jvm, rows=False):
            for key in leaf.cache_keys():
                found.setdefault(key, set()).add(leaf.read_version or leaf.version)
    return found


def _refresher(source: Any) -> Callable[[], str]:
    """``LeafInfo.refresh`` of a Delta relation (a TahoeLogFileIndex or a DeltaTableV2): its own DeltaLog — the one
    its scan asks, whatever options keyed it — updated as a query not accepting staleness updates it (a listing of
    the log; ``update``'s other arguments its defaults), to the version that update installed."""
    def refresh() -> str:
        log = source.deltaLog()
        since, table = getattr(log, "update$default$2")(), getattr(log, "update$default$3")()
        return str(log.update(False, since, table).version())

    return refresh


# SQL confs that change the rows a plan computes but are not in its analysed JSON: read when the query executes
# (a formatter, a file reader, a cast's string form), never written into an expression's arguments. Measured:
# ``to_date('2020-1-5', 'yyyy-MM-dd')`` is NULL under CORRECTED and 2020-01-05 under LEGACY, one plan JSON. Not
# exhaustive (optimizer rules read confs too): docs/spark.md, "Program identity from the plan".
RESULT_CONFS = (
    "spark.sql.legacy.timeParserPolicy",
    "spark.sql.parquet.datetimeRebaseModeInRead",
    "spark.sql.parquet.int96RebaseModeInRead",
    "spark.sql.parquet.int96TimestampConversion",
    # Not spark.sql.parquet.fieldId.read.enabled: delta-spark sets it in the session itself on first use (measured:
    # absent before a Delta write, TRUE after), so it would tell what the session touched before, not what the job
    # computes; Delta and Iceberg scans choose field ids themselves, and plain Parquet path reads are never strong.
    "spark.sql.parquet.fieldId.read.ignoreMissing",
    "spark.sql.legacy.castComplexTypesToString.enabled",
    "spark.sql.jsonGenerator.ignoreNullFields",
    "spark.sql.mapKeyDedupPolicy",
    "spark.sql.legacy.nullInEmptyListBehavior",
)


def result_confs(jspark: Any, jvm: Any) -> dict[str, str]:
    """The ``RESULT_CONFS`` a session sets to other than their default, values normalised (case, spaces): empty
    for a session on defaults, so its plans keep the document they always had."""
    conf = jspark.sessionState().conf()
    defaults = jvm.org.apache.spark.sql.internal.SQLConf()  # a fresh conf: every registered entry at its default
    out: dict[str, str] = {}
    for key in RESULT_CONFS:
        if not conf.contains(key):
            continue
        value = str(conf.getConfString(key)).strip().upper()
        try:
            default: str | None = str(defaults.getConfString(key)).strip().upper()
        except Exception:  # not registered in this Spark, or no default: the value set is what the run had
            default = None
        if value != default:
            out[key] = value
    return out


# ---- the program document -----------------------------------------------------------------------------------
# Version 2: normalised at every depth (nested plans inside commands and subqueries included), catalog entries
# reduced to their name, analyzer-chosen random seeds dropped, the written table's own path abstracted.
PROGRAM_DOCUMENT_VERSION = 2
TARGET = "<target>"
LOCATION = "<location>"
WRITE_ID = "<write-id>"
# Characters that may follow a location inside a string for it to be that location (not a longer sibling path).
_AFTER_LOCATION = r"(?=$|[/\\\]\[,;:\s`'\")(])"


def _short(cls: str) -> str:
    return cls.rsplit(".", 1)[-1]


def location_variants(location: str) -> list[str]:
    """A location as the forms Spark prints it in: ``file:/p``, ``file:///p`` and the bare path ``/p``."""
    out = {location.rstrip("/") or location}
    for prefix in ("file://", "file:"):
        if location.startswith(prefix):
            bare = location[len(prefix):]
            if bare.startswith("/"):
                out |= {bare, "file:" + bare, "file://" + bare}
            break
    return sorted((v for v in out if len(v) > 1), key=len, reverse=True)  # longest first: no partial rewrites


def _is_node(v: Any) -> bool:
    return isinstance(v, dict) and "class" in v and "num-children" in v


def _last_child_spans(nodes: list[Any]) -> dict[int, tuple[int, int]]:
    """For each node index of a pre-order node list, the index span of its last child's subtree."""
    ends: dict[int, int] = {}

    def end(i: int, depth: int = 0) -> int:  # exclusive end of the subtree rooted at i
        if i in ends:
            return ends[i]
        if depth > 2000 or i >= len(nodes) or not _is_node(nodes[i]):
            return i + 1
        j, last = i + 1, (i + 1, i + 1)
        for _ in range(int(nodes[i].get("num-children", 0) or 0)):
            k = end(j, depth + 1)
            last = (j, k)
            j = k
        ends[i] = j
        spans[i] = last
        return j

    spans: dict[int, tuple[int, int]] = {}
    for i in range(len(nodes)):
        end(i)
    return spans


class _Normaliser:
    """One program document's normalisation state: expression-id numbering and relation identities."""

    def __init__(self, relations: Sequence[LeafInfo], scrub: Sequence[str], target: str | None,
                 write_ids: Sequence[str]) -> None:
        self.positioned: list[LeafInfo] = []
        self.by_expr: dict[int, LeafInfo] = {}
        for rel in relations:
            for eid in rel.expr_ids[:1]:
                self.by_expr.setdefault(eid, rel)
        targets = location_variants(target) if target else []
        replacements = [(v, TARGET) for v in targets]
        for loc in scrub:
            replacements += [(v, LOCATION) for v in location_variants(loc) if v not in targets]
        replacements.sort(key=lambda r: len(r[0]), reverse=True)
        self.patterns = [(re.compile(re.escape(v) + _AFTER_LOCATION), token) for v, token in replacements]
        self.write_ids = [w for w in write_ids if w]
        self.target = target
        self.ids: dict[int, int] = {}

    # -- values at any depth ---------------------------------------------------------------------------------------
    def value(self, v: Any) -> Any:
        if isinstance(v, dict):
            return self.mapping(v)
        if isinstance(v, list):
            return self.sequence(v)
        if isinstance(v, str):
            return self.text(v)
        return v

    def text(self, v: str) -> str:
        for w in self.write_ids:  # the per-write id the hook stamps a write with is run data, never program
            v = v.replace(w, WRITE_ID)
        if "/" in v or ":" in v:
            for pattern, token in self.patterns:  # where data lives is not what the program computes
                v = pattern.sub(token, v)
        return v

    def mapping(self, v: dict[str, Any]) -> Any:
        product = str(v.get("product-class", ""))
        if product.endswith(".ExprId") and "id" in v:
            # Expression ids are a per-JVM counter: number them by first appearance instead.
            return {"id": self.ids.setdefault(int(v["id"]), len(self.ids))}
        if product.endswith(".CatalogTable"):
            # A catalog entry is the table's name plus run data (createTime, owner, createVersion, stats,
            # properties our own attestations change, its location): only the name is program.
            return {"catalogTable": self.text(_catalog_name(v.get("identifier")))}
        if _is_node(v):
            return self.node(v)
        return {k: self.value(x) for k, x in sorted(v.items()) if k not in _DROP_KEYS}

    def sequence(self, v: list[Any]) -> list[Any]:
        out = [self.value(x) for x in v]
        if any(isinstance(x, dict) and x.get("hideSeed") is True for x in v):
            # rand()/randn()/uniform() without a seed: the analyzer draws one per run and says so (hideSeed).
            spans = _last_child_spans(v)
            for i, x in enumerate(v):
                if isinstance(x, dict) and x.get("hideSeed") is True and i in spans:
                    start, stop = spans[i]
                    for j in range(start, min(stop, len(out))):
                        if isinstance(out[j], dict) and "value" in out[j]:
                            out[j] = {**out[j], "value": "<random seed>"}
        return out

    # -- plan and expression nodes -------------------------------------------------------------------------------
    def node(self, n: dict[str, Any], position: int | None = None) -> dict[str, Any]:
        cls = _short(str(n.get("class", "")))
        if cls in RELATION_CLASSES:
            return self.relation(n, cls, position)
        return {k: (cls if k == "class" else self.value(x)) for k, x in sorted(n.items()) if k not in _DROP_KEYS}

    def relation(self, n: dict[str, Any], cls: str, position: int | None) -> dict[str, Any]:
        leaf = self._leaf_for(n, position)
        out: dict[str, Any] = {"class": cls, "num-children": 0}
        # In-memory data (LocalRelation rows, RDDs) is data, not program: only its schema counts.
        out["relation"] = self.identity(leaf) if leaf is not None else "?"
        out["output"] = self.value(n.get("output", []))
        return out

    def _leaf_for(self, n: dict[str, Any], position: int | None) -> LeafInfo | None:
        for eid in _first_expr_id(n.get("output")):
            if eid in self.by_expr:
                return self.by_expr[eid]
        if position is not None:  # relations known without expression ids: pre-order position among the leaves
            return self.positioned[position] if position < len(self.positioned) else None
        return None

    def identity(self, leaf: LeafInfo) -> str:
        if leaf.kind != "memory" and not leaf.name and self.target and leaf.location \
                and _same_location(leaf.location, self.target):
            return f"{leaf.kind}:{TARGET}"  # the written table, addressed by path: where it lives is the subject
        return leaf.program_identity()

    def plan(self, nodes: list[Any], relations: Sequence[LeafInfo]) -> list[Any]:
        """One part's top-level node list; ``relations`` are that part's leaves (for the positional fallback)."""
        self.positioned = [r for r in relations if r.in_tree]
        out: list[Any] = []
        position = 0
        for n in nodes:
            if _is_node(n) and _short(str(n.get("class", ""))) in RELATION_CLASSES:
                out.append(self.node(n, position))
                position += 1
            else:
                out.append(self.value(n))
        return out


def _first_expr_id(output: Any) -> Iterator[int]:
    """The raw expression id of a relation node's first output attribute (output is a list of node lists)."""
    if isinstance(output, list) and output:
        first = output[0]
        attr = first[0] if isinstance(first, list) and first else first
        if isinstance(attr, dict):
            eid = attr.get("exprId")
            if isinstance(eid, dict) and isinstance(eid.get("id"), int):
                yield int(eid["id"])


def _catalog_name(identifier: Any) -> str:
    if not isinstance(identifier, dict):
        return "?"
    parts = [identifier.get(k) for k in ("catalog", "database", "table")]
    return ".".join(str(p) for p in parts if p)


def _same_location(a: str, b: str) -> bool:
    return bool(set(location_variants(a)) & set(location_variants(b)))


def canonical_plan(plan_json: str, relations: Sequence[LeafInfo], scrub: Sequence[str] = (),
                   target: str | None = None, write_ids: Sequence[str] = ()) -> list[Any]:
    """``LogicalPlan.toJSON()`` (a pre-order node list) normalised: expression ids renumbered, run-specific keys
    and catalog-entry details dropped at every depth, relation leaves replaced by their program identity and
    locations scrubbed (docs/spark.md, "Program identity from the plan")."""
    norm = _Normaliser(relations, scrub, target, write_ids)
    return norm.plan(json.loads(plan_json), relations)


def program_document(parts: Sequence[tuple[str, str, Sequence[LeafInfo]]], scrub: Sequence[str] = (),
                     target: str | None = None, write_ids: Sequence[str] = (),
                     functions: Sequence[str] = (), confs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The typed program document ``{"kind": "spark-plan", "version": 2, "parts": {name: canonical plan}}``;
    each part is (name, toJSON of that sub-plan, its leaves). One normaliser spans the parts, so a relation or
    expression id that two parts share (a MERGE's target inside the command and as its own part) reads alike.
    ``functions``: the digests of the Python functions the plan runs (``python_functions``), in plan order; absent
    when there are none, so a plan without Python functions keeps the document it always had. ``confs``: the
    session's ``RESULT_CONFS`` off their defaults (``result_confs``), absent when there are none likewise."""
    every = [rel for _, _, rels in parts for rel in rels]
    norm = _Normaliser(every, scrub, target, write_ids)
    doc: dict[str, Any] = {"kind": "spark-plan", "version": PROGRAM_DOCUMENT_VERSION,
                           "parts": {name: norm.plan(json.loads(plan_json), rels) for name, plan_json, rels in parts}}
    if functions:
        doc["python_functions"] = list(functions)
    if confs:
        doc["confs"] = dict(sorted(confs.items()))
    return doc


def program_hash_from_json(parts: Sequence[tuple[str, str, Sequence[LeafInfo]]], scrub: Sequence[str] = (),
                           target: str | None = None, write_ids: Sequence[str] = (),
                           functions: Sequence[str] = (), confs: Mapping[str, str] | None = None) -> str:
    return digest(program_document(parts, scrub, target, write_ids, functions, confs))
