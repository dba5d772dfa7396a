"""``carriers.publish.publish`` as earlier releases named it: the Iceberg write-audit-publish step now lives in
carriers/iceberg/publish.py (also importable as ``carriers.iceberg.publish``)."""

from __future__ import annotations

from carriers.iceberg.publish import PublishResult, publish

__all__ = ["PublishResult", "publish"]
