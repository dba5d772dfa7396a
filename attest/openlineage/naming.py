"""Dataset names as OpenLineage spells them (https://openlineage.io/docs/spec/naming), both ways.

A table is named by where it lives, as the openlineage-spark listener names Delta and Iceberg tables: a local path
is namespace ``file`` and its absolute path; an object store is ``<scheme>://<bucket>`` and the key (``s3a``/``s3n``
are ``s3``); any other URI is ``<scheme>://<authority>`` and its path. An Iceberg table whose location is not known
is named by its catalog: namespace ``iceberg://<catalog>``, name ``<namespace>.<table>`` (and every Iceberg table
carries that name as a ``symlinks`` identifier, so both spellings meet).
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from attest.locations import scheme_of

ICEBERG = "iceberg://"
_OBJECT_STORES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "abfs": "abfs", "abfss": "abfss",
                  "wasb": "wasb", "wasbs": "wasbs", "oss": "oss", "r2": "r2"}


@dataclass(frozen=True)
class DatasetName:
    namespace: str
    name: str


def dataset_name(location: str) -> DatasetName:
    """The OpenLineage name of a table location (a path, a URI, or an ``iceberg://`` reference)."""
    if location.startswith(ICEBERG):
        catalog, _, ident = location[len(ICEBERG):].partition("/")
        return DatasetName(f"{ICEBERG}{catalog}", ident)
    try:
        parsed = urlparse(location)
    except ValueError:  # an unbalanced '[' in the authority: named as written under its scheme
        return DatasetName(scheme_of(location) or "file", location)
    if len(parsed.scheme) <= 1:  # a local path (a one-letter scheme is a Windows drive)
        return DatasetName("file", _local(location))
    if parsed.scheme == "file":
        path = unquote(parsed.path)
        return DatasetName("file", _local(path)) if not parsed.netloc else DatasetName(f"file://{parsed.netloc}",
                                                                                      _clean(path))
    scheme = _OBJECT_STORES.get(parsed.scheme)
    if scheme is not None:
        return DatasetName(f"{scheme}://{parsed.netloc}", _clean(parsed.path).lstrip("/"))
    return DatasetName(f"{parsed.scheme}://{parsed.netloc}", _clean(parsed.path))


def location_of(namespace: str, name: str) -> str | None:
    """The table location an OpenLineage name stands for, or None when it names no storage location (a database
    table, a topic, ...)."""
    if not name or "\x00" in namespace or "\x00" in name:
        return None
    if namespace == "file":
        return _local(name) if name.startswith("/") else None
    if namespace.startswith(ICEBERG):
        catalog = namespace[len(ICEBERG):]
        return f"{ICEBERG}{catalog}/{name}" if catalog and "/" not in catalog and "." in name else None
    try:
        parsed = urlparse(namespace)
    except ValueError:  # an unbalanced '[' in the authority: no location anyone reads alike
        return None
    if (parsed.scheme not in _OBJECT_STORES and parsed.scheme not in ("hdfs", "file")) or not parsed.netloc:
        return None
    if parsed.path not in ("", "/"):
        return None
    return f"{parsed.scheme}://{parsed.netloc}/{name.lstrip('/')}"


def _local(path: str) -> str:
    return _clean(os.path.abspath(path))


def _clean(path: str) -> str:
    cleaned = posixpath.normpath(path) if path else path
    return "/" if cleaned == "//" else cleaned.rstrip("/") or "/"
