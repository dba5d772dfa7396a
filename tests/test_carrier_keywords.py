"""The keywords shared by several entry points are named once (carriers.base.WriteOptions and AfterWrite,
attest.verify.table.VerifyOptions); a keyword none of them names is still refused with TypeError, as it was when each
signature spelled its keywords out, and before anything is read or written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import write_deltalake

from attest.model import Manifest
from attest.verify.table import verify_table
from carriers.base import AfterWrite, WriteOptions, after_write_request
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.carrier import attest_after_write as delta_after_write
from carriers.iceberg.carrier import attest_after_write as iceberg_after_write
from carriers.standalone import MANIFEST_NAME, StandaloneCarrier

PROGRAM = "a" * 64


def test_the_keyword_sets_are_the_ones_the_signatures_had() -> None:
    assert set(WriteOptions.__annotations__) == {"files", "inputs", "version", "signer"}
    assert set(AfterWrite.__annotations__) == {"program_hash", "sql", "dialect", "inputs", "run_id", "progress",
                                               "replace", "signer"}


def test_standalone_write_refuses_an_unknown_keyword(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="'signr'"):
        StandaloneCarrier(tmp_path).write(Manifest.from_dict(valid_doc), signr=None)  # type: ignore[call-arg]
    assert not (tmp_path / MANIFEST_NAME).exists()


def test_table_write_refuses_an_unknown_keyword(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    import pyarrow as pa

    write_deltalake(str(tmp_path), pa.table({"x": [1]}))
    carrier = DeltaCarrier(str(tmp_path))
    with pytest.raises(TypeError, match="'versoin'"):
        carrier.write(Manifest.from_dict(valid_doc), versoin=0)  # type: ignore[call-arg]
    assert carrier.read() is None


@pytest.mark.parametrize("after_write", [delta_after_write, iceberg_after_write])
def test_attest_after_write_refuses_an_unknown_keyword(after_write: Any) -> None:
    with pytest.raises(TypeError, match="'run'"):
        after_write("/nonexistent/table", model="m", program_hash=PROGRAM, run="r1")


def test_verify_table_refuses_an_unknown_keyword(tmp_path: Path) -> None:
    import pyarrow as pa

    write_deltalake(str(tmp_path), pa.table({"x": [1]}))
    with pytest.raises(TypeError, match="'levle'"):
        verify_table(DeltaCarrier(str(tmp_path)), levle="files")  # type: ignore[call-arg]


def test_after_write_request_takes_the_program_from_sql_or_hash() -> None:
    by_hash = after_write_request("m", {"program_hash": PROGRAM, "run_id": "r1", "replace": True})
    assert (by_hash.model, by_hash.program_hash, by_hash.run_id, by_hash.replace) == ("m", PROGRAM, "r1", True)
    by_sql = after_write_request("m", {"sql": "SELECT 1", "dialect": "duckdb"})
    assert len(by_sql.program_hash) == 64 and by_sql.program_hash != PROGRAM and by_sql.dialect == "duckdb"
    assert (by_sql.inputs, by_sql.signer, by_sql.replace) == ((), None, False)
