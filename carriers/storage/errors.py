"""Store and engine failures as coded errors: a refused credential, an unknown scheme, a Rust panic, a missing
object — never a raw ``OSError`` or a panic, and every message passed through ``attest.redact``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from attest.errors import AttestError, CarrierError, TableNotFoundError, UnsupportedStorageError
from attest.redact import redact, register_secrets


class ConditionalPutUnsupported(Exception):
    """The store (or the options it was opened with) offers no conditional create."""


class StoreReadError(OSError):
    """A store failed while an object was being read in pieces: ``error`` is the coded failure, carried as an OSError
    so that a reader parsing the pieces (carriers/sidecar.py) passes it on as a read failure, never as bytes that do
    not parse."""

    def __init__(self, error: AttestError) -> None:
        super().__init__(str(error))
        self.error = error


def is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by pyo3 (``PanicException`` derives from BaseException, not Exception)."""
    return type(exc).__name__ == "PanicException"


_T = TypeVar("_T")


def or_none(action: Callable[[], _T]) -> _T | None:
    """``action()``, or None where the store's library fails in it (a Rust panic included; an interrupt is raised):
    for a question the caller can answer another way (ask the engine, make no note)."""
    try:
        return action()
    except Exception:
        return None
    except BaseException as exc:
        if not is_panic(exc):
            raise
        return None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DENIED = ("accessdenied", "access_denied", "access denied", "invalidaccesskeyid", "signaturedoesnotmatch",
           "forbidden", "unauthorized", "authorizationfailure", "authenticationfailed", "status code: 403",
           "status code: 401", "http status 403", "http status 401", "invalid credentials", "permission denied")
_UNSUPPORTED = ("no registered fileio", "unrecognized filesystem type", "unsupported scheme",
                "no suitable object store", "unknown scheme", "unsupported object store", "no filesystem for scheme")


def engine_message(exc: BaseException) -> str:
    """An engine's error in one line: ANSI colours and Rust's multi-line cause chains folded."""
    text = _ANSI.sub("", str(exc)) or type(exc).__name__
    parts = [p.strip(" ↳\t") for p in text.splitlines() if p.strip(" ↳\t")]
    return " — ".join(parts[:4])[:600]


def coded(exc: BaseException, *, where: str = "", engine: str = "", secrets: Sequence[str] = (),
          action: str = "read") -> AttestError:
    """Any failure of a store or an engine as a coded AttestError with a redacted one-line message."""
    if isinstance(exc, AttestError):
        return exc
    register_secrets(secrets)
    text = redact(engine_message(exc))
    low = text.lower()
    at = f" {where}" if where else ""
    if is_panic(exc):
        return CarrierError(f"{engine or 'the engine'} failed on{at} (a Rust panic: {text}); check the storage "
                            "options")
    if any(m in low for m in _UNSUPPORTED):
        return UnsupportedStorageError(f"{engine or 'the engine'} cannot use the store of{at}: {text}")
    if any(m in low for m in _DENIED):
        return CarrierError(f"the store refused access to{at} (access denied: wrong credentials, or a bucket that "
                            f"admits only the table's own files, such as an S3 Tables bucket): {text}")
    if not_found(exc) and where:
        return TableNotFoundError(f"nothing at{at}: {text}")
    return CarrierError(f"cannot {action}{at}: {text}")


def not_found(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return isinstance(exc, FileNotFoundError) or "not found" in text or "notfound" in text or "no such" in text
