"""Format-v3 detached attestations kept in a real Hive Metastore (Hive 3.1.3's standalone metastore, tests/servers/
hive_metastore.py), reached as ``iceberg://hive/<db>.<table>`` through pyiceberg's environment configuration, as a
user would (carriers/iceberg/hive_keep.py, docs/maintenance.md). Before: nothing was committed (``not_kept``), and
once orphan removal deleted the pointer the table read UNATTESTED.

pyiceberg 0.12 writes no v3 metadata: the rows go in at v2 through pyiceberg's HiveCatalog, then the table is upgraded
by a hand commit (the next metadata file, the metastore's ``metadata_location`` swapped), as the SQL-catalog tests do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from attest.verify.table import verify_table
from carriers.iceberg.carriage import POINTER_DIR, RETAIN_TAG
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.hive_keep import HiveKeeper
from carriers.iceberg.json_keep import CHANGED
from tests.delta.conftest import PROGRAM
from tests.servers.stores import new_name

CATALOG = "hive"
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def catalog(server: Any, **extra: str) -> Any:
    from pyiceberg.catalog import load_catalog

    return load_catalog(CATALOG, type="hive", uri=server.uri, warehouse=server.warehouse.as_uri(), **extra)


def local(location: str) -> Path:
    return Path(urlparse(location).path)


def hms_parameters(cat: Any, ident: str) -> dict[str, str]:
    database, name = ident.split(".")
    with cat._client as client:
        return dict(client.get_table(dbname=database, tbl_name=name).parameters)


def hand_commit(cat: Any, ident: str, edit: Callable[[dict[str, Any]], None]) -> str:
    """A commit as another writer makes it: the edited metadata in the next numbered file, the previous one in the
    metadata log, the metastore table's ``metadata_location`` moved to it (thrift ``alter_table``)."""
    table = cat.load_table(ident)
    base = table.metadata_location
    doc = json.loads(local(base).read_text())
    edit(doc)
    doc["metadata-log"] = [*doc.get("metadata-log", []), {"timestamp-ms": doc["last-updated-ms"],
                                                          "metadata-file": base}]
    doc["last-updated-ms"] += 1
    name = f"{int(base.rsplit('/', 1)[1].split('-', 1)[0]) + 1:05d}-{uuid.uuid4()}.metadata.json"
    local(base).with_name(name).write_text(json.dumps(doc))
    new = f"{base.rsplit('/', 1)[0]}/{name}"
    database, table_name = ident.split(".")
    with cat._client as client:
        hive = client.get_table(dbname=database, tbl_name=table_name)
        assert hive.parameters["metadata_location"] == base
        hive.parameters = {**hive.parameters, "metadata_location": new, "previous_metadata_location": base}
        client.alter_table(database, table_name, hive)
    return new


def v3_table(cat: Any) -> tuple[str, int, int]:
    """A new table with two appends (pyiceberg, v2), upgraded to format v3 by a hand commit; its identifier, the
    older snapshot and the current one."""
    namespace = new_name()
    cat.create_namespace(namespace)
    ident = f"{namespace}.orders"
    table = cat.create_table(ident, schema=SCHEMA)
    table.append(pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"a{i}" for i in range(10)]}))
    older = table.current_snapshot().snapshot_id
    table.append(pa.table({"id": pa.array(range(10, 20), pa.int64()), "v": [f"b{i}" for i in range(10)]}))
    current = table.current_snapshot().snapshot_id
    hand_commit(cat, ident, lambda d: d.update({"format-version": 3, "next-row-id": 0}))
    assert cat.load_table(ident).metadata.format_version == 3
    return ident, older, current


