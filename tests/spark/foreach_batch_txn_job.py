"""A hooked ``foreachBatch`` job writing with Delta's idempotent writes, for
tests/spark/test_foreach_batch_txn_restart.py.

    python -m tests.spark.foreach_batch_txn_job WAREHOUSE SOURCE_DIR TABLE SQL_TABLE CHECKPOINT OUT.json [--kill-at N]

Streams the JSON files of SOURCE_DIR (one file per micro-batch, ``availableNow``) through a ``foreachBatch`` function
that appends each batch to two Delta tables with Delta's idempotent writes, the batch id as the txn version: to the
path TABLE with ``DataFrameWriter.save`` and the options ``txnAppId`` / ``txnVersion``, and to SQL_TABLE (made
empty first) with ``INSERT INTO delta.`SQL_TABLE``` and the session confs ``spark.databricks.delta.write.txnAppId``
/ ``txnVersion``; with ``attest.spark.install(spark, delta_mode="detached")``. With ``--kill-at N`` the function
of batch N waits for the hook to finish every earlier attestation, stalls the hook's attestations from then on (so
batch N's commits are not attested), writes, and kills its own driver (SIGKILL) after the writes committed and
before Spark logged the batch as done: on restart Spark runs batch N again and Delta skips its writes (the txn is in
the log). Without it, the
query runs to the end, the hook is flushed and its counters go to OUT.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

APP_ID = "recipe-attest-foreach-batch-test"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("source", type=Path)
    parser.add_argument("table", type=Path)
    parser.add_argument("sql_table", type=Path)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--kill-at", type=int, default=None)
    args = parser.parse_args(argv)

    from tests.spark.side_by_side import enable_stack_dumps

    enable_stack_dumps()
    import attest.spark
    from attest.errors import PolicyError
    from carriers.spark import hook as hook_module
    from carriers.spark.session import local_session

    spark = local_session(args.warehouse, app_name="recipe-attest-foreach-batch-txn-job")
    hook = attest.spark.install(spark, policy="required", delta_mode="detached")
    stall = threading.Event()
    never = threading.Event()
    original = hook_module.Hook._attest_delta

    def stalled(self: Any, event: Any) -> Any:
        if stall.is_set():
            never.wait()  # never set: the driver is killed while this attestation is pending
        return original(self, event)

    hook_module.Hook._attest_delta = stalled  # type: ignore[method-assign]

    def batch(df: Any, batch_id: int) -> None:
        if args.kill_at is not None and batch_id == args.kill_at:
            hook.flush()  # the batches before are attested
            stall.set()
            # The stalled attestation never finishes: the SQL write's guard (serialize_writes) would wait its whole
            # guard_timeout_s (120 s) for it and then go on; go on at once instead, as the guard does after it.
            hook.guard_timeout_s = 0.0
        (df.write.format("delta").mode("append").option("txnAppId", APP_ID).option("txnVersion", batch_id)
         .save(str(args.table)))
        session = df.sparkSession
        df.createOrReplaceTempView("batch")
        session.conf.set("spark.databricks.delta.write.txnAppId", APP_ID)
        session.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
        try:
            session.sql(f"INSERT INTO delta.`{args.sql_table}` SELECT id, s FROM batch")
        finally:
            session.conf.unset("spark.databricks.delta.write.txnAppId")
            session.conf.unset("spark.databricks.delta.write.txnVersion")
        if args.kill_at is not None and batch_id == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)  # committed; the commit log of the batch is never written

    if not (args.sql_table / "_delta_log").is_dir():
        spark.sql(f"CREATE TABLE delta.`{args.sql_table}` (id BIGINT, s STRING) USING delta")
    query = (spark.readStream.format("json").schema("id long, s string").option("maxFilesPerTrigger", 1)
             .load(str(args.source)).writeStream.foreachBatch(batch)
             .option("checkpointLocation", str(args.checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    refused = None
    try:
        hook.flush()
    except PolicyError as exc:  # "required" refuses a write it could not attest: reported, as the test asks
        refused = exc.message
    args.out.write_text(json.dumps({"refused": refused, "attested": hook.attested, "skipped": hook.skipped,
                                    "failed": hook.failed,
                                    "errors": hook.errors, "lost": [str(x) for x in getattr(hook, "lost", [])],
                                    "not_found": hook.not_found,
                                    "versions": sorted((str(r.location), int(r.attested_version or -1))
                                                       for r in hook.results)}))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
