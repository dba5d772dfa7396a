"""The retention tag (issue 32, item 3; docs/iceberg.md "Expiry and tags"): every attestation commit moves the tag
``recipe-attest`` to the snapshot carrying it, in the same metadata commit; expiring every older snapshot after honest
rewrites then never loses the attestation: the current rows are judged against the attested version's content digest.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.errors import UnsupportedTableError
from attest.verify.table import verify_table
from carriers.iceberg.carriage import RETAIN_TAG, retain_tag_name
from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
from tests.iceberg.conftest import CATALOG, PROGRAM, rows
from tests.iceberg.rewrites import carrier_of, replace, with_ids


def expire_all(catalog: SqlCatalog) -> Table:
    """pyiceberg's `expire_snapshots().older_than(now)`: every snapshot but the current one and those refs name."""
    table = catalog.load_table("ns.t")
    time.sleep(0.01)
    table.maintenance.expire_snapshots().older_than(
        __import__("datetime").datetime.now(__import__("datetime").timezone.utc)).commit()
    return catalog.load_table("ns.t")


def attested_table(catalog: SqlCatalog, table: Table) -> tuple[Table, str]:
    table.append(rows(0))
    table.append(rows(3))
    attested = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    assert attested is not None
    return catalog.load_table("ns.t"), attested


def tag_of(table: Table) -> int | None:
    ref = table.metadata.refs.get(RETAIN_TAG)
    return None if ref is None else ref.snapshot_id


def test_every_attestation_commit_moves_the_one_tag_to_its_carrier(catalog: SqlCatalog, table: Table) -> None:
    table, attested = attested_table(catalog, table)
    follow_up = table.current_snapshot()
    assert follow_up is not None and str(follow_up.parent_snapshot_id) == attested
    assert tag_of(table) == follow_up.snapshot_id
    assert table.metadata.refs[RETAIN_TAG].snapshot_ref_type.value == "tag"
    # The tag is set in the attestation's own metadata commit: the metadata that added the follow-up names it.
    log = table.metadata.metadata_log
    assert log, "the attestation is a commit after the appends"
    table.append(rows(6))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    assert tag_of(table) == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert [name for name in table.metadata.refs if name != "main"] == [RETAIN_TAG]


@pytest.fixture(params=[2, 1], ids=["v2", "v1"])
def any_table(request: pytest.FixtureRequest, catalog: SqlCatalog) -> Table:
    """A table of format version 2, or 1: no sequence numbers, so after pyiceberg's expiry (which clears the parent
    of the snapshots it keeps) only the oldest snapshot's summary tells that older ones expired (carriage.py
    ``_expired_below``). Was, for v1: unattested, the tag never consulted."""
    return catalog.create_table("ns.t", schema=rows(0).schema, properties={"format-version": str(request.param)})


def cut_root(table: Table) -> None:
    """The current snapshot's ancestry ends at a snapshot naming no parent (pyiceberg's expiry cleared it), with the
    sequence number of the table's format: 0 for v1 (pyiceberg's reading of none), more than 1 for v2."""
    snap = table.current_snapshot()
    while snap is not None and snap.parent_snapshot_id is not None:
        snap = table.snapshot_by_id(snap.parent_snapshot_id)
    assert snap is not None and snap.parent_snapshot_id is None
    assert (snap.sequence_number or 0) == 0 if table.metadata.format_version == 1 else snap.sequence_number > 1


