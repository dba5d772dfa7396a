"""Attacks on Spark-written tables (Delta with column mapping and deletion vectors, Iceberg v2 and v3), attested by the
Spark hook, then changed by someone with storage (or plain Spark SQL) access; verified without Spark."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from attest.errors import AttestError
from carriers import properties as props
from carriers.delta.log import commit_name
from tests.adversarial.conftest import append_actions, codes
from tests.adversarial.iceberg_lists import edit_manifest_list
from tests.conftest import required_hook

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from carriers.spark.hook import Hook

pytestmark = pytest.mark.spark


hook = required_hook  # attest.spark.install(spark, policy="required") for the test (tests/conftest.py)


def _name() -> str:
    return f"adv_{uuid.uuid4().hex[:8]}"


def _path(spark: SparkSession, name: str) -> Path:
    location = str(spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"])
    return Path(location[len("file:"):] if location.startswith("file:") else location)


def _verify(ref: str, warehouse: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """``attest verify`` in a fresh interpreter without Spark, Iceberg through PYICEBERG_* variables."""
    from tests.spark.test_hook import _attest

    proc = _attest("verify", ref, *args, "--json", warehouse=warehouse)
    return proc.returncode, json.loads(proc.stdout)


def _refused(ref: str | Path, warehouse: Path, code: str, *args: str) -> None:
    rc, doc = _verify(str(ref), warehouse, *args)
    assert rc != 0 and code in codes(doc), (code, doc)


def _attested_delta(spark: SparkSession, hook: Hook, warehouse: Path, properties: str = "") -> tuple[str, Path]:
    name = _name()
    extra = f" TBLPROPERTIES ({properties})" if properties else ""
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING, t STRING) USING delta{extra}")
    spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING), 'x' FROM range(200)")
    hook.flush()
    assert hook.failed == 0, hook.errors
    path = _path(spark, name)
    rc, doc = _verify(str(path), warehouse)
    assert rc == 0 and doc["level"] == "bytes", doc
    return name, path


def test_rename_column_on_a_column_mapped_table(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    """A metadata-only RENAME COLUMN: the same bytes, read under another column name."""
    name, path = _attested_delta(spark, hook, spark_warehouse, "'delta.columnMapping.mode' = 'name'")
    hook.uninstall()
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN s TO label")
    _refused(path, spark_warehouse, "reader_view_changed", "--level", "schema")


def test_swap_two_columns_on_a_column_mapped_table(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    name, path = _attested_delta(spark, hook, spark_warehouse, "'delta.columnMapping.mode' = 'name'")
    hook.uninstall()
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN s TO tmp")
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN t TO s")
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN tmp TO t")
    _refused(path, spark_warehouse, "reader_view_changed", "--level", "schema")


def test_unset_carrier_keys_through_spark_sql(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    name, path = _attested_delta(spark, hook, spark_warehouse)
    hook.uninstall()
    keys = ", ".join(f"'{k}'" for k in sorted(props.CARRIER_KEYS))
    spark.sql(f"ALTER TABLE {name} UNSET TBLPROPERTIES IF EXISTS ({keys})")
    _refused(path, spark_warehouse, "carrier_tampered", "--level", "schema")


def test_deletion_vector_after_attestation_with_the_log_cleaned_up(spark: SparkSession, hook: Hook,
                                                                    spark_warehouse: Path) -> None:
    name, path = _attested_delta(spark, hook, spark_warehouse, "'delta.enableDeletionVectors' = 'true'")
    hook.uninstall()
    spark.sql(f"DELETE FROM {name} WHERE id % 5 = 0")  # a deletion vector, no file rewrite
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('team.owner' = 'x')")
    from deltalake import DeltaTable

    DeltaTable(str(path)).create_checkpoint()
    latest = max(int(p.name[:20]) for p in (path / "_delta_log").glob("*.json") if p.name[:20].isdigit())
    # Delta's log cleanup deletes the commits before the kept checkpoint's version, never that version's own commit
    # (a log without it: Spark reads no version, table_inconsistent — test_delta_commit_behind_checkpoint.py)
    for v in range(latest):
        (path / commit_name(v)).unlink(missing_ok=True)
    rc, doc = _verify(str(path), spark_warehouse, "--level", "schema")
    assert rc == 1 and set(codes(doc)) & {"stale", "reader_view_changed"}, doc


def _attested_iceberg(spark: SparkSession, hook: Hook, warehouse: Path, *ranges: str,
                      properties: str = "") -> tuple[str, str]:
    """(Spark name, attest reference) of an Iceberg table (id INT, s STRING) written through Spark — one INSERT per
    ``range(...)`` argument — attested by the hook and verifying at bytes level."""
    ns = f"adv{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS iceberg.{ns}")
    name = f"iceberg.{ns}.t"
    extra = f" TBLPROPERTIES ({properties})" if properties else ""
    spark.sql(f"CREATE TABLE {name} (id INT, s STRING) USING iceberg{extra}")
    for rows in ranges or ("50",):
        spark.sql(f"INSERT INTO {name} SELECT id, CAST(id AS STRING) FROM range({rows})")
    hook.flush()
    assert hook.failed == 0 and hook.attested >= 1, hook.errors
    ref = f"iceberg://iceberg/{ns}.t"
    rc, doc = _verify(ref, warehouse)
    assert rc == 0 and doc["level"] == "bytes", doc
    return name, ref


def test_iceberg_rename_column_through_spark(spark: SparkSession, hook: Hook, spark_warehouse: Path) -> None:
    name, ref = _attested_iceberg(spark, hook, spark_warehouse)
    hook.uninstall()
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN s TO label")
    _refused(ref, spark_warehouse, "reader_view_changed", "--level", "schema")


def test_iceberg_v3_table_is_attested_detached_and_a_later_append_is_stale(spark: SparkSession, hook: Hook,
                                                                           spark_warehouse: Path) -> None:
    """pyiceberg cannot commit to a v3 table: the hook attests it detached instead of failing."""
    name, ref = _attested_iceberg(spark, hook, spark_warehouse, properties="'format-version'='3'")
    hook.uninstall()
    spark.sql(f"INSERT INTO {name} VALUES (1000, 'late')")
    _refused(ref, spark_warehouse, "stale", "--level", "schema")


@pytest.mark.parametrize("field", ["first_row_id", "sequence_number"])
def test_iceberg_v3_row_lineage_moved_by_a_manifest_list_rewrite(spark: SparkSession, hook: Hook,
                                                                spark_warehouse: Path, field: str) -> None:
    """v3 row lineage: a data file without a first_row_id (or a data sequence number) takes its manifest's, which the
    manifest list holds. A list rewritten in place with other ones gives every row another _row_id (or
    _last_updated_sequence_number), same files and bytes."""

    from carriers.storage.base import local_path_of

    name, ref = _attested_iceberg(spark, hook, spark_warehouse, "5", "5, 8", properties="'format-version'='3'")

    column = "_row_id" if field == "first_row_id" else "_last_updated_sequence_number"

    def row_ids() -> list[int]:
        return [r[0] for r in spark.sql(f"SELECT {column} FROM {name} ORDER BY id").collect()]

    before = row_ids()
    listing = spark.sql(f"SELECT manifest_list FROM {name}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()
    path = local_path_of(listing[0][0])
    assert path is not None

    def move(manifests: list[Any], names: list[str]) -> None:
        moved = [names.index(field)] + ([names.index("min_sequence_number")] if field == "sequence_number" else [])
        for m in manifests:
            for position in moved:  # the minimum moves with the sequence number: the list stays consistent
                if m._data[position] is not None:
                    m._data[position] += 100

    edit_manifest_list(path, 3, move)
    spark.sql(f"REFRESH TABLE {name}")
    assert row_ids() == [i + 100 for i in before]  # the attack works on a real reader
    _refused(ref, spark_warehouse, "reader_view_changed", "--level", "schema")


# ---- versions the protocol calls invalid ---------------------------------------------------------------------------
def test_spark_and_delta_rs_read_an_invalid_commit_differently(spark: SparkSession, tmp_path: Path) -> None:
    """Why such a version gets no verdict (test_delta_attacks): a second metaData or a second add of one file in a
    commit is read by Spark from the last action, by delta-rs from the first; a file added then removed in one commit
    is gone for Spark. attest refuses all three (table_inconsistent); this test keeps the measurement honest."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from tests.adversarial.test_delta_attacks import _after, _moved_partition, _renamed_column

    edits = {"metadata": _after("metaData", _renamed_column), "add": _after("add", _moved_partition),
             "removed": _after("add", lambda a: {"remove": {"path": a["add"]["path"], "dataChange": True}})}
    for name, edit in edits.items():
        path = tmp_path / name
        write_deltalake(str(path), pa.table({"p": ["a"], "v": [1]}), partition_by=["p"])
        log = path / commit_name(0)
        log.write_text("\n".join(edit(log.read_text().splitlines())) + "\n")
        engine = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
        read = [r.asDict() for r in spark.read.format("delta").load(str(path)).collect()]
        assert engine == [{"p": "a", "v": 1}], (name, engine)
        assert read != engine, (name, read)


