"""A lineage walk as Graphviz DOT (``attest lineage --format dot``): render it with any Graphviz you have."""

from __future__ import annotations

from attest.lineage import LineageGraph
from attest.render.palette import colour
from attest.render.text import node_lines, node_tooltip, printable


def quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped (so no escString such as \\N or \\G survives),
    newlines as \\n."""
    body = printable(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


def to_dot(graph: LineageGraph, *, caption: str | None = None) -> str:
    """The graph; ``caption``: the graph's label, under it (the command line gives the walk's summary)."""
    ids = {n.key: f"n{i}" for i, n in enumerate(graph.nodes)}
    out = ["digraph lineage {", "  rankdir=LR;",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
           '  edge [fontname="Helvetica", fontsize=9];']
    if caption:
        out.append(f"  labelloc=b; label={quote(caption)};")
    for node in graph.nodes:
        c = colour(node.outcome)
        width = ", penwidth=2.5" if node.root else ""
        out.append(f"  {ids[node.key]} [label={quote(chr(10).join(node_lines(node)))}, fillcolor={quote(c.fill)}, "
                   f"color={quote(c.stroke)}, tooltip={quote(node_tooltip(node))}{width}];")
    for edge in graph.edges:
        style = "solid" if edge.observed_as == "strong" else "dashed"
        style = "dotted" if edge.note is not None else style
        out.append(f"  {ids[edge.source]} -> {ids[edge.target]} [label={quote(edge.label)}, style={style}];")
    out.append("}")
    return "\n".join(out)