def test_rewrites_then_every_older_snapshot_expired_verifies_by_content(catalog: SqlCatalog, any_table: Table) -> None:
    """The issue's sequence without `attest record` in between: two honest rewrites, then expiry of everything older
    than now. Was: unattested ("ancestry ends at expired snapshots")."""
    table, attested = attested_table(catalog, any_table)
    tagged = tag_of(table)
    table = replace(catalog, table)
    table = replace(catalog, table)
    table = expire_all(catalog)
    ids = {s.snapshot_id for s in table.snapshots()}
    assert tagged in ids and int(attested) not in ids and len(ids) == 2
    cut_root(table)
    report = verify_table(carrier_of(table))
    text = report.human()
    assert report.passed, text
    assert report.content_check is not None and report.content_check.passed
    assert "has expired" in text and f"snapshot {attested}" in text and RETAIN_TAG in text, text
    # `attest record` on it writes a carry-forward (the same program), moving the tag: the next expiry frees the
    # attested files, and the one snapshot left verifies at bytes level.
    result = attest_after_write(table, model="other", program_hash="2" * 64)
    assert result.continues is not None
    table = expire_all(catalog)
    assert tag_of(table) == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert len(table.snapshots()) == 1
    report = verify_table(carrier_of(table))
    assert report.passed and report.level == "bytes" and report.content_check is None, report.human()
    state = carrier_of(table).state()
    assert state.attestation is not None and state.attestation.document["program_hash"] == PROGRAM


def test_other_rows_after_an_expired_history_are_stale_never_verified(catalog: SqlCatalog,
                                                                      any_table: Table) -> None:
    """A `replace` that changed the rows, then expiry: the rows are not the attested ones, and what the expired
    snapshots did is unknown: stale. `attest record` attests it as a data change (its own program)."""
    table, attested = attested_table(catalog, any_table)
    table = replace(catalog, table, [with_ids(pa.concat_tables([rows(0), rows(3)]).slice(0, 5), [1, 2])])
    table = replace(catalog, table)
    table = expire_all(catalog)
    cut_root(table)
    report = verify_table(carrier_of(table))
    assert not report.passed and [e.code.value for e in report.errors] == ["stale"], report.human()
    # The verdict says what happened (was: "files were rewritten without a declared data change after snapshot S
    # (compaction): …", the generic rewrite sentence, though nothing the verifier saw rewrote files).
    current = table.current_snapshot()
    assert current is not None
    assert report.errors[0].message == (
        f"the history since snapshot {attested} expired, and the current rows (snapshot {current.snapshot_id}) differ "
        f"from those attested at snapshot {attested} (the current data files hold 5 rows, fewer than the 6 of the "
        "attested data files (2 → 1 files)): a data change cannot be excluded"), report.human()
    assert "rewritten" not in report.human()
    result = attest_after_write(table, model="other", program_hash="2" * 64)
    assert result.continues is None
    report = verify_table(carrier_of(catalog.load_table("ns.t")))
    assert report.passed and report.level == "bytes", report.human()


def test_a_data_commit_left_after_the_cut_is_stale(catalog: SqlCatalog, any_table: Table) -> None:
    """Rows appended, then every older snapshot expired but the append kept (retain_last 2): a snapshot left says
    data changed."""
    table, _ = attested_table(catalog, any_table)
    table = replace(catalog, table)
    table.append(rows(9))
    table = catalog.load_table("ns.t")
    keep = table.current_snapshot()
    assert keep is not None and keep.parent_snapshot_id is not None
    table.maintenance.expire_snapshots().by_ids(
        [s.snapshot_id for s in table.snapshots()
         if s.snapshot_id not in (keep.snapshot_id, keep.parent_snapshot_id, tag_of(table))]).commit()
    table = catalog.load_table("ns.t")
    cut_root(table)
    report = verify_table(carrier_of(table))
    assert not report.passed and [e.code.value for e in report.errors] == ["stale"], report.human()
    assert "data changed after the attested snapshot" in report.errors[0].message, report.human()


def test_a_v1_table_s_first_snapshot_never_consults_the_tag(catalog: SqlCatalog) -> None:
    """Format v1 has no sequence number to tell a table's first snapshot from one whose parent expiry cleared: only a
    summary saying the table held data before counts. A first snapshot (an append of everything it holds) whose
    rows are those the tag's attestation attests, on a lineage of its own (the table's `main` set back to it), is
    not judged through the tag: unattested, never "history since … expired"."""
    table = catalog.create_table("ns.t", schema=rows(0).schema, properties={"format-version": "1"})
    table.append(rows(0))
    table = catalog.load_table("ns.t")
    first = table.current_snapshot()
    assert first is not None
    table.delete("id >= 0")  # empty, then the same rows again, attested
    catalog.load_table("ns.t").append(rows(0))
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    assert tag_of(table) == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.manage_snapshots().set_current_snapshot(first.snapshot_id).commit()
    table = catalog.load_table("ns.t")
    assert table.current_snapshot().snapshot_id == first.snapshot_id  # type: ignore[union-attr]
    report = verify_table(carrier_of(table))
    assert [e.code.value for e in report.errors] == ["unattested"], report.human()
    assert RETAIN_TAG not in report.human(), report.human()


