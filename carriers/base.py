"""The carrier protocol: where an attestation travels and how it is read back.

Carriers are peers (standalone file, Delta, Iceberg) behind this one protocol. Data flows one way: a carrier
turns an engine's table into engine-free values (attest.tables), and attest.verify judges those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack, runtime_checkable

from attest.errors import CarrierError, Code
from attest.identity.inputs import ObservedInput
from attest.identity.program import program_identity_sql
from attest.model import Manifest, OutputHash
from attest.tables import Attestation, DataFile, FileIdentity, FileKind, Progress, TableState

if TYPE_CHECKING:
    from attest.content import ContentDigest
    from attest.signing.keys import Signer
    from attest.verify.table import FileHasher

__all__ = [
    "AfterWrite",
    "AmbiguousCommit",
    "Attestation",
    "Carrier",
    "ContentReader",
    "DataFile",
    "FileIdentity",
    "FileKind",
    "Progress",
    "RecordRequest",
    "Rewrite",
    "TableCarrier",
    "TableState",
    "WriteOptions",
    "WriteResult",
    "after_write_request",
    "keywords_of",
    "one_commit",
    "program_of",
    "triples_for",
]


@dataclass(frozen=True)
class WriteResult:
    """What a carrier wrote: where, for which version, and the sidecar if any."""

    location: str
    attested_version: str | None
    sidecar: str | None = None
    manifest: Manifest | None = None
    replaced: tuple[str, ...] = ()  # what an explicit replace=True re-attestation replaced (evidence it dropped)
    envelope: str | None = None  # a signed attestation: where its DSSE envelope was stored (docs/signing.md)
    signer: str | None = None  # the key id that signed it (never the key)
    content: str | None = None  # the rows the content digest bound counts (None: no content digest recorded)
    continues: str | None = None  # a carry-forward attestation: the sidecar BLAKE3 of the attestation it continues
    # What the user must act on although the attestation is written and in force, each "<code>: <message>" (a stable
    # code first, attest.errors.Code): an Iceberg attestation the table metadata does not keep (``not_kept``,
    # ``commit_conflict``: orphan removal deletes it, expiry may drop its snapshot; docs/maintenance.md).
    warnings: tuple[str, ...] = ()

    def _repr_html_(self) -> str:
        """Rich notebook display (attest/render/html.py)."""
        from attest.render.html import write_result_html

        return write_result_html(self.location, self.attested_version, self.sidecar,
                                 None if self.manifest is None else self.manifest.to_dict(), self.replaced,
                                 self.warnings)


@dataclass(frozen=True)
class RecordRequest:
    """What a record takes (``AttestedTable.record``): the program, its run and inputs, and how to attest.

    ``known_hashes``: {path: (size, BLAKE3)} a writer already knows (a content-addressed write), reused when (path,
    size) match; ``version``: the version to attest (default: the latest data version); ``replace``: drop the
    evidence of an attestation of the same version that recorded inputs this one does not; ``signer``: sign it
    (docs/signing.md); ``hasher``: hashes the live files instead of this machine (Spark executors,
    carriers/spark/distributed.py). The keyword form ``carrier.record(model=..., ...)`` builds one."""

    model: str
    program_hash: str
    inputs: Sequence[ObservedInput] = ()
    run_id: str | None = None
    dialect: str | None = None
    engines: Mapping[str, str] | None = None
    progress: Progress | None = None
    known_hashes: Mapping[str, tuple[int, str]] | None = None
    version: str | int | None = None
    replace: bool = False
    signer: Signer | None = None
    hasher: FileHasher | None = None
    carry_only: bool = False  # only a carry-forward attestation, else NothingToCarry (AttestedTable.carry_forward)

    @classmethod
    def of(cls, request: RecordRequest | None, fields: Mapping[str, Any]) -> RecordRequest:
        """``request``, or one built from keyword ``fields`` (never both)."""
        if request is None:
            return cls(**fields)
        if fields:
            raise TypeError(f"record() takes a RecordRequest or keywords, not both ({', '.join(sorted(fields))})")
        return request


class ContentReader(Protocol):
    """Reads data files' rows for their content digest as readers of one version get them (docs/content-digest.md):
    built on the driver by ``AttestedTable.content_reader``, picklable, and run where a file is read — this machine
    (``file_content_digests``) or a Spark executor, in the task that hashes the file's bytes
    (carriers/spark/distributed.py). One ``digest`` for both, so both give the same digests."""

    @property
    def paths(self) -> frozenset[str]:
        """The data files (DataFile.path) it was built for."""
        ...

    def digest(self, f: DataFile, storage: Any, data: bytes | None = None) -> ContentDigest | None:
        """The digest of ``f``'s rows, read through ``storage`` (the table's Storage), from ``data`` (the file's
        bytes, already read to hash them) when given; None or an AttestError with the format's code otherwise."""
        ...


