"""`attest lineage --format svg|dot|mermaid|json`: a picture of the walk — table versions coloured by verdict, edges
labelled with the version read and strong/heuristic — drawn without a server or a browser; notebook HTML views."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from attest.lineage import LineageGraph, LineageNode
from attest.render.dot import to_dot
from attest.render.layout import layered
from attest.render.mermaid import to_mermaid
from attest.render.svg import to_svg
from attest.render.text import node_lines, node_tooltip
from attest.verify.audit import AuditReport
from carriers.delta.carrier import DeltaCarrier
from carriers.lineage import walk
from tests.conftest import run_cli
from tests.test_lineage import _pipeline

SVG = "{http://www.w3.org/2000/svg}"


def _boxes(svg: str) -> dict[str, str]:
    """{first text line of a box: its outcome} from a rendered picture (parsed as XML: it must be well formed)."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    out = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("data-outcome"):
            texts = [t.text or "" for t in group.iter(f"{SVG}text")]
            out[texts[0]] = group.get("data-outcome", "")
    return out


def test_svg_draws_the_walk(tmp_path: Path) -> None:
    _, _, silver = _pipeline(tmp_path)
    proc = run_cli("lineage", str(silver), "--format", "svg")
    assert proc.returncode == 1  # raw is unattested: the chain is not whole, whatever the format
    assert _boxes(proc.stdout) == {"silver": "VERIFIED", "bronze": "VERIFIED", "raw": "UNATTESTED"}
    root = ET.fromstring(proc.stdout)
    paths = [p for p in root.iter(f"{SVG}path") if p.get("marker-end")]
    assert len(paths) == 2
    assert sorted(bool(p.get("stroke-dasharray")) for p in paths) == [False, True]  # strong solid, heuristic dashed
    labels = {t.text for t in root.iter(f"{SVG}text")}
    assert {"read @0 · strong", "read @0 · heuristic"} <= labels
    assert any((t.text or "").startswith("UNATTESTED: ") for t in root.iter(f"{SVG}text"))  # the legend


def test_dot_mermaid_and_json(tmp_path: Path) -> None:
    _, _, silver = _pipeline(tmp_path)
    dot = run_cli("lineage", str(silver), "--format", "dot").stdout
    assert dot.startswith("digraph lineage {") and dot.count(" -> ") == 2 and "style=dashed" in dot
    assert re.search(r'label="silver\\nv1\\nmodel silver\\nVERIFIED", fillcolor="#dcf3e1"', dot)
    mermaid = run_cli("lineage", str(silver), "--format", "mermaid").stdout
    assert mermaid.startswith("flowchart LR") and mermaid.count("-->") == 1 and mermaid.count("-.->") == 1
    as_format = json.loads(run_cli("lineage", str(silver), "--format", "json").stdout)
    as_flag = json.loads(run_cli("lineage", str(silver), "--json").stdout)
    assert as_format == as_flag and as_format["outcome"] == "VERIFIED" and as_format["passed"] is False


def test_format_errors_follow_the_contract(tmp_path: Path) -> None:
    missing = run_cli("lineage", str(tmp_path / "nope"), "--format", "json")
    assert missing.returncode == 2 and json.loads(missing.stdout)["errors"][0]["code"] == "table_not_found"
    both = run_cli("lineage", str(tmp_path), "--json", "--format", "svg")
    assert both.returncode == 2 and json.loads(both.stdout)["errors"][0]["code"] == "invalid_argument"
    picture = run_cli("lineage", str(tmp_path / "nope"), "--format", "svg")
    assert picture.returncode == 2 and _boxes(picture.stdout) == {"nope": "ERROR"}


def _node(name: str, outcome: str, version: str = "0", observed: str | None = "strong",
          inputs: list[LineageNode] | None = None) -> LineageNode:
    return LineageNode(ref=f"/lake/{name}", version=version, outcome=outcome, observed_as=observed,
                       model=name, table_format="delta", inputs=inputs or [])


def test_a_diamond_is_drawn_once_per_version_left_to_right() -> None:
    bronze = _node("bronze", "VERIFIED")
    gold = _node("gold", "STALE", observed=None, inputs=[
        _node("silver", "VERIFIED", inputs=[bronze]), _node("bronze", "VERIFIED", observed="heuristic")])
    graph = gold.graph()
    assert [n.short_name for n in graph.nodes] == ["gold", "silver", "bronze"]
    assert len(graph.edges) == 3
    layout = layered(graph, lambda k: node_lines(graph.node(k)), [e.label for e in graph.edges])
    box = {graph.node(k).short_name: b for k, b in layout.boxes.items()}
    assert box["bronze"].right < box["silver"].x and box["silver"].right < box["gold"].x
    # bronze -> gold skips silver's column: it runs beside silver's box, never through it.
    route = layout.routes[("/lake/bronze@0", "/lake/gold@0")]
    (left, right), = route.crossings
    silver = box["silver"]
    assert left[0] <= silver.x and right[0] >= silver.right
    assert not silver.y <= left[1] <= silver.y + silver.h


