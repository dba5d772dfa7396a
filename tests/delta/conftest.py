"""Fixtures for the Delta carrier tests: small tables written with delta-rs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

PROGRAM = "a" * 64
SPECIAL = ["a b", None, "x/y", "k=v", "50%", "ünï", "plain"]


def special_table() -> pa.Table:
    return pa.table({"p": SPECIAL, "v": list(range(len(SPECIAL)))})


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    return tmp_path / "t"


@pytest.fixture
def partitioned(table_dir: Path) -> Path:
    from deltalake import write_deltalake

    write_deltalake(str(table_dir), special_table(), partition_by=["p"])
    return table_dir
