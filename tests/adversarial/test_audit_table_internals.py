"""Tables hidden inside another table's own folders (``_delta_log/``, ``_recipe_attest/``, ``_change_data/``,
``_delta_index/``) or inside a hidden table's folders (``_staging/t/metadata/``, ``_staging/t/_delta_log/``).

Before, the walk did not look into a table's ``_delta_log`` or ``_recipe_attest`` at all, looked at its
``_change_data`` and ``_delta_index`` only as tables themselves, and the hidden-folder search never entered a table
it found: a tampered table copied there was neither audited nor listed, the audit exiting 0 with nothing said, while
delta-rs opens it by its name (measured in each test: ``DeltaTable(path).version()``; delta-rs refuses a table inside
``_delta_log/``, another engine's path logic may not). Such places are hidden as a ``_staging`` folder is (Spark and
Delta readers of the folder above do not read them): each table there is now listed ``SKIPPED (table_not_audited)``,
as a table in ``_staging/`` is, and a hidden folder that cannot be listed says so. Also here: links the walk cannot
follow, a log folder in another case on a case-insensitive file system, and (held) an Iceberg folder holding only
``.gz.metadata.json`` names."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.adversarial.test_audit_discovery_attacks import attested, audit, tamper


def planted(lake: Path, where: str, scratch: Path) -> Path:
    """An attested table made elsewhere, copied to ``lake/where`` and tampered there (as a storage writer can)."""
    source = attested(scratch / where.replace("/", "_"))
    shutil.copytree(source, lake / where)
    tamper(lake / where)
    return lake / where


OWN = ["orders/_change_data/x", "orders/_delta_index/x", "orders/_recipe_attest/x", "orders/_delta_log/x",
       "orders/_delta_log/_sidecars/x"]
IN_HIDDEN = ["_staging/t/_delta_log/y", "_staging/t/metadata/z", "_staging/t/_recipe_attest/w"]


def test_tables_inside_a_tables_own_folders_are_listed(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    attested(lake / "orders")
    attested(lake / "_staging" / "t")
    for where in OWN + IN_HIDDEN:
        planted(lake, where, tmp_path / "src")
    for where in ("orders/_change_data/x", "orders/_recipe_attest/x", "_staging/t/metadata/z"):
        assert DeltaTable(str(lake / where)).version() == 1  # a reader opens the tampered table by its name
    rc, doc = audit(str(lake))
    assert [(t["table"], t["outcome"]) for t in doc["tables"]] == [(str(lake / "orders"), "VERIFIED")], doc
    skipped = {s["path"]: s for s in doc["skipped"]}
    for where in OWN + IN_HIDDEN:
        entry = skipped.get(str(lake / where))
        assert entry is not None, (where, sorted(skipped))  # before: not listed, the audit said nothing of it
        assert entry["code"] == "table_not_audited" and "a delta table" in entry["message"], entry
    assert str(lake / "_staging" / "t") in skipped
    assert set(skipped) == {str(lake / w) for w in OWN + IN_HIDDEN} | {str(lake / "_staging" / "t")}
    assert rc == 0  # listed as a table in _staging/ is: the exit code stays the audited tables'


def test_a_table_with_change_data_and_sidecars_lists_nothing(tmp_path: Path) -> None:
    """Control: a table's own folders holding what they hold (change data files, a log with a ``_sidecars/`` folder,
    the attestation sidecars) are no table: nothing is listed."""
    lake = tmp_path / "lake"
    table = attested(lake / "orders")
    for folder in ("_change_data/p=1", "_delta_log/_sidecars", "_delta_index"):
        (table / folder).mkdir(parents=True, exist_ok=True)
        (table / folder / "f.parquet").write_bytes(b"x")
    rc, doc = audit(str(lake))
    assert rc == 0 and doc["skipped"] == [] and len(doc["tables"]) == 1, doc


def test_a_hidden_folder_that_cannot_be_listed_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hidden folder (or one below it) the auditor may not list: before, the search passed over it in silence. Now
    it is listed (the tables under it are unknown); a folder of the walk itself that cannot be listed is, as before, an
    ERROR line (held). Permissions are simulated: the tests run as root, whom ``chmod 000`` does not stop."""
    lake = tmp_path / "lake"
    attested(lake / "orders")
    (lake / "_staging" / "eu").mkdir(parents=True)
    (lake / "team").mkdir()
    denied = {str(lake / "_staging" / "eu"), str(lake / "team")}
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if str(path) in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    rc, doc = audit(str(lake))
    skipped = {s["path"]: s for s in doc["skipped"]}
    entry = skipped.get(str(lake / "_staging" / "eu"))
    assert entry is not None and "cannot be listed (Permission denied)" in entry["message"], doc["skipped"]
    errors = {t["table"]: t for t in doc["tables"] if t["outcome"] == "ERROR"}
    assert errors[str(lake / "team")]["code"] == "table_unreadable", doc
    assert rc == 2


