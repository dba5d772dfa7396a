"""A hooked Spark job appending to a shared Delta path table in lock-step with others (tests/spark/test_stamps.py).

    python -m tests.spark.concurrent_writer_job WAREHOUSE TABLE_PATH MARKER ROUNDS SYNC_DIR OUT.json [--sql]

Each round: announce ``SYNC_DIR/<MARKER>-<round>``, wait until every other writer announced that round too, then
append one row whose ``s`` column is MARKER (``df.write.save`` or, with ``--sql``, ``INSERT INTO delta.`path```),
so the writers' transactions overlap and often read the same version. Writes ``{"versions": {version:
program_hash}, "attested": n, "skipped": n, "failed": n, "errors": [...]}`` for the versions this process's hook
attested (delta_mode="detached": no attestation commit aborts the other writer).
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

    from attest.spark import install, local_session

    spark = local_session(args.warehouse, app_name=f"concurrent-writer-{args.marker}")
    hook = install(spark, policy="required", delta_mode="detached")
    table = args.table.resolve().as_posix()
    for i in range(args.rounds):
        (args.sync / f"{args.marker}-{i}").touch()
        deadline = time.monotonic() + 600
        while len(list(args.sync.glob(f"*-{i}"))) < args.writers and time.monotonic() < deadline:
            time.sleep(0.01)
        append(spark, table, args.marker, i, sql=args.sql)
    hook.flush()
    versions = {str(r.attested_version): r.manifest.program_hash for r in hook.results if r.manifest is not None}
    args.out.write_text(json.dumps({"versions": versions, "attested": hook.attested, "skipped": hook.skipped,
                                    "failed": hook.failed, "errors": hook.errors}))
    hook.uninstall()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
