"""The local Spark stack: pinned JVM jars fetched with Maven, and a local SparkSession with Delta and Iceberg.

Nothing here imports pyspark at import time; `carriers.spark.session.local_session` does so when called.
See docs/spark-stack.md.
"""