def test_a_link_the_walk_cannot_follow_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link looping on itself (``ELOOP``) and a link whose target the auditor may not look at (``EACCES`` on the
    way, simulated): before, the walk passed over both without a word (``DirEntry.is_dir`` raised, the entry was
    dropped). A reader whose permissions differ opens the table behind the second: it is an ERROR line now; the loop
    reaches nothing and is listed."""
    lake = tmp_path / "lake"
    attested(lake / "orders")
    hidden_table = attested(tmp_path / "private" / "finance")
    os.symlink(lake / "loop", lake / "loop")
    os.symlink(hidden_table, lake / "finance")
    real = os.scandir

    class Denied:
        """The entry ``finance`` as a walk not allowed to look behind it sees it."""

        def __init__(self, entry: Any) -> None:
            self.entry, self.name, self.path = entry, entry.name, entry.path

        def is_symlink(self) -> bool:
            return True

        def is_dir(self, follow_symlinks: bool = True) -> bool:
            raise PermissionError(13, "Permission denied", self.path)

    class Listing(list[Any]):
        def __enter__(self) -> Listing:
            return self

        def __exit__(self, *args: Any) -> None:
            pass

    def scandir(path: Any = ".") -> Any:
        with real(path) as entries:
            return Listing(Denied(e) if e.name == "finance" else e for e in entries)

    monkeypatch.setattr(os, "scandir", scandir)
    rc, doc = audit(str(lake))
    skipped = {s["path"]: s for s in doc["skipped"]}
    assert skipped[str(lake / "loop")]["code"] == "table_not_found", doc["skipped"]
    errors = {t["table"]: t for t in doc["tables"] if t["outcome"] == "ERROR"}
    assert errors[str(lake / "finance")]["code"] == "table_unreadable", doc
    assert rc == 2


def test_a_log_folder_in_other_case_on_a_case_insensitive_file_system(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``orders/_DELTA_LOG/`` (the log folder renamed in capitals), tampered: on a case-insensitive file system (APFS,
    NTFS) delta-rs opens ``orders`` through it, and the walk, looking for the exact name ``_delta_log``, found no table
    and searched the capitalised folder as a hidden one: neither audited nor listed. Simulated (this machine's file
    systems are case-sensitive): ``os.path.isdir`` answers as such a file system does. On a case-sensitive file system
    the folder is no table, to delta-rs and to the walk alike (held)."""
    lake = tmp_path / "lake"
    attested(lake / "customers")
    tamper(attested(lake / "orders"))
    (lake / "orders" / "_delta_log").rename(lake / "orders" / "_DELTA_LOG")
    with pytest.raises(Exception):  # noqa: B017  (delta-rs's own error types)
        DeltaTable(str(lake / "orders"))
    rc, doc = audit(str(lake))
    assert [t["table"] for t in doc["tables"]] == [str(lake / "customers")] and rc == 0, doc
    real = os.path.isdir

    def isdir(path: Any) -> bool:
        head, tail = os.path.split(str(path))
        return real(os.path.join(head, "_DELTA_LOG") if tail == "_delta_log" else path) or real(path)

    monkeypatch.setattr(os.path, "isdir", isdir)
    rc, doc = audit(str(lake))
    outcomes = {t["table"]: t["outcome"] for t in doc["tables"]}
    assert str(lake / "orders") in outcomes and outcomes[str(lake / "orders")] != "VERIFIED", doc
    assert rc != 0


def test_an_iceberg_folder_holding_only_gz_metadata_names_is_found(tmp_path: Path) -> None:
    """Held (pinned): an Iceberg table folder whose metadata files are all named ``<n>-<uuid>.gz.metadata.json``
    (gzip-compressed, as ``write.metadata.compression-codec=gzip`` names them) is found and read from the newest
    one, labelled so; pyiceberg's ``StaticTable`` reads the same snapshot."""
    import gzip

    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import StaticTable

    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("x", pa.int64())]))
    table.append(pa.table({"x": [1, 2]}))
    metadata = Path(table.location().removeprefix("file://")) / "metadata"
    for file in sorted(metadata.glob("*.metadata.json")):
        file.with_name(file.name.replace(".metadata.json", ".gz.metadata.json")).write_bytes(
            gzip.compress(file.read_bytes()))
        file.unlink()
    newest = sorted(metadata.glob("00001-*.gz.metadata.json"))
    assert len(newest) == 1 and not list(metadata.glob("*[!z].metadata.json"))
    rc, doc = audit(str(tmp_path / "wh"))
    rows = doc["tables"]
    assert [(r["table"], r["outcome"]) for r in rows] == [(str(metadata.parent), "UNATTESTED")], doc
    assert f"metadata/{newest[0].name}" in rows[0]["notes"][0] and rc == 1
    assert rows[0]["version"] == str(StaticTable.from_metadata(str(newest[0])).current_snapshot().snapshot_id)