def test_spark_and_delta_rs_read_a_path_with_a_fragment_or_query_from_different_files(spark: SparkSession,
                                                                                       tmp_path: Path) -> None:
    """Why ``x.parquet#frag`` and ``x.parquet?v=1`` are path_ambiguous (test_delta_attacks): Spark reads ``x.parquet``,
    delta-rs the file of the whole name, while the encoded spellings (``%23``, ``%3F``) name one file for both."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    for raw, literal, same in (("x.parquet#frag", "x.parquet#frag", False), ("x.parquet?v=1", "x.parquet?v=1", False),
                               ("x.parquet%23frag", "x.parquet#frag", True)):
        path = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
        write_deltalake(str(path), pa.table({"v": [1]}))
        pq.write_table(pa.table({"v": [100]}), path / "x.parquet")
        pq.write_table(pa.table({"v": [200]}), path / literal)
        log = path / commit_name(0)
        actions = [json.loads(line) for line in log.read_text().splitlines()]
        for action in actions:
            if "add" in action:
                action["add"].update(path=raw, size=os.path.getsize(path / literal))
                action["add"].pop("stats", None)
        log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
        engine = DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()
        read = [r["v"] for r in spark.read.format("delta").load(str(path)).collect()]
        assert engine == [200], (raw, engine)
        assert (read == engine) is same, (raw, read)


def test_spark_reads_a_commit_named_without_padding_and_delta_rs_does_not(spark: SparkSession, tmp_path: Path) -> None:
    """Why ``2.json`` in a log is table_inconsistent (test_delta_attacks): Spark reads it as version 2, delta-rs takes
    versions from 20-digit names only."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1]}))
    pq.write_table(pa.table({"v": [666]}), path / "extra.parquet")
    add = {"path": "extra.parquet", "partitionValues": {}, "size": os.path.getsize(path / "extra.parquet"),
           "modificationTime": 1, "dataChange": True}
    (path / "_delta_log" / "1.json").write_text(json.dumps({"commitInfo": {}}) + "\n" + json.dumps({"add": add}) + "\n")
    assert DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist() == [1]
    assert sorted(r["v"] for r in spark.read.format("delta").load(str(path)).collect()) == [1, 666]