def test_a_cycle_from_a_hostile_sidecar_still_terminates() -> None:
    a = _node("a", "VERIFIED")
    b = _node("b", "VERIFIED", inputs=[a])
    a.inputs.append(b)  # a read b, b read a: the same two versions forever
    graph = LineageGraph.from_tree(_node("root", "VERIFIED", observed=None, inputs=[a]))
    assert len(graph.nodes) == 3 and len(graph.edges) == 3
    assert set(_boxes(to_svg(graph)).values()) == {"VERIFIED"}


def test_untrusted_names_cannot_break_out_of_any_format() -> None:
    evil = '</text><script>alert(1)</script>"]; x -> y; style n0 fill:red %%{init}%% \x1b[31m\n'
    root = LineageNode(ref="/lake/t", version="0", outcome="VERIFIED", model=evil, inputs=[
        LineageNode(ref=evil, version=evil, outcome="UNATTESTED", observed_as="heuristic")])
    graph = root.graph()
    svg = to_svg(graph)
    ET.fromstring(svg)  # well formed: nothing closed early
    assert "<script" not in svg and "\x1b" not in svg
    dot = to_dot(graph)
    for line in dot.splitlines()[4:-1]:  # each statement's quoted strings stay closed: an even count of bare quotes
        assert (line.count('"') - line.count('\\"')) % 2 == 0, line
    assert len(re.findall(r"^  n\d+ -> n\d+ \[", dot, re.M)) == 1 and len(dot.splitlines()) == 8
    mermaid = to_mermaid(graph)
    assert len(mermaid.splitlines()) == 6  # flowchart, 2 nodes, 1 edge, 2 styles: the newline did not split one
    for line in mermaid.splitlines()[1:4]:
        inner = re.sub(r"#\d+;|<br/>", "", line.split('"', 1)[1].rsplit('"', 1)[0])
        assert not set(inner) & set('"[]<>{}%;|'), line
    html = root._repr_html_()
    assert "<script" not in html and "alert(1)</script>" not in html


def test_notebook_views(tmp_path: Path) -> None:
    _, _, silver = _pipeline(tmp_path)
    tree = walk(str(silver))
    html = tree._repr_html_()
    assert '<svg' in html and 'data-attest="lineage"' in html and "the chain of evidence is not whole" in html
    att = DeltaCarrier(str(silver)).read()
    assert att is not None
    view = att._repr_html_()
    assert 'data-attest="attestation"' in view and "silver" in view and "heuristic" in view
    from attest.verify.table import verify_table

    report = verify_table(DeltaCarrier(str(silver)))
    assert 'data-attest="report"' in report._repr_html_() and "VERIFIED" in report._repr_html_()
    audit = AuditReport()
    audit.add_report(str(silver), report)
    shown = audit._repr_html_()
    assert shown.count("<tr") == 2 and "#dcf3e1" in shown  # header + one row shaded VERIFIED
    write_deltalake(str(tmp_path / "w"), pa.table({"a": [1]}))
    result = DeltaCarrier(str(tmp_path / "w")).record(model="w", program_hash="0" * 64)
    assert 'data-attest="record"' in result._repr_html_()


# ---- a table's own version chain, its pre-attestation history and the depth cut, in every format -----------------
def _version(version: str, outcome: str = "VERIFIED", **extra: object) -> LineageNode:
    attested = outcome != "UNATTESTED"
    return LineageNode(ref="/lake/orders", version=version, outcome=outcome, attested=attested,
                       passed=outcome == "VERIFIED", verdict=f"{outcome} — orders {version}",
                       model="orders" if attested else None, table_format="delta", observed_as="strong",
                       **extra)  # type: ignore[arg-type]


def _chain(middle: str = "VERIFIED") -> LineageNode:
    """orders v1..v6 (v6, v3 and v1 attested) read up@0 (its inputs cut at --depth) and built on v0 (unattested)."""
    up = LineageNode(ref="/lake/up", version="0", outcome="VERIFIED", attested=True, passed=True, verdict="VERIFIED",
                     model="up", table_format="delta", observed_as="strong", not_walked=2, depth_limit=1)
    before = _version("0", "UNATTESTED", pre_attestation=True)
    before.observed_as = "heuristic"
    code = {"code": "artifact_hash_mismatch"} if middle != "VERIFIED" else {}
    root = _version("6", chain=[_version("3", middle, **code), _version("1")], inputs=[up, before])
    root.observed_as = None
    return root


def _texts(svg: str) -> list[list[str]]:
    """Every box of a picture: its text lines (parsed as XML: it must be well formed)."""
    root = ET.fromstring(svg)
    return [[t.text or "" for t in g.iter(f"{SVG}text")] for g in root.iter(f"{SVG}g") if g.get("data-outcome")]


