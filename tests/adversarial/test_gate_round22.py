"""Round 22: the Spark read gate's look at a folder whose Iceberg ``metadata/`` is there but cannot be listed.

Found (failing before the fix): ``_iceberg_folder`` let the listing's error escape, and every caller took an error for
"no table found there" — a file-source read of such a table's ``data/`` (its unreferenced files, its deleted rows) was
let through, while a reader allowed to list ``metadata/`` (another user, the catalog's service) reads the table. Such a
folder is now presumed an Iceberg table's: the read is refused, and can be run again once the folder can be listed.
An error before ``metadata/`` is seen (the job's role may not look above the data it reads) stays "no table found".

The tests run as root, where no permission stops a listing, and Hadoop's local listing was tried with odd entries in
``metadata/`` (``a:b``, a newline, ``#``, ``?``, ``{``, ``%zz``, a backslash, bytes not UTF-8, a FIFO, a dangling
link, a link loop, ``..``): it listed every one (skipping the broken links), so no local entry triggers the error. The
file system double below fails the calls as a permission or a store's error does."""

from __future__ import annotations

from typing import Any

import pytest

from tests.adversarial.test_fastpaths_round21 import _JPath, _Status


class _Jvm:
    class org:
        class apache:
            class hadoop:
                class fs:
                    Path = _JPath


class _FileStatus:
    def __init__(self, folder: bool) -> None:
        self.folder = folder

    def isDirectory(self) -> bool:
        return self.folder


class _FS:
    """A Hadoop file system holding ``folders`` (and the files in ``files``) that fails each call named in ``fail``
    on ``<table>/metadata`` (an error, as a permission or a throttled request gives, not "absent")."""

    def __init__(self, table: str, names: list[str], fail: set[str]) -> None:
        self.metadata = f"{table}/metadata"
        self.names, self.fail = names, fail

    def _check(self, call: str, path: Any) -> None:
        if str(path) == self.metadata and call in self.fail:
            raise RuntimeError(f"{call}: access denied")

    def exists(self, path: Any) -> bool:
        self._check("exists", path)
        return str(path) == self.metadata

    def getFileStatus(self, path: Any) -> _FileStatus:
        self._check("getFileStatus", path)
        return _FileStatus(True)

    def listStatus(self, path: Any) -> list[_Status]:
        self._check("listStatus", path)
        return [_Status(f"{self.metadata}/{n}") for n in self.names]


TABLE = "file:/lake/orders"


@pytest.mark.parametrize("fail", [{"listStatus"}, {"getFileStatus"}, {"getFileStatus", "listStatus"}])
def test_a_metadata_folder_that_cannot_be_listed_is_presumed_a_tables(fail: set[str]) -> None:
    from carriers.spark import gate

    fs = _FS(TABLE, ["v1.metadata.json"], fail)
    assert gate._iceberg_folder(fs, _Jvm, _JPath(TABLE)) is True
    walk = gate._Walk(_Spark())  # type: ignore[arg-type]
    walk.fs["file:"] = fs
    walk._look_alone(fs, _JPath, TABLE)
    assert walk.kinds[TABLE] == "iceberg"


def test_a_listable_metadata_folder_is_judged_by_its_names() -> None:
    """The control: listed, a ``metadata/`` of Iceberg metadata files is a table's, one of anything else is not."""
    from carriers.spark import gate

    assert gate._iceberg_folder(_FS(TABLE, ["v1.metadata.json"], set()), _Jvm, _JPath(TABLE)) is True
    assert gate._iceberg_folder(_FS(TABLE, ["notes.txt"], set()), _Jvm, _JPath(TABLE)) is False


def test_an_error_before_metadata_is_seen_is_still_no_table_found() -> None:
    """``exists`` failing (a prefix the job may not look at, above the data it reads) is not taken for a table: every
    read below a store's locked parent would be refused otherwise. Only that folder is unlooked at."""
    from carriers.spark import gate

    fs = _FS(TABLE, ["v1.metadata.json"], {"exists"})
    walk = gate._Walk(_Spark())  # type: ignore[arg-type]
    walk.fs["file:"] = fs
    walk._look_alone(fs, _JPath, TABLE)
    assert walk.kinds.get(TABLE) is None


class _Spark:
    _jvm = _Jvm