class WriteOptions(TypedDict, total=False):
    """The keywords every carrier's ``write(manifest, ...)`` takes (the Carrier protocol, carriers/core.py,
    carriers/standalone.py): ``files``, the (path, size, hash) triples attested (default: the manifest's output hashes
    with the sizes of the version's live files); ``inputs``, the observed inputs; ``version``, the version attested
    (default: the current one); ``signer``, sign the attestation (docs/signing.md). A standalone manifest names no
    table version and ignores ``files``, ``inputs`` and ``version``."""

    files: Sequence[FileIdentity] | None
    inputs: Sequence[ObservedInput]
    version: str | int | None
    signer: Signer | None


class AfterWrite(TypedDict, total=False):
    """The keywords every format's ``attest_after_write(table, model=..., ...)`` takes besides its own (Delta's
    ``storage_options`` and ``detached``, Iceberg's ``branch``): the program, ``program_hash`` or ``sql`` in
    ``dialect`` (program_of); then the RecordRequest fields of the same names."""

    program_hash: str | None
    sql: str | None
    dialect: str | None
    inputs: Sequence[ObservedInput]
    run_id: str | None
    progress: Progress | None
    replace: bool
    signer: Signer | None


def keywords_of(kind: type, given: Mapping[str, object], where: str) -> None:
    """Refuse a keyword ``given`` to ``where`` that the TypedDict ``kind`` does not name, as Python refuses one a
    signature does not name (a ``**options: Unpack[...]`` signature takes any at run time)."""
    unknown = sorted(set(given) - set(kind.__annotations__))
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")


def after_write_request(model: str, fields: AfterWrite) -> RecordRequest:
    """The RecordRequest of ``attest_after_write(table, model=model, **fields)``."""
    keywords_of(AfterWrite, fields, "attest_after_write")
    dialect = fields.get("dialect")
    return RecordRequest(model=model, program_hash=program_of(fields.get("program_hash"), fields.get("sql"), dialect),
                         inputs=fields.get("inputs", ()), run_id=fields.get("run_id"), dialect=dialect,
                         progress=fields.get("progress"), replace=fields.get("replace", False),
                         signer=fields.get("signer"))


def program_of(program_hash: str | None, sql: str | None, dialect: str | None) -> str:
    """The program an ``attest_after_write`` records: ``program_hash``, or given ``sql`` its SQL program identity in
    ``dialect`` (one of the two is needed)."""
    if program_hash is not None:
        return program_hash
    if sql is None:
        raise CarrierError("attest_after_write needs program_hash or sql", code=Code.MANIFEST_INVALID_FIELD)
    return program_identity_sql(sql, dialect)


class AmbiguousCommit(Exception):
    """Two commits fit one write, or its commit lacks the write id it was given: attesting a guess could attest
    the wrong program (never over-claim). A format's search for a write's commit raises it (carriers/delta/
    write_commit.py, carriers/iceberg/write_commit.py); the Spark hook counts the write as skipped, with this
    message."""


