"""``AttestedTable.carry_forward()`` (what the Spark hook runs after a maintenance command, docs/spark.md): a
carry-forward attestation after a pure rewrite, and nothing at all otherwise — never an attestation of its own."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import CarrierError
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from tests.adversarial.conftest import verify
from tests.delta.conftest import PROGRAM


def _attested(path: Path) -> None:
    for i in range(3):
        write_deltalake(str(path), pa.table({"x": [i, i + 10], "y": [str(i), "z"]}), mode="append")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)


def test_carry_forward_after_compaction_keeps_the_program(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _attested(path)
    DeltaTable(str(path)).optimize.compact()
    result = DeltaCarrier(str(path)).carry_forward()
    assert result is not None and result.continues is not None and result.manifest is not None
    assert result.manifest.program_hash == PROGRAM and result.manifest.subject.model == "m"
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED") and "content;" not in doc["verdict"], doc
    assert DeltaCarrier(str(path)).carry_forward() is None  # attested already: nothing written


def test_nothing_to_carry_writes_nothing(tmp_path: Path) -> None:
    """Not attested, attested already, or data changed since the attestation: None, and the log is unchanged."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"x": [1]}), mode="append")
    DeltaTable(str(path)).optimize.compact()
    assert DeltaCarrier(str(path)).carry_forward() is None  # never attested
    other = tmp_path / "u"
    _attested(other)
    assert DeltaCarrier(str(other)).carry_forward() is None  # the latest version is the attested one
    write_deltalake(str(other), pa.table({"x": [99], "y": ["new"]}), mode="append")
    DeltaTable(str(other)).optimize.compact()
    latest = DeltaTable(str(other)).version()
    assert DeltaCarrier(str(other)).carry_forward() is None  # data changed: the rows are not the attested ones
    assert DeltaTable(str(other)).version() == latest
    rc, doc = verify(str(other), "--level", "bytes")
    assert rc != 0, doc


def test_a_rewrite_that_changed_rows_is_refused(tmp_path: Path) -> None:
    """A dataChange: false commit whose new file lacks a row: content_changed, nothing written."""
    import json

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"x": [1, 2, 3]}), mode="append")
    attest_after_write(str(path), model="m", program_hash=PROGRAM)
    dt = DeltaTable(str(path))
    old = dt.file_uris()[0].split("/")[-1]
    write_deltalake(str(tmp_path / "scratch"), pa.table({"x": [1, 2]}), mode="append")
    new = next(p for p in (tmp_path / "scratch").iterdir() if p.suffix == ".parquet")
    (path / new.name).write_bytes(new.read_bytes())
    version = dt.version() + 1
    actions = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}},
               {"remove": {"path": old, "dataChange": False, "deletionTimestamp": 1}},
               {"add": {"path": new.name, "size": new.stat().st_size, "partitionValues": {},
                        "modificationTime": 1, "dataChange": False}}]
    (path / "_delta_log" / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(path)).carry_forward()
    assert err.value.code.value == "content_changed"
    assert DeltaTable(str(path)).version() == version


def test_carry_only_with_nothing_to_carry_has_its_own_code_and_names_the_fix(tmp_path: Path) -> None:
    """``record(carry_only=True)`` with nothing to carry: ``nothing_to_carry`` (no longer the generic
    ``table_unreadable``: the table was read fine), a message saying what to run instead, and nothing written."""
    from carriers.core import NothingToCarry

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"x": [1]}), mode="append")
    DeltaTable(str(path)).optimize.compact()
    latest = DeltaTable(str(path)).version()
    with pytest.raises(NothingToCarry) as err:
        DeltaCarrier(str(path)).record(model="", program_hash="", carry_only=True)  # never attested
    assert err.value.code.value == "nothing_to_carry"
    assert "record() without carry_only" in err.value.message and "attest record" in err.value.message
    assert DeltaTable(str(path)).version() == latest
    assert DeltaCarrier(str(path)).carry_forward() is None  # what the Spark hook runs: still None, no error
