"""The Delta content-addressed write path: Parquet files named by the BLAKE3 of their bytes, committed through
delta-rs and attested without reading them back (the write side, apart from the reader in carriers/delta/carrier.py)."""

from __future__ import annotations

import io
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from attest.errors import CarrierError, Code
from attest.hashing import hash_bytes
from attest.identity.inputs import ObservedInput
from attest.tables import Progress
from carriers.base import WriteResult
from carriers.delta.carrier import DeltaCarrier, _table_uri, check_log
from carriers.delta.commit import commit_error
from carriers.storage.delta import DeltaStorage

if TYPE_CHECKING:
    from attest.signing.keys import Signer

__all__ = ["HIVE_NULL", "hive_partition_dir", "write_content_addressed"]

# Characters Hive/Spark escape in partition directory names (ExternalCatalogUtils.charToEscape), as %XX.
_HIVE_ESCAPE = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(0x01, 0x20))
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _hive_escape(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPE else c for c in value)


def _partition_value(value: Any) -> str | None:
    """A partition value as the Delta log writes it (None = null). An empty string is written as null, as Spark
    writes it: delta-rs reads an empty partition value as null and Spark as an empty string (measured)."""
    import datetime as _dt

    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def hive_partition_dir(columns: Sequence[str], values: Sequence[str | None]) -> str:
    """``col=value/...`` as Hive/Spark name partition directories: null and "" as __HIVE_DEFAULT_PARTITION__
    (Spark writes an empty string partition as null), special characters as %XX."""
    parts = []
    for col, value in zip(columns, values, strict=True):
        shown = HIVE_NULL if value is None or value == "" else _hive_escape(value)
        parts.append(f"{_hive_escape(col)}={shown}")
    return "/".join(parts)


def _parquet_bytes(table: Any) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def _to_arrow(data: Any) -> Any:
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "to_table"):  # pyarrow.dataset.Dataset / Scanner
        return data.to_table()
    if hasattr(data, "read_all"):  # RecordBatchReader
        return data.read_all()
    return pa.table(data)


def write_content_addressed(
    table_uri: str,
    data: Any,
    *,
    mode: Literal["append", "overwrite"] = "append",
    partition_by: Sequence[str] | None = None,
    model: str,
    program_hash: str,
    inputs: Sequence[ObservedInput] = (),
    run_id: str | None = None,
    dialect: str | None = None,
    storage_options: dict[str, str] | None = None,
    configuration: Mapping[str, str | None] | None = None,
    max_rows_per_file: int | None = None,
    progress: Progress | None = None,
    signer: Signer | None = None,
) -> WriteResult:
    """Write ``data`` as Parquet files named ``<blake3>.parquet`` (Hive partition folders kept), commit them
    to the Delta table through delta-rs, then attest the new version.

    The output identity is known before the commit: each file's name is the BLAKE3 of its bytes, and the
    attestation reuses those hashes instead of reading the files back. With ``signer`` the attestation is signed
    (docs/signing.md).
    """
    import pyarrow.compute as pc
    from deltalake.transaction import AddAction, create_table_with_add_actions

    table = _to_arrow(data)
    columns = list(partition_by or [])
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise CarrierError(f"partition column(s) {missing} are not in the data", code=Code.MANIFEST_INVALID_FIELD)
    uri = _table_uri(table_uri)
    storage = DeltaStorage(uri, storage_options)
    groups: list[tuple[list[str | None], Any]] = []
    if columns and table.num_rows:
        keys = table.select(columns).group_by(columns, use_threads=False).aggregate([])
        for row in keys.to_pylist():
            mask = None
            for col in columns:
                cond = pc.is_null(table[col]) if row[col] is None else pc.equal(table[col], row[col])
                mask = cond if mask is None else pc.and_(mask, cond)
            part = table.filter(mask).drop_columns(columns)
            groups.append(([_partition_value(row[c]) for c in columns], part))
    else:
        groups.append(([], table.drop_columns(columns) if columns else table))
    adds: list[Any] = []  # AddAction; Any because delta-rs's signature wants list[AddAction | RemoveAction]
    known: dict[str, tuple[int, str]] = {}
    now = int(time.time() * 1000)
    from deltalake import DeltaTable

    check_log(storage, str(table_uri))  # delta-rs would block on a FIFO in place of _last_checkpoint
    exists = DeltaTable.is_deltatable(uri, storage_options)
    previous = DeltaCarrier(uri, storage_options=storage_options).live() if exists else None
    if previous is not None:
        # Its attestation would be refused after the data commit (record): refuse before writing anything. delta-rs
        # would also commit against its own reading of such a table (a forged checksum file's schema, say).
        previous.refuse_if_inconsistent(f"{table_uri} cannot be written and attested", " — nothing was written")
    live = {f.path for f in previous.files} if previous is not None else set()
    planned: list[tuple[list[str | None], Any, bytes, str, str]] = []
    for values, part in groups:
        step = max_rows_per_file or max(part.num_rows, 1)
        for start in range(0, max(part.num_rows, 1), step):
            chunk = part.slice(start, step)
            if chunk.num_rows == 0 and part.num_rows:
                continue
            blob = _parquet_bytes(chunk)
            digest_hex = hash_bytes(blob)
            folder = hive_partition_dir(columns, values) if columns else ""
            rel = f"{folder}/{digest_hex}.parquet" if folder else f"{digest_hex}.parquet"
            # Same bytes, same name: a second add of a live path would silently drop those rows. Refuse. (An
            # overwrite keeps such a file: _keeping.)
            if (mode == "append" and rel in live) or any(p[3] == rel for p in planned):
                raise CarrierError(f"{rel} would hold rows identical to a file the table already has (or to "
                                   "another chunk of this write); a content-addressed append cannot add the same "
                                   "bytes twice without losing rows — nothing was written",
                                   code=Code.MANIFEST_INVALID_FIELD, path=rel)
            planned.append((values, chunk, blob, rel, digest_hex))
    kept = {p[3] for p in planned} & live if mode == "overwrite" else set()
    dt = DeltaTable(uri, storage_options=storage_options) if exists else None
    # The removes come from the version the commit is then made against (dt): its conflict check covers them.
    removes = _keeping(storage, dt.version(), kept, table_uri) if dt is not None and kept else []
    for values, chunk, blob, rel, digest_hex in planned:  # every check passed: now write
        storage.write_once(rel, blob)  # a kept file: checked to hold exactly these bytes
        known[rel] = (len(blob), digest_hex)
        if rel in kept:
            continue
        stats = {"numRecords": chunk.num_rows}
        # delta-rs takes the on-disk path and URI-encodes it for the log itself (% in a Hive dir -> %25).
        adds.append(AddAction(path=rel, size=len(blob), partition_values=dict(zip(columns, values, strict=True)),
                              modification_time=now, data_change=True, stats=_json(stats)))
    schema = table.schema
    if dt is not None:
        try:
            # Keeping files, the overwrite is committed as its removes and adds (delta-rs's own would remove and
            # add the kept file in one commit: Spark read that version as empty, measured).
            dt.create_write_transaction(adds + removes, "append" if kept else mode, schema,
                                        partition_by=columns or None)
        except Exception as exc:
            raise commit_error(table_uri, exc) from exc
    else:
        create_table_with_add_actions(uri, _delta_schema(schema), adds, mode="error", partition_by=columns or None,
                                      configuration=configuration, storage_options=storage_options)
    carrier = DeltaCarrier(uri, storage_options=storage_options)
    if kept:
        # A kept file has no action in the commit: a concurrent commit removing it would leave this overwrite's output
        # short without a conflict. Never attested short: the write is reported instead.
        gone = sorted(kept - {f.path for f in carrier.list_files()})
        if gone:
            raise CarrierError(f"{table_uri}: the overwrite kept {gone[0]} (same bytes) but a concurrent commit "
                               f"removed it ({len(gone)} file(s)); the new version lacks those rows and was not "
                               "attested — write again", code=Code.TABLE_INCONSISTENT, path=gone[0])
    return carrier.record(model=model, program_hash=program_hash, inputs=inputs, run_id=run_id, dialect=dialect,
                          progress=progress, known_hashes=known, signer=signer)


