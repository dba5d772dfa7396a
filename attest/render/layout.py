"""A small layered layout for lineage graphs (no Graphviz, no browser): upstream on the left, the root on the right.

1. Rank: the root is 0; a version read by a run is one more than the version it produced (the longest path, so
   every edge points right). Relaxation stops after |V| rounds: a cycle that a hostile sidecar could describe
   cannot loop forever (such an edge is drawn as it falls).
2. An edge that spans several columns gets a waypoint in each column it crosses (Sugiyama's virtual nodes), so it
   runs between the boxes of those columns instead of through them.
3. Order within a column: first seen first, then a few barycenter sweeps (each node moves toward the mean row of
   its neighbours in the next column), which removes most crossings in graphs of this size.
4. Coordinates: columns as wide as their widest box, gaps wide enough for the widest edge label, columns centred
   vertically; edge ends are spread along a box's side so that edges leaving or entering one box do not overlap.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from attest.lineage import LineageGraph

CHAR_W, LINE_H, PAD_X, PAD_Y = 7.0, 16.0, 12.0, 8.0  # sizes at font-size 12 (a generous average glyph width)
ROW_GAP, MARGIN, WAYPOINT_H, END_SPREAD = 28.0, 20.0, 18.0, 22.0

Point = tuple[float, float]


@dataclass(frozen=True)
class Box:
    key: str
    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def mid_y(self) -> float:
        return self.y + self.h / 2


@dataclass(frozen=True)
class Route:
    """An edge's course: ``start`` (the source's right side), a (left, right) pair of points for every column it
    crosses, and ``end`` (the target's left side)."""

    start: Point
    crossings: tuple[tuple[Point, Point], ...]
    end: Point


@dataclass(frozen=True)
class Layout:
    boxes: dict[str, Box]
    routes: dict[tuple[str, str], Route]
    width: float
    height: float


def text_width(text: str) -> float:
    return len(text) * CHAR_W


def ranks(graph: LineageGraph) -> dict[str, int]:
    rank = {n.key: 0 for n in graph.nodes}
    for _ in range(len(graph.nodes)):
        changed = False
        for edge in graph.edges:
            if rank[edge.source] < rank[edge.target] + 1:
                rank[edge.source] = rank[edge.target] + 1
                changed = True
        if not changed:
            break
    return rank


def _order(columns: list[list[str]], links: list[tuple[str, str]]) -> None:
    neighbours: dict[str, list[str]] = {k: [] for col in columns for k in col}
    for a, b in links:
        neighbours[a].append(b)
        neighbours[b].append(a)
    for sweep in range(6):
        forward = sweep % 2 == 0
        for c in range(len(columns)) if forward else range(len(columns) - 1, -1, -1):
            adjacent = c - 1 if forward else c + 1
            if not 0 <= adjacent < len(columns):
                continue
            position = {k: i for i, k in enumerate(columns[adjacent])}
            current = {k: i for i, k in enumerate(columns[c])}

            def centre(key: str, position: dict[str, int] = position, current: dict[str, int] = current) -> float:
                near = [position[n] for n in neighbours[key] if n in position]
                return sum(near) / len(near) if near else float(current[key])

            columns[c].sort(key=lambda k: (centre(k), current[k]))


def layered(graph: LineageGraph, lines: Callable[[str], list[str]], labels: list[str]) -> Layout:
    """Boxes and edge routes for ``graph``; ``lines(key)`` gives a node's text lines, ``labels`` every edge label."""
    rank = ranks(graph)
    depth = max(rank.values(), default=0)
    columns: list[list[str]] = [[] for _ in range(depth + 1)]
    for node in graph.nodes:  # first seen first: the walk's order
        columns[depth - rank[node.key]].append(node.key)
    size: dict[str, tuple[float, float]] = {}
    for node in graph.nodes:
        text = lines(node.key)
        size[node.key] = (max((text_width(t) for t in text), default=40.0) + 2 * PAD_X,
                          len(text) * LINE_H + 2 * PAD_Y)
    # Waypoints ("~<edge>.<rank>") for edges that skip columns; links are the segments between neighbours.
    chains: dict[tuple[str, str], list[str]] = {}
    links: list[tuple[str, str]] = []
    for i, edge in enumerate(graph.edges):
        chain = [f"~{i}.{r}" for r in range(rank[edge.source] - 1, rank[edge.target], -1)]
        for r, waypoint in zip(range(rank[edge.source] - 1, rank[edge.target], -1), chain, strict=True):
            columns[depth - r].append(waypoint)
            size[waypoint] = (0.0, WAYPOINT_H)
        chains[(edge.source, edge.target)] = chain
        path = [edge.source, *chain, edge.target]
        links.extend(itertools.pairwise(path))
    _order(columns, links)
    gap = max((text_width(label) * 0.85 for label in labels), default=40.0) + 56.0
    heights = [sum(size[k][1] for k in col) + ROW_GAP * max(len(col) - 1, 0) for col in columns]
    total_h = max(heights, default=0.0)
    boxes: dict[str, Box] = {}
    spans: dict[str, tuple[float, float]] = {}  # waypoint -> the column's (left, right)
    x = MARGIN
    for col, col_h in zip(columns, heights, strict=True):
        col_w = max((size[k][0] for k in col), default=0.0)
        y = MARGIN + (total_h - col_h) / 2
        for key in col:
            w, h = size[key]
            boxes[key] = Box(key, x + (col_w - w) / 2, y, w, h)
            spans[key] = (x, x + col_w)
            y += h + ROW_GAP
        x += col_w + gap
    routes = _routes(graph, boxes, chains, spans)
    real = {k: b for k, b in boxes.items() if not k.startswith("~")}
    width = x - gap + MARGIN
    return Layout(boxes=real, routes=routes, width=max(width, 2 * MARGIN), height=total_h + 2 * MARGIN)


def _routes(graph: LineageGraph, boxes: dict[str, Box], chains: dict[tuple[str, str], list[str]],
            spans: dict[str, tuple[float, float]]) -> dict[tuple[str, str], Route]:
    # Edge ends spread along a box's side, ordered by where the edge goes next (fewer crossings at the box).
    def next_y(edge: tuple[str, str], leaving: bool) -> float:
        chain = chains[edge]
        hop = (chain[0] if chain else edge[1]) if leaving else (chain[-1] if chain else edge[0])
        return boxes[hop].mid_y

    offset: dict[tuple[tuple[str, str], bool], float] = {}
    for leaving in (True, False):
        groups: dict[str, list[tuple[str, str]]] = {}
        for e in graph.edges:
            pair = (e.source, e.target)
            groups.setdefault(e.source if leaving else e.target, []).append(pair)
        for key, group in groups.items():
            group.sort(key=lambda p: next_y(p, leaving))
            span = min(boxes[key].h - 2 * PAD_Y, END_SPREAD * (len(group) - 1))
            for i, pair in enumerate(group):
                offset[(pair, leaving)] = -span / 2 + span * i / (len(group) - 1) if len(group) > 1 else 0.0
    routes: dict[tuple[str, str], Route] = {}
    for pair, chain in chains.items():
        src, dst = boxes[pair[0]], boxes[pair[1]]
        crossings = tuple(((spans[w][0], boxes[w].mid_y), (spans[w][1], boxes[w].mid_y)) for w in chain)
        routes[pair] = Route(start=(src.right, src.mid_y + offset[(pair, True)]), crossings=crossings,
                             end=(dst.x, dst.mid_y + offset[(pair, False)]))
    return routes
