"""Rewrites whose rows are honest but whose statistics are not, and carry-forwards over a changed reader view.

Since content digests, a rewrite (Delta ``dataChange: false``, Iceberg ``replace``) verifies by content: the rows of
the files it added are digested and compared with the recorded digests of the files it removed. The added files'
bytes are bound by nothing, and neither are their **statistics** — the log's ``numRecords`` / ``nullCount`` /
``minValues`` / ``maxValues``, a manifest entry's ``record_count``, value / null counts and bounds. Readers skip files
by them and answer ``COUNT(*)`` (and MIN / MAX) from them: measured with delta-rs (DataFusion) and pyiceberg here, and
with Spark in ``test_spark_reads_forged_rewrite_statistics``, a forged maximum made a filtered query skip the file and
a forged row count was returned as the count, while the verdict said ``VERIFIED (content; …, same rows)``. Each
attack must now be ``content_changed``; an honest rewrite writing full statistics still verifies.

The carry-forward: ``attest record`` (and the Spark hook after maintenance) carried an attestation across rewrites
whose rows the digests confirmed — even when another commit in the range changed what readers get (columns swapped
under column mapping, renamed by id): verify said ``reader_view_changed``, record wrote an attestation naming the
producer's program for a table that program never wrote, and it then VERIFIED.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from attest.errors import CarrierError
from carriers.delta.carrier import DeltaCarrier
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, metadata_commit, verify
from tests.adversarial.test_content_rewrite_delta import (
    _adds,
    _attested,
    _engine_rows,
    _mapped_table,
    _merged,
    _partition,
    rewrite,
)
from tests.iceberg.conftest import iceberg_env  # noqa: F401  (the fixture)


def _sql(path: Path, query: str) -> int:
    """The one number a query returns through delta-rs (DataFusion, which answers COUNT(*) from numRecords)."""
    out = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute(query).read_all())
    return int(out.column(0)[0].as_py())


def _restat(path: Path, n: int, edit: Callable[[dict[str, Any]], None]) -> None:
    """The statistics of the file commit ``n`` adds, edited in place (the rewrite's committer wrote them)."""
    commit = path / commit_name(n)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            edit(stats)
            action["add"]["stats"] = json.dumps(stats)
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _true_stats(stats: dict[str, Any]) -> None:
    """What Spark writes for partition a's rows (_batch of test_content_rewrite_delta: v 0..23, ts, w, f): as delta-rs
    would, but for f's maximum, NaN (f holds NaN; delta-rs writes 0.0, the greatest number, which readers prune by:
    test_a_maximum_that_leaves_out_nan)."""
    stats.update({"numRecords": 9, "minValues": {"v": 0, "w": "w0", "f": -2.0, "ts": "1970-01-02T00:00:00Z"},
                  "maxValues": {"v": 23, "w": "z", "f": "NaN", "ts": "2023-11-14T22:13:20.000Z"},
                  "nullCount": {"v": 0, "w": 0, "f": 0, "ts": 0}})


DELTA_ATTACKS: dict[str, tuple[Callable[[dict[str, Any]], None], str, Callable[[int], bool]]] = {
    # name: (the forgery, a query, what the query returns now, as delta-rs answers it: not the true answer)
    "numRecords inflated": (lambda s: s.update(numRecords=100), "select count(*) from t where p = 'a'",
                            lambda got: got == 100),
    "a minimum above the least value": (lambda s: s["minValues"].update(v=5), "select count(*) from t where v = 1",
                                        lambda got: got == 0),
    "a maximum below the greatest value": (lambda s: s["maxValues"].update(v=20), "select count(*) from t where v = 23",
                                           lambda got: got == 0),
    "a string maximum below the greatest value": (lambda s: s["maxValues"].update(w="y"),
                                                  "select count(*) from t where w = 'z'", lambda got: got == 0),
    "a timestamp minimum above the least value": (
        lambda s: s["minValues"].update(ts="2000-01-01T00:00:00.000Z"),
        "select count(*) from t where ts = to_timestamp_micros(86400000000, 'UTC')", lambda got: got == 0),
    "nullCount equal to numRecords": (lambda s: s["nullCount"].update(v=9),
                                      "select count(*) from t where v is not null and p = 'a'",
                                      lambda got: got != 9),
}


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    _attested(path)
    return path


def test_an_honest_rewrite_with_full_statistics_verifies(table: Path) -> None:
    """The control: the rewrite of partition a with the statistics delta-rs writes (exact counts and bounds, the
    timestamp maximum kept to the millisecond) verifies by content."""
    rels = _partition(table, "a")
    n = rewrite(table, rels, [(_merged(table, rels), {"p": "a"})])
    _restat(table, n, _true_stats)
    assert _sql(table, "select count(*) from t where v = 1") == 1
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc


@pytest.mark.parametrize("attack", list(DELTA_ATTACKS))
def test_delta_rewrite_statistics_that_misstate_the_rows(table: Path, attack: str) -> None:
    forge, query, wrong = DELTA_ATTACKS[attack]
    before = _engine_rows(table)
    rels = _partition(table, "a")
    n = rewrite(table, rels, [(_merged(table, rels), {"p": "a"})])

    def edit(stats: dict[str, Any]) -> None:
        _true_stats(stats)
        forge(stats)

    _restat(table, n, edit)
    assert _engine_rows(table) == before  # the rows of a full scan are the same ...
    assert wrong(_sql(table, query))  # ... but a filtered read or COUNT(*) gets other rows (measured, delta-rs)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "statistics that misstate its rows" in doc["errors"][0]["message"], doc
    with pytest.raises(CarrierError) as err:  # and record does not carry the attestation onto it
        DeltaCarrier(str(table)).record(model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "content_changed"


def test_delta_rewrite_statistics_that_do_not_parse(table: Path) -> None:
    """A bound that is no value of its column (Spark reads the JSON; delta-rs drops what it cannot read)."""
    rels = _partition(table, "a")
    n = rewrite(table, rels, [(_merged(table, rels), {"p": "a"})])
    _restat(table, n, lambda s: (_true_stats(s), s["maxValues"].update(v="99")))
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc


LEGACY_FOOTER = {"org.apache.spark.version": "2.4.8", "org.apache.spark.legacyDateTime": ""}


def _dated(path: Path) -> None:
    """A delta-rs table of dates and timestamps before 1582 (sentinel dates: 0001-01-01 is common), attested."""
    import datetime as dt

    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    for year in (1000, 1500):
        write_deltalake(str(path), pa.table({
            "id": pa.array([year, year + 1], pa.int64()),
            "d": pa.array([dt.date(year, 1, 1), dt.date(year, 6, 1)]),
            "ts": pa.array([dt.datetime(year, 1, 1, tzinfo=dt.UTC), None], pa.timestamp("us", tz="UTC"))}),
            mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)


@pytest.mark.parametrize("footer", [None, LEGACY_FOOTER, {"org.apache.spark.version": "2.4.8"}])
def test_a_rewrite_whose_footer_makes_spark_rebase_its_dates(tmp_path: Path, footer: dict[str, str] | None) -> None:
    """The rewrite stores the same values, but its Parquet footer says Spark 2.4 wrote it (or marks it
    legacyDateTime): Spark 4 then reads its dates and timestamps rebased from the Julian calendar — other days
    (measured in test_spark_reads_forged_rewrite_statistics) — while delta-rs reads them as stored (here)."""
    path = tmp_path / "t"
    _dated(path)
    before = _engine_rows(path)
    rels = sorted(_adds(path))
    rows = _merged(path, rels)
    rewrite(path, rels, [(rows if footer is None else rows.replace_schema_metadata(footer), {})])
    assert _engine_rows(path) == before  # delta-rs: the stored values
    rc, doc = verify(str(path), "--level", "bytes")
    if footer is None:
        assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
    else:
        assert rc == 1 and codes(doc) == ["content_changed"], doc
        assert "Julian calendar" in doc["errors"][0]["message"], doc


# ---- Iceberg: a replace snapshot's manifest entry --------------------------------------------------------------------
ICEBERG_ATTACKS: dict[str, dict[str, Any]] = {
    "record_count inflated": {"record_count": 50},
    "an upper bound below the greatest value": {"upper_bounds": {1: struct.pack("<q", 2)}},
    "a lower bound above the least value": {"lower_bounds": {1: struct.pack("<q", 2)}},
    "a string upper bound below the greatest value": {"upper_bounds": {2: b"b"}},
    "null_value_counts equal to the value count": {"null_value_counts": {1: 3}, "value_counts": {1: 3}},
    "a timestamp lower bound above the least value": {"lower_bounds": {4: struct.pack("<q", 2**62)}},
}


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("attack", list(ICEBERG_ATTACKS))
def test_iceberg_rewrite_metrics_that_misstate_the_rows(attack: str, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo, NotNull
    from pyiceberg.manifest import DataFile

    from carriers.iceberg.carrier import attest_after_write
    from tests.adversarial.test_content_rewrite_iceberg import IDS, _rows
    from tests.iceberg.conftest import CATALOG, catalog_properties
    from tests.iceberg.rewrites import replace, with_ids, write_file

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=_rows().schema)
    table.append(_rows().slice(0, 1))
    table.append(_rows().slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    honest = write_file(table, with_ids(_rows(), IDS))
    fields = {"content": honest.content, "file_path": honest.file_path, "file_format": honest.file_format,
              "partition": honest.partition, "record_count": 3, "file_size_in_bytes": honest.file_size_in_bytes,
              "spec_id": 0, **ICEBERG_ATTACKS[attack]}
    table = replace(catalog, table, data_files=[DataFile.from_args(**fields)])
    # What pyiceberg reads now (a full scan still gets the three rows):
    assert table.scan().to_arrow().num_rows == 3
    if attack == "record_count inflated":
        assert table.scan().count() == 50
    elif attack.startswith("null_value_counts"):
        assert table.scan(row_filter=NotNull("id")).to_arrow().num_rows == 0
    elif attack.startswith("a string"):
        assert table.scan(row_filter=EqualTo("v", "c")).to_arrow().num_rows == 0
    elif attack.startswith("a timestamp"):
        assert table.scan(row_filter=EqualTo("ts", _rows().column("ts")[0].as_py().isoformat())
                          ).to_arrow().num_rows == 0
    else:
        row = 3 if attack.startswith("an upper") else 1
        assert table.scan(row_filter=EqualTo("id", row)).to_arrow().num_rows == 0
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "misstate its rows" in doc["errors"][0]["message"], doc


# ---- the carry-forward over a changed reader view ------------------------------------------------------------------
def test_no_carry_forward_over_columns_swapped_after_a_rewrite(tmp_path: Path) -> None:
    """Column mapping by name: an honest rewrite, then a metadata commit swapping the two columns' names (each keeps
    its physical name, so every content digest is the same). verify: reader_view_changed; record must not write the
    producer's program onto it (before: a carry-forward, then VERIFIED)."""
    path = tmp_path / "t"
    _mapped_table(path)
    rels = sorted(_adds(path))
    rewrite(path, rels, [(_merged(path, rels), {})])

    def swap(meta: dict[str, Any]) -> None:
        schema = json.loads(meta["schemaString"])
        for field in schema["fields"]:
            field["name"] = {"a": "b", "b": "a"}[field["name"]]
        schema["fields"].reverse()
        meta["schemaString"] = json.dumps(schema)

    metadata_commit(path, swap)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc
    assert DeltaCarrier(str(path)).carry_forward() is None  # the Spark hook's call after maintenance
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc
    result = DeltaCarrier(str(path)).record(model="mine", program_hash="b" * 64)
    assert result.continues is None and result.manifest is not None and result.manifest.program_hash == "b" * 64


@pytest.mark.usefixtures("iceberg_env")
def test_no_iceberg_carry_forward_over_columns_swapped_after_a_rewrite(tmp_path: Path) -> None:
    """Iceberg: an honest rewrite (digests by field id), then the two int columns' names swapped through pyiceberg's
    own schema update: readers get a's values under b's name. carry_forward must write nothing."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import IcebergCarrier, attest_after_write
    from tests.adversarial.test_content_rewrite_iceberg import _rows
    from tests.iceberg.conftest import CATALOG, catalog_properties
    from tests.iceberg.rewrites import replace

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    data = _rows().set_column(2, "f", pa.array([0.0, 1.5, 2.5]))  # no NaN: test_iceberg_rewrite_holding_nan
    table = catalog.create_table("ns.t", schema=data.schema)
    table.append(data.slice(0, 1))
    table.append(data.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = replace(catalog, catalog.load_table("ns.t"))
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
    with table.update_schema() as update:
        update.rename_column("a", "tmp")
    with catalog.load_table("ns.t").update_schema() as update:
        update.rename_column("b", "a")
    with catalog.load_table("ns.t").update_schema() as update:
        update.rename_column("tmp", "b")
    table = catalog.load_table("ns.t")
    assert sorted(table.scan().to_arrow().column("a").to_pylist()) == [11, 21, 31]  # b's values, under a's name
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc
    assert IcebergCarrier(table, catalog_name=CATALOG).carry_forward() is None
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["reader_view_changed"], doc


# ---- Spark: honest OPTIMIZE statistics pass; forged ones change what Spark answers --------------------------------
def _microseconds(table: pa.Table) -> pa.Table:
    """Spark writes timestamps as INT96, which pyarrow reads as nanoseconds: a hand rewrite stores them in
    microseconds, as Spark's own writers do (a nanosecond column is unsupported_table since round 13: Spark refuses
    to read it), so the forged statistics are what the verdict judges."""
    fields = [pa.field(f.name, pa.timestamp("us", f.type.tz), f.nullable, f.metadata)
              if pa.types.is_timestamp(f.type) else f for f in table.schema]
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


@pytest.mark.spark
def test_spark_reads_forged_rewrite_statistics(spark: Any, tmp_path: Path) -> None:
    """Two copies of one table written by Spark (ints, strings past Delta's 32-character prefix, microsecond
    timestamps, doubles with NaN, dates, decimals, a struct). Spark's own OPTIMIZE of the first — its statistics
    truncated as Spark truncates them — verifies by content. The second is rewritten by hand with those same
    statistics, one maximum forged below the greatest id and numRecords inflated: Spark then answers COUNT(*) from
    numRecords and skips the file for the greatest id (measured), and the verdict is content_changed. A third
    table, of dates before 1582, rewritten with the same values under Spark 2.4's footer: Spark reads other days
    (delta-rs the stored ones: test_a_rewrite_whose_footer_makes_spark_rebase_its_dates), content_changed."""
    from carriers.delta.carrier import attest_after_write

    def made(name: str) -> Path:
        path = tmp_path / name
        spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRING, ts TIMESTAMP, f DOUBLE, d DATE, "
                  "dec DECIMAL(10,2), st STRUCT<x: INT, y: STRING>) USING delta")
        for start in (0, 100):
            spark.sql(f"INSERT INTO delta.`{path}` SELECT id + {start}, repeat(CAST(id AS STRING), 40), "
                      "timestamp_micros(1700000000000000 + id * 1001), IF(id = 3, double('NaN'), id / 7), "
                      "date_add(DATE'1000-01-01', CAST(id AS INT)), CAST(id / 3 AS DECIMAL(10,2)), "
                      "named_struct('x', CAST(id AS INT), 'y', IF(id = 2, NULL, 'y')) FROM range(10)")
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
        return path

    honest, forged = made("honest"), made("forged")
    spark.sql(f"OPTIMIZE delta.`{honest}`").collect()
    rc, doc = verify(str(honest), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
    (stats,) = [a["stats"] for a in _adds(honest).values()]
    rels = sorted(_adds(forged))
    n = rewrite(forged, rels, [(_microseconds(_merged(forged, rels)), {})])

    def forge(s: dict[str, Any]) -> None:
        s.clear()
        s.update(json.loads(stats))
        s["numRecords"] = 1000
        s["maxValues"]["id"] = 100

    _restat(forged, n, forge)
    # The legacy-calendar footer: a delta-rs table of ancient dates, rewritten with Spark 2.4's footer.
    dated = tmp_path / "dated"
    _dated(dated)
    stored = sorted(str(r.d) for r in spark.read.format("delta").load(str(dated)).collect())
    rels = sorted(_adds(dated))
    rewrite(dated, rels, [(_merged(dated, rels).replace_schema_metadata(LEGACY_FOOTER), {})])
    rebased = sorted(str(r.d) for r in spark.read.format("delta").load(str(dated)).collect())
    assert stored == ["1000-01-01", "1000-06-01", "1500-01-01", "1500-06-01"] and rebased != stored, rebased
    rc, doc = verify(str(dated), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert spark.read.format("delta").load(str(forged)).count() == 1000  # COUNT(*) from numRecords
    assert spark.read.format("delta").load(str(forged)).where("id = 109").collect() == []  # the file skipped
    assert 109 in [r.id for r in spark.read.format("delta").load(str(forged)).select("id").collect()]  # it is there
    rc, doc = verify(str(forged), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("transform", ["day", "bucket"])
def test_iceberg_rewrite_partition_tuple_that_misstates_the_rows(transform: str, tmp_path: Path) -> None:
    """Partitioned by day(ts) or bucket(4, id): the rewrite's file holds the rows of one partition but its manifest
    entry gives it another partition value. A full scan reads the rows from the file; a filtered one prunes the file
    by its tuple (pyiceberg, measured: the rows of that day vanish)."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo
    from pyiceberg.transforms import BucketTransform, DayTransform
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType, TimestamptzType

    from carriers.iceberg.carrier import attest_after_write
    from tests.adversarial.test_content_rewrite_iceberg import IDS, _rows
    from tests.iceberg.conftest import CATALOG, catalog_properties
    from tests.iceberg.rewrites import live_data_files, replace, with_ids, write_file

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=_rows().schema)
    with table.update_spec() as update:
        if transform == "day":
            update.add_field("ts", DayTransform(), "ts_day")
        else:
            update.add_field("id", BucketTransform(4), "id_bucket")
    table = catalog.load_table("ns.t")
    one = _rows().slice(0, 1)
    ts = one.column("ts")[0].as_py()
    # pyiceberg's append needs pyiceberg-core for these transforms: the first file is written and appended by hand.
    micros = int(one.column("ts").cast(pa.int64())[0].as_py())
    value = (DayTransform().transform(TimestamptzType())(micros) if transform == "day"
             else BucketTransform(4).transform(LongType())(1))
    first = write_file(table, with_ids(one, IDS), partition=Record(value), spec_id=table.spec().spec_id)
    table = replace(catalog, table, remove=[], data_files=[first], operation="append")
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    (victim,) = live_data_files(table)
    query = EqualTo("ts", ts.isoformat()) if transform == "day" else EqualTo("id", 1)
    assert table.scan(row_filter=query).to_arrow().num_rows == 1
    honest = write_file(table, with_ids(one, IDS), partition=victim.partition, spec_id=victim.spec_id)
    forged = write_file(table, with_ids(one, IDS), partition=Record(value + 1), spec_id=victim.spec_id)
    control = replace(catalog, table, remove=[victim], data_files=[honest])
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc  # the same tuple: honest
    table = replace(catalog, control, remove=live_data_files(control), data_files=[forged])
    assert table.scan().to_arrow().num_rows == 1  # a full scan reads the row ...
    assert table.scan(row_filter=query).to_arrow().num_rows == 0  # ... a filtered one prunes the file
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "partition value" in doc["errors"][0]["message"], doc


# ---- a field id given to two columns ---------------------------------------------------------------------------------
@pytest.mark.usefixtures("iceberg_env")
def test_iceberg_rewrite_with_a_field_id_given_twice(tmp_path: Path) -> None:
    """The rewrite's file holds every column with its id, plus a first column of other values under a's id (5):
    pyiceberg reads the last column of an id (measured: a's values, the digest unchanged: VERIFIED before); the spec
    forbids the file, and a reader taking the first gets the other values."""
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import attest_after_write
    from tests.adversarial.test_content_rewrite_iceberg import IDS, _rows
    from tests.iceberg.conftest import CATALOG, catalog_properties
    from tests.iceberg.rewrites import replace, with_ids

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=_rows().schema)
    table.append(_rows().slice(0, 1))
    table.append(_rows().slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    data = _rows().append_column("zz", pa.array([99, 98, 97], pa.int32())).select(
        ["zz", "id", "v", "f", "ts", "a", "b"])
    table = replace(catalog, catalog.load_table("ns.t"), [with_ids(data, [5, *IDS])])
    assert sorted(table.scan().to_arrow().column("a").to_pylist()) == [10, 20, 30]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc


def test_delta_id_mapped_rewrite_with_a_field_id_given_twice(tmp_path: Path) -> None:
    """Column mapping by id: a first column 'zz' of other values carries a's field id (1) beside the right columns.
    delta-rs reads by physical name (the same rows); Spark reads by field id and need not take a's column."""
    from tests.adversarial.test_content_rewrite_delta import _ids

    path = tmp_path / "t"
    _mapped_table(path, "id")
    rels = sorted(_adds(path))
    rows = _merged(path, rels)
    rows = rows.add_column(0, "zz", pa.array([7] * rows.num_rows, pa.int64()))
    rewrite(path, rels, [(_ids(rows, {"zz": 1, "col-aaaa": 1, "col-bbbb": 2}), {})])
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["unsupported_table"], doc
    assert "names two columns" in doc["errors"][0]["message"], doc


# ---- NaN and signed zeros: bounds readers order otherwise than the digest's check did (issue 32, NaN maxima) ---------
def _rewrite_footer(path: Path, n: int, rows: pa.Table) -> None:
    """The file commit ``n`` adds, written again with pyarrow's default footer statistics (NaN left out of maxima)."""
    import pyarrow.parquet as pq

    commit = path / commit_name(n)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            pq.write_table(rows, path / action["add"]["path"])
            action["add"]["size"] = (path / action["add"]["path"]).stat().st_size
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


NAN_QUERIES = {  # the true answer of each: partition a's 3 NaN rows
    "greatest": "select count(*) from t where p = 'a' and f > 0.5",
    "Infinity": "select count(*) from t where p = 'a' and f = CAST('NaN' AS DOUBLE)",
    "footer": "select count(*) from t where p = 'a' and f > 0.5",
}


@pytest.mark.parametrize("attack", ["a maximum of the greatest number (delta-rs's)", "a maximum of Infinity",
                                    "a footer maximum that leaves out NaN"])
def test_a_maximum_that_leaves_out_nan(table: Path, attack: str) -> None:
    """Partition a holds NaN in f. Spark and delta-rs order NaN above every number (delta-rs measured here: NaN > 0.5
    is true) and skip a file whose maximum is below the constant — in the log or in the Parquet footer, which delta-rs
    prunes row groups by whatever the log says. A rewrite stating its greatest number as the maximum (what delta-rs
    writes; the check accepted it before) drops the NaN rows from ``f > 0.5``, one of Infinity from ``f = NaN``:
    content_changed."""
    query = next(q for k, q in NAN_QUERIES.items() if k in attack)
    rels = _partition(table, "a")
    rows = _merged(table, rels)
    n = rewrite(table, rels, [(rows, {"p": "a"})])
    _restat(table, n, _true_stats)
    assert _sql(table, query) == 3  # the control: the maximum NaN, no float footer statistics
    if attack.startswith("a footer"):
        _rewrite_footer(table, n, rows)
    else:
        _restat(table, n, lambda s: s["maxValues"].update(f=0.0 if "greatest" in attack else "Infinity"))
    assert _sql(table, query) == 0  # the NaN rows skipped (measured, delta-rs)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "NaN" in doc["errors"][0]["message"], doc
    with pytest.raises(CarrierError) as err:
        DeltaCarrier(str(table)).record(model="orders", program_hash=PROGRAM)
    assert err.value.code.value == "content_changed"


def _zeros(path: Path) -> None:
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    for xs in ([-0.0, 1.0], [0.0, -1.0]):
        write_deltalake(str(path), pa.table({"id": pa.array([int(x) for x in xs], pa.int64()),
                                             "x": pa.array(xs, pa.float64())}), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)


@pytest.mark.parametrize(("side", "query"), [("minValues", "x = -0.0"), ("maxValues", "x = 0.0")])
def test_a_signed_zero_bound_of_the_other_sign(tmp_path: Path, side: str, query: str) -> None:
    """delta-rs prunes by IEEE total order, -0.0 below 0.0: a minimum of 0.0 over a -0.0 skips the
    file for ``x = -0.0``, a maximum of -0.0 over a 0.0 for ``x = 0.0`` (measured) — the check compared -0.0 as 0.0."""
    path = tmp_path / "t"
    _zeros(path)
    rels = sorted(_adds(path))
    rows = _merged(path, rels)
    n = rewrite(path, rels, [(rows, {})])
    honest = {"numRecords": 4, "minValues": {"id": -1, "x": -1.0}, "maxValues": {"id": 1, "x": 1.0},
              "nullCount": {"id": 0, "x": 0}}
    _restat(path, n, lambda s: s.update(json.loads(json.dumps(honest))))
    q = f"select count(*) from t where {query}"
    assert _sql(path, q) == 2  # rows compare -0.0 equal to 0.0
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
    # the file holding both signs: min -0.0 .. max 0.0 is sound; the forgery narrows to the other sign
    rows = pa.table({"id": pa.array([0, 0], pa.int64()), "x": pa.array([-0.0, 0.0], pa.float64())})
    path = tmp_path / "u"
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write
    write_deltalake(str(path), rows.slice(0, 1), mode="append")
    write_deltalake(str(path), rows.slice(1), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    rels = sorted(_adds(path))
    n = rewrite(path, rels, [(_merged(path, rels), {})])
    zero = {"minValues": {"id": 0, "x": -0.0}, "maxValues": {"id": 0, "x": 0.0}}
    _restat(path, n, lambda s: (s.update(numRecords=2, nullCount={"id": 0, "x": 0}, **json.loads(json.dumps(zero)))))
    assert _sql(path, q) == 2
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
    _restat(path, n, lambda s: s[side].update(x=0.0 if side == "minValues" else -0.0))
    assert _sql(path, q) == 0  # the row skipped (measured, delta-rs)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "0.0" in doc["errors"][0]["message"], doc


def test_delta_rs_optimize_of_a_table_holding_nan_is_not_verified(tmp_path: Path) -> None:
    """The honest engine itself: delta-rs writes the greatest number as a file's maximum, NaN left out, in the log
    and the footer, and prunes by it — so which NaN rows a filtered read gets depends on how rows are laid out in
    files (measured: ``x > 5`` got [10] before its own OPTIMIZE and [10, NaN] after). A rewrite after which readers
    get other rows is never VERIFIED: content_changed, saying why (re-attest the table after the rewrite)."""
    import math

    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": [1, 2], "x": [1.0, math.nan]}), mode="append")
    write_deltalake(str(path), pa.table({"id": [3], "x": [10.0]}), mode="append")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)

    def ids() -> list[int]:
        out = QueryBuilder().register("t", DeltaTable(str(path))).execute("select id from t where x > 5").read_all()
        return sorted(pa.table(out).column("id").to_pylist())

    assert ids() == [3]
    DeltaTable(str(path)).optimize.compact()
    assert ids() == [2, 3]  # readers get another row after the rewrite
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "NaN" in doc["errors"][0]["message"] and "delta-rs writes such maxima itself" in doc["errors"][0]["message"]


@pytest.mark.usefixtures("iceberg_env")
@pytest.mark.parametrize("metrics", ["pyiceberg's (bounds that leave NaN out)", "counts of NaN only",
                                     "nan_value_counts of 0"])
def test_iceberg_rewrite_holding_nan(tmp_path: Path, metrics: str) -> None:
    """Spark orders NaN above every number (NaN >= 1 is true), while Iceberg's pruning leaves NaN out of bounds and
    skips a file of NaN only for x > c / x >= c. Measured with Spark 4.1 and Iceberg 1.12: ``x >= 1`` got [1] from a
    file of 1.0 beside a file of NaN only (Spark's own INSERT), [1, NaN] from one file holding both (bounds 1.0):
    the same rows, another answer — so a rewrite moving NaN rows between files changes what Spark returns, even
    written honestly (pyiceberg's, Spark's rewrite_data_files). Not VERIFIED: content_changed, naming NaN. A forged
    nan_value_counts of 0 (``isnan(x)`` and ``x = NaN`` skip the file: measured with Spark) was refused before."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.manifest import DataFile

    from carriers.iceberg.carrier import attest_after_write
    from tests.adversarial.test_content_rewrite_iceberg import IDS, _rows
    from tests.iceberg.conftest import CATALOG, catalog_properties
    from tests.iceberg.rewrites import replace, with_ids, write_file

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=_rows().schema)
    table.append(_rows().slice(0, 1))
    table.append(_rows().slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = catalog.load_table("ns.t")
    if metrics.startswith("pyiceberg"):
        table = replace(catalog, table)  # pyiceberg's writer: bounds 0.0 .. 2.5 on f, which holds a NaN
    else:
        honest = write_file(table, with_ids(_rows(), IDS))
        counts = ({"value_counts": {3: 1}, "nan_value_counts": {3: 1}} if metrics.startswith("counts")
                  else {"nan_value_counts": {3: 0}})
        if metrics.startswith("counts"):  # a file of the NaN row only
            honest = write_file(table, with_ids(_rows().slice(1, 1), IDS))
            rest = write_file(table, with_ids(pa.concat_tables([_rows().slice(0, 1), _rows().slice(2)]), IDS))
            files = [DataFile.from_args(content=honest.content, file_path=honest.file_path,
                                        file_format=honest.file_format, partition=honest.partition, record_count=1,
                                        file_size_in_bytes=honest.file_size_in_bytes, spec_id=0, **counts), rest]
        else:
            files = [DataFile.from_args(content=honest.content, file_path=honest.file_path,
                                        file_format=honest.file_format, partition=honest.partition, record_count=3,
                                        file_size_in_bytes=honest.file_size_in_bytes, spec_id=0, **counts)]
        table = replace(catalog, table, data_files=files)
    assert table.scan().to_arrow().num_rows == 3
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "NaN" in doc["errors"][0]["message"] or "nan_value_counts" in doc["errors"][0]["message"], doc


@pytest.mark.spark
def test_spark_reads_nan_and_zero_bounds_of_rewrites(spark: Any, tmp_path: Path) -> None:
    """Spark's side of the NaN maxima and signed zeros. A Spark table holding NaN: Spark's OPTIMIZE writes a maximum
    of NaN (log and footer) and verifies by content; the same rewrite by hand with the greatest number as maximum
    (what delta-rs writes) makes Spark skip the file for ``x > 10`` and ``x = NaN`` (measured) — content_changed.
    Then the residual of signed zeros (below), and a file moved under another partition's folder (held)."""
    from carriers.delta.carrier import attest_after_write

    def made(name: str, rows: str) -> Path:
        path = tmp_path / name
        spark.sql(f"CREATE TABLE delta.`{path}` (id INT, x DOUBLE) USING delta")
        for values in rows.split(";"):
            spark.sql(f"INSERT INTO delta.`{path}` VALUES {values}")
        attest_after_write(str(path), model="m", program_hash=PROGRAM)
        return path

    def ids(path: Path, where: str) -> list[int]:
        return sorted(r.id for r in spark.read.format("delta").load(str(path)).where(where).select("id").collect())

    nan_rows = "(1, 1.0), (2, double('NaN'));(3, 10.0)"
    honest, forged = made("honest", nan_rows), made("forged", nan_rows)
    spark.sql(f"OPTIMIZE delta.`{honest}`").collect()
    (stats,) = [json.loads(a["stats"]) for a in _adds(honest).values()]
    assert stats["maxValues"]["x"] == "NaN", stats
    rc, doc = verify(str(honest), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted at version"), doc
    rels = sorted(_adds(forged))
    n = rewrite(forged, rels, [(_merged(forged, rels), {})])
    _restat(forged, n, lambda s: (s.clear(), s.update(json.loads(json.dumps(stats))), s["maxValues"].update(x=10.0)))
    assert ids(honest, "x > 10") == [2] and ids(honest, "x = double('NaN')") == [2]
    assert ids(forged, "x > 10") == [] and ids(forged, "x = double('NaN')") == []  # the NaN row skipped
    assert ids(forged, "isnan(x)") == [2]  # it is there
    rc, doc = verify(str(forged), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "NaN" in doc["errors"][0]["message"], doc

    # Residual, measured: Spark stores -0.0 written in SQL as 0.0 and states its minimum 0.0 — exact — but delta-rs
    # prunes by total order (0.0 above -0.0) while its rows compare -0.0 equal to 0.0: ``x = -0.0`` misses the row
    # with honest statistics, before and after any rewrite. Not a misstatement: the rewrite verifies.
    zeros = made("zeros", "(1, -0.0), (2, 1.0);(3, 5.0)")
    spark.sql(f"OPTIMIZE delta.`{zeros}`").collect()
    assert ids(zeros, "x = -0.0") == [1]
    assert _sql(zeros, "select count(*) from t where x = -0.0") == 0  # delta-rs pruned the file ...
    assert _sql(zeros, "select count(*) from t where x = -0.0 or id = 1") == 1  # ... the row (0.0) is there
    rc, doc = verify(str(zeros), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc

    # Held: a rewrite's file placed under another partition's folder (p=b/) than its partitionValues (p=a). Delta
    # readers take partition values from the log, never from the path: Spark and delta-rs read the same rows.
    from tests.adversarial.test_content_rewrite_delta import _attested, _engine_rows

    moved = tmp_path / "moved"
    _attested(moved, nan=False)

    def spark_rows() -> list[tuple[Any, ...]]:
        return sorted((r.p, r.v) for r in spark.read.format("delta").load(str(moved)).where("p = 'a'").collect())

    before, spark_before = _engine_rows(moved), spark_rows()
    rels = _partition(moved, "a")
    n = rewrite(moved, rels, [(_merged(moved, rels), {"p": "a"})])
    commit = moved / commit_name(n)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            old = action["add"]["path"]
            action["add"]["path"] = old.replace("p=a/", "p=b/")
            (moved / "p=b").mkdir(exist_ok=True)
            (moved / old).rename(moved / action["add"]["path"])
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert _engine_rows(moved) == before and spark_rows() == spark_before
    rc, doc = verify(str(moved), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc


def _forge_footer_max(path: Path, true: int, forged: int) -> None:
    """The Parquet footer of ``path`` with an int64 column's maximum ``true`` rewritten as ``forged`` (same width: the
    footer stays well formed; the manifest and the rows are untouched)."""
    data = bytearray(path.read_bytes())
    length = struct.unpack("<i", bytes(data[-8:-4]))[0]
    start = len(data) - 8 - length
    footer = bytes(data[start:-8])
    assert footer.count(struct.pack("<q", true)) >= 1
    data[start:-8] = footer.replace(struct.pack("<q", true), struct.pack("<q", forged))
    path.write_bytes(bytes(data))


@pytest.mark.usefixtures("iceberg_env")
def test_iceberg_rewrite_whose_parquet_footer_misstates_its_rows(tmp_path: Path) -> None:
    """The manifest entry is honest, the rows are honest, but the file's own Parquet footer says the greatest id is 2:
    pyarrow — pyiceberg's reader — skips the row group for ``id = 3`` (measured), VERIFIED before."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo

    from carriers.iceberg.carrier import attest_after_write
    from tests.adversarial.test_content_rewrite_iceberg import IDS, _rows
    from tests.iceberg.conftest import CATALOG, catalog_properties
    from tests.iceberg.rewrites import live_data_files, path_of, replace, with_ids

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    data = _rows().set_column(2, "f", pa.array([0.0, 1.5, 2.5]))
    table = catalog.create_table("ns.t", schema=data.schema)
    table.append(data.slice(0, 1))
    table.append(data.slice(1))
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    table = replace(catalog, catalog.load_table("ns.t"), [with_ids(data, IDS)])
    assert table.scan(row_filter=EqualTo("id", 3)).to_arrow().num_rows == 1
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content;"), doc
    (added,) = live_data_files(table)
    _forge_footer_max(path_of(table, added), 3, 2)
    table = catalog.load_table("ns.t")
    assert table.scan().to_arrow().num_rows == 3  # a full scan reads the three rows ...
    assert table.scan(row_filter=EqualTo("id", 3)).to_arrow().num_rows == 0  # ... id = 3 skips the row group
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "Parquet footer" in doc["errors"][0]["message"], doc


def test_delta_rewrite_whose_parquet_footer_misstates_its_rows(table: Path) -> None:
    """Delta: the log's statistics honest (Spark's, NaN maximum), the file's footer saying the greatest v is 20:
    delta-rs skips the row group for ``v = 23`` (measured), VERIFIED before."""
    rels = _partition(table, "a")
    n = rewrite(table, rels, [(_merged(table, rels), {"p": "a"})])
    _restat(table, n, _true_stats)
    assert _sql(table, "select count(*) from t where v = 23") == 1
    (added,) = [a["add"]["path"] for a in map(json.loads, (table / commit_name(n)).read_text().splitlines())
                if "add" in a]
    _forge_footer_max(table / added, 23, 20)
    commit = table / commit_name(n)
    assert _sql(table, "select count(*) from t where v = 23") == 0  # the row group skipped
    assert _sql(table, "select count(*) from t where p = 'a'") == 9
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["content_changed"], doc
    assert "Parquet footer" in doc["errors"][0]["message"] and commit.exists(), doc
