"""Draw docs/architecture.md's picture from the code: module-level import edges between the packages, read with ``ast``.

    python docs/tools/architecture_graph.py           # rewrite the generated blocks of docs/architecture.md
    python docs/tools/architecture_graph.py --check   # exit 1 if they are not what the code says (make lint)

tests/test_architecture.py checks the same.

Every module of ``attest`` and ``carriers`` is read (nothing is imported or run). Each import statement is one edge
from the module it is written in to the module it names (``from pkg import sub`` names ``pkg.sub`` when that is a
module), of one of three kinds:

- ``eager``: runs when the module is imported (module level, also inside ``try``/``if`` there);
- ``lazy``: inside a function or method, so it runs only when that code is called;
- ``typing``: under ``if TYPE_CHECKING:``, never run.

Modules are grouped into the parts of docs/architecture.md (``PARTS`` below: every module must belong to exactly one,
so a new module makes this script fail until it is placed). The picture is a Mermaid flowchart of the parts: a solid
arrow where some import between two parts is eager, a dotted arrow where all of them are lazy or for typing only.
Third-party engines and stores (deltalake, pyiceberg, pyspark, pyarrow, obstore) are drawn as nodes of their own.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("attest", "carriers")
DOC = ROOT / "docs" / "architecture.md"

# The layers, top to bottom: (layer id, title, [(part id, label, module prefixes)]). A module belongs to the part
# with the longest matching prefix; a prefix matches the module itself and everything under it (a package's own name,
# ``attest`` or ``carriers``, matches its __init__ only).
LAYERS: list[tuple[str, str, list[tuple[str, str, tuple[str, ...]]]]] = [
    ("users", "entry points (users: CLI, Python, Spark jobs)", [
        ("cli", "attest.cli", ("attest.cli",)),
        ("fast_startup", "attest.fast.startup (head start, quick exit)", ("attest.fast.startup",)),
        ("attest_spark", "attest.spark", ("attest.spark",)),
        ("attest_read", "attest.read", ("attest.read",)),
        ("attest_api", "attest.api", ("attest.api",)),
    ]),
    ("carriers_layer", "carriers/ (engine-aware)", [
        ("spark", "carriers.spark", ("carriers.spark",)),
        ("many", "lineage · openlineage · audit_table · discovery · read",
         ("carriers.lineage", "carriers.openlineage", "carriers.audit_table", "carriers.discovery", "carriers.read")),
        ("refs", "refs", ("carriers.refs",)),
        ("publish", "publish (carriers.iceberg.publish, as earlier releases named it)", ("carriers.publish",)),
        ("delta", "delta/ · carrier · carriage · commit · view · rows · columns · content · spellings · guard · log · "
                  "checkpoint · lines · write · write_commit · stream_commit · prefetch", ("carriers.delta",)),
        ("iceberg", "iceberg/ · carrier · carriage · commit · manifests · views · summaries · catalogs · "
                    "catalog_options · content · deletes · kept · json_keep · sql_keep · hive_keep · rewrites · "
                    "static · write · write_commit · stream_commit · publish",
         ("carriers.iceberg",)),
        ("standalone", "standalone", ("carriers.standalone",)),
        ("carrier_core", "core · content_store · base · sidecar · properties",
         ("carriers", "carriers.core", "carriers.content_store", "carriers.base", "carriers.sidecar",
          "carriers.properties")),
        ("storage", "storage/ · options · errors · base · delta · fileio · hashing · objects · listing · atomic · "
                    "retry",
         ("carriers.storage", "carriers.atomic", "carriers.retry")),
    ]),
    ("core", "attest/ engine-free core", [
        ("verify", "verify", ("attest.verify",)),
        ("openlineage_core", "openlineage", ("attest.openlineage",)),
        ("render", "render", ("attest.render",)),
        ("signing", "signing", ("attest.signing",)),
        ("reports", "tables · view · lineage", ("attest.tables", "attest.view", "attest.lineage")),
        ("model", "model · build · schema", ("attest.model", "attest.build", "attest.schema")),
        ("identity", "identity", ("attest.identity",)),
        ("content", "content", ("attest.content",)),
        ("canonical", "canonical · numbers", ("attest.canonical", "attest.numbers")),
        ("hashing", "hashing", ("attest.hashing",)),
        ("base", "errors · record · redact · locations · _callable · _signature",
         ("attest", "attest.errors", "attest.record", "attest.redact", "attest.locations", "attest._callable",
          "attest._signature")),
        ("fast", "fast (the start-up switch · record · jsonscan)", ("attest.fast",)),
    ]),
]
# Third-party packages drawn as nodes: the engines and what reaches bytes for them.
ENGINES: dict[str, str] = {
    "pyspark": "pyspark", "delta": "pyspark",  # delta-spark's Python package is ``delta``
    "deltalake": "deltalake", "pyiceberg": "pyiceberg", "pyarrow": "pyarrow", "obstore": "obstore",
}

BEGIN = "<!-- BEGIN {name}: generated by docs/tools/architecture_graph.py, do not edit by hand -->"
END = "<!-- END {name} -->"


@dataclass(frozen=True, order=True)
class Edge:
    """``source`` imports ``target`` (a module of ours, or a third-party top-level package), as ``kind``."""

    source: str
    target: str
    kind: str  # "eager" | "lazy" | "typing"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the packages: dotted name -> file."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Each import statement with its kind (see the module docstring)."""

    def visit(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, kind
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from visit(child, "lazy" if kind == "eager" else kind)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from visit(ast.Module(body=[stmt], type_ignores=[]), "typing")
                for stmt in child.orelse:
                    yield from visit(ast.Module(body=[stmt], type_ignores=[]), kind)
            else:
                yield from visit(child, kind)

    yield from visit(tree, "eager")


def edges(root: Path = ROOT) -> list[Edge]:
    """Every import edge of the packages, to our modules and to the third-party packages in ``ENGINES``."""
    known = modules(root)
    found: set[Edge] = set()
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for stmt, kind in _imports(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(stmt, ast.Import):
                targets = [alias.name for alias in stmt.names]
            else:
                base = stmt.module or ""
                if stmt.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - (stmt.level - 1)]
                    base = ".".join([*here, base] if base else here)
                for alias in stmt.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in known else base)
            for target in targets:
                # the longest prefix that is one of our modules, else the third-party top-level package
                parts = target.split(".")
                ours = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in known),
                            None)
                if ours is not None:
                    if ours != name:
                        found.add(Edge(name, ours, kind))
                elif parts[0] in ENGINES:
                    found.add(Edge(name, parts[0], kind))
    return sorted(found)


