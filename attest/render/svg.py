"""A lineage walk as a standalone SVG picture (``attest lineage --format svg``), drawn without a server or a browser.

Boxes are table versions coloured by outcome (the root has a heavier border); arrows go from the version a run
read to the version it produced: solid when it was read strongly (by content identity), dashed when only
heuristically; each is labelled with the version read. Hovering a box shows the full reference and its verdict.
A legend names the colours and line styles the picture uses.
"""

from __future__ import annotations

from xml.sax.saxutils import escape as _escape

from attest.lineage import OUTCOMES, LineageGraph
from attest.render.layout import LINE_H, MARGIN, PAD_Y, Point, Route, layered, text_width
from attest.render.palette import MEANING, colour
from attest.render.text import node_lines, node_tooltip, printable

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
EDGE_STRONG, EDGE_HEURISTIC = "#37474f", "#78909c"
LEGEND_ROW, LABEL_H = 20.0, 17.0


def esc(text: str) -> str:
    """Text or an attribute value in XML: &, <, > and both quotes escaped; control characters replaced."""
    return _escape(printable(text), {'"': "&quot;", "'": "&#39;"})


def _course(route: Route) -> tuple[str, Point]:
    """The SVG path of a route (smooth curves between columns, straight through crossed columns) and where its
    label goes: the middle of its first curve, in the gap right of its source."""
    path = [f"M{route.start[0]:.1f},{route.start[1]:.1f}"]
    here = route.start
    label: Point | None = None
    for left, right in (*route.crossings, (route.end, route.end)):
        dx = max(abs(left[0] - here[0]) / 2, 24.0)
        path.append(f"C{here[0] + dx:.1f},{here[1]:.1f} {left[0] - dx:.1f},{left[1]:.1f} {left[0]:.1f},{left[1]:.1f}")
        if label is None:  # a cubic with horizontal tangents passes its middle at the mean of its ends
            label = ((here[0] + left[0]) / 2, (here[1] + left[1]) / 2)
        if right is not left:
            path.append(f"L{right[0]:.1f},{right[1]:.1f}")
        here = right
    assert label is not None
    return " ".join(path), label


def _unclash(labels: list[tuple[float, float, float]]) -> list[tuple[float, float]]:
    """Label centres (x, y, width) nudged down until no two label boxes overlap."""
    placed: list[tuple[float, float, float]] = []
    for x, y, w in labels:
        for px, py, pw in sorted(placed, key=lambda p: p[1]):
            if abs(px - x) < (pw + w) / 2 and abs(py - y) < LABEL_H:
                y = py + LABEL_H
        placed.append((x, y, w))
    return [(x, y) for x, y, _ in placed]


