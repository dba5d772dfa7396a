"""Editing an Iceberg manifest list, or a manifest, in place, as someone with write access to the table's storage
would."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any


def edit_manifest_list(path: str | Path, version: int, edit: Callable[[list[Any], list[str]], None]) -> None:
    """The manifest list at ``path`` (format ``version``'s schema) rewritten in place after ``edit(manifests, field
    names)`` (a record's field is ``m._data[names.index(field)]``); the Hadoop checksum beside it is dropped too, as an
    attacker would, and pyiceberg's manifest cache cleared."""
    from pyiceberg.avro.file import AvroFile, AvroOutputFile
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import (
        MANIFEST_LIST_FILE_SCHEMAS,
        ManifestContent,
        ManifestFile,
        PartitionFieldSummary,
        clear_manifest_cache,
    )

    path = str(path)
    io = PyArrowFileIO()
    schema = MANIFEST_LIST_FILE_SCHEMAS[version]
    reader: Any
    with AvroFile(io.new_input(path), schema, read_types={-1: ManifestFile, 508: PartitionFieldSummary},
                  read_enums={517: ManifestContent}) as reader:
        meta = {k: v for k, v in reader.header.meta.items() if not k.startswith("avro.")}
        manifests = list(reader)
    edit(manifests, [f.name for f in schema.fields])
    with AvroOutputFile[ManifestFile](output_file=io.new_output(f"{path}.new"), record_schema=schema,
                                      file_schema=schema, schema_name="manifest_file", metadata=meta) as writer:
        writer.write_block(manifests)
    Path(f"{path}.new").replace(path)
    Path(path).with_name(f".{Path(path).name}.crc").unlink(missing_ok=True)
    clear_manifest_cache()


def rewrite_manifest(table: Any, manifest: Any, entries: list[Any], *, spec: Any, schema: Any, deletes: bool,
                     edit: Callable[[Any], None] | None = None) -> None:
    """``manifest`` of ``table`` rewritten in place by a format-v2 writer of ``spec`` and ``schema`` (its Avro
    partition record follows them, whatever the table's are), holding ``entries`` (each after ``edit(entry)``);
    pyiceberg's manifest cache is cleared so the next read sees it."""
    from pyiceberg.manifest import clear_manifest_cache

    from tests.iceberg.conftest import local, manifest_writer

    path = local(manifest.manifest_path)
    tmp = path.with_suffix(".new.avro")
    with manifest_writer(spec, schema, table.io.new_output(f"file://{tmp}"), entries[0].snapshot_id,
                         deletes=deletes) as writer:
        for entry in entries:
            if edit is not None:
                edit(entry)
            writer.add_entry(entry)
    shutil.move(tmp, path)
    clear_manifest_cache()
