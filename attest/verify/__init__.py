"""Verification: standalone manifests and table versions, reported as data (``Report``).

Names are loaded on first use: the command line imports ``attest.verify.artifacts`` to start hashing before the
verifier itself (and the schema, the model) is imported.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported before the command line starts hashing
if TYPE_CHECKING:
    from typing import Any

    from attest.verify.manifest import verify_document, verify_manifest_bytes
    from attest.verify.report import Report

__all__ = ["Report", "verify_document", "verify_manifest_bytes"]

from attest._callable import make_callable  # noqa: E402 - after the names: attest.verify(table) is attest.api.verify

make_callable(__name__)


def __getattr__(name: str) -> Any:
    if name in ("verify_document", "verify_manifest_bytes"):
        from attest.verify import manifest

        return getattr(manifest, name)
    if name == "Report":
        from attest.verify.report import Report

        return Report
    raise AttributeError(f"module 'attest.verify' has no attribute {name!r}")
