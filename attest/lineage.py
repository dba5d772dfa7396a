"""Lineage as data: a walk's tree of table versions (``LineageNode``) and the graph a picture is drawn from.

``carriers.lineage.walk`` builds the tree (it opens tables); everything here is engine-free, so renderers
(attest/render/) and notebooks draw a walk without a table library. Nodes are table versions; an edge goes from
the version a run read to the version it produced, labelled with the version read and how strongly it was
observed (strong: by content identity; heuristic: by version / snapshot id / row count / watermark).

A table's own earlier versions (an append or a merge lists the version it built on as an input) are one node: the
chain ``orders v3..v14``, every version in it checked, the upstreams of all of them collected once. The unattested
version a chain starts from is its *pre-attestation* history: shown with its own outcome, not a failure of the walk
(a different table that is unattested still is). Where ``--depth`` stops the walk, a node says how many inputs were
not walked; ``summary()`` is the walk's last line.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace
from typing import Any

from attest._callable import make_callable

make_callable(__name__)  # attest.lineage(table, ...) is attest.api.lineage

# What a node's colour says, best first. UNCHECKED: an input recorded without a table location (a file source, or
# no location) or without a version: the walk cannot open it, so it is a leaf that is neither verified nor failed.
# NOT WALKED: a marker, not a version: the inputs a node recorded beyond --depth (neither verified nor failed).
OUTCOMES = ("VERIFIED", "STALE", "COMPACTED", "UNATTESTED", "NOT VERIFIED", "ERROR", "UNCHECKED", "NOT WALKED")
PRE_ATTESTATION = "pre-attestation history"


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
    code: str | None = None  # the first error code of this version's verify report (why it did not verify)
    # Earlier attested versions of the same table, newest first, walked as this one node (each checked on its own;
    # the inputs they recorded are in ``inputs``, each table version once).
    chain: list[LineageNode] = field(default_factory=list)
    # An unattested earlier version of the same table that a chain starts from: the table's history before its
    # attestations. Reported with its own outcome; not a failure of the walk.
    pre_attestation: bool = False
    not_walked: int = 0  # inputs this node (its chain) recorded that --depth kept the walk from opening
    depth_limit: int | None = None  # the walk's --depth, where it cut
    read_content: str | None = field(default=None, repr=False)  # the content its input record names (strong)

    def own_failure(self) -> bool:
        """Whether this version itself failed: opened (or unreadable) and not verified — a pre-attestation history
        excepted (an unattested, readable earlier version of the same table: set only by the walk)."""
        opened = self.error is not None or bool(self.verdict)  # inputs without a location are leaves, not checked
        if not opened or self.passed:
            return False
        return not (self.pre_attestation and self.error is None and not self.attested)

    def chain_failed(self) -> bool:
        """Whether this version or any earlier version of the same table walked with it failed."""
        return self.own_failure() or any(m.own_failure() for m in self.chain)

    def failed(self) -> bool:
        """Whether this node (any version of its chain) or any node upstream of it failed (unreadable, or attested
        but not verified)."""
        return self.chain_failed() or any(i.failed() for i in self.inputs)

    @property
    def chain_outcome(self) -> str:
        """The node's colour: its own outcome, or that of the first version of its chain that did not verify."""
        if self.outcome != "VERIFIED":
            return self.outcome
        return next((m.outcome for m in self.chain if m.outcome != "VERIFIED"), self.outcome)

    @property
    def oldest_version(self) -> str | None:
        return self.chain[-1].version if self.chain else self.version

    @property
    def version_span(self) -> str:
        """``14`` for one version, ``3..14`` for a chain (oldest..newest)."""
        return f"{self.oldest_version}..{self.version}" if self.chain else f"{self.version}"

    def to_json(self) -> dict[str, Any]:
        skip = {"inputs", "chain", "pre_attestation", "not_walked", "depth_limit", "read_content"}
        out: dict[str, Any] = {k: v for k, v in self.__dict__.items() if k not in skip and v is not None}
        if self.chain:
            out["chain"] = [m.to_json() for m in self.chain]
            out["versions"] = len(self.chain) + 1
            out["oldest_version"] = self.oldest_version
            out["chain_passed"] = not self.chain_failed()
        if self.pre_attestation:
            out["pre_attestation"] = True
        if self.not_walked:
            out["not_walked"] = self.not_walked
            out["depth_limit"] = self.depth_limit
        out["inputs"] = [i.to_json() for i in self.inputs]
        return out

    def lines(self, indent: str = "") -> list[str]:
        status = "ATTESTED" if self.attested else "UNATTESTED"
        if self.error:
            status = f"UNREADABLE ({self.error})"
        elif self.attested:
            status += " ✗" if self.chain_failed() else " ✓"
        versions = f" ({len(self.chain) + 1} {_noun(self)}s)" if self.chain else ""
        seen = f" [read as {self.observed_as}]" if self.observed_as else ""
        model = f" model={self.model}" if self.model else ""
        proof = f" inputs={self.inputs_proof_class}" if self.inputs_proof_class else ""
        pre = (f" — {PRE_ATTESTATION}: the version this table's chain of attestations starts from (not a failure "
               "of the walk)") if self.pre_attestation and not self.own_failure() else ""
        head = f"{indent}{self.ref}@{self.version_span}{versions}{seen}: {status}{model}{proof}{pre}"
        out = [head]
        if self.verdict and not self.passed and self.attested:
            out.append(f"{indent}    {'@' + str(self.version) + ': ' if self.chain else ''}{self.verdict}")
        for member in self.chain:
            if member.own_failure():
                out.append(f"{indent}    @{member.version}: {member.verdict}")
        for child in self.inputs:
            out.extend(child.lines(indent + "  "))
        if self.not_walked:
            out.append(f"{indent}  {cut_text(self.not_walked, self.depth_limit)}")
        return out

    def facts(self) -> WalkFacts:
        """What the whole walk found: what failed, what verified, the pre-attestation histories, where it was cut."""
        facts = WalkFacts(root_error=self.error)
        done: set[str] = set()
        counted: set[int] = set()
        stack = [self]
        expanded: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in expanded:
                continue
            expanded.add(id(node))
            for version in (node, *node.chain):
                # A version reached twice is counted once, but a failing reach is never hidden by a passing one.
                key = f"{version.ref}@{version.version}{'!' if version.own_failure() else ''}"
                opened = version.error is not None or bool(version.verdict)
                if key in done:
                    if version is node:
                        counted.add(id(node))  # a version reached twice is one node
                    continue
                done.add(key)
                if not opened:
                    facts.unchecked += 1
                elif version.own_failure():
                    facts.failures.append(version)
                elif version.pre_attestation:
                    facts.pre_attestation.append(version)
                else:
                    facts.versions += 1
            if not node.chain_failed() and node.verdict and not node.pre_attestation and id(node) not in counted:
                counted.add(id(node))
                facts.nodes += 1
            if node.not_walked:
                facts.not_walked += node.not_walked
                facts.depth_limit = node.depth_limit
            stack.extend(reversed(node.inputs))
        return facts

    def summary(self) -> str:
        """The walk's last line: why it passed or failed."""
        return self.facts().summary(self)

    def graph(self) -> LineageGraph:
        return LineageGraph.from_tree(self)

    def _repr_html_(self) -> str:
        from attest.render.html import lineage_html

        return lineage_html(self)