def _keeping(storage: DeltaStorage, version: int, kept: set[str], table_uri: str) -> list[Any]:
    """The removes of an overwrite that keeps ``kept`` (live files the new output holds with the same bytes): every
    other live file. A commit must not add and remove one file (PROTOCOL.md, "Action Reconciliation"), so the kept
    ones get no action at all and stay live as they are."""
    from deltalake.transaction import RemoveAction

    from carriers.core import canonical_relative
    from carriers.delta.log import replay

    state, problems = replay(storage, version)
    if problems or state.twice:
        raise CarrierError(f"{table_uri} cannot be overwritten in place: its log is inconsistent ({problems[:1]}) — "
                           "nothing was written", code=Code.TABLE_INCONSISTENT)
    live = {canonical_relative(raw)[0] for raw in state.adds}
    if not kept <= live:  # listed live a moment ago, gone from the version the commit is made against
        raise CarrierError(f"{table_uri} changed while writing: {sorted(kept - live)[0]} is no longer live — nothing "
                           "was written; write again", code=Code.TABLE_INCONSISTENT)
    now = int(time.time() * 1000)
    removes: list[Any] = []
    for raw, add in sorted(state.adds.items()):
        if add.get("deletionVector"):
            # delta-rs's RemoveAction names no deletion vector, and a remove naming none leaves a vectored file live.
            raise CarrierError(f"{table_uri} has files with deletion vectors: an overwrite that keeps identical "
                               "files cannot remove them — nothing was written (overwrite with mode='overwrite' "
                               "through delta-rs's write_deltalake instead)", code=Code.MANIFEST_INVALID_FIELD)
        rel, reason = canonical_relative(raw)
        if rel is None:  # delta-rs encodes the path it is given: a remove could not name this file as the log does
            raise CarrierError(f"{table_uri} cannot be overwritten in place: the log names {raw!r} ({reason}) — "
                               "nothing was written", code=Code.PATH_AMBIGUOUS, path=raw)
        if rel not in kept:
            removes.append(RemoveAction(path=rel, data_change=True, deletion_timestamp=now, size=add.get("size"),
                                        partition_values=add.get("partitionValues")))
    return removes


def _delta_schema(schema: Any) -> Any:
    from deltalake import Schema

    return Schema.from_arrow(schema)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))