def test_without_the_tag_expiry_still_loses_it(catalog: SqlCatalog, table: Table) -> None:
    """The opt-out: no tag, no retention cost, and after the same sequence the table is unattested with a note."""
    table.append(rows(0))
    table.append(rows(3))
    attest_after_write(table, model="orders", program_hash=PROGRAM, retain_tag=False)
    table = catalog.load_table("ns.t")
    assert RETAIN_TAG not in table.metadata.refs
    table = replace(catalog, table)
    table = expire_all(catalog)
    report = verify_table(carrier_of(table))
    assert [e.code.value for e in report.errors] == ["unattested"] and "expired" in report.human(), report.human()


@pytest.mark.parametrize("kind", ["branch", "tag"])
def test_a_ref_of_that_name_the_user_owns_is_never_moved(catalog: SqlCatalog, table: Table, kind: str) -> None:
    table.append(rows(0))
    table = catalog.load_table("ns.t")
    first = table.current_snapshot()
    assert first is not None
    manage = table.manage_snapshots()
    (manage.create_branch if kind == "branch" else manage.create_tag)(first.snapshot_id, RETAIN_TAG).commit()
    table.append(rows(3))
    before = catalog.load_table("ns.t").metadata
    with pytest.raises(UnsupportedTableError, match="did not set") as raised:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    assert raised.value.code.value == "unsupported_table" and "--no-retain-tag" in raised.value.message
    after = catalog.load_table("ns.t").metadata
    assert after.refs == before.refs and after.current_snapshot_id == before.current_snapshot_id
    # Opted out, it attests (and leaves the user's ref alone).
    attest_after_write(table, model="orders", program_hash=PROGRAM, retain_tag=False)
    assert catalog.load_table("ns.t").metadata.refs[RETAIN_TAG] == before.refs[RETAIN_TAG]


def test_a_detached_attestation_sets_no_tag(catalog: SqlCatalog, table: Table) -> None:
    """Detached mode commits nothing to the table metadata, so it sets no tag either (tag_attested does, on demand)."""
    table.append(rows(0))
    IcebergCarrier(table, catalog_name=CATALOG, detached=True).record(model="orders", program_hash=PROGRAM)
    assert RETAIN_TAG not in catalog.load_table("ns.t").metadata.refs


def test_a_second_detached_record_says_the_snapshot_is_already_attested(catalog: SqlCatalog, table: Table) -> None:
    """A detached attestation is written once per snapshot: a second record says so (already_attested, exit 1),
    writes nothing, and the first verifies as before (was: a bare sidecar_mismatch from the write-once pointer)."""
    from attest.errors import AttestError

    table.append(rows(0))
    IcebergCarrier(table, catalog_name=CATALOG, detached=True).record(model="orders", program_hash=PROGRAM)
    metadata = catalog.load_table("ns.t").metadata_location
    with pytest.raises(AttestError) as err:
        IcebergCarrier(catalog.load_table("ns.t"), catalog_name=CATALOG, detached=True).record(
            model="orders", program_hash=PROGRAM)
    assert err.value.code is not None and err.value.code.value == "already_attested", err.value
    assert "already attested" in str(err.value)
    assert catalog.load_table("ns.t").metadata_location == metadata
    assert verify_table(carrier_of(catalog.load_table("ns.t"))).passed


