"""Round 20 on names with two readings (local ``file:`` URIs; the store's are in test_audit_store_round20.py).

- ``file:///x/lake#copy`` and ``file:///x/lake?copy``: delta-rs parses the URI as a URL and opens ``/x/lake`` (the
  ``#…`` fragment, the ``?…`` query dropped), and so did ``attest verify`` / ``attest audit`` (``urlparse``): VERIFIED,
  exit 0, over the attested ``/x/lake``, while Spark's ``spark.read.format("delta").load`` of the same string reads
  the folder literally named ``lake#copy`` (Hadoop's ``Path``: "query & fragment not supported"; measured below: the
  tampered copy's rows). Round 19 refused only a percent-escape naming two folders. Now any URI whose two readings
  are two existing folders is refused, exit 2 ``invalid_argument`` (``carriers.refs.refuse_two_readings``).
- ``attest audit /lake/orders file:///lake/orders`` (or ``lake/./orders/``): two VERIFIED lines, "2 verified", two
  kept rows of one table. Now one (``carriers.refs.table_key``).
- A SQL catalog holding a namespace with an empty level (a row of namespace ``''``, ``a..b`` or ``ns.``, which
  iceberg-java's JdbcCatalog — Spark — opens): pyiceberg's ``NoSuchNamespaceError`` ended the listing, and the audit of
  the catalog was one ``internal_error`` line: no other table of it was audited or reported. Now each such namespace
  is an ``ERROR (table_not_audited)`` line and the catalog's other tables are audited.
"""

# ruff: noqa: F811  (the catalog and table fixtures, imported)
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_audit_discovery_attacks import attested, audit, by_table
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.objectstore.test_stores import cli


