"""Re-recording an attested Iceberg table: the data snapshot is attested again, by a new follow-up snapshot on top of
the earlier ones, which supersedes their attestation (as a Delta re-record's property commit does). Never is an
attestation snapshot attested as if it were data — after a clean run, after ``kill -9`` at any step, and when one is
named explicitly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.identity.program import program_identity_sql
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from carriers.iceberg.write import write_content_addressed
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog_properties, rows

REF = f"iceberg://{CATALOG}/ns.t"


def _env(tmp_path: Path) -> dict[str, str]:
    p = catalog_properties(tmp_path)
    env = dict(os.environ)
    env.update({f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE": "sql",
                f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI": p["uri"],
                f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE": p["warehouse"],
                "PYICEBERG_HOME": str(tmp_path)})
    return env


def _attest(tmp_path: Path, *args: str, kill_in: str | None = None) -> subprocess.CompletedProcess[str]:
    """``attest ARGS`` in a fresh process; with ``kill_in`` (``_commit``: after the sidecar is written, before the
    follow-up commit; ``_check_in_force``: after the follow-up commit) the process SIGKILLs itself at that step."""
    code = "import sys\nfrom attest.cli import main\n"
    if kill_in is not None:
        code += ("import os, signal\nfrom carriers.iceberg.carrier import IcebergCarrier\n"
                 "def die(*a, **k):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
                 f"setattr(IcebergCarrier, {kill_in!r}, die)\n")
    code += "sys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env(tmp_path),
                          timeout=300)


def _record(tmp_path: Path, sql: str, *extra: str, kill_in: str | None = None) -> subprocess.CompletedProcess[str]:
    return _attest(tmp_path, "record", REF, "--model", "m", "--sql", sql, *extra, kill_in=kill_in)


def _verify(tmp_path: Path, *extra: str) -> dict[str, object]:
    done = _attest(tmp_path, "verify", *(extra or (REF,)), "--json")
    doc: dict[str, object] = json.loads(done.stdout)
    assert (done.returncode == 0) == doc["passed"], done.stderr
    return doc


def _program_in_force(catalog: SqlCatalog, version: str | None = None) -> str:
    att = IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG).read(version)
    assert att is not None and not att.problems, att
    return str(att.document["program_hash"])


def _follow_ups(table: Table, data: int) -> list[int]:
    """The snapshots on main above ``data``, oldest first (each must be one of our follow-ups)."""
    out = []
    snap = table.current_snapshot()
    while snap is not None and snap.snapshot_id != data:
        out.append(snap.snapshot_id)
        snap = table.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None
    return out[::-1]


@pytest.fixture
def data(table: Table) -> int:
    table.append(rows(0))
    return table.current_snapshot().snapshot_id  # type: ignore[union-attr]


def test_re_record_attests_the_data_snapshot_again(catalog: SqlCatalog, table: Table, data: int,
                                                    tmp_path: Path) -> None:
    first = _record(tmp_path, "select 1")
    assert first.returncode == 0 and first.stdout.startswith(f"RECORDED — {REF} snapshot {data}:"), first
    second = _record(tmp_path, "select 2")
    # Before: exit 1, "superseded: the attestation of snapshot <the first follow-up> ...".
    assert second.returncode == 0 and second.stdout.startswith(f"RECORDED — {REF} snapshot {data}:"), second
    table.refresh()
    f1, f2 = _follow_ups(table, data)
    for follow_up in (f1, f2):
        summary = table.snapshot_by_id(follow_up).summary.additional_properties  # type: ignore[union-attr]
        assert summary[props.KEY_VERSION] == str(data)  # both bind the data snapshot, never a follow-up
    doc = _verify(tmp_path)
    assert doc["passed"] and doc["attested_version"] == str(data), doc
    assert f"attestation for snapshot {data}" in str(doc["verdict"])
    assert _program_in_force(catalog) == program_identity_sql("select 2")  # the newer one supersedes
    # The data snapshot itself: the latest follow-up of it is in force.
    doc = _verify(tmp_path, f"{REF}@{data}")
    assert doc["passed"] and doc["attested_version"] == str(data), doc
    assert f"attested by follow-up snapshot {f2}" in doc["notes"], doc  # type: ignore[operator]
    assert _program_in_force(catalog, str(data)) == program_identity_sql("select 2")
    # As of the first follow-up, the first attestation was in force (what a Delta version in between reads too).
    doc = _verify(tmp_path, f"{REF}@{f1}")
    assert doc["passed"] and doc["attested_version"] == str(data), doc
    assert _program_in_force(catalog, str(f1)) == program_identity_sql("select 1")
    # A third time, then a data commit: the next record attests the new data snapshot.
    assert _record(tmp_path, "select 3").returncode == 0
    table.refresh()
    table.append(rows(3))
    newer = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    done = _record(tmp_path, "select 4")
    assert done.returncode == 0 and done.stdout.startswith(f"RECORDED — {REF} snapshot {newer}:"), done
    doc = _verify(tmp_path)
    assert doc["passed"] and doc["attested_version"] == str(newer), doc


@pytest.mark.slow
@pytest.mark.parametrize("kill_in", ["_commit", "_check_in_force"])
def test_kill_9_during_record_then_a_rerun(catalog: SqlCatalog, table: Table, data: int, tmp_path: Path,
                                           kill_in: str) -> None:
    """``kill -9`` after the sidecar is written and before the follow-up commit, or after the commit and before the
    check that it is in force; then the same command again, and once more: each attests the data snapshot."""
    assert _record(tmp_path, "select 1").returncode == 0
    killed = _record(tmp_path, "select 2", kill_in=kill_in)
    assert killed.returncode == -signal.SIGKILL, killed
    table.refresh()
    assert len(_follow_ups(table, data)) == (2 if kill_in == "_check_in_force" else 1)
    for sql in ("select 2", "select 2"):
        done = _record(tmp_path, sql)
        assert done.returncode == 0 and done.stdout.startswith(f"RECORDED — {REF} snapshot {data}:"), done
    doc = _verify(tmp_path)
    assert doc["passed"] and doc["attested_version"] == str(data), doc
    assert _program_in_force(catalog) == program_identity_sql("select 2")


@pytest.mark.slow
def test_kill_9_of_the_first_record_after_its_commit(catalog: SqlCatalog, table: Table, data: int,
                                                     tmp_path: Path) -> None:
    killed = _record(tmp_path, "select 1", kill_in="_check_in_force")
    assert killed.returncode == -signal.SIGKILL, killed
    assert _verify(tmp_path)["attested_version"] == str(data)  # the commit landed: in force already
    done = _record(tmp_path, "select 1")
    assert done.returncode == 0 and done.stdout.startswith(f"RECORDED — {REF} snapshot {data}:"), done
    doc = _verify(tmp_path)
    assert doc["passed"] and doc["attested_version"] == str(data), doc


@pytest.mark.slow
def test_re_record_keeps_the_inputs_or_says_so(catalog: SqlCatalog, table: Table, data: int, tmp_path: Path) -> None:
    """As on Delta: a re-record that would drop the inputs the attestation in force recorded is refused
    (evidence_dropped) unless --replace — the attestation in force for the data snapshot is found through its
    follow-ups."""
    up = catalog.create_table("ns.up", schema=rows(0).schema)
    up.append(rows(0))
    assert _attest(tmp_path, "record", f"iceberg://{CATALOG}/ns.up", "--model", "up", "--sql", "s").returncode == 0
    assert _record(tmp_path, "select 1", "--input", f"iceberg://{CATALOG}/ns.up").returncode == 0
    done = _attest(tmp_path, "record", REF, "--model", "m", "--sql", "select 1", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["errors"][0]["code"] == "evidence_dropped", done
    done = _record(tmp_path, "select 1", "--replace")
    assert done.returncode == 0 and f"replaces: the attestation of snapshot {data}" in done.stdout, done
    assert _verify(tmp_path)["attested_version"] == str(data)


def test_a_follow_up_named_explicitly_is_never_attested_as_data(table: Table, data: int) -> None:
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    attest_after_write(carrier, model="m", program_hash=PROGRAM)
    follow_up = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    result = carrier.record(model="m", program_hash="2" * 64, version=str(follow_up))
    assert result.attested_version == str(data)
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG))
    assert report.passed and report.attested_version == str(data), report.human()


def test_re_record_of_a_content_addressed_snapshot(table: Table) -> None:
    """The data snapshot carries its own attestation (one-snapshot write); a re-record's follow-up supersedes it,
    for the snapshot itself too (before: superseded, the snapshot's own summary was found first)."""
    written = write_content_addressed(table, rows(0), model="m", program_hash=PROGRAM)
    again = attest_after_write(table, model="m", program_hash="2" * 64)
    assert again.attested_version == written.attested_version
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    for version in (None, written.attested_version):
        att = carrier.read(version)
        assert att is not None and att.document["program_hash"] == "2" * 64 and not att.problems
        report = verify_table(carrier, version=version)
        assert report.passed and report.attested_version == written.attested_version, report.human()


def test_re_record_on_a_branch(table: Table, data: int) -> None:
    """Write-audit-publish: the branch's head is re-attested the same way, its follow-ups on the branch."""
    table.manage_snapshots().create_branch(data, "audit").commit()
    table.append(rows(3), branch="audit")
    head = table.metadata.refs["audit"].snapshot_id
    for program in (PROGRAM, "2" * 64):
        result = attest_after_write(table, model="m", program_hash=program, branch="audit")
        assert result.attested_version == str(head)
    carrier = IcebergCarrier(table, catalog_name=CATALOG, branch="audit")
    report = verify_table(carrier)
    assert report.passed and report.attested_version == str(head), report.human()
    att = carrier.read()
    assert att is not None and att.document["program_hash"] == "2" * 64
    assert table.current_snapshot().snapshot_id == data  # type: ignore[union-attr]  # main untouched


def test_a_data_snapshot_that_expired_under_its_follow_up(catalog: SqlCatalog, table: Table, data: int) -> None:
    """Snapshot expiry removed the data snapshot, its follow-up is current: the follow-up is the oldest snapshot
    left holding those files, so a re-record attests it (the only snapshot it can name), and it verifies."""
    from tests.iceberg.conftest import rewrite_metadata

    attest_after_write(table, model="m", program_hash=PROGRAM)
    follow_up = table.current_snapshot().snapshot_id  # type: ignore[union-attr]

    def expire(doc: dict[str, object]) -> None:
        doc["snapshots"] = [s for s in doc["snapshots"] if s["snapshot-id"] != data]  # type: ignore[attr-defined]
        doc["snapshot-log"] = []
    expired = rewrite_metadata(catalog, table, expire)
    result = attest_after_write(expired, model="m", program_hash="2" * 64)
    assert result.attested_version == str(follow_up)
    report = verify_table(IcebergCarrier(expired, catalog_name=CATALOG))
    assert report.passed and report.attested_version == str(follow_up), report.human()



def test_a_re_recorded_table_after_its_data_snapshot_expired(table: Table, data: int) -> None:
    """Recorded twice (S <- F1 <- F2, both binding S), then S expired by pyiceberg: F2 still verifies (its chain's
    data snapshot expired, the note says so), and a third record attests F1, the oldest snapshot left with S's files."""
    attest_after_write(table, model="m", program_hash=PROGRAM)
    f1 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    attest_after_write(table, model="m", program_hash="2" * 64)
    table.maintenance.expire_snapshots().by_id(data).commit()
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    report = verify_table(carrier)
    assert report.passed and report.attested_version == str(data), report.human()
    assert any("has expired" in n for n in report.notes), report.notes
    result = attest_after_write(table, model="m", program_hash="3" * 64)
    assert result.attested_version == str(f1)
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG))
    assert report.passed and report.attested_version == str(f1), report.human()


def test_a_table_left_by_the_old_re_record_is_repaired_by_recording_again(
        table: Table, data: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a re-record attested the first follow-up F1 as data (its follow-up F2 binds F1) and then reported
    superseded. Such a table verifies as it did (an attestation for F1, which holds S's files); record run again
    attests S on top of them, and the verdict names S."""
    attest_after_write(table, model="m", program_hash=PROGRAM)
    f1 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    with monkeypatch.context() as patched:  # the old navigation: the head is the data snapshot
        patched.setattr(IcebergCarrier, "_data_snapshot", lambda self, snapshot: snapshot)
        assert attest_after_write(table, model="m", program_hash="2" * 64).attested_version == str(f1)
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG))
    assert report.passed and report.attested_version == str(f1), report.human()
    result = attest_after_write(table, model="m", program_hash="3" * 64)
    assert result.attested_version == str(data)
    report = verify_table(IcebergCarrier(table, catalog_name=CATALOG))
    assert report.passed and report.attested_version == str(data), report.human()
