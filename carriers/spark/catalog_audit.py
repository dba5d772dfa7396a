"""An audit of every table a Spark session's catalogs name: what a reader of each name reads, checked (docs/spark.md
"Auditing Spark's catalogs").

``attest audit`` finds tables by folder or through a pyiceberg catalog. A lakehouse whose readers name tables through
Spark — ``spark_catalog`` (a metastore: external Delta tables anywhere), Iceberg catalogs configured only in Spark —
holds tables no folder walk finds and no pyiceberg configuration names: such an audit skipped them without a word.

``audit(spark)`` lists every catalog the session is configured with (``spark.sql.catalog.<name>``, ``spark_catalog``
and those ``SHOW CATALOGS`` names), every namespace of each (nested ones too) and every table and view of each, and
checks each name as the read gate checks a read (carriers/spark/gate.py): Spark resolves ``spark.table(name)``, and
the version that plan pins — Delta ``snapshotAtAnalysis``, Iceberg ``snapshotId``, a branch's head for
``t.branch_b`` — is verified through the carriers. A view's line is the tables its SQL reads, a line each. A table
of another format (Parquet, Hive, CSV) is listed as skipped: no attestation binds its rows. Names reach SQL only
backtick-quoted (``quoted``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from attest.errors import AttestError, Code, Problem
from attest.verify.audit import AuditReport, AuditRow

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.gate import GateLevel

__all__ = ["audit", "catalog_names", "quoted", "shown"]

# At most this many namespaces are listed in one catalog (nested ones included): a catalog that keeps answering is
# cut short, said as an ERROR row, never a hang.
MAX_NAMESPACES = 100_000
MAX_DEPTH = 64


def quoted(parts: Sequence[str]) -> str:
    """A multipart name as Spark SQL reads it whatever its characters: each part in backticks, a backtick doubled."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def catalog_names(spark: SparkSession) -> list[str]:
    """Every catalog the session can name: ``spark_catalog``, each ``spark.sql.catalog.<name>`` of its configuration
    (Spark loads a catalog on first use, and ``SHOW CATALOGS`` lists only the loaded ones: a configured catalog no
    statement had named yet was missing) and those ``SHOW CATALOGS`` lists."""
    names = {"spark_catalog"}
    prefix = "spark.sql.catalog."
    for key, _ in spark.sparkContext.getConf().getAll():
        rest = key[len(prefix):] if key.startswith(prefix) else ""
        if rest and "." not in rest:
            names.add(rest)
    for row in spark.sql("SHOW CATALOGS").collect():
        names.add(str(row[0]))
    return sorted(names)


def _namespaces(spark: SparkSession, catalog: str, top: list[str]) -> Iterator[list[str]]:
    """``top`` (none: the whole catalog) and every namespace under it, parents before children (``SHOW NAMESPACES
    IN`` each, breadth first)."""
    if top:
        yield top
    todo: list[list[str]] = [top]
    seen: set[tuple[str, ...]] = {tuple(top)}
    while todo:
        parent = todo.pop(0)
        if len(parent) >= MAX_DEPTH:  # a catalog naming a namespace inside itself, again and again
            raise AttestError(f"catalog {catalog} nests namespaces deeper than {MAX_DEPTH} under "
                              f"{shown(parent[:3])}: the rest were not listed", code=Code.TABLE_NOT_AUDITED)
        rows = spark.sql(f"SHOW NAMESPACES IN {quoted([catalog, *parent])}").collect()
        for row in rows:
            child = _parts(str(row[0]))
            child = child if child[:len(parent)] == parent and len(child) > len(parent) else [*parent, *child]
            if tuple(child) in seen:
                continue
            seen.add(tuple(child))
            if len(seen) > MAX_NAMESPACES:
                raise AttestError(f"catalog {catalog} lists more than {MAX_NAMESPACES} namespaces: the rest were not "
                                  "listed", code=Code.TABLE_NOT_AUDITED)
            yield child
            todo.append(child)


def _parts(text: str) -> list[str]:
    """A namespace as ``SHOW NAMESPACES`` prints it (``a.b``, a part holding a dot or backtick quoted) as its parts."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == "`":
            j, part = i + 1, []
            while j < n:
                if text[j] == "`" and j + 1 < n and text[j + 1] == "`":
                    part.append("`")
                    j += 2
                elif text[j] == "`":
                    break
                else:
                    part.append(text[j])
                    j += 1
            parts.append("".join(part))
            i = j + 2  # past the closing backtick and the dot
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            parts.append(text[i:j])
            i = j + 1
    return parts


def _tables(spark: SparkSession, catalog: str, namespace: list[str]) -> list[tuple[list[str], bool]]:
    """(name parts, is a view) of every table and persistent view of a namespace; temporary views are the session's
    own, no catalog's, and left out."""
    where = quoted([catalog, *namespace])
    out: dict[tuple[str, ...], bool] = {}
    for row in spark.sql(f"SHOW TABLES IN {where}").collect():
        fields = row.asDict()
        if fields.get("isTemporary"):
            continue
        out[(catalog, *namespace, str(fields["tableName"]))] = False
    try:
        views = spark.sql(f"SHOW VIEWS IN {where}").collect()
    except Exception:  # a catalog that keeps no views (Iceberg's, before views): its tables are all there is
        views = []
    for row in views:
        fields = row.asDict()
        if not fields.get("isTemporary"):
            out[(catalog, *namespace, str(fields["viewName"]))] = True
    return [(list(k), v) for k, v in out.items()]


