"""docs/architecture.md's picture is the one the code's imports draw today (docs/tools/architecture_graph.py), and the
drawing reads imports as the page says it does. The import layers themselves are checked by `lint-imports` (make lint).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    path = ROOT / "docs" / "tools" / "architecture_graph.py"
    spec = importlib.util.spec_from_file_location("architecture_graph", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


graph = _load()


def test_the_committed_picture_is_current() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert graph.render(text, graph.blocks()) == text, (
        "docs/architecture.md is not what the code's imports draw: run python docs/tools/architecture_graph.py")


def test_a_stale_picture_is_caught() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    begin, end = graph.BEGIN.format(name="picture"), graph.END.format(name="picture")
    head, rest = text.split(begin + "\n")
    stale = head + begin + "\n```mermaid\nflowchart TB\n```\n" + end + rest.split(end, 1)[1]
    assert stale != text
    assert graph.render(stale, graph.blocks()) == text


def test_every_module_has_a_place_in_the_picture() -> None:
    names = graph.modules()
    assert "attest.verify.table" in names and "carriers.core" in names and "carriers.spark.hook" in names
    for name in names:
        graph.part_of(name)  # raises for a module no part holds
    with pytest.raises(ValueError, match="belongs to no part"):
        graph.part_of("attest.brand_new_module")  # the package's own name places its __init__ only
    with pytest.raises(ValueError, match="belongs to no part"):
        graph.part_of("carriers.hudi")


def test_imports_are_read_by_kind(tmp_path: Path) -> None:
    (tmp_path / "attest" / "sub").mkdir(parents=True)
    (tmp_path / "carriers").mkdir()
    files = {
        "attest/__init__.py": "",
        "attest/errors.py": "",
        "attest/model.py": "",
        "attest/sub/__init__.py": "from . import leaf\n",
        "attest/sub/leaf.py": (
            "from __future__ import annotations\n"
            "import typing\n"
            "from ..errors import Code\n"                     # relative, eager
            "try:\n    import pyarrow\nexcept ImportError:\n    pass\n"  # eager inside try
            "if typing.TYPE_CHECKING:\n    from carriers.core import X\n"
            "def f():\n    import deltalake.exceptions\n    from attest import model\n"
            "class C:\n    def m(self):\n        from carriers import core\n"
            "import json\n"                                   # not an engine: no edge
        ),
        "carriers/__init__.py": "",
        "carriers/core.py": "import attest.sub.leaf as leaf\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    found = {(e.source, e.target, e.kind) for e in graph.edges(tmp_path)}
    assert found == {
        ("attest.sub", "attest.sub.leaf", "eager"),
        ("attest.sub.leaf", "attest.errors", "eager"),
        ("attest.sub.leaf", "pyarrow", "eager"),
        ("attest.sub.leaf", "carriers.core", "typing"),
        ("attest.sub.leaf", "deltalake", "lazy"),
        ("attest.sub.leaf", "attest.model", "lazy"),
        ("attest.sub.leaf", "carriers.core", "lazy"),
        ("carriers.core", "attest.sub.leaf", "eager"),
    }


def test_an_arrow_implied_by_another_way_is_left_out() -> None:
    # a -> b -> c eagerly: a -> c is implied; d -.-> b --> c: d's lazy arrow to c is implied too, but an eager
    # e --> c is not implied by e -.-> b --> c (importing e brings c in at once, b only when called).
    parts = {("a", "b"): "eager", ("b", "c"): "eager", ("a", "c"): "eager", ("d", "b"): "lazy", ("d", "c"): "lazy",
             ("e", "b"): "lazy", ("e", "c"): "eager"}
    assert graph.reduced(parts) == {("a", "b"): "eager", ("b", "c"): "eager", ("d", "b"): "lazy",
                                    ("e", "b"): "lazy", ("e", "c"): "eager"}
    assert graph.circles({("a", "b"): "eager", ("b", "a"): "lazy", ("b", "c"): "eager"}) == [["a", "b"]]