def test_a_content_addressed_write_tags_its_own_snapshot(catalog: SqlCatalog, table: Table) -> None:
    """write_content_addressed carries the attestation in the data snapshot itself: the tag names that snapshot. Its
    attestation binds no content digest, so after a cut history it stays as a rewrite without one does: compacted,
    with the notes (was: unattested)."""
    from carriers.iceberg.write import write_content_addressed

    result = write_content_addressed(table, rows(0), model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    current = table.current_snapshot()
    assert current is not None and tag_of(table) == int(str(result.attested_version)) == current.snapshot_id
    table = replace(catalog, replace(catalog, table))
    table = expire_all(catalog)
    report = verify_table(carrier_of(table))
    assert [e.code.value for e in report.errors] == ["compacted"], report.human()
    assert "binds no content digest" in report.human() and RETAIN_TAG in report.human(), report.human()


def test_record_no_retain_tag_on_the_command_line(catalog: SqlCatalog, table: Table, iceberg_env: str,
                                                  tmp_path: object) -> None:
    """`attest record --no-retain-tag` sets no tag; without the flag the record sets it; on a Delta table the flag is
    an argument error."""
    import io
    import json
    from contextlib import redirect_stdout
    from pathlib import Path

    from attest.cli import main

    def record(*extra: str) -> tuple[int, dict[str, object]]:
        out = io.StringIO()
        with redirect_stdout(out):
            rc = main(["record", *extra, "--model", "orders", "--program-hash", PROGRAM, "--json"])
        return rc, json.loads(out.getvalue())

    table.append(rows(0))
    rc, doc = record(f"iceberg://{CATALOG}/ns.t", "--no-retain-tag")
    assert rc == 0, doc
    assert RETAIN_TAG not in catalog.load_table("ns.t").metadata.refs
    table.append(rows(3))
    rc, doc = record(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0, doc
    table = catalog.load_table("ns.t")
    assert tag_of(table) == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    from deltalake import write_deltalake

    delta = Path(str(tmp_path)) / "delta"
    write_deltalake(str(delta), rows(0))
    rc, doc = record(str(delta), "--no-retain-tag")
    assert rc == 2 and "--no-retain-tag applies to Iceberg" in json.dumps(doc), doc


@pytest.mark.parametrize(("value", "expected"), [(None, True), ("true", True), ("false", False), ("FALSE", False)])
def test_the_hook_reads_the_opt_out_from_the_spark_conf(value: str | None, expected: bool) -> None:
    from types import SimpleNamespace

    from carriers.spark.hook import RETAIN_TAG_CONF, _retain_tag

    confs = {} if value is None else {RETAIN_TAG_CONF: value}
    spark = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default: confs.get(key, default)))
    assert _retain_tag(spark) is expected


def branch_tag(table: Table, branch: str) -> int | None:
    ref = table.metadata.refs.get(retain_tag_name(branch))
    return None if ref is None else ref.snapshot_id


def two_branches(catalog: SqlCatalog, table: Table) -> tuple[Table, str, str]:
    """main attested (rows 0–2), then a branch `audit` forked from it with rows 3–5 appended and attested there
    (`record --branch audit`); (the table, main's attested snapshot, audit's)."""
    table.append(rows(0))
    main_attested = attest_after_write(table, model="orders", program_hash=PROGRAM).attested_version
    table = catalog.load_table("ns.t")
    main_tagged = tag_of(table)
    assert main_attested is not None and main_tagged == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.manage_snapshots().create_branch(main_tagged, "audit").commit()
    table = catalog.load_table("ns.t")
    table.append(rows(3), branch="audit")
    audit_attested = attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM,
                                        branch="audit").attested_version
    table = catalog.load_table("ns.t")
    assert audit_attested is not None
    # The branch's attestation moved the branch's own tag, not main's: main's attested snapshot stays retained.
    assert tag_of(table) == main_tagged, "an attestation of a branch moved main's retention tag"
    assert branch_tag(table, "audit") == table.metadata.refs["audit"].snapshot_id
    assert retain_tag_name("audit") == f"{RETAIN_TAG}@audit" and retain_tag_name("main") == RETAIN_TAG
    return table, main_attested, audit_attested


