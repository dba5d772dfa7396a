"""A hooked Spark job appending to a shared Delta path table in lock-step with others (tests/spark/test_stamps.py).

    python -m tests.spark.concurrent_writer_job WAREHOUSE TABLE_PATH MARKER ROUNDS SYNC_DIR OUT.json [--sql]

Each round: announce ``SYNC_DIR/<MARKER>-<round>``, wait until every other writer announced that round too, then
append one row whose ``s`` column is MARKER (``df.write.save`` or, with ``--sql``, ``INSERT INTO delta.`path```),
so the writers' transactions overlap and often read the same version. Writes ``{"versions": {version:
program_hash}, "attested": n, "skipped": n, "failed": n, "errors": [...]}`` for the versions this process's hook
attested (delta_mode="detached": no attestation commit aborts the other writer). A writer that fails leaves
``SYNC_DIR/failed-<MARKER>`` so the others stop waiting for it; a peer missing for 300 s is an error, not a skip.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def append(spark: Any, table: str, marker: str, row: int, *, sql: bool) -> None:
    """One appended row. The marker is program (a literal in the plan), the row id is data (an inline table or
    a DataFrame's rows), so each writer keeps one program identity across rounds and the two writers differ."""
    if sql:
        quoted = "`" + table.replace("`", "``") + "`"
        spark.sql(f"INSERT INTO delta.{quoted} SELECT id, '{marker}' AS s FROM VALUES ({row}) AS v(id)")
    else:
        spark.createDataFrame([(row,)], "id int").selectExpr("id", f"'{marker}' AS s") \
            .write.format("delta").mode("append").save(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("table", type=Path)
    parser.add_argument("marker")
    parser.add_argument("rounds", type=int)
    parser.add_argument("sync", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--sql", action="store_true")
    parser.add_argument("--writers", type=int, default=2)
    args = parser.parse_args(argv)

    from tests.spark.side_by_side import enable_stack_dumps

    enable_stack_dumps()
    try:
        return _run(args)
    except BaseException:
        (args.sync / f"failed-{args.marker}").touch()
        raise


def _wait_for_peers(sync: Path, round_: int, writers: int) -> None:
    deadline = time.monotonic() + 300
    while sum(not p.name.startswith("failed-") for p in sync.glob(f"*-{round_}")) < writers:
        failed = sorted(p.name for p in sync.glob("failed-*"))
        if failed:
            raise SystemExit(f"a peer failed ({', '.join(failed)}): stopping")
        if time.monotonic() > deadline:
            raise SystemExit(f"round {round_}: the other writers did not arrive within 300 s")
        time.sleep(0.01)


def _run(args: argparse.Namespace) -> int:
    from attest.spark import install, local_session

    spark = local_session(args.warehouse, app_name=f"concurrent-writer-{args.marker}")
    hook = install(spark, policy="required", delta_mode="detached")
    table = args.table.resolve().as_posix()
    print(f"{args.marker}: session up", flush=True)
    for i in range(args.rounds):
        (args.sync / f"{args.marker}-{i}").touch()
        _wait_for_peers(args.sync, i, args.writers)
        append(spark, table, args.marker, i, sql=args.sql)
        print(f"{args.marker}: round {i} written", flush=True)
    hook.flush(timeout=600)
    versions = {str(r.attested_version): r.manifest.program_hash for r in hook.results if r.manifest is not None}
    args.out.write_text(json.dumps({"versions": versions, "attested": hook.attested, "skipped": hook.skipped,
                                    "failed": hook.failed, "errors": hook.errors}))
    hook.uninstall()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
