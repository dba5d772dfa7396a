"""A rewrite's added Parquet file that stores a list column in a legacy (non-3-level) shape over the same values.

Iceberg's writers (Java, pyiceberg, Spark) store a list as the Parquet LogicalTypes spec's 3-level shape,
``<l> (LIST) { repeated group list { <element> } }``. The spec's backward-compatibility rules read other shapes too:
a 2-level list (the repeated field is the element), a repeated group named ``array`` or ``<l>_tuple`` (the group is
the element: a list of structs) and a bare repeated field (a list of it) — and readers implement those rules each
their own way, or not at all. pyarrow (pyiceberg's reads) decodes each of these files (hand-edited footers over the
very same pages, tests/adversarial/parquet_footer.py) to the attested rows, so the content digest was the attested
one: ``VERIFIED (content; …, same rows)`` for the 2-level list and the ``array`` / ``_tuple`` groups, while Spark
(Iceberg 1.12) refused to read every one of these files (measured below). Such a file is now ``table_inconsistent``
(carriers/iceberg/content.py ``_nesting_problem``); the standard shapes pyarrow and pyiceberg write still verify.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial import parquet_footer as pf
from tests.adversarial.conftest import codes
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog_properties, local  # noqa: F401
from tests.iceberg.rewrites import replace

SHAPE = "not the 3-level LIST / MAP shape"


def _fid(f: pa.Field, i: int) -> pa.Field:
    return f.with_metadata({b"PARQUET:field_id": str(i).encode()})


def _longs(required_list: bool = False) -> pa.Table:
    """``id long, l list<long>`` (elements required), with the field ids pyiceberg assigns (1, 2; element 3)."""
    lt = pa.list_(_fid(pa.field("element", pa.int64(), nullable=False), 3))
    schema = pa.schema([_fid(pa.field("id", pa.int64()), 1), _fid(pa.field("l", lt, nullable=not required_list), 2)])
    return pa.table({"id": [1, 2], "l": [[1, 2], [3]]}, schema=schema)


def _structs() -> pa.Table:
    """``id long, l list<struct<element long>>`` (all required but id), field ids 1, 2; the element 3, its field 4."""
    inner = pa.struct([_fid(pa.field("element", pa.int64(), nullable=False), 4)])
    lt = pa.list_(_fid(pa.field("element", inner, nullable=False), 3))
    schema = pa.schema([_fid(pa.field("id", pa.int64()), 1), _fid(pa.field("l", lt), 2)])
    return pa.table({"id": [1, 2], "l": [[{"element": 1}, {"element": 2}], [{"element": 3}]]}, schema=schema)


def _paths(meta: Any, edit: Callable[[list[bytes]], None]) -> None:
    for path in pf.column_paths(meta):
        if path[0] == b"l":
            edit(path)


def _two_level(meta: Any) -> None:
    """``l (LIST) { repeated group list { required int64 element } }`` → ``l (LIST) { repeated int64 element }``
    (the same definition and repetition levels: the pages stay right)."""
    els = pf.schema_elements(meta)
    pf.set_field(els[4], pf.REPETITION, pf.I32, pf.REPEATED)
    del els[3]
    _paths(meta, lambda p: p.__delitem__(1))


def _named(name: str) -> Callable[[Any], None]:
    """``l (LIST) { repeated group list { required group element { element } } }`` → ``l (LIST) { repeated group
    <name> { element } }``: the struct is the repeated group (2-level by the backward-compatibility rules)."""
    def edit(meta: Any) -> None:
        els = pf.schema_elements(meta)
        pf.set_field(els[4], pf.REPETITION, pf.I32, pf.REPEATED)
        pf.set_field(els[4], pf.NAME, pf.BINARY, name.encode())
        del els[3]

        def path(p: list[bytes]) -> None:
            p[1:3] = [name.encode()]
        _paths(meta, path)
    return edit


def _bare(meta: Any) -> None:
    """``required group l (LIST) { repeated group list { required int64 element } }`` → ``repeated int64 l``: a bare
    repeated field (no LIST group), its field id the list's."""
    els = pf.schema_elements(meta)
    pf.set_field(els[4], pf.REPETITION, pf.I32, pf.REPEATED)
    pf.set_field(els[4], pf.NAME, pf.BINARY, b"l")
    pf.set_field(els[4], pf.FIELD_ID, pf.I32, 2)
    del els[2:4]
    pf.set_field(els[0], pf.CHILDREN, pf.I32, 2)
    _paths(meta, lambda p: p.__setitem__(slice(None), [b"l"]))