def part_of(module: str) -> str:
    """The part a module belongs to (``LAYERS``); ValueError if none: place a new module before drawing."""
    best: tuple[int, str] | None = None
    for _, _, parts in LAYERS:
        for part, _, prefixes in parts:
            for prefix in prefixes:
                # a package's own name (``attest``) places its __init__ only, never a new module under it
                under = module.startswith(prefix + ".") and prefix not in PACKAGES
                if (module == prefix or under) and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), part)
    if best is None:
        raise ValueError(f"{module} belongs to no part of docs/tools/architecture_graph.py's LAYERS: place it")
    return best[1]


def _strength(kinds: Iterable[str]) -> str:
    return "eager" if "eager" in kinds else "lazy"


def part_graph(all_edges: list[Edge]) -> dict[tuple[str, str], str]:
    """(source part, target part or ``ext_<engine>``) -> "eager" if any import between them is eager, else "lazy"."""
    between: dict[tuple[str, str], set[str]] = {}
    for edge in all_edges:
        source = part_of(edge.source)
        target = f"ext_{ENGINES[edge.target]}" if edge.target in ENGINES else part_of(edge.target)
        if source != target:
            between.setdefault((source, target), set()).add(edge.kind)
    return {pair: _strength(kinds) for pair, kinds in between.items()}


def _reaches(graph: dict[tuple[str, str], str], start: str, goal: str, skip: tuple[str, str], eager: bool) -> bool:
    """Whether ``start`` reaches ``goal`` by a way other than the arrow ``skip``, through other parts: its first step of
    any kind (eager only if ``eager``), every later step eager, i.e. taking that first step imports ``goal``."""
    seen, todo = {start}, [(start, True)]
    while todo:
        node, first = todo.pop()
        for (a, b), kind in graph.items():
            if a != node or (a, b) == skip or ((eager or not first) and kind != "eager") or b in seen:
                continue
            if b == goal:
                return True
            seen.add(b)
            todo.append((b, False))
    return False


