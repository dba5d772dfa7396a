"""Shared by the carrier benchmarks: time one step and print it beside its ratio to a same-run reference."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def timed(label: str, fn: Callable[[], Any], reference: float | None = None) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - start
    ratio = f"  ({elapsed / reference:6.1f}x reference)" if reference else ""
    print(f"{label:<46}{elapsed:9.3f} s{ratio}")
    return elapsed, value
