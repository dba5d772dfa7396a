"""carriers.iceberg.catalogs: table metadata never picks code, pyiceberg's local reads never block on a FIFO."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO

from carriers.iceberg.catalogs import (
    code_keys,
    guard,
    guard_local_reads,
    names_code,
    reading_io,
    storage_keys,
    table_side_io_keys,
)


def test_keys_that_name_code() -> None:
    assert code_keys({"py-io-impl": "x", "s3.retry-strategy-impl": "y", "write.py-location-provider.impl": "z",
                      " IO-IMPL ": "j", "s3.endpoint": "e", "write.format.default": "parquet"}) == [
        " IO-IMPL ", "py-io-impl", "s3.retry-strategy-impl", "write.py-location-provider.impl"]
    assert not names_code("implementation-notes") and names_code("Py-Io-Impl")


def test_keys_that_configure_storage() -> None:
    assert storage_keys({"s3.endpoint": "e", "S3.Proxy-Uri": "p", "gcs.service.host": "g", "client.region": "r",
                         "adls.account-name": "a", "DEFAULT_NETLOC": "n", "py-io-impl": "x", "write.format.default":
                         "parquet", "commit.retry.num-retries": "4", "recipe_manifest.version": "1"}) == [
        "DEFAULT_NETLOC", "S3.Proxy-Uri", "adls.account-name", "client.region", "gcs.service.host", "py-io-impl",
        "s3.endpoint"]


class _Catalog:
    """What guard() relies on of a pyiceberg catalog: properties, _load_file_io merging the table's side over them."""

    def __init__(self) -> None:
        self.properties = {"py-io-impl": "mine.FileIO", "s3.endpoint": "http://mine"}
        self.seen: list[dict[str, str]] = []

    def _load_file_io(self, properties: dict[str, str] | None = None, location: str | None = None) -> str:
        self.seen.append({**self.properties, **(properties or {})})
        return "io"


def test_a_guarded_catalog_builds_fileios_from_its_own_properties_alone() -> None:
    catalog = guard(_Catalog())
    assert guard(catalog) is catalog  # once
    assert catalog._load_file_io({"py-io-impl": "evil.X", "s3.endpoint": "http://evil", "DEFAULT_NETLOC": "evil",
                                  "k": "v"}, "file:///t") == "io"
    assert catalog.seen == [{"py-io-impl": "mine.FileIO", "s3.endpoint": "http://mine"}]  # the user's catalog chooses


def test_a_guarded_rest_catalog_keeps_what_its_server_vends_and_drops_the_tables_own() -> None:
    class Rest(_Catalog):
        def _response_to_table(self, identifier: tuple[str, ...], response: SimpleNamespace) -> str:
            return str(self._load_file_io({**response.metadata.properties, **response.config,
                                           **response.storage_credentials[0].config}, "s3://b/t"))

    catalog = guard(Rest())
    response = SimpleNamespace(
        metadata=SimpleNamespace(properties={"s3.endpoint": "http://evil", "s3.region": "evil-1", "py-io-impl": "x",
                                             "s3.access-key-id": "table's"}),
        config={"s3.region": "eu-west-1", "py-io-impl": "server.X"},
        storage_credentials=[SimpleNamespace(prefix="s3://b", config={"s3.access-key-id": "vended"})])
    assert catalog._response_to_table(("ns", "t"), response) == "io"
    # The server's config and credentials stay (a server naming code does not run it); the table's own keys go.
    assert catalog.seen == [{"py-io-impl": "mine.FileIO", "s3.endpoint": "http://mine", "s3.region": "eu-west-1",
                             "s3.access-key-id": "vended"}]
    catalog._load_file_io({"s3.endpoint": "http://evil"}, "s3://b/t")  # outside a server's answer: the table's side
    assert catalog.seen[-1] == {"py-io-impl": "mine.FileIO", "s3.endpoint": "http://mine"}


def test_reading_io_rebuilds_a_fileio_that_followed_the_tables_properties(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("plain", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=tmp_path.as_uri(),
                         **{"s3.region": "mine-1"})
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("a", pa.int64())]),
                                 properties={"s3.endpoint": "http://evil", "s3.region": "evil-1", "k": "v"})
    assert table_side_io_keys(table) == ["k", "s3.endpoint", "s3.region"]  # pyiceberg merged them (not guarded)
    io = reading_io(table)
    assert io is not None and io.properties.get("s3.endpoint") is None and io.properties["s3.region"] == "mine-1"
    assert "k" not in io.properties
    table.io = io
    assert table_side_io_keys(table) == [] and reading_io(table) is None
    guarded = guard(SqlCatalog("plain", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=tmp_path.as_uri()))
    assert table_side_io_keys(guarded.load_table("ns.t")) == []


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


@pytest.mark.skipif(not (hasattr(os, "mkfifo") and os.path.isdir("/proc/self/fd")), reason="needs mkfifo, /proc")
@pytest.mark.timeout(60)
def test_a_data_file_swapped_after_the_check_is_read_through_the_checked_descriptor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A data file (or metadata over 64 MiB) is not read whole: pyarrow opens it. By path, a FIFO swapped in after the
    # check would block that open forever; through the checked descriptor it is the file that was checked.
    import carriers.iceberg.catalogs as catalogs

    data = tmp_path / "part.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), data)
    original = data.read_bytes()
    checked = catalogs._open_regular

    def swap_after_check(path: str, location: str, *, whole: bool = True) -> bytes | int:
        opened = checked(path, location, whole=whole)
        os.unlink(path)
        os.mkfifo(path)
        return opened

    monkeypatch.setattr(catalogs, "_open_regular", swap_after_check)
    guard_local_reads()
    with PyArrowFileIO().new_input(data.as_uri()).open() as stream:
        assert bytes(stream.read()) == original
