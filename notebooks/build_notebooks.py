"""Regenerates the notebooks in this folder from code, with their outputs (reviewable diffs).

    python notebooks/build_notebooks.py            # regenerate both: run each, keep its outputs
    python notebooks/build_notebooks.py --check    # exit 1 when a committed notebook differs from a fresh build

The lineage notebook runs in a fresh kernel in a scratch folder; what would differ from run to run is made stable
(:func:`stable`): the scratch folder's path, the Delta log's commit times and the file modification times the sidecar
binds (so its content address) are replaced by fixed words. Its outputs are committed, so GitHub shows them. The
Spark notebook is run the same way (it needs a JDK and the Delta/Iceberg jars: `make jars`), its tables in a
``warehouse`` folder beside it; what the JVM and Spark log on stderr (warnings stamped with the time) is dropped
from both. Checks of what the notebooks show live in tests/test_notebooks.py, not in the notebooks.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent


def _numbered(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Cells with ids by position (nbformat draws random ones: every regeneration was a diff)."""
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index:02d}"
    return cells


def lineage_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(
            "# Inspecting a table's attestation and lineage\n\n"
            "This notebook builds a tiny bronze → silver pipeline with local Delta tables, attests each "
            "version, then inspects what an attestation says, walks the lineage upstream, and shows how "
            "verification reacts to later writes and to a tampered file. It needs only `recipe-attest[delta,sql]`: "
            "no Spark, no server. The tables go to `./warehouse`, next to the notebook (emptied first)."),
        new_code_cell(
            "import json, shutil\n"
            "from pathlib import Path\n"
            "import pyarrow as pa\n"
            "from deltalake import write_deltalake\n"
            "import attest\n"
            "from carriers.delta import attest_after_write\n\n"
            "warehouse = Path('warehouse')\n"
            "shutil.rmtree(warehouse, ignore_errors=True)\n"
            "bronze, silver = str(warehouse / 'bronze'), str(warehouse / 'silver')"),
        new_markdown_cell("## 1. Write and attest bronze, then silver (which reads bronze)"),
        new_code_cell(
            "write_deltalake(bronze, pa.table({'id': [1, 2, 3], 'amount': [10.0, -1.0, 7.5]}))\n"
            "attest_after_write(bronze, model='bronze_orders', sql='SELECT * FROM landing.orders', "
            "dialect='spark')\n\n"
            "write_deltalake(silver, pa.table({'id': [1, 3], 'amount': [10.0, 7.5]}))\n"
            "result = attest.record(silver, model='silver_orders', dialect='spark',\n"
            "                       sql='SELECT id, amount FROM bronze WHERE amount > 0', inputs=[bronze])\n"
            "print('silver inputs observed as', result.manifest.inputs_proof_class)"),
        new_markdown_cell(
            "## 2. What the attestation says\n\n"
            "The manifest is reconstituted from the table's own `recipe_manifest.*` properties "
            "(`attest show` prints the same); the observed inputs are kept beside it (the sidecar) so anyone can "
            "recompute `inputs_hash`."),
        new_code_cell(
            "manifest = attest.show(silver)\n"
            "print(json.dumps({k: manifest[k] for k in ('subject', 'program_hash', 'inputs_proof_class')}, "
            "indent=2))"),
        new_markdown_cell(
            "A notebook shows an attestation as a table (its `_repr_html_`): what it binds, its identities, the "
            "inputs the run observed and how strongly."),
        new_code_cell(
            "from carriers.delta import DeltaCarrier\n"
            "DeltaCarrier(silver).read()"),
        new_markdown_cell(
            "## 3. Walk the lineage, checking every node\n\n"
            "The walk displays as a picture: each box is a table version coloured by its verdict, each arrow a "
            "read, labelled with the version read — solid when read by content identity (strong), dashed when "
            "only by version (heuristic). `attest lineage TABLE --format svg` draws the same picture."),
        new_code_cell("tree = attest.lineage(silver, level='bytes')\nprint('\\n'.join(tree.lines()))\ntree"),
        new_markdown_cell(
            "## 4. Verification says exactly what it checked\n\n"
            "An unattested append makes the current version STALE; the attested version still verifies by "
            "time travel."),
        new_code_cell(
            "print(attest.verify(silver).verdict())\n"
            "write_deltalake(silver, pa.table({'id': [4], 'amount': [1.0]}), mode='append')\n"
            "stale = attest.verify(silver)\n"
            "print(stale.verdict())\n"
            "print(attest.verify(silver, version=stale.attested_version, level='bytes').verdict())"),
        new_code_cell("stale   # a verify report shows its verdict in colour, with every error"),
        new_markdown_cell(
            "## 5. Tamper with a file\n\n"
            "Someone with write access to the storage flips one byte of a bronze data file, keeping its size. The "
            "table's own metadata still lists the same file and size, so only the bytes tell: `files` level still "
            "passes, `bytes` does not."),
        new_code_cell(
            "victim = sorted(Path(bronze).glob('*.parquet'))[0]\n"
            "print(attest.verify(bronze, level='bytes').verdict())\n"
            "data = bytearray(victim.read_bytes())\n"
            "data[len(data) // 2] ^= 0xFF\n"
            "victim.write_bytes(bytes(data))\n"
            "print(attest.verify(bronze, level='files').verdict())\n"
            "tampered = attest.verify(bronze, level='bytes')\n"
            "print(tampered.verdict())\n"
            "print([e.code.value for e in tampered.errors])"),
        new_markdown_cell(
            "## 6. An audit of the warehouse\n\n"
            "`attest audit` checks every table; in a notebook the report is a table shaded by outcome "
            "(`attest audit --to PATH` keeps it as a Delta table to query later)."),
        new_code_cell(
            "from attest.verify.audit import AuditReport\n"
            "audit = AuditReport()\n"
            "for table in (bronze, silver):\n"
            "    audit.add_report(table, attest.verify(table))\n"
            "print(audit.counts)\n"
            "audit"),
    ]
    nb = new_notebook(cells=_numbered(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def spark_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(
            "# A Spark job with the post-write hook\n\n"
            "One line turns the hook on; every Delta or Iceberg table the job writes is attested after its "
            "commit. The tables are then inspected and verified the way an auditor would: from their own "
            "metadata, without trusting the job. Needs `recipe-attest[spark]` and a JDK; the Delta/Iceberg jars "
            "are fetched by `python -m carriers.spark.jars` (`make jars`). The tables go to `./warehouse`, next to "
            "the notebook (emptied first)."),
        new_code_cell(
            "import os, shutil\n"
            "from pathlib import Path\n"
            "import attest.spark\n"
            "from carriers.spark.session import pyiceberg_catalog_properties\n\n"
            "warehouse = Path('warehouse').resolve()\n"
            "shutil.rmtree(warehouse, ignore_errors=True)\n"
            "# pyiceberg's own configuration for the catalog Spark uses (read once, when pyiceberg is imported):\n"
            "# what `iceberg://iceberg/...` references resolve through.\n"
            "for key, value in pyiceberg_catalog_properties(warehouse).items():\n"
            "    os.environ[f'PYICEBERG_CATALOG__ICEBERG__{key.upper()}'] = value\n"
            "spark = attest.spark.local_session(warehouse)\n"
            "hook = attest.spark.install(spark)   # the one line"),
        new_markdown_cell("## The job: bronze (Delta) → silver (Delta) → gold (Iceberg)"),
        new_code_cell(
            "spark.createDataFrame([(1, 'eu', 10.0), (2, 'us', 20.5), (3, 'eu', 7.25)],\n"
            "                      'id int, region string, amount double') \\\n"
            "    .write.format('delta').saveAsTable('bronze')\n"
            "spark.sql('CREATE TABLE silver USING delta AS '\n"
            "          'SELECT id, upper(region) AS region, amount FROM bronze WHERE amount > 0')\n"
            "spark.sql('CREATE NAMESPACE IF NOT EXISTS iceberg.gold')\n"
            "spark.sql('CREATE TABLE iceberg.gold.revenue USING iceberg AS '\n"
            "          'SELECT region, sum(amount) AS revenue FROM silver GROUP BY region')\n"
            "hook.flush()\n"
            "print(f'attested={hook.attested} failed={hook.failed} skipped={hook.skipped}')"),
        new_markdown_cell(
            "## Inspect what the tables carry\n\n"
            "The Iceberg table is read through pyiceberg on the same sqlite catalog Spark used."),
        new_code_cell(
            "from pyiceberg.catalog.sql import SqlCatalog\n"
            "from carriers.delta import DeltaCarrier\n"
            "from carriers.iceberg import IcebergCarrier\n\n"
            "silver = DeltaCarrier(str(warehouse / 'spark-warehouse' / 'silver'))\n"
            "catalog = SqlCatalog('iceberg', **pyiceberg_catalog_properties(warehouse))\n"
            "gold = IcebergCarrier(catalog.load_table('gold.revenue'), catalog_name='iceberg')\n"
            "doc = silver.read().document\n"
            "print('silver program', doc['program_hash'][:16], 'inputs', doc['inputs_proof_class'])\n"
            "[i.to_dict() for i in gold.read().inputs]"),
        new_markdown_cell("## Verify every table at the bytes level"),
        new_code_cell(
            "from attest.verify.table import verify_table\n"
            "reports = [verify_table(c, level='bytes') for c in (silver, gold)]\n"
            "for r in reports:\n"
            "    print(r.verdict())"),
        new_markdown_cell(
            "## The lineage, as a picture\n\n"
            "Walked from gold upstream, every node checked (`attest lineage iceberg://iceberg/gold.revenue "
            "--format svg` draws the same)."),
        new_code_cell(
            "from carriers.lineage import walk\n"
            "tree = walk('iceberg://iceberg/gold.revenue')\n"
            "tree"),
        new_markdown_cell(
            "## An audit of every table the session's catalogs name\n\n"
            "`attest.spark.audit(spark)` lists every catalog, namespace, table and view this session can name "
            "(an external table anywhere, an Iceberg catalog configured in Spark alone, each Iceberg branch) and "
            "checks each as the read gate checks a read of it; a table of another format is listed as skipped. "
            "In a notebook the report is a table shaded by outcome."),
        new_code_cell(
            "audit = attest.spark.audit(spark)\n"
            "print(audit.counts)\n"
            "audit"),
        new_code_cell(
            "print('every node verified:', not tree.failed(), '| gold read', len(tree.inputs), 'table(s), as',\n"
            "      [i.observed_as for i in tree.inputs], '| silver read bronze as', doc['inputs_proof_class'])\n"
            "spark.stop()"),
    ]
    nb = new_notebook(cells=_numbered(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def execute(build: Callable[[], nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """The notebook ``build`` makes, run top to bottom in a fresh kernel in a scratch folder, its outputs stable: it
    is run twice, and what differs between the two runs is replaced by a fixed word (:func:`stable`)."""
    return stable(run_once(build), run_once(build))


def run_once(build: Callable[[], nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """One run of the notebook ``build`` makes, top to bottom in a fresh kernel in a scratch folder, the folder's
    paths made relative and stderr dropped (:func:`_outputs`); nothing else fixed yet."""
    with tempfile.TemporaryDirectory(prefix="attest-notebook-") as scratch:
        root = Path(scratch).resolve()
        nb = build()
        NotebookClient(nb, timeout=600, kernel_name="python3", coalesce_streams=True,  # one output per stream
                       resources={"metadata": {"path": str(root)}}).execute()
        return _outputs(nb, lambda text: _relative(text, root))


_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
_RUN_ID = re.compile(r"\brun-\d{8}T\d{6}Z-[0-9a-f]{8}\b")
_HEX = re.compile(r"[0-9a-f]{8,64}")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def _relative(text: str, root: Path) -> str:
    """Paths of the scratch folder written relative to it (the notebook's own folder when a user runs it)."""
    for prefix in (root.as_uri() + "/", str(root) + "/", root.as_uri(), str(root)):
        text = text.replace(prefix, "")
    return text


def _outputs(nb: nbformat.NotebookNode, edit: Callable[[str], str]) -> nbformat.NotebookNode:
    """``nb`` with ``edit`` applied to every text of every output (and run metadata and stderr dropped: the JVM's and
    Spark's log lines, stamped with the time, are not what a notebook shows)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        cell.outputs = [o for o in cell.get("outputs", [])
                        if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = edit(output["text"])
            for kind, value in list(output.get("data", {}).items()):
                if isinstance(value, str):
                    output["data"][kind] = edit(value)
    return nb


def stable(first: nbformat.NotebookNode, second: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``first`` with what changes from run to run fixed: times (``<time>``), run ids (``run-<id>``), UUIDs (data file
    names, Delta table ids: ``<uuid>``), and every
    identity that differed between the two runs (``<per-run>``): a manifest's identity covers its produced_at and run
    id, a strong input's covers its upstream's, a sidecar's name is its content's address, which binds file
    modification times."""
    def words(text: str) -> str:
        return _UUID.sub("<uuid>", _RUN_ID.sub("run-<id>", _TIME.sub("<time>", text)))

    def texts(nb: nbformat.NotebookNode) -> str:
        found: list[str] = []
        _outputs(nb, lambda text: found.append(words(text)) or text)  # type: ignore[func-returns-value]
        return "\n".join(found)

    a, b = _HEX.findall(texts(first)), _HEX.findall(texts(second))
    if len(a) != len(b):
        raise RuntimeError("two runs of the notebook printed different outputs: not only ids and times differ")
    varying = {x for x, y in zip(a, b, strict=True) if x != y}

    def fixed(text: str) -> str:
        return _HEX.sub(lambda m: "<per-run>" if any(v.startswith(m.group()) for v in varying) else m.group(),
                        words(text))

    return _outputs(first, fixed)


# The lineage picture's geometry (box widths, positions, paths) follows its labels' lengths, and an Iceberg snapshot id
# (a random 64-bit number shown as <per-run>) has 18 or 19 digits: compared notebooks leave it out.
_GEOMETRY = re.compile(r'\b(x|y|x1|y1|x2|y2|cx|cy|r|width|height|viewBox|d|points|transform)=\\"[^"\\]*\\"')


def comparable(text: str) -> str:
    """A notebook's text as --check and the tests compare it: the picture's geometry left out (:data:`_GEOMETRY`)."""
    return _GEOMETRY.sub(r'\1=\\"<n>\\"', text)


_TOKEN = re.compile(r"(<per-run>|[0-9a-f]{8,64})")


def same_notebook(a: str, b: str) -> bool:
    """Whether two notebook texts show the same thing, as --check and the tests compare them: :func:`comparable`, and an
    identity one build found varying (``<per-run>``) matches any identity at the same place in the other. Whether an
    identity varies is itself per-run (a Spark write's file bytes follow its task scheduling: two runs may agree), so
    a fixed word must not fail a build whose two runs happened to agree."""
    left, right = _TOKEN.split(comparable(a)), _TOKEN.split(comparable(b))
    if len(left) != len(right):
        return False
    # split() puts the text between identities at even places and the identities at odd ones.
    return all(x == y or (i % 2 == 1 and "<per-run>" in (x, y))
               for i, (x, y) in enumerate(zip(left, right, strict=True)))


def built() -> dict[str, nbformat.NotebookNode]:
    """Every notebook as the generator makes it: run, with its outputs."""
    return {"inspect_lineage.ipynb": execute(lineage_notebook), "spark_pipeline.ipynb": execute(spark_notebook)}


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    stale = []
    for name, nb in built().items():
        text = nbformat.writes(nb) + "\n"
        path = HERE / name
        if check:
            if not path.exists() or not same_notebook(path.read_text(encoding="utf-8"), text):
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"regenerate {', '.join(stale)}: python notebooks/build_notebooks.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
