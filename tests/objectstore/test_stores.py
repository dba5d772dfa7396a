"""Delta and Iceberg tables on each real store — S3 (SeaweedFS), GCS (fake-gcs-server), Azure Blob (Azurite):
recorded, verified at the bytes level, tampered with around the carrier, gone stale, audited by prefix, and driven
through the CLI as a user would (storage options for Delta, pyiceberg's environment configuration for Iceberg)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import CarrierError
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.carrier import attest_after_write as iceberg_attest
from tests.delta.conftest import PROGRAM, special_table
from tests.servers.stores import Bucket


def codes(report: Any) -> list[str]:
    return [p.code.value for p in report.errors]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def options_args(bucket: Bucket) -> list[str]:
    return [a for k, v in bucket.storage_options.items() for a in ("--storage-option", f"{k}={v}")]


def parquet_keys(bucket: Bucket, prefix: str) -> list[str]:
    return sorted(k for k in bucket.keys(prefix) if k.endswith(".parquet") and "/metadata/" not in k)


# ---- Delta ---------------------------------------------------------------------------------------------------------
def test_delta_record_verify_tamper_stale(bucket: Bucket) -> None:
    uri = bucket.uri("sales/t")
    write_deltalake(uri, special_table(), partition_by=["p"], storage_options=bucket.storage_options)
    attest_after_write(uri, model="orders", program_hash=PROGRAM, inputs=(), storage_options=bucket.storage_options)
    carrier = DeltaCarrier(uri, storage_options=bucket.storage_options)
    report = verify_table(carrier, level="bytes")
    assert report.passed and report.level == "bytes", report.human()
    # The attestation commit is the carrier's own, published with a conditional PUT (not delta-rs's blanking one).
    log = sorted(k for k in bucket.keys("sales/t/_delta_log/") if k.endswith(".json"))
    assert len(log) == 2
    info = json.loads(bucket.get(log[-1]).splitlines()[0])["commitInfo"]
    assert info["engineInfo"].startswith("recipe-attest/")
    # Re-attesting with fewer carrier keys removes the others instead of blanking them.
    config = DeltaTable(uri, storage_options=bucket.storage_options).metadata().configuration
    assert all(v != props.ABSENT for k, v in config.items() if k.startswith(props.PREFIX))
    data = parquet_keys(bucket, "sales/t/")
    original = bucket.get(data[0])
    bucket.flip_byte(data[0])
    tampered = verify_table(DeltaCarrier(uri, storage_options=bucket.storage_options), level="bytes")
    assert codes(tampered) == ["artifact_hash_mismatch"], tampered.human()
    bucket.put(data[0], original)
    write_deltalake(uri, special_table(), partition_by=["p"], mode="append", storage_options=bucket.storage_options)
    stale = verify_table(DeltaCarrier(uri, storage_options=bucket.storage_options))
    assert codes(stale) == ["stale"], stale.human()
    assert verify_table(DeltaCarrier(uri, storage_options=bucket.storage_options), version=1).passed


def test_delta_checkpoint_hint_too_big_to_read_is_refused(s3: Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    """delta-rs reads _last_checkpoint whole: one of many GiB on a store would fill the verifier's memory. Its size
    is asked first (the limit lowered here: the mechanism, not 64 MiB of upload)."""
    import carriers.delta.guard as delta_guard

    uri = s3.uri("hint/t")
    write_deltalake(uri, special_table(), storage_options=s3.storage_options)
    attest_after_write(uri, model="m", program_hash=PROGRAM, storage_options=s3.storage_options)
    s3.put("hint/t/_delta_log/_last_checkpoint", b'{"version":0,"size":1}' + b" " * 4096)
    monkeypatch.setattr(delta_guard, "LAST_CHECKPOINT_MAX_BYTES", 4096)
    with pytest.raises(CarrierError) as info:
        verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), level="bytes")
    assert info.value.code.value == "table_unreadable" and "_last_checkpoint is 4118 bytes" in str(info.value)
    with pytest.raises(CarrierError):  # recording too
        attest_after_write(uri, model="m", program_hash=PROGRAM, storage_options=s3.storage_options)


def test_delta_cli_record_verify_audit_prefix(bucket: Bucket) -> None:
    for name in ("lake/a", "lake/deeper/b"):
        write_deltalake(bucket.uri(name), special_table(), storage_options=bucket.storage_options)
    env = {k: v for k, v in bucket.env.items() if k == "AZURITE_BLOB_STORAGE_URL"}
    for name in ("lake/a", "lake/deeper/b"):
        done = cli("record", bucket.uri(name), "--model", "m", "--program-hash", PROGRAM, *options_args(bucket),
                   env=env)
        assert done.returncode == 0, done.stderr
    verified = cli("verify", bucket.uri("lake/a"), "--json", *options_args(bucket), env=env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["level"] == "bytes", verified.stdout
    audit = cli("audit", bucket.uri("lake") + "/", "--json", *options_args(bucket), env=env)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    found = json.loads(audit.stdout)
    assert sorted(t["table"] for t in found["tables"]) == [bucket.uri("lake/a"), bucket.uri("lake/deeper/b")]
    assert found["counts"]["VERIFIED"] == 2
    bucket.flip_byte(parquet_keys(bucket, "lake/deeper/b/")[0])
    audit = cli("audit", bucket.uri("lake") + "/", *options_args(bucket), env=env)
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert "NOT VERIFIED" in audit.stdout and "artifact_hash_mismatch" in audit.stdout
    # The credential given on the command line appears nowhere in what the CLI printed.
    if bucket.secret:
        assert bucket.secret not in audit.stdout + audit.stderr + verified.stdout + verified.stderr


# ---- Iceberg (pyiceberg's FileIO on the store, a sqlite catalog beside the test) ----------------------------------
def warehouse(bucket: Bucket, key: str) -> str:
    if bucket.kind == "azure":
        # pyiceberg reads Azure through abfs(s):// (az:// is delta-rs's spelling); its pyarrow FileIO takes the
        # container as the URI's host and the account from adls.account-name.
        return f"abfs://{bucket.name}/{key}"
    return bucket.uri(key)


def catalog_env(bucket: Bucket, name: str, db: Path, wh: str) -> dict[str, str]:
    """pyiceberg's own environment configuration of a catalog (what a user of `attest` sets)."""
    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    env = {f"{prefix}TYPE": "sql", f"{prefix}URI": f"sqlite:///{db}", f"{prefix}WAREHOUSE": wh}
    for key, value in bucket.iceberg_properties.items():
        env[prefix + key.replace(".", "__").replace("-", "_").upper()] = value
    return env


