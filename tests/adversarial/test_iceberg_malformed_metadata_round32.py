"""Round 32, found by fuzzing the metadata of an attested Iceberg table: values of the wrong JSON type were internal
errors (``ERROR``, exit 2, "set ATTEST_DEBUG=1 for a traceback") rather than coded verdicts.

- the table's ``properties`` as null, a list, a number or a boolean: pyiceberg's model validator raises
  ``AttributeError`` (not its ValidationError) — now ``table_unreadable``, as any metadata pyiceberg cannot read;
- a snapshot summary value that is no JSON string (an attestation's binding of ``5``, a counter of ``true``):
  pyiceberg keeps it as written, Iceberg Java refuses the whole table ("Cannot parse to a string value") — now
  ``table_inconsistent`` (or the attestation's own problem), never read as text;
- a rewrite's summary counter of ``'²'`` (``str.isdigit`` holds, ``int`` refuses it): the counters say nothing."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.test_iceberg_branch_names_round30 import TABLE, _flags, _json
from tests.iceberg.conftest import PROGRAM, rewrite_metadata, rows


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    return catalog.create_table("ns.t", schema=rows(0).schema)


def _attested(catalog: SqlCatalog, table: Table) -> Table:
    table.append(rows(0))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return catalog.load_table("ns.t")


@pytest.mark.parametrize("value", [None, [], 5, True, "text"])
def test_properties_of_the_wrong_type_are_unreadable(catalog: SqlCatalog, table: Table, tmp_path: Path,
                                                    value: Any) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["properties"] = value

    table = _attested(catalog, table)
    # pyiceberg refuses to load it back (the helper's last step): the catalog row points at it all the same
    with contextlib.suppress(Exception):
        rewrite_metadata(catalog, table, edit)
    for args in (("verify", TABLE), ("audit", TABLE.rsplit(".", 1)[0])):
        code, out = _json(*args, *_flags(tmp_path))
        codes = [e["code"] for e in out.get("errors", [])] + [
            r.get("code") for r in out.get("tables", []) if r.get("code")]
        assert code == 2 and "internal_error" not in codes and "table_unreadable" in codes, (args, out)


def _set_summary(table: Table, pick: Callable[[dict[str, Any]], bool], key: Callable[[str], bool],
                 value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        hits = 0
        for snap in doc["snapshots"]:
            if pick(snap):
                for k in list(snap["summary"]):
                    if key(k):
                        snap["summary"][k] = value
                        hits += 1
        assert hits, doc["snapshots"]
    return edit


@pytest.mark.parametrize("value", [5, True, None, 1.5])
def test_a_binding_that_is_no_string_is_a_verdict(catalog: SqlCatalog, table: Table, tmp_path: Path,
                                                  value: Any) -> None:
    table = _attested(catalog, table)
    head = table.metadata.refs["main"].snapshot_id
    rewrite_metadata(catalog, table, _set_summary(table, lambda s: s["snapshot-id"] == head,
                                                  lambda k: k.startswith("recipe_"), value))
    code, out = _json("verify", TABLE, *_flags(tmp_path))
    codes = [e["code"] for e in out["errors"]]
    assert code == 1 and not out["passed"] and "internal_error" not in codes, out  # was: exit 2, internal_error


def _property(doc: dict[str, Any]) -> None:
    doc["properties"]["owner.count"] = 1


@pytest.mark.parametrize("where", ["summary", "properties"])
def test_a_value_that_is_no_string_makes_the_table_inconsistent(catalog: SqlCatalog, table: Table,
                                                                tmp_path: Path, where: str) -> None:
    """The attestation intact; the data snapshot's ``added-records``, or a table property, a JSON number: Java
    refuses the table (measured below), pyiceberg reads it — was VERIFIED."""
    table = _attested(catalog, table)
    rewrite_metadata(catalog, table, _set_summary(table, lambda s: True, lambda k: k == "added-records", 3)
                     if where == "summary" else _property)
    code, out = _json("verify", TABLE, "--level", "files", *_flags(tmp_path))
    assert code == 1 and [e["code"] for e in out["errors"]] == ["table_inconsistent"], out
    assert "not a JSON string" in out["errors"][0]["message"], out


def test_a_counter_of_other_digits_says_nothing() -> None:
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary

    from carriers.iceberg.rewrites import _summary_counts

    def snap(counter: str) -> Snapshot:
        return Snapshot(snapshot_id=1, timestamp_ms=0, manifest_list="m.avro",
                        summary=Summary(Operation.REPLACE, **{"added-data-files": counter}))

    assert _summary_counts(snap("²")) is None  # was: ValueError from int()
    assert _summary_counts(snap("2")) is not None


@pytest.mark.spark
@pytest.mark.parametrize("where", ["summary", "properties"])
def test_java_refuses_a_value_that_is_no_string(spark: Any, spark_warehouse: Path, where: str) -> None:
    """Measured: Iceberg Java's metadata parser (Spark 4.1 / Iceberg 1.12's ``TableMetadataParser``, what its catalogs
    load a table with) refuses a table whose snapshot summary value, or table property, is a JSON number — the ground
    for ``table_inconsistent`` above; the same document unedited parses, and pyiceberg's parser reads the edited
    one. (Read through the parser itself: a catalog's refresh retries a refused file for ~90 s before it gives up.)"""
    from carriers.storage.base import local_path_of
    from tests.adversarial.test_spark_audit_branches import _attested_main
    from tests.adversarial.test_spark_view_attacks import _pyiceberg

    _, name = _attested_main(spark, "r32m")
    table = _pyiceberg(spark_warehouse, name)
    doc = json.loads(Path(local_path_of(table.metadata_location) or table.metadata_location).read_text())
    parser = spark._jvm.org.apache.iceberg.TableMetadataParser
    assert parser.fromJson(json.dumps(doc)).currentSnapshot() is not None  # as written: read
    if where == "summary":
        doc["snapshots"][0]["summary"]["added-records"] = 1
    else:
        doc["properties"]["owner.count"] = 1
    with pytest.raises(Exception) as refused:
        parser.fromJson(json.dumps(doc))
    assert "Cannot parse to a string value" in str(refused.value), refused.value
    from pyiceberg.table.metadata import TableMetadataUtil

    assert TableMetadataUtil.parse_raw(json.dumps(doc)).current_snapshot_id is not None  # pyiceberg reads it


def test_a_record_over_a_total_that_is_no_number_is_refused(catalog: SqlCatalog, table: Table,
                                                            tmp_path: Path) -> None:
    """pyiceberg carries the head's totals into a new snapshot's summary and raises on one that is no number (Java
    skips it): ``attest record`` was an internal error; now ``unsupported_table``, nothing committed."""
    table.append(rows(0))
    head = catalog.load_table("ns.t").metadata.refs["main"].snapshot_id
    table = rewrite_metadata(catalog, catalog.load_table("ns.t"), _set_summary(
        table, lambda s: s["snapshot-id"] == head, lambda k: k == "total-files-size", "19-1"))
    before = table.metadata_location
    code, out = _json("record", TABLE, "--model", "m", "--sql", "select 1", *_flags(tmp_path))
    assert code == 2 and [e["code"] for e in out["errors"]] == ["unsupported_table"], out  # was: internal_error
    assert "nothing was committed" in out["errors"][0]["message"], out
    assert catalog.load_table("ns.t").metadata_location == before


@pytest.mark.parametrize("field", ["location", "manifest-list"])
def test_a_location_holding_a_nul_byte_is_a_verdict(catalog: SqlCatalog, table: Table, tmp_path: Path,
                                                    field: str) -> None:
    """Python's ``os.stat`` raises ``ValueError`` for a name holding NUL (no file system has one): the table's location
    so spelled was an internal error for ``verify``, ``record`` and ``lineage``. Now no file is under such a root and
    no such file is read: coded."""
    table = _attested(catalog, table)

    def edit(doc: dict[str, Any]) -> None:
        node = doc if field == "location" else doc["snapshots"][-1]
        assert node[field].startswith("file:///tmp/")
        node[field] = node[field][:10] + "\x00" + node[field][10:]  # in the first folder's name: /tm\x00p/...

    rewrite_metadata(catalog, table, edit)
    for args in (("verify", TABLE), ("lineage", TABLE), ("record", TABLE, "--model", "m", "--sql", "select 1")):
        code, out = _json(*args, *_flags(tmp_path))
        assert code in (1, 2) and "internal_error" not in json.dumps(out), (args, out)  # was: internal_error


def _garbled(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "header":  # the schema in the header no longer UTF-8 JSON
        at = data.index(b"avro.schema") + len(b"avro.schema") + 3
        data[at] = 0xFF
    else:  # a byte of the first (deflated) data block, after the header's sync marker
        at = data.index(b"\x00", data.index(b"avro.codec")) + 40
        data[at] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("which", ["manifest list", "manifest"])
@pytest.mark.parametrize("how", ["header", "block"])
def test_a_garbled_manifest_is_unreadable(catalog: SqlCatalog, table: Table, tmp_path: Path, which: str,
                                          how: str) -> None:
    """pyiceberg's Avro reader raised UnicodeDecodeError, JSONDecodeError, zlib.error, SystemError… on garbled bytes
    of a manifest list or manifest (found fuzzing): internal errors. Now ``table_unreadable`` naming the file."""
    from tests.iceberg.conftest import local

    table = _attested(catalog, table)
    head = table.snapshot_by_id(table.metadata.refs["main"].snapshot_id)
    assert head is not None
    listed = local(head.manifest_list)
    path = listed if which == "manifest list" else local(head.manifests(table.io)[0].manifest_path)
    _garbled(path, how)
    for args in (("verify", TABLE), ("lineage", TABLE), ("show", TABLE)):  # show reads the attestation alone
        code, out = _json(*args, *_flags(tmp_path))
        assert code in ((0,) if args[0] == "show" else (1, 2)) and "internal_error" not in json.dumps(out), (args, out)
    code, out = _json("verify", TABLE, *_flags(tmp_path))
    codes = [e["code"] for e in out["errors"]]
    # a flipped byte of a block may still inflate, into other records (a path no reader resolves alike, say): coded
    assert codes == ["table_unreadable"] if how == "header" else codes and "internal_error" not in codes, out
