"""The read gate: a PySpark job reads only Delta / Iceberg table versions that verify (docs/spark.md, "The read gate").

    gate = attest.spark.require_verified(spark, policy="trust.toml")        # mode="required", level="files"

**Where it hooks, and why there.** A QueryExecutionListener runs after a query, so it can report but never block.
Analyzer check rules would block, but Spark builds them into a session when the session is created, and planner
strategies and optimizer rules are JVM classes. What every statement of a PySpark job does pass through before the
JVM executes it is pyspark's driver API, so the gate wraps it (carriers/spark/intercept.py, the same layer as the
write hook's stamps and guard): the DataFrame actions (collect, count, show, toPandas, toArrow, take/head/first/tail,
toLocalIterator, foreach, isEmpty, checkpoints, ``.rdd``), the writers (DataFrameWriter, DataFrameWriterV2,
MergeIntoWriter) and ``SparkSession.sql``, whose DDL/DML statements execute eagerly: for those the statement is
parsed and analysed without executing it (``CommandExecutionMode.SKIP``) and that plan is checked first.

**What it checks.** The *analysed* plan — Spark has resolved every table and pinned the version it will read (Delta
``snapshotAtAnalysis``, Iceberg ``snapshotId``) — its subqueries, and the sources and targets of MERGE / UPDATE /
DELETE. Every Delta / Iceberg relation in it is verified at ``level`` under the trust policy through the carriers
(the same engine-free decision ``attest verify`` makes), once per table version: a version that verified is not
checked again by this gate. Anything that does not verify, or cannot be checked, refuses the query in ``required``
mode (``VerificationRefusedError`` naming the table, the version and the code), is logged on ``attest.spark`` and let
through in ``optional`` mode; ``disabled`` installs nothing. A file-source read of a Delta or Iceberg table's files
(``spark.read.parquet(table)``, ``spark.read.parquet(f"{iceberg_table}/data")``: the folder listed, not the log or
the metadata) is no table version and is refused likewise (``folder_reads``): a root path at or inside a table's
folder, or a folder Spark listed files in below a root (``recursiveFileLookup`` from above, a link), each folder
looked at once; a streaming file source's paths when it starts (``stream_folder_reads``). A read of a table's
changes — a Delta change data feed, an Iceberg changelog or incremental read, a stream that starts before the
version it would be checked at — is no table version either and is refused likewise (``table_reads``, ``stream_reads``).

**What it does not cover.** Code that reaches the JVM without the Python API (Scala/Java in the same application,
``spark._jsparkSession`` used directly), the versions a Structured Streaming query reads after it started (its
Delta / Iceberg sources are checked once, at their latest version, when ``start()`` / ``toTable()`` is called:
docs/streaming.md), and files changed after the check and before the read (files level compares the file set and
sizes the engine will read; bytes level re-hashes them at check time). docs/security.md has the threat model.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from attest.errors import AttestError, Code, InvalidArgumentError, Problem, VerificationRefusedError
from attest.numbers import is_digits
from attest.render.terminal import terminal_safe_logger
from carriers.spark import intercept
from carriers.spark.plan import (
    CHANGES_READ,
    LeafInfo,
    cached_versions,
    carrier_uri,
    iceberg_branch,
    iceberg_change_options,
    iceberg_table_parts,
    ident_parts,
    leaves,
    mark_cached,
    opt,
    scala_map,
    seq,
    simple_name,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from attest.signing.policy import TrustPolicy
    from attest.verify.report import Report

__all__ = ["GATED", "ReadGate", "TableRead", "require_verified"]

log = terminal_safe_logger("attest.spark")  # messages name tables and files a table chose

Mode = Literal["required", "optional", "disabled"]
GateLevel = Literal["schema", "files", "bytes"]

# Round 24: approxQuantile / corr / cov (and df.stat's, which call them) compute over the rows in the JVM, and a
# notebook's eager evaluation (spark.sql.repl.eagerEval.enabled) shows rows from __repr__ / _repr_html_: each read
# an unattested table under the gate unchecked.
_DATAFRAME_ACTIONS = ("collect", "count", "toLocalIterator", "tail", "isEmpty", "checkpoint", "localCheckpoint",
                      "toPandas", "toArrow", "_collect_as_arrow", "_show_string", "rdd", "toJSON", "foreach",
                      "foreachPartition", "approxQuantile", "corr", "cov", "__repr__", "_repr_html_")
_EAGER_REPR = frozenset({"DataFrame.__repr__", "DataFrame._repr_html_"})  # rows read only under eager evaluation
_WRITER = ("save", "saveAsTable", "insertInto", "json", "parquet", "text", "csv", "xml", "orc", "jdbc")
GATED: dict[tuple[str, str], tuple[str, ...]] = {
    ("pyspark.sql.classic.dataframe", "DataFrame"): _DATAFRAME_ACTIONS,
    ("pyspark.sql.readwriter", "DataFrameWriter"): _WRITER,
    ("pyspark.sql.readwriter", "DataFrameWriterV2"): ("append", "overwrite", "overwritePartitions", "create",
                                                      "replace", "createOrReplace"),
    # __init__ only remembers the source and target (pyspark keeps neither); merge() is checked.
    ("pyspark.sql.merge", "MergeIntoWriter"): ("__init__", "merge"),
    ("pyspark.sql.session", "SparkSession"): ("sql",),
    # A streaming query's Delta / Iceberg sources, checked when it starts (docs/streaming.md, "The read gate").
    ("pyspark.sql.streaming.readwriter", "DataStreamWriter"): ("start", "toTable"),
    # delta-spark's Python API runs its DML in the JVM, past every method above (round 24: a DeltaTable.merge of an
    # unattested source into an attested table ran under the gate, nothing checked): the table an UPDATE / DELETE
    # reads, and a MERGE's source and target when it executes.
    ("delta.tables", "DeltaTable"): ("update", "delete"),
    ("delta.tables", "DeltaMergeBuilder"): ("execute",),
    # pyspark.ml reads its dataset in the JVM, past every DataFrame action (round 25: a LinearRegression / StringIndexer
    # fit, an evaluator, Correlation.corr over an unattested table ran under the gate, nothing checked). Each method
    # here reads its first argument's rows when called; a model's transform is lazy (its result's actions are gated).
    # Needs numpy, as pyspark.ml does: without it these modules do not import, and nothing is wrapped.
    ("pyspark.ml.base", "Estimator"): ("fit", "fitMultiple"),
    ("pyspark.ml.evaluation", "Evaluator"): ("evaluate",),
    ("pyspark.ml.stat", "Correlation"): ("corr",),
    ("pyspark.ml.stat", "ChiSquareTest"): ("test",),
    ("pyspark.ml.stat", "KolmogorovSmirnovTest"): ("test",),
    ("pyspark.ml.fpm", "PrefixSpan"): ("findFrequentSequentialPatterns",),
    ("pyspark.ml.clustering", "PowerIterationClustering"): ("assignClusters",),
    ("pyspark.ml.clustering", "BisectingKMeansModel"): ("computeCost",),
    ("pyspark.ml.clustering", "LDAModel"): ("logLikelihood", "logPerplexity"),
    ("pyspark.ml.regression", "LinearRegressionModel"): ("evaluate",),
    ("pyspark.ml.regression", "GeneralizedLinearRegressionModel"): ("evaluate",),
    ("pyspark.ml.regression", "GBTRegressionModel"): ("evaluateEachIteration",),
    ("pyspark.ml.classification", "LinearSVCModel"): ("evaluate",),
    ("pyspark.ml.classification", "LogisticRegressionModel"): ("evaluate",),
    ("pyspark.ml.classification", "RandomForestClassificationModel"): ("evaluate",),
    ("pyspark.ml.classification", "MultilayerPerceptronClassificationModel"): ("evaluate",),
    ("pyspark.ml.classification", "FMClassificationModel"): ("evaluate",),
    ("pyspark.ml.classification", "GBTClassificationModel"): ("evaluateEachIteration",),
}
# The GATED methods above that read their first argument (a DataFrame; ``dataset=`` by keyword), not the object.
_READS_ARGUMENT = frozenset(f"{cls}.{method}" for (module, cls), methods in GATED.items()
                            if module.startswith("pyspark.ml.") for method in methods)
_ROW_LEVEL = frozenset({"ReplaceData", "WriteDelta"})  # Iceberg MERGE/UPDATE/DELETE: the table read is originalTable
_local = threading.local()  # depth of gated calls in this thread: toPandas -> collect is one statement, one check
_GATES: list[ReadGate] = []
_GATES_LOCK = threading.Lock()


@dataclass(frozen=True)
class TableRead:
    """One Delta / Iceberg table version a plan reads."""

    format: Literal["delta", "iceberg"]
    label: str  # as the refusal names it
    version: str | None
    location: str | None = None  # Delta: the table URI
    catalog: str | None = None  # Iceberg: the Spark catalog
    identifier: tuple[str, ...] | None = None  # Iceberg: namespace parts + table
    folder: bool = False  # the table's files read by path as a file source, past its log (folder_reads)
    changes: str | None = None  # a read of its changes or metadata, as asked (table_reads): never a version
    reads: str = CHANGES_READ  # what such a read reads that no attestation covers
    because: str | None = None  # why a version other than the one a plan names is read (a resumed stream's)
    # Read from Spark's cache (``mark_cached``): the versions its cache entries for this table were read at, each a
    # lower bound of the version the cached rows are (None: unknown). Empty: not a cached read.
    cached_from: tuple[str | None, ...] = ()
    # Iceberg: the branch the read named (``t.branch_b``): its snapshot is checked as any, and a trust policy's glob
    # naming the branch's line (``iceberg://c/ns.t.branch_b``) applies to it (round 30).
    branch: str | None = None

    @property
    def key(self) -> tuple[str, ...]:
        if self.changes is not None:
            return ("changes", self.format, self.label, self.changes)
        if self.format == "delta":
            from carriers.delta.carrier import signed_table_uri

            return ("delta", signed_table_uri(self.location or ""), str(self.version))
        return ("iceberg", self.catalog or "", ".".join(self.identifier or ()), str(self.version), str(self.branch))


@dataclass
class ReadGate:
    """An installed gate: its counters, the refusals and warnings it produced, ``uninstall()``."""

    spark: SparkSession
    policy: TrustPolicy | None
    mode: Mode = "required"
    level: GateLevel = "files"
    iceberg_catalogs: dict[str, dict[str, str]] = field(default_factory=dict)
    now: dt.datetime | None = None  # for tests: the instant key validity windows are judged at
    checked: int = 0  # table versions verified (each at most once while it keeps verifying)
    refused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _verified: dict[tuple[str, ...], Report] = field(default_factory=dict)
    _catalogs: dict[str, Any] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _installed: bool = False
    quiet: bool = False  # optional mode: warnings kept, not logged (an audit reports each failure as its row)

    # ---- lifecycle -----------------------------------------------------------------------------------------------
    def _install(self) -> ReadGate:
        if self.mode == "disabled":
            return self
        with _GATES_LOCK:
            _GATES.append(self)
            intercept.register("attest.read-gate", GATED, _intercept)
        self._installed = True
        return self

    def uninstall(self) -> None:
        with _GATES_LOCK:
            if self in _GATES:
                _GATES.remove(self)
            if not _GATES:
                intercept.unregister("attest.read-gate")
        self._installed = False

    def __enter__(self) -> ReadGate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    # ---- checks --------------------------------------------------------------------------------------------------
    def check_dataframe(self, df: Any, what: str = "query") -> list[Report]:
        """Check what ``df``'s analysed plan reads (raises in required mode); the reports of the tables read."""
        return self.check_plan(df._jdf.queryExecution().analyzed(), what, df.sparkSession)

    def check_stream(self, df: Any, what: str = "DataStreamWriter.start", checkpoint: Resume | None = None
                     ) -> list[Report]:
        """Check the Delta / Iceberg sources of a streaming DataFrame at the version each has when the query starts
        (its latest) and, for a query restarted from ``checkpoint``, the Delta versions it reads on the way there
        whose files the latest does not hold; the versions the query reads later are not checked
        (docs/streaming.md)."""
        plan = df._jdf.queryExecution().analyzed()
        reports = [self._changes(read, what) if read.changes is not None else self._check(read, what)
                   for read in stream_reads(plan, self.spark, checkpoint)]
        return reports + [self._folder(folder, what) for folder in stream_folder_reads(plan, self.spark)]

    def check_sql(self, text: str, what: str = "SparkSession.sql") -> list[Report]:
        """Parse and analyse a statement without executing it, and check what it reads (a procedure call is
        neither analysed nor checked: ``_analyse``)."""
        try:
            plan = _analyse(self.spark, text)
        except _Script:
            _refuse_statement([self], "a SQL script", _SCRIPT_WHY)
            return []
        except _Immediate as immediate:
            if immediate.text is None:
                _refuse_statement([self], "an EXECUTE IMMEDIATE statement", _IMMEDIATE_WHY)
                return []
            return self.check_sql(immediate.text, what)
        return [] if plan is None else self.check_plan(plan, what)

    def check_plan(self, plan: Any, what: str = "query", session: Any = None) -> list[Report]:
        """Check what an analysed plan reads; ``session``: the one that runs it (its confs decide what a Delta
        scan reads), else the gate's."""
        session = session or self.spark
        reads = table_reads(plan, self.spark._jvm, stale=stale_snapshots(session), jspark=session._jsparkSession)
        reports = []
        for read in reads:
            stale_cache = None if read.changes is not None or not read.cached_from else self._stale_cache(read)
            if stale_cache is not None:
                read = replace(read, changes=_CACHE_READ, reads=stale_cache)
            reports.append(self._changes(read, what) if read.changes is not None else self._check(read, what))
        for folder in folder_reads(plan, self.spark):
            reports.append(self._folder(folder, what))
        return reports

    def _stale_cache(self, read: TableRead) -> str | None:
        """Why rows Spark's cache holds for ``read``'s table may not be those of the version checked, or None when
        they are: the cache entries were read at a version whose rows readers get unchanged up to it (Delta: one
        attestable version — only metadata-only commits between, such as attestations; Iceberg: that snapshot).
        Spark answers a matching read from the cached rows, filled when the cache was first used — at or after the
        version it was analysed at — and never refreshed by a commit made elsewhere (round 24: an unattested row a
        later DELETE removed, returned from the cache while the gate verified the latest version)."""
        def why(since: str) -> str:
            return (f"rows cached from {_noun(read)} {since} on, not those of {_noun(read)} {read.version} (the one "
                    "it now has): uncache it (df.unpersist(), spark.catalog.clearCache()) and read the table anew to "
                    "have the read checked")
        try:
            if read.format == "delta":
                from carriers.delta.carrier import DeltaCarrier

                carrier = DeltaCarrier(read.location or "")
                now = carrier.attestable_version(int(str(read.version)))
                for since in read.cached_from:
                    if since is None or not is_digits(since) or carrier.attestable_version(int(since)) != now:
                        return why(str(since))
                return None
            for since in read.cached_from:
                if since != read.version:
                    return why(str(since))
            return None
        except Exception as exc:  # what the cache holds cannot be shown to be the version checked
            return f"rows cached at a version that could not be looked at ({type(exc).__name__})"

    def _changes(self, read: TableRead, what: str) -> Report:
        # A read of a table's changes between versions (a Delta change data feed, an Iceberg changelog or
        # incremental read, a stream started in the past) reads change-data files, files of versions other than any
        # one verified, rows later versions removed: no attestation of a version covers them, so none is checked.
        problem = Problem(Code.UNATTESTED, f"{read.changes} of {_format_name(read)} table {read.label} reads "
                          f"{read.reads}, which no attestation of a table version covers; read a version of it to "
                          "have it checked")
        if read.changes == _CACHE_READ:
            problem = Problem(Code.UNATTESTED, f"a read of {_format_name(read)} table {read.label} answered from "
                              f"Spark's cache gets {read.reads}")
        report = _error_report(read, problem)
        with self._lock:
            self.checked += 1
        self._refuse(read, report, what)
        return report

    def _folder(self, folder: TableRead, what: str) -> Report:
        # The files of a Delta / Iceberg table read by path as a file source (``spark.read.parquet(table)``): no
        # version of the table is read, whatever is in the folder is (files its log removed or its snapshots no
        # longer reference, files it never held; an Iceberg table's delete files are not applied).
        if folder.format == "delta":
            past = ("its files past its log (files no version holds too), not a table version an attestation can "
                    "cover; read it as format('delta')")
        else:
            past = ("its files past its metadata (files no snapshot references too, rows its delete files removed "
                    "too), not a table snapshot an attestation can cover; read it as a table (spark.table, "
                    "format('iceberg'))")
        problem = Problem(Code.UNATTESTED, f"a file-source read of {_format_name(folder)} table {folder.label}'s "
                          f"folder reads {past}")
        report = _error_report(folder, problem)
        with self._lock:
            self.checked += 1
        self._refuse(folder, report, what)
        return report

    def _check(self, read: TableRead, what: str) -> Report:
        key = read.key
        with self._lock:
            cached = self._verified.get(key)
        if cached is not None:
            return cached
        try:
            report = self._verify(read)
        except AttestError as err:
            report = _error_report(read, err.problem())
        except Exception as exc:  # an engine error while checking: the read cannot be shown to verify
            report = _error_report(read, Problem(Code.TABLE_UNREADABLE, f"{type(exc).__name__}: {exc}"))
        with self._lock:
            self.checked += 1
            if report.passed:
                self._verified[key] = report  # failures are checked again: an attestation may be recorded since
        if not report.passed:
            self._refuse(read, report, what)
        return report

    def _refuse(self, read: TableRead, report: Report, what: str) -> None:
        code = report.errors[0].code if report.errors else Code.UNATTESTED
        shown = f"{read.label} {_noun(read)} {read.version}" if read.version is not None else read.label
        shown += f" ({read.because})" if read.because else ""
        if read.folder:
            past = "its log" if read.format == "delta" else "its metadata"
            shown = f"the files of {_format_name(read)} table {read.label} by path (a file-source read, past {past})"
        elif read.changes == _CACHE_READ:
            shown = f"{_format_name(read)} table {read.label} from Spark's cache ({read.reads})"
        elif read.changes is not None and read.reads == CHANGES_READ:
            shown = f"the changes of {_format_name(read)} table {read.label} ({read.changes})"
        elif read.changes is not None:
            shown = f"{_format_name(read)} table {read.label} through {read.changes}, no version of it"
        message = f"{what} reads {shown}, which does not verify ({code.value}) under the read gate: {report.verdict()}"
        if read.version is None and read.changes is None and report.errors:  # a statement, no table: say why
            message += f" ({report.errors[0].message})"
        if self.mode == "required":
            with self._lock:
                self.refused.append(message)
            raise VerificationRefusedError(f"refused: {message}", code=code, path=read.label, report=report)
        with self._lock:
            self.warnings.append(message)
        if not self.quiet:
            log.warning("attest.spark: %s; mode is optional, the query goes on", message)

    def _verify(self, read: TableRead) -> Report:
        from attest.verify.table import verify_state

        carrier: Any
        if read.format == "delta":
            from carriers.delta.carrier import DeltaCarrier

            carrier = DeltaCarrier(read.location or "")
        else:
            from carriers.iceberg.carrier import IcebergCarrier

            assert read.catalog is not None and read.identifier is not None
            table = self._iceberg_catalog(read.catalog).load_table(read.identifier)
            carrier = IcebergCarrier(table, catalog_name=read.catalog)
            carrier.named_branch = read.branch
        return verify_state(carrier.state(read.version), carrier, level=self.level, policy=self.policy,
                            now=self.now)

    def _iceberg_catalog(self, name: str) -> Any:
        from carriers.iceberg.catalogs import load_catalog  # table metadata never picks the code run here
        from carriers.spark.hook import _pyiceberg_props_from_spark

        if name not in self._catalogs:
            props = self.iceberg_catalogs.get(name) or _pyiceberg_props_from_spark(self.spark, name)
            self._catalogs[name] = load_catalog(name, **props) if props else load_catalog(name)
        return self._catalogs[name]


