"""One Spark SQL setting for the length of a ``with`` block, on the shared test session (other tests share it, so
the setting is unset afterwards whatever happens)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def session_conf(spark: Any, key: str, value: str) -> Iterator[None]:
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.unset(key)
