"""Apache Iceberg's REST catalog server (``RESTCatalogServer``, iceberg-open-api's test fixture — the server of the
apache/iceberg-rest-fixture image): a JDBC catalog on a sqlite file behind the REST API, tables in a local warehouse
folder, on a free port. Configured through its ``CATALOG_*`` environment variables (``CATALOG_X__Y`` is ``x-y``,
``CATALOG_X_Y`` is ``x.y``). It binds every interface (the server has no host setting): the port is free and picked
per session, the process lives as long as the test session."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tests.servers import tools
from tests.servers.process import HOST, Server, free_port, http_answers


@dataclass
class RestCatalog:
    server: Server
    port: int
    warehouse: Path

    @property
    def uri(self) -> str:
        return f"http://{HOST}:{self.port}"

    def stop(self) -> None:
        self.server.stop()


def start(workdir: Path) -> RestCatalog:
    from carriers.spark.java import use_java

    classpath = tools.iceberg_rest_classpath()
    java = use_java().java
    port = free_port()
    warehouse = workdir / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    env = {"CATALOG_REST_PORT": str(port), "CATALOG_WAREHOUSE": warehouse.as_uri(),
           "CATALOG_URI": f"jdbc:sqlite:{workdir / 'catalog.db'}", "CATALOG_JDBC_SCHEMA__VERSION": "V1"}
    argv = [str(java), "-Xmx256m", "-cp", os.pathsep.join(map(str, classpath)),
            "org.apache.iceberg.rest.RESTCatalogServer"]
    server = Server("Iceberg REST catalog", argv, workdir / "rest-catalog.log", cwd=workdir, env=env)
    out = RestCatalog(server, port, warehouse)
    server.wait_ready(lambda: http_answers(f"{out.uri}/v1/config"))
    return out
