"""Reading a Spark write command's analysed plan: target, versions read, and the program identity.

Everything JVM-side goes through py4j ``JavaObject``s handed in by the listener; nothing here imports pyspark.
The canonical program document (``program_document``) is pure Python over ``LogicalPlan.toJSON()`` so it is
unit-testable without a JVM. What is in and out of it: docs/spark.md, "Program identity".
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from attest.canonical import digest

__all__ = [
    "LeafInfo",
    "canonical_plan",
    "leaves",
    "opt",
    "program_document",
    "program_hash_from_json",
    "seq",
    "simple_name",
]

# Relation leaves: replaced by their table identity (or schema) in the program document.
RELATION_CLASSES = frozenset({
    "LogicalRelation", "DataSourceV2Relation", "DataSourceV2ScanRelation", "HiveTableRelation", "LogicalRDD",
    "LocalRelation", "StreamingRelation", "StreamingRelationV2", "ExternalRDD", "OneRowRelation",
})
# Iceberg's Spark identifiers that select a snapshot of a table rather than name one (SparkCatalog.loadTable).
_ICEBERG_REF_PREFIXES = ("branch_", "tag_", "snapshot_id_", "at_timestamp_")
# Keys that are run- or environment-specific, never logic: JVM ids, streaming flags, statistics, plan ids.
_DROP_KEYS = frozenset({"jvmId", "isStreaming", "stats", "planId", "evalContext"})


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


def leaves(plan: Any, jvm: Any) -> list[LeafInfo]:
    """The relation leaves of ``plan`` in pre-order (children first, then inner plans), with pinned versions."""
    out: list[LeafInfo] = []
    hadoop = jvm.java.lang.Class.forName("org.apache.spark.sql.execution.datasources.HadoopFsRelation")
    stack: list[tuple[Any, bool]] = [(plan, True)]
    seen = 0
    while stack and seen < 10_000:  # bounded: a plan is a tree, but never trust a foreign structure blindly
        seen += 1
        node, in_tree = stack.pop()
        cls = simple_name(node)
        if cls in RELATION_CLASSES:
            out.append(_leaf(node, cls, hadoop, in_tree))
            continue
        kids = list(_children(node))
        for child, direct in reversed(kids):
            stack.append((child, in_tree and direct))
    return out


def _schema(node: Any) -> list[str]:
    try:
        return [f"{a.name()}:{a.dataType().simpleString()}" for a in seq(node.output())]
    except Exception:
        return []


def ident_parts(ident: Any) -> tuple[str, ...]:
    """A Spark Identifier as plain parts: toString() quotes parts with special characters, which no catalog
    lookup by name would then find."""
    return (*(str(p) for p in ident.namespace()), str(ident.name()))


def _leaf(node: Any, cls: str, hadoop: Any, in_tree: bool) -> LeafInfo:
    schema = _schema(node)
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
                    return LeafInfo("delta", name=name, location=str(location.path().toString()),
                                    version=version, in_tree=in_tree, schema=schema)
                except Exception:
                    pass
            roots = [str(p.toString()) for p in seq(location.rootPaths())]
            return LeafInfo("path", name=name, location=",".join(roots), in_tree=in_tree, schema=schema)
        return LeafInfo("path", name=name, location=str(rel.toString()), in_tree=in_tree, schema=schema)
    if cls in ("DataSourceV2Relation", "DataSourceV2ScanRelation"):
        rel = node.relation() if cls == "DataSourceV2ScanRelation" else node
        catalog = opt(rel.catalog())
        ident = opt(rel.identifier())
        table = rel.table()
        tcls = simple_name(table)
        cat_name = None if catalog is None else str(catalog.name())
        parts = None if ident is None else ident_parts(ident)
        name = ".".join(p for p in (cat_name, *(parts or ())) if p)
        if tcls == "SparkTable":
            sid = table.snapshotId()
            read = sid
            if read is None:
                current = table.table().currentSnapshot()
                read = None if current is None else current.snapshotId()
            if parts and len(parts) > 2 and parts[-1].startswith(_ICEBERG_REF_PREFIXES) and \
                    str(table.table().name()).rsplit(".", 1)[-1] != parts[-1]:
                parts = parts[:-1]  # t.branch_audit / t.tag_x: the table is t, the suffix selects a snapshot
            return LeafInfo("iceberg", name=name or str(table.name()), version=None if sid is None else str(sid),
                            catalog=cat_name, identifier=parts, location=str(table.table().location()),
                            in_tree=in_tree, schema=schema, read_version=None if read is None else str(read))
        if tcls == "DeltaTableV2":
            return LeafInfo("delta", name=name or None, location=str(table.path().toString()),
                            version=str(table.initialSnapshot().version()), in_tree=in_tree, schema=schema)
        return LeafInfo("path", name=name or str(table.name()), in_tree=in_tree, schema=schema)
    return LeafInfo("memory", in_tree=in_tree, schema=schema)


# ---- the program document -----------------------------------------------------------------------------------

def _short(cls: str) -> str:
    return cls.rsplit(".", 1)[-1]


class _Normaliser:
    def __init__(self, relations: Sequence[LeafInfo], scrub: Sequence[str]) -> None:
        self.relations = list(relations)
        self.scrub = [s for s in scrub if s]
        self.ids: dict[int, int] = {}
        self.next_relation = 0

    def value(self, v: Any) -> Any:
        if isinstance(v, dict):
            if str(v.get("product-class", "")).endswith("ExprId") and "id" in v:
                # Expression ids are a per-session counter: number them by first appearance instead.
                return {"id": self.ids.setdefault(int(v["id"]), len(self.ids))}
            return {k: self.value(x) for k, x in sorted(v.items()) if k not in _DROP_KEYS}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, str):
            for s in self.scrub:  # table locations: where the data lives is not what the program computes
                if s in v:
                    v = v.replace(s, "<location>")
            return v
        return v

    def node(self, n: dict[str, Any]) -> dict[str, Any]:
        cls = _short(str(n.get("class", "")))
        if cls in RELATION_CLASSES:
            leaf = self.relations[self.next_relation] if self.next_relation < len(self.relations) else None
            self.next_relation += 1
            out: dict[str, Any] = {"class": cls, "num-children": 0}
            # In-memory data (LocalRelation rows, RDDs) is data, not program: only its schema counts.
            out["relation"] = leaf.program_identity() if leaf is not None else "?"
            out["output"] = self.value(n.get("output", []))
            return out
        return {("class" if k == "class" else k): (cls if k == "class" else self.value(x))
                for k, x in sorted(n.items()) if k not in _DROP_KEYS}


def canonical_plan(plan_json: str, relations: Sequence[LeafInfo], scrub: Sequence[str] = ()) -> list[Any]:
    """``LogicalPlan.toJSON()`` (a pre-order node list) with expression ids renumbered, run-specific keys
    dropped, relation leaves replaced by their program identity (in order) and locations scrubbed."""
    nodes = json.loads(plan_json)
    norm = _Normaliser([r for r in relations if r.in_tree], scrub)
    return [norm.node(n) if isinstance(n, dict) else norm.value(n) for n in nodes]


def program_document(parts: Sequence[tuple[str, str, Sequence[LeafInfo]]],
                     scrub: Sequence[str] = ()) -> dict[str, Any]:
    """The typed program document ``{"kind": "spark-plan", "version": 1, "parts": {name: canonical plan}}``;
    each part is (name, toJSON of that sub-plan, its leaves)."""
    return {"kind": "spark-plan", "version": 1,
            "parts": {name: canonical_plan(plan_json, rels, scrub) for name, plan_json, rels in parts}}


def program_hash_from_json(parts: Sequence[tuple[str, str, Sequence[LeafInfo]]], scrub: Sequence[str] = ()) -> str:
    return digest(program_document(parts, scrub))
