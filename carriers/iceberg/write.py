"""The Iceberg content-addressed write path: Parquet files named by the BLAKE3 of their bytes, committed in ONE
snapshot whose summary carries the full attestation (the write side, apart from the reader in
carriers/iceberg/carrier.py).

Everything the attestation binds is known before the commit: the files' hashes (their names), the snapshot id
(fixed when the snapshot producer is created), and the reader view the new snapshot will have (the table metadata of
the transaction, and each new file's manifest record as pyiceberg will write it). The sidecar is written first, then
the snapshot: there is no window in which the snapshot is live without its attestation.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from attest.build import built_manifest, new_run_id
from attest.errors import CarrierError, SupersededError, UnsupportedTableError
from attest.hashing import hash_bytes
from attest.identity.inputs import ObservedInput
from attest.tables import DataFile, FileIdentity, Progress, attestation_encoded
from attest.view import DELETE_FILE_KEYS, ReaderView
from carriers.base import WriteResult
from carriers.core import encode_keys
from carriers.iceberg.carrier import (
    NO_DELETES,
    IcebergCarrier,
    deletes_in_view,
    file_views,
    locations_digest,
    schema_digests,
    table_view,
)
from carriers.iceberg.commit import SUMMARY_BUDGET, summary_size
from carriers.sidecar import build as build_sidecar

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table

    from attest.signing.keys import Signer

__all__ = ["write_content_addressed"]


def _parquet_bytes(data: pa.Table) -> bytes:
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(data, buffer)
    return buffer.getvalue()


def _chunks(data: pa.Table, rows_per_file: int | None) -> Iterable[pa.Table]:
    if rows_per_file is None or data.num_rows <= rows_per_file:
        yield data
        return
    for start in range(0, data.num_rows, rows_per_file):
        yield data.slice(start, rows_per_file)


def _put_once(carrier: IcebergCarrier, uri: str, data: bytes) -> None:
    """Content-addressed data bytes: never over an existing file (same name = same bytes), atomically."""
    from pathlib import Path

    from carriers.atomic import write_once_local
    from carriers.storage.base import local_path_of

    local = local_path_of(uri, decode=False)  # Iceberg locations are literal
    if local is not None:
        write_once_local(Path(local), data)
        return
    out = carrier.table.io.new_output(uri)
    if not out.exists():
        with out.create(overwrite=True) as stream:
            stream.write(data)


def write_content_addressed(
    table: Table | IcebergCarrier,
    data: pa.Table,
    *,
    model: str,
    program_hash: str,
    inputs: Sequence[ObservedInput] = (),
    run_id: str | None = None,
    mode: Literal["append", "overwrite"] = "append",
    rows_per_file: int | None = None,
    dialect: str | None = None,
    progress: Progress | None = None,
    signer: Signer | None = None,
) -> WriteResult:
    """Write ``data`` as Parquet files named ``<blake3>.parquet`` and commit them in ONE snapshot whose summary
    carries the full attestation (the sidecar is written before the commit): no window without an attestation.
    With ``signer`` the attestation is signed and its envelope stored before the commit too (docs/signing.md)."""
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.table import TableProperties

    carrier = table if isinstance(table, IcebergCarrier) else IcebergCarrier(table)
    carrier.refresh()
    tbl = carrier.table
    if mode not in ("append", "overwrite"):
        raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if not tbl.spec().is_unpartitioned():
        raise UnsupportedTableError("write_content_addressed supports unpartitioned tables only; use a normal "
                                    "write followed by attest_after_write for a partitioned table")
    if carrier.writes_detached:
        raise UnsupportedTableError("write_content_addressed commits the attestation in the data snapshot, which "
                                    "pyiceberg cannot do for format-v3 tables (or in detached mode); write normally "
                                    "and attest with attest_after_write")
    current = tbl.current_snapshot()
    previous = None if current is None else carrier.live(current.snapshot_id)
    previous_files = [] if previous is None else previous.files
    if previous is not None and previous.problems:
        raise UnsupportedTableError(f"the current snapshot cannot be attested: {previous.problems[0].message}")
    if mode == "overwrite" and any(f.kind != "data" for f in previous_files):
        raise UnsupportedTableError("a content-addressed overwrite of a table with delete files is not supported")

    # 1. Content-addressed Parquet files (name = BLAKE3 of the bytes), written before anything is committed.
    written: list[tuple[str, str, int]] = []  # (uri, hash, size)
    names: set[str] = set()
    live_paths = {f.path for f in previous_files}
    provider = tbl.location_provider()
    planned: list[tuple[str, str, bytes]] = []
    for chunk in _chunks(data, rows_per_file):
        payload = _parquet_bytes(chunk)
        digest = hash_bytes(payload)
        uri = provider.new_data_location(f"{digest}.parquet")
        # One name per content: the same bytes twice would reference one file twice (rows read twice).
        if digest in names or (mode == "append" and carrier.relative(uri) in live_paths):
            raise CarrierError(f"the table would hold the Parquet bytes {digest} twice; a content-addressed write "
                               "cannot add identical files (vary rows_per_file or deduplicate the rows); nothing "
                               "was written")
        names.add(digest)
        planned.append((uri, digest, payload))
    for uri, digest, payload in planned:
        _put_once(carrier, uri, payload)
        written.append((uri, digest, len(payload)))

    reuse = carrier.reusable_hashes()
    with tbl.transaction() as tx:
        if tx.table_metadata.name_mapping() is None:
            # add_files does the same: files written without field ids are read through the name mapping.
            tx.set_properties({TableProperties.DEFAULT_NAME_MAPPING:
                               tx.table_metadata.schema().name_mapping.model_dump_json()})
        update = tx.update_snapshot()
        producer: Any = update.overwrite() if mode == "overwrite" and current is not None else update.fast_append()
        snapshot_id: int = producer.snapshot_id
        new_files = [parquet_file_to_data_file(tbl.io, tx.table_metadata, uri) for uri, _, _ in written]
        spec_id = int(tx.table_metadata.default_spec_id)

        # 2. The manifest and the reader view of the snapshot-to-be: new files plus kept ones (hashes reused).
        entries: dict[str, list[dict[str, Any]]] = {}
        triples: list[FileIdentity] = []
        located: list[DataFile] = []  # the snapshot-to-be's live files, for their locations
        # A new file's data sequence number is the snapshot-to-be's (a concurrent commit taking it fails the parent
        # check below); the view holds it when the new snapshot keeps delete files.
        deletes_apply = deletes_in_view(int(tx.table_metadata.format_version),
                                        mode == "append" and any(f.kind != "data" for f in previous_files))
        for (_uri, digest, _), df in zip(written, new_files, strict=True):
            record = carrier.record_of(df, spec_id)
            record["data_sequence_number"] = tx.table_metadata.next_sequence_number()
            live, entry = carrier.file_entry(record, deletes_apply=deletes_apply)
            located.append(live)
            entries[live.path] = [entry]
            triples.append(FileIdentity(path=live.path, size=live.size, hash=digest, kind=live.kind))
        files_view = file_views(entries)
        observed = list(inputs)
        said: tuple[str, ...] = ()  # the previous snapshot's warning as an input (input_weakened), returned
        if mode == "append" and previous is not None and current is not None:
            kept = [f for f in previous_files if (f.path, f.size) not in reuse]
            hashed = carrier.hash_files(kept, progress=progress) if kept else {}
            missing = [f.path for f in kept if f.path not in hashed]
            if missing:
                raise CarrierError(f"cannot read {len(missing)} live file(s) of {carrier.reference}, e.g. {missing[0]}")
            triples += [FileIdentity(path=f.path, size=f.size, kind=f.kind,
                                     hash=reuse.get((f.path, f.size)) or hashed[f.path]) for f in previous_files]
            files_view.update({p: d for p, d in previous.view.files.items()})
            located += previous_files
            base, said = carrier.observe_warned(current.snapshot_id)
            observed.append(base)
        # The snapshot-to-be takes the current schema's id and becomes main's head: every reader resolves that one.
        # No delete file applies to the new files (their sequence number is above every delete file's), and the
        # manifests kept keep their sequence numbers: deletes apply as in the previous snapshot.
        before: dict[str, Any] = previous.view.table if mode == "append" and previous is not None \
            and current is not None else {}
        # The delete files kept and the table's schemas are the previous snapshot's: so are the equality fields as
        # Iceberg Java types them (in the view while equality deletes are live, carriers/iceberg/carrier.py).
        view = ReaderView(table={**table_view(tx.table_metadata, tx.table_metadata.schema()),
                                 "schemas": schema_digests([tx.table_metadata.schema()]),
                                 "locations": locations_digest(located), "deletes": before.get("deletes", NO_DELETES),
                                 **{k: before[k] for k in DELETE_FILE_KEYS if k in before}}, files=files_view)
        manifest, document = built_manifest(model=model, program_hash=program_hash,
                                            env_hash=carrier.env_hash(dialect=dialect), inputs=observed,
                                            outputs=[(t.path, t.hash) for t in triples],
                                            run_id=run_id or new_run_id())
        # The document, its canonical bytes and identity made once, as a record makes them (carriers/core.py _record).
        ordered, data, identity = attestation_encoded(document)
        del document
        sidecar = build_sidecar(triples, observed, str(snapshot_id), manifest, table=carrier.table_identity, view=view,
                                identity=identity)
        # Before the commit, a piece at a time, under <sidecar dir>/<its BLAKE3>.json (sidecar_name).
        rel, sidecar_digest = carrier.storage.write_once_stream(carrier.sidecar_dir, ".json", sidecar.chunks())
        envelope_rel, envelope_digest = (None, None) if signer is None else \
            carrier.sign(signer, str(snapshot_id), manifest, sidecar_digest=sidecar_digest, view=view,
                         encoded=(ordered, data))
        del ordered, data
        keys = encode_keys(manifest, version=str(snapshot_id), sidecar_rel=rel, sidecar_hash=sidecar_digest,
                           envelope=envelope_digest)
        if summary_size(keys) > SUMMARY_BUDGET:
            raise CarrierError(f"the attestation would add {summary_size(keys)} bytes to the snapshot summary "
                               f"(budget {SUMMARY_BUDGET}); shorten subject fields")
        # The snapshot id is fixed when the producer is created; the summary is built at commit from this attribute.
        producer.snapshot_properties = keys

        if mode == "overwrite" and current is not None:
            for manifest_file in current.manifests(tbl.io):  # every live file of the current snapshot goes
                for old in manifest_file.fetch_manifest_entry(tbl.io, discard_deleted=True):
                    producer.delete_data_file(old.data_file)
        for df in new_files:
            producer.append_data_file(df)
        producer.commit()
        # Kept where table maintenance keeps it: a Puffin file registered for this snapshot (carriers/iceberg/kept.py).
        staged = tx.table_metadata.snapshot_by_id(snapshot_id)
        carrier.kept_statistics(tx, keys, attested=snapshot_id, carrier=snapshot_id,
                                sequence_number=int(getattr(staged, "sequence_number", 0) or 0))
        # main's retention tag (the write commits on main), in the same commit (docs/iceberg.md)
        carrier.retain(tx, snapshot_id, None)
    carrier.refresh()
    committed = tbl.snapshot_by_id(snapshot_id)
    expected_parent = None if current is None else current.snapshot_id
    if committed is None or committed.parent_snapshot_id != expected_parent:
        raise SupersededError(f"a concurrent commit landed during the content-addressed write; snapshot {snapshot_id} "
                              "does not hold the attested file set and will not verify")
    return WriteResult(location=carrier.reference, attested_version=str(snapshot_id),
                       sidecar=carrier.storage.location(rel), manifest=manifest,
                       envelope=None if envelope_rel is None else carrier.storage.location(envelope_rel),
                       signer=None if signer is None else signer.key_id, warnings=said)
