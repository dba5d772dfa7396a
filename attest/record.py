"""``attest.record(table, model=..., sql=...)`` is attest.api.record (attest/_callable.py). As a module, it names the
data classes the core declares, from the fast path (attest.fast.record; ``dataclasses`` with ``ATTEST_FAST=0``)."""

from __future__ import annotations

from attest._callable import make_callable
from attest.fast.record import FrozenRecordError, field, many_records, record, replace

__all__ = ["FrozenRecordError", "field", "many_records", "record", "replace"]

make_callable(__name__)