def _format_name(read: TableRead) -> str:
    return "Delta" if read.format == "delta" else "Iceberg"


def _noun(read: TableRead) -> str:
    return "snapshot" if read.format == "iceberg" else "version"


def _error_report(read: TableRead, problem: Problem) -> Report:
    from attest.verify.report import Report

    report = Report(subject=read.label, table_format=read.format, version=read.version)
    report.errors.append(problem)
    return report


# ---- what a plan reads -------------------------------------------------------------------------------------------

_CACHE_READ = "Spark's cache"  # TableRead.changes of a read answered from cached rows of another version


def stale_snapshots(session: Any) -> bool:
    """Whether ``session``'s Delta scans may read a cached snapshot older than the log's latest version:
    ``spark.databricks.delta.stalenessLimit`` set to anything but zero (a scan then takes its DeltaLog's snapshot
    as it is when it was updated within the limit, and updates it in the background). Unreadable: taken as set."""
    try:
        value = str(session.conf.get(_STALENESS, "0") or "0").strip().lower()
    except Exception:
        return True
    return value.rstrip("smhdinu") not in ("0", "")


_STALENESS = "spark.databricks.delta.stalenessLimit"


def table_reads(plan: Any, jvm: Any, *, stale: bool = False, jspark: Any = None) -> list[TableRead]:
    """Every Delta / Iceberg relation ``plan`` reads: its tree, its subqueries (``subqueriesAll``), the source and
    target of a Delta MERGE (a leaf command: its plans are fields, not children) and the table an Iceberg row-level
    command rewrites. A read of a table's changes or metadata (a Delta change data feed, an Iceberg changelog,
    incremental read or metadata table) is one with ``changes`` set: no version to verify. ``stale``: the session
    lets Delta scans read a cached snapshot (``stale_snapshots``). ``jspark``: the session whose cache the query is
    answered from — a read Spark's cache will answer carries the versions its entries were read at."""
    plans = [plan, *seq(plan.subqueriesAll())]
    command = simple_name(plan)
    if command == "MergeIntoCommand":
        plans += [plan.source(), plan.target()]
    elif command in _ROW_LEVEL:
        plans.append(plan.originalTable())
    found: dict[tuple[str, ...], TableRead] = {}
    cached: dict[str, set[str | None]] | None = None
    for sub in plans:
        subleaves = leaves(sub, jvm, rows=False)
        if jspark is not None:
            subleaves = mark_cached(sub, subleaves, jvm, jspark)
        for leaf in subleaves:
            read = _table_read(leaf, stale)
            if read is not None and leaf.cached and read.changes is None:
                if cached is None:
                    try:
                        cached = cached_versions(jspark, jvm)
                    except Exception:  # the cache cannot be read: what it holds is unknown
                        cached = {"*": {None}}
                # Only an entry that read this table can answer it (mark_cached marks every leaf when the cache
                # cannot be asked about the plan — one with unbound parameters, say).
                versions = set().union(*(cached.get(k, set()) for k in (*leaf.cache_keys(), "*")))
                if versions:
                    read = replace(read, cached_from=tuple(sorted(versions, key=str)))
            if read is not None:
                key = read.key + (("cached",) if read.cached_from else ())
                found.setdefault(key, read)
    return list(found.values())


