"""Round 20b, Iceberg: which metadata file is current for a table opened by its folder (no catalog).

A folder is read statically from the metadata file with the highest version number in its name, and refused when
Iceberg Java's Hadoop tables (``spark.read.format("iceberg").load(folder)``: ``HadoopTableOperations``) would read
another file. Java reads ``version-hint.text``, or, with none (or one it cannot parse), lists the folder and takes the
highest ``N`` whose ``v<N>.metadata.json`` exists *spelt as Java prints the int*; then up while ``v<N+1>`` exists.

The forgery: a Hadoop table ``v0`` (empty), ``v1``, ``v2`` (two rows, attested), then ``v3`` (a later commit: here
the empty table again), no hint; a copy of the attested ``v2`` planted as ``v04.metadata.json`` or
``v2147483648.metadata.json``. The static read took the highest number (4, 2147483648) and said VERIFIED; the Hadoop
check looked for ``v4`` (absent: "no Hadoop reader") or found ``v2147483648`` itself. Spark reads ``v3``: no row
(tests/adversarial/test_spark_iceberg_round20b.py). Now the Hadoop choice counts only names Java reads as versions
and ``unsupported_table`` says which version they read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.adversarial.test_audit_discovery_attacks import _hadoop_folder
from tests.test_audit_warehouse import audit_json
from tests.test_audit_warehouse import rows as by_name

TABLE = "W/iceberg/ns/t"


def hadoop_table_with_a_later_commit(tmp_path: Path) -> tuple[Path, list[Path]]:
    """The Hadoop table ``v0``..``v2`` (``v2`` attested, two rows) with ``v3``, a later commit reading no row (a copy
    of the empty ``v0``), and no ``version-hint.text``."""
    folder, files = _hadoop_folder(tmp_path)
    later = folder / "metadata" / "v3.metadata.json"
    shutil.copy(files[0], later)
    return folder, [*files, later]


def audited(tmp_path: Path) -> dict[str, object]:
    rc, doc = audit_json("W", cwd=tmp_path)
    row = by_name(doc)[TABLE]
    return {"rc": rc, **row}


@pytest.mark.parametrize("planted", ["v04.metadata.json", "v2147483648.metadata.json", "v0000000004.metadata.json"])
def test_an_attested_copy_under_a_version_java_does_not_read_is_refused(tmp_path: Path, planted: str) -> None:
    """The attested ``v2`` copied to a name whose number is the highest but that Java's Hadoop tables do not read as
    that version: VERIFIED before (exit 0), while Spark reads ``v3``; now ``unsupported_table`` naming version 3."""
    folder, files = hadoop_table_with_a_later_commit(tmp_path)
    shutil.copy(files[2], folder / "metadata" / planted)
    row = audited(tmp_path)
    assert (row["rc"], row["outcome"], row["code"]) == (2, "ERROR", "unsupported_table"), row
    assert "read version 3" in str(row["message"]) and planted in str(row["message"]), row


def test_a_version_hint_past_javas_int_is_refused(tmp_path: Path) -> None:
    """A hint of ``2147483648`` with that file planted: Java's ``parseInt`` fails on it and lists the folder instead
    (``v3``); it was read as version 2147483648 and the file verified. Now the hint is one this folder cannot tell."""
    folder, files = hadoop_table_with_a_later_commit(tmp_path)
    meta = folder / "metadata"
    shutil.copy(files[2], meta / "v2147483648.metadata.json")
    (meta / "version-hint.text").write_text("2147483648\n")
    row = audited(tmp_path)
    assert (row["rc"], row["code"]) == (2, "unsupported_table"), row
    assert "version-hint.text '2147483648'" in str(row["message"]), row


@pytest.mark.parametrize("hint", [None, "3\n", "0003"])
def test_controls_the_hadoop_choice_agrees(tmp_path: Path, hint: str | None) -> None:
    """Controls: the later ``v3`` read by both (no hint, Hadoop's own hint, leading zeros Java's ``parseInt`` takes —
    and pyiceberg's folder reader, for which ``3\n`` and ``0003`` name no file) is no attested version of the rows:
    UNATTESTED or a failure, never VERIFIED, and never refused for which file is current. (An older hint with no gap
    above it, ``1``, is now refused: pyiceberg's folder reader reads ``v1``, test below.)"""
    folder, _ = hadoop_table_with_a_later_commit(tmp_path)
    if hint is not None:
        (folder / "metadata" / "version-hint.text").write_text(hint)
    row = audited(tmp_path)
    assert row["outcome"] != "VERIFIED" and row["code"] != "unsupported_table", row
    assert any("metadata/v3.metadata.json" in n for n in row["notes"]), row  # type: ignore[attr-defined]


def test_control_the_attested_file_spelt_as_java_spells_it_verifies(tmp_path: Path) -> None:
    """Control: ``v3`` the attested ``v2``'s copy, ``v04`` absent: both read ``v3``, VERIFIED."""
    folder, files = _hadoop_folder(tmp_path)
    shutil.copy(files[2], folder / "metadata" / "v3.metadata.json")
    row = audited(tmp_path)
    assert (row["rc"], row["outcome"]) == (0, "VERIFIED"), row


def catalog_at_v02(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The catalog-owned folder below: ``v02.metadata.json`` current in the catalog, ``v2.metadata.json`` empty."""
    import sqlite3

    from tests.adversarial.test_audit_round14 import _catalog_folder_with_hadoop_metadata

    folder, env = _catalog_folder_with_hadoop_metadata(tmp_path)
    meta = folder / "metadata"
    (meta / "v1.metadata.json").unlink()
    current = max(meta.glob("0000*-*.metadata.json"))
    current.rename(meta / "v02.metadata.json")
    shutil.copy(min(meta.glob("00000-*.metadata.json")), meta / "v2.metadata.json")
    with sqlite3.connect(tmp_path / "W" / "iceberg_catalog.db") as db:
        db.execute("UPDATE iceberg_tables SET metadata_location = ?", ((meta / "v02.metadata.json").as_uri(),))
    return folder, env


def test_a_catalogs_v0n_file_beside_the_v_n_hadoop_readers_read_is_refused(tmp_path: Path) -> None:
    """A folder a configured catalog owns, the catalog's current metadata file named ``v02.metadata.json`` (the
    attested file, renamed and re-pointed in the catalog), and a ``v2.metadata.json`` beside it (the empty table's
    first file). Path readers read ``v2`` (no row); the folder check took ``v02`` for the file they read (the same
    number) and the folder VERIFIED through its catalog. Now ``unsupported_table``."""
    _, env = catalog_at_v02(tmp_path)
    rc, doc = audit_json("W", "iceberg://iceberg/ns", cwd=tmp_path, env=env)
    assert by_name(doc)["iceberg://iceberg/ns.t"]["outcome"] == "VERIFIED", doc  # the catalog's own reading
    row = by_name(doc)[TABLE]
    assert (rc, row["code"]) == (2, "unsupported_table") and "metadata/v2.metadata.json" in str(row["message"]), doc


def pyiceberg_folder_rows(folder: Path) -> int:
    """The rows pyiceberg's reader of a table folder reads (``StaticTable.from_metadata(<folder>)``: the file
    ``version-hint.text`` names, no climb)."""
    from pyiceberg.table import StaticTable

    return int(StaticTable.from_metadata(str(folder)).scan().to_arrow().num_rows)


@pytest.mark.parametrize("layout", ["hadoop", "pyiceberg"])
def test_a_hint_pyiceberg_reads_as_an_older_file_is_refused(tmp_path: Path, layout: str) -> None:
    """pyiceberg's folder reader takes ``version-hint.text``'s text as the file (``v<text>.metadata.json``, or the
    name itself) and does not climb: a Hadoop table's hint of ``0`` (Java climbs to the attested ``v2``, the Hadoop
    check agreed), or a pyiceberg-named folder's hint naming ``00000-<uuid>.metadata.json`` (no ``v<N>``: no Hadoop
    check), made it read the empty table while the folder VERIFIED as of the newest file, exit 0. Now
    ``unsupported_table`` naming the file that reader reads."""
    from tests.test_audit_warehouse import warehouse

    if layout == "hadoop":
        folder, _ = _hadoop_folder(tmp_path)
        hinted = "v0.metadata.json"
        (folder / "metadata" / "version-hint.text").write_text("0")
    else:
        folder = warehouse(tmp_path)["iceberg"]
        hinted = min((folder / "metadata").glob("00000-*.metadata.json")).name
        (folder / "metadata" / "version-hint.text").write_text(hinted)
    assert pyiceberg_folder_rows(folder) == 0  # the attested newest file holds two rows
    row = audited(tmp_path)
    assert (row["rc"], row["code"]) == (2, "unsupported_table"), row
    assert f"reads metadata/{hinted}" in str(row["message"]), row


@pytest.mark.parametrize("hint", ["2", "2\n", "nothing"])
def test_control_a_hint_pyiceberg_reads_as_the_newest_or_as_no_file(tmp_path: Path, hint: str) -> None:
    """Controls: the hint Java writes (``2``) reads the attested ``v2`` in every reader; a hint
    naming no file (``2\\n``: ``2\\n.metadata.json``; ``nothing``) makes pyiceberg's folder reader fail, no other rows
    (Java's parse reads ``2\\n`` as 2): VERIFIED. (``nothing`` is a hint Java cannot parse: refused by the Hadoop
    check, as before.)"""
    folder, _ = _hadoop_folder(tmp_path)
    (folder / "metadata" / "version-hint.text").write_text(hint)
    row = audited(tmp_path)
    if hint == "nothing":
        assert row["code"] == "unsupported_table" and "Hadoop tables" in str(row["message"]), row
    else:
        assert (row["rc"], row["outcome"]) == (0, "VERIFIED"), row


def test_a_hint_in_a_catalogs_folder_naming_an_older_file_is_refused(tmp_path: Path) -> None:
    """A catalog-owned folder (no ``v<N>`` file) with a ``version-hint.text`` naming its first metadata file:
    pyiceberg's folder reader reads the empty table, the folder VERIFIED through its catalog. Now refused."""
    from tests.adversarial.test_audit_round14 import _catalog_folder_with_hadoop_metadata

    folder, env = _catalog_folder_with_hadoop_metadata(tmp_path)
    meta = folder / "metadata"
    (meta / "v1.metadata.json").unlink()
    (meta / "version-hint.text").write_text(min(meta.glob("00000-*.metadata.json")).name)
    assert pyiceberg_folder_rows(folder) == 0
    rc, doc = audit_json("W", "iceberg://iceberg/ns", cwd=tmp_path, env=env)
    assert by_name(doc)["iceberg://iceberg/ns.t"]["outcome"] == "VERIFIED", doc
    row = by_name(doc)[TABLE]
    assert (rc, row["code"]) == (2, "unsupported_table") and "pyiceberg's reader" in str(row["message"]), doc
