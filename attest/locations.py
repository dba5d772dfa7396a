"""The one rule for "local path or URI", shared by the command line, the carriers and the hashing module.

A scheme of two or more letters makes a URI (``file:`` included; ``s3://``, ``gs://``, ``abfs://``...); anything else
is a path (a Windows drive letter is one letter, so ``C:\\data`` is a path).
"""

from __future__ import annotations

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.")


def scheme_of(text: str) -> str:
    """The scheme ``urllib.parse.urlsplit`` finds (lowercase; "" when none), without parsing the rest: urlsplit raises
    ValueError on an authority with an unbalanced ``[`` or ``]`` ("s3://[b/k"), which untrusted locations may hold."""
    head, colon, _ = text.partition(":")
    if not colon or not head or not (head[0].isascii() and head[0].isalpha()) or not set(head) <= _SCHEME_CHARS:
        return ""
    return head.lower()


def is_uri(text: str) -> bool:
    return len(scheme_of(text)) > 1


def is_local(text: str) -> bool:
    """A path, or a ``file:`` URI: not an object store or a catalog."""
    return not is_uri(text) or scheme_of(text) == "file"