def _lake_and_tampered_copy(tmp_path: Path, name: str) -> Path:
    """``<x>/lake`` attested, and a copy of it in the folder literally named ``<x>/<name>`` with one byte flipped in a
    data file: what Spark reads for ``file://<x>/<name>``."""
    lake = tmp_path / "x"
    attested(lake / "lake")
    shutil.copytree(lake / "lake", lake / name)
    victim = sorted((lake / name).rglob("*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 1
    victim.write_bytes(bytes(data))
    return lake


@pytest.mark.parametrize("name", ["lake#copy", "lake?copy", "lake?a#b"])
def test_a_file_uri_whose_fragment_or_query_names_another_folder_is_refused(tmp_path: Path, name: str) -> None:
    lake = _lake_and_tampered_copy(tmp_path, name)
    uri = f"file://{lake}/{name}"
    rc, doc = verify(uri)
    assert rc == 2 and codes(doc) == ["invalid_argument"] and "ambiguous" in doc["errors"][0]["message"], doc
    rc, doc = verify(f"{uri}@1")
    assert rc == 2 and codes(doc) == ["invalid_argument"], doc
    rc, doc = audit(uri)
    assert rc == 2 and [e["code"] for e in doc["errors"]] == ["invalid_argument"], doc
    assert "ambiguous" in doc["errors"][0]["message"], doc
    assert [(t["table"], t["outcome"]) for t in doc["tables"]] == [(uri, "ERROR")], doc  # the target's line alone
    rc, doc = audit(f"file://{lake}/")  # each by its path: the literal folder is the tampered copy
    assert rc == 1 and by_table(doc)[str(lake / name)]["outcome"] == "NOT VERIFIED", doc
    assert by_table(doc)[str(lake / "lake")]["outcome"] == "VERIFIED", doc


@pytest.mark.spark
@pytest.mark.parametrize("name", ["lake#copy", "lake?copy"])
def test_spark_reads_the_literal_folder_of_a_file_uri_with_a_fragment_or_query(
    spark: Any, tmp_path: Path, name: str
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    lake = tmp_path / "x"
    write_deltalake(str(lake / "lake"), pa.table({"a": [1, 2]}))
    shutil.copytree(lake / "lake", lake / name)
    pq.write_table(pa.table({"a": [7, 9]}), sorted((lake / name).glob("*.parquet"))[0])
    read = sorted(r[0] for r in spark.read.format("delta").load(f"file://{lake}/{name}").collect())
    assert read == [7, 9]  # the literal folder
    assert sorted(DeltaTable(f"file://{lake}/{name}").to_pyarrow_table()["a"].to_pylist()) == [1, 2]  # delta-rs: lake


def test_one_table_named_by_two_spellings_is_one_line_and_one_kept_row(tmp_path: Path) -> None:
    """``attest audit /lake/orders file:///lake/orders`` printed two VERIFIED lines, counted "2 verified", and ``--to``
    kept two rows of one table: the dedupe compared the names as typed. Now a local location is compared by the path
    readers open (``carriers.refs.table_key``)."""
    from deltalake import DeltaTable

    orders = attested(tmp_path / "lake" / "orders")
    spellings = [str(orders), f"file://{orders}", f"file://localhost{orders}/", f"{tmp_path}/lake/./orders"]
    rc, doc = audit(*spellings, "--to", str(tmp_path / "kept"))
    assert rc == 0 and [t["table"] for t in doc["tables"]] == [str(orders)], doc
    assert doc["counts"]["VERIFIED"] == 1, doc
    assert DeltaTable(str(tmp_path / "kept")).to_pyarrow_table().num_rows == 1


def _row(sql: Any, namespace: str, name: str, location: str) -> None:
    """A catalog row as iceberg-java's JdbcCatalog accepts it (its namespace joined by '.', levels may be empty)."""
    with sqlite3.connect(sql.engine.url.database) as db:
        db.execute(
            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
            "previous_metadata_location) VALUES (?, ?, ?, ?, NULL)",
            (sql.name, namespace, name, location),
        )


def test_a_namespace_with_an_empty_level_is_an_error_line_and_the_rest_is_audited(catalog: Any, table: Any) -> None:
    name = catalog.name
    _row(catalog, "", "top", table.metadata_location)
    _row(catalog, "a..b", "t2", table.metadata_location)
    done = cli("audit", f"iceberg://{name}", "--json")
    report = json.loads(done.stdout)
    lines = {t["table"]: (t["outcome"], t["code"]) for t in report["tables"]}
    assert done.returncode == 2, done.stdout
    assert lines == {
        f"iceberg://{name}/": ("ERROR", "table_not_audited"),
        f"iceberg://{name}/a.": ("ERROR", "table_not_audited"),
        f"iceberg://{name}/ns.t": ("VERIFIED", None),
    }, lines
    assert "has an empty level" in report["errors"][0]["message"], report["errors"]


def test_a_hidden_table_is_not_taken_as_audited_through_a_dotdot_link(tmp_path: Path) -> None:
    """A hidden table the policy requires signed is an ERROR line unless another target audits it by its name. The
    check folded ``..`` lexically (``canonical_name``): ``<lake>/link/../_staging/orders``, ``link`` leading to
    ``<other>/sub``, is ``<other>/_staging/orders`` to the kernel and delta-rs, yet it counted as an audit of
    ``<lake>/_staging/orders``, whose ERROR line was dropped: the unsigned table the policy covers was judged by no
    line, and the audit passed, exit 0 (the ``..`` line read the signed ``<other>/_staging/orders``)."""
    from tests.adversarial.test_policy_names import _policy, _signed, _unsigned

    lake, other = tmp_path / "lake", tmp_path / "other"
    _signed(lake / "finance" / "orders")
    _unsigned(lake / "_staging" / "orders")
    _signed(other / "_staging" / "orders")
    (other / "sub").mkdir()
    (lake / "link").symlink_to(other / "sub")
    policy = _policy(tmp_path, [f"file://{lake}/*"])
    dotdot = f"{lake}/link/../_staging/orders"
    rc, doc = audit(str(lake), dotdot, "--policy", policy)
    lines = by_table(doc)
    assert rc == 2, doc
    hidden = lines[str(lake / "_staging" / "orders")]
    assert (hidden["outcome"], hidden["code"]) == ("ERROR", "table_not_audited"), doc
    assert lines[dotdot]["outcome"] == "VERIFIED", doc  # the other folder's signed table, read as delta-rs reads it
    # Control: named by its own path, the hidden table is judged (unsigned under the glob: NOT VERIFIED), no ERROR line.
    rc, doc = audit(str(lake), str(lake / "_staging" / "orders"), "--policy", policy)
    hidden = by_table(doc)[str(lake / "_staging" / "orders")]
    assert (hidden["outcome"], hidden["code"]) == ("NOT VERIFIED", "signature_missing"), doc
