"""Spark tests share one local SparkSession (Delta + Iceberg JDBC catalog on sqlite).

Startup takes 10-15 s, so the session is session-scoped: tests must not stop it or change static conf,
and should use unique table names (the warehouse is shared too). The jars come from ensure_jars(), i.e.
$RECIPE_ATTEST_CACHE or ~/.cache/recipe-attest, downloaded and SHA-256-checked on first use. The fixtures
(spark, spark_warehouse) live in tests/conftest.py, because tests/adversarial uses them too.
"""
