"""Open a table for reading only if it verifies (docs/signing.md, "Verified reads").

    from attest.read import open_verified
    dt = open_verified("s3://lake/orders", policy="trust.toml")   # deltalake.DeltaTable, or raises

Thin layer over carriers.read: importing this module imports no table engine.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attest.signing.keys import PublicKey
    from attest.signing.policy import TrustPolicy
    from attest.verify.report import Level
    from carriers.refs import TableRef

__all__ = ["open_verified"]


def open_verified(ref: TableRef | str, *, policy: TrustPolicy | PublicKey | str | os.PathLike[str] | None = None,
                  level: Level = "files", version: str | int | None = None,
                  storage_options: Mapping[str, str] | None = None, allow_external: bool = False,
                  now: dt.datetime | None = None) -> Any:
    """The engine's table object (deltalake ``DeltaTable`` / pyiceberg ``Table``) for ``ref`` if it verifies at
    ``level`` under ``policy``; else ``attest.errors.VerificationRefusedError`` (see carriers.read.open_verified)."""
    from carriers.read import open_verified as _open_verified

    return _open_verified(ref, policy=policy, level=level, version=version, storage_options=storage_options,
                          allow_external=allow_external, now=now)
