"""Round 19b: an attestation recorded before the legacy-calendar rule still VERIFIED at ``--level bytes``.

``record`` refuses a Delta data file whose Parquet footer makes Spark rebase its dates and timestamps from the hybrid
Julian calendar (written by Spark before 3.0.0, INT96 before 3.1.0, or marked ``org.apache.spark.legacyDateTime`` /
``legacyINT96``) while it holds values old enough for the rebase to move them (``test_delta_round16.py``: Spark reads
them rebased, delta-rs and the digest as stored — ``table_inconsistent``). ``attest verify --level bytes`` held the
attested files to the other stored-type rules (``test_stored_types_verify_round19.py``) but not to this one: a table
recorded before the rule (or by another producer) over such a file was VERIFIED. The bytes level now holds each
attested file to it, by the record's code: its footer, and only where the footer makes Spark rebase, its date and
timestamp columns. Honest tables (a modern Spark footer, no Spark footer, legacy footers over modern values) verify.

A file that is not read as Parquet is not judged: the verdict says its stored types were not checked (not only a
note), and ``--json`` carries it (``stored_types_unchecked``, ``notes``).

Left (docs/verify.md, "Stored types"): ``TIMESTAMP(NANOS)`` files are not refused at bytes — ``record`` does not
refuse their bytes either (it records them without a content digest, ``unsupported_table``).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from carriers.delta import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, verify
from tests.adversarial.test_delta_round16 import LEGACY_FOOTER, legacy_dated


@contextmanager
def before_the_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``record`` as it was before the legacy-calendar rule (or as a producer not holding it records)."""
    with monkeypatch.context() as patched:
        patched.setattr("carriers.delta.content._check_calendar", lambda *_a, **_k: None)
        yield


def old_record(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with before_the_rule(monkeypatch):
        attest_after_write(str(path), model="m", program_hash=PROGRAM)


def int96_dated(path: Path, footer: dict[str, str], when: datetime.datetime) -> None:
    """A delta-rs append of a UTC timestamp column, its file then written again storing it as INT96 (Spark's legacy
    timestamps) with ``footer``, holding ``when`` (its size restated), before any attestation."""
    write_deltalake(
        str(path),
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "t": pa.array([when, datetime.datetime(2020, 1, 1)], pa.timestamp("us", tz="UTC")),
            }
        ),
    )
    log = path / commit_name(0)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            data = path / action["add"]["path"]
            pq.write_table(
                pq.read_table(data).replace_schema_metadata(footer), data, use_deprecated_int96_timestamps=True
            )
            action["add"]["size"] = data.stat().st_size
            action["add"].pop("stats", None)
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def refused(path: Path) -> dict[str, object]:
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    error = doc["errors"][0]  # type: ignore[index]
    assert error["path"].endswith(".parquet") and "Julian calendar" in error["message"], doc
    return doc


def test_an_old_record_over_dates_spark_reads_rebased_is_not_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    legacy_dated(path, LEGACY_FOOTER)
    old_record(path, monkeypatch)
    doc = refused(path)
    assert "'2.4.8'" in doc["errors"][0]["message"], doc  # type: ignore[index]
    # files: no file is read, so stored types are not judged (docs/verify.md)
    rc, files = verify(str(path), "--level", "files")
    assert rc == 0 and files["level"] == "files", files


@pytest.mark.parametrize(
    "footer",
    [
        {"org.apache.spark.version": "2.4.8"},
        {"org.apache.spark.version": "3.5.1", "org.apache.spark.legacyDateTime": ""},
    ],
)
def test_either_legacy_sign_is_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, footer: dict[str, str]) -> None:
    path = tmp_path / "t"
    legacy_dated(path, footer)
    old_record(path, monkeypatch)
    refused(path)


def test_an_old_record_over_int96_timestamps_spark_reads_rebased_is_not_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark 3.0.x rebases INT96 timestamps (not dates) from the Julian calendar: an 1800 instant moves."""
    path = tmp_path / "t"
    int96_dated(path, {"org.apache.spark.version": "3.0.1"}, datetime.datetime(1800, 1, 1))
    old_record(path, monkeypatch)
    refused(path)


@pytest.mark.parametrize("footer", [None, {"org.apache.spark.version": "3.5.1"}])
def test_ancient_dates_spark_reads_as_stored_verify(tmp_path: Path, footer: dict[str, str] | None) -> None:
    """Honest: no Spark footer (Spark reads by its session's mode, an error by default) or a modern one."""
    path = tmp_path / "t"
    legacy_dated(path, footer)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes" and "stored_types_unchecked" not in doc, doc


def test_legacy_footers_over_modern_values_verify(tmp_path: Path) -> None:
    """Honest: the rebase moves no value after 1900; INT96 of Spark 3.0.1 holding 1950 and 2020."""
    path = tmp_path / "t"
    int96_dated(
        path,
        {"org.apache.spark.version": "3.0.1", "org.apache.spark.legacyDateTime": ""},
        datetime.datetime(1950, 1, 1),
    )
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc


def test_a_file_not_read_as_parquet_is_said_unchecked_in_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its bytes matched; its stored types were not judged: the verdict says so, not a note only (no over-claim)."""
    path = tmp_path / "t"
    legacy_dated(path, None)
    attest_after_write(str(path), model="m", program_hash=PROGRAM)

    def unreadable(*_a: object, **_k: object) -> None:
        raise pa.ArrowInvalid("not a Parquet file")

    with monkeypatch.context() as patched:
        patched.setattr("pyarrow.parquet.ParquetFile", unreadable)
        rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["level"] == "bytes", doc
    assert doc["stored_types_unchecked"] == "1 data file(s) not read as Parquet", doc
    assert "stored types not checked: 1 data file(s) not read as Parquet" in str(doc["verdict"]), doc
    assert any("stored types were not checked" in n for n in doc["notes"]), doc  # type: ignore[union-attr]
    rc, read = verify(str(path), "--level", "bytes")  # read as Parquet: nothing said
    assert rc == 0 and "stored types not checked" not in str(read["verdict"]), read
