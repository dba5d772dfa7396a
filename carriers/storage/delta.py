"""``DeltaStorage``: a Delta table's bytes through delta-rs's own object-store handler, so ``storage_options`` mean
what they mean to delta-rs (deltalake is imported inside the methods: a local table never loads it here)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, cast

from attest.redact import register_secrets
from carriers.storage.base import Storage, check_name, open_object_store, seek_reader, stream_pieces
from carriers.storage.errors import coded, is_panic, not_found
from carriers.storage.options import check_options, obstore_config, option_secrets, scheme_of


class DeltaStorage(Storage):
    """Bytes of a Delta table through delta-rs's object store (``storage_options`` as delta-rs takes them)."""

    def __init__(self, uri: str, options: dict[str, str] | None = None) -> None:
        super().__init__(uri)
        self.options = dict(options or {})
        check_options(self.options)
        register_secrets(option_secrets(self.options))
        self._handler: Any = None
        self._handlers: dict[str, Any] = {}
        self._store: Any = False  # False: not built yet; None: no conditional PUT for these options

    @property
    def secrets(self) -> list[str]:
        return option_secrets(self.options)

    def _store_config(self) -> tuple[dict[str, str], dict[str, str]] | None:
        return obstore_config(scheme_of(self.uri), self.options)

    def _object_store(self) -> Any:
        if self._store is False:
            mapped = self._store_config()
            self._store = None if mapped is None else open_object_store(self.uri, *mapped)
        return self._store

    @property
    def handler(self) -> Any:
        if self._handler is None:
            from deltalake._internal import DeltaFileSystemHandler

            self._handler = DeltaFileSystemHandler(table_uri=self.uri, options=self.options or None)
        return self._handler

    def _open_or_none(self, rel: str) -> Any:
        """delta-rs's input stream of ``rel``, or None when it does not exist."""
        try:
            return self.handler.open_input_file(rel)
        except Exception as exc:  # object_store raises its own error types; NotFound is the common case
            if not_found(exc):
                return None
            raise

    def _read_remote(self, rel: str) -> bytes | None:
        stream = self._open_or_none(rel)
        if stream is None:
            return None
        try:
            return bytes(stream.read(stream.size()))
        finally:
            stream.close()

    def _stream_remote(self, rel: str, size: int) -> Iterator[bytes] | None:
        stream = self._open_or_none(rel)
        return None if stream is None else stream_pieces(stream, size)

    def _engine_ranged(self, rel: str) -> tuple[int, Callable[[int, int], bytes], Callable[[], None]] | None:
        stream = self._open_or_none(rel)
        return None if stream is None else (int(stream.size()), seek_reader(stream), stream.close)

    def list_folders(self, rel_dir: str) -> list[str]:
        """Folder names directly under ``rel_dir`` ("" is the root): one delimiter listing on an object store."""
        from pyarrow.fs import FileType

        if rel_dir:
            check_name(rel_dir)
        if self.local_root is not None:
            base = self.local_root.joinpath(*rel_dir.split("/")) if rel_dir else self.local_root
            try:
                return sorted(e.name for e in os.scandir(base) if e.is_dir(follow_symlinks=False))
            except (FileNotFoundError, NotADirectoryError):
                return []
        try:
            infos = self.handler.get_file_info_selector(rel_dir, True, False)
        except Exception as exc:
            raise coded(exc, where=f"{self.uri}/{rel_dir}", engine="delta-rs", secrets=self.secrets) from None
        except BaseException as exc:
            if not is_panic(exc):
                raise
            raise coded(exc, where=f"{self.uri}/{rel_dir}", engine="delta-rs", secrets=self.secrets) from None
        return sorted(i.path.rstrip("/").rsplit("/", 1)[-1] for i in infos if i.type == FileType.Directory)

    def _list_remote(self, rel_dir: str) -> list[str]:
        # The raw handler takes the selector's fields as arguments (pyarrow's PyFileSystem would unpack them).
        infos = self.handler.get_file_info_selector(rel_dir, True, False)
        return sorted(i.path.rstrip("/").rsplit("/", 1)[-1] for i in infos)

    def _write_remote(self, rel: str, data: bytes) -> None:
        out = self.handler.open_output_stream(rel, None)
        try:
            out.write(data)
        finally:
            out.close()

    def _relative_or_handler(self, location: str) -> tuple[Any, str]:
        root = self.uri + "/"
        if location.startswith(root):
            return self.handler, location[len(root):]
        parent, _, name = location.rpartition("/")
        if parent not in self._handlers:
            from deltalake._internal import DeltaFileSystemHandler

            self._handlers[parent] = DeltaFileSystemHandler(table_uri=parent, options=self.options or None)
        return self._handlers[parent], name

    def _open_remote(self, location: str) -> BinaryIO:
        handler, rel = self._relative_or_handler(location)
        return cast(BinaryIO, handler.open_input_file(rel))

    def _size_remote(self, location: str) -> int | None:
        from pyarrow.fs import FileType

        handler, rel = self._relative_or_handler(location)
        info = handler.get_file_info([rel])[0]
        return int(info.size) if info.type == FileType.File else None
