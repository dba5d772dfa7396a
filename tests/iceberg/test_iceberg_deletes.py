"""carriers.iceberg.deletes: which delete files pyiceberg and Iceberg Java apply to which data files."""

from __future__ import annotations

from typing import Any

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.deletes import ListedManifest, Planned, applicability
from tests.iceberg.conftest import CATALOG, catalog, commit_delete_file, local, rows, table  # noqa: F401

UNPARTITIONED = "[]"


def planned(key: str, content: int = 0, seq: int | None = 1, *, partition: str = UNPARTITIONED, spec: int = 0,
            manifest: str = "m-data", referenced: str | None = None, bounds: tuple[str, str] | None = None,
            puffin: bool = False, nan: bool = False) -> Planned:
    return Planned(key=key, location=f"file:///t/{key}", content=content, puffin=puffin, spec_id=spec,
                   partition=partition, sequence=seq, referenced=referenced,
                   path_lower=None if bounds is None else bounds[0], path_upper=None if bounds is None else bounds[1],
                   manifest=manifest, partition_nan=nan)


def expand(plan: dict[str, Any]) -> dict[str, set[str]]:
    """A compact plan as {data file: the delete files (and refusals) applied to it}."""
    out: dict[str, set[str]] = {}
    for data, scopes in plan["files"].items():
        applied: set[str] = set()
        for scope in scopes:
            if "#" in scope and not scope.startswith(("dv:", "!")):
                group, start = scope.rsplit("#", 1)
                applied.update(plan["groups"][group][int(start):])
            else:
                applied.add(scope)
        out[data] = applied
    return out


MANIFESTS = [ListedManifest("m-data", 0, 1, 1), ListedManifest("m-del", 1, 3, 3)]


def test_position_deletes_apply_to_older_data_in_their_scope() -> None:
    files = [planned("a", seq=1), planned("b", seq=3), planned("c", seq=1, partition="[1]"),
             planned("d1", 1, 2, manifest="m-del"),  # partition-scoped: a (1 <= 2), not b (3 > 2), not c
             planned("d2", 1, 3, manifest="m-del", bounds=("file:///t/b", "file:///t/b"))]  # file-scoped: b
    plans, differ = applicability(files, MANIFESTS, {0})
    assert differ == []
    for reader in ("pyiceberg", "java"):
        assert expand(plans[reader]) == {"a": {"d1"}, "b": {"d2"}}, reader


def test_equality_deletes_apply_to_strictly_older_data_and_pyiceberg_refuses_them() -> None:
    files = [planned("a", seq=1), planned("b", seq=2), planned("e", 2, 2, manifest="m-del")]
    plans, differ = applicability(files, MANIFESTS, {0})
    assert expand(plans["java"]) == {"a": {"e"}} and plans["pyiceberg"]["refused"] == ["e"] and differ == []


def test_a_deletion_vector_replaces_position_deletes_for_java() -> None:
    files = [planned("a", seq=1), planned("p", 1, 2, manifest="m-del"),
             planned("v", 1, 2, manifest="m-del", puffin=True, referenced="file:///t/a")]
    plans, _ = applicability(files, MANIFESTS, {0})
    assert expand(plans["java"]) == {"a": {"dv:v"}}
    assert expand(plans["pyiceberg"]) == {"a": {"p", "v"}}  # pyiceberg applies both (the vector holds p's rows)


def test_referenced_data_file_scopes_a_position_delete_file_for_java_only() -> None:
    files = [planned("a", seq=1), planned("b", seq=1), planned("p", 1, 2, manifest="m-del", referenced="file:///t/a")]
    plans, _ = applicability(files, MANIFESTS, {0})
    assert expand(plans["java"]) == {"a": {"p"}} and expand(plans["pyiceberg"]) == {"a": {"p"}, "b": {"p"}}


def test_a_delete_manifest_pyiceberg_skips_while_java_applies_it() -> None:
    files = [planned("a", seq=1), planned("d", 1, 4, manifest="m-del")]
    plans, differ = applicability(files, [ListedManifest("m-data", 0, 1, 1), ListedManifest("m-del", 1, 0, 4)], {0})
    assert plans["pyiceberg"]["skipped"] == ["d"] and expand(plans["pyiceberg"]) == {}
    assert expand(plans["java"]) == {"a": {"d"}}
    assert len(differ) == 1 and "pyiceberg skips delete manifest m-del" in differ[0]


