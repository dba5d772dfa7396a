"""Verification: standalone manifests and table versions, reported as data (``Report``)."""

from attest.verify.manifest import verify_document, verify_manifest_bytes
from attest.verify.report import Report

__all__ = ["Report", "verify_document", "verify_manifest_bytes"]
