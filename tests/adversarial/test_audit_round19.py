"""Round 19 on what ``attest audit`` walks and judges.

- ``attest audit file://localhost/<lake>`` (RFC 8089's spelling of this machine; ``Path.as_uri`` on some systems,
  Hadoop's ``file://localhost/…``) found no table: the folder was taken as the relative path ``localhost/<lake>``, exit
  2 ``table_not_found``, while ``file:///<lake>`` walked it. A ``file:`` URI holding a percent-escape
  (``file:///x/%6cake``, ``Path.as_uri`` of a folder with a space) walked the literal folder ``%6cake`` and named the
  folder's own table by the typed URI, which delta-rs decodes: the rows judged were ``/x/lake``'s, the line named the
  other folder. Both now walk the folder delta-rs opens for the URI (``carriers.refs.local_path``).
- ``attest verify file:///x/%6cake`` — delta-rs decodes the URI and read ``/x/lake`` (attested): VERIFIED, exit 0,
  while Spark's ``spark.read.format("delta").load`` of the same string reads the folder literally named ``%6cake``
  (measured below: a tampered copy's rows). A ``file:`` target whose decoded and literal paths are two existing
  folders is refused now, exit 2 ``invalid_argument`` (``carriers.refs.refuse_two_readings``), for verify and audit.
- A catalog view whose name a ``require_signed`` glob names was listed, the audit passed: a signed table
  ``ns.orders`` the policy names dropped and replaced by a view ``ns.orders`` (whose SQL reads anything) left the
  policy's name judged by nobody, exit 0. It is now an ERROR line (``table_not_audited``, exit 2) when a glob names it
  without a wildcard (brace alternatives enumerate names): a view carries no attestation, so the signature the policy
  requires of that name cannot be there. A view only a pattern covers (``*``, ``--key``) stays listed, its line saying
  which glob covers it (the tables its SQL reads are judged as tables): every catalog with views would fail every
  ``--key`` audit otherwise.
"""

# ruff: noqa: F811  (the catalog and table fixtures, imported)
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_audit_discovery_attacks import attested, audit, by_table
from tests.adversarial.test_audit_round14 import _entry
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.adversarial.test_policy_names import _policy
from tests.objectstore.test_stores import cli


@pytest.mark.parametrize("spelling", ["file://localhost{lake}", "FILE://LOCALHOST{lake}/", "file://localhost{lake}/."])
def test_a_localhost_file_uri_walks_the_folder(tmp_path: Path, spelling: str) -> None:
    lake = tmp_path / "lake"
    attested(lake / "finance" / "orders")
    attested(lake / "hr" / "people")
    rc, doc = audit(spelling.format(lake=lake))
    assert rc == 0, doc
    assert sorted(by_table(doc)) == [str(lake / "finance" / "orders"), str(lake / "hr" / "people")], doc
    assert all(t["outcome"] == "VERIFIED" for t in doc["tables"]), doc


def _signed_policy(tmp_path: Path, globs: list[str]) -> str:
    return _policy(tmp_path, globs)


@pytest.mark.parametrize(
    "glob", ["iceberg://{name}/ns/orders", "iceberg://{name}/ns.orders", "iceberg://{name}/ns.{{orders,people}}"]
)
def test_a_view_the_policy_requires_signed_is_an_error(
    catalog: Any,
    table: Any,
    tmp_path: Path,
    glob: str,
) -> None:
    name = catalog.name
    _entry(catalog, "ns", "orders", "VIEW")  # a signed table's name, now a view (its table dropped)
    policy = _signed_policy(tmp_path, [glob.format(name=name)])
    done = cli("audit", f"iceberg://{name}", "--policy", policy, "--json")
    report = json.loads(done.stdout)
    lines = {t["table"]: t for t in report["tables"]}
    assert done.returncode == 2, done.stdout  # an ERROR line
    view = lines[f"iceberg://{name}/ns.orders"]
    assert view["outcome"] == "ERROR" and view["code"] == "table_not_audited", view
    assert "a view carries none" in view["message"], view