def folder_reads(plan: Any, spark: SparkSession) -> list[TableRead]:
    """The Delta / Iceberg tables whose files ``plan`` reads by path as a file source (``spark.read.parquet(table)``,
    ``spark.read.parquet(f"{iceberg_table}/data")``, a partition folder of one, a glob or a data file under one, a
    folder above one read with ``recursiveFileLookup``): a root path that is, or is inside, a table's folder
    (``table_root``), or a folder Spark listed files in below a root that is inside one (``_listed_tables``). Such a
    read lists the folder, not the log or the metadata: files the log removed, files no snapshot references and files
    the table never held are read too, and no Iceberg delete file is applied."""
    jvm = spark._jvm
    assert jvm is not None
    found: dict[str, TableRead] = {}
    walk = _Walk(spark)
    for sub in [plan, *seq(plan.subqueriesAll())]:
        for leaf in leaves(sub, jvm, rows=False):
            if leaf.kind != "path":
                continue
            tables = [table_root(spark, root) for root in leaf.roots]
            tables += [table_root(spark, real) for real in {_real(root) for root in leaf.roots} - set(leaf.roots)]
            dirs = _listed_dirs(leaf.index)
            if not dirs and _catalog_index(leaf.index):
                listed = _catalog_partitions(jvm, leaf.index)
                if listed is not None:
                    dirs = _listed_dirs(listed)
                else:  # one partition cannot be listed: a filter may prune it away and read the others
                    tables += _partition_tables(spark, leaf.index.table())
            if leaf.catalog_table is not None and seq(leaf.catalog_table.partitionColumnNames()):
                tables += _partition_tables(spark, leaf.catalog_table)  # a Hive-format table's partitions
            tables += walk.listed_tables(leaf.roots, dirs)
            for table in tables:
                if table is not None:
                    fmt, where = table
                    found.setdefault(where, TableRead(fmt, where, None, location=carrier_uri(where), folder=True))
    return list(found.values())