def iceberg_table(bucket: Bucket, tmp_path: Path, name: str = "store") -> tuple[Any, dict[str, str]]:
    from pyiceberg.catalog.sql import SqlCatalog

    wh = warehouse(bucket, "wh")
    db = tmp_path / "catalog.db"
    catalog = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=wh, **bucket.iceberg_properties)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": pa.array(range(50), pa.int64()), "v": [f"r{i}" for i in range(50)]}))
    return table, catalog_env(bucket, name, db, wh)


def test_iceberg_record_verify_tamper_stale(bucket: Bucket, tmp_path: Path) -> None:
    table, _ = iceberg_table(bucket, tmp_path)
    result = iceberg_attest(table, model="m", program_hash=PROGRAM)
    assert result.sidecar is not None and result.sidecar.startswith(warehouse(bucket, "wh"))
    carrier = IcebergCarrier(table)
    report = verify_table(carrier, level="bytes")
    assert report.passed and report.level == "bytes", report.human()
    data = parquet_keys(bucket, "wh/")
    assert data
    bucket.flip_byte(data[0])
    tampered = verify_table(IcebergCarrier(table), level="bytes")
    assert codes(tampered) == ["artifact_hash_mismatch"], tampered.human()
    table.append(pa.table({"id": pa.array([99], pa.int64()), "v": ["x"]}))
    assert codes(verify_table(IcebergCarrier(table))) == ["stale"]