# attack -> (the attested table, the edit of the rewritten file's footer)
ATTACKS: dict[str, tuple[Callable[[], pa.Table], Callable[[Any], None]]] = {
    "a 2-level list": (_longs, _two_level),
    "a repeated group named array": (_structs, _named("array")),
    "a repeated group named l_tuple": (_structs, _named("l_tuple")),
    "a bare repeated field": (lambda: _longs(required_list=True), _bare),
}



def _attested(catalog: Any, rows: pa.Table) -> Any:
    table = catalog.create_table("ns.t", schema=rows.schema)
    table.append(rows.slice(0, 1))
    table.append(rows.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    return catalog.load_table("ns.t")


def _rewrite(catalog: Any, table: Any, rows: pa.Table, edit: Callable[[Any], None] | None, **write: Any) -> Any:
    """A ``replace`` of every live file by one file of ``rows`` written by pyarrow, its footer then edited."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    folder = local(table.location()) / "data"
    path = folder / f"rewritten-{uuid.uuid4().hex}.parquet"
    pq.write_table(rows, path, store_schema=False, **write)  # no Arrow schema: pyarrow reads the Parquet one
    if edit is not None:
        pf.edit_footer(path, edit)
    added = DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{path}",
                               file_format=FileFormat.PARQUET, partition=Record(), record_count=rows.num_rows,
                               file_size_in_bytes=path.stat().st_size, spec_id=0)
    return replace(catalog, table, data_files=[added])


def _read(table: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.scan().to_arrow().sort_by("id").to_pylist()
    return rows


@pytest.mark.parametrize("attack", [a for a in ATTACKS if a != "a bare repeated field"])
def test_a_rewrite_storing_a_list_in_a_legacy_shape_is_refused(attack: str, catalog: Any) -> None:
    from tests.adversarial.conftest import verify

    rows, edit = ATTACKS[attack]
    table = _attested(catalog, rows())
    before = _read(table)
    table = _rewrite(catalog, table, rows(), edit)
    assert _read(table) == before  # pyiceberg reads the attested rows: the digest alone cannot tell
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and not doc["passed"] and codes(doc) == ["table_inconsistent"], json.dumps(doc, indent=1)
    assert SHAPE in json.dumps(doc), doc


def test_a_bare_repeated_field_is_refused(catalog: Any) -> None:
    """A bare ``repeated int64 l``: pyarrow reads it as a list whose element has no field id, and pyiceberg then
    refuses to read the file (no name mapping): ``table_unreadable``, before and after (no digest is claimed). Its
    shape is named by ``_nesting_problem`` below for a file pyiceberg would read."""
    from tests.adversarial.conftest import verify

    rows, edit = ATTACKS["a bare repeated field"]
    table = _attested(catalog, rows())
    table = _rewrite(catalog, table, rows(), edit)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc != 0 and not doc["passed"] and set(codes(doc)) == {"table_unreadable"}, json.dumps(doc, indent=1)
    assert "pyiceberg cannot read it" in json.dumps(doc), doc


def test_nesting_problem_names_each_shape() -> None:
    """The shapes as ``_nesting_problem`` reads them from the footer (the bare field among them)."""
    from carriers.content_store import read_parquet_schema
    from carriers.iceberg.content import _nesting_problem, _tree

    found = {}
    for attack, (rows, edit) in {**ATTACKS, "standard": (_longs, None)}.items():  # type: ignore[dict-item]
        path = Path(f"/tmp/{uuid.uuid4().hex}.parquet")
        try:
            pq.write_table(rows(), path, store_schema=False)
            if edit is not None:
                pf.edit_footer(path, edit)
            with path.open("rb") as handle:
                elements = read_parquet_schema(handle)
        finally:
            path.unlink(missing_ok=True)
        assert not isinstance(elements, str), elements
        found[attack] = _nesting_problem(_tree(elements))
    assert found["standard"] is None
    assert "2-level list" in str(found["a 2-level list"]), found
    assert "named 'array'" in str(found["a repeated group named array"]), found
    assert "named 'l_tuple'" in str(found["a repeated group named l_tuple"]), found
    assert "bare repeated field" in str(found["a bare repeated field"]), found


def _maps() -> pa.Table:
    mt = pa.map_(_fid(pa.field("key", pa.string(), nullable=False), 3), _fid(pa.field("value", pa.int64()), 4))
    schema = pa.schema([_fid(pa.field("id", pa.int64()), 1), _fid(pa.field("m", mt), 2)])
    return pa.table({"id": [1, 2], "m": [[("a", 1)], [("b", 2), ("c", None)]]}, schema=schema)


# Standard 3-level shapes, as pyarrow writes them (also with its legacy element name "item") and pyiceberg's writer.
CONTROLS: dict[str, tuple[Callable[[], pa.Table], dict[str, Any]]] = {
    "a 3-level list (pyarrow)": (_longs, {}),
    "a 3-level list of structs (pyarrow)": (_structs, {}),
    "a 3-level list, element named item": (_longs, {"use_compliant_nested_type": False}),
    "a 3-level map (pyarrow)": (_maps, {}),
}


@pytest.mark.parametrize("control", list(CONTROLS))
def test_a_rewrite_in_the_standard_shapes_verifies(control: str, catalog: Any) -> None:
    from tests.adversarial.conftest import verify

    rows, write = CONTROLS[control]
    table = _attested(catalog, rows())
    before = _read(table)
    table = _rewrite(catalog, table, rows(), None, **write)
    assert _read(table) == before
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot "), json.dumps(doc)


def test_pyiceberg_rewrite_of_lists_and_maps_verifies(catalog: Any) -> None:
    """pyiceberg's own writer (the rows it reads, written again) of a list, a map and a list of structs."""
    from tests.adversarial.conftest import verify

    rows = pa.table({"id": _longs().column("id"), "l": _longs().column("l"), "m": _maps().column("m"),
                     "s": _structs().column("l")})
    rows = rows.cast(pa.schema([f.with_metadata(None) for f in rows.schema]))
    table = _attested(catalog, rows)
    replace(catalog, table)
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at snapshot "), json.dumps(doc)


# ---- what Spark reads (Iceberg 1.12) -------------------------------------------------------------------------------
# attack -> what Spark returned for the rewritten table, measured: it refused each ("Should not read definition, past
# page end" for the 2-level and array / _tuple lists, which Iceberg Java reads as 3-level; "Not a primitive type:
# list<long>" for the bare repeated field), where pyiceberg returned the attested rows.
SPARK_READS: dict[str, Any] = {case: "refused" for case in ATTACKS}


@pytest.mark.spark
def test_spark_reads_these_lists(spark: Any, spark_warehouse: Path) -> None:
    """The same rewritten tables read by Spark: the control returns the attested rows and verifies; Spark refuses
    every legacy shape (``SPARK_READS``) and none verifies."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_spark_attacks import _verify

    spark_catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    seen: dict[str, Any] = {}
    verdicts: dict[str, Any] = {}
    for i, case in enumerate(["control", *ATTACKS]):
        rows, edit = (_longs, None) if case == "control" else ATTACKS[case]
        ns = f"lists{i}"
        spark_catalog.create_namespace(ns)
        table = spark_catalog.create_table(f"{ns}.t", schema=rows().schema)
        table.append(rows().slice(0, 1))
        table.append(rows().slice(1))
        attest_after_write(table, model="orders", program_hash=PROGRAM)
        spark.sql(f"REFRESH TABLE iceberg.{ns}.t")
        attested = [str(r) for r in spark.sql(f"SELECT * FROM iceberg.{ns}.t ORDER BY id").collect()]
        _rewrite(spark_catalog, spark_catalog.load_table(f"{ns}.t"), rows(), edit)
        spark.sql(f"REFRESH TABLE iceberg.{ns}.t")
        try:
            got = [str(r) for r in spark.sql(f"SELECT * FROM iceberg.{ns}.t ORDER BY id").collect()]
            seen[case] = "same" if got == attested else got
        except Exception as exc:
            seen[case] = "refused" if "IllegalArgumentException" in str(exc) else str(exc)[:300]
        rc, doc = _verify(f"iceberg://iceberg/{ns}.t", spark_warehouse)
        verdicts[case] = (rc, codes(doc))
    assert seen["control"] == "same" and verdicts["control"] == (0, []), (seen, verdicts)
    assert {c: seen[c] for c in ATTACKS} == SPARK_READS, seen
    assert all(verdicts[c][0] != 0 for c in ATTACKS), verdicts