def _listed_dirs(index: Any) -> list[str]:
    """The folders a file index listed files in at analysis (``leafDirToChildrenFiles`` of Spark's
    ``InMemoryFileIndex`` / ``MetadataLogFileIndex``: one entry per folder, whatever its number of files), as Spark
    prints them, in one py4j call. None of another index (a catalog table's partitions: ``_catalog_partitions``)."""
    if index is None:
        return []
    try:
        text = str(index.leafDirToChildrenFiles().keys().mkString("\x00"))
    except Exception:
        return []
    return [d for d in text.split("\x00") if d]


def _catalog_index(index: Any) -> bool:
    """Whether ``index`` is a catalog table's (``CatalogFileIndex``: its partitions are listed when the query runs)."""
    return index is not None and simple_name(index) == "CatalogFileIndex"


def _catalog_partitions(jvm: Any, index: Any) -> Any:
    """A catalog table's partitions listed as Spark lists them when none is pruned (``CatalogFileIndex
    .filterPartitions(Nil)``: an ``InMemoryFileIndex`` over every partition's location, which the catalog may put
    anywhere — ``ALTER TABLE … ADD PARTITION … LOCATION '<a Delta table's folder>'``). The listing goes through the
    session's file status cache, which the query's own listing then reads. None when it fails (a partition on a file
    system that cannot be reached): ``_partition_tables`` then looks at each partition alone."""
    try:
        return index.filterPartitions(getattr(getattr(jvm.scala.collection.immutable, "Nil$"), "MODULE$"))
    except Exception:
        return None


def _partition_tables(spark: SparkSession, table: Any) -> list[tuple[Literal["delta", "iceberg"], str] | None]:
    """The table folders a catalog table's partitions are at, inside or above, each partition's location (from the
    catalog, no listing of the whole table) looked at alone: up from it (``table_root``) and down the folders Spark's
    listing would enter (``_tables_below``). For a table one of whose partitions cannot be listed — its unpruned read
    fails, but a query whose filter prunes that partition away reads the others, one of them a Delta table's folder
    (round 22). A partition whose location cannot be looked at is no table found there: no read lists it either."""
    jvm = spark._jvm
    assert jvm is not None
    try:
        partitions = seq(spark._jsparkSession.sessionState().catalog().listPartitions(
            table.identifier(), jvm.scala.Option.apply(None)))
        locations = [str(jvm.org.apache.hadoop.fs.Path(p.location()).toString()) for p in partitions]
    except Exception as exc:  # the catalog cannot name them: nor can Spark's own pruning, which asks it the same
        raise VerificationRefusedError(
            f"refused: the partitions of a catalog table a read lists could not be named ({type(exc).__name__}): "
            "a read of them cannot be shown to stay out of a Delta or Iceberg table's folder",
            code=Code.TABLE_UNREADABLE) from exc
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    out: list[tuple[Literal["delta", "iceberg"], str] | None] = []
    for location in locations:
        out.append(table_root(spark, location))
        try:
            fs = jvm.org.apache.hadoop.fs.Path(location).getFileSystem(conf)
        except Exception:
            continue
        out += _tables_below(spark, fs, location)
    return out


def _split(path: str) -> tuple[str, str]:
    """A path as Spark prints it split into its ``scheme://authority`` / ``scheme:`` prefix and its path."""
    head, sep, tail = path.partition("://")
    if sep:
        authority, slash, rest = tail.partition("/")
        return f"{head}{sep}{authority}", slash + rest
    scheme, colon, rest = path.partition(":")
    if colon and "/" not in scheme and rest.startswith("/"):
        return scheme + colon, rest
    return "", path


def _parent(path: str) -> str | None:
    prefix, rest = _split(path)
    rest = rest.rstrip("/")
    if not rest:
        return None
    up = rest.rsplit("/", 1)[0]
    return f"{prefix}{up or '/'}"


def _name(path: str) -> str:
    return _split(path)[1].rstrip("/").rsplit("/", 1)[-1]


def _real(path: str) -> str:
    """A local (``file:``) path with its symbolic links and ``..`` resolved, as the driver sees it: a link to a table's
    folder is the table's folder. Other paths as they are."""
    import os

    prefix, rest = _split(path)
    if prefix not in ("file:", "file://") or not rest.startswith("/"):
        return path
    real = os.path.realpath(rest)
    return path if real == rest.rstrip("/") else f"file:{real}"