def test_spark_resolves_a_remove_path_delta_rs_matches_as_written(spark: SparkSession, tmp_path: Path) -> None:
    """Why a remove of ``./x`` is table_inconsistent (test_delta_attacks): Spark removed x, delta-rs kept it live."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1]}))
    first = next(p.name for p in path.glob("*.parquet"))
    write_deltalake(str(path), pa.table({"v": [2]}), mode="append")
    append_actions(path / commit_name(1), [{"remove": {"path": f"./{first}", "dataChange": True,
                                                        "deletionTimestamp": 1}}])
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2]
    assert sorted(r["v"] for r in spark.read.format("delta").load(str(path)).collect()) == [2]


def test_a_content_addressed_overwrite_of_identical_bytes_reads_the_same_in_spark(spark: SparkSession,
                                                                                   tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable

    from carriers.delta.write import write_content_addressed

    path = tmp_path / "ca"
    data = pa.table({"v": [1, 2, 3]})
    write_content_addressed(str(path), data, model="m", program_hash="a" * 64)
    write_content_addressed(str(path), data, mode="overwrite", model="m", program_hash="a" * 64)
    assert sorted(r["v"] for r in spark.read.format("delta").load(str(path)).collect()) == [1, 2, 3]
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [1, 2, 3]
    rc, doc = _verify(str(path), tmp_path, "--level", "bytes")
    assert rc == 0 and doc["passed"], doc


def test_spark_and_delta_rs_read_an_empty_string_partition_value_differently(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    """Why '' as a string partition value is table_inconsistent (test_delta_attacks): delta-rs writes an empty string
    as '' and reads '' as null, Spark writes it as null and reads '' as ''. write_content_addressed writes null, as
    Spark does, so both read what it wrote alike."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from carriers.delta.write import write_content_addressed

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"p": ["", "a"], "v": [1, 2]}), partition_by=["p"])
    assert '"p":""' in (path / commit_name(0)).read_text()
    engine = sorted((r["v"], r["p"]) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist())
    assert engine == [(1, None), (2, "a")]
    assert sorted((r["v"], r["p"]) for r in spark.read.format("delta").load(str(path)).collect()) == [(1, ""),
                                                                                                    (2, "a")]
    written = tmp_path / "spark"
    spark.createDataFrame([("", 1)], "p string, v int").write.format("delta").partitionBy("p").save(str(written))
    assert '"p":null' in (written / commit_name(0)).read_text().replace(" ", "")
    ours = tmp_path / "ca"
    write_content_addressed(str(ours), pa.table({"p": ["", "a"], "v": [1, 2]}), partition_by=["p"], model="m",
                            program_hash="a" * 64)
    assert '"p":""' not in (ours / commit_name(0)).read_text()
    assert sorted((r["v"], r["p"]) for r in spark.read.format("delta").load(str(ours)).collect()) == [(1, None),
                                                                                                    (2, "a")]
    assert sorted((r["v"], r["p"]) for r in DeltaTable(str(ours)).to_pyarrow_table().to_pylist()) == [(1, None),
                                                                                                     (2, "a")]
    rc, doc = _verify(str(ours), tmp_path, "--level", "bytes")
    assert rc == 0 and doc["passed"], doc


