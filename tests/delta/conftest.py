"""Fixtures for the Delta carrier tests: small tables written with delta-rs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import carriers.delta.carrier as carrier_module

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


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Counter[int | None]:
    """How many times the carrier had delta-rs load each version (None: the latest)."""
    counted: Counter[int | None] = Counter()

    class Counting(DeltaTable):
        def __init__(self, *args: Any, version: int | None = None, **kwargs: Any) -> None:
            counted[version] += 1
            super().__init__(*args, version=version, **kwargs)

    monkeypatch.setattr(carrier_module, "DeltaTable", Counting)
    return counted