class _Walk:
    """The look for a table folder at or above each folder a read listed, up to the read's roots (``table_root``
    looked at and above those). Each folder is looked at once per check (two ``exists`` calls, a ``metadata/`` listing
    if there is one), whatever the number of files or listed folders below it."""

    def __init__(self, spark: SparkSession, limit: int = 64) -> None:
        self.spark, self.limit = spark, limit
        self.kinds: dict[str, Literal["delta", "iceberg"] | None] = {}
        self.fs: dict[str, Any] = {}

    def listed_tables(self, roots: tuple[str, ...], dirs: list[str]) -> list[tuple[Literal["delta", "iceberg"], str]]:
        stop: set[str] = set()  # the roots and their parents: looked at by table_root
        for root in {*roots, *(_real(r) for r in roots)}:
            at: str | None = root.rstrip("/") or root
            for _ in range(self.limit):
                if at is None:
                    break
                stop.add(at)
                at = _parent(at)
        starts = list(dict.fromkeys(s for listed in dirs for s in (listed, _real(listed))))
        ahead: list[str] = []  # every folder a walk may look at, looked at in a batch
        for start in starts:
            up: str | None = start.rstrip("/") or start
            for _ in range(self.limit):
                if up is None or up in stop or up in self.kinds:
                    break
                ahead.append(up)
                up = _parent(up)
        self.look(ahead)
        out: dict[str, tuple[Literal["delta", "iceberg"], str]] = {}
        done: set[str] = set()
        for listed in dirs:
            for start in dict.fromkeys((listed, _real(listed))):
                table = self._nearest(start, stop, done)
                if table is not None:
                    out.setdefault(table[1], table)
        return list(out.values())

    def _nearest(self, path: str, stop: set[str], done: set[str]) -> tuple[Literal["delta", "iceberg"], str] | None:
        at: str | None = path.rstrip("/") or path
        child: str | None = None
        hidden = False
        for _ in range(self.limit):
            if at is None or at in stop:
                return None
            if not hidden and at in done:
                return None  # walked up from here before, with nothing hidden on the way: the same answer
            kind = self._kind(at)
            if kind == "delta":
                return None if hidden else ("delta", at)
            if kind == "iceberg":
                return None if hidden or child == "metadata" else ("iceberg", at)
            if not hidden:
                done.add(at)
            child = _name(at)
            hidden = hidden or child.startswith(("_", "."))
            at = _parent(at)
        return None

    def _kind(self, path: str) -> Literal["delta", "iceberg"] | None:
        if path not in self.kinds:
            self.look([path])
        return self.kinds.get(path)

    def look(self, paths: list[str]) -> None:
        """Tell which of ``paths`` are table folders, in a few py4j calls for all of them: one glob of
        ``{a,b,…}/_delta_log`` and one of ``{a,b,…}/metadata`` per file system and ``_BATCH`` folders (literal
        patterns: Hadoop's globber asks each candidate's status, it lists no folder), then an Iceberg check of each
        ``metadata/`` found. A folder whose name holds a glob character is looked at alone."""
        jvm = self.spark._jvm
        assert jvm is not None
        new = [p for p in dict.fromkeys(paths) if p not in self.kinds]
        for p in new:
            self.kinds[p] = None
        groups: dict[str, list[str]] = {}
        for p in new:
            groups.setdefault(_split(p)[0], []).append(p)
        path_class = jvm.org.apache.hadoop.fs.Path
        for prefix, members in groups.items():
            try:
                fs = self.fs.get(prefix)
                if fs is None:
                    conf = self.spark._jsparkSession.sessionState().newHadoopConf()
                    fs = self.fs[prefix] = path_class(members[0]).getFileSystem(conf)
            except Exception:  # a file system that cannot be reached: no table found there
                continue
            plain = [m for m in members if not _GLOB.intersection(_split(m)[1]) and _split(m)[1].startswith("/")]
            # A folder that cannot be looked at is no table found there, and only that folder: one failing look
            # (its own, or its batch's) never leaves the others of its file system unlooked at (round 21).
            batched = set(plain)
            for m in [m for m in members if m not in batched]:  # looked at alone
                self._look_alone(fs, path_class, m)
            for at in range(0, len(plain), _BATCH):
                chunk = plain[at:at + _BATCH]
                try:
                    self._look_batch(fs, path_class, prefix, chunk)
                except Exception:
                    for m in chunk:  # the batch's glob failed: each folder looked at alone
                        self._look_alone(fs, path_class, m)

    def _look_alone(self, fs: Any, path_class: Any, m: str) -> None:
        jvm = self.spark._jvm
        try:
            hpath = path_class(m)
            if fs.exists(path_class(hpath, "_delta_log")):
                self.kinds[m] = "delta"
            elif _iceberg_folder(fs, jvm, hpath):
                self.kinds[m] = "iceberg"
        except Exception:  # a folder that cannot be looked at: no table found there
            return

    def _look_batch(self, fs: Any, path_class: Any, prefix: str, chunk: list[str]) -> None:
        jvm = self.spark._jvm
        paths_in = "/{" + ",".join(_split(m)[1].rstrip("/")[1:] for m in chunk) + "}"
        if len(chunk) == 1:
            paths_in = _split(chunk[0])[1].rstrip("/")
        for marker in ("_delta_log", "metadata"):
            found = fs.globStatus(path_class(f"{prefix}{paths_in}/{marker}")) or []
            for status in found:
                folder = status.getPath().getParent()
                key = _match(chunk, str(folder.toString()))
                if key is None or self.kinds.get(key) is not None:
                    continue
                if marker == "_delta_log":
                    self.kinds[key] = "delta"
                elif _iceberg_folder(fs, jvm, folder):
                    self.kinds[key] = "iceberg"


_GLOB = frozenset("{}[]*?\\,^")
_BATCH = 256  # folders per glob


def _match(chunk: list[str], folder: str) -> str | None:
    """Which of ``chunk`` (as Spark printed them) the folder a glob returned is (the same path, its prefix aside)."""
    bare = _split(folder)[1].rstrip("/")
    for m in chunk:
        if _split(m)[1].rstrip("/") == bare:
            return m
    return None


def table_root(spark: SparkSession, root: str, limit: int = 64) -> tuple[Literal["delta", "iceberg"], str] | None:
    """The table folder ``root`` is or is inside, the nearest one, as Spark prints it: a Delta table (a folder holding
    ``_delta_log``) or an Iceberg table (a folder whose ``metadata/`` holds Iceberg metadata files, as
    ``attest audit``'s walk tells one: carriers/discovery.py ``iceberg_metadata_names``). None when ``root`` is inside
    a hidden folder of it (a Delta log, an Iceberg ``metadata/``, attestations read as files: no data file is read).
    Not found: an Iceberg table's data files kept outside its location (``write.data.path``)."""
    jvm = spark._jvm
    assert jvm is not None
    try:
        path = jvm.org.apache.hadoop.fs.Path(root)
        fs = path.getFileSystem(spark._jsparkSession.sessionState().newHadoopConf())
        hidden = False  # a folder the table's data is never in (``_delta_log``, ``_recipe_attest``, ``.x``) was walked
        child: str | None = None  # the name of the folder the walk came up from
        for _ in range(limit):
            if path is None:
                return None
            if fs.exists(jvm.org.apache.hadoop.fs.Path(path, "_delta_log")):
                return None if hidden else ("delta", str(path.toString()))
            if _iceberg_folder(fs, jvm, path):
                return None if hidden or child == "metadata" else ("iceberg", str(path.toString()))
            child = str(path.getName())
            hidden = hidden or child.startswith(("_", "."))
            path = path.getParent()
    except Exception:  # a root that cannot be looked at: no table found there (its read is not one of a table)
        return None
    return None


def _iceberg_folder(fs: Any, jvm: Any, path: Any) -> bool:
    """Whether the folder ``path`` is an Iceberg table's: its ``metadata/`` holds Iceberg metadata files."""
    from carriers.discovery import iceberg_metadata_names

    metadata = jvm.org.apache.hadoop.fs.Path(path, "metadata")
    if not fs.exists(metadata):
        return False
    try:
        if not fs.getFileStatus(metadata).isDirectory():
            return False
        names = [str(status.getPath().getName()) for status in fs.listStatus(metadata)]
    except Exception:
        # A ``metadata/`` seen but not listable is presumed a table's: a refused read can be retried, a table's
        # unreferenced files read past its metadata cannot be taken back (another reader may list it).
        return True
    return iceberg_metadata_names(names)


class Resume:
    """The checkpoint a starting query resumes from (``carriers/spark/resume.py``), its offsets read once, when a
    Delta source asks; ``unknown``: why where it resumes cannot be found (``offsets`` then raises)."""

    def __init__(self, spark: SparkSession, location: str | None, unknown: str | None = None) -> None:
        self.spark, self.location, self.unknown = spark, location, unknown
        self._offsets: list[dict[str, Any]] | None = None

    def offsets(self) -> list[dict[str, Any]]:
        from carriers.spark.resume import CheckpointUnknown, resumed_offsets

        if self.unknown is not None:
            raise CheckpointUnknown(self.unknown)
        if self._offsets is None:
            self._offsets = [] if self.location is None else resumed_offsets(self.spark, self.location)
        return self._offsets


