"""Verified reads for Python readers: the engine's table object, only for a table version that verifies.

``open_verified("s3://lake/orders", policy="trust.toml")`` returns a deltalake ``DeltaTable`` loaded at exactly the
version that verified (a later commit cannot slip in), or a pyiceberg ``Table`` whose loaded metadata is the one
that verified (scan it as is; ``snapshot_id=`` for an older snapshot). Anything else raises a coded
``VerificationRefusedError`` naming the table and the failure. The same gate for Spark: carriers/spark/gate.py.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attest.errors import VerificationRefusedError
from attest.verify.report import Level, Report
from attest.verify.table import verify_state
from carriers.refs import TableRef, open_table, parse_ref

if TYPE_CHECKING:
    from attest.signing.keys import PublicKey
    from attest.signing.policy import TrustPolicy

__all__ = ["open_verified", "verified_report"]



def _policy(policy: Any) -> TrustPolicy | None:
    if policy is None:
        return None
    from attest.signing.policy import load_policy

    return load_policy(policy)


def verified_report(ref: TableRef | str, *, policy: Any = None, level: Level = "files",
                    version: str | int | None = None, storage_options: Mapping[str, str] | None = None,
                    allow_external: bool = False, now: dt.datetime | None = None) -> tuple[Any, Report]:
    """(the carrier, its verdict) for ``ref`` at ``version`` (default: the reference's own, else the current one)."""
    table = parse_ref(ref) if isinstance(ref, str) else ref
    if version is not None:
        table = table.with_version(version)
    carrier = open_table(table, storage_options=storage_options, allow_external=allow_external)
    state = carrier.state(table.version)
    return carrier, verify_state(state, carrier, level=level, policy=_policy(policy), now=now)


def open_verified(ref: TableRef | str, *, policy: TrustPolicy | PublicKey | str | os.PathLike[str] | None = None,
                  level: Level = "files", version: str | int | None = None,
                  storage_options: Mapping[str, str] | None = None, allow_external: bool = False,
                  now: dt.datetime | None = None) -> Any:
    """The engine's table object for ``ref`` if it verifies at ``level`` under ``policy`` (a ``TrustPolicy``, a
    public key, or a file: PEM key or TOML policy); else ``VerificationRefusedError`` (``.code``, ``.report``).

    Delta: a ``deltalake.DeltaTable`` at the verified version. Iceberg: the ``pyiceberg`` ``Table`` whose metadata
    was verified (its current snapshot is the verified one unless ``version`` named another)."""
    carrier, report = verified_report(ref, policy=policy, level=level, version=version,
                                      storage_options=storage_options, allow_external=allow_external, now=now)
    if not report.passed:
        code = report.errors[0].code if report.errors else None
        raise VerificationRefusedError(f"{report.subject} {report.version} does not verify, not opened: "
                                       f"{report.verdict()}", code=code, report=report, path=report.subject)
    if carrier.kind == "delta":
        return carrier._load(int(report.version or 0))  # exactly the version that verified
    return carrier.table
