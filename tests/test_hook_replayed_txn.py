"""The Spark hook's worker for a ``foreachBatch`` write that declared a Delta idempotent-write txn and committed
nothing (carriers/spark/hook.py ``_replayed_commit``, docs/streaming.md): the commit carrying that txn — the one the
killed run made of the batch, for which Delta skipped the replayed write — is attested; never a commit carrying
another txn, never one of two carrying it (reported), never one attested already, and never outside foreachBatch.
Driven without Spark (tests/spark/test_foreach_batch_txn_restart.py measures it with a real kill): delta-rs writes
the txn actions here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
from deltalake import CommitProperties, Transaction, write_deltalake

from carriers.spark.hook import Hook, WriteEvent, _txn_in_options

APP = "my-foreach-batch-app"


def _hook() -> Hook:
    return Hook(SimpleNamespace(), delta_mode="detached")  # the worker side touches no Spark here


def _table(tmp_path: Path, *txns: tuple[str, int]) -> str:
    """Version 0 without a txn, then one append per txn (versions 1, 2, …)."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": [0]}), mode="append")
    for i, (app, version) in enumerate(txns, start=1):
        props = CommitProperties(app_transactions=[Transaction(app_id=app, version=version)])
        write_deltalake(path, pa.table({"x": [i]}), mode="append", commit_properties=props)
    return path


def _replayed(path: str, head: int, txn: tuple[str, int] | None, *, in_batch: bool = True) -> WriteEvent:
    """The replayed INSERT: it read the head and, Delta having skipped it, the table is still there."""
    return WriteEvent(command="AppendData", format="delta", table_name=None, location=path, read_version=head,
                      hint_version=head, stream=[] if in_batch else None, txn=txn, program_hash="ab" * 32)


def _pointers(path: str) -> set[int]:
    return {int(p.stem) for p in (Path(path) / "_recipe_attest" / "versions").glob("*.json")}


def test_the_commit_carrying_the_declared_txn_is_attested(tmp_path: Path) -> None:
    path = _table(tmp_path, (APP, 0), (APP, 1))
    hook = _hook()
    hook._attest(_replayed(path, 2, (APP, 1)))
    assert (hook.attested, hook.not_found, hook.skipped, hook.failed) == (1, 0, 0, 0), hook.errors
    assert _pointers(path) == {2}
    hook._attest(_replayed(path, 2, (APP, 1)))  # replayed again (another restart): attested once
    assert hook.attested == 1 and _pointers(path) == {2}


def test_another_apps_txn_or_no_txn_claims_nothing(tmp_path: Path) -> None:
    path = _table(tmp_path, ("another-app", 1))
    hook = _hook()
    for event in (_replayed(path, 1, (APP, 1)), _replayed(path, 1, None), _replayed(path, 1, (APP, 2)),
                  _replayed(path, 1, ("another-app", 1), in_batch=False)):
        hook._attest(event)
    assert (hook.attested, hook.not_found, hook.skipped, hook.failed) == (0, 0, 0, 0)
    assert _pointers(path) == set()


def test_two_commits_carrying_the_txn_are_reported_not_guessed(tmp_path: Path) -> None:
    path = _table(tmp_path, (APP, 1), (APP, 1))  # a log no Delta writer makes
    hook = _hook()
    hook._attest(_replayed(path, 2, (APP, 1)))
    assert (hook.attested, hook.skipped) == (0, 1)
    assert _pointers(path) == set()
    assert "2 commits" in hook.lost[0] or "ambiguous" in hook.lost[0].lower(), hook.lost


def test_a_version_attested_already_is_not_attested_again(tmp_path: Path) -> None:
    path = _table(tmp_path, (APP, 1))
    first = _hook()
    first._attest(_replayed(path, 1, (APP, 1)))
    assert _pointers(path) == {1}
    second = _hook()
    second._attest(_replayed(path, 1, (APP, 1)))
    assert (second.attested, second.failed, second.skipped) == (0, 0, 0)


def test_the_txn_among_write_options() -> None:
    class Some:
        def __init__(self, value: str | None) -> None:
            self.value = value

        def isDefined(self) -> bool:  # the Scala Option's API
            return self.value is not None

        def get(self) -> str | None:
            return self.value

    class Options(dict[str, str]):
        def get(self, key: str, default: object = None) -> object:  # Scala Map.get: an Option
            return Some(super().get(key))

    assert _txn_in_options(Options(txnAppId=APP, txnVersion="7")) == (APP, 7)
    assert _txn_in_options(Options(txnappid=APP, txnversion="7")) == (APP, 7)
    assert _txn_in_options(Options(txnAppId=APP)) is None  # Delta takes the session confs then
    assert _txn_in_options(Options(txnAppId=APP, txnVersion="x")) is None
    assert _txn_in_options(None) is None
