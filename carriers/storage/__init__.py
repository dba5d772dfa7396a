"""One way to reach bytes for every table carrier: local files, or an object store through the table's engine.

One module per concern: ``options`` (schemes, option checks and mappings), ``errors`` (coded failures), ``base``
(``Storage``), the backends ``delta`` and ``fileio``, ``hashing``, ``objects`` (object-store reads at line rate), and
``listing`` (whether each file is there, and its size, without opening it: ``verify --level files``).

A ``Storage`` addresses bytes two ways: *names* relative to a carrier root (sidecars, pointers, Delta log files —
POSIX segments, never ``.``/``..``, so untrusted metadata cannot send a reader outside the root) and *locations* (the
absolute local path or URI at which the table's engine reads a data file). Backends are small peers:

- ``DeltaStorage``: delta-rs's own object-store handler, so ``storage_options`` mean what they mean to delta-rs;
- ``FileIOStorage``: pyiceberg's FileIO of the table, so catalog properties and credentials are the table's own.

Both read local paths with plain file I/O. ``hash_locations`` hashes many files with bounded memory: local files
through attest.hashing (mmap + threads), remote objects through obstore (concurrent ranged GETs, bounded pieces in
flight) when the options map to an obstore store, else — and for any object obstore cannot read whole — streamed by
a few concurrent readers through the engine.

Writes on object stores (docs/object-stores.md): every file the carrier writes (sidecar, detached pointer, Delta
attestation commit) is one PUT, created conditionally — ``If-None-Match: *`` on S3 and Azure, ``ifGenerationMatch=0``
on GCS — through obstore (the same Rust object_store delta-rs uses, so the options mean the same); a store whose
options cannot be mapped falls back to the engine's own single PUT, and reads it back. Objects appear whole or not
at all, so no reader ever sees a partial sidecar. A sidecar above ``STREAM_PUT_MIN`` is spooled and uploaded in parts
to a temporary name, then published by a conditional server-side copy (``Storage.write_once_stream``; a store with
neither, such as fake-gcs-server: one conditional PUT, its body held once, ``_write_once_spooled``); sidecars are
read as a stream (``read_chunks``) and the Iceberg kept copy by ranges (``open_ranged``): never held whole.

Store failures are coded (``coded``): a refused credential, an unknown scheme, a malformed endpoint (checked before
the engine sees it: delta-rs panics on one), never a raw ``OSError`` or a Rust panic; messages pass through
``attest.redact`` so no credential is ever echoed.
"""

from carriers.storage.base import MAX_NAME_BYTES, Storage, check_name, local_path_of, open_object_store
from carriers.storage.delta import DeltaStorage
from carriers.storage.errors import ConditionalPutUnsupported, coded, engine_message, is_panic, not_found
from carriers.storage.fileio import FileIOStorage
from carriers.storage.hashing import REMOTE_CHUNK, REMOTE_WORKERS, hash_location, hash_locations
from carriers.storage.options import (
    ENGINE_SCHEMES,
    check_options,
    check_supported,
    environment_options,
    fileio_obstore_config,
    obstore_config,
    option_secrets,
    scheme_of,
)

__all__ = [
    "ENGINE_SCHEMES", "MAX_NAME_BYTES", "REMOTE_CHUNK", "REMOTE_WORKERS", "ConditionalPutUnsupported", "DeltaStorage",
    "FileIOStorage", "Storage", "check_name", "check_options", "check_supported", "coded", "engine_message",
    "environment_options", "fileio_obstore_config", "hash_location", "hash_locations", "is_panic", "local_path_of",
    "not_found", "obstore_config", "open_object_store", "option_secrets", "scheme_of",
]
