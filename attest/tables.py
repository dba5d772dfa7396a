"""Engine-free values that describe a table version and its attestation.

Carriers produce them from an engine's table; the verifier (attest.verify.table) judges them. Nothing here
imports a table format library.
"""

from __future__ import annotations

import operator
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice, repeat
from typing import TYPE_CHECKING, Any, Literal

from attest.identity.inputs import ObservedInput
from attest.view import ReaderView

FileKind = Literal["data", "deletion_vector", "delete"]
ChangeKind = Literal["none", "data", "compaction"]
Progress = Callable[[int, int, int], None]  # (files done, files total, bytes done)
Origin = Literal["recipe-attest", "legacy", "foreign"]


# slots: no instance dict, ~40 bytes less a file (200,000 of them held through a verification).
@dataclass(frozen=True, slots=True)
class DataFile:
    """A live file of a table version as the table format records it.

    ``path`` is the file's identity in attestations: relative to the table root when the file lives under it
    (POSIX separators, not URL-encoded), otherwise the file's absolute URI. ``location`` is where the table's
    engine reads it (an absolute local path or URI); it is not part of the identity.
    """

    path: str
    size: int
    kind: FileKind = "data"
    location: str = ""


# slots: no instance dict, ~40 bytes less a file (200,000 of them held through a verification).
@dataclass(frozen=True, slots=True)
class FileIdentity:
    """(path, size, hash): a file is the attested one only when all three match (seed 000, M3)."""

    path: str
    size: int
    hash: str
    kind: FileKind = "data"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "hash": self.hash, "kind": self.kind}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileIdentity:
        kind = data.get("kind", "data")
        if kind not in ("data", "deletion_vector", "delete"):
            raise ValueError(f"unknown file kind {kind!r}")
        return cls(path=str(data["path"]), size=int(data["size"]), hash=str(data["hash"]), kind=kind)


def _made_bare(cls: type[Any], columns: dict[str, Any], count: int) -> list[Any]:
    """``count`` instances of the slotted frozen dataclass ``cls``, each field set from its column (an iterable of
    ``count`` values, or more: ``repeat``), made a field at a time in C passes: each instance made bare, then each
    slot set through its member descriptor (the frozen class's ``__setattr__``, which refuses, is not in the way; its
    ``__init__`` calls ``object.__setattr__`` once a field a file: ~0.15 s for 200,000 files, measured). Every field
    of ``cls`` is given (checked): the instances equal the ones ``cls(**fields)`` makes (tests/test_data_files_bulk.py).
    """
    if list(columns) != [f for f in cls.__slots__ if not f.startswith("__")]:
        raise ValueError(f"{cls.__name__}: fields {list(columns)}")
    made = list(map(object.__new__, repeat(cls, count)))
    for name, values in columns.items():
        deque(map(cls.__dict__[name].__set__, made, values), 0)  # run the map to its end, keeping nothing
    return made


def data_files(paths: list[str], sizes: list[int], locations: Iterable[str], kind: FileKind = "data") -> list[DataFile]:
    """``[DataFile(path=p, size=s, kind=kind, location=l) for p, s, l in zip(paths, sizes, locations)]`` (equal
    lists), made in C passes (``_made_bare``). ``sizes`` and ``locations`` are as long as ``paths`` (checked)."""
    located = list(locations)
    if not len(paths) == len(sizes) == len(located):
        raise ValueError(f"data_files: {len(paths)} paths, {len(sizes)} sizes, {len(located)} locations")
    return _made_bare(DataFile, {"path": paths, "size": sizes, "kind": repeat(kind), "location": located}, len(paths))


def file_identities(paths: list[str], sizes: list[int], hashes: list[str], kinds: list[FileKind]) -> list[FileIdentity]:
    """``list(map(FileIdentity, paths, sizes, hashes, kinds))`` (equal lists), made in C passes (``_made_bare``).
    The four lists are as long (checked)."""
    if not len(paths) == len(sizes) == len(hashes) == len(kinds):
        raise ValueError(f"file_identities: {len(paths)} paths, {len(sizes)} sizes, {len(hashes)} hashes, "
                         f"{len(kinds)} kinds")
    return _made_bare(FileIdentity, {"path": paths, "size": sizes, "hash": hashes, "kind": kinds}, len(paths))


# Held while an Attestation's output list is made (Attestation.outputs_of).
_MAKING = threading.Lock()


