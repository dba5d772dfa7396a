"""What delta-rs answers about a loaded version, as plain values: its add actions as rows, the locations it gives
relative to the table root, its protocol as the log's action spells it (used by the carrier and by the content
digests, carriers/delta/content.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

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


def engine_relative(roots: tuple[str, ...], uri: str) -> str:
    """A location delta-rs gives, relative to the table root: it writes the table URI's (percent-encoded) path
    followed by the decoded relative path, or a file URI of the whole."""
    local = uri
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        local = parsed.netloc + parsed.path if parsed.netloc else parsed.path
    for root in roots:
        if local.startswith(root + "/"):
            return local[len(root) + 1:]
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
