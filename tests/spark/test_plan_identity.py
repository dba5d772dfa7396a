"""The plan normaliser (carriers.spark.plan) over real plan JSON, without a JVM.

fixtures/plans/process{1,2}.json are what the hook handed the normaliser for the same job run in two separate
processes on two fresh warehouses (tests/spark/program_identity_job.py --dump): the raw plans differ in catalog
entries (createTime), JVM ids and paths; the canonical documents must not. Regenerate with
``python -m tests.spark.program_identity_job W OUT --dump DIR --only d_ctas,d_merge,path_update,i_merge``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from carriers.spark.plan import LeafInfo, location_variants, program_document, program_hash_from_json

FIXTURES = Path(__file__).with_name("fixtures") / "plans"
COMMANDS = ("d_ctas", "d_merge", "path_update", "i_merge")


def _load(process: int) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"process{process}.json").read_text())
    return data


def _leaf(d: dict[str, Any]) -> LeafInfo:
    return LeafInfo(**{**d, "identifier": None if d["identifier"] is None else tuple(d["identifier"]),
                       "expr_ids": tuple(d["expr_ids"])})


def _parts(cmd: dict[str, Any]) -> list[tuple[str, str, list[LeafInfo]]]:
    return [(p["name"], json.dumps(p["plan"]), [_leaf(x) for x in p["leaves"]]) for p in cmd["parts"]]


def _hash(cmd: dict[str, Any]) -> str:
    return program_hash_from_json(_parts(cmd), **cmd["kw"])


def _nodes(value: Any) -> list[dict[str, Any]]:
    """Every dict at any depth (plan and expression nodes, catalog entries...)."""
    out: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


@pytest.mark.parametrize("name", COMMANDS)
def test_two_processes_give_one_document(name: str) -> None:
    one, two = _load(1)[name], _load(2)[name]
    assert json.dumps(one["parts"]) != json.dumps(two["parts"])  # the raw plans do differ between processes
    assert program_document(_parts(one), **one["kw"]) == program_document(_parts(two), **two["kw"])


def test_catalog_entry_and_jvm_ids_are_not_program_at_any_depth() -> None:
    cmd = copy.deepcopy(_load(1)["d_merge"])
    before = _hash(cmd)
    touched = 0
    for node in _nodes(cmd["parts"]):
        if str(node.get("product-class", "")).endswith(".CatalogTable"):  # nested inside the MERGE command too
            node.update(createTime=1, owner="someone-else", createVersion="9.9", lastAccessTime=7,
                        properties={"recipe_manifest.hash": "x"})
            touched += 1
        if str(node.get("product-class", "")).endswith(".ExprId"):
            node.update(id=node["id"] + 100_000, jvmId="another-jvm")
    for part in cmd["parts"]:
        for leaf in part["leaves"]:
            leaf["expr_ids"] = [i + 100_000 for i in leaf["expr_ids"]]
    assert touched >= 3
    assert _hash(cmd) == before


@pytest.mark.parametrize(("name", "old", "new"), [
    ("d_merge", "org.apache.spark.sql.catalyst.expressions.Upper", "org.apache.spark.sql.catalyst.expressions.Lower"),
    ("path_update", '"value":"2"', '"value":"3"'),
    ("i_merge", '"name":"s","nullable"', '"name":"t","nullable"'),
    ("d_ctas", '"value":"1"', '"value":"2"'),
])
def test_a_logic_change_changes_the_identity(name: str, old: str, new: str) -> None:
    cmd = _load(1)[name]
    raw = json.dumps(cmd, separators=(",", ":"))
    assert old in raw
    assert _hash(json.loads(raw.replace(old, new, 1))) != _hash(cmd)


def test_reading_another_table_changes_the_identity() -> None:
    cmd = copy.deepcopy(_load(1)["d_merge"])
    before = _hash(cmd)
    for part in cmd["parts"]:
        for leaf in part["leaves"]:
            if leaf["name"] == "spark_catalog.default.d_src":
                leaf["name"] = "spark_catalog.default.other"
    assert _hash(cmd) != before


def test_analyzer_seeds_are_dropped_but_user_seeds_count() -> None:
    cmd = _load(1)["d_ctas"]
    raw = json.dumps(cmd)
    doc = program_document(_parts(cmd), **cmd["kw"])
    assert "<random seed>" in json.dumps(doc) and '"randomSeed"' not in json.dumps(doc)  # rand() and uuid()
    reseeded = copy.deepcopy(cmd)
    seeds = 0
    for part in reseeded["parts"]:
        for nodes in (n for n in _nodes(part["plan"]) if isinstance(n, dict)):
            if "randomSeed" in nodes:
                nodes["randomSeed"] = 12345
                seeds += 1
    lists = [v for v in _lists(reseeded["parts"]) if any(isinstance(x, dict) and x.get("hideSeed") for x in v)]
    for seq in lists:
        i = next(i for i, x in enumerate(seq) if isinstance(x, dict) and x.get("hideSeed"))
        seq[i + 1]["value"] = "424242"  # rand()'s only child: the seed literal
    assert seeds and lists
    assert _hash(reseeded) == _hash(cmd)
    for seq in lists:  # the same seed written by the user (hideSeed false) is program
        next(x for x in seq if isinstance(x, dict) and x.get("hideSeed"))["hideSeed"] = False
    assert _hash(reseeded) != _hash(json.loads(raw))


def _lists(value: Any) -> list[list[Any]]:
    out: list[list[Any]] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            out.append(v)
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return out


def test_the_written_tables_path_is_the_subject_not_the_program() -> None:
    # path_update writes a path-only table: in another warehouse its path differs, its program does not.
    one, two = _load(1)["path_update"], _load(2)["path_update"]
    assert one["kw"]["target"] != two["kw"]["target"]
    assert _hash(one) == _hash(two)
    # Read as an input (not the target), the path is the table's only name: then it counts.
    for cmd in (one, two):
        cmd["kw"]["target"] = "file:/somewhere/else"
    assert _hash(one) != _hash(two)


def test_the_write_id_never_reaches_the_document() -> None:
    cmd = copy.deepcopy(_load(1)["d_ctas"])
    before = _hash(cmd)
    node = cmd["parts"][0]["plan"][0]
    node["comment"] = "stamped recipe-attest:write:abc"
    cmd["kw"]["write_ids"] = ["recipe-attest:write:abc"]
    with_one = _hash(cmd)
    node["comment"] = "stamped recipe-attest:write:def"
    cmd["kw"]["write_ids"] = ["recipe-attest:write:def"]
    assert _hash(cmd) == with_one != before


def test_location_variants_and_boundaries() -> None:
    assert location_variants("file:/w/t") == ["file:///w/t", "file:/w/t", "/w/t"]
    assert location_variants("file:///w/t") == ["file:///w/t", "file:/w/t", "/w/t"]
    assert location_variants("s3://b/t") == ["s3://b/t"]
    plan = [{"class": "org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias", "num-children": 0,
             "identifier": {"name": "/w/t", "qualifier": "[/w/t2, /w/t]"}}]
    doc = program_document([("query", json.dumps(plan), [])], scrub=["file:/w/t"])
    alias = doc["parts"]["query"][0]["identifier"]
    assert alias == {"name": "<location>", "qualifier": "[/w/t2, <location>]"}  # a sibling path stays itself


def test_result_changing_confs_are_program_only_when_set() -> None:
    """Confs off their defaults are listed (``confs``); none listed keeps the document a plan always had."""
    plan = json.dumps([{"class": "org.apache.spark.sql.catalyst.plans.logical.OneRowRelation", "num-children": 0}])
    bare = program_document([("query", plan, [])])
    assert "confs" not in bare and program_document([("query", plan, [])], confs={}) == bare
    legacy = {"spark.sql.legacy.timeParserPolicy": "LEGACY"}
    assert program_document([("query", plan, [])], confs=legacy)["confs"] == legacy
    assert program_hash_from_json([("query", plan, [])], confs=legacy) != program_hash_from_json([("query", plan, [])])
