"""Credentials never appear in what attest prints: every message passes through ``redact`` before output.

Secrets come from two places: values the process was given as storage options (registered by whoever parses them,
``register_secrets``) and environment variables whose names say they hold credentials (AWS, Azure, Google, pyiceberg
catalog properties, signing-key passwords). Each occurrence is replaced by ``***``. Short values (under 6
characters) are not registered: replacing "true" or a region everywhere would garble messages and hide nothing.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable

MASK = "***"
MIN_SECRET = 6
_SECRET_NAME = re.compile(r"(SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|SAS|ACCOUNT_KEY|PRIVATE_KEY|SERVICE_ACCOUNT_KEY"
                          r"|_KEY$|__KEY$|SIGNATURE)", re.IGNORECASE)
_SECRET_ENV_PREFIX = ("AWS_", "AZURE_", "GOOGLE_", "GCS_", "PYICEBERG_", "ATTEST_", "MINIO_", "S3_")
_registered: set[str] = set()
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    """Whether a setting's name says it holds a credential (``s3.secret-access-key``, ``credential``, ``token``)."""
    return bool(_SECRET_NAME.search(name.replace(".", "_").replace("-", "_").upper())) or name.lower() == "credential"


def register_secrets(values: Iterable[str]) -> None:
    """Values to mask in every later message of this process."""
    with _lock:
        _registered.update(v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET)


def environment_secrets() -> set[str]:
    """Values of environment variables named like credentials."""
    out = set()
    for name, value in os.environ.items():
        upper = name.upper()
        if upper.startswith(_SECRET_ENV_PREFIX) and _SECRET_NAME.search(upper) and len(value) >= MIN_SECRET:
            out.add(value)
    return out


def secrets() -> set[str]:
    with _lock:
        return set(_registered) | environment_secrets()


def redact(text: str) -> str:
    """``text`` with every known secret replaced by ``***`` (longest first: a secret containing another one)."""
    for value in sorted(secrets(), key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    return text