def test_iceberg_data_file_respelled_so_its_position_deletes_no_longer_apply(spark: SparkSession, hook: Hook,
                                                                             spark_warehouse: Path) -> None:
    """Iceberg Java matches position deletes to a data file by its location string, as pyiceberg does
    (test_iceberg_attacks): Spark's ``file:/t/x.parquet`` rewritten in the manifests as ``file:///t/x.parquet`` (the
    same file and bytes) brought a deleted row back for Spark (measured). The location is in the reader view."""
    name, ref = _attested_iceberg(spark, hook, spark_warehouse, "5",
                                  properties="'format-version'='2', 'write.delete.mode'='merge-on-read'")
    spark.sql(f"DELETE FROM {name} WHERE id = 2")
    hook.flush()
    assert hook.failed == 0, hook.errors
    rc, doc = _verify(ref, spark_warehouse)
    assert rc == 0 and doc["level"] == "bytes", doc
    hook.uninstall()
    _respell_data_files(spark, name, spark_warehouse)
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()) == [0, 1, 2, 3, 4]
    _refused(ref, spark_warehouse, "reader_view_changed", "--level", "schema")


def _respell_data_files(spark: SparkSession, name: str, warehouse: Path) -> None:
    """The manifests of Spark's Iceberg table ``name`` rewritten in place with each data file's ``file:/t/x.parquet``
    as ``file:///t/x.parquet`` (the same file and bytes), Hadoop's checksums of them dropped, the table refreshed."""
    import glob
    import os

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.manifest import DATA_FILE_TYPE, DEFAULT_READ_VERSION

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_iceberg_attacks import _rewrite_manifest_entries

    index = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields].index("file_path")

    def respell(entry: Any) -> None:
        location = entry.data_file.file_path
        if int(entry.data_file.content.value) == 0:
            assert location.startswith("file:/") and not location.startswith("file://"), location
            entry.data_file._data[index] = "file://" + location[len("file:"):]

    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(warehouse))
    table = catalog.load_table(name.split(".", 1)[1])
    _rewrite_manifest_entries(table, respell)
    for checksum in glob.glob(f"{table.location()[len('file:'):]}/metadata/.*.crc"):
        os.unlink(checksum)
    spark.sql(f"REFRESH TABLE {name}")


