"""``FileIOStorage``: an Iceberg table's bytes through its pyiceberg FileIO, so catalog properties and credentials
are the table's own (pyiceberg is imported inside the methods)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TypeVar, cast

from attest.redact import register_secrets
from carriers.storage.base import Storage, open_object_store, seek_reader, stream_pieces
from carriers.storage.errors import not_found
from carriers.storage.options import fileio_obstore_config, fileio_reads_mapped, scheme_of

_T = TypeVar("_T")


def _absent_as_none(action: Callable[[], _T]) -> _T | None:
    """``action()`` on the FileIO, or None where it fails because the object does not exist."""
    try:
        return action()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if not_found(exc):
            return None
        raise


class FileIOStorage(Storage):
    """Bytes of an Iceberg table through its pyiceberg FileIO (the catalog's own properties and credentials)."""

    decode_file_uris = False  # pyiceberg (and Java's HadoopFileIO) read a location string literally

    def __init__(self, uri: str, io: Any) -> None:
        self.io = io
        self._store: Any = False
        super().__init__(uri)
        register_secrets(self.secrets)

    @property
    def secrets(self) -> list[str]:
        # FileIO properties mix catalog settings (uri, warehouse, prefix) with credentials: only the latter.
        from attest.redact import is_secret_name

        props = dict(getattr(self.io, "properties", {}) or {})
        return [str(v) for k, v in props.items() if isinstance(v, str) and is_secret_name(k)]

    def _store_config(self) -> tuple[dict[str, str], dict[str, str]] | None:
        return fileio_obstore_config(scheme_of(self.uri), dict(getattr(self.io, "properties", {}) or {}))

    def _engine_endpoint_mapped(self) -> bool:
        """Whether a store built from the FileIO's properties reaches the server the FileIO reads: only when every
        property of the store's family that is set is mapped or changes no object read (``fileio_reads_mapped``: a
        table's metadata may carry ``s3.proxy-uri`` and the like, which pyarrow honours and obstore would not); an
        ``s3.endpoint`` is mapped; without one pyarrow and obstore each read the environment, but not the same
        variables (``AWS_ENDPOINT_URL`` and ``AWS_ENDPOINT``), so with any of them set the data objects are the
        FileIO's."""
        import os

        props = dict(getattr(self.io, "properties", {}) or {})
        if not fileio_reads_mapped(scheme_of(self.uri), props):
            return False
        if scheme_of(self.uri) not in ("s3", "s3a", "s3n"):
            return True
        if props.get("s3.endpoint"):
            return True
        return not any(name.upper().startswith("AWS_ENDPOINT") for name in os.environ)

    def _object_store(self) -> Any:
        if self._store is False:
            mapped = self._store_config()
            self._store = None if mapped is None else open_object_store(self.uri, *mapped)
        return self._store

    def _read_remote(self, rel: str) -> bytes | None:
        def read() -> bytes:
            with self.io.new_input(f"{self.uri}/{rel}").open() as stream:
                return bytes(stream.read())

        return _absent_as_none(read)

    def _stream_remote(self, rel: str, size: int) -> Iterator[bytes] | None:
        def first_piece() -> tuple[Any, bytes]:
            # Some FileIOs open lazily: a missing object is told by its first read.
            stream = self.io.new_input(f"{self.uri}/{rel}").open(seekable=False)
            return stream, bytes(stream.read(size))

        opened = _absent_as_none(first_piece)
        if opened is None:
            return None
        stream, first = opened
        return stream_pieces(stream, size, first)

    def _engine_ranged(self, rel: str) -> tuple[int, Callable[[int, int], bytes], Callable[[], None]] | None:
        def sized() -> tuple[int, Any]:
            source = self.io.new_input(f"{self.uri}/{rel}")
            return len(source), source.open(seekable=True)

        opened = _absent_as_none(sized)
        if opened is None:
            return None
        size, stream = opened
        return int(size), seek_reader(stream), stream.close

    def _list_remote(self, rel_dir: str) -> list[str]:
        from pyiceberg.io.pyarrow import PyArrowFileIO

        if not isinstance(self.io, PyArrowFileIO):  # pragma: no cover - fsspec FileIO has no listing
            return []
        from pyarrow.fs import FileSelector

        scheme, netloc, path = self.io.parse_location(f"{self.uri}/{rel_dir}")
        fs = self.io.fs_by_scheme(scheme, netloc)
        try:
            infos = fs.get_file_info(FileSelector(path, allow_not_found=True))
        except OSError:
            return []
        return sorted(i.base_name for i in infos)

    def _write_remote(self, rel: str, data: bytes) -> None:
        out = self.io.new_output(f"{self.uri}/{rel}")
        with out.create(overwrite=True) as stream:
            stream.write(data)

    def _open_remote(self, location: str) -> BinaryIO:
        return cast(BinaryIO, self.io.new_input(location).open(seekable=False))

    def open_footer_location(self, location: str) -> BinaryIO:
        # The FileIO's stream of an object (open_location, the hashing's in-order read) does not seek: pyarrow's
        # ParquetFile cannot read its footer. A random-access input reads the footer with ranged GETs.
        if self.local_of(location) is not None:
            return self.open_location(location)
        return cast(BinaryIO, self.io.new_input(location).open(seekable=True))

    def _size_remote(self, location: str) -> int | None:
        try:
            # Not len(): a "folder" (objects under the name, none at it) has no size, which len() refuses.
            size = self.io.new_input(location).__len__()
        except FileNotFoundError:
            return None
        return None if size is None else int(size)