def cli(server: Any, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    prefix = f"PYICEBERG_CATALOG__{CATALOG.upper()}__"
    env = {**os.environ, f"{prefix}TYPE": "hive", f"{prefix}URI": server.uri,
           f"{prefix}WAREHOUSE": server.warehouse.as_uri(), "PYICEBERG_HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def test_record_keeps_a_v3_attestation_in_the_metastore_through_orphan_removal_and_expiry(
        hive_metastore_server: Any, tmp_path: Path) -> None:
    """`attest record` (the CLI) on a v3 table of a Hive Metastore: one new metadata file (the next version) holding
    the attested snapshot's statistics entry and the retention tag and otherwise the very members read; the
    metastore's ``metadata_location`` moved to it, ``previous_metadata_location`` the file read; no warning.
    pyiceberg reads it back through the HiveCatalog. After what orphan removal and expiry do (every file under
    recipe_attest/ but the registered Puffin file deleted, the older snapshot expired) it verifies at bytes level."""
    cat = catalog(hive_metastore_server)
    ident, older, attested = v3_table(cat)
    old_location = cat.load_table(ident).metadata_location
    old_doc = json.loads(local(old_location).read_text())
    ref = f"iceberg://{CATALOG}/{ident}"

    done = cli(hive_metastore_server, tmp_path, "record", ref, "--model", "orders", "--program-hash", PROGRAM,
               "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["attested_version"] == str(attested) and "warnings" not in out, done.stdout
    assert "not_kept" not in done.stderr and "not registered" not in done.stderr, done.stderr

    parameters = hms_parameters(cat, ident)
    location = parameters["metadata_location"]
    assert parameters["previous_metadata_location"] == old_location != location
    old_name, name = old_location.rsplit("/", 1)[1], location.rsplit("/", 1)[1]
    assert name.startswith(f"{int(old_name.split('-', 1)[0]) + 1:05d}-") and name.endswith(".metadata.json")
    assert local(location).parent == local(old_location).parent
    new_doc = json.loads(local(location).read_text())
    assert {k: v for k, v in new_doc.items() if k not in CHANGED} == \
        {k: v for k, v in old_doc.items() if k not in CHANGED}
    assert new_doc["refs"] == {**old_doc["refs"], RETAIN_TAG: {"type": "tag", "snapshot-id": attested}}

    fresh = catalog(hive_metastore_server).load_table(ident)  # a new client reads what the metastore names
    assert fresh.metadata_location == location and fresh.metadata.format_version == 3
    assert [s.snapshot_id for s in fresh.snapshots()] == [older, attested]  # metadata only: no snapshot added
    [stats] = fresh.metadata.statistics
    assert stats.snapshot_id == attested and "/metadata/recipe_attest/" in stats.statistics_path
    assert fresh.metadata.refs[RETAIN_TAG].snapshot_id == attested
    assert fresh.scan().to_arrow().num_rows == 20

    # orphan removal: every file under recipe_attest/ that the table metadata does not name is deleted
    kept = local(stats.statistics_path)
    removed = [p for p in kept.parent.rglob("*") if p.is_file() and p != kept]
    assert any(POINTER_DIR in str(p) for p in removed)
    for path in removed:
        path.unlink()
    # expiry of the older snapshot: out of the metadata (a commit as Java's expiry makes), its manifest list deleted
    older_list = next(s.manifest_list for s in fresh.snapshots() if s.snapshot_id == older)

    def expire(doc: dict[str, Any]) -> None:
        doc["snapshots"] = [s for s in doc["snapshots"] if s["snapshot-id"] != older]
        doc["snapshot-log"] = [e for e in doc.get("snapshot-log", []) if e["snapshot-id"] != older]

    hand_commit(cat, ident, expire)
    local(older_list).unlink()
    expired = catalog(hive_metastore_server).load_table(ident)
    assert [s.snapshot_id for s in expired.snapshots()] == [attested]
    assert expired.metadata.refs[RETAIN_TAG].snapshot_id == attested

    verified = cli(hive_metastore_server, tmp_path, "verify", ref, "--level", "bytes", "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["passed"] and report["level"] == "bytes" and report["files_checked"] == 2, report
    assert report["attested_version"] == str(attested)


def test_a_commit_between_read_and_swap_is_kept_and_the_keep_retried(hive_metastore_server: Any) -> None:
    """Another writer commits between our read of the metadata and our swap: the metastore names its file, not the
    one we read, so nothing is altered; the keep is planned again on its metadata and lands on top. Its change stays;
    the file of the lost attempt is left in place, referenced by nothing."""
    cat = catalog(hive_metastore_server)
    ident, _older, _current = v3_table(cat)
    raced: list[str] = []

    def other_writer(_location: str) -> None:
        if not raced:
            raced.append(hand_commit(cat, ident, lambda d: d["properties"].update({"other.writer": "1"})))

    table = cat.load_table(ident)
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    carrier.detached_keeper = keeper = HiveKeeper(table, before_swap=other_writer)
    attested = int(str(carrier.record(model="orders", program_hash=PROGRAM).attested_version))
    assert carrier.kept_note is None
    assert len(keeper.written) == 2 and all(local(p).exists() for p in keeper.written)
    parameters = hms_parameters(cat, ident)
    assert parameters["metadata_location"] == keeper.written[1]
    assert parameters["previous_metadata_location"] == raced[0]
    fresh = cat.load_table(ident)
    assert fresh.metadata.properties.get("other.writer") == "1"  # the other commit is kept
    assert [s.snapshot_id for s in fresh.metadata.statistics] == [attested]
    assert fresh.metadata.refs[RETAIN_TAG].snapshot_id == attested
    assert keeper.written[0] not in {e.metadata_file for e in fresh.metadata.metadata_log}


def test_losing_every_race_warns_commit_conflict_and_deletes_nothing(hive_metastore_server: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that commits before every one of our swaps: the bounded retries end in a ``commit_conflict``
    warning; every file we wrote is still there, the metastore names the other writer's last commit, and the
    attestation (its pointer) stands."""
    from carriers.iceberg import commit

    monkeypatch.setattr(commit, "COMMIT_BACKOFF_S", 0.0)
    cat = catalog(hive_metastore_server)
    ident, _older, _current = v3_table(cat)
    theirs: list[str] = []

    def other_writer(_location: str) -> None:
        theirs.append(hand_commit(cat, ident, lambda d: d["properties"].update({"n": str(len(theirs))})))

    table = cat.load_table(ident)
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    carrier.detached_keeper = keeper = HiveKeeper(table, before_swap=other_writer)
    carrier.record(model="orders", program_hash=PROGRAM)
    assert carrier.kept_note is not None and carrier.kept_note.startswith("commit_conflict: "), carrier.kept_note
    assert "nothing was deleted" in carrier.kept_note
    assert len(keeper.written) == commit.COMMIT_RETRIES + 1 and all(local(p).exists() for p in keeper.written)
    assert hms_parameters(cat, ident)["metadata_location"] == theirs[-1]
    fresh = cat.load_table(ident)
    assert not fresh.metadata.statistics and RETAIN_TAG not in fresh.metadata.refs
    assert verify_table(IcebergCarrier(fresh, catalog_name=CATALOG)).passed


def test_a_table_lock_held_by_another_writer_is_waited_for_within_the_bound_then_warned(
        hive_metastore_server: Any) -> None:
    """Another writer holds the metastore's exclusive table lock: the keep waits no longer than the catalog's
    lock-check bound, then warns ``commit_conflict``; nothing is altered, and its own waiting lock request is
    withdrawn (the table's only lock is the other writer's; once that is released, none is left)."""
    from hive_metastore.ttypes import LockState, ShowLocksRequest, UnlockRequest

    cat = catalog(hive_metastore_server, **{"lock-check-retries": "2", "lock-check-min-wait-time": "0.05",
                                            "lock-check-max-wait-time": "0.2"})
    ident, _older, _current = v3_table(cat)
    database, name = ident.split(".")
    table = cat.load_table(ident)
    before = table.metadata_location
    holder = catalog(hive_metastore_server)
    with holder._client as client:
        held = client.lock(holder._create_lock_request(database, name))
    assert held.state == LockState.ACQUIRED
    try:
        carrier = IcebergCarrier(table, catalog_name=CATALOG)
        started = time.monotonic()
        carrier.record(model="orders", program_hash=PROGRAM)
        assert time.monotonic() - started < 60
        note = carrier.kept_note
        assert note is not None and note.startswith("commit_conflict: ") and "lock was not granted" in note, note
        assert hms_parameters(cat, ident)["metadata_location"] == before
        with holder._client as client:
            locks = client.show_locks(ShowLocksRequest(dbname=database, tablename=name)).locks or []
        assert [lock.lockid for lock in locks] == [held.lockid]
    finally:
        with holder._client as client:
            client.unlock(UnlockRequest(lockid=held.lockid))
    with holder._client as client:
        assert not client.show_locks(ShowLocksRequest(dbname=database, tablename=name)).locks


def test_the_metastore_jars_are_pinned() -> None:
    """Every jar of the metastore's classpath is pinned (tests/servers/hive_metastore/jars.sha256), the versions the
    pom names among them; the pins are checked as the REST server's are (test_rest_apache.py)."""
    from tests.servers import tools

    pins = tools._pins(tools.HIVE_METASTORE_DIR)
    assert {"hive-standalone-metastore-3.1.3.jar", "hadoop-common-3.3.6.jar", "hadoop-hdfs-3.3.6.jar",
            "derby-10.14.2.0.jar", "libthrift-0.9.3.jar"} <= set(pins), sorted(pins)[:5]
    assert len(pins) == 155 and all(len(d) == 64 for d in pins.values())