def test_a_view_a_pattern_covers_is_listed_saying_so(catalog: Any, table: Any, tmp_path: Path) -> None:
    name = catalog.name
    _entry(catalog, "ns", "orders", "VIEW")
    policy = _signed_policy(tmp_path, [f"iceberg://{name}/*"])
    done = cli("audit", f"iceberg://{name}", "--policy", policy, "--json")
    report = json.loads(done.stdout)
    skipped = {s["path"]: s["message"] for s in report["skipped"]}
    assert "a view carries no signature: listed, not judged" in skipped[f"iceberg://{name}/ns.orders"], skipped
    assert f"iceberg://{name}/ns.orders" not in {t["table"] for t in report["tables"]}, done.stdout


def test_a_percent_escaped_file_uri_naming_two_folders_is_refused(tmp_path: Path) -> None:
    """``file://<x>/%6cake`` is ``<x>/lake`` to delta-rs (a URI, decoded) and the folder literally named ``%6cake`` to
    Hadoop's ``Path`` (Spark's ``load``): with both there, the audit walked the literal folder and named its table by
    the URI, whose rows delta-rs read from ``<x>/lake`` — VERIFIED, exit 0, over a tampered copy a Spark reader of
    the same string gets. Refused now as ambiguous (exit 2): each is audited by its path."""
    lake = tmp_path / "x"
    attested(lake / "lake")
    shutil.copytree(lake / "lake", lake / "%6cake")
    victim = sorted((lake / "%6cake").rglob("*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 1
    victim.write_bytes(bytes(data))
    rc, doc = audit(f"file://{lake}/%6cake")
    assert rc == 2 and [e["code"] for e in doc["errors"]] == ["invalid_argument"], doc
    assert "ambiguous" in doc["errors"][0]["message"], doc
    rc, doc = audit(str(lake))  # the literal folder, named by its path, is the tampered copy
    assert rc == 1 and by_table(doc)[str(lake / "%6cake")]["outcome"] == "NOT VERIFIED", doc


def _lake_and_tampered_copy(tmp_path: Path) -> Path:
    """``<x>/lake`` attested, and a copy of it in the folder literally named ``<x>/%6cake`` whose data file holds other
    rows (7, 9): what Spark reads for ``file://<x>/%6cake``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = tmp_path / "x"
    attested(lake / "lake")
    shutil.copytree(lake / "lake", lake / "%6cake")
    for data in (lake / "%6cake").rglob("*.parquet"):
        schema = pq.read_schema(data)
        pq.write_table(pa.Table.from_pylist([dict.fromkeys(schema.names)], schema=schema), data)
    return lake


def test_verify_of_a_percent_escaped_file_uri_naming_two_folders_is_refused(tmp_path: Path) -> None:
    lake = _lake_and_tampered_copy(tmp_path)
    rc, doc = verify(f"file://{lake}/%6cake")
    assert rc == 2 and codes(doc) == ["invalid_argument"] and "ambiguous" in doc["errors"][0]["message"], doc
    rc, doc = verify(f"file://{lake}/%6cake@0")
    assert rc == 2 and codes(doc) == ["invalid_argument"], doc
    rc, doc = verify(str(lake / "%6cake"))  # by its path: the copy itself, read as Spark reads it
    assert rc == 1 and set(codes(doc)) == {"size_mismatch"}, doc  # its rewritten file, of another size


@pytest.mark.spark
def test_spark_reads_the_literal_folder_of_a_percent_escaped_file_uri(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    lake = tmp_path / "x"
    write_deltalake(str(lake / "lake"), pa.table({"a": [1, 2]}))
    shutil.copytree(lake / "lake", lake / "%6cake")
    pq.write_table(pa.table({"a": [7, 9]}), sorted((lake / "%6cake").glob("*.parquet"))[0])
    read = sorted(r[0] for r in spark.read.format("delta").load(f"file://{lake}/%6cake").collect())
    assert read == [7, 9]  # the literal folder; delta-rs opens /x/lake for the same string
