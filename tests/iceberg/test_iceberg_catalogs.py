"""carriers.iceberg_catalogs: table metadata never picks code, pyiceberg's local reads never block on a FIFO."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO

from carriers.iceberg_catalogs import code_keys, guard, guard_local_reads, names_code


def test_keys_that_name_code() -> None:
    assert code_keys({"py-io-impl": "x", "s3.retry-strategy-impl": "y", "write.py-location-provider.impl": "z",
                      " IO-IMPL ": "j", "s3.endpoint": "e", "write.format.default": "parquet"}) == [
        " IO-IMPL ", "py-io-impl", "s3.retry-strategy-impl", "write.py-location-provider.impl"]
    assert not names_code("implementation-notes") and names_code("Py-Io-Impl")


def test_a_guarded_catalog_drops_the_tables_code_keys_and_keeps_its_own() -> None:
    seen: list[dict[str, str]] = []

    class Catalog:
        def __init__(self) -> None:
            self.properties = {"py-io-impl": "mine.FileIO"}

        def _load_file_io(self, properties: dict[str, str] | None = None, location: str | None = None) -> str:
            seen.append({**self.properties, **(properties or {})})
            return "io"

    catalog = guard(Catalog())
    assert guard(catalog) is catalog  # once
    assert catalog._load_file_io({"py-io-impl": "evil.X", "s3.retry-strategy-impl": "evil.Y", "k": "v"}, "file:///t") \
        == "io"
    assert seen == [{"py-io-impl": "mine.FileIO", "k": "v"}]  # the user's catalog still chooses


def _read(path: Path) -> bytes:
    guard_local_reads()
    with PyArrowFileIO().new_input(path.as_uri()).open() as stream:
        return bytes(stream.read())


def test_guarded_local_reads_give_the_same_bytes(tmp_path: Path) -> None:
    guard_local_reads()
    guard_local_reads()  # idempotent
    assert getattr(PyArrowFile.open, "_recipe_attest_guarded", False)
    meta = tmp_path / "00001-x.metadata.json"
    meta.write_bytes(b'{"format-version": 2}')
    assert _read(meta) == b'{"format-version": 2}'
    data = tmp_path / "part.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), data)
    assert _read(data) == data.read_bytes()  # pyarrow's own reader, after the check


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
@pytest.mark.parametrize("name", ["snap-1.avro", "part.parquet"])
def test_a_fifo_is_not_found_instead_of_a_hang(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    out: list[BaseException] = []

    def run() -> None:
        try:
            _read(fifo)
        except BaseException as exc:
            out.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "hung"
    assert len(out) == 1 and isinstance(out[0], FileNotFoundError) and "not a regular file" in str(out[0])