def test_a_chain_a_pre_attestation_history_and_a_cut_are_drawn_in_every_format() -> None:
    root = _chain()
    assert not root.failed() and root.summary() == (
        "lineage PASSED: 2 node(s) verified (4 table version(s)); 1 pre-attestation history (/lake/orders starts at "
        "unattested version 0: what came before is not attested); walk cut at --depth 1: 2 input(s) not walked")
    graph = root.graph()
    assert [n.key for n in graph.nodes] == ["/lake/orders@6", "/lake/up@0", "/lake/up@0 …", "/lake/orders@0"]
    assert graph.node("/lake/orders@6").version_label == "v1..v6 (3 versions)"
    svg = to_svg(graph, caption=root.summary())
    assert _texts(svg) == [["orders", "v1..v6 (3 versions)", "model orders", "VERIFIED"],
                           ["up", "v0", "model up", "VERIFIED"],
                           ["… 2 input(s) not walked", "(--depth 1)", "NOT WALKED"],
                           ["orders", "v0", "pre-attestation history", "UNATTESTED"]]
    assert "NOT WALKED: beyond --depth" in svg and root.summary() in svg
    dot = to_dot(graph, caption=root.summary())
    assert 'label="orders\\nv1..v6 (3 versions)\\nmodel orders\\nVERIFIED"' in dot
    assert "pre-attestation history\\nUNATTESTED" in dot and "… 2 input(s) not walked\\n(--depth 1)" in dot
    assert 'label="not walked", style=dotted' in dot and 'labelloc=b; label="lineage PASSED: ' in dot
    mermaid = to_mermaid(graph, caption=root.summary())
    assert "v1..v6 #40;3 versions#41;" in mermaid and "<br/>pre-attestation history<br/>UNATTESTED" in mermaid
    assert "#8230; 2 input#40;s#41; not walked" in mermaid
    assert mermaid.splitlines()[-1].startswith("  %% lineage PASSED")
    html = root._repr_html_()
    assert "@ 1..6" in html and "walk cut at --depth 1" in html and "pre-attestation history" in html
    text = root.lines()
    assert text[0].startswith("/lake/orders@1..6 (3 versions): ATTESTED ✓ model=orders")
    assert text[-1] == "  /lake/orders@0 [read as heuristic]: UNATTESTED — pre-attestation history: the version this " \
        "table's chain of attestations starts from (not a failure of the walk)"
    assert "    … 2 input(s) not walked (--depth 1)" in text


def test_a_failing_version_inside_a_chain_colours_it_and_is_named() -> None:
    root = _chain(middle="NOT VERIFIED")
    assert root.failed() and root.passed  # the newest version verifies; the walk does not
    assert root.summary().startswith("lineage FAILED: /lake/orders@3 NOT VERIFIED (artifact_hash_mismatch)")
    box = root.graph().node("/lake/orders@6")
    assert box.outcome == "NOT VERIFIED" and "@3: NOT VERIFIED — orders 3" in node_tooltip(box)
    assert _texts(to_svg(root.graph()))[0][-1] == "NOT VERIFIED"
    assert "ATTESTED ✗" in root.lines()[0] and "    @3: NOT VERIFIED — orders 3" in root.lines()
    # The same version reached elsewhere (a diamond) is that chain's box, not a second one.
    root.observed_as = "strong"
    gold = LineageNode(ref="/lake/gold", version="0", outcome="VERIFIED", attested=True, passed=True, verdict="V",
                       inputs=[root, _version("3", "NOT VERIFIED")])
    graph = gold.graph()
    assert [n.key for n in graph.nodes if n.ref == "/lake/orders"] == ["/lake/orders@6", "/lake/orders@0"]
    # gold read two versions of it: one arrow naming both.
    assert [e.label for e in graph.edges if e.target == "/lake/gold@0"] == ["read @6, @3 · strong"]


def test_the_cli_draws_a_table_recorded_after_appends_as_one_box(tmp_path: Path) -> None:
    from tests.test_lineage import _appended

    _, orders = _appended(tmp_path, 3)
    proc = run_cli("lineage", str(orders), "--format", "svg", "--depth", "0")
    assert proc.returncode == 0
    assert _texts(proc.stdout) == [["orders", "v1..v6 (3 versions)", "model orders", "VERIFIED"],
                                   ["… 1 input(s) not walked", "(--depth 0)", "NOT WALKED"],
                                   ["orders", "v0", "pre-attestation history", "UNATTESTED"]]
    caption = [t.text for t in ET.fromstring(proc.stdout).iter(f"{SVG}text") if t.get("data-summary")]
    assert caption == [run_cli("lineage", str(orders), "--depth", "0").stdout.splitlines()[-1]]