def test_iceberg_split_offsets_rewritten_so_spark_reads_none_of_a_file(spark: SparkSession, hook: Hook,
                                                                      spark_warehouse: Path) -> None:
    """Spark splits an Iceberg data file at its manifest's ``split_offsets`` and reads a row group in the split that
    holds its midpoint: each data file's ``[4]`` rewritten in the manifests as ``[size - 10]`` (the same files and
    bytes) made Spark read no rows at all, while pyiceberg, which reads files whole, read every one (measured):
    VERIFIED before. The offsets are in the reader view."""
    import glob
    import os

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.manifest import DATA_FILE_TYPE, DEFAULT_READ_VERSION

    from carriers.spark.session import pyiceberg_catalog_properties
    from tests.adversarial.test_iceberg_attacks import _rewrite_manifest_entries

    name, ref = _attested_iceberg(spark, hook, spark_warehouse, "50")
    hook.uninstall()
    catalog = SqlCatalog("iceberg", **pyiceberg_catalog_properties(spark_warehouse))
    table = catalog.load_table(name.split(".", 1)[1])
    assert {tuple(t.file.split_offsets or ()) for t in table.scan().plan_files()} == {(4,)}
    index = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields].index("split_offsets")

    def past_every_row_group(entry: Any) -> None:
        if int(entry.data_file.content.value) == 0:
            entry.data_file._data[index] = [entry.data_file.file_size_in_bytes - 10]

    _rewrite_manifest_entries(table, past_every_row_group)
    for checksum in glob.glob(f"{table.location()[len('file:'):]}/metadata/.*.crc"):  # Hadoop's: dropped too
        os.unlink(checksum)
    spark.sql(f"REFRESH TABLE {name}")
    assert spark.sql(f"SELECT id FROM {name}").collect() == []
    assert catalog.load_table(name.split(".", 1)[1]).scan().to_arrow().num_rows == 50
    rc, doc = _verify(ref, spark_warehouse, "--level", "schema")
    assert rc == 1 and codes(doc) == ["reader_view_changed"] and "file view changed" in json.dumps(doc), doc


