"""An Iceberg REST catalog on a real server: SeaweedFS's built-in catalog (its table bucket ``warehouse`` on the same
S3 API), reached through pyiceberg's own configuration as ``iceberg://rest/ns.t``. A follow-up attestation commit
that a catalog refuses (a REST catalog's 409) is retried while the attested snapshot is still current, and never
replayed onto a newer one (tested on a catalog whose bucket admits the sidecar)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest

from attest.errors import SupersededError
from attest.verify.table import verify_table
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.carrier import attest_after_write as iceberg_attest
from tests.delta.conftest import PROGRAM
from tests.servers import seaweed as sw
from tests.servers.stores import new_name

WAREHOUSE = "warehouse"  # the table bucket `weed mini -tableBucket=warehouse` creates


def rest_properties(server: Any) -> dict[str, str]:
    return {"type": "rest", "uri": server.iceberg_uri, "warehouse": f"s3://{WAREHOUSE}",
            "credential": f"{sw.KEY_ID}:{sw.SECRET}", "oauth2-server-uri": f"{server.iceberg_uri}/v1/oauth/tokens",
            "s3.endpoint": server.endpoint,
            "s3.access-key-id": sw.KEY_ID, "s3.secret-access-key": sw.SECRET, "s3.region": sw.REGION}


def rest_env(server: Any, name: str = "rest") -> dict[str, str]:
    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    return {prefix + k.replace(".", "__").replace("-", "_").upper(): v for k, v in rest_properties(server).items()}


@pytest.fixture
def rest_table(seaweed_server: Any) -> Any:
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("rest", **rest_properties(seaweed_server))
    namespace = new_name()
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.orders", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": pa.array(range(20), pa.int64()), "v": [f"r{i}" for i in range(20)]}))
    return table


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_rest_catalog_table_bucket_refusals_are_coded(seaweed_server: Any, rest_table: Any) -> None:
    """Tables are found and opened through the REST API (pyiceberg's environment configuration); SeaweedFS (like AWS
    S3 Tables) admits only the table's own files in a table bucket, so the sidecar cannot be written there nor a
    missing pointer be told from a forbidden one: coded, credential-free refusals, not tracebacks and not verdicts
    (docs/object-stores.md, "REST catalogs")."""
    env = rest_env(seaweed_server)
    ident = ".".join(rest_table.name()[-2:])
    ref = f"iceberg://rest/{ident}"
    # Even a read meets the policy: a HEAD on a key that is not there (the detached pointer a verifier looks for) is
    # refused (403), so nobody can tell whether an attestation exists: a coded "cannot check", never UNATTESTED.
    verified = cli("verify", ref, "--json", env=env)
    assert verified.returncode == 2, verified.stdout + verified.stderr
    error = json.loads(verified.stdout)["errors"][0]
    assert error["code"] == "table_unreadable" and "refused" in error["message"] and "warehouse" in error["message"]
    audit = cli("audit", "iceberg://rest/" + ident.split(".")[0], "--json", env=env)
    found = json.loads(audit.stdout)  # discovery goes through the REST API: the table is found and reported
    assert [t["table"] for t in found["tables"]] == [ref] and found["counts"]["ERROR"] == 1, audit.stdout
    assert found["skipped"] == [], audit.stdout  # no views, and none that could not be listed
    recorded = cli("record", ref, "--model", "orders", "--program-hash", PROGRAM, "--json", env=env)
    assert recorded.returncode == 2, recorded.stdout + recorded.stderr
    error = json.loads(recorded.stdout)["errors"][0]
    assert error["code"] == "table_unreadable" and "refused" in error["message"], error
    assert "Traceback" not in recorded.stderr
    rest_table.refresh()
    assert len(rest_table.metadata.snapshots) == 1  # nothing committed through the catalog
    assert sw.SECRET not in "".join(d.stdout + d.stderr for d in (verified, audit, recorded))


@pytest.fixture
def s3_table(s3: Any, tmp_path: Any) -> Any:
    """A table on the S3 server behind a sqlite catalog: follow-up snapshots can be written there."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("retrycat", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=s3.uri("wh"),
                         **s3.iceberg_properties)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.orders", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": pa.array(range(20), pa.int64()), "v": [f"r{i}" for i in range(20)]}))
    return table


def test_a_refused_commit_is_retried_while_the_snapshot_is_current(s3_table: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    rest_table = s3_table
    from pyiceberg.exceptions import CommitFailedException

    catalog = rest_table.catalog
    real = catalog.commit_table
    calls = {"n": 0}

    def refuse_twice(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= 2:  # as a REST catalog answers 409 when another writer changed the metadata first
            raise CommitFailedException("CommitFailedException: Requirement failed: simulated concurrent update")
        return real(*args, **kwargs)

    monkeypatch.setattr(catalog, "commit_table", refuse_twice)
    result = iceberg_attest(rest_table, model="orders", program_hash=PROGRAM)
    assert calls["n"] == 3 and result.attested_version is not None
    monkeypatch.setattr(catalog, "commit_table", real)
    assert verify_table(IcebergCarrier(rest_table), level="bytes").passed


def test_a_concurrent_data_commit_supersedes_instead_of_retrying(s3_table: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from pyiceberg.exceptions import CommitFailedException

    rest_table = s3_table
    other = rest_table.catalog.load_table("ns.orders")
    catalog = rest_table.catalog
    real = catalog.commit_table

    def another_writer_first(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(catalog, "commit_table", real)
        other.append(pa.table({"id": pa.array([7], pa.int64()), "v": ["other"]}))  # a data commit lands first
        raise CommitFailedException("CommitFailedException: Requirement failed: branch main has changed")

    monkeypatch.setattr(catalog, "commit_table", another_writer_first)
    with pytest.raises(SupersededError):
        iceberg_attest(rest_table, model="orders", program_hash=PROGRAM)
    rest_table.refresh()
    current = rest_table.current_snapshot()
    assert current is not None and current.summary is not None
    assert "recipe_attest.binding.version" not in current.summary.additional_properties  # nothing replayed
