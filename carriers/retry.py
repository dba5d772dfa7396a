"""One retry for every commit an attestation makes against concurrent writers (the Delta metadata-only commit and
its delta-rs fallback, the Iceberg follow-up snapshot, the Spark hook's Delta transaction): a bounded number of
attempts with exponential backoff between them.

Ours rather than tenacity's ``Retrying`` (pyiceberg's dependency): importing tenacity loads tornado and asyncio
wherever tornado is installed (measured: 70 ms to 0.3 s on top of delta-rs, on every ``attest record``), and these
loops check between attempts whether retrying still makes sense (a data commit that landed meanwhile), which this
helper takes as ``between``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["retry"]

T = TypeVar("T")


def retry(attempt: Callable[[], T], *, retries: int, backoff_s: float, retry_on: Callable[[Exception], bool],
          between: Callable[[], None] | None = None) -> T:
    """``attempt()``'s result, trying at most ``retries + 1`` times: an exception ``retry_on`` accepts is retried
    after ``backoff_s * 2 ** n`` seconds (n = 0, 1, ...) and ``between()`` (which may raise to stop); the last
    one, and any other, is raised as it is."""
    n = 0
    while True:
        try:
            return attempt()
        except Exception as exc:
            if n == retries or not retry_on(exc):
                raise
        time.sleep(backoff_s * (2 ** n))
        n += 1
        if between is not None:
            between()