def one_line(text: str) -> str:
    """A name a table, a sidecar or a catalog chose, kept on one line: the summary is the walk's last line, and a
    line break in a name must not print a line after it."""
    return "".join(c if c.isprintable() else "\ufffd" for c in text)


def _noun(node: LineageNode) -> str:
    return "snapshot" if node.table_format == "iceberg" else "version"


def cut_text(count: int, depth: int | None) -> str:
    where = f" (--depth {depth})" if depth is not None else ""
    return f"… {count} input(s) not walked{where}"


@dataclass
class WalkFacts:
    """A walk, counted: table versions verified, the versions that failed, the pre-attestation histories, the
    inputs recorded without a location (not checked) and the inputs --depth kept the walk from."""

    root_error: str | None = None
    nodes: int = 0
    versions: int = 0
    unchecked: int = 0
    not_walked: int = 0
    depth_limit: int | None = None
    failures: list[LineageNode] = field(default_factory=list)
    pre_attestation: list[LineageNode] = field(default_factory=list)

    @staticmethod
    def reason(node: LineageNode) -> str:
        why = node.error or ("no attestation" if not node.attested else node.code or "")
        return one_line(f"{node.ref}@{node.version} {node.outcome}" + (f" ({why})" if why else ""))

    def summary(self, root: LineageNode) -> str:
        if self.root_error is not None:
            return one_line(f"lineage ERROR: {root.ref} could not be read ({self.root_error})")
        extra = []
        if self.pre_attestation:
            starts = ", ".join(one_line(f"{n.ref} starts at unattested {_noun(n)} {n.version}")
                               for n in self.pre_attestation)
            extra.append(f"{len(self.pre_attestation)} pre-attestation history ({starts}: what came before is not "
                         "attested)")
        if self.unchecked:
            extra.append(f"{self.unchecked} input(s) recorded without a table location or version, not checked")
        if self.not_walked:
            extra.append(f"walk cut at --depth {self.depth_limit}: {self.not_walked} input(s) not walked")
        tail = "".join(f"; {e}" for e in extra)
        if self.failures:
            shown = "; ".join(self.reason(n) for n in self.failures[:3])
            more = f"; and {len(self.failures) - 3} more" if len(self.failures) > 3 else ""
            return f"lineage FAILED: {shown}{more}{tail}"
        return f"lineage PASSED: {self.nodes} node(s) verified ({self.versions} table version(s)){tail}"

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes_verified": self.nodes, "versions_verified": self.versions, "unchecked": self.unchecked,
            "not_walked": self.not_walked, "cut": self.not_walked > 0, "depth_limit": self.depth_limit,
            "failures": [{"ref": n.ref, "version": n.version, "outcome": n.outcome, "code": n.error or n.code}
                         for n in self.failures],
            "pre_attestation": [{"ref": n.ref, "version": n.version, "outcome": n.outcome}
                                for n in self.pre_attestation],
        }


