"""What delta-rs answers about a loaded version, as plain values: its add actions as rows, the locations it gives
relative to the table root, its protocol as the log's action spells it (used by the carrier and by the content
digests, carriers/delta/content.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["add_action_rows", "engine_relative", "protocol_doc"]


def add_action_rows(dt: DeltaTable) -> list[dict[str, Any]]:
    """delta-rs's add actions of the loaded version as rows (``get_add_actions(flatten=False)``), read column by
    column from its Arrow table without pyarrow: the same Python values as pyarrow's ``to_pylist`` (a test holds them
    together), and a verify does not pay ~22 ms to import pyarrow."""
    actions = dt.get_add_actions(flatten=False)
    columns = {name: actions.column(name).to_pylist() for name in actions.column_names}
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def engine_relative(roots: tuple[str, ...], uri: str, *, encoded: bool = False) -> str:
    """A location delta-rs gives, relative to the table root. ``file_uris()`` writes the table URI's (percent-encoded)
    path, or the table URI itself on an object store, followed by the decoded relative path; ``deletion_vectors()``
    writes a URI percent-encoded throughout (``encoded``: its relative part is decoded here). ``uri`` itself when no
    root is its prefix."""
    local = uri
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        local = parsed.netloc + parsed.path if parsed.netloc else parsed.path
    for root in roots:
        if root and local.startswith(root + "/"):
            rest = local[len(root) + 1:]
            return unquote(rest) if encoded else rest
    if encoded:  # a root delta-rs spells decoded (a local folder named with '%' or a space): match the decoded path
        decoded = unquote(local)
        for root in roots:
            if root and decoded.startswith(root + "/"):
                return decoded[len(root) + 1:]
    return uri


def protocol_doc(protocol: Any) -> dict[str, Any]:
    """delta-rs's protocol of a loaded version as the log's ``protocol`` action spells it."""
    doc: dict[str, Any] = {"minReaderVersion": int(protocol.min_reader_version),
                           "minWriterVersion": int(protocol.min_writer_version)}
    if protocol.reader_features is not None:
        doc["readerFeatures"] = sorted(protocol.reader_features)
    if protocol.writer_features is not None:
        doc["writerFeatures"] = sorted(protocol.writer_features)
    return doc
