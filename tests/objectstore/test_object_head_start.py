"""The object-store head start of ``attest verify --level bytes`` (carriers/storage/head_start.py) on a real S3 server
(SeaweedFS, loopback): a Delta table's objects are hashed from delta-rs's listing while the log is replayed and the
sidecar read. The verdicts, codes and output are the ordinary order's (``ATTEST_FAST=0``) on intact and tampered
tables; the hashing overlaps the replay; and a verification that ends before its bytes leaves no thread running."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest import fast
from attest.cli import main
from attest.verify.table import verify_table
from carriers.delta import carrier as delta_carrier
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.storage import objects
from carriers.storage.head_start import ObjectHeadStart
from tests.objectstore.conftest import S3


def _table(s3: S3, *, attested: bool = True) -> tuple[str, list[str]]:
    uri = s3.uri("t")
    for i in range(4):
        blob = pa.array([os.urandom(512) for _ in range(40 * (i + 1))], pa.binary())
        write_deltalake(
            uri,
            pa.table({"i": pa.array([i] * len(blob), pa.int32()), "b": blob}),
            mode="append",
            storage_options=s3.storage_options,
        )
    if attested:
        attest_after_write(uri, model="m", program_hash="a" * 64, storage_options=s3.storage_options)
    return uri, sorted(k for k in s3.keys("t/") if k.endswith(".parquet"))


_INIT = ObjectHeadStart.__init__


def _threads() -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t.name.startswith((ObjectHeadStart.name, "attest-objects")) and t.is_alive()
    ]


def _cli(
    s3: S3,
    uri: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *,
    on: bool,
    json_out: bool = False,
) -> tuple[int, str, list[ObjectHeadStart]]:
    """The command's exit code and output with the head start on or off, and the head starts it made."""
    made: list[ObjectHeadStart] = []

    def recording(self: ObjectHeadStart, storage: Any) -> None:
        _INIT(self, storage)
        made.append(self)

    monkeypatch.setattr(ObjectHeadStart, "__init__", recording)
    monkeypatch.setattr(fast, "ON", on)
    options = (
        []
        if uri.startswith("iceberg://")
        else [a for k, v in s3.storage_options.items() for a in ("--storage-option", f"{k}={v}")]
    )
    capsys.readouterr()
    code = main(["verify", uri, "--level", "bytes", *options, *(["--json"] if json_out else [])])
    out = capsys.readouterr().out
    assert not _threads()  # joined, whatever the verdict
    return code, out, made


def _both(
    s3: S3, uri: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, list[ObjectHeadStart]]:
    """The same command with and without the head start: the same exit code, text and JSON (no timings in them)."""
    for json_out in (True, False):  # the text last: returned
        off = _cli(s3, uri, monkeypatch, capsys, on=False, json_out=json_out)
        on = _cli(s3, uri, monkeypatch, capsys, on=True, json_out=json_out)
        assert off[2] == [] and len(on[2]) == 1, on[1]
        assert on[:2] == off[:2], (on[1], off[1])
    return on


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "PART", 4 << 10)  # the table's files are read in ranged parts, and streamed
    monkeypatch.setattr(objects, "STREAM_MAX", 8 << 10)


def test_intact_and_tampered_tables_get_the_ordinary_verdicts(
    s3: S3, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], small_parts: None
) -> None:
    uri, keys = _table(s3)
    code, out, (head,) = _both(s3, uri, monkeypatch, capsys)
    assert code == 0 and out.startswith("VERIFIED (bytes"), out
    assert head.taken == len(keys)  # every object's digest came from the head start

    flipped, shorter, gone, _kept = keys
    s3.flip_byte(flipped)  # the same size, other bytes
    s3.put(shorter, s3.get(shorter)[:-100])  # another object of another size under the same key
    s3.delete(gone)
    code, out, (head,) = _both(s3, uri, monkeypatch, capsys)
    assert code == 1, out
    got = json.loads(_cli(s3, uri, monkeypatch, capsys, on=True, json_out=True)[1])
    problems = sorted((p["code"], p["path"]) for p in got["errors"])
    rel = {k: k.removeprefix("t/") for k in keys}
    assert problems == sorted(
        [
            ("artifact_hash_mismatch", rel[flipped]),
            ("size_mismatch", rel[shorter]),  # the look at storage first (round 33): not read
            ("file_missing", rel[gone]),
        ]
    ), problems
    assert head.taken == 2  # the kept and the flipped one; the shorter and the gone one are not read


def test_a_file_added_after_the_record_gets_the_ordinary_verdict(
    s3: S3, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, _ = _table(s3)
    write_deltalake(
        uri,
        pa.table({"i": pa.array([9], pa.int32()), "b": pa.array([b"x"], pa.binary())}),
        mode="append",
        storage_options=s3.storage_options,
    )
    code, out, _ = _both(s3, uri, monkeypatch, capsys)
    assert code == 1, out


def test_a_verification_that_ends_before_its_bytes_leaves_no_thread(
    s3: S3, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, _ = _table(s3, attested=False)  # unattested: judged at once, no byte is needed
    code, out, (head,) = _both(s3, uri, monkeypatch, capsys)
    assert code == 1 and head.offered and head.taken == 0, out


def test_the_hashing_overlaps_the_log_replay(s3: S3, monkeypatch: pytest.MonkeyPatch, small_parts: None) -> None:
    uri, keys = _table(s3)
    carrier = DeltaCarrier(uri, storage_options=s3.storage_options)
    head = ObjectHeadStart(carrier.storage)
    carrier.head_start = head
    real = delta_carrier.replay
    seen: list[bool] = []

    def replay(*args: Any, **kwargs: Any) -> Any:
        # The replay ends only once an object has been hashed: without the overlap it would wait its full timeout.
        seen.append(head.began.wait(timeout=60))
        return real(*args, **kwargs)

    monkeypatch.setattr(delta_carrier, "replay", replay)
    try:
        report = verify_table(carrier, level="bytes", hasher=head)
    finally:
        head.close()
    assert seen and seen[0], "no object was hashed before the log replay finished"
    assert report.passed and head.taken == len(keys), report.human()
    assert not _threads()


def test_close_while_hashing_stops_and_joins(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "PART", 1 << 10)  # hundreds of requests, one at a time
    monkeypatch.setattr(objects, "STREAM_MAX", 1 << 10)
    monkeypatch.setattr(objects, "SLOTS", 1)
    uri, keys = _table(s3)
    head = ObjectHeadStart(DeltaCarrier(uri, storage_options=s3.storage_options).storage)
    head.offer((s3.uri(k), n) for k, n in s3.keys("t/").items() if k in keys)
    assert _threads()
    head.close()  # at once: the parts not yet requested are not
    assert not _threads()
    assert len(head._digests) == len(keys) and None in head._digests.values()


def test_a_file_no_longer_live_gets_the_ordinary_verdict(
    s3: S3, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalake import DeltaTable

    uri, _ = _table(s3)
    DeltaTable(uri, storage_options=s3.storage_options).delete("i = 0")  # its file removed from the live version
    code, out, _ = _both(s3, uri, monkeypatch, capsys)
    assert code == 1, out


def test_a_tampered_sidecar_stops_before_the_bytes_as_before(
    s3: S3, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, _ = _table(s3)
    sidecars = [k for k in s3.keys("t/") if "_recipe_attest/" in k and not k.endswith(".parquet")]
    assert sidecars
    for key in sidecars:
        s3.flip_byte(key)
    code, out, (head,) = _both(s3, uri, monkeypatch, capsys)
    assert code == 1 and "stopped at schema" in out and "sidecar_mismatch" in out and head.taken == 0, out