def test_two_branches_attested_both_survive_expiry(catalog: SqlCatalog, table: Table) -> None:
    """One retention tag per branch (was: one per table, moved by `record --branch`, so main's attested snapshot lost
    its retention and main's cut history was judged against the branch's rows: stale). Honest rewrites on both
    branches, then every older snapshot expired: each verifies by content through its own tag, whether the branch is
    read by a carrier opened on it or named as a version."""
    table, main_attested, audit_attested = two_branches(catalog, table)
    tags = {tag_of(table), branch_tag(table, "audit")}
    for _ in range(2):
        table = replace(catalog, table)
        table = replace(catalog, table, branch="audit")
    table = expire_all(catalog)
    ids = {s.snapshot_id for s in table.snapshots()}
    assert tags <= ids and int(main_attested) not in ids and int(audit_attested) not in ids and len(ids) == 4
    main = verify_table(carrier_of(table))
    assert main.passed and main.content_check is not None, main.human()
    assert main.attested_version == main_attested and f"kept by the tag {RETAIN_TAG!r}" in main.human()
    for report in (verify_table(IcebergCarrier(table, catalog_name=CATALOG, branch="audit")),
                   verify_table(carrier_of(table), version="audit")):
        assert report.passed and report.content_check is not None, report.human()
        assert report.attested_version == audit_attested, report.human()
        assert f"kept by the tag {retain_tag_name('audit')!r}" in report.human(), report.human()
    # The next attestation of each branch moves only its own tag.
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")
    table = catalog.load_table("ns.t")
    assert branch_tag(table, "audit") == table.metadata.refs["audit"].snapshot_id and tag_of(table) in tags


def test_publish_moves_mains_tag_to_the_published_attestation(catalog: SqlCatalog, table: Table) -> None:
    """Write-audit-publish: main fast-forwarded to the attested branch head takes the branch's attestation as its
    own for retention too (main's tag moves, in the publish's commit), so main's history since then can expire."""
    from carriers.iceberg.publish import publish

    table, _main_attested, audit_attested = two_branches(catalog, table)
    audit_tagged = branch_tag(table, "audit")
    result = publish(carrier_of(table), "audit")
    table = catalog.load_table("ns.t")
    assert result.published and tag_of(table) == audit_tagged == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table = replace(catalog, replace(catalog, table))
    table = expire_all(catalog)
    report = verify_table(carrier_of(table))
    assert report.passed and report.content_check is not None, report.human()
    assert report.attested_version == audit_attested, report.human()


@pytest.mark.parametrize("kind", ["branch", "tag"])
def test_a_ref_named_like_a_branch_s_tag_the_user_owns_is_never_moved(catalog: SqlCatalog, table: Table,
                                                                       kind: str) -> None:
    """The rule for main's tag holds for each branch's: a ref of that name recipe-attest did not set stops the
    record (`unsupported_table`, nothing committed); opted out, the record attests and leaves it alone."""
    table.append(rows(0))
    table = catalog.load_table("ns.t")
    first = table.current_snapshot()
    assert first is not None
    manage = table.manage_snapshots().create_branch(first.snapshot_id, "audit")
    (manage.create_branch if kind == "branch" else manage.create_tag)(first.snapshot_id,
                                                                      retain_tag_name("audit")).commit()
    table = catalog.load_table("ns.t")
    table.append(rows(3), branch="audit")
    before = catalog.load_table("ns.t").metadata
    with pytest.raises(UnsupportedTableError, match="did not set") as raised:
        attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit")
    assert raised.value.code.value == "unsupported_table" and retain_tag_name("audit") in raised.value.message
    after = catalog.load_table("ns.t").metadata
    assert after.refs == before.refs
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="audit",
                       retain_tag=False)
    table = catalog.load_table("ns.t")
    assert table.metadata.refs[retain_tag_name("audit")] == before.refs[retain_tag_name("audit")]
    assert RETAIN_TAG not in table.metadata.refs


