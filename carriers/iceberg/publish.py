"""Iceberg write–audit–publish: ``main`` moves to a branch's head only when that head verifies (docs/signing.md).

A job writes to a branch (``INSERT INTO t.branch_audit``, pyiceberg ``append(..., branch=...)``) and attests it
there (``attest record --branch``, ``attest_after_write(..., branch=...)``: the follow-up snapshot is committed on
the branch). ``publish`` then

1. reads the branch head B and main's head M from one metadata version;
2. refuses unless M is an ancestor of B (a fast-forward: nothing committed to main since the fork is dropped). The one
   exception: main's own *attestation* snapshots (follow-ups that add and remove no file) committed after the fork
   point — an engine that caches table metadata (Spark) forks the branch from the data snapshot before the
   attestation of it landed. They change no data, and the branch head carries its own attestation;
3. verifies B — the attestation in force at the branch head, at the requested level, under the trust policy — as
   main's readers will read it once main is moved there (the current schema);
4. moves main to exactly B (the verified snapshot, not whatever the branch holds by then), with pyiceberg's
   requirement that main is still M: a commit to main in the meantime makes the publish fail, never overwrite it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attest.errors import NotFastForwardError, VerificationRefusedError, VersionNotFoundError
from attest.tables import Progress
from attest.verify.report import Level, Report
from attest.verify.table import verify_state
from carriers.iceberg.carriage import RETAIN_TAG, retain_tag_name
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.summaries import changed_no_file, operation

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from attest.signing.policy import TrustPolicy

__all__ = ["PublishResult", "publish"]


@dataclass
class PublishResult:
    """What a publish did: the branch head that verified, main before and after."""

    table: str
    branch: str
    snapshot: str
    previous_main: str | None
    report: Report
    published: bool  # False: main already was at the branch head (nothing to move)

    @property
    def exit_code(self) -> int:
        return 0

    def to_json(self) -> dict[str, Any]:
        return {"published": self.published, "passed": True, "table": self.table, "branch": self.branch,
                "snapshot": self.snapshot, "previous_main": self.previous_main, "report": self.report.to_json()}

    def human(self) -> str:
        lines = [f"  note: {n}" for n in self.report.notes]
        if not self.published:
            lines.append(f"PUBLISHED (nothing to move) — main of {self.table} already is branch {self.branch}'s "
                         f"head {self.snapshot}; {self.report.verdict()}")
        else:
            lines.append(f"PUBLISHED — main of {self.table} fast-forwarded from {self.previous_main or '(none)'} to "
                         f"snapshot {self.snapshot} of branch {self.branch}; {self.report.verdict()}")
        return "\n".join(lines)


def _ancestors(carrier: IcebergCarrier, snapshot_id: int) -> list[int]:
    """``snapshot_id`` and its ancestors, newest first, as far as the metadata still holds them (linear: one indexed
    lookup per snapshot, each visited once, a parent cycle ends the walk)."""
    snapshots = carrier.snapshot_index()
    out: list[int] = []
    current: int | None = snapshot_id
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        out.append(current)
        snap = snapshots.get(current)
        current = None if snap is None else snap.parent_snapshot_id
    return out


def _fork_point(carrier: IcebergCarrier, main_head: int, branch_history: set[int]) -> int | None:
    """The snapshot of main's history the branch descends from, passing over only main's attestation-only
    follow-up snapshots (no file added or removed); None when main has anything else the branch lacks."""
    snapshots = carrier.snapshot_index()
    current: int | None = main_head
    seen: set[int] = set()
    while current is not None and current not in branch_history:
        if current in seen:  # a parent cycle (forged metadata: verification refuses it as table_inconsistent)
            return None
        seen.add(current)
        snap = snapshots.get(current)
        carried = None if snap is None else carrier.carried_by(snap)
        if snap is None or carried is None or not carried[2] or not changed_no_file(snap) or \
                operation(snap) != "append":
            return None  # a data commit (or anything but our follow-up) on main since the fork
        current = snap.parent_snapshot_id
    return current


def publish(
    table: Table | IcebergCarrier,
    branch: str,
    *,
    policy: TrustPolicy | None = None,
    level: Level | None = None,
    progress: Progress | None = None,
    now: dt.datetime | None = None,
) -> PublishResult:
    """Fast-forward ``main`` to the head of ``branch`` if that head verifies (see the module docstring).

    Raises NotFastForwardError (``not_fast_forward``) when main moved since the branch forked, and
    VerificationRefusedError (the verification's code; ``.report`` holds the verdict) when the head does not verify.
    """
    base = table if isinstance(table, IcebergCarrier) else IcebergCarrier(table)
    if branch in ("", "main"):
        raise VersionNotFoundError("publish moves main to another branch: name that branch (not main)")
    base.refresh()  # one metadata version for the checks and the commit's requirement
    carrier = IcebergCarrier(base.table, catalog_name=base.catalog_name, detached=base.detached,
                             allow_external=base.allow_external, branch=branch)
    # The head is verified as main's readers will read it once main is moved there (the current schema, not only
    # the head's own): verified under its own schema, a head was published whose readers got other columns.
    carrier.as_main = True
    head = carrier.head()
    if head is None:
        raise VersionNotFoundError(f"branch {branch} of {carrier.reference} has no snapshot")
    main = base.table.metadata.refs.get("main")
    previous = None if main is None else main.snapshot_id
    if previous is not None and _fork_point(carrier, previous, set(_ancestors(carrier, head.snapshot_id))) is None:
        raise NotFastForwardError(
            f"main of {carrier.reference} is at snapshot {previous}, which is not in the history of branch {branch} "
            f"(head {head.snapshot_id}): main moved since the branch forked (or that history expired). Rebase the "
            "branch on main, re-attest it, and publish again")
    report = verify_state(carrier.state(str(head.snapshot_id)), carrier, level=level, progress=progress,
                          policy=policy, now=now)
    if not report.passed:
        code = report.errors[0].code if report.errors else None
        raise VerificationRefusedError(f"branch {branch} of {carrier.reference} (snapshot {head.snapshot_id}) does not "
                                       f"verify, main was not moved: {report.verdict()}", code=code, report=report)
    if previous == head.snapshot_id:
        return PublishResult(carrier.reference, branch, str(head.snapshot_id), str(previous), report, False)
    _fast_forward(carrier, head.snapshot_id, previous, branch, _main_tag(carrier, head))
    return PublishResult(carrier.reference, branch, str(head.snapshot_id),
                         None if previous is None else str(previous), report, True)


def _main_tag(carrier: IcebergCarrier, head: Snapshot) -> int | None:
    """Where main's retention tag moves when main is fast-forwarded to ``head`` (docs/iceberg.md "Expiry and tags"):
    to the snapshot the branch's own tag names, when that one carries the attestation in force at ``head`` (the one
    just verified), so that main's readers keep it past expiry as the branch's did (was, with one tag per branch:
    main's tag stayed on main's previous attestation, and a published head whose history then expired was stale).
    None, the tag left where it is, when the branch has no tag of ours (attested with the opt-out), or main's tag is
    not ours (a user's ref of that name is never moved)."""
    refs = carrier.table.metadata.refs
    branch_tag = refs.get(retain_tag_name(carrier.branch))
    if branch_tag is None or not carrier.our_tag(branch_tag) or \
            carrier._find(head).carrier_snapshot != branch_tag.snapshot_id:
        return None
    main_tag = refs.get(RETAIN_TAG)
    if main_tag is not None and (main_tag.snapshot_id == branch_tag.snapshot_id or not carrier.our_tag(main_tag)):
        return None
    return int(branch_tag.snapshot_id)


def _fast_forward(carrier: IcebergCarrier, snapshot_id: int, previous: int | None, branch: str,
                  main_tag: int | None) -> None:
    from pyiceberg.exceptions import CommitFailedException

    table = carrier.table
    main = table.metadata.refs.get("main")
    if (None if main is None else main.snapshot_id) != previous:  # the table object was refreshed in between
        raise NotFastForwardError(f"main of {carrier.reference} moved while branch {branch} was being verified; "
                                  "publish again")
    try:
        # set_current_snapshot requires main to still be at ``previous`` in the catalog (AssertRefSnapshotId); main's
        # retention tag moves in the same metadata commit.
        manage = table.manage_snapshots().set_current_snapshot(snapshot_id=snapshot_id)
        if main_tag is not None:
            manage = manage.create_tag(main_tag, RETAIN_TAG)
        manage.commit()
    except CommitFailedException as exc:
        raise NotFastForwardError(f"main of {carrier.reference} moved while branch {branch} was being verified "
                                  f"({exc}); nothing was published") from exc