def test_spark_reads_a_timestamp_partition_value_without_a_zone_in_its_session_time_zone(spark: SparkSession,
                                                                                          tmp_path: Path) -> None:
    """Why partition values are bound as written and a zoneless timestamp is noted (test_delta_attacks): delta-rs
    writes '2024-01-05 10:00:00.000000' and reads it as 10:00 UTC, Spark in a New York session as 15:00 UTC; with a
    'Z' (as Spark writes) or an offset (as write_content_addressed writes) both read 10:00 UTC. Statistics too:
    a minimum without a zone made Spark skip a file (zoneless timestamp statistics are table_inconsistent)."""
    import datetime

    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from carriers.delta.write import write_content_addressed

    def instants(path: Path) -> tuple[list[int], list[int]]:
        engine = [int(r["p"].timestamp()) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()]
        read = [r[0] for r in spark.sql(f"SELECT unix_timestamp(p) FROM delta.`{path}`").collect()]
        return engine, read

    ten = int(datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.UTC).timestamp())
    data = pa.table({"p": pa.array([datetime.datetime(2024, 1, 5, 10)], pa.timestamp("us", "UTC")), "v": [1]})
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        plain = tmp_path / "plain"
        write_deltalake(str(plain), data, partition_by=["p"])
        assert '"p":"2024-01-05 10:00:00.000000"' in (plain / commit_name(0)).read_text()
        assert instants(plain) == ([ten], [ten + 5 * 3600])
        log = plain / commit_name(0)
        log.write_text(log.read_text().replace('"p":"2024-01-05 10:00:00.000000"', '"p":"2024-01-05T10:00:00.000000Z"'))
        assert instants(plain) == ([ten], [ten])
        ours = tmp_path / "ca"
        write_content_addressed(str(ours), data, partition_by=["p"], model="m", program_hash="a" * 64)
        assert instants(ours) == ([ten], [ten])
        # Statistics (test_delta_attacks): a minimum without a zone made Spark skip the file holding the 10:00 row.
        stats = tmp_path / "stats"
        write_deltalake(str(stats), data.rename_columns(["t", "v"]))
        query = f"SELECT count(*) FROM delta.`{stats}` WHERE t = timestamp'2024-01-05 05:00:00'"  # 10:00 UTC
        assert spark.sql(query).collect()[0][0] == 1
        log = stats / commit_name(0)
        assert "2024-01-05T10:00:00Z" in log.read_text()
        log.write_text(log.read_text().replace("2024-01-05T10:00:00Z", "2024-01-05 10:00:00.000"))
        assert spark.sql(query).collect()[0][0] == 0
        # Bounds delta-rs cannot read (it reads none), given to a file that had none: Spark read them and skipped it.
        def bounds(value: str | None) -> None:
            actions = [json.loads(line) for line in log.read_text().splitlines()]
            for action in actions:
                if "add" in action:
                    parsed = json.loads(action["add"]["stats"])
                    for side in ("minValues", "maxValues"):
                        parsed[side].pop("t", None)
                        if value is not None:
                            parsed[side]["t"] = value
                    action["add"]["stats"] = json.dumps(parsed)
            log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")

        bounds(None)
        assert spark.sql(query).collect()[0][0] == 1
        bounds("2024-01-05T10")
        assert DeltaTable(str(stats)).get_add_actions(flatten=True).column("min.t").to_pylist() == [None]
        assert spark.sql(query).collect()[0][0] == 0
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_spark_reads_statistics_delta_rs_reads_none_of(spark: SparkSession, tmp_path: Path) -> None:
    """What test_delta_attacks' statistics delta-rs cannot read stand on: delta-rs reads none of a file's statistics
    when one bound overflows its type, Spark reads the others (skipping the file by a string bound, even one nested 990
    deep, and counting rows by numRecords); and delta-rs writes a decimal maximum past 17 digits as a rounded float it
    cannot read, by which Spark skipped the file holding that maximum (refused since rt15b; rounded up, Spark read the
    row and the table verifies): such values are bound in the view as written. A
    Spark checkpoint writes its own typed reading beside them (``stats_parsed``), which delta-rs then reads: its reading
    changed, and so does the view."""
    import decimal

    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from carriers.delta.carrier import add_action_rows, attest_after_write
    from tests.adversarial.conftest import verify

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"i": pa.array([1], pa.int32()), "s": ["a"]}))
    log = path / commit_name(0)

    def given(stats: dict[str, Any]) -> None:
        actions = [json.loads(line) for line in log.read_text().splitlines()]
        for action in actions:
            if "add" in action:
                action["add"]["stats"] = json.dumps(stats)
        log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
        for crc in path.glob("_delta_log/.*.crc"):
            crc.unlink()

    query = f"SELECT count(*) FROM delta.`{path}` WHERE s = 'a'"
    given({"numRecords": 1, "minValues": {"i": 4294967297, "s": "z"}, "maxValues": {"i": 4294967297, "s": "z"},
           "nullCount": {"i": 0, "s": 0}})
    assert add_action_rows(DeltaTable(str(path)))[0]["min"] is None
    assert spark.sql(query).collect()[0][0] == 0
    given({"numRecords": 7, "minValues": {"i": 1e20}})
    assert add_action_rows(DeltaTable(str(path)))[0]["num_records"] is None
    assert spark.sql(f"SELECT count(*) FROM delta.`{path}`").collect()[0][0] == 7
    # Nested 990 deep, past Python's parser: Spark read the string bounds and skipped the file.
    nested = "[" * 990 + "]" * 990
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["stats"] = (f'{{"numRecords":1,"minValues":{{"i":4294967297,"s":{nested}}},'
                                      f'"maxValues":{{"s":{nested}}},"nullCount":{{"s":0}}}}')
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert spark.sql(query).collect()[0][0] == 0

    wide = tmp_path / "wide"
    big = decimal.Decimal("12345678901234567890.123456789012345678")
    write_deltalake(str(wide), pa.table({"d": pa.array([big, decimal.Decimal("-1.5")], pa.decimal128(38, 18))}))
    assert "1.2345678901234567e+19" in (wide / commit_name(0)).read_text()
    assert add_action_rows(DeltaTable(str(wide)))[0]["max"] == {"d": None}
    assert spark.sql(f"SELECT count(*) FROM delta.`{wide}` WHERE d = {big}").collect()[0][0] == 0  # 1 row holds it
    # Refused since rt15b (test_delta_spark_only_bounds): the rounded maximum lies below the greatest value.
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(wide), model="orders", program_hash="a" * 64)
    assert caught.value.code.value == "table_inconsistent" and "rounded through a float" in str(caught.value)
    # Rounded up (above every value), Spark reads every row: verified with a note.
    up = tmp_path / "up"
    near = decimal.Decimal("12345678901234566500.5")
    write_deltalake(str(up), pa.table({"d": pa.array([near, decimal.Decimal("-1.5")], pa.decimal128(38, 18))}))
    assert "1.2345678901234567e+19" in (up / commit_name(0)).read_text()
    assert spark.sql(f"SELECT count(*) FROM delta.`{up}` WHERE d = {near}").collect()[0][0] == 1
    attest_after_write(str(up), model="orders", program_hash="a" * 64)
    rc, doc = verify(str(up))
    assert rc == 0 and any("maxValues.d" in note for note in doc["notes"]), doc
    spark.sql(f"ALTER TABLE delta.`{up}` SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
    assert list(up.glob("_delta_log/*.checkpoint.parquet"))
    assert add_action_rows(DeltaTable(str(up)))[0]["max"] == {"d": decimal.Decimal("12345678901234567000")}
    assert "reader_view_changed" in codes(verify(str(up))[1])


def test_spark_reads_a_file_modification_time_from_the_log(spark: SparkSession, tmp_path: Path) -> None:
    """What test_delta_attacks' modification-time binding stands on: Spark's ``_metadata.file_modification_time`` is
    the add action's modificationTime, not the file's: rewritten in the attested commit, the same file and bytes read
    as modified in 1970 — VERIFIED before, reader_view_changed now."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write
    from tests.adversarial.conftest import verify
    from tests.adversarial.test_delta_attacks import _modified_at, _rewrite_attested_commit

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"i": pa.array([1], pa.int32())}))
    attest_after_write(str(path), model="orders", program_hash="a" * 64)
    query = f"SELECT _metadata.file_modification_time AS t FROM delta.`{path}`"
    assert spark.sql(query).collect()[0]["t"].year >= 2026
    _rewrite_attested_commit(path, _modified_at(1000))
    assert spark.sql(query).collect()[0]["t"].year == 1970  # 1 s after the epoch, in the session's time zone
    rc, doc = verify(str(path))
    assert rc == 1 and "reader_view_changed" in codes(doc), doc


def test_iceberg_data_file_respelled_changes_what_spark_names_it(spark: SparkSession, hook: Hook,
                                                                 spark_warehouse: Path) -> None:
    """Without delete files too, a location's spelling reaches queries: Spark's ``_file`` metadata column and
    ``input_file_name()`` return the location as written, so ``file:/t/x.parquet`` respelled in the manifests as
    ``file:///t/x.parquet`` (the same file, bytes and rows) named another file for a job that tracks the files it
    has read (measured) — VERIFIED before. The locations are in the reader view."""
    name, ref = _attested_iceberg(spark, hook, spark_warehouse, "5")
    hook.uninstall()
    query = f"SELECT DISTINCT _file, input_file_name() AS f FROM {name}"
    before = spark.sql(query).collect()
    assert all(r["_file"].startswith("file:/") and not r["_file"].startswith("file://") for r in before), before
    _respell_data_files(spark, name, spark_warehouse)
    after = spark.sql(query).collect()
    assert sorted(r["_file"] for r in after) == sorted("file://" + r["_file"][len("file:"):] for r in before)
    assert sorted(r["f"] for r in after) != sorted(r["f"] for r in before), (before, after)
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}").collect()) == [0, 1, 2, 3, 4]
    _refused(ref, spark_warehouse, "reader_view_changed", "--level", "schema")