@dataclass(frozen=True)
class Attestation:
    """An attestation as a carrier read it back.

    ``document`` is the reconstituted standalone manifest (it may fail the schema: the verifier says so).
    ``attested_version`` is the table version / snapshot id the attestation describes, as a string.
    ``files`` holds the (path, size, hash) triples from the sidecar, when there is one.
    ``problems`` are carrier-level findings made while reading (tampered keys, sidecar mismatch).
    ``view`` is the reader view recorded when the attestation was written (None: not bound, e.g. a legacy or
    foreign attestation). ``origin`` says who wrote it and in which layout: ``recipe-attest`` (this project's
    current layout, sidecar required), ``legacy`` (this project's first layout, still read) or ``foreign``
    (another producer's ``recipe_manifest.*`` keys with no binding: its version is inferred from the table's
    history and it never passes beyond the schema level). ``binding_note`` says how the version was bound.
    """

    document: dict[str, Any]
    attested_version: str | None
    location: str
    files: tuple[FileIdentity, ...] | None = None
    inputs: tuple[ObservedInput, ...] | None = None
    problems: tuple[Any, ...] = ()
    manifest_identity: str | None = None  # from the sidecar: the v1 identity the document must have
    view: ReaderView | None = None
    origin: Origin = "recipe-attest"
    binding_note: str = ""
    table_identity: str | None = None  # from the sidecar: the table the attestation was written for
    # Signed attestations (docs/signing.md): the BLAKE3 the metadata records for its sidecar (a binding digest),
    # where the DSSE envelope the metadata names lives, and how to read it. Read only under a trust policy: an
    # unsigned verification never needs it, and a table with many files has a large one.
    sidecar_digest: str | None = None
    envelope_ref: str | None = None
    envelope_loader: Callable[[], tuple[bytes | None, Any]] | None = field(default=None, compare=False, repr=False)
    # The content digest the sidecar binds (docs/content-digest.md, "What a carrier stores"): its ``content`` object
    # as read (scheme, total, companion files, the attestation it continues); None: no content digest bound.
    content: dict[str, Any] | None = None
    # The sidecar's files, in path order, whose (hash, path) pairs are the document's ``output_hashes`` when the
    # document given holds none: that list (one dict a file, ~36 MiB at 200,000 files) is then made into the document
    # only when ``document`` is first read, and a verification judges the manifest from these files instead
    # (``pending_outputs``: attest/verify/table.py; docs/scale.md, seventeenth pass). Reading ``document`` gives the
    # same dict, key order and list either way.
    outputs_of: Sequence[FileIdentity] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.outputs_of is None:
            return
        if "output_hashes" in self.document:
            object.__setattr__(self, "outputs_of", None)  # the document's own list: nothing to make
            return
        object.__setattr__(self, "_bare", self.document)
        object.__delattr__(self, "document")  # read again: made by __getattr__ below

    if not TYPE_CHECKING:  # (mypy would otherwise take any attribute of an Attestation as existing)
        def __getattr__(self, name: str) -> Any:
            held = self.__dict__
            if name == "document":
                with _MAKING:  # one reader makes the list; another thread reading meanwhile waits for it
                    if "_bare" in held:
                        # As the carrier made it before (carriers/core.py _decode): the list added last, to that dict.
                        bare = held["_bare"]
                        bare["output_hashes"] = [{"hash": f.hash, "path": f.path} for f in self.outputs_of]
                        held["document"] = bare
                        del held["_bare"]
                    if "document" in held:
                        return held["document"]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def pending_outputs(self) -> tuple[dict[str, Any], Sequence[FileIdentity]] | None:
        """(the document without its ``output_hashes``, the files whose (hash, path) pairs they are, in order) while
        that list has not been made (``outputs_of``); None once it has been, or when the document carries its own."""
        bare = self.__dict__.get("_bare")
        return None if bare is None or self.outputs_of is None else (bare, self.outputs_of)

    def load_envelope(self) -> tuple[bytes | None, Any]:
        """(the envelope's bytes, matching their content address; or None and the Problem saying why not)."""
        return (None, None) if self.envelope_loader is None else self.envelope_loader()

    def _repr_html_(self) -> str:
        """Rich notebook display (attest/render/html.py)."""
        from attest.render.html import attestation_html

        return attestation_html(self)

    @property
    def producer_label(self) -> str:
        pending = self.pending_outputs()  # (its producer is read without making the output list)
        producer = (self.document if pending is None else pending[0]).get("producer")
        if isinstance(producer, dict):
            return f"{producer.get('name', '?')} {producer.get('version', '?')}"
        return "an unnamed producer"


@dataclass(frozen=True)
class RewriteFact:
    """One commit the content check carried an attestation over: its version, what it says it was, and how many
    data files it removed and added."""

    version: str
    operation: str
    removed: int
    added: int

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "operation": self.operation, "files_removed": self.removed,
                "files_added": self.added}