@dataclass(frozen=True)
class GraphNode:
    """A table version drawn once, however many runs read it (a chain of versions of one table: one box)."""

    key: str  # "<ref>@<version>" (a chain: its newest version)
    ref: str
    version: str | None
    outcome: str
    model: str | None = None
    table_format: str | None = None
    verdict: str = ""
    root: bool = False
    oldest_version: str | None = None  # a chain: its oldest version (``version`` is the newest)
    versions: int = 1  # how many versions of the table this box stands for, each checked
    pre_attestation: bool = False  # the unattested version a chain starts from (not a failure of the walk)
    marker: str | None = None  # a cut marker: not a table version, the inputs --depth kept the walk from
    failing: tuple[str, ...] = ()  # the versions of a chain that did not verify, with why

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
        if self.versions > 1:
            if noun == "snapshot":
                return f"snapshots {self.oldest_version}..{self.version} ({self.versions})"
            return f"v{self.oldest_version}..v{self.version} ({self.versions} versions)"
        return f"{noun} {self.version}" if noun == "snapshot" else f"v{self.version}"


@dataclass(frozen=True)
class GraphEdge:
    """``source`` (an upstream version) was read by the run that produced ``target``."""

    source: str
    target: str
    version: str | None
    observed_as: str | None
    note: str | None = None  # an edge from a cut marker: what it stands for instead of a version read

    @property
    def label(self) -> str:
        if self.note is not None:
            return self.note
        version = "version unknown" if self.version is None else f"read @{self.version}"
        return f"{version} · {self.observed_as}" if self.observed_as else version