def stream_resume(spark: SparkSession, writer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Resume:
    """The checkpoint a ``DataStreamWriter.start`` / ``toTable`` call's query resumes from."""
    from carriers.spark.resume import CheckpointUnknown, checkpoint_location

    try:
        return Resume(spark, checkpoint_location(spark, writer, args, kwargs))
    except CheckpointUnknown as exc:
        return Resume(spark, None, unknown=str(exc))


def stream_reads(plan: Any, spark: SparkSession, resume: Resume | None = None) -> list[TableRead]:
    """The Delta / Iceberg tables a streaming plan reads (``StreamingRelation`` of a Delta source,
    ``StreamingRelationV2`` of an Iceberg table), each at its latest version now: where a query starts reading
    (a fresh one reads that version's snapshot, a restarted one the versions after its checkpoint, up to it). For
    a Delta source of a query restarted from ``resume``, also each version it reads on the way whose files the
    latest does not hold (``_delta_resumed``)."""
    jvm = spark._jvm
    assert jvm is not None
    found: dict[tuple[str, ...], TableRead] = {}
    for leaf in seq(plan.collectLeaves()):
        cls = simple_name(leaf)
        read: TableRead | None = None
        if cls == "StreamingRelation":
            source = leaf.dataSource()
            if "delta" not in str(source.className()).lower():
                continue
            table = opt(source.catalogTable())
            path = str(table.location().toString()) if table is not None else opt(source.options().get("path"))
            if path is None:
                continue
            from carriers.delta.carrier import DeltaCarrier

            delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(path))
            location = carrier_uri(str(delta_log.dataPath().toString()))
            label = str(table.identifier().unquotedString()) if table is not None else location
            changes = _delta_stream_changes(source.options())
            if changes is not None:  # not the latest version's rows: no version is checked
                read = TableRead("delta", label, None, location=location, changes=changes)
            else:
                carrier = DeltaCarrier(location)
                latest = carrier.latest_version()
                read = TableRead("delta", label, str(latest), location=location)
                if resume is not None:
                    for past in _delta_resumed(read, carrier, latest, resume):
                        found.setdefault(past.key, past)
        elif cls == "StreamingRelationV2":
            table = leaf.table()
            if simple_name(table) != "SparkTable":
                continue
            catalog, ident = opt(leaf.catalog()), opt(leaf.identifier())
            if catalog is not None and ident is not None:
                cat, parts = str(catalog.name()), ident_parts(ident)
            else:  # readStream.format("iceberg").load(name): resolved by the source (round 23: was not checked)
                cat, parts = _iceberg_source_table(jvm, leaf.extraOptions(), str(table.name()))
            # A stream of t.branch_b, t.tag_x or t.snapshot_id_N reads main all the same (Iceberg 1.12's micro-batch
            # stream plans from the table's current snapshot; round 31: checked as a table named t.branch_b, which
            # none is — refused as unreadable). The branch named still brings a policy's glob naming it in scope.
            parts = iceberg_table_parts(parts, table) or parts
            branch = iceberg_branch(table, leaf.extraOptions())
            label, asked = f"iceberg://{cat}/{'.'.join(parts)}", iceberg_change_options(leaf.extraOptions())
            if asked:  # not the current snapshot's rows: no snapshot is checked
                read = TableRead("iceberg", label, None, catalog=cat, identifier=parts,
                                 changes=f"an Iceberg stream started in the past ({asked})")
            else:
                table.table().refresh()
                current = table.table().currentSnapshot()
                removed = None if current is None else _iceberg_history_removed(table.table(), current)
                version = None if current is None or removed is not None else str(current.snapshotId())
                read = TableRead("iceberg", label, version, catalog=cat, identifier=parts, changes=removed,
                                 branch=branch)
        if read is not None:
            found.setdefault(read.key, read)
    return list(found.values())


_ICEBERG_HISTORY_MAX = 100_000  # snapshots walked back from the current one; a longer history is refused


def _iceberg_history_removed(table: Any, current: Any) -> str | None:
    """Why an Iceberg stream of ``table`` reads files its current snapshot does not hold, or None when it reads only
    files that snapshot holds. A stream does not start at the current snapshot: it reads every file of the oldest
    snapshot in the current one's history, then what each later ``append`` added (``SparkMicroBatchStream``; a
    ``replace`` — a compaction — is skipped, an ``overwrite`` / ``delete`` fails the query or, with
    ``streaming-skip-*-snapshots``, is skipped too). Only when every snapshot after the oldest is an append are
    all those files still in the current snapshot, which the gate checks: else a compaction's originals, or rows a
    delete removed, are read past it (round 23: a forged pre-compaction file read by a stream the gate let
    through)."""
    snapshot, seen = current, 0
    try:
        while snapshot is not None and seen < _ICEBERG_HISTORY_MAX:
            seen += 1
            parent = snapshot.parentId()
            if parent is None:
                return None  # the oldest: its files are all read, and no later snapshot removed any
            older = table.snapshot(parent)
            if older is None:
                return None  # expired: this snapshot is the oldest the stream can start from
            operation = str(snapshot.operation())
            if operation != "append":
                return (f"an Iceberg stream, which starts at the table's oldest snapshot and reads the files later "
                        f"snapshots removed (snapshot {snapshot.snapshotId()} is a {operation}, not an append)")
            snapshot = older
    except Exception as exc:  # a history that cannot be read cannot be shown to hold appends only
        return f"an Iceberg stream over a history that could not be read ({type(exc).__name__})"
    return "an Iceberg stream over a history too long to look at"


def _delta_resumed(read: TableRead, carrier: Any, latest: int, resume: Resume) -> list[TableRead]:
    """The versions of a Delta source a query restarted from its checkpoint reads before ``latest`` whose files
    ``latest`` does not hold, each to be checked as a version (round 24: a restarted stream read an unattested
    append a later ``DELETE`` removed, past a gate that checked the latest version only); or a read refused as
    changes when where it resumes, or what it reads on the way, cannot be looked at."""
    from carriers.spark.resume import CheckpointUnknown, delta_resume, delta_versions_past

    try:
        offsets = resume.offsets()
        if not offsets:
            return []
        where = delta_resume(offsets, carrier.table_id(latest))
        if where is None:
            return []
        versions = delta_versions_past(carrier, where, latest)
    except CheckpointUnknown as exc:
        return [TableRead("delta", read.label, None, location=read.location,
                          changes=f"a Delta stream resuming from a checkpoint whose place cannot be looked at ({exc})")]
    because = (f"read by a stream resuming from its checkpoint at version {where.since}: the latest, {latest}, no "
               "longer holds files of it")
    return [TableRead("delta", read.label, str(v), location=read.location, because=because) for v in versions]


def _iceberg_source_table(jvm: Any, options: Any, name: str) -> tuple[str, tuple[str, ...]]:
    """The catalog and identifier of an Iceberg table a streaming source loaded by name or path
    (``spark.readStream.format("iceberg").load(...)``: Spark keeps neither in the relation), resolved as Iceberg's
    own source resolved them (``IcebergSource.extractCatalog`` / ``extractIdentifier`` over the same options). A
    table that cannot be resolved so is refused (``table_unreadable``), never let through unchecked."""
    try:
        source = jvm.org.apache.iceberg.spark.source.IcebergSource()
        options = jvm.org.apache.spark.sql.util.CaseInsensitiveStringMap(options)
        return str(source.extractCatalog(options)), ident_parts(source.extractIdentifier(options))
    except Exception as exc:
        raise VerificationRefusedError(
            f"refused: the Iceberg table {name} a streaming query reads could not be named in a catalog "
            f"({type(exc).__name__}): it cannot be checked", code=Code.TABLE_UNREADABLE, path=name) from exc


# Delta streaming-source options under which a query reads other versions' changes, not the latest version's rows
# and the commits after it (DeltaOptions; keys ignore case): the change feed, a start in the past.
_DELTA_STREAM_CHANGES = ("readchangefeed", "readchangedata", "startingversion", "startingtimestamp")


def _delta_stream_changes(options: Any) -> str | None:
    """How a Delta streaming source's options ask it to read changes or start in the past, or None: a fresh query
    then reads the latest version, which the gate checks. ``startingVersion`` ``latest`` reads only commits after
    it; the change feed switched off is no change read. Options that cannot be read are taken as asking."""
    try:
        pairs = {str(k).lower(): str(v) for k, v in scala_map(options).items()}
    except Exception:
        return "a Delta stream with options that could not be read"
    asked = [f"{k}={pairs[k]}" for k in _DELTA_STREAM_CHANGES if k in pairs]
    quiet = {"readchangefeed": "false", "readchangedata": "false", "startingversion": "latest"}
    asked = [a for a in asked if quiet.get(a.split("=", 1)[0]) != a.split("=", 1)[1].strip().lower()]
    return f"a Delta stream reading changes or started in the past ({', '.join(asked)})" if asked else None