def test_a_delete_of_sequence_number_zero_java_does_not_read() -> None:
    files = [planned("a", seq=0), planned("d", 1, 0, manifest="m-del")]
    plans, differ = applicability(files, [ListedManifest("m-data", 0, 0, 0), ListedManifest("m-del", 1, 0, 0)], {0})
    assert expand(plans["pyiceberg"]) == {"a": {"d"}} and expand(plans["java"]) == {}
    assert len(differ) == 1 and "below 1" in differ[0]


def test_a_partition_scoped_delete_in_a_nan_partition_pyiceberg_never_applies() -> None:
    """pyiceberg looks a partition-scoped delete up by a Record of its partition values compared with ==: in a NaN
    partition it finds no data file; Java (Double.compare) applies it. Scoped by path (equal bounds), both apply it."""
    nan = '[{"float": "nan"}]'
    files = [planned("a", seq=1, partition=nan, nan=True), planned("b", seq=1, partition=nan, nan=True),
             planned("d", 1, 2, manifest="m-del", partition=nan, nan=True),
             planned("v", 1, 2, manifest="m-del", partition=nan, nan=True, puffin=True, referenced="file:///t/b")]
    plans, differ = applicability(files, MANIFESTS, set())
    assert expand(plans["java"]) == {"a": {"d"}, "b": {"dv:v"}} and expand(plans["pyiceberg"]) == {}
    assert len(differ) == 2 and all("holds NaN" in why for why in differ), differ
    scoped = [planned("a", seq=1, partition=nan, nan=True),
              planned("d", 1, 2, manifest="m-del", partition=nan, nan=True, bounds=("file:///t/a", "file:///t/a"))]
    plans, differ = applicability(scoped, MANIFESTS, set())
    assert differ == [] and expand(plans["java"]) == expand(plans["pyiceberg"]) == {"a": {"d"}}


def test_the_plan_stays_compact_for_many_deletes_in_one_partition() -> None:
    """Partition-scoped deletes apply to every older data file of their partition: the plan names each data file's
    start position in one ordered list, not every pair (10,000 x 10,000 would be 100 million)."""
    data = [planned(f"f{i}", seq=i + 1) for i in range(10_000)]
    deletes = [planned(f"d{i}", 1, i + 1, manifest="m-del") for i in range(10_000)]
    plans, differ = applicability(data + deletes, [ListedManifest("m-data", 0, 1, 1),
                                                   ListedManifest("m-del", 1, 10_000, 1)], {0})
    assert differ == []
    for reader in ("pyiceberg", "java"):
        assert sum(len(v) for v in plans[reader]["files"].values()) == 10_000
        assert plans[reader]["files"]["f9999"] == ["partition:0:[]#9999"]


def test_the_model_matches_what_pyiceberg_plans(catalog: SqlCatalog, table: Table) -> None:  # noqa: F811
    """A real table: two data files, a position delete file naming the first; the model's pyiceberg plan is the one
    pyiceberg's own scan planning makes."""
    table.append(rows(0))
    table.append(rows(3))
    commit_delete_file(table, local(table.location()) / "data" / "pos.parquet")
    table = catalog.load_table("ns.t")
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    records, _ = carrier._manifest_entries(table.current_snapshot())  # type: ignore[arg-type]
    from carriers.iceberg.carrier import planned_file

    files = [planned_file(carrier.file_entry(r)[0], r) for r in records]
    fv = int(table.metadata.format_version)
    listed = [ListedManifest(m.manifest_path, int(m.content.value), m.sequence_number, m.min_sequence_number)
              for m, _ in carrier._manifest_list(table.current_snapshot(), fv)]  # type: ignore[arg-type]
    plans, differ = applicability(files, listed, {0})
    assert differ == []
    by_pyiceberg = {carrier.relative(t.file.file_path): {carrier.relative(d.file_path) for d in t.delete_files}
                    for t in table.scan().plan_files() if t.delete_files}
    assert expand(plans["pyiceberg"]) == by_pyiceberg == expand(plans["java"]) and len(by_pyiceberg) == 2
