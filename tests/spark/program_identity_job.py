"""One Spark job that runs every attested write command once, in its own process (tests/spark/test_identity.py).

    python -m tests.spark.program_identity_job WAREHOUSE OUT.json [--variants base,changed] [--dump DIR]
                                                                  [--only LABEL,...]

Writes ``{"hashes": {variant: {label: program_hash}}, "errors": [...]}`` to OUT.json, one label per command
(CTAS, RTAS, INSERT, INSERT OVERWRITE, MERGE, UPDATE, DELETE, saveAsTable, insertInto, writeTo, path save) on
Delta catalog tables, Delta path tables and Iceberg tables. Variant ``changed`` changes the logic of every command
(a predicate, an expression or a column) while keeping table names, so its hashes must all differ from ``base``.
``--dump`` writes what the hook handed the normaliser, per command (raw plans, leaves, canonical document), for
diffing two processes by hand and for tests/spark/fixtures/plans.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any


def _frame_write(frame: Callable[[], Any], how: str, table: str, fmt: str) -> Callable[[], object]:
    def action() -> None:
        if how == "saveAsTable":
            frame().write.format(fmt).mode("append").saveAsTable(table)
        elif how == "insertInto":
            frame().write.insertInto(table)
        else:
            frame().writeTo(table).append()

    return action


def _commands(spark: Any, warehouse: Path, changed: bool) -> list[tuple[str, Callable[[], object]]]:
    """(label, action) pairs; ``changed`` flips one piece of logic in each."""
    k = 1 if changed else 0
    path = (warehouse / "paths" / "p_tgt").as_posix()
    ctas_path = (warehouse / "paths" / "p_ctas").as_posix()
    pq = "`" + path.replace("`", "``") + "`"
    cq = "`" + ctas_path.replace("`", "``") + "`"

    def frame() -> Any:
        # The rows are data (not program); the projection over them is program.
        df = spark.createDataFrame([(7, "x"), (8, "y")], "id int, s string")
        return df.selectExpr("id", "lower(s) AS s" if changed else "upper(s) AS s")

    def sql(text: str) -> Callable[[], object]:
        return lambda: spark.sql(text)

    out: list[tuple[str, Callable[[], object]]] = []
    for fmt, tgt, src in (("delta", "d_tgt", "d_src"), ("iceberg", "iceberg.ns.i_tgt", "iceberg.ns.i_src")):
        p = fmt[0]
        out += [
            # rand()/uuid() get a seed drawn per run by the analyzer: run data, not program.
            (f"{p}_ctas", sql(f"CREATE TABLE {tgt}_ctas USING {fmt} AS SELECT id, s FROM {src} "
                              f"WHERE id > {1 + k} AND rand() >= 0 AND length(uuid()) = 36")),
            (f"{p}_rtas", sql(f"CREATE OR REPLACE TABLE {tgt}_rtas USING {fmt} AS SELECT id * {2 + k} AS id, s "
                              f"FROM {src}")),
            (f"{p}_insert", sql(f"INSERT INTO {tgt} SELECT id + {100 + k}, s FROM {src}")),
            (f"{p}_overwrite", sql(f"INSERT OVERWRITE {tgt} SELECT id, s FROM {src} WHERE id < {3 + k}")),
            (f"{p}_merge", sql(f"MERGE INTO {tgt} t USING {src} s ON t.id = s.id "
                               f"WHEN MATCHED THEN UPDATE SET t.s = {'lower' if changed else 'upper'}(s.s) "
                               "WHEN NOT MATCHED THEN INSERT *")),
            (f"{p}_update", sql(f"UPDATE {tgt} SET s = 'u' WHERE id = {2 + k}")),
            (f"{p}_delete", sql(f"DELETE FROM {tgt} WHERE {'s' if changed else 'id'} = "
                                f"{repr('u') if changed else 3}")),
            (f"{p}_save_as_table", _frame_write(frame, "saveAsTable", tgt, fmt)),
            (f"{p}_insert_into", _frame_write(frame, "insertInto", tgt, fmt)),
            (f"{p}_write_to", _frame_write(frame, "writeTo", tgt, fmt)),
        ]
    out += [
        ("path_save", lambda: frame().write.format("delta").mode("append").save(path)),
        ("path_ctas", sql(f"CREATE TABLE delta.{cq} USING delta AS SELECT id, s FROM d_src WHERE id > {1 + k}")),
        ("path_insert", sql(f"INSERT INTO delta.{pq} SELECT id + {100 + k}, s FROM d_src")),
        ("path_merge", sql(f"MERGE INTO delta.{pq} t USING d_src s ON t.id = s.id "
                           f"WHEN MATCHED THEN UPDATE SET t.s = {'lower' if changed else 'upper'}(s.s) "
                           "WHEN NOT MATCHED THEN INSERT *")),
        ("path_update", sql(f"UPDATE delta.{pq} SET s = 'u' WHERE id = {2 + k}")),
        ("path_delete", sql(f"DELETE FROM delta.{pq} WHERE {'s' if changed else 'id'} = "
                            f"{repr('u') if changed else 3}")),  # matches rows in both variants: commits
    ]
    return out


def _prepare(spark: Any, warehouse: Path) -> None:
    rows = "(1, 'a'), (2, 'b'), (3, 'c')"
    spark.sql("CREATE TABLE d_src (id INT, s STRING) USING delta")
    spark.sql(f"INSERT INTO d_src VALUES {rows}")
    spark.sql("CREATE TABLE d_tgt (id INT, s STRING) USING delta")
    spark.sql(f"INSERT INTO d_tgt VALUES {rows}")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS iceberg.ns")
    spark.sql("CREATE TABLE iceberg.ns.i_src (id INT, s STRING) USING iceberg")
    spark.sql(f"INSERT INTO iceberg.ns.i_src VALUES {rows}")
    spark.sql("CREATE TABLE iceberg.ns.i_tgt (id INT, s STRING) USING iceberg")
    spark.sql(f"INSERT INTO iceberg.ns.i_tgt VALUES {rows}")
    path = (warehouse / "paths" / "p_tgt").as_posix()
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, s string").write.format("delta").save(path)


def _reset(spark: Any, warehouse: Path) -> None:
    """Drop what the CTAS commands create, so another variant can run them again under the same names."""
    import shutil

    spark.sql("DROP TABLE IF EXISTS d_tgt_ctas")
    spark.sql("DROP TABLE IF EXISTS iceberg.ns.i_tgt_ctas")
    shutil.rmtree(warehouse / "paths" / "p_ctas", ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--variants", default="base",
                        help="comma-separated, run in order in this process: base, changed")
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--only", help="comma-separated labels to run (default: all)")
    args = parser.parse_args(argv)
    from tests.spark.side_by_side import enable_stack_dumps

    enable_stack_dumps()
    import carriers.spark.hook as hook_module
    from attest.spark import install, local_session
    from carriers.spark.plan import program_document

    warehouse = args.warehouse.resolve()
    dumped: dict[str, Any] = {}
    if args.dump is not None:
        original = getattr(hook_module, "program_hash_from_json")  # noqa: B009 - patched below, read alike

        def capture(docs: Any, **kw: Any) -> str:
            dumped.setdefault("pending", []).append({
                "parts": [{"name": n, "plan": json.loads(j), "leaves": [asdict(leaf) for leaf in rels]}
                          for n, j, rels in docs],
                "kw": kw, "canonical": program_document(docs, **kw)})
            return str(original(docs, **kw))

        setattr(hook_module, "program_hash_from_json", capture)  # noqa: B010 - a module attribute mypy types

    spark = local_session(warehouse, app_name="program-identity-job")
    _prepare(spark, warehouse)
    hook = install(spark, policy="required", delta_mode="detached")  # the mode does not change identities
    hashes: dict[str, dict[str, str | None]] = {}
    only = set(args.only.split(",")) if args.only else None
    for n, variant in enumerate(args.variants.split(",")):
        if n:
            _reset(spark, warehouse)
        hashes[variant] = {}
        for label, action in _commands(spark, warehouse, variant == "changed"):
            if only is not None and label not in only:
                continue
            before = len(hook.results)
            dumped["pending"] = []
            action()
            hook.flush()
            new = [r.manifest.program_hash for r in hook.results[before:] if r.manifest is not None]
            hashes[variant][label] = new[0] if len(new) == 1 else None
            if args.dump is not None:
                args.dump.mkdir(parents=True, exist_ok=True)
                (args.dump / f"{variant}-{label}.json").write_text(json.dumps(dumped["pending"], indent=1,
                                                                               sort_keys=True))
    hook.uninstall()
    args.out.write_text(json.dumps({"hashes": hashes, "errors": hook.errors}, indent=1, sort_keys=True))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
