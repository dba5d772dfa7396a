"""The content digest (issue 32): an order-independent, additive digest of the rows a reader gets.

``ContentDigest`` and ``SCHEME`` need no pyarrow (a verifier adds and compares stored digests); ``ColumnSpec``,
``digest_table``, ``encode_rows`` and ``type_tag`` import pyarrow when first used. docs/content-digest.md is the
specification: the row encoding, the LtHash<32,1024> parameters, the test vectors, the storage the carriers use.
"""

from __future__ import annotations

from attest.content.digest import CONTEXT, SCHEME, STATE_BYTES, ContentDigest, element

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from attest.content.encoding import ColumnSpec, digest_table, encode_rows, type_tag

__all__ = ["CONTEXT", "SCHEME", "STATE_BYTES", "ColumnSpec", "ContentDigest", "digest_table", "element",
           "encode_rows", "type_tag"]

_LAZY = {"ColumnSpec", "digest_table", "encode_rows", "type_tag"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        try:
            from attest.content import encoding
        except ImportError as exc:
            if exc.name is None or not exc.name.startswith("pyarrow"):
                raise
            from attest.errors import AttestError, Code

            raise AttestError("a content digest of rows needs pyarrow: pip install 'recipe-attest[delta]' (or "
                              "[iceberg])", code=Code.EXTRA_MISSING) from exc
        return getattr(encoding, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
