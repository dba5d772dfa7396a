"""A Hive Metastore (Hive 3.1.3's standalone metastore, ``HiveMetaStore``) on a free port: embedded Derby in the
session's folder, a local warehouse folder, configured by a ``metastore-site.xml`` written there. It binds every
interface (Hive 3.1.3 has no bind-host setting; 4.x, which has one, removed the thrift ``get_table`` pyiceberg 0.12
calls): the port is free and picked per session, the process lives as long as the test session.

Two starts on the same Derby database, measured: the transaction tables (``HIVE_LOCKS``…, which table locks use) are
created only in Hive's test mode (``hive.in.test``, ``TxnDbUtil.prepDb``), and that mode refuses every lock request
a client sends without an operation type (pyiceberg's and Java Iceberg's: "Bug: operationType=UNSET"). So the first
start, in test mode, creates them and is stopped; the second, the one the tests use, runs in the normal mode."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from xml.sax.saxutils import escape

from tests.servers import tools
from tests.servers.process import HOST, Server, free_port

MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"


@dataclass
class HiveMetastore:
    server: Server
    port: int
    warehouse: Path

    @property
    def uri(self) -> str:
        return f"thrift://{HOST}:{self.port}"

    def stop(self) -> None:
        self.server.stop()


def _site(conf: Path, port: int, workdir: Path, warehouse: Path, *, test_mode: bool) -> None:
    settings = {
        "metastore.thrift.port": str(port),
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",  # the JDO tables, made on the first start
        "metastore.schema.verification": "false",  # no schema version row: autoCreateAll writes none
        "metastore.warehouse.dir": warehouse.as_uri(),
        # the default proxy is Hive's (hive-exec, not on this classpath)
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
        "metastore.client.capability.check": "false",
    }
    if test_mode:
        settings.update({"hive.in.test": "true", "metastore.hive.in.test": "true"})
    conf.mkdir(parents=True, exist_ok=True)
    body = "".join(f"<property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in settings.items())
    (conf / "metastore-site.xml").write_text(f"<configuration>\n{body}</configuration>\n", encoding="utf-8")


def _listens(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2):
            return True
    except OSError:
        return False


def _make_txn_tables(port: int) -> None:
    """The first call reaching Hive's transaction store creates its tables in test mode (lazily, not at start)."""
    from hive_metastore.ttypes import ShowLocksRequest
    from pyiceberg.catalog.hive import _HiveClient

    with _HiveClient(f"thrift://{HOST}:{port}") as client:
        client.show_locks(ShowLocksRequest())


def start(workdir: Path) -> HiveMetastore:
    from carriers.spark.java import use_java

    classpath = tools.hive_metastore_classpath()
    java = use_java().java
    warehouse = workdir / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    conf = workdir / "conf"
    cp = os.pathsep.join([str(conf), *map(str, classpath)])
    for test_mode in (True, False):
        port = free_port()
        _site(conf, port, workdir, warehouse, test_mode=test_mode)
        argv = [str(java), "-Xmx512m", f"-Dderby.system.home={workdir}", "-cp", cp, MAIN]
        name = "Hive Metastore (creating its transaction tables)" if test_mode else "Hive Metastore"
        server = Server(name, argv, workdir / f"metastore{'-init' if test_mode else ''}.log", cwd=workdir)
        server.wait_ready(partial(_listens, port), timeout=180.0)
        if test_mode:
            try:
                _make_txn_tables(port)
            finally:
                server.stop()
    return HiveMetastore(server, port, warehouse)
