"""``ReaderView.same_digest``: a verification of an unchanged table compares the two views without encoding their
files; the answer is always ``digest == digest`` (docs/scale.md)."""

from __future__ import annotations

import pytest

from attest.view import ReaderView, file_digest

FILES = {f"d/part-{i:05d}.parquet": file_digest({"kind": "data", "size": i}) for i in range(10_000)}


@pytest.mark.parametrize(("table", "files", "other_table", "other_files"), [
    ({"schema": {"a": 1}}, FILES, {"schema": {"a": 1}}, dict(FILES)),  # the same
    ({"schema": {"a": 1}}, FILES, {"schema": {"a": True}}, dict(FILES)),  # 1 == True, but another text
    ({"schema": {"a": 1}}, FILES, {"schema": {"a": 1.0}}, dict(FILES)),  # 1 == 1.0, but another text
    ({"schema": {"a": 1}}, FILES, {"schema": {"a": 2}}, dict(FILES)),
    ({"schema": {"a": 1}}, FILES, {"schema": {"a": 1}}, {**FILES, "d/part-00000.parquet": "0" * 64}),
    ({"schema": {"a": 1}}, FILES, {"schema": {"a": 1}}, {k: v for k, v in FILES.items() if k[-9:] != "1.parquet"}),
])
def test_same_digest_is_the_digests_equality(table: dict[str, object], files: dict[str, str],
                                             other_table: dict[str, object], other_files: dict[str, str]) -> None:
    a, b = ReaderView(table=table, files=files), ReaderView(table=other_table, files=other_files)
    expected = a.digest == b.digest
    a, b = ReaderView(table=table, files=files), ReaderView(table=other_table, files=other_files)  # nothing cached
    assert a.same_digest(b) is expected
    assert b.same_digest(a) is expected


def test_rewrites_may_narrow_the_schemas_read_to_one_attested_schema() -> None:
    """attest/view.py table_kept_by_rewrites: after rewrites the schemas a reader of the version resolves must be
    one, one of the attested ones; every other key equal but those the rewrites change by nature."""
    from attest.view import table_kept_by_rewrites

    attested = {"schema": "s1", "schemas": ["d0", "d1"], "locations": "a", "partition_specs": {"0": []}}
    kept = {**attested, "schemas": ["d1"], "locations": "b"}
    assert table_kept_by_rewrites(attested, kept, {"locations"})
    assert not table_kept_by_rewrites(attested, kept, set())  # locations changed and not skipped
    assert not table_kept_by_rewrites(attested, {**kept, "schemas": ["d0", "d1"]}, {"locations"})  # two: refused
    assert not table_kept_by_rewrites(attested, {**kept, "schemas": ["d2"]}, {"locations"})  # not attested
    assert not table_kept_by_rewrites(attested, {**kept, "schemas": []}, {"locations"})
    assert not table_kept_by_rewrites(attested, {**kept, "partition_specs": {}}, {"locations"})
    no_schemas = {k: v for k, v in attested.items() if k != "schemas"}  # attested before "schemas" was bound
    assert table_kept_by_rewrites(no_schemas, {k: v for k, v in kept.items() if k != "schemas"}, {"locations"})


def test_rewrites_compare_delete_file_keys_on_the_members_both_views_hold() -> None:
    """attest/view.py DELETE_FILE_KEYS: Iceberg's ``java_equality_fields`` is in a view only while equality deletes
    are live. A rewrite that applied them and dropped them (Spark's rewrite_data_files: reader_view_changed before)
    keeps the table part; a member both views hold must be equal."""
    from attest.view import table_changed_by_rewrites, table_kept_by_rewrites

    fields = {"1": ["long", False], "2": ["string", False]}
    attested = {"schema": "s1", "locations": "a", "java_equality_fields": fields}
    skip = {"locations"}
    assert table_kept_by_rewrites(attested, {"schema": "s1", "locations": "b"}, skip)  # every equality delete spent
    assert table_kept_by_rewrites(attested, {**attested, "java_equality_fields": {"1": ["long", False]}}, skip)
    assert table_kept_by_rewrites({"schema": "s1"}, attested, skip)  # added: held to the read columns where made
    assert not table_kept_by_rewrites(attested, {**attested, "java_equality_fields": {"1": ["string", False]}}, skip)
    assert not table_kept_by_rewrites(attested, {**attested, "java_equality_fields": {"1": ["long", True]}}, skip)
    assert not table_kept_by_rewrites(attested, {"schema": "s2", "locations": "b"}, skip)  # other keys still equal
    assert table_changed_by_rewrites(attested, {"schema": "s2", "locations": "b"}, skip) == ["schema"]