def test_a_dropped_branch_s_tag_is_released(catalog: SqlCatalog, table: Table) -> None:
    """`recipe-attest@audit` outlived the dropped branch `audit`, so every expiry kept its snapshot and the files it
    names. The next attestation commit of the table releases it (in the same commit); `release_stale_tags` does
    without an attestation. A tag of a branch still there, main's tag, and a ref of that form recipe-attest did not
    set are kept."""
    from carriers.iceberg import release_stale_tags

    table, _main_attested, _audit_attested = two_branches(catalog, table)
    audit_tagged = branch_tag(table, "audit")
    assert audit_tagged is not None
    table.manage_snapshots().create_branch(audit_tagged, "kept").commit()
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, branch="kept")
    table = catalog.load_table("ns.t")
    kept_tagged = branch_tag(table, "kept")
    table.append(rows(9))  # a snapshot carrying no attestation, tagged by the user under a name of our form
    table = catalog.load_table("ns.t")
    first = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    table.manage_snapshots().create_tag(first, retain_tag_name("mine")).commit()
    table = catalog.load_table("ns.t")
    table.manage_snapshots().remove_branch("audit").commit()
    table = expire_all(catalog)
    # Measured before: the tag stays, and so does the snapshot it names, at every expiry.
    assert branch_tag(table, "audit") == audit_tagged and audit_tagged in {s.snapshot_id for s in table.snapshots()}
    assert release_stale_tags(carrier_of(table)) == [retain_tag_name("audit")]
    table = catalog.load_table("ns.t")
    assert retain_tag_name("audit") not in table.metadata.refs
    assert branch_tag(table, "kept") == kept_tagged and tag_of(table) is not None
    assert branch_tag(table, "mine") == first  # not ours: never removed
    assert release_stale_tags(carrier_of(table)) == []  # nothing left: nothing committed


@pytest.mark.parametrize("retain", [True, False])
def test_an_attestation_commit_releases_a_dropped_branch_s_tag(catalog: SqlCatalog, table: Table,
                                                                retain: bool) -> None:
    table, _main_attested, _audit_attested = two_branches(catalog, table)
    audit_tagged = branch_tag(table, "audit")
    table.manage_snapshots().remove_branch("audit").commit()
    table = catalog.load_table("ns.t")
    table.append(rows(6))
    attest_after_write(catalog.load_table("ns.t"), model="orders", program_hash=PROGRAM, retain_tag=retain)
    table = catalog.load_table("ns.t")
    assert retain_tag_name("audit") not in table.metadata.refs and tag_of(table) is not None
    head = table.current_snapshot()
    assert head is not None and (tag_of(table) == head.snapshot_id) is retain  # main's tag moved only when asked
    table = expire_all(catalog)
    assert audit_tagged not in {s.snapshot_id for s in table.snapshots()}  # expiry now frees it
    report = verify_table(carrier_of(table))
    assert report.passed, report.human()