def stream_folder_reads(plan: Any, spark: SparkSession) -> list[TableRead]:
    """The Delta / Iceberg tables whose files a streaming file source reads (``spark.readStream.parquet(table)``):
    its paths, globs expanded now, at or inside a table's folder (``table_root``), and with ``recursiveFileLookup``
    a table's folder below one (each folder under it listed once now, as the query's first batch lists every one of
    them again). A file source lists its folder again at every batch; a table made
    below it after the query started is not seen."""
    jvm = spark._jvm
    assert jvm is not None
    found: dict[str, TableRead] = {}
    for leaf in seq(plan.collectLeaves()):
        if simple_name(leaf) != "StreamingRelation":
            continue
        source = leaf.dataSource()
        if "delta" in str(source.className()).lower() or opt(source.catalogTable()) is not None:
            continue
        options = source.options()
        paths = [str(p) for p in seq(source.paths())]
        one = opt(options.get("path"))
        paths += [] if one is None else [str(one)]
        recursive = str(opt(options.get("recursiveFileLookup")) or "").strip().lower() == "true"
        conf = spark._jsparkSession.sessionState().newHadoopConf()
        for path in paths:
            hpath = jvm.org.apache.hadoop.fs.Path(path)
            try:
                fs = hpath.getFileSystem(conf)
                matched = [str(st.getPath().toString()) for st in (fs.globStatus(hpath) or [])]
            except Exception:
                matched = []
            for root in matched or [path]:
                tables = [table_root(spark, where) for where in dict.fromkeys((root, _real(root)))]
                if recursive:
                    tables += _tables_below(spark, fs, _real(root))
                for table in tables:
                    if table is not None:
                        fmt, where = table
                        found.setdefault(where, TableRead(fmt, where, None, location=carrier_uri(where), folder=True))
    return list(found.values())


def _tables_below(spark: SparkSession, fs: Any, root: str) -> list[tuple[Literal["delta", "iceberg"], str]]:
    """The table folders below ``root`` in the folders Spark's recursive listing enters (hidden ones, ``_x`` and
    ``.x``, are skipped as Spark skips them), each folder listed once."""
    jvm = spark._jvm
    assert jvm is not None
    out: list[tuple[Literal["delta", "iceberg"], str]] = []
    queue = [root]
    while queue:
        at = queue.pop()
        try:
            statuses = list(fs.listStatus(jvm.org.apache.hadoop.fs.Path(at)))
        except Exception:
            continue
        names = {str(st.getPath().getName()): st for st in statuses if st.isDirectory()}
        if at != root and "_delta_log" in names:
            out.append(("delta", at))
            continue
        if at != root and "metadata" in names and _iceberg_folder(fs, jvm, jvm.org.apache.hadoop.fs.Path(at)):
            out.append(("iceberg", at))
            continue
        for name, st in names.items():
            if name.startswith(".") or (name.startswith("_") and "=" not in name):
                continue
            queue.append(str(st.getPath().toString()))
    return out


def _table_read(leaf: LeafInfo, stale: bool = False) -> TableRead | None:
    if leaf.changes is not None:  # no one version's rows (round 23): refused as such, never verified as a version
        fmt: Literal["delta", "iceberg"] = "delta" if leaf.changes.format == "delta" else "iceberg"
        return TableRead(fmt, leaf.changes.table, None, location=leaf.location, changes=leaf.changes.what,
                         reads=leaf.changes.reads)
    if leaf.kind == "delta" and leaf.location:
        location = carrier_uri(leaf.location)  # Spark's unescaped Path string as the URI the carriers read
        version = leaf.version
        if not leaf.pinned and stale:
            # Under stalenessLimit the scan reads its DeltaLog's cached snapshot, however old (round 24: an
            # unattested version a later DELETE cleaned read while the latest was checked): that DeltaLog is brought
            # up to date now, and the version it then holds — the one the scan reads — is checked.
            try:
                if leaf.refresh is None:
                    raise LookupError("no DeltaLog to update")
                version = leaf.refresh()
            except Exception as exc:
                return TableRead("delta", leaf.name or leaf.location, None, location=location, changes=(
                    f"a Delta read under {_STALENESS} whose cached snapshot could not be brought up to date "
                    f"({type(exc).__name__})"), reads="a cached snapshot of any version since it was taken")
        elif not leaf.pinned:
            # Not time travel: Delta scans the log's latest snapshot when the query executes, not the one it was
            # analysed at — a DataFrame analysed before another writer committed reads that commit. So the version
            # checked is the latest now (a commit between this check and the scan is past any pre-read check).
            from carriers.delta.carrier import DeltaCarrier

            version = str(DeltaCarrier(location).latest_version())
        return TableRead("delta", leaf.name or leaf.location, version, location=location)
    if leaf.kind == "iceberg" and leaf.catalog and leaf.identifier:
        return TableRead("iceberg", f"iceberg://{leaf.catalog}/{'.'.join(leaf.identifier)}",
                         leaf.read_version or leaf.version, catalog=leaf.catalog, identifier=leaf.identifier,
                         branch=leaf.branch)
    return None


class _Immediate(Exception):
    """``EXECUTE IMMEDIATE``: Spark runs the statement it names while it *analyses* the outer one (its analyzer
    substitutes and executes it), so the outer statement is never analysed by the gate — round 24: an ``EXECUTE
    IMMEDIATE 'INSERT INTO t SELECT * FROM <unattested>'`` refused by the gate had already inserted the rows during
    the gate's analysis. ``text``: the statement when given as a string literal (checked as a statement of its
    own), None when it is an expression or a variable (which the gate cannot read without running it)."""

    def __init__(self, text: str | None, parameters: bool) -> None:
        super().__init__(text)
        self.text, self.parameters = text, parameters


class _Script(Exception):
    """A SQL script (``BEGIN … END``, on by default in Spark 4.1): its statements run in turn, with control flow and
    variables of their own, and analysing the script as one plan *ran* it — round 24: ``BEGIN INSERT INTO t SELECT
    * FROM <unattested>; END`` passed the gate unchecked and inserted twice. The gate cannot check what a script
    will read before it runs: it is refused (in ``optional`` mode, logged), never analysed."""


_SCRIPT_WHY = ("the read gate cannot check what a SQL script (BEGIN … END) reads before it runs (its statements "
               "run in turn, under its own control flow and variables): run its statements through spark.sql one at "
               "a time")
_IMMEDIATE_WHY = ("the read gate cannot see which statement EXECUTE IMMEDIATE runs without running it (its text is an "
                  "expression or a variable, and Spark runs the statement while analysing it): give the statement's "
                  "text as a string literal, or to spark.sql itself")


def _refuse_statement(gates: list[ReadGate], label: str, why: str) -> None:
    """Refuse (or, in ``optional`` mode, log) a statement whose reads the gate cannot know, with why."""
    unknown = TableRead("delta", label, None)
    for gate in gates:
        gate._refuse(unknown, _error_report(unknown, Problem(Code.INVALID_ARGUMENT, why)), "SparkSession.sql")


def _analyse(spark: SparkSession, text: str) -> Any:
    """The analysed plan of a SQL statement, without executing it (a command's eager execution is skipped); None
    for a procedure call, which analysis would run; ``_Immediate`` / ``_Script`` raised for the statements whose
    analysis runs what they name."""
    jvm = spark._jvm
    assert jvm is not None
    jspark = spark._jsparkSession
    skip = getattr(getattr(jvm.org.apache.spark.sql.execution, "CommandExecutionMode$"), "MODULE$").SKIP()
    plan = jspark.sessionState().sqlParser().parsePlan(text)
    if simple_name(plan) == "CompoundBody":
        raise _Script(text)
    if simple_name(plan) == "UnresolvedExecuteImmediate":
        statement = plan.sqlStmtStr()
        literal = simple_name(statement) == "Literal" and statement.value() is not None
        raise _Immediate(str(statement.value()) if literal else None, bool(seq(plan.args())))
    if simple_name(plan) == "Call":
        # A procedure call: Spark 4 runs the procedure while it analyses the statement (the InvokeProcedures rule),
        # whatever the execution mode — analysing it to check it ran it, and Spark then ran it again (round 24:
        # rollback_to_snapshot answered with the snapshot it had rolled back to as the previous one). Procedures
        # maintain the tables they name, as DeltaTable.optimize does: not analysed, not gated.
        return None
    with _quiet_analysis_errors():
        return jspark.sessionState().executePlan(plan, skip).analyzed()


