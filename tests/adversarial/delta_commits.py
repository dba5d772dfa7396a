"""A Delta table's first commit written by hand, for attacks that need a log no writer makes: one Parquet file already
in place, its ``add``, the table's schema, protocol and configuration."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from carriers.delta.log import commit_name

# Any fixed id: the attacks compare verdicts, never table ids.
TABLE_ID = "0f4b7d3c-2a51-4c1e-9d7e-1b2c3d4e5f60"


def first_commit(path: Path, rel: str, fields: list[dict[str, Any]], *, num_records: int,
                 reader: int = 1, writer: int = 2, configuration: Mapping[str, str] | None = None) -> None:
    """Writes ``_delta_log/00…0.json``: protocol ``reader``/``writer``, a schema of ``fields`` (Delta's JSON), no
    partition columns, ``configuration``, and the ``add`` of the file ``rel`` (its size read; ``numRecords`` only)."""
    actions = [
        {"commitInfo": {"operation": "WRITE"}},
        {"protocol": {"minReaderVersion": reader, "minWriterVersion": writer}},
        {"metaData": {"id": TABLE_ID, "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps({"type": "struct", "fields": fields}), "partitionColumns": [],
                      "configuration": dict(configuration or {}), "createdTime": 1}},
        {"add": {"path": rel, "partitionValues": {}, "size": (path / rel).stat().st_size, "modificationTime": 1,
                 "dataChange": True, "stats": json.dumps({"numRecords": num_records})}},
    ]
    (path / "_delta_log").mkdir(parents=True, exist_ok=True)
    (path / commit_name(0)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")