def audit(spark: SparkSession, policy: Any = None, *, level: GateLevel = "files",
          catalogs: Sequence[str] | None = None) -> AuditReport:
    """Every table and view the session's catalogs name, each checked as the read gate checks a read of it: one row
    per table version read (a view: each table its SQL reads; an Iceberg table: also each branch at another snapshot
    than main's, and each tag at a snapshot no branch's head is). ``catalogs``: only these — a catalog, or
    ``<catalog>.<namespace>`` for one namespace and those under it. ``policy``: a TrustPolicy, a public key, a PEM or
    TOML file. Nothing is refused or raised for a table: every outcome is its row."""
    from carriers.spark.gate import require_verified

    gate = require_verified(spark, policy, mode="disabled", level=level)  # its arguments checked; nothing installed
    gate.mode, gate.quiet = "optional", True  # a failure is its row, never a refusal nor a log line
    report = AuditReport()
    for target in catalogs if catalogs is not None else catalog_names(spark):
        catalog, _, below = target.partition(".")
        try:
            namespaces = list(_namespaces(spark, catalog, _parts(below) if below else []))
        except Exception as exc:
            report.add(AuditRow.of_exception(target, _coded(exc)))
            continue
        for namespace in namespaces:
            try:
                found = _tables(spark, catalog, namespace)
            except Exception as exc:
                report.add(AuditRow.of_exception(".".join([catalog, *namespace]), _coded(exc)))
                continue
            for parts, view in found:
                name = shown(parts)
                try:
                    reads = gate.check_dataframe(spark.table(quoted(parts)), what=f"audit of {name}")
                except Exception as exc:
                    report.add(AuditRow.of_exception(name, _coded(exc)))
                    continue
                if not reads:
                    report.add_skipped(Problem(Code.TABLE_NOT_AUDITED, (
                        "a view reading no Delta or Iceberg table" if view else
                        "not a Delta or Iceberg table: no attestation binds its rows"), name))
                rows = [AuditRow.of_report(f"{name} (a view: reads {read.subject})" if view else name, read)
                        for read in reads]
                if not view and len(reads) == 1 and reads[0].table_format == "iceberg":
                    rows += _branch_rows(spark, gate, parts, name, rows[0], reads[0].other_heads)
                for row in rows:
                    report.add(row)
    return report


def shown(parts: Sequence[str]) -> str:
    """A name as an audit prints it: its parts joined by dots, a part that is no plain identifier backtick-quoted
    (``iceberg.`a.b`.t`` is not ``iceberg.a.b.t``)."""
    return ".".join(p if p.isidentifier() and p.isascii() else quoted([p]) for p in parts)


def _branch_rows(spark: SparkSession, gate: Any, parts: list[str], name: str, main_row: AuditRow,
                 noted: list[tuple[str, str]]) -> list[AuditRow]:
    """Each branch of an Iceberg table at another snapshot than main's, read as Spark reads it
    (``option("branch", b)``: never ``t.branch_b``, which a table of that name shadows) and checked: a row each, as
    ``attest audit`` gives a branch its line (docs/audit.md "Iceberg branches"). ``main_row``'s note naming the
    branches ``noted`` unchecked then says they are audited, as ``attest audit``'s does."""
    from attest.verify.report import audited_heads_note, other_heads_note
    from carriers.iceberg.carrier import branch_heads

    try:
        table = gate._iceberg_catalog(parts[0]).load_table(tuple(parts[1:]))
        heads = branch_heads(table)
    except Exception as exc:
        return [AuditRow.of_exception(f"{name} (its branches)", _coded(exc))]
    if noted:
        said = other_heads_note(noted)
        main_row.notes = [audited_heads_note(noted) if note == said else note for note in main_row.notes]
    out: list[AuditRow] = []
    main = dict(heads).get("main")
    for branch, head in heads:
        if branch == "main" or head == main:
            continue
        line = f"{name}.{shown([f'branch_{branch}'])}"
        note = f"the head of branch {branch!r} of {name} (snapshot {head}), which readers of the branch read"
        try:
            reads = gate.check_dataframe(spark.read.option("branch", branch).table(quoted(parts)),
                                         what=f"audit of {line}")
        except Exception as exc:
            out.append(AuditRow.of_exception(line, _coded(exc), [note]))
            continue
        out += [AuditRow.of_report(line, read, notes=[note]) for read in reads]
    return out + _tag_rows(spark, gate, parts, name, table, {head for _, head in heads})


def _tag_rows(spark: SparkSession, gate: Any, parts: list[str], name: str, table: Any,
              heads: set[int]) -> list[AuditRow]:
    """Each tag of an Iceberg table at a snapshot no branch's head is, read as ``VERSION AS OF`` its snapshot's id
    (never the tag's name, which Spark takes for a snapshot id when it is digits) and checked: a row each, as
    ``attest audit`` gives a tag its line (round 31)."""
    from carriers.iceberg.carrier import IcebergCarrier, tags_off

    out: list[AuditRow] = []
    for tag, snapshot in tags_off(IcebergCarrier(table), heads):  # as attest audit chooses them
        line = f"{name}.{shown([f'tag_{tag}'])}"
        note = f"the snapshot tag {tag!r} of {name} names (snapshot {snapshot}), which readers of the tag read"
        try:
            reads = gate.check_dataframe(spark.read.option("versionAsOf", str(snapshot)).table(quoted(parts)),
                                         what=f"audit of {line}")
        except Exception as exc:
            out.append(AuditRow.of_exception(line, _coded(exc), [note]))
            continue
        out += [AuditRow.of_report(line, read, notes=[note]) for read in reads]
    return out


def _coded(exc: Exception) -> Exception:
    if isinstance(exc, AttestError):
        return exc
    return AttestError(f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}",
                       code=Code.TABLE_UNREADABLE)