# A stamped write whose id is in no commit while an unstamped commit fits it: the engine dropped the id on this
# path (a write form not measured in docs/dev-notes-spark-listener.md §4), or another writer made that commit.
NOT_STAMPED = ("no commit of {what} carries the write id of this {command}, but an unstamped commit fits it "
               "(the engine may have ignored the id on this write path); not attested rather than guessed")


def one_commit(found: Sequence[int], what: str | None, command: str) -> int | None:
    """The one commit found for a write (``what``: the table as shown), None for none; AmbiguousCommit for more."""
    if len(found) > 1:
        raise AmbiguousCommit(f"{len(found)} commits of {what} fit this "
                              f"{command} ({', '.join(map(str, sorted(found)))}); none attested")
    return found[0] if found else None


@dataclass(frozen=True)
class Rewrite:
    """One commit after an attested version that rewrote files and declared no data change (Delta: every add and
    remove ``dataChange: false``; Iceberg: a ``replace`` snapshot). Format-neutral: the carrier-forward judge
    (carriers/content_store.py) checks that the rows of ``added`` are the rows of ``removed``.

    ``version``: the version / snapshot id the rewrite created; ``removed`` / ``added``: the data files it took out of
    and put into the table (as ``DataFile``: path relative to the root, the location the engine reads); ``operation``:
    what the commit says it was (``OPTIMIZE``, ``REORG``, ``replace``)."""

    version: str
    removed: tuple[DataFile, ...]
    added: tuple[DataFile, ...]
    operation: str


@runtime_checkable
class Carrier(Protocol):
    """One place an attestation travels. Implemented by StandaloneCarrier, DeltaCarrier and IcebergCarrier."""

    kind: str

    def write(self, manifest: Manifest, **options: Unpack[WriteOptions]) -> WriteResult:
        """Write ``manifest`` for the target (for tables: for ``version``, default the current one; see
        WriteOptions)."""
        ...

    def read(self, version: str | int | None = None) -> Attestation | None:
        """The attestation in force at ``version`` (default current); None when there is none."""
        ...

    def list_files(self, version: str | int | None = None) -> list[DataFile]:
        """The target's live data files (and deletion vectors / delete files) with their sizes."""
        ...


@runtime_checkable
class TableCarrier(Carrier, Protocol):
    """A carrier over a table format: adds the state the verifier judges and byte access to live files."""

    def state(self, version: str | int | None = None) -> TableState:
        ...

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        """BLAKE3 of each file's bytes, keyed by ``DataFile.path``.

        A file that cannot be read (missing, permission) is left out of the result; the verifier reports it.
        """
        ...

    def record(self, request: RecordRequest | None = None, /, **fields: Any) -> WriteResult:
        """Attest the table's current version (attest-after-write): list its live files, hash them (reusing
        hashes of files covered by the previous valid attestation), add the table's previous version as an
        input when the last data commit appended or merged, build the manifest and write it. Takes a
        RecordRequest, or its fields as keywords."""
        ...

    def observe(self, version: str | int | None = None) -> ObservedInput:
        """This table at ``version`` as an upstream input: its content identity (strong) when an attestation
        that holds at the files level covers exactly that version, else its version (heuristic)."""
        ...


def triples_for(outputs: Sequence[OutputHash], live: Sequence[DataFile], where: str) -> list[FileIdentity]:
    """The (path, size, hash) triple of each output hash, sizes from the version's live files.

    A write() given a manifest without file triples may only name live files of the version it attests.
    """
    by_path = {f.path: f for f in live}
    triples: list[FileIdentity] = []
    for o in outputs:
        if o.path is None or o.path not in by_path:
            from attest.errors import CarrierError

            raise CarrierError(f"output {o.path!r} is not a live file of {where}; pass files= to write() to "
                               "attest other paths")
        f = by_path[o.path]
        triples.append(FileIdentity(path=o.path, size=f.size, hash=o.hash, kind=f.kind))
    return triples