def test_iceberg_cli_through_pyiceberg_configuration(bucket: Bucket, tmp_path: Path) -> None:
    _table, env = iceberg_table(bucket, tmp_path, name="lakecat")
    env.update({k: v for k, v in bucket.env.items() if k == "AZURITE_BLOB_STORAGE_URL"})
    recorded = cli("record", "iceberg://lakecat/ns.t", "--model", "m", "--program-hash", PROGRAM, "--json", env=env)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    verified = cli("verify", "iceberg://lakecat/ns.t", "--json", env=env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["level"] == "bytes", verified.stdout
    audit = cli("audit", "iceberg://lakecat", "--json", env=env)
    assert audit.returncode == 0 and json.loads(audit.stdout)["counts"]["VERIFIED"] == 1, audit.stdout
    if bucket.secret:
        assert bucket.secret not in recorded.stdout + recorded.stderr + verified.stdout + audit.stdout


def test_iceberg_on_az_scheme_is_unsupported_storage(tmp_path: Path) -> None:
    """pyiceberg reads Azure as abfs(s):// or wasb(s)://; a table registered at az:// is refused, naming both."""
    from pyiceberg.catalog.sql import SqlCatalog

    db = tmp_path / "c.db"
    catalog = SqlCatalog("azcat", uri=f"sqlite:///{db}", warehouse=tmp_path.as_uri())
    catalog.create_namespace("ns")
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location) "
                     "VALUES ('azcat', 'ns', 't', 'az://container/t/metadata/v1.metadata.json')")
    env = {"PYICEBERG_CATALOG__AZCAT__TYPE": "sql", "PYICEBERG_CATALOG__AZCAT__URI": f"sqlite:///{db}"}
    done = cli("verify", "iceberg://azcat/ns.t", "--json", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["errors"][0]
    assert error["code"] == "unsupported_storage" and "pyiceberg" in error["message"], error


def test_delta_on_a_scheme_delta_rs_lacks_is_unsupported_storage() -> None:
    done = cli("verify", "wasb://container/t", "--json")
    error = json.loads(done.stdout)["errors"][0]
    assert done.returncode == 2 and error["code"] == "unsupported_storage", done.stdout
    assert "delta-rs" in error["message"] and "wasb://" in error["message"]


@pytest.mark.parametrize("scheme", ["az", "abfs"])
def test_delta_on_azure_under_both_spellings(azure: Bucket, scheme: str) -> None:
    from tests.servers.azurite import ACCOUNT

    uri = f"{scheme}://{azure.name}/t" if scheme == "az" else f"abfs://{azure.name}@{ACCOUNT}.dfs.core.windows.net/t"
    write_deltalake(uri, special_table(), storage_options=azure.storage_options)
    attest_after_write(uri, model="m", program_hash=PROGRAM, storage_options=azure.storage_options)
    assert verify_table(DeltaCarrier(uri, storage_options=azure.storage_options), level="bytes").passed


def test_audit_finds_catalogless_iceberg_folders_and_says_why_it_cannot_verify_them(s3: Bucket, tmp_path: Path) -> None:
    """Local and remote alike: an Iceberg table folder is reported (ERROR unsupported_table), never skipped."""
    _table, _env = iceberg_table(s3, tmp_path)
    write_deltalake(s3.uri("wh/delta_t"), special_table(), storage_options=s3.storage_options)
    audit = cli("audit", s3.uri("wh") + "/", "--json", *options_args(s3))
    rows = {t["table"]: t for t in json.loads(audit.stdout)["tables"]}
    assert audit.returncode == 2, audit.stdout
    assert rows[s3.uri("wh/delta_t")]["outcome"] == "UNATTESTED"
    iceberg_row = rows[s3.uri("wh/ns/t")]
    assert iceberg_row["outcome"] == "ERROR" and iceberg_row["code"] == "unsupported_table", iceberg_row
    assert "catalog" in iceberg_row["verdict"]


def test_iceberg_table_properties_never_steer_where_the_verifier_reads(s3: Bucket, tmp_path: Path) -> None:
    """pyiceberg merges a table's own properties into its FileIO's: one metadata-only commit setting ``s3.endpoint``
    sent the verifier's reads to another server holding the original bytes, while every engine configured by its
    catalog reads the tampered ones — a false VERIFIED. The attacker's server here is a second SeaweedFS."""
    from pyarrow.fs import S3FileSystem
    from pyiceberg.catalog.sql import SqlCatalog

    from tests.servers import seaweed

    table, env = iceberg_table(s3, tmp_path, name="steer")
    iceberg_attest(table, model="m", program_hash=PROGRAM)
    evil = seaweed.start(tmp_path / "evil")
    try:
        evil_fs = S3FileSystem(access_key=seaweed.KEY_ID, secret_key=seaweed.SECRET, region=seaweed.REGION,
                               scheme="http", endpoint_override=evil.endpoint.removeprefix("http://"),
                               allow_bucket_creation=True)
        evil_fs.create_dir(s3.name)
        with table.transaction() as tx:  # a metadata-only commit, as anyone who may write the table can make
            tx.set_properties({"s3.endpoint": evil.endpoint, "DEFAULT_NETLOC": "elsewhere"})
        evil_bucket = Bucket("s3", s3.name, evil_fs, {}, {}, "s3")
        # pyiceberg wrote the new metadata.json through the steered FileIO already (to the attacker's server): the
        # two buckets are made whole, each with the other's objects — the attacker's copy before the tampering.
        mine, theirs = s3.keys(), evil_bucket.keys()
        for key in set(theirs) - set(mine):
            s3.put(key, evil_bucket.get(key))
        for key in set(mine) - set(theirs):
            evil_bucket.put(key, s3.get(key))
        victim = parquet_keys(s3, "wh/")[0]
        s3.flip_byte(victim)
        # The CLI, through pyiceberg's configuration of the catalog (the user's): the real bytes are checked.
        done = cli("verify", "iceberg://steer/ns.t", "--json", env=env)
        out = json.loads(done.stdout)
        assert done.returncode == 1 and [e["code"] for e in out["errors"]] == ["artifact_hash_mismatch"], done.stdout
        assert any("s3.endpoint" in note and "DEFAULT_NETLOC" in note for note in out["notes"]), out["notes"]
        # A table a caller loaded from a catalog of its own (not guarded): its FileIO already follows the table's
        # properties; the carrier reads through one built from the catalog's alone.
        plain = SqlCatalog("steer", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=warehouse(s3, "wh"),
                           **s3.iceberg_properties)
        loaded = plain.load_table("ns.t")
        report = verify_table(IcebergCarrier(loaded), level="bytes")
        assert codes(report) == ["artifact_hash_mismatch"], report.human()
        # Sanity: the attacker's server does hold the original bytes the steered reads would have hashed.
        with evil_fs.open_input_stream(f"{s3.name}/{victim}") as stream:
            assert bytes(stream.read()) != s3.get(victim)
    finally:
        evil.stop()
