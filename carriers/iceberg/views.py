"""The table half of an Iceberg snapshot's reader view, as digests: schema, partition specs, the properties that
change reads, where data files may live, which delete files apply, every file's location as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from attest.tables import DataFile
from attest.view import file_digest, file_text, file_text_digest

__all__ = ["LOCATION_PROPERTIES", "NO_DELETES", "READ_PROPERTIES", "ViewEntries", "deletes_digest", "deletes_in_view",
           "file_views", "locations_digest", "schema_digests", "table_view"]

# Table properties that change what readers get or where data files may live (docs/security.md).
READ_PROPERTIES = ("schema.name-mapping.default",)
LOCATION_PROPERTIES = ("write.data.path", "write.object-storage.path", "write.folder-storage.path")


def table_view(meta: Any, schema: Any) -> dict[str, Any]:
    """The table half of a reader view: schema (field ids, names, types, requiredness), partition specs, format
    version, the properties that change reads, and where data files may live."""
    props_ = meta.properties
    return {
        "format_version": int(meta.format_version),
        "schema": _schema_view(schema),
        "partition_specs": {str(k): json.loads(s.model_dump_json()) for k, s in sorted(meta.specs().items())},
        "default_spec_id": int(meta.default_spec_id),
        "read_properties": {k: props_[k] for k in READ_PROPERTIES if k in props_},
        "data_locations": {k: props_[k] for k in LOCATION_PROPERTIES if k in props_},
    }


def _schema_view(schema: Any) -> dict[str, Any]:
    """A schema as readers resolve it: field ids, names, types, requiredness and defaults; docs and its id left out."""
    return {k: v for k, v in _strip_docs(json.loads(schema.model_dump_json())).items() if k != "schema-id"}


def schema_digests(schemas: Iterable[Any]) -> list[str]:
    """The schemas readers of a snapshot resolve (:meth:`IcebergCarrier._table_view`), as the sorted digests of the
    distinct ones: one digest when every reader reads the snapshot alike."""
    return sorted({file_digest(_schema_view(s)) for s in schemas})


def deletes_digest(applied: Mapping[str, Any]) -> str:
    """Which delete files each reader applies to which data files (:func:`carriers.iceberg.deletes.applicability`), as
    one digest of the view's table part."""
    return file_digest(dict(applied))


NO_DELETES = deletes_digest({"pyiceberg": {}, "java": {}})


def locations_digest(files: Iterable[DataFile]) -> str:
    """Every live file's location as written, as one digest of the view's table part: Spark's ``_file`` and
    ``input_file_name()`` return that string, so a location respelled for the same file (``file:///t/x`` as ``/t/x``)
    changes what a query on them gets — a job that skips the files it has seen by name reads them again."""
    return file_digest({f.path: f.location for f in files})


def deletes_in_view(format_version: int, has_delete_files: bool) -> bool:
    """Whether files' data sequence numbers and locations as written are in a snapshot's reader view: they decide
    which delete files apply (position deletes and deletion vectors name a data file by its location string), and in
    v3 every row's ``_last_updated_sequence_number``. Without delete files they change nothing a v1/v2 reader gets (a
    delete file added later changes the live files anyway)."""
    return format_version >= 3 or has_delete_files


def file_views(entries: Mapping[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Per-file view digests: every manifest entry naming a file, in a stable order."""
    # One entry (nearly every file) is its own order: no sort key encoded for it.
    return {p: file_digest({"entries": e if len(e) == 1 else sorted(e, key=lambda x: json.dumps(x, sort_keys=True))})
            for p, e in entries.items()}


def _strip_docs(node: Any) -> Any:
    """A schema as readers resolve it: field docs change no value read; ids, names, types and requiredness do."""
    if isinstance(node, dict):
        return {k: _strip_docs(v) for k, v in node.items() if k != "doc"}
    if isinstance(node, list):
        return [_strip_docs(v) for v in node]
    return node


class ViewEntries:
    """The reader-view entries of a listing's files, by path, held as their canonical text (:func:`file_text`) rather
    than as the entries' objects (dicts of counts and bounds: several times the memory, kept for every live file until
    the view is made). A path named by a second entry (deletion vectors sharing a Puffin file) keeps its entries as
    objects, the first decoded from its text (the same JSON value). :meth:`digests` is :func:`file_views` of the
    entries added: the text of one entry's ``{"entries": [entry]}`` is its text between the object's and list's
    brackets (tests/iceberg/test_iceberg_fast_paths.py)."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._more: dict[str, list[dict[str, Any]]] = {}

    def add(self, path: str, entry: dict[str, Any] | str) -> None:
        """Add a file's entry, or its :func:`file_text` (carriers/iceberg/entry_text.py writes it straight from the
        manifest's record): a second entry of the path is kept as its object, decoded from its text (the same JSON
        value)."""
        first = self._texts.get(path)
        if first is None:
            self._texts[path] = entry if isinstance(entry, str) else file_text(entry)
        else:
            self._more.setdefault(path, [json.loads(first)]).append(json.loads(entry) if isinstance(entry, str)
                                                                    else entry)

    def digests(self) -> dict[str, str]:
        more = file_views(self._more)
        return {p: more[p] if p in more else file_text_digest('{"entries":[' + text + "]}")
                for p, text in self._texts.items()}
