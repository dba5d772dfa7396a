"""Lineage as data: a walk's tree of table versions (``LineageNode``) and the graph a picture is drawn from.

``carriers.lineage.walk`` builds the tree (it opens tables); everything here is engine-free, so renderers
(attest/render/) and notebooks draw a walk without a table library. Nodes are table versions; an edge goes from
the version a run read to the version it produced, labelled with the version read and how strongly it was
observed (strong: by content identity; heuristic: by version / snapshot id / row count / watermark).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from attest._callable import make_callable

make_callable(__name__)  # attest.lineage(table, ...) is attest.api.lineage

# What a node's colour says, best first. UNCHECKED: an input recorded without a table location (a file source, or
# no location): the walk cannot open it, so it is a leaf that is neither verified nor failed.
OUTCOMES = ("VERIFIED", "STALE", "COMPACTED", "UNATTESTED", "NOT VERIFIED", "ERROR", "UNCHECKED")


@dataclass
class LineageNode:
    """One table version in the lineage tree (``inputs``: the versions its run read)."""

    ref: str
    version: str | None
    table: str | None = None
    attested: bool = False
    verdict: str = ""
    passed: bool = False
    model: str | None = None
    program_hash: str | None = None
    inputs_proof_class: str | None = None
    observed_as: str | None = None  # how the downstream run saw this version: "strong" | "heuristic"
    error: str | None = None
    outcome: str = "UNCHECKED"  # one of OUTCOMES (the audit's words, plus UNCHECKED)
    table_format: str | None = None
    inputs: list[LineageNode] = field(default_factory=list)

    def failed(self) -> bool:
        """Whether this node or any node upstream of it failed (unreadable, or attested but not verified)."""
        opened = self.error is not None or bool(self.verdict)  # inputs without a location are leaves, not checked
        return (opened and not self.passed) or any(i.failed() for i in self.inputs)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in self.__dict__.items() if k != "inputs" and v is not None}
        out["inputs"] = [i.to_json() for i in self.inputs]
        return out

    def lines(self, indent: str = "") -> list[str]:
        status = "ATTESTED" if self.attested else "UNATTESTED"
        if self.error:
            status = f"UNREADABLE ({self.error})"
        elif self.attested:
            status += " ✓" if self.passed else " ✗"
        seen = f" [read as {self.observed_as}]" if self.observed_as else ""
        model = f" model={self.model}" if self.model else ""
        proof = f" inputs={self.inputs_proof_class}" if self.inputs_proof_class else ""
        head = f"{indent}{self.ref}@{self.version}{seen}: {status}{model}{proof}"
        out = [head]
        if self.verdict and not self.passed and self.attested:
            out.append(f"{indent}    {self.verdict}")
        for child in self.inputs:
            out.extend(child.lines(indent + "  "))
        return out

    def graph(self) -> LineageGraph:
        return LineageGraph.from_tree(self)

    def _repr_html_(self) -> str:
        from attest.render.html import lineage_html

        return lineage_html(self)


@dataclass(frozen=True)
class GraphNode:
    """A table version drawn once, however many runs read it."""

    key: str  # "<ref>@<version>"
    ref: str
    version: str | None
    outcome: str
    model: str | None = None
    table_format: str | None = None
    verdict: str = ""
    root: bool = False

    @property
    def short_name(self) -> str:
        """The table's last path segment (or ``namespace.table`` for Iceberg): what a picture's box says."""
        if self.ref.startswith("iceberg://"):
            return self.ref.split("/", 3)[-1]
        tail = posixpath.basename(self.ref.rstrip("/"))
        return tail or self.ref

    @property
    def version_label(self) -> str:
        noun = "snapshot" if self.table_format == "iceberg" else "v"
        if self.version is None:
            return "version unknown"
        return f"{noun} {self.version}" if noun == "snapshot" else f"v{self.version}"


@dataclass(frozen=True)
class GraphEdge:
    """``source`` (an upstream version) was read by the run that produced ``target``."""

    source: str
    target: str
    version: str | None
    observed_as: str | None

    @property
    def label(self) -> str:
        version = "version unknown" if self.version is None else f"read @{self.version}"
        return f"{version} · {self.observed_as}" if self.observed_as else version


@dataclass
class LineageGraph:
    """Nodes (the root first) and edges of a walk, each table version once."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)

    @classmethod
    def from_tree(cls, root: LineageNode) -> LineageGraph:
        graph = cls()
        seen: dict[str, GraphNode] = {}
        edges: set[tuple[str, str]] = set()

        def key(node: LineageNode) -> str:
            return f"{node.ref}@{node.version}"

        stack: list[tuple[LineageNode, str | None]] = [(root, None)]
        expanded: set[int] = set()  # node objects, not versions: a hand-built cyclic tree still terminates
        while stack:
            node, downstream = stack.pop()
            k = key(node)
            if k not in seen:
                seen[k] = GraphNode(key=k, ref=node.ref, version=node.version, outcome=node.outcome,
                                    model=node.model, table_format=node.table_format, verdict=node.verdict,
                                    root=downstream is None)
                graph.nodes.append(seen[k])  # a version reached twice was checked twice, with one outcome
            if downstream is not None and (k, downstream) not in edges:
                edges.add((k, downstream))
                graph.edges.append(GraphEdge(source=k, target=downstream, version=node.version,
                                             observed_as=node.observed_as))
            if id(node) not in expanded:
                expanded.add(id(node))
                stack.extend((child, k) for child in reversed(node.inputs))
        return graph

    def node(self, key: str) -> GraphNode:
        return next(n for n in self.nodes if n.key == key)
