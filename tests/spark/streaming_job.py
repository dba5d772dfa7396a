"""A hooked streaming job for the kill -9 test (tests/spark/test_streaming_restart.py).

    python -m tests.spark.streaming_job WAREHOUSE SOURCE_DIR TABLE CHECKPOINT OUT.json [--stall-from N]

Streams the JSON files of SOURCE_DIR (one file per micro-batch) into the Delta path TABLE with
``attest.spark.install(spark)``, checkpointing to CHECKPOINT. Without ``--stall-from`` it runs ``availableNow``
(every file not processed yet), flushes the hook and writes its counters to OUT.json. With ``--stall-from N`` it
runs with a processing-time trigger and the hook's attestation of batch N and later never finishes (a slow
attestation, in this test job only), so a driver killed mid-stream leaves committed batches without attestation:
the restart must attest them, once each.
"""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("source", type=Path)
    parser.add_argument("table", type=Path)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--stall-from", type=int, default=None)
    args = parser.parse_args(argv)

    from tests.spark.side_by_side import enable_stack_dumps

    enable_stack_dumps()
    import attest.spark
    from carriers.spark.session import local_session

    spark = local_session(args.warehouse, app_name="recipe-attest-streaming-job")
    hook = attest.spark.install(spark, policy="required")
    if args.stall_from is not None:
        from carriers.spark import streaming

        original = streaming.StreamWatcher._attest_version
        stall = threading.Event()

        def slow(self: Any, carrier: Any, state: Any, version: str, ranges: Any) -> Any:
            if int(version) >= args.stall_from:
                stall.wait()  # never set: the driver is killed while this attestation is pending
            return original(self, carrier, state, version, ranges)

        streaming.StreamWatcher._attest_version = slow  # type: ignore[method-assign]
    writer = (spark.readStream.format("json").schema("id long, s string").option("maxFilesPerTrigger", 1)
              .load(str(args.source)).selectExpr("id", "upper(s) AS s")
              .writeStream.format("delta").option("checkpointLocation", str(args.checkpoint)))
    if args.stall_from is not None:
        query = writer.trigger(processingTime="1 second").start(str(args.table))
        query.awaitTermination()  # killed before it ends
        return 1
    query = writer.trigger(availableNow=True).start(str(args.table))
    query.awaitTermination()
    hook.flush()
    args.out.write_text(json.dumps({"attested": hook.attested, "skipped": hook.skipped, "failed": hook.failed,
                                    "already": hook.already_attested, "errors": hook.errors,
                                    "versions": sorted(int(r.attested_version) for r in hook.results)}))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