def reduced(graph: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """The arrows worth drawing: A -> B is left out when A imports some other part that, when it is imported, imports
    B (eagerly, through other parts); an eager A -> B only when A imports that part eagerly too. So what importing A,
    or calling into A, brings in, and how early, reads off the picture as it would off every arrow."""
    return {pair: kind for pair, kind in graph.items()
            if not _reaches(graph, pair[0], pair[1], pair, eager=kind == "eager")}


def circles(graph: dict[tuple[str, str], str]) -> list[list[str]]:
    """The parts that import each other in a loop (strongly connected components of more than one part)."""
    nodes = sorted({n for pair in graph for n in pair})
    reach = {n: {n} for n in nodes}
    for n in nodes:
        todo = [n]
        while todo:
            x = todo.pop()
            for (a, b) in graph:
                if a == x and b not in reach[n]:
                    reach[n].add(b)
                    todo.append(b)
    found: list[list[str]] = []
    for n in nodes:
        group = sorted(m for m in nodes if m in reach[n] and n in reach[m])
        if len(group) > 1 and group not in found:
            found.append(group)
    return found


def mermaid(all_edges: list[Edge]) -> str:
    """The Mermaid flowchart of the parts (see the module docstring)."""
    drawn = reduced(part_graph(all_edges))
    lines = ["```mermaid", "flowchart TB"]
    engines_used = sorted({t for (_, t) in drawn if t.startswith("ext_")})
    lines.append('  subgraph engines["engines and stores (third-party)"]')
    lines += [f'    {e}(["{e.removeprefix("ext_")}"])' for e in engines_used]
    lines.append("  end")
    for layer, title, parts in LAYERS:
        lines.append(f'  subgraph {layer}["{title}"]')
        lines += [f'    {part}["{label}"]' for part, label, _ in parts]
        lines.append("  end")
    for (source, target), kind in sorted(drawn.items()):
        lines.append(f"  {source} {'-->' if kind == 'eager' else '-.->'} {target}")
    lines.append("```")
    return "\n".join(lines)


def circle_list(all_edges: list[Edge]) -> str:
    """The circles between parts, each with the module imports that close it."""
    graph = part_graph(all_edges)
    out: list[str] = []
    for group in circles(graph):
        ties = sorted({f"`{e.source}` → `{e.target}` ({e.kind})" for e in all_edges
                       if e.target not in ENGINES and part_of(e.source) in group and part_of(e.target) in group
                       and part_of(e.source) != part_of(e.target)})
        out.append(f"- {' · '.join(group)}:")
        out += [f"    - {tie}" for tie in ties]
    return "\n".join(out) if out else "- none"


def cross_table(all_edges: list[Edge]) -> str:
    """The imports from ``attest`` into ``carriers`` and from ``attest`` into the engines: the documented exceptions."""
    rows = [e for e in all_edges if e.source.startswith("attest") and (
        e.target.startswith("carriers") or e.target in ENGINES)]
    by_pair: dict[tuple[str, str], set[str]] = {}
    for e in rows:
        by_pair.setdefault((e.source, e.target), set()).add(e.kind)
    out = ["| module of `attest` | imports | how |", "| --- | --- | --- |"]
    for (source, target), kinds in sorted(by_pair.items()):
        out.append(f"| `{source}` | `{target}` | {', '.join(sorted(kinds))} |")
    return "\n".join(out)


def blocks(root: Path = ROOT) -> dict[str, str]:
    """The generated blocks of docs/architecture.md, by name."""
    for name in modules(root):
        part_of(name)  # every module has a place, with imports or without
    all_edges = edges(root)
    return {"picture": mermaid(all_edges), "circles": circle_list(all_edges), "exceptions": cross_table(all_edges)}


def _fill(body: str, match: re.Match[str]) -> str:
    return match.group(1) + body + "\n" + match.group(2)


def render(text: str, generated: dict[str, str]) -> str:
    """``text`` with each generated block replaced by its current content."""
    for name, body in generated.items():
        begin, end = re.escape(BEGIN.format(name=name)), re.escape(END.format(name=name))
        pattern = re.compile(f"({begin}\n)(?:.*?\n)?({end})", re.S)
        if not pattern.search(text):
            raise ValueError(f"docs/architecture.md has no {name} block: {BEGIN.format(name=name)} ... "
                             f"{END.format(name=name)}")
        text = pattern.sub(functools.partial(_fill, body), text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/architecture.md is not current")
    args = parser.parse_args(argv)
    current = DOC.read_text()
    try:
        wanted = render(current, blocks())
    except ValueError as exc:  # a module no part holds, or a block missing from the page
        print(f"architecture_graph: {exc}", file=sys.stderr)
        return 1
    if args.check:
        if wanted != current:
            print("docs/architecture.md is stale: run python docs/tools/architecture_graph.py", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        DOC.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
