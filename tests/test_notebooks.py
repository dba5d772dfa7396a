"""The notebooks run top to bottom in a fresh kernel (their last cells assert what they claim)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

HERE = Path(__file__).parent.parent / "notebooks"


def _run(name: str, cwd: Path) -> tuple[str, str]:
    """(text, html) of every output of the notebook run in a fresh kernel."""
    nb = nbformat.read(HERE / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    return "".join(o.get("text", "") for o in outputs), html


def _shows_the_picture(html: str) -> None:
    """The lineage walk displayed inline as an SVG picture (attest/render), coloured by verdict."""
    assert 'data-attest="lineage-walk"' in html and '<svg xmlns="http://www.w3.org/2000/svg"' in html
    assert 'data-outcome="VERIFIED"' in html


def test_every_notebook_has_a_test() -> None:
    assert sorted(p.name for p in HERE.glob("*.ipynb")) == ["inspect_lineage.ipynb", "spark_pipeline.ipynb"]


def test_notebooks_match_their_generator(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_notebooks", HERE / "build_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, build in (("inspect_lineage.ipynb", module.lineage_notebook), ("spark_pipeline.ipynb",
                                                                              module.spark_notebook)):
        on_disk = nbformat.read(HERE / name, as_version=4)
        assert [c.source for c in on_disk.cells] == [c.source for c in build().cells], f"regenerate {name}"


@pytest.mark.slow
def test_lineage_notebook(tmp_path: Path) -> None:
    text, html = _run("inspect_lineage.ipynb", tmp_path)
    assert ": stale" in text and "VERIFIED (bytes, unsigned)" in text
    _shows_the_picture(html)
    assert 'data-attest="attestation"' in html and 'data-attest="report"' in html and 'data-attest="audit"' in html


@pytest.mark.slow
@pytest.mark.spark
def test_spark_notebook(tmp_path: Path) -> None:
    text, html = _run("spark_pipeline.ipynb", tmp_path)
    assert "attested=3 failed=0" in text and text.count("VERIFIED (bytes, unsigned)") == 2
    _shows_the_picture(html)
    assert html.count('data-outcome="VERIFIED"') >= 3  # gold, silver, bronze
