"""The one rule for "local path or URI", shared by the command line, the carriers and the hashing module.

A scheme of two or more letters makes a URI (``file:`` included; ``s3://``, ``gs://``, ``abfs://``...); anything else
is a path (a Windows drive letter is one letter, so ``C:\\data`` is a path).
"""

from __future__ import annotations

from urllib.parse import urlsplit


def is_uri(text: str) -> bool:
    # No ':' means no scheme (urlsplit finds one only before a ':'): the common case, a plain path, skips the parse.
    return ":" in text and len(urlsplit(text).scheme) > 1


def is_local(text: str) -> bool:
    """A path, or a ``file:`` URI: not an object store or a catalog."""
    return not is_uri(text) or urlsplit(text).scheme == "file"