@dataclass(frozen=True)
class ContentCheck:
    """The outcome of checking rewrites after the attested version by content (docs/content-digest.md).

    ``passed``: the rows of the data files the rewrites added (``added``, live paths, read now) are the rows of the
    attested files they removed (``removed``), by the digests recorded with the attestation. ``code`` / ``message``:
    why not. ``checked``: every live file the rewrites added (data files and their deletion vectors): the verifier
    takes them as attested by content. ``rows``: the rows on each side (when compared)."""

    passed: bool
    rewrites: tuple[RewriteFact, ...] = ()
    removed: tuple[str, ...] = ()
    checked: tuple[str, ...] = ()
    rows: int | None = None
    code: str = ""
    message: str = ""
    added: int = 0  # the data files among ``checked``
    # Keys of the view's table part that bind the file set as a whole (Iceberg: every file's location, which deletes
    # apply to which file): rewrites change them by nature, and the format's rewrites_between accounts for them.
    view_keys: tuple[str, ...] = ()
    # Columns widened since the attested version (Delta type widening, ``id: integer → long``): the removed files were
    # read again (their attested bytes) as the wider types and hold the added files' rows; the verdict says so.
    widened: tuple[str, ...] = ()


    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passed": self.passed, "rewrites": [r.to_json() for r in self.rewrites],
                               "files_removed": len(self.removed), "files_added": self.added}
        if self.rows is not None:
            out["rows"] = self.rows
        if self.widened:
            out["widened"] = list(self.widened)
        if not self.passed:
            out["code"] = self.code
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class TableState:
    """Everything the verifier needs about one version of a table, engine-free.

    ``changes`` says what the commits between the attested version and ``version`` did: nothing that touched
    files ("none"), only compaction/rewrite without data change ("compaction"), or a data change ("data");
    ``change_detail`` names the operations for the verdict. ``view`` is the live reader view of ``version`` as the
    engine resolves it; ``problems`` are findings about the table itself that make any verdict unsafe (paths the
    engines resolve differently, a checkpoint that disagrees with the log).
    """

    table: str
    table_format: str
    version: str
    attestation: Attestation | None
    live_files: tuple[DataFile, ...]
    changes: ChangeKind = "none"
    change_detail: str = ""
    notes: tuple[str, ...] = field(default=())
    # False when the history between the attested version and ``version`` is gone (Delta log cleanup): ``changes``
    # then says only what the remaining history shows.
    changes_complete: bool = True
    view: ReaderView | None = None
    problems: tuple[Any, ...] = ()
    uri: str | None = None  # the table as signatures name it (docs/signing.md); None: ``table``
    locations: tuple[str, ...] = ()  # where the table is stored, when not ``uri`` (trust policies match these too)
    # More names a trust policy matches, found only when a policy asks (another configured Iceberg catalog's name for
    # the table: a catalog search that a verify without a name-matching policy must not pay for). None: none.
    more_locations: Callable[[], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)
    # Rewrites after the attested version checked by content (None: not checked: no rewrite, or no digest bound).
    content_check: ContentCheck | None = None
    # What readers of the table by its name may read that ``version`` is not, and that was not checked: the heads of
    # its other branches, as (branch, snapshot id). Only for a version asked for by no version (the head of main).
    other_heads: tuple[tuple[str, str], ...] = ()
    # Likewise the tags at other snapshots than those heads, as (tag, snapshot id): in JSON, and an audit's lines.
    other_tags: tuple[tuple[str, str], ...] = ()
    # The branch other than main whose head ``version`` is, when that head was asked for by the branch's name
    # (``attest verify <table> --branch b``): the verdict names it. None: main, or a version asked for.
    branch: str | None = None
    tag: str | None = None  # likewise the tag whose snapshot ``version`` is, asked for by its line's name (ns.t.tag_x)


def attestation_identity(document: dict[str, Any]) -> str:
    """The v1 identity of a manifest document with its output list in (path, hash) order.

    Carriers may give the outputs back in another order than they were written (a sidecar keeps them sorted by
    path); the order carries no meaning, so it must not make an untouched attestation look edited.
    """
    from attest.canonical import digest_streamed

    # The outputs (one a file) hashed a batch at a time: the same identity, without the one-shot encoding of them all
    # that set a verification's peak memory (docs/scale.md).
    return digest_streamed(attestation_document(document), "output_hashes")


def attestation_encoded(document: dict[str, Any]) -> tuple[dict[str, Any], bytes, str]:
    """(``attestation_document(document)``, its canonical bytes, their BLAKE3: the attestation identity), made once: a
    record binds the identity in its sidecar and compares it after the commit, and a signature covers the bytes (its
    statement's digests and payload take them: attest.signing.statement)."""
    from attest.canonical import blake3_hex, outputs_bytes

    ordered = attestation_document(document)
    data = outputs_bytes(ordered)  # canonical_bytes(ordered), its outputs written one format call each
    return ordered, data, blake3_hex(data)


def attestation_document(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its output list in (path, hash) order: the form an identity and a signature cover."""
    outputs = document.get("output_hashes")
    if isinstance(outputs, list) and all(isinstance(o, dict) for o in outputs):
        if _in_path_order(outputs):
            return {**document, "output_hashes": list(outputs)}  # what the sort gives back: the same order
        return {**document, "output_hashes": sorted(
            outputs, key=lambda o: (str(o.get("path", "")), str(o.get("hash", ""))))}
    return document


def _in_path_order(outputs: list[dict[str, Any]]) -> bool:
    """Whether every output's path is a ``str`` and each is greater than the one before: then the (path, hash) keys
    are already strictly increasing and sorting by them keeps the list as it is (a manifest built from a sidecar
    lists its outputs by path), found in C passes instead of a key tuple made and compared per output."""
    paths: list[Any] = list(map(dict.get, outputs, repeat("path")))
    return set(map(type, paths)) <= {str} and all(map(operator.lt, paths, islice(paths, 1, None)))