@dataclass
class LineageGraph:
    """Nodes (the root first) and edges of a walk, each table version once (a chain of one table's versions is
    one node: a version of it reached elsewhere is drawn as that node), plus a marker where --depth cut."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)

    @classmethod
    def from_tree(cls, root: LineageNode) -> LineageGraph:
        graph = cls()
        seen: dict[str, GraphNode] = {}
        edges: dict[tuple[str, str], int] = {}  # (source, target): the edge's index

        def key(node: LineageNode) -> str:
            return f"{node.ref}@{node.version}"

        # Every version of a chain stands for its chain's node (the first chain that holds it).
        heads: dict[str, LineageNode] = {}
        walked: set[int] = set()
        pending = [root]
        while pending:
            node = pending.pop()
            if id(node) in walked:
                continue
            walked.add(id(node))
            for member in node.chain:
                heads.setdefault(key(member), node)
            pending.extend(node.inputs)

        def box(node: LineageNode, k: str, is_root: bool) -> GraphNode:
            failing = tuple(f"@{m.version}: {m.verdict}" for m in (node, *node.chain) if m.own_failure())
            return GraphNode(key=k, ref=node.ref, version=node.version, outcome=node.chain_outcome,
                             model=node.model, table_format=node.table_format, verdict=node.verdict,
                             root=is_root, oldest_version=node.oldest_version, versions=len(node.chain) + 1,
                             pre_attestation=node.pre_attestation and not node.own_failure(),
                             failing=failing if node.chain else ())

        stack: list[tuple[LineageNode, str | None]] = [(root, None)]
        expanded: set[int] = set()  # node objects, not versions: a hand-built cyclic tree still terminates
        while stack:
            node, downstream = stack.pop()
            k = key(node)
            drawn = node
            # A failing reach of a version whose chain passes is drawn on its own, never as the chain's passing box.
            if k in heads and heads[k] is not node and not (node.chain_failed() and not heads[k].chain_failed()):
                drawn = heads[k]
                k = key(drawn)
            if k not in seen:
                seen[k] = box(drawn, k, downstream is None)
                graph.nodes.append(seen[k])  # a version reached twice was checked twice, with one outcome
            elif (seen[k].pre_attestation and drawn.own_failure()) or (
                    drawn.chain_failed() and seen[k].outcome == "VERIFIED" and not seen[k].failing):
                # Reached once as a table's pre-attestation history (or as a verified version) and once failing (a
                # record naming another table there): drawn as failing.
                failing = replace(box(drawn, k, seen[k].root), pre_attestation=False)
                graph.nodes[graph.nodes.index(seen[k])] = failing
                seen[k] = failing
            if downstream is not None and k != downstream and (k, downstream) not in edges:
                edges[(k, downstream)] = len(graph.edges)
                graph.edges.append(GraphEdge(source=k, target=downstream, version=node.version,
                                             observed_as=node.observed_as))
            elif downstream is not None and k != downstream:
                # Two versions of one chain read by one run: one arrow naming both, as weak as the weaker read.
                at = edges[(k, downstream)]
                edge = graph.edges[at]
                read = (edge.version or "?").split(", @")
                if (node.version or "?") not in read:
                    weak = edge.observed_as if node.observed_as == "strong" else node.observed_as
                    graph.edges[at] = replace(edge, version=f"{edge.version}, @{node.version}", observed_as=weak)
            if id(node) not in expanded:
                expanded.add(id(node))
                if node.not_walked and f"{k} …" not in seen:
                    marker = GraphNode(key=f"{k} …", ref=node.ref, version=None, outcome="NOT WALKED",
                                       table_format=node.table_format,
                                       marker=cut_text(node.not_walked, node.depth_limit))
                    seen[marker.key] = marker
                    graph.nodes.append(marker)
                    edges[(marker.key, k)] = len(graph.edges)
                    graph.edges.append(GraphEdge(source=marker.key, target=k, version=None, observed_as=None,
                                                 note="not walked"))
                stack.extend((child, k) for child in reversed(node.inputs))
        return graph

    def node(self, key: str) -> GraphNode:
        return next(n for n in self.nodes if n.key == key)
