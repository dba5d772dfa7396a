"""Regenerates the notebooks in this folder from code (reviewable diffs; outputs are never committed)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent


def lineage_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(
            "# Inspecting a table's attestation and lineage\n\n"
            "This notebook builds a tiny bronze → silver pipeline with local Delta tables, attests each "
            "version, then inspects what an attestation says, walks the lineage upstream, and shows how "
            "verification reacts to later writes and to tampering. It needs only `recipe-attest[delta]`: "
            "no Spark, no server."),
        new_code_cell(
            "import json, tempfile\n"
            "from pathlib import Path\n"
            "import pyarrow as pa\n"
            "from deltalake import write_deltalake\n"
            "from carriers.delta import DeltaCarrier, attest_after_write\n"
            "from carriers.lineage import walk\n"
            "from attest.verify.table import verify_table\n\n"
            "warehouse = Path(tempfile.mkdtemp(prefix='attest-notebook-'))\n"
            "bronze, silver = str(warehouse / 'bronze'), str(warehouse / 'silver')"),
        new_markdown_cell("## 1. Write and attest bronze, then silver (which reads bronze)"),
        new_code_cell(
            "write_deltalake(bronze, pa.table({'id': [1, 2, 3], 'amount': [10.0, -1.0, 7.5]}))\n"
            "attest_after_write(bronze, model='bronze_orders', sql='SELECT * FROM landing.orders', "
            "dialect='spark')\n\n"
            "upstream = DeltaCarrier(bronze).observe()   # bronze as this run read it\n"
            "write_deltalake(silver, pa.table({'id': [1, 3], 'amount': [10.0, 7.5]}))\n"
            "result = attest_after_write(silver, model='silver_orders', dialect='spark',\n"
            "                            sql='SELECT id, amount FROM bronze WHERE amount > 0', "
            "inputs=[upstream])\n"
            "print(upstream.proof_class, result.manifest.inputs_proof_class)"),
        new_markdown_cell(
            "## 2. What the attestation says\n\n"
            "The manifest is reconstituted from the table's own `recipe_manifest.*` properties; the observed "
            "inputs are kept beside it (the sidecar) so anyone can recompute `inputs_hash`."),
        new_code_cell(
            "att = DeltaCarrier(silver).read()\n"
            "print(json.dumps(att.document, indent=2)[:800])\n"
            "[i.to_dict() for i in att.inputs]"),
        new_markdown_cell(
            "A notebook shows an attestation as a table (its `_repr_html_`): what it binds, its identities, the "
            "inputs the run observed and how strongly."),
        new_code_cell("att"),
        new_markdown_cell(
            "## 3. Walk the lineage, checking every node\n\n"
            "The walk displays as a picture: each box is a table version coloured by its verdict, each arrow a "
            "read, labelled with the version read — solid when read by content identity (strong), dashed when "
            "only by version (heuristic). `attest lineage TABLE --format svg` draws the same picture."),
        new_code_cell("tree = walk(silver, level='bytes')\nprint('\\n'.join(tree.lines()))\ntree"),
        new_markdown_cell(
            "## 4. Verification says exactly what it checked\n\n"
            "An unattested append makes the current version STALE; the attested version still verifies by "
            "time travel."),
        new_code_cell(
            "print(verify_table(DeltaCarrier(silver)).verdict())\n"
            "write_deltalake(silver, pa.table({'id': [4], 'amount': [1.0]}), mode='append')\n"
            "stale = verify_table(DeltaCarrier(silver))\n"
            "print(stale.verdict())\n"
            "print(verify_table(DeltaCarrier(silver), version=stale.attested_version).verdict())"),
        new_code_cell("stale   # a verify report shows its verdict in colour, with every error"),
        new_markdown_cell(
            "## 5. An audit of the warehouse\n\n"
            "`attest audit` checks every table; in a notebook the report is a table shaded by outcome "
            "(`attest audit --to PATH` keeps it as a Delta table to query later)."),
        new_code_cell(
            "from attest.verify.audit import AuditReport\n"
            "audit = AuditReport()\n"
            "for table in (bronze, silver):\n"
            "    audit.add_report(table, verify_table(DeltaCarrier(table)))\n"
            "audit"),
        new_code_cell(
            "report = verify_table(DeltaCarrier(silver), version=stale.attested_version, level='bytes')\n"
            "assert report.passed, report.human()\n"
            "assert not stale.passed and stale.errors[0].code.value == 'stale'\n"
            "assert tree.inputs[0].observed_as == 'strong'\n"
            "assert audit.counts == {**audit.counts, 'VERIFIED': 1, 'STALE': 1}"),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def spark_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(
            "# A Spark job with the post-write hook\n\n"
            "One line turns the hook on; every Delta or Iceberg table the job writes is attested after its "
            "commit. The tables are then inspected and verified the way an auditor would: from their own "
            "metadata, without trusting the job. Needs `recipe-attest[spark]` and a JDK; the Delta/Iceberg jars "
            "are fetched by `python -m carriers.spark.jars` (`make jars`)."),
        new_code_cell(
            "import os, tempfile\n"
            "from pathlib import Path\n"
            "import attest.spark\n"
            "from carriers.spark.session import pyiceberg_catalog_properties\n\n"
            "warehouse = Path(tempfile.mkdtemp(prefix='attest-spark-notebook-'))\n"
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
            "print(f'attested={hook.attested} failed={hook.failed} skipped={hook.skipped} '\n"
            "      f'time={hook.seconds:.2f}s')"),
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
        new_code_cell(
            "assert not tree.failed() and len(tree.inputs) == 1 and tree.inputs[0].observed_as == 'strong'\n"
            "assert hook.attested == 3 and hook.failed == 0\n"
            "assert all(r.passed for r in reports)\n"
            "assert doc['inputs_proof_class'] == 'strong'   # bronze was attested before silver read it\n"
            "spark.stop()"),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def main() -> None:
    nbformat.write(lineage_notebook(), HERE / "inspect_lineage.ipynb")
    nbformat.write(spark_notebook(), HERE / "spark_pipeline.ipynb")


if __name__ == "__main__":
    main()