def to_svg(graph: LineageGraph, *, title: str | None = None, caption: str | None = None) -> str:
    """The picture; ``caption``: a line written under the legend (the command line gives the walk's summary)."""
    lines = {n.key: node_lines(n) for n in graph.nodes}
    layout = layered(graph, lambda k: lines[k], [e.label for e in graph.edges])
    present = {n.outcome for n in graph.nodes}
    outcomes = [o for o in OUTCOMES if o in present] + sorted(present - set(OUTCOMES))
    styles = sorted({e.observed_as == "strong" for e in graph.edges if e.note is None}, reverse=True)
    legend_h = LEGEND_ROW * (len(outcomes) + len(styles) + (1 if caption else 0)) + 16.0
    width = max(layout.width, 420.0, MARGIN * 2 + text_width(caption) * 0.9 if caption else 0.0)
    height = layout.height + legend_h
    root = next((n for n in graph.nodes if n.root), None)
    name = title or (f"Lineage of {root.ref} @ {root.version}" if root else "Lineage")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(name)}" '
           f'font-family="{FONT}" font-size="12" data-attest="lineage">',
           f"<title>{esc(name)}</title>",
           '<rect width="100%" height="100%" fill="#ffffff"/>',
           "<defs>"]
    for ident, fill in (("arrow-strong", EDGE_STRONG), ("arrow-heuristic", EDGE_HEURISTIC)):
        out.append(f'<marker id="{ident}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
                   f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{fill}"/></marker>')
    out.append("</defs>")
    courses = [_course(layout.routes[(e.source, e.target)]) for e in graph.edges]
    widths = [text_width(e.label) * 0.85 + 10 for e in graph.edges]
    spots = _unclash([(at[0], at[1], w) for (_, at), w in zip(courses, widths, strict=True)])
    labels: list[str] = []
    for edge, (path, _), w, (lx, ly) in zip(graph.edges, courses, widths, spots, strict=True):
        strong = edge.observed_as == "strong"
        stroke = EDGE_STRONG if strong else EDGE_HEURISTIC
        dash = "" if strong else ' stroke-dasharray="6 4"' if edge.note is None else ' stroke-dasharray="2 3"'
        marker = "arrow-strong" if strong else "arrow-heuristic"
        out.append(f'<path d="{path}" fill="none" stroke="{stroke}" stroke-width="1.6"{dash} '
                   f'marker-end="url(#{marker})"><title>{esc(edge.label)}</title></path>')
        labels.append(f'<rect x="{lx - w / 2:.1f}" y="{ly - 9:.1f}" width="{w:.1f}" height="16" rx="3" '
                      'fill="#ffffff" fill-opacity="0.9"/>'
                      f'<text x="{lx:.1f}" y="{ly + 3:.1f}" font-size="10" text-anchor="middle" '
                      f'fill="{stroke}">{esc(edge.label)}</text>')
    out.extend(labels)  # labels above every edge
    for node in graph.nodes:
        box = layout.boxes[node.key]
        c = colour(node.outcome)
        border = 2.8 if node.root else 1.4
        dash = ' stroke-dasharray="4 3"' if node.outcome in ("UNCHECKED", "NOT WALKED") else ""
        out.append(f'<g data-outcome="{esc(node.outcome)}"><title>{esc(node_tooltip(node))}</title>'
                   f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="7" '
                   f'fill="{c.fill}" stroke="{c.stroke}" stroke-width="{border}"{dash}/>')
        for i, line in enumerate(lines[node.key]):
            y = box.y + PAD_Y + LINE_H * (i + 0.75)
            weight = ' font-weight="bold"' if i == 0 else ""
            fill = c.stroke if i == len(lines[node.key]) - 1 else c.text
            size = ' font-size="10.5"' if i == len(lines[node.key]) - 1 else ""
            out.append(f'<text x="{box.x + box.w / 2:.1f}" y="{y:.1f}" text-anchor="middle" fill="{fill}"'
                       f"{weight}{size}>{esc(line)}</text>")
        out.append("</g>")
    out.extend(_legend(outcomes, styles, layout.height))
    if caption:
        y = layout.height + LEGEND_ROW * (len(outcomes) + len(styles)) + 12.0
        fill = colour("VERIFIED" if " PASSED" in caption[:16] else "NOT VERIFIED").stroke
        out.append(f'<text data-summary="1" x="{MARGIN:.0f}" y="{y:.0f}" font-size="11" font-weight="bold" '
                   f'fill="{fill}">{esc(caption)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _legend(outcomes: list[str], styles: list[bool], top: float) -> list[str]:
    out = [f'<g data-legend="1" font-size="10.5" transform="translate({MARGIN:.0f},{top:.0f})">']
    y = 0.0
    for outcome in outcomes:
        c = colour(outcome)
        out.append(f'<rect x="0" y="{y:.0f}" width="22" height="13" rx="3" fill="{c.fill}" stroke="{c.stroke}"/>'
                   f'<text x="30" y="{y + 10.5:.0f}" fill="#37474f">{esc(outcome)}: {esc(MEANING.get(outcome, ""))}'
                   "</text>")
        y += LEGEND_ROW
    for strong in styles:
        stroke = EDGE_STRONG if strong else EDGE_HEURISTIC
        dash = "" if strong else ' stroke-dasharray="6 4"'
        what = ("read strongly: by content identity (the version read was attested)" if strong else
                "read heuristically: by version / snapshot id only")
        out.append(f'<line x1="0" y1="{y + 6:.0f}" x2="22" y2="{y + 6:.0f}" stroke="{stroke}" stroke-width="1.6"'
                   f'{dash}/><text x="30" y="{y + 10.5:.0f}" fill="#37474f">{what}</text>')
        y += LEGEND_ROW
    out.append("</g>")
    return out