def test_release_tags_on_the_command_line(catalog: SqlCatalog, table: Table, iceberg_env: str) -> None:
    """`attest release-tags iceberg://…`: the maintenance job's way, without an attestation; a Delta table is an
    argument error."""
    import io
    import json
    from contextlib import redirect_stdout

    from attest.cli import main

    def release(target: str) -> tuple[int, dict[str, object]]:
        out = io.StringIO()
        with redirect_stdout(out):
            rc = main(["release-tags", target, "--json"])
        return rc, json.loads(out.getvalue())

    table, _main_attested, _audit_attested = two_branches(catalog, table)
    table.manage_snapshots().remove_branch("audit").commit()
    rc, doc = release(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["released"] == [retain_tag_name("audit")], doc
    assert retain_tag_name("audit") not in catalog.load_table("ns.t").metadata.refs
    rc, doc = release(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["released"] == [], doc
    rc, doc = release(f"iceberg://{CATALOG}/ns.t@1")
    assert rc == 2, doc


# ---- detached attestations kept by a metadata-only commit (format v3 through the Spark hook; issue 32.3) -------------

class _DetachedLikeV3(IcebergCarrier):
    """A carrier that writes detached attestations as it does on a format-v3 table (pyiceberg writes no v3 metadata, so
    the keeping is exercised here on v2, committed through pyiceberg as the Spark hook commits it through Java)."""

    @property
    def writes_detached(self) -> bool:
        return True


def _pyiceberg_keeper(catalog: SqlCatalog) -> Any:
    from pyiceberg.table.statistics import StatisticsFile
    from pyiceberg.table.update.snapshot import ManageSnapshots

    def keep(request: Any) -> None:
        with catalog.load_table("ns.t").transaction() as tx:
            if request.statistics is not None:
                tx.update_statistics().set_statistics(StatisticsFile.model_validate(request.statistics)).commit()
            if request.tag is not None:
                ManageSnapshots(tx).create_tag(request.snapshot_id, request.tag).commit()

    return keep


def test_a_kept_detached_attestation_outlives_its_pointer_and_expiry(catalog: SqlCatalog, table: Table) -> None:
    """Detached, then a rewrite with no record between, the pointer deleted (as Java's orphan removal deletes it) and
    every older snapshot expired: the statistics entry of the attested snapshot, found on the walk from the rewrite,
    and the tag that kept that snapshot, keep the attestation: VERIFIED by content. Was: UNATTESTED."""
    from carriers.iceberg.carriage import POINTER_DIR
    from carriers.storage.base import local_path_of

    table.append(rows(0))
    table.append(rows(3))
    carrier = _DetachedLikeV3(table, catalog_name=CATALOG)
    carrier.detached_keeper = _pyiceberg_keeper(catalog)
    attested = carrier.record(model="orders", program_hash=PROGRAM).attested_version
    table = catalog.load_table("ns.t")
    assert len(table.snapshots()) == 2 and tag_of(table) == int(str(attested))  # no snapshot added
    assert [s.snapshot_id for s in table.metadata.statistics] == [int(str(attested))]
    table = replace(catalog, table)
    pointers = Path(local_path_of(table.metadata_location) or "").parent / POINTER_DIR
    removed = [p.unlink() or p.name for p in pointers.iterdir()]
    assert removed == [f"{attested}.json"]
    table = expire_all(catalog)
    assert {s.snapshot_id for s in table.snapshots()} == {int(str(attested)), table.current_snapshot().snapshot_id}  # type: ignore[union-attr]
    report = verify_table(_DetachedLikeV3(table, catalog_name=CATALOG))
    assert report.passed, report.human()
    assert report.content_check is not None and report.content_check.passed, report.human()
    assert "statistics file of snapshot" in report.human(), report.human()


def test_a_v3_attestation_outside_rest_sql_and_spark_is_not_committed_and_the_warning_says_what_to_do(
        catalog: SqlCatalog, table: Table, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog with no keeper (Glue: pyiceberg writes its metadata file, which fails for format v3 after creating
    the file; no real server here to commit through) is stood for by the SQL catalog with its keeper taken away: the
    keeping is never tried there (no metadata file written, nothing committed), and the warning names the ways that
    keep it: the Spark hook, a REST catalog (whose server writes the v3 metadata), a SQL catalog, a Hive Metastore."""
    from carriers.iceberg import commit
    from carriers.iceberg.commit import rest_keeper
    from carriers.storage.base import local_path_of

    monkeypatch.setattr(commit, "sql_keeper", lambda _table: None)
    table.append(rows(0))
    table = catalog.load_table("ns.t")
    assert rest_keeper(table) is None
    folder = Path(local_path_of(table.metadata_location) or "").parent
    before = sorted(p.name for p in folder.glob("*.metadata.json"))
    location = table.metadata_location
    carrier = _DetachedLikeV3(table, catalog_name=CATALOG)
    with caplog.at_level("WARNING"):
        carrier.record(model="orders", program_hash=PROGRAM)
    assert carrier.kept_note is not None and "Spark hook" in carrier.kept_note and "REST catalog" in carrier.kept_note
    assert "SQL catalog" in carrier.kept_note and "SqlCatalog" in carrier.kept_note  # names the catalog it is
    assert "Hive Metastore" in carrier.kept_note
    assert carrier.kept_note in caplog.text
    after = catalog.load_table("ns.t")
    assert after.metadata_location == location and not after.metadata.statistics
    assert RETAIN_TAG not in after.metadata.refs
    assert sorted(p.name for p in folder.glob("*.metadata.json")) == before
