"""What delta-rs answers about a loaded version, as plain values: its add actions as rows, the locations it gives
relative to the table root, its protocol as the log's action spells it (used by the carrier and by the content
digests, carriers/delta/content.py).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from attest.errors import UnsupportedTableError

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["add_action_rows", "engine_relative", "outside_python_dates", "protocol_doc"]

# Python's own words for a date or time it cannot hold (``datetime``: years 1 to 9999), as pyarrow's and arro3's
# ``to_pylist`` raise them.
_OUT_OF_RANGE = re.compile(r"year -?[0-9]+ is out of range|date value out of range|out of range for datetime")


@contextlib.contextmanager
def outside_python_dates(where: str) -> Iterator[None]:
    """Reading delta-rs's add actions of ``where`` as Python values: a partition value or a statistic of a date or
    timestamp Python cannot hold (before year 1 or after 9999 — delta-rs reads ``-0001-01-05T10:00:00Z``, and Spark
    takes years far past both) raised a bare ValueError, reported as ``internal_error`` (round 20). Such a table is
    ``unsupported_table``: no value of it is judged."""
    try:
        yield
    except (ValueError, OverflowError) as exc:
        if _OUT_OF_RANGE.search(str(exc)) is None:
            raise
        raise UnsupportedTableError(
            f"{where} has a date or timestamp (a partition value or a statistic) outside the years 1 to 9999, which "
            f"this tool cannot hold ({exc}): it is not judged") from None


def add_action_rows(dt: DeltaTable) -> list[dict[str, Any]]:
    """delta-rs's add actions of the loaded version as rows (``get_add_actions(flatten=False)``), read column by
    column from its Arrow table without pyarrow: the same Python values as pyarrow's ``to_pylist`` (a test holds them
    together), and a verify does not pay ~22 ms to import pyarrow."""
    actions = dt.get_add_actions(flatten=False)
    with outside_python_dates(f"version {dt.version()}"):
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