@contextmanager
def _quiet_analysis_errors() -> Iterator[None]:
    """pyspark logs every AnalysisException it converts at ERROR; the gate's own trial analysis is not the user's
    error (Spark reports it again, once, if the statement itself runs)."""
    from pyspark.logger import PySparkLogger

    # pyspark's own logger class (a plain logging.Logger made here first would break its keyword arguments).
    loggers = [PySparkLogger.getLogger(n) for n in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    was = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, disabled in zip(loggers, was, strict=True):
            lg.disabled = disabled


def _partial_plan(exc: BaseException) -> Any:
    """The plan an AnalysisException carries (relations resolved up to the failure), or None."""
    java = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)  # pyspark's converted / raw py4j
    try:
        return None if java is None else opt(java.plan())
    except Exception:
        return None


def _unresolved_relation(plan: Any) -> bool:
    """Whether a (partially analysed) plan still has a relation Spark did not resolve."""
    for sub in [plan, *seq(plan.subqueriesAll())]:
        if any("Unresolved" in simple_name(leaf) for leaf in seq(sub.collectLeaves())):
            return True
    return False


# ---- the interceptor -----------------------------------------------------------------------------------------

def _gates_for(session: Any) -> list[ReadGate]:
    with _GATES_LOCK:
        gates = list(_GATES)
    target = getattr(getattr(session, "_jsparkSession", None), "_target_id", None)
    mine = [g for g in gates if getattr(g.spark._jsparkSession, "_target_id", None) == target]
    return mine or gates


def _intercept(name: str, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if getattr(_local, "depth", 0):
        return  # a gated call inside a gated call (toPandas -> collect): the outer one checked this statement
    if name in _EAGER_REPR and not _eager_evaluation(obj):
        return  # the DataFrame's schema, no rows
    from carriers.spark.stamp import wait_for_pending

    wait_for_pending()  # a table the job just wrote is read after its attestation, not before it lands
    if name == "MergeIntoWriter.__init__":
        obj._attest_merge = (args[0] if args else kwargs.get("df"), args[1] if len(args) > 1 else kwargs.get("table"))
        return
    _local.depth = 1
    try:
        if name == "SparkSession.sql":
            _check_sql(obj, args, kwargs)
            return
        if name.startswith(("DeltaTable.", "DeltaMergeBuilder.")):
            _check_delta_api(name, obj)
            return
        target = None
        if name == "MergeIntoWriter.merge":
            df, target = getattr(obj, "_attest_merge", (None, None))
        elif name in _READS_ARGUMENT:
            df = args[0] if args else kwargs.get("dataset")
            if not hasattr(df, "_jdf"):
                return  # pyspark refuses what is no DataFrame itself
        else:
            df = obj if hasattr(obj, "_jdf") else getattr(obj, "_df", None)
        if df is None:
            return
        for gate in _gates_for(df.sparkSession):
            if name.startswith("DataStreamWriter."):
                gate.check_stream(df, name, stream_resume(df.sparkSession, obj, args, kwargs))
                continue
            gate.check_dataframe(df, name)
            if target:
                gate.check_dataframe(df.sparkSession.table(target), name)  # a MERGE reads its target too
    finally:
        _local.depth = 0


def _eager_evaluation(df: Any) -> bool:
    """Whether a DataFrame's repr shows its rows (``spark.sql.repl.eagerEval.enabled``); unreadable: taken as so."""
    try:
        return bool(df.sparkSession._jconf.isReplEagerEvalEnabled())
    except Exception:
        return True


def _check_delta_api(name: str, obj: Any) -> None:
    """A delta-spark ``DeltaTable.update`` / ``delete`` (it reads the table) or ``DeltaMergeBuilder.execute`` (its
    source and target, kept by the JVM builder in private fields: read by reflection; one that cannot be read is
    refused, never let through unchecked)."""
    session = obj._spark
    gates = _gates_for(session)
    if not gates:
        return
    if name == "DeltaMergeBuilder.execute":
        try:
            builder = obj._jbuilder
            plans = [_private(builder, "source").queryExecution().analyzed(),
                     _private(builder, "targetTable").toDF().queryExecution().analyzed()]
        except Exception as exc:
            unknown = TableRead("delta", "a DeltaTable.merge", None)
            problem = Problem(Code.TABLE_UNREADABLE, f"the read gate could not find the source and target of a "
                              f"DeltaTable.merge ({type(exc).__name__}) to check them")
            for gate in gates:
                gate._refuse(unknown, _error_report(unknown, problem), name)
            return
    else:
        plans = [obj.toDF()._jdf.queryExecution().analyzed()]
    for gate in gates:
        for plan in plans:
            gate.check_plan(plan, name, session)


def _private(obj: Any, field_name: str) -> Any:
    """A JVM object's private field (a Scala constructor parameter kept as a field)."""
    found = obj.getClass().getDeclaredField(field_name)
    found.setAccessible(True)
    return found.get(obj)


def _check_sql(spark: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    text = args[0] if args else kwargs.get("sqlQuery")
    if not isinstance(text, str):
        return  # pyspark itself refuses it
    # Parameters are bound only inside Spark's sql(): the statement is analysed with them unbound (that analysis
    # fails, but its plan has every relation resolved that does not depend on a parameter).
    parameters = bool(args[1] if len(args) > 1 else kwargs.get("args"))
    formats = {k: v for k, v in kwargs.items() if k not in ("sqlQuery", "args")}
    formatter = None
    if formats:  # spark.sql("... {df}", df=df): format as pyspark will (temporary views), analyse, clean up
        from pyspark.sql.sql_formatter import SQLStringFormatter

        formatter = SQLStringFormatter(spark)
        text = formatter.format(text, **formats)
    try:
        gates = _gates_for(spark)
        try:
            plan = _analyse(spark, text)
        except _Script:
            _refuse_statement(gates, "a SQL script", _SCRIPT_WHY)
            return
        except _Immediate as immediate:
            if immediate.text is None:
                _refuse_statement(gates, "an EXECUTE IMMEDIATE statement", _IMMEDIATE_WHY)
            else:  # the statement it runs, checked as one given to spark.sql (its USING values bound only then)
                _check_sql(spark, (immediate.text, immediate.parameters), {})
            return
        except Exception as exc:
            plan = _partial_plan(exc) if parameters else None
            if plan is not None and _unresolved_relation(plan):
                plan = None  # IDENTIFIER(:name): which table it reads is known only once Spark binds the parameter
            if plan is None:
                # Without parameters Spark's own analysis fails the same way and nothing executes: let it say why.
                # With parameters (bound only inside Spark's sql()), an unanalysable statement cannot be shown to
                # read only verified tables.
                if parameters:
                    _refuse_statement(gates, "a parameterized statement", "the read gate cannot analyse this "
                                      "parameterized statement to see which tables it reads")
                return
        if plan is None:
            return  # a procedure call (_analyse)
        for gate in gates:
            gate.check_plan(plan, "SparkSession.sql", spark)
    finally:
        if formatter is not None:
            formatter.clear()


def require_verified(spark: SparkSession, policy: Any = None, *, mode: Mode = "required",
                     level: GateLevel = "files", iceberg_catalogs: Mapping[str, Mapping[str, str]] | None = None,
                     now: dt.datetime | None = None) -> ReadGate:
    """Install the read gate on ``spark`` (see the module docstring). ``policy``: a TrustPolicy, a public key, a PEM
    or TOML file (None: verify without checking signatures). Returns the gate (``uninstall()``, or use it as a
    context manager)."""
    if mode not in ("required", "optional", "disabled"):
        raise InvalidArgumentError(f"mode must be required, optional or disabled, not {mode!r}")
    if level not in ("schema", "files", "bytes"):
        raise InvalidArgumentError(f"level must be schema, files or bytes, not {level!r}")
    trust = None
    if policy is not None:
        from attest.signing.policy import load_policy

        trust = load_policy(policy)  # a bad policy is an error now, not at the first query
    gate = ReadGate(spark, trust, mode=mode, level=level,
                    iceberg_catalogs={k: dict(v) for k, v in (iceberg_catalogs or {}).items()}, now=now)
    return gate._install()
