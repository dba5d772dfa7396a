"""One attestation core for every table format (pattern: pyiceberg's ``MetastoreCatalog(Catalog)``).

``AttestedTable`` holds everything that is the same for Delta and Iceberg:

- **read**: the metadata map in force at a version (found by the format) + the sidecar → an ``Attestation``, with
  every carrier-level problem: missing or blanked carrier keys, a sidecar that is missing, edited, written for another
  table or another version, a manifest that is not the one the sidecar recorded. Other producers' ``recipe_manifest.*``
  keys (no binding of ours) are read as *foreign* attestations; first-wave layouts as *legacy*;
- **state**: the live files and reader view of a version as the format's engine resolves them, the attestation in
  force, and what the commits since the attested version did;
- **record**: reuse hashes of the previous attestation, hash the rest, observe inputs, build the manifest and the
  sidecar (files, inputs, table, reader view, manifest identity), write the sidecar, commit the metadata map, and
  check that the attestation is in force;
- **observe**: this table at a version as an upstream input (strong only when an attestation holds at files level);
- **sign**: with a signer, record() / write() also sign the attestation (an in-toto Statement in a DSSE envelope,
  docs/signing.md) and store the envelope content-addressed beside the sidecar, before the metadata that names it.

A format (carriers/delta/carrier.py, carriers/iceberg/carrier.py) supplies only what is truly its own: how versions
are named, the live files and reader view of a version, where the attestation in force is found, how commits
between two versions are classified, how the metadata map is committed, and what it caches while reading
(``_forget``). Verification itself is engine-free (attest.verify.table).

A carrier may be kept open (a notebook, a service, an audit): each ``read``, ``state`` or ``list_files`` after its
first reads the table again, so an answer never comes from an earlier read.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import posixpath
import re
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import replace as replace_result
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, Unpack
from urllib.parse import urlparse

from attest import fast
from attest.build import PRODUCER_NAME, built_manifest, new_run_id
from attest.errors import (
    AttestError,
    CarrierError,
    Code,
    EvidenceDroppedError,
    ManifestMalformedError,
    Problem,
    SupersededError,
    TableInconsistentError,
    UnsupportedTableError,
    VersionNotFoundError,
)
from attest.identity.inputs import ObservedInput, content_identity, inputs_identity
from attest.model import Manifest, load_json_document
from attest.numbers import is_signed_digits
from attest.record import many_records
from attest.tables import (
    Attestation,
    ChangeKind,
    ContentCheck,
    DataFile,
    FileIdentity,
    Progress,
    TableState,
    attestation_document,
    attestation_encoded,
    attestation_identity,
    file_identities,
)
from attest.view import ReaderView, table_kept_by_rewrites
from carriers import properties as props
from carriers.base import ContentReader, RecordRequest, Rewrite, WriteOptions, WriteResult, keywords_of, triples_for
from carriers.sidecar import Sidecar, SidecarError, sidecar_name
from carriers.sidecar import build as build_sidecar
from carriers.storage.base import Storage, local_path_of
from carriers.storage.errors import StoreReadError
from carriers.storage.hashing import hash_locations

if TYPE_CHECKING:
    from attest.content import ContentDigest
    from attest.signing.keys import Signer
    from attest.verify.table import FileHasher
    from carriers.content_store import ContentPass

__all__ = ["ENVELOPE_SUFFIX", "AttestedTable", "Carried", "Changes", "LiveVersion", "Rewrite", "Version",
           "canonical_relative", "encode_keys"]

# A table attestation's DSSE envelope: <sidecar dir>/<BLAKE3 of its bytes>.dsse.json (docs/signing.md).
ENVELOPE_SUFFIX = ".dsse.json"


@dataclass(frozen=True)
class Version:
    """A version (Delta) or snapshot (Iceberg) of a table: ``id`` as users type it, ``number`` for ordering where
    the format has one (Delta versions; snapshot ids are not ordered)."""

    id: str
    number: int
    handle: Any = None  # the format's own object (pyiceberg Snapshot, ...)


def _refuse_unwritable_view(reference: str, noun: str, version: str, view: ReaderView) -> None:
    """A reader view no attestation can hold (its schema nests types deeper than canonical JSON's MAX_DEPTH:
    about 40 nested structs) is refused before anything is hashed or written, as what it is — a table this cannot
    attest — rather than as a malformed manifest of the attestation's own making."""
    from attest.canonical import CanonicalizationError

    try:
        _ = view.digest
    except CanonicalizationError as exc:
        raise UnsupportedTableError(
            f"{reference} {noun} {version} cannot be attested: its schema cannot be written in an attestation "
            f"({str(exc).rsplit(': ', 1)[-1]}: about 40 nested structs at most)") from None


@dataclass
class LiveVersion:
    """A version as the engine resolves it: live files (with the locations the engine reads), the reader view, the
    table identity, and problems that make any verdict unsafe."""

    files: list[DataFile]
    view: ReaderView
    identity: str
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def refuse_if_inconsistent(self, what: str, tail: str = "") -> None:
        """TableInconsistentError naming the first problem (``what``: ``... cannot be attested``), when there is one."""
        if self.problems:
            first = self.problems[0]
            raise TableInconsistentError(f"{what}: {first.message}{tail}", code=first.code, path=first.path)


@dataclass(frozen=True)
class Carried:
    """The attestation keys in force at a version, before the sidecar is read.

    ``foreign_binding``: for keys without a binding of ours, the version the table's history binds them to.
    """

    keys: dict[str, str]
    where: str
    problems: tuple[Problem, ...] = ()
    note: str = ""  # for the verdict's notes when the attestation was found somewhere other than the version itself
    foreign_binding: str | None = None
    foreign_note: str = ""
    detached: bool = False


@dataclass(frozen=True)
class Changes:
    kind: ChangeKind
    detail: str = ""
    complete: bool = True  # False when the history between the two versions is no longer available


# ---- paths -----------------------------------------------------------------------------------------------------
# Not valid in a URI's path (RFC 3986), so Spark refuses the path (java.net.URI) while delta-rs reads the file.
_URI_FORBIDDEN = frozenset(' "<>\\^`{|}[]') | frozenset(chr(c) for c in range(0x20)) | {"\x7f"}


_PLAIN_PATH = re.compile(r"[A-Za-z0-9_~!$&'()*+,;=:@=-][A-Za-z0-9._~!$&'()*+,;=:@=-]*(?:/[A-Za-z0-9_~!$&'()*+,;=:@=-]"
                         r"[A-Za-z0-9._~!$&'()*+,;=:@=-]*)*")


def canonical_relative(raw: str) -> tuple[str | None, str]:
    """(decoded relative path, "") when engines resolve ``raw`` (a URI-encoded path relative to the table root)
    the same way; (None, reason) otherwise.

    Engines disagree on dot segments (Spark's Hadoop Path normalises ``./a`` and ``d/../a``; delta-rs reads a file
    literally named ``.``), on empty segments, on characters that are not valid in a URI (Spark refuses them,
    delta-rs accepts them), on a raw ``#`` or ``?`` (Spark drops what follows, delta-rs keeps it), on encoded
    separators and on absolute paths (delta-rs 1.x joins them under the root).
    """
    from urllib.parse import unquote

    plain = _PLAIN_PATH.fullmatch(raw)
    if plain is not None and "/./" not in f"/{raw}/" and "/../" not in f"/{raw}/" and ":" not in raw.split("/")[0]:
        return raw, ""  # the common case: nothing encoded, no dot segments, no scheme (no segment starts with '.')
    if not raw:
        return None, "the path is empty"
    if "://" in raw or raw.startswith("/") or ":" in raw.split("/")[0]:
        # RFC 3986: a colon in the first segment makes the reference a URI with a scheme (absolute).
        return None, "absolute paths (or a scheme-like first segment) resolve differently across engines"
    if "#" in raw or "?" in raw:
        # Measured: Spark read x.parquet for 'x.parquet#f' and 'x.parquet?q', delta-rs the file of the whole name.
        return None, "the path holds '#' or '?', which end a URI's path: Spark reads the file named before it"
    if any(c in _URI_FORBIDDEN for c in raw):
        return None, "the path holds characters that are not valid in a URI"
    low = raw.lower()
    if "%2f" in low or "%5c" in low or "%00" in low:
        return None, "the path holds an encoded separator"
    for i, c in enumerate(raw):
        if c == "%" and (i + 2 >= len(raw) or not all(h in "0123456789abcdefABCDEF" for h in raw[i + 1:i + 3])):
            return None, "the path holds a malformed percent-escape"
    try:
        decoded = unquote(raw, errors="strict")
    except UnicodeDecodeError:  # x%FF: delta-rs names no file by it (measured: not found), Spark another encoding's
        return None, "the path's percent-escapes are not UTF-8"
    segments = decoded.split("/")
    if any(s in ("", ".", "..") for s in segments):
        return None, "the path has empty, '.' or '..' segments"
    return decoded, ""


def _norm_uri(uri: str) -> str:
    try:
        parsed = urlparse(uri)
    except ValueError:  # an unbalanced '[' in the authority: compared as written, so it is under no other root
        return uri
    scheme = {"s3a": "s3", "s3n": "s3", "abfss": "abfs", "wasbs": "wasb"}.get(parsed.scheme, parsed.scheme)
    return f"{scheme}://{parsed.netloc}{posixpath.normpath(parsed.path) if parsed.path else ''}"


def under_root(location: str, root: str, local_of: Callable[[str], str | None] = local_path_of) -> bool:
    """Whether an absolute location lies under a table root (local: after resolving symlinks); ``local_of`` maps a
    location to the local path the engine reads (see Storage.local_of)."""
    return _under(location, local_of(location), root, local_of(root))


def _under(location: str, local: str | None, root: str, local_root: str | None) -> bool:
    """under_root, given the local paths of both (None: an object-store URI)."""
    if local is not None and local_root is not None:
        if "\x00" in local or "\x00" in local_root:
            return False  # no file system names a file so (os.stat raises): under no root (round 32, fuzzing)
        real, real_root = _real_file(local), _real_dir(local_root)
        return real == real_root or real.startswith(real_root.rstrip("/") + "/")
    if local is not None or local_root is not None:
        return False
    return (_norm_uri(location).rstrip("/") + "/").startswith(_norm_uri(root).rstrip("/") + "/")


def _real_file(path: str) -> str:
    # One lstat per file; the folder's realpath is shared by its files (thousands of files, a few folders).
    # str.rpartition and one os.lstat, not os.path.split/join/islink: a third of the time over 2,000 files (measured).
    if "\x00" in path:  # os.lstat raises ValueError: refused as any path the file system cannot look up (fuzzing)
        raise OSError(errno.EINVAL, "a path holding a NUL byte names no file", path.replace("\x00", "\\x00"))
    parent, _, name = path.rpartition("/")
    if not parent or name in ("", ".", "..") or _is_link(path):
        return os.path.realpath(path)
    return _child(_real_dir(parent), name)


#: A folder holding at least this many of the files checked is listed once (os.scandir: which of its entries are
#: plain files, not symlinks) rather than each file lstat'ed: one readdir instead of thousands of lstat calls.
FOLDER_LISTING_MIN = 16


_PATH = attrgetter("path")  # a FileIdentity's path: the sidecar's outputs sorted by a key read in C
# Whether a sidecar's files are made into the manifest's output_hashes only when its document is read
# (Attestation.outputs_of); ATTEST_FAST=0 makes them as the sidecar is read (tests/test_outputs_of.py).
LAZY_OUTPUTS: bool = fast.ON
_SIZE, _KIND = attrgetter("size"), attrgetter("kind")


def _triples(files: Sequence[DataFile], reuse: Mapping[tuple[str, int], str],
             hashed: Mapping[str, str]) -> list[FileIdentity]:
    """The (path, size, hash, kind) record of each live file: its hash reused from the attestation in force when
    it names the same (path, size), else the one just computed (``hashed``, KeyError where there is none). With
    nothing to reuse (a first record), every hash is the computed one and the records are made in C passes
    (``file_identities``: the same records, tests/test_data_files_bulk.py)."""
    if reuse:
        return [FileIdentity(path=f.path, size=f.size, kind=f.kind, hash=reuse.get((f.path, f.size)) or hashed[f.path])
                for f in files]
    paths = list(map(_PATH, files))
    return file_identities(paths, list(map(_SIZE, files)), list(map(hashed.__getitem__, paths)),
                           list(map(_KIND, files)))


def _plain_by_folder(paths: Sequence[str]) -> dict[str, frozenset[str] | None]:
    """For each folder holding at least FOLDER_LISTING_MIN of ``paths``: the names of its entries that are neither
    symlinks nor folders, spelled as listed; None for a folder that could not be listed (its files are lstat'ed one
    by one, as any other)."""
    counts: dict[str, int] = {}
    for path in paths:
        parent = path.rpartition("/")[0]
        counts[parent] = counts.get(parent, 0) + 1
    out: dict[str, frozenset[str] | None] = {}
    for parent, count in counts.items():
        if count < FOLDER_LISTING_MIN or not parent:
            continue
        try:
            with os.scandir(parent) as entries:
                # DirEntry.is_symlink / is_dir: the d_type readdir gives (an lstat where the file system gives none).
                out[parent] = frozenset(e.name for e in entries
                                        if not e.is_symlink() and not e.is_dir(follow_symlinks=False))
        except (OSError, ValueError):
            out[parent] = None
    return out


# Whether _confine first tries the whole list a folder at a time (_inside_by_folder); ATTEST_FAST=0 judges each file
# (tests/adversarial/test_delta_confinement_folders.py holds the two to each other).
CONFINE_BY_FOLDER: bool = fast.ON


def _inside_by_folder(locals_: Sequence[str | None], plain: Mapping[str, frozenset[str] | None],
                      prefixes: tuple[str, ...]) -> bool:
    """True only when every file is local, listed as a plain file in its folder (``plain``, from _plain_by_folder),
    and that folder's real path with a trailing "/" starts with one of ``prefixes`` (the real local roots, each
    ending in "/"): then _real_in gives each file its real folder's child, which starts with the same prefix — the
    per-file check finds every one inside. False decides nothing (the files are judged one by one)."""
    names_by: dict[str, list[str]] = {}
    for local in locals_:
        if local is None:
            return False
        parent, _, name = local.rpartition("/")
        names = names_by.get(parent)
        if names is None:
            names_by[parent] = [name]
        else:
            names.append(name)
    for parent, names in names_by.items():
        listed = plain.get(parent)
        if listed is None or not listed.issuperset(names):
            return False  # a folder not listed; a name not a plain file there (a symlink, a folder, missing, ...)
        real = _real_dir(parent)
        if not (real if real.endswith("/") else f"{real}/").startswith(prefixes):
            return False
    return True


def _real_in(path: str, plain: Mapping[str, frozenset[str] | None]) -> str:
    """_real_file, with the plain files of listed folders known (``plain``, from _plain_by_folder): a name listed as
    a plain file is not lstat'ed; any other (a symlink, a folder, missing, or spelled otherwise than listed — a file
    system folding case or Unicode forms) is resolved as _real_file does."""
    parent, _, name = path.rpartition("/")
    names = plain.get(parent)
    if names is None or name in ("", ".", "..") or name not in names:
        return _real_file(path)
    return _child(_real_dir(parent), name)


@functools.lru_cache(maxsize=4096)
def _real_dir(path: str) -> str:
    # A folder as a file, cached: one lstat per new folder, and a folder that is not a symlink is its real parent's
    # child (os.path.realpath would lstat every component again for each of a partitioned table's thousands of folders).
    return _real_file(path)


def _is_link(path: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except (OSError, ValueError):  # missing (reported where it is read), or a NUL in the name
        return False


def _child(folder: str, name: str) -> str:
    return f"{folder}{name}" if folder.endswith("/") else f"{folder}/{name}"


# ---- the metadata map --------------------------------------------------------------------------------------------
def encode_keys(manifest: Manifest, *, version: str, sidecar_rel: str, sidecar_hash: str,
                envelope: str | None = None) -> dict[str, str]:
    """The metadata map of one attestation: manifest fields (no ``output_hashes``: the sidecar has the files) under
    ``recipe_manifest.``, carrier metadata under ``recipe_attest.`` (docs/carrier-properties.md); ``envelope``: the
    BLAKE3 of a signed attestation's envelope."""
    # The document of the manifest without its outputs (the map holds their count): never one dict an output made
    # only to be dropped.
    outputs = manifest.output_hashes
    keys = props.to_properties(manifest.with_outputs(None).to_dict())
    keys[props.KEY_LAYOUT] = props.LAYOUT
    keys[props.KEY_VERSION] = version
    keys[props.KEY_SIDECAR_PATH] = sidecar_rel
    keys[props.KEY_SIDECAR_HASH] = sidecar_hash
    if outputs is not None:
        keys[props.KEY_OUTPUTS_COUNT] = str(len(outputs))
    if envelope is not None:
        keys[props.KEY_ENVELOPE] = envelope
    return keys


def _table_part_kept(att: Attestation, live: LiveVersion, check: ContentCheck) -> bool:
    """Whether the table part of ``live``'s reader view is the attested one, but for what rewrites change by nature
    (the files' modification times, and the format's ``check.view_keys``): the check verify makes after a passing
    content check (attest/verify/table.py ``_check_binding``)."""
    if att.view is None:
        return False
    current, _unbound = live.view.bound_as(att.view)
    return table_kept_by_rewrites(att.view.table, current.table, {"file_times", *check.view_keys})


def _is_hex64(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _tampered(message: str, path: str = "") -> Problem:
    return Problem(Code.CARRIER_TAMPERED, message, path)


# ---- the core ----------------------------------------------------------------------------------------------------
class KeptCopyMismatch(OSError):
    """A kept copy read in pieces turned out not to be the bytes it was recorded as (or changed while read): the
    reader takes it as not there (``AttestedTable._kept_chunks``)."""


class NothingToCarry(CarrierError):
    """``record(carry_only=True)`` found no attestation to carry forward (``carry_forward`` returns None)."""

    code = Code.NOTHING_TO_CARRY


class AttestedTable(ABC):
    """Shared attestation logic; a table format subclasses it (see module docstring)."""

    kind: str = ""
    noun: str = "version"
    sidecar_dir: str = ""  # relative to ``storage``'s root
    pointer_dir: str = ""  # detached attestations, relative to ``storage``'s root
    storage: Storage
    allow_external: bool = False
    # While ``record`` hashes on a hasher that digests rows too (Spark executors): its digests (carriers/content_store)
    _content_pass: ContentPass | None = None
    # Whether a write's warnings (WriteResult.warnings) are logged too, on logger ``carriers.core``: on for library
    # callers and the Spark hook; `attest record` turns it off and says them itself, once (stderr and --json).
    log_warnings: bool = True
    _said: list[str] | None = None  # the warnings of the write under way (``_warn``)
    # (BLAKE3, sidecar) of the sidecar this carrier wrote last (``_write``), and the one ``_check_in_force`` may take
    # as read when the stored bytes are those (``_read_sidecar``).
    _written: tuple[str, Sidecar] | None = None
    _in_hand: tuple[str, Sidecar] | None = None

    # ---- what a format supplies ----------------------------------------------------------------------------------
    @property
    @abstractmethod
    def reference(self) -> str:
        """The table as users name it (path, URI, iceberg://...)."""

    @property
    @abstractmethod
    def roots(self) -> list[str]:
        """Where the table's files may live (data files outside them are refused unless ``allow_external``)."""

    @abstractmethod
    def _version(self, version: str | int | None) -> Version | None:
        """The named version (None: current); None when the table has no version yet."""

    @abstractmethod
    def _data_version(self) -> Version:
        """The newest version whose commit changed data (what record() attests by default)."""

    @abstractmethod
    def _live(self, v: Version) -> LiveVersion:
        """Live files, reader view and identity of ``v`` as the engine resolves them."""

    @abstractmethod
    def _identity(self, v: Version) -> str:
        """The table's stable identity (cheap)."""

    @abstractmethod
    def _carried(self, v: Version) -> Carried | None:
        """The attestation keys in force at ``v`` (its own, a follow-up's, an earlier one's), or None."""

    @abstractmethod
    def _changes(self, attested: str, v: Version) -> Changes:
        """What the commits after version ``attested`` up to ``v`` did."""

    @abstractmethod
    def _commit(self, v: Version, keys: dict[str, str], manifest: Manifest) -> None:
        """Make ``keys`` the attestation in force for ``v`` (a metadata commit, a follow-up snapshot, ...)."""

    @abstractmethod
    def _built_on(self, v: Version) -> Version | None:
        """The previous version when ``v``'s data commit read or built on it (it is then an input), else None."""

    @abstractmethod
    def _env(self, dialect: str | None, engines: Mapping[str, str] | None, v: Version) -> str:
        """The environment identity of an attestation of ``v``."""

    # ---- content digests (issue 32; docs/content-digest.md, "For carriers") ---------------------------------------
    def file_content_digests(self, version: Version, files: Sequence[DataFile], *,
                             progress: Progress | None = None, statistics: bool = False) -> dict[str, ContentDigest]:
        """The content digest (attest.content) of each data file's rows as every reader of ``version`` gets them
        (deletion vectors / delete files applied, columns by the identity engines use, partition values folded in),
        keyed by ``DataFile.path``. A file not in storage is left out (the caller reports it: ``file_missing``); one
        there whose rows cannot be read raises ``table_unreadable`` naming it (never "missing"). A format without
        content digests raises UnsupportedTableError. ``statistics``: also hold each file's recorded statistics (row
        count, null counts, bounds: what readers skip files and answer COUNT / MIN / MAX by) to its rows, raising
        content_changed (content_store.StatisticsMismatch) when they misstate them — the judge asks it of the files a
        rewrite added, whose statistics no attested byte binds."""
        from attest.errors import UnsupportedTableError

        raise UnsupportedTableError(f"{self.kind} tables do not compute content digests yet")

    def content_reader(self, version: Version, files: Sequence[DataFile], *,
                       statistics: bool = False) -> ContentReader:
        """What ``file_content_digests`` runs per file, as a picklable reader of ``files`` (DataFile.path) at
        ``version`` — for Spark executors to digest files in the task that hashes their bytes (``statistics``: as
        ``file_content_digests``'s). Default: UnsupportedTableError (as ``file_content_digests``)."""
        from attest.errors import UnsupportedTableError

        raise UnsupportedTableError(f"{self.kind} tables do not compute content digests yet")

    def content_row_ids(self, version: Version) -> str | None:
        """The name of the row-tracking ids folded into ``version``'s content digests (docs/content-digest.md,
        "Row-tracking ids"; a sidecar's ``content.row_ids``) when its readers get per-row ids a rewrite must keep,
        else None. Default: None (the format folds in none)."""
        return None

    def readers_agree(self, version: Version, files: Sequence[DataFile]) -> None:
        """Raise AttestError ``table_inconsistent`` where readers of ``version`` would read ``files`` differently, for
        an attestation recorded without a content digest (the digest refused as ``unsupported_table``): the checks
        the digest makes of how each reader plans and reads the files, without digesting the rows. Default: none
        (a format whose view already binds every such disagreement)."""
        return None

    def content_reuse_blocked(self, previous: Attestation, version: Version) -> set[str] | None:
        """The data files whose content digest recorded by ``previous`` (the attestation in force) must not be reused
        for ``version`` although their reader-view entry is the same: where the rows readers get from a file depend
        on more than its entry (Iceberg: the delete files applied to it, added by later snapshots). None: reuse none.
        Default: none blocked (a Delta file's deletion vector is in its entry)."""
        return set()

    def content_rows_read(self, attested: Version, paths: Sequence[str]) -> dict[str, int]:
        """The rows readers of ``attested`` got from each of ``paths`` that has deletes applied to it, where the
        table's own metadata says how many (Delta: the add's ``numRecords`` less its deletion vector's
        ``cardinality``): a recorded content digest of another row count was made without the deletes. Default:
        none known."""
        return {}

    def content_redigest(self, att: Attestation, attested: Version, paths: Sequence[str]
                         ) -> dict[str, ContentDigest | str]:
        """Each of ``paths`` (attested data files a rewrite removed) whose rows readers of ``attested`` got depend on
        more than its own entry (Iceberg: delete files applied to it), digested again from its bytes and those of the
        delete files, which must be those ``att`` recorded (its files' size and BLAKE3, its view's delete plan): a
        recorded digest that is not it is no evidence (a record reused the rows before a delete changed them). A
        string says why a file could not be read again; files whose rows depend on their entry alone, or ``attested``
        gone, are left out. Default: none."""
        return {}

    def content_widening(self, attested_view: Mapping[str, Any], view: Mapping[str, Any]) -> dict[str, str] | None:
        """The columns widened between two reader views' table parts (name → ``integer → long``) when a type
        widening is their only difference (Delta's typeWidening; docs/content-digest.md, "Delta type widening"):
        the judge then re-digests the removed files as the wider types (``widened_digests``). None: not one.
        Default: None."""
        return None

    def widened_digests(self, attested: Version, version: Version, files: Sequence[DataFile],
                        identities: Mapping[str, tuple[int, str]], columns: frozenset[str]
                        ) -> dict[str, tuple[ContentDigest, ContentDigest]] | str:
        """Each attested file's digest as ``attested`` reads it and as ``version`` reads it after a type widening of
        ``columns`` (names), from one read of bytes that must be ``identities[path]`` (size, BLAKE3); or why not.
        Default: not supported."""
        return f"{self.kind} tables are not re-digested after a type widening"

    def content_type_changes(self, attested: Version, version: Version) -> list[str]:
        """The columns whose declared type changed between ``attested`` and ``version`` (``id: integer → long
        (widened)``), for the message of a rewrite judged by content: a digest encodes each value's type
        (docs/content-digest.md, "Delta type widening"). Default: none named."""
        return []

    def rewrites_between(self, attested: Version, version: Version) -> list[Rewrite] | None:
        """The commits after ``attested`` up to ``version`` that touched files, when every one is a rewrite that
        declares no data change and changes nothing else (Delta: dataChange=false adds and removes, no metaData or
        protocol action; Iceberg: operation=replace), oldest first; None when any is not (or the history between them
        is gone). An empty list: no commit touched files."""
        return None

    # ---- naming ------------------------------------------------------------------------------------------------
    def _resolve(self, version: str | int | None) -> Version:
        v = self._version(version)
        if v is None:
            raise VersionNotFoundError(f"{self.reference} has no {self.noun} yet")
        return v

    def table_state_name(self) -> str:
        return self.reference

    @property
    def signed_uri(self) -> str:
        """The table as signed statements name it and trust policies match it: the same for every writer and reader
        of the table (Delta overrides it with the table's absolute URI)."""
        return self.reference

    @property
    def policy_locations(self) -> tuple[str, ...]:
        """Where the table is stored, when that is not ``signed_uri``: trust policies match these names too."""
        return ()

    @property
    def policy_aliases(self) -> tuple[str, ...]:
        """Names readers give this table state besides ``reference`` (an Iceberg catalog table's branch:
        ``<table>.branch_<b>``, as Spark and an audit's line name it): trust policies match these too."""
        return ()

    @property
    def head_branch(self) -> str | None:
        """The branch other than main this carrier reads the head of (an Iceberg carrier opened on one), else None."""
        return None

    @property
    def head_tag(self) -> str | None:
        """The tag this carrier reads the snapshot of as its head (an Iceberg carrier opened on one), else None."""
        return None

    def policy_aliases_at(self, v: Version) -> tuple[str, ...]:
        """``policy_aliases`` and the names readers give version ``v`` alone (an Iceberg tag's ``<table>.tag_<x>``)."""
        return self.policy_aliases

    def more_policy_names(self) -> Callable[[], tuple[str, ...]] | None:
        """More names trust policies match, found by a search only when a policy asks (``TableState.more_locations``):
        None when a format has none (Iceberg: the table's other configured catalog names)."""
        return None

    # ---- reading -----------------------------------------------------------------------------------------------
    _read_once: bool = False

    def _now(self) -> None:
        """Every reading operation after a carrier's first sees the table as it is now: a carrier kept in a notebook,
        a service or an audit must not answer from what it read earlier (new commits, files rewritten in place)."""
        if self._read_once:
            self._forget()
        self._read_once = True

    @abstractmethod
    def _forget(self) -> None:
        """Drop what this carrier has read of the table (a format's caches); the next read starts afresh."""

    def read(self, version: str | int | None = None) -> Attestation | None:
        """The attestation in force at ``version`` (default current); None when there is none."""
        self._now()
        v = self._version(version)
        if v is None:
            return None
        carried = self._carried(v)
        return None if carried is None else self._decode(carried, self._identity(v))

    def _decode(self, carried: Carried, identity: str) -> Attestation:
        keys = carried.keys
        problems: list[Problem] = list(carried.problems)
        manifest_part = {k: v for k, v in keys.items() if k.startswith(props.PREFIX)}
        ours = {k: v for k, v in keys.items() if k.startswith(props.CARRIER_PREFIX)}
        try:
            document, legacy = props.from_properties(manifest_part)
        except props.KeyMappingError as exc:
            problems.append(_tampered(f"the recipe_manifest.* keys do not form a manifest: {exc}"))
            document, legacy = {}, {}
        if legacy:
            return self._decode_legacy(carried, document, legacy, ours, problems, identity)
        if not ours:
            return self._decode_foreign(carried, document, problems)
        unknown = sorted(set(ours) - props.CARRIER_KEYS)
        if unknown:
            problems.append(_tampered(f"unknown carrier key(s) {', '.join(unknown[:3])}"))
        if ours.get(props.KEY_LAYOUT) != props.LAYOUT:
            problems.append(_tampered(f"{props.KEY_LAYOUT} is {ours.get(props.KEY_LAYOUT)!r}, not {props.LAYOUT!r}"))
        if "output_hashes" in document:
            problems.append(_tampered("output_hashes are carried in the metadata map; this layout keeps them only in "
                                      "the sidecar"))
        version = ours.get(props.KEY_VERSION)
        if not version:
            problems.append(_tampered(f"{props.KEY_VERSION} is missing: the attestation is bound to no {self.noun}"))
        sidecar = self._read_sidecar(ours.get(props.KEY_SIDECAR_PATH), ours.get(props.KEY_SIDECAR_HASH), problems)
        envelope_rel = None if props.KEY_ENVELOPE not in ours else \
            self._envelope_ref(ours[props.KEY_ENVELOPE], problems)
        files = inputs = outputs_of = None
        if sidecar is not None:
            files, inputs = sidecar.files, sidecar.inputs
            if sidecar.legacy:
                problems.append(_tampered("a current-layout attestation names a first-wave (v1) sidecar"))
            if sidecar.table != identity:
                problems.append(_tampered(f"the sidecar was written for table {sidecar.table}, not {identity}"))
            if version is not None and sidecar.attested_version != version:
                problems.append(_tampered(f"the sidecar describes {self.noun} {sidecar.attested_version}, the "
                                          f"metadata binds {self.noun} {version}"))
            self._check_inputs(document, sidecar, problems)
            count = ours.get(props.KEY_OUTPUTS_COUNT)
            if count is not None:
                if count != str(len(sidecar.files)):
                    problems.append(_tampered(f"{props.KEY_OUTPUTS_COUNT} is {count}, the sidecar lists "
                                              f"{len(sidecar.files)} files", "$.output_hashes"))
                # The manifest's list in build order (sorted by path), as written: made when the document is read
                # (Attestation.outputs_of), not by a verification, which judges it from the files.
                ordered = sorted(sidecar.files, key=_PATH)
                if LAZY_OUTPUTS and "output_hashes" not in document:
                    outputs_of = ordered
                else:
                    document["output_hashes"] = [{"hash": f.hash, "path": f.path} for f in ordered]
        return Attestation(document=document, attested_version=version, location=self.reference, files=files,
                           inputs=inputs, problems=tuple(problems), outputs_of=outputs_of,
                           manifest_identity=None if sidecar is None else sidecar.manifest,
                           view=None if sidecar is None else sidecar.view, origin="recipe-attest",
                           binding_note=carried.where, table_identity=None if sidecar is None else sidecar.table,
                           sidecar_digest=None if sidecar is None else ours.get(props.KEY_SIDECAR_HASH),
                           content=None if sidecar is None else sidecar.content,
                           envelope_ref=envelope_rel,
                           envelope_loader=None if envelope_rel is None else
                           functools.partial(self._read_envelope, ours[props.KEY_ENVELOPE]))

    def _decode_foreign(self, carried: Carried, document: dict[str, Any], problems: list[Problem]) -> Attestation:
        producer = document.get("producer")
        if isinstance(producer, dict) and producer.get("name") == PRODUCER_NAME:
            # Our attestations always carry their binding and sidecar: these keys were removed.
            problems.append(_tampered(f"the attestation names producer {PRODUCER_NAME} but its recipe_attest.* "
                                      "binding and sidecar keys are missing"))
        return Attestation(document=document, attested_version=carried.foreign_binding, location=self.reference,
                           problems=tuple(problems), origin="foreign",
                           binding_note=carried.foreign_note or carried.where)

    def _decode_legacy(self, carried: Carried, document: dict[str, Any], legacy: dict[str, str],
                       ours: dict[str, str], problems: list[Problem], identity: str) -> Attestation:
        """The first-wave layout: binding keys under ``recipe_manifest._*``, outputs inline up to 16 (read only)."""
        if ours:
            problems.append(_tampered("the metadata mixes first-wave and current attestation keys"))
        version = legacy.get(props.LEGACY_KEY_VERSION)
        if version is None or not is_signed_digits(version):
            problems.append(_tampered(f"{props.LEGACY_KEY_VERSION} is {version!r}, not a {self.noun}"))
        where = legacy.get(props.LEGACY_KEY_OUTPUTS_WHERE, "inline")
        path, digest = legacy.get(props.LEGACY_KEY_SIDECAR_PATH), legacy.get(props.LEGACY_KEY_SIDECAR_HASH)
        if path is None and digest is not None:
            path = f"{self.sidecar_dir}/{sidecar_name(digest)}"
        sidecar = self._read_sidecar(path, digest, problems)
        files = inputs = None
        if sidecar is not None:
            files, inputs = sidecar.files, sidecar.inputs
            if sidecar.table is not None and sidecar.table != identity:
                problems.append(_tampered(f"the sidecar was written for table {sidecar.table}, not {identity}"))
            if sidecar.attested_version != version:
                problems.append(_tampered(f"the sidecar describes {self.noun} {sidecar.attested_version}, the "
                                          f"metadata binds {self.noun} {version}"))
            self._check_inputs(document, sidecar, problems)
            if where == "sidecar":
                if "output_hashes" in document:
                    problems.append(_tampered("output_hashes are both inline and declared to live in the sidecar"))
                document["output_hashes"] = [{"hash": f.hash, "path": f.path}
                                             for f in sorted(sidecar.files, key=_PATH)]
        elif where == "sidecar" and not any(p.code in (Code.SIDECAR_MISSING, Code.SIDECAR_MISMATCH)
                                            for p in problems):
            problems.append(Problem(Code.SIDECAR_MISSING, "output_hashes live in a sidecar that is not named"))
        if where not in ("inline", "sidecar"):
            problems.append(_tampered(f"{props.LEGACY_KEY_OUTPUTS_WHERE} is {where!r}"))
        count = legacy.get(props.LEGACY_KEY_OUTPUTS_COUNT)
        if where == "inline" and count == "0" and "output_hashes" not in document:
            document["output_hashes"] = []  # an empty list has no keys
        listed = document.get("output_hashes")
        if count is not None and isinstance(listed, list) and count != str(len(listed)):
            problems.append(_tampered(f"{props.LEGACY_KEY_OUTPUTS_COUNT} is {count}, but {len(listed)} output hashes "
                                      "were found", "$.output_hashes"))
        if sidecar is None and not any(p.code in (Code.SIDECAR_MISSING, Code.SIDECAR_MISMATCH) for p in problems):
            problems.append(Problem(Code.SIDECAR_MISSING, "the attestation names no sidecar; every attestation this "
                                    "project writes has one"))
        return Attestation(document=document, attested_version=version, location=self.reference, files=files,
                           inputs=inputs, problems=tuple(problems),
                           manifest_identity=None if sidecar is None else sidecar.manifest,
                           view=None if sidecar is None else sidecar.view, origin="legacy",
                           binding_note=carried.where, table_identity=None if sidecar is None else sidecar.table)

    def _check_inputs(self, document: dict[str, Any], sidecar: Sidecar, problems: list[Problem]) -> None:
        pair = inputs_identity(sidecar.inputs) or (None, None)
        if (document.get("inputs_hash"), document.get("inputs_proof_class")) != pair:
            problems.append(_tampered("inputs_hash / inputs_proof_class do not match the observed inputs recorded in "
                                      "the sidecar", "$.inputs_hash"))

    def _read_sidecar(self, path: str | None, digest: str | None, problems: list[Problem]) -> Sidecar | None:
        if not path or not digest:
            # Every attestation this project writes names its sidecar: keys that are gone were removed.
            problems.append(_tampered("the attestation's sidecar keys are missing or blank: the attestation cannot be "
                                      "read without its sidecar"))
            return None
        expected = f"{self.sidecar_dir}/{sidecar_name(digest)}"
        if path != expected or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            # Untrusted metadata never sends the reader outside the sidecar folder or to a name not its hash.
            problems.append(_tampered(f"sidecar reference {path!r} is not {self.sidecar_dir}/<blake3>.json with the "
                                      "recorded BLAKE3"))
            return None
        if self._in_hand is not None and self._in_hand[0] == digest and self._stored_as(path, digest):
            # The bytes stored under the recorded BLAKE3 are the ones this carrier encoded from this sidecar (BLAKE3
            # binds them): they decode to it, so it is not parsed again (~2 s of CPU at 200,000 files, docs/scale.md).
            return self._in_hand[1]
        try:
            # Read a piece at a time and parsed as it is read (Sidecar.decode_chunks): never held whole.
            chunks = self.storage.read_chunks(path)
            if chunks is None:
                # Deleted by table cleanup, kept elsewhere under the same BLAKE3: each copy recorded under it, read in
                # pieces too; one whose bytes are not that BLAKE3 is as if it were not there.
                for kept in self._kept_chunks(digest):
                    try:
                        return Sidecar.decode_chunks(kept, digest)
                    except KeptCopyMismatch:
                        continue
                problems.append(Problem(Code.SIDECAR_MISSING, "the attestation's sidecar is missing", path))
                return None
            return Sidecar.decode_chunks(chunks, digest)
        except StoreReadError as exc:  # the store failed mid-read: its coded failure, as a whole read raised it
            raise exc.error from None
        except OSError as exc:
            problems.append(Problem(Code.SIDECAR_MISSING, f"the sidecar cannot be read: {exc}", path))
            return None
        except SidecarError as exc:
            problems.append(Problem(Code.SIDECAR_MISMATCH, str(exc), path))
            return None

    def _stored_as(self, path: str, digest: str) -> bool:
        """Whether the bytes stored at ``path`` now are of BLAKE3 ``digest`` (False when they cannot be read: the
        ordinary read then says why)."""
        from blake3 import blake3

        try:
            chunks = self.storage.read_chunks(path)
            if chunks is None:
                return False
            hasher = blake3()
            for chunk in chunks:
                hasher.update(chunk)
            return bool(hasher.hexdigest() == digest)
        except (OSError, StoreReadError):
            return False

    def _kept_copy(self, digest: str) -> bytes | None:
        """The bytes of BLAKE3 ``digest`` (a sidecar, an envelope) from where table maintenance does not delete them
        (Iceberg: a Puffin file the table metadata registers, carriers/iceberg/kept.py); the caller checks the hash."""
        return None

    def _kept_chunks(self, digest: str) -> Iterator[Iterable[bytes]]:
        """Each copy of BLAKE3 ``digest`` kept where table maintenance does not delete it, as pieces (a sidecar is
        never held whole); a copy whose bytes turn out not to be ``digest`` ends in KeptCopyMismatch. By default
        the one ``_kept_copy`` gives."""
        data = self._kept_copy(digest)
        if data is not None:
            yield (data,)

    def _envelope_rel(self, digest: str) -> str:
        return f"{self.sidecar_dir}/{digest}{ENVELOPE_SUFFIX}"

    def _envelope_ref(self, digest: str, problems: list[Problem]) -> str | None:
        """Where the envelope the metadata names lives; a malformed key is tampering (and names nothing)."""
        if not _is_hex64(digest):
            # Untrusted metadata never names a path: only <sidecar dir>/<blake3>.dsse.json is ever read.
            problems.append(_tampered(f"{props.KEY_ENVELOPE} is {digest[:80]!r}, not a BLAKE3 digest"))
            return None
        return self._envelope_rel(digest)

    def _read_envelope(self, digest: str) -> tuple[bytes | None, Problem | None]:
        """(envelope bytes, why they are not there): read when a trust policy judges the signature, never before."""
        from attest.canonical import blake3_hex

        rel = self._envelope_rel(digest)
        try:
            data = self.storage.read(rel)
        except OSError as exc:
            return None, Problem(Code.SIGNATURE_MISSING, f"the attestation's envelope cannot be read: {exc}", rel)
        if data is None:
            data = self._kept_copy(digest)
        if data is None:
            return None, Problem(Code.SIGNATURE_MISSING, "the metadata names a signed envelope that is missing", rel)
        if blake3_hex(data) != digest:
            return None, Problem(Code.SIGNATURE_INVALID, "the envelope's bytes are not the ones the metadata names "
                                 f"({props.KEY_ENVELOPE} differs from their BLAKE3)", rel)
        return data, None

    # ---- state -------------------------------------------------------------------------------------------------
    def list_files(self, version: str | int | None = None) -> list[DataFile]:
        self._now()
        v = self._version(version)
        return [] if v is None else self._live(v).files

    def state(self, version: str | int | None = None) -> TableState:
        self._now()
        v = self._version(version)
        if v is None:
            # Another branch may have rows (a write-audit-publish into a new table writes its branch alone).
            heads = tuple(self._other_heads(None)) if version is None else ()
            return TableState(table=self.reference, table_format=self.kind, version=f"(no {self.noun})",
                              attestation=None, live_files=(),
                              notes=(f"main has no {self.noun}: the table's {self.noun}s are on other branches"
                                     if heads else f"the table has no {self.noun} yet",), other_heads=heads)
        live = self._live(v)
        carried = self._carried(v)
        att = None if carried is None else self._decode(carried, live.identity)
        notes = list(live.notes)
        changes = Changes("none")
        if att is not None and att.attested_version is not None:
            try:
                changes = self._changes(att.attested_version, v)
            except VersionNotFoundError as exc:
                att = replace(att, problems=(*att.problems, _tampered(exc.message)))
            if not changes.complete:
                notes.append(changes.detail)
            if carried is not None and carried.note:
                notes.append(carried.note)
        if att is None:
            notes.extend(self._unattested_notes(v))
        elif isinstance(att.content, dict) and att.content.get("row_ids") is None and not att.problems:
            with contextlib.suppress(AttestError):
                row_ids = self.content_row_ids(v)
                if row_ids is not None:
                    notes.append(f"the {self.noun}'s rows carry row-tracking ids ({row_ids}) that this attestation's "
                                 "content digest does not bind (recorded before they were): a later rewrite is not "
                                 "carried over by content; `attest record` binds them")
        check = self._content_check(att, v, live) if att is not None and changes.kind == "compaction" else None
        return TableState(table=self.reference, table_format=self.kind, version=v.id, attestation=att,
                          live_files=tuple(live.files), changes=changes.kind,
                          change_detail=changes.detail if changes.complete else "", notes=tuple(dict.fromkeys(notes)),
                          changes_complete=changes.complete,
                          view=live.view, problems=tuple(live.problems), uri=self.signed_uri,
                          locations=(*self.policy_locations, *self.policy_aliases_at(v)),
                          more_locations=self.more_policy_names(),
                          content_check=check, other_heads=tuple(self._other_heads(v)) if version is None else (),
                          other_tags=tuple(self._other_tags(v)) if version is None else (),
                          branch=self.head_branch if version is None else None,
                          tag=self.head_tag if version is None else None)

    def _content_check(self, att: Attestation, v: Version, live: LiveVersion, progress: Progress | None = None,
                       computed: dict[str, Any] | None = None) -> ContentCheck | None:
        """Rewrites since the attested version checked by content (carriers/content_store.py), when the attestation
        binds a content digest and read back without a problem; None otherwise."""
        from carriers.content_store import judge

        if att.content is None or att.problems or att.attested_version is None or live.problems:
            return None
        try:
            return judge(self, att, self._resolve(att.attested_version), v, live, progress=progress,
                         computed=computed)
        except AttestError as exc:
            return ContentCheck(passed=False, code=exc.code.value, message=exc.message)

    def _unattested_notes(self, v: Version) -> list[str]:
        """Why no attestation was found at ``v``, when the format can tell (expired history, ...)."""
        return []

    def _other_heads(self, v: Version | None) -> list[tuple[str, str]]:
        """What readers of the table by its name may read that its head ``v`` (None: it has none) is not: the heads of
        its other branches (branch, snapshot id), when the format has branches. A verdict of the table names what it
        did not check."""
        return []

    def _other_tags(self, v: Version | None) -> list[tuple[str, str]]:
        """The tags readers may read by name (``t.tag_x``) at snapshots neither the head ``v`` nor another branch's
        head is, as (tag, snapshot id), when the format has tags: an audit gives each a line."""
        return []

    # ---- bytes -------------------------------------------------------------------------------------------------
    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        """BLAKE3 of each file's bytes at the location the engine reads, keyed by ``DataFile.path`` (another hasher,
        e.g. Spark executors', is passed to ``verify_state`` / ``record`` instead)."""
        return hash_locations(self.storage, files, progress=progress, roots=self.roots)

    def stored_type_problems(self, version: str, files: Sequence[DataFile]
                             ) -> tuple[list[tuple[str, str]], list[str]]:
        """The record's stored-type rule held to the data files of ``version`` whose bytes were just hashed
        (``verify --level bytes``: docs/verify.md, "Stored types"): ``(path, reason)`` for each Parquet data file
        whose readers read other values than it stores, and the paths of those not read as Parquet (not judged).
        Each file's footer is read, and only the columns it flags (content_store.stored_type_problems)."""
        from carriers.content_store import stored_type_problems

        judge = self._stored_types_judge(self._resolve(version))
        if judge is None:
            return [], []
        return stored_type_problems(self.storage, [f for f in files if f.kind == "data"], judge)

    def _stored_types_judge(self, v: Version) -> Callable[[Any, Any], str | None] | None:
        """Why readers of ``v`` read other values than a Parquet data file stores (``judge(parquet, handle)``), the
        format's rule at record; None: the format has none."""
        return None

    def stored_files(self, files: Sequence[DataFile]) -> dict[str, int | str]:
        """What storage holds at each file's location (keyed by ``DataFile.path``): the size of the regular file or
        object there, or what is there instead (``"missing"``, ``"a FIFO"``, ...), found without opening any
        (``verify --level files``: carriers/storage/listing.py)."""
        from carriers.storage.listing import stored_sizes

        return stored_sizes(self.storage, files, self.roots)

    def _confine(self, files: Sequence[DataFile], problems: list[Problem]) -> None:
        """Data files must live under the table root (symlinks resolved): a hostile table must not make an auditor
        read /dev/zero, a FIFO or another tenant's data."""
        if self.allow_external:
            return
        _real_dir.cache_clear()  # folders may have become symlinks since the last check in this process
        roots = self.roots
        local_of = self.storage.local_of
        bounds = [(root, local_of(root)) for root in roots]  # once, not once per file
        # As _under, with each local root resolved once: a local file is inside when its real path is a local root or
        # under one; a store's file when it is under a store root.
        real_roots = [_real_dir(local_root) for _, local_root in bounds if local_root is not None]
        prefixes = tuple(r.rstrip("/") + "/" for r in real_roots)
        store_roots = [root for root, local_root in bounds if local_root is None]
        # A plain absolute path is its own local path (local_path_of): only URIs are parsed.
        locals_ = [loc if loc[:1] == "/" else local_of(loc) for loc in (f.location for f in files)]
        plain = _plain_by_folder([local for local in locals_ if local is not None])
        if CONFINE_BY_FOLDER and not store_roots and _inside_by_folder(locals_, plain, prefixes):
            return  # what the loop below finds of each file: inside (no problem), judged a folder at a time
        for f, local in zip(files, locals_, strict=True):
            if local is not None:
                real = _real_in(local, plain)
                inside = real in real_roots or real.startswith(prefixes)
            else:
                inside = any(_under(f.location, None, root, None) for root in store_roots)
            if not inside:
                problems.append(Problem(Code.FILE_OUTSIDE_TABLE, f"{f.location} is outside the table's locations "
                                        f"({', '.join(roots)}); pass allow_external / --allow-external-files to read "
                                        "it", f.path))

    # ---- writing -----------------------------------------------------------------------------------------------
    def write(self, manifest: Manifest, **options: Unpack[WriteOptions]) -> WriteResult:
        """Attest ``version`` (default: the latest data version) with a manifest built elsewhere (signed by
        ``signer`` when given; see WriteOptions, carriers/base.py)."""
        keywords_of(WriteOptions, options, "write")
        version, files = options.get("version"), options.get("files")
        v = self._data_version() if version is None else self._resolve(version)
        live = self._live(v)
        live.refuse_if_inconsistent(f"{self.reference} {self.noun} {v.id} cannot be attested")
        document = manifest.to_dict()
        outputs: list[dict[str, str]] | None = document.get("output_hashes")
        if files is None:
            files = triples_for(manifest.output_hashes or (), live.files, f"{self.noun} {v.id}")
        elif outputs is not None and {(o.get("path"), o["hash"]) for o in outputs} != {(f.path, f.hash)
                                                                                      for f in files}:
            raise CarrierError("the manifest's output_hashes and the given file triples disagree")
        try:
            return self._write(v, manifest, list(files), list(options.get("inputs", ())), live, options.get("signer"))
        finally:
            self._written = None  # no check after this write: the sidecar is not held

    def _write(self, v: Version, manifest: Manifest, files: list[FileIdentity], inputs: list[ObservedInput],
               live: LiveVersion, signer: Signer | None = None, *, content: dict[str, Any] | None = None,
               progress: Progress | None = None, identity: str | None = None,
               encoded: tuple[dict[str, Any], bytes] | None = None) -> WriteResult:
        if content is None:
            from carriers.content_store import record_content

            content = record_content(self, v, live, self._in_force(v), progress=progress)
        sidecar = build_sidecar(files, inputs, v.id, manifest, table=live.identity, view=live.view, content=content,
                                identity=identity)
        # Sidecar (and envelope) first: metadata must never name a file that is not there yet. Written a piece at a
        # time under <sidecar dir>/<its BLAKE3>.json (sidecar_name): the bytes are never held whole.
        rel, digest = self.storage.write_once_stream(self.sidecar_dir, ".json", sidecar.chunks())
        self._written = (digest, sidecar)
        envelope_rel, envelope_digest = (None, None) if signer is None else \
            self.sign(signer, v.id, manifest, sidecar_digest=digest, view=live.view, encoded=encoded)
        keys = encode_keys(manifest, version=v.id, sidecar_rel=rel, sidecar_hash=digest, envelope=envelope_digest)
        own = self._said is None  # record() collects from its start (an input it observed may have warned)
        if own:
            self._said = []
        try:
            self._commit(v, keys, manifest)
            warnings = tuple(self._said or ())
        finally:
            if own:
                self._said = None
        return WriteResult(location=self.reference, attested_version=v.id, sidecar=self.storage.location(rel),
                           manifest=manifest, warnings=warnings,
                           envelope=None if envelope_rel is None else self.storage.location(envelope_rel),
                           signer=None if signer is None else signer.key_id,
                           content=None if content is None else str(content.get("rows")),
                           continues=None if content is None else content.get("continues"))

    def _warn(self, code: Code, message: str, *, logger: str = __name__) -> str:
        """Say ``message`` as a warning of the record or observation under way: ``<code>: <message>`` in its
        WriteResult.warnings (``observe_warned``'s), and logged on ``logger`` unless ``log_warnings`` is off (never
        both by the CLI). The text, for the caller to keep."""
        text = f"{code.value}: {message}"
        if self._said is not None:
            self._said.append(text)
        if self.log_warnings:
            from attest.render.terminal import terminal_safe_logger

            terminal_safe_logger(logger).warning("attest: %s", text)
        return text

    def _in_force(self, v: Version) -> Attestation | None:
        """The attestation in force at ``v`` as read back (None: none, or it cannot be read)."""
        try:
            carried = self._carried(v)
            return None if carried is None else self._decode(carried, self._identity(v))
        except CarrierError:
            return None

    def sign(self, signer: Signer, version_id: str, manifest: Manifest, *, sidecar_digest: str,
             view: ReaderView, encoded: tuple[dict[str, Any], bytes] | None = None) -> tuple[str, str]:
        """Sign the attestation of ``version_id`` (an in-toto Statement naming this table, the version, the manifest,
        the sidecar and reader-view digests, in a DSSE envelope) and store the envelope content-addressed beside the
        sidecar: (its path relative to the storage root, its BLAKE3). Nothing needs a network; the key stays in
        ``signer``."""
        from attest.canonical import blake3_hex
        from attest.signing.attestation import sign_table_attestation

        # The document in the order a reader reconstitutes it (outputs by path): what the verifier will check; it and
        # its canonical bytes (``encoded``: made with the manifest's identity by the caller, else here) are the
        # statement's manifest, digests and payload part, never encoded again.
        document, data = attestation_encoded(manifest.to_dict())[:2] if encoded is None else encoded
        envelope = sign_table_attestation(signer, self.signed_uri, version_id, document,
                                          {"sidecar_digest": sidecar_digest, "reader_view_digest": view.digest},
                                          manifest_bytes=data)
        digest = blake3_hex(envelope)
        rel = self._envelope_rel(digest)
        self.storage.write_once(rel, envelope)
        return rel, digest

    def record(self, request: RecordRequest | None = None, /, **fields: Any) -> WriteResult:
        """Attest a version (default: the latest data version) after any engine wrote it: list its live files as
        the engine resolves them, hash them (reusing hashes of the previous clean attestation and ``known_hashes``
        ({path: (size, hash)}) when (path, size) match), add the previous version as an input when the data commit
        built on it, build the manifest and the sidecar, sign it when ``signer`` is given (docs/signing.md), and
        commit the attestation. Raises SupersededError when the
        attestation was written but another commit keeps it from being in force, and EvidenceDroppedError when it
        would replace an attestation of the same version that recorded inputs this one does not (unless
        ``replace``). Takes a RecordRequest (carriers/base.py), or its fields as keywords. ``carry_only``: write only a
        carry-forward attestation (``model``, ``program_hash`` and ``inputs`` are then unused); NothingToCarry when
        there is none to write (see ``carry_forward``)."""
        r = RecordRequest.of(request, fields)
        said, self._said = self._said, []  # the warnings of this record (WriteResult.warnings), from its start
        try:
            return self._record_from(r)
        finally:
            self._said = said

    def _record_from(self, r: RecordRequest) -> WriteResult:
        v = self._data_version() if r.version is None else self._resolve(r.version)
        live = self._live(v)
        live.refuse_if_inconsistent(f"{self.reference} {self.noun} {v.id} cannot be attested")
        _refuse_unwritable_view(self.reference, self.noun, v.id, live.view)
        reuse: dict[tuple[str, int], str] = {}
        previous = self._reusable()
        if previous is not None:
            reuse = {(f.path, f.size): f.hash for f in previous}
        for path, (size, digest) in (r.known_hashes or {}).items():
            reuse[(path, size)] = digest
        todo = [f for f in live.files if (f.path, f.size) not in reuse]
        hasher: FileHasher = self if r.hasher is None else r.hasher
        if getattr(hasher, "hash_and_digest", None) is None:
            return self._record(r, v, live, reuse, todo, hasher)
        # A hasher that reads the files elsewhere (Spark executors) digests their rows in the same read: the
        # content digests below (a rewrite's judge, the companion file) take them from this pass.
        from carriers.content_store import ContentPass

        self._content_pass = ContentPass(self, hasher, version=v, expected=todo + self._to_digest(v, live, todo))
        try:
            return self._record(r, v, live, reuse, todo, self._content_pass)
        finally:
            self._content_pass = None

    def _to_digest(self, v: Version, live: LiveVersion, todo: Sequence[DataFile]) -> list[DataFile]:
        """The live data files outside ``todo`` whose rows the attestation of ``v`` will digest (record_content): all
        of them when the attestation in force binds no content digest, else those whose reader-view entry changed
        (a deletion vector added to a file whose bytes were attested)."""
        hashing = {f.path for f in todo}
        data = [f for f in live.files if f.kind == "data" and f.path not in hashing]
        att = self._in_force(v)
        if att is None or att.content is None or att.problems or att.view is None:
            return data
        old, new = att.view.files, live.view.files
        return [f for f in data if f.path not in old or old.get(f.path) != new.get(f.path)]

    def _record(self, r: RecordRequest, v: Version, live: LiveVersion, reuse: Mapping[tuple[str, int], str],
                todo: list[DataFile], hasher: FileHasher) -> WriteResult:
        carried = self._carry_forward_check(v, live, r.progress, unchanged=r.carry_only)
        if carried is not None and r.signer is not None:
            why = self._continued_unverified(carried[0], r.signer)
            if why is not None and r.carry_only:
                raise CarrierError(
                    f"{self.noun} {v.id} of {self.reference}: the attestation of {self.noun} "
                    f"{carried[0].attested_version} is not carried forward signed: {why}. A signed carry-forward "
                    "vouches for that attestation's program, inputs and producer, so it is written only when the "
                    "continued attestation is signed by the recording key; nothing was written",
                    code=Code.CARRY_FORWARD_UNVERIFIED)
            if why is not None:
                # `record` with a key: the recorder's own attestation of the program it is given, never a
                # signature over a claim nobody trusted signed (round 13c: a signed carry-forward laundered it).
                carried = None
        if r.carry_only and carried is None:
            raise NothingToCarry(
                f"{self.noun} {v.id} of {self.reference} has no attestation to carry forward (it is attested already, "
                "was never attested, its attestation binds no content digest, or something other than a rewrite of "
                "the attested rows happened since); nothing was written: attest it with its own program instead "
                "(record() without carry_only, or `attest record`)")
        from carriers.content_store import sized_otherwise

        sized = sized_otherwise(self, todo)  # the bytes hashed must be the file readers read (round 33)
        if sized is not None:
            raise CarrierError(f"{self.noun} {v.id} of {self.reference} cannot be attested: {sized[1]}",
                               code=Code.SIZE_MISMATCH, path=sized[0])
        hashed = hasher.hash_files(todo, progress=r.progress) if todo else {}
        unreadable = [f.path for f in todo if f.path not in hashed]
        if unreadable:
            raise CarrierError(f"{len(unreadable)} live file(s) of {self.noun} {v.id} cannot be read, e.g. "
                               f"{unreadable[0]}", code=Code.FILE_MISSING, path=unreadable[0])
        # The rest makes a record per live file (its identity, the manifest's output, the sidecar's entry) while the
        # listing is held: with the cycle collector paused, as the listing is made (none of them holds a cycle), its
        # full collections no longer traverse every object of the listing on the way (~1.4 s of a record of 200,000
        # Iceberg files, measured; docs/scale.md, "sixteenth pass"). Only when cycles are reclaimed changes.
        with many_records():
            triples = _triples(live.files, reuse, hashed)
            if carried is not None:
                return self._carry_forward(v, live, triples, *carried, signer=r.signer, progress=r.progress)
            observed = list(r.inputs)
            base = self._built_on(v)
            if base is not None:
                try:
                    observed.append(self.observe(base.id))
                except VersionNotFoundError:
                    # Cleanup (Delta log cleanup, Iceberg expiry) removed the version the data commit built on: it is
                    # still what the run read, recorded by its version alone (heuristic), never a reason to refuse.
                    observed.append(self._observed(self._identity(v), base, None))
            replaced = self._dropped_evidence(v, observed, r.replace)
            manifest, document = built_manifest(model=r.model, program_hash=r.program_hash,
                                                env_hash=self._env(r.dialect, r.engines, v), inputs=observed,
                                                outputs=[(t.path, t.hash) for t in triples],
                                                run_id=r.run_id or new_run_id())
            # The manifest's document (made and validated once, by built_manifest), canonical bytes and identity, each
            # made once and passed along: the sidecar binds the identity, a signature covers the document and its bytes,
            # the check after the commit compares the identity. None of them is kept through that check, which reads the
            # attestation back (the record's peak memory: ~60 MB at 200,000 files, measured; docs/scale.md).
            if r.signer is None:
                # Unsigned, the identity is all that is needed of the bytes: hashed a batch of outputs at a time, never
                # the whole text (~25 MB at 200,000 files, set the record's peak: docs/scale.md, sixteenth pass).
                encoded, identity = None, attestation_identity(document)
            else:
                ordered, data, identity = attestation_encoded(document)
                encoded = (ordered, data)
                del ordered, data
            del document
            result = self._write(v, manifest, triples, observed, live, r.signer, progress=r.progress, identity=identity,
                                 encoded=encoded)
            del encoded
            self._check_in_force(v, identity)
            return replace_result(result, replaced=tuple(replaced))

    def carry_forward(self, *, version: str | int | None = None, signer: Signer | None = None,
                      progress: Progress | None = None, hasher: FileHasher | None = None) -> WriteResult | None:
        """The carry-forward attestation of ``version`` (default: the latest data version), written when it is
        reached from the attested version only through rewrites whose rows the recorded content digests confirm: the
        continued attestation's program, inputs and producer with the version's files. None, writing nothing, when
        there is nothing to carry (the version is attested already, no content digest is bound, data changed, or the
        rewrites changed metadata too): never an attestation naming a maintenance command as its program. A version
        whose commits since the attested one changed no file (Iceberg ``rewrite_manifests``) is carried to as well. A
        rewrite whose rows changed raises (``content_changed``). What the Spark hook runs after maintenance."""
        try:
            return self.record(model="", program_hash="", version=version, signer=signer, progress=progress,
                               hasher=hasher, carry_only=True)
        except NothingToCarry:
            return None

    def _carry_forward_check(self, v: Version, live: LiveVersion,
                             progress: Progress | None, *, unchanged: bool = False
                             ) -> tuple[Attestation, ContentCheck, dict[str, Any]] | None:
        """(the attestation in force, its passing content check) when ``v`` is reached from the attested version only
        through rewrites whose rows the recorded content digests confirm: ``record`` then carries it forward. None
        when there is nothing to carry (no content digest bound, data changed, the rewrites changed metadata too).
        A rewrite that changed the rows is refused (``content_changed``): re-attesting it under another program would
        hide what the rewrite did. ``unchanged``: also carry it to a later version whose commits changed no file
        (Iceberg ``rewrite_manifests``), so that expiring the attested snapshot does not lose it (``carry_forward``)."""
        att = self._in_force(v)
        if att is None or att.content is None or att.problems or att.attested_version in (None, v.id):
            return None
        try:
            changes = self._changes(att.attested_version, v)
        except VersionNotFoundError:
            return None
        if changes.kind != "compaction" and not (unchanged and changes.kind == "none"):
            return None
        computed: dict[str, Any] = {}
        check = self._content_check(att, v, live, progress, computed)
        if check is None:
            return None
        if not check.passed:
            cut = not changes.complete and check.code == Code.CONTENT_CHANGED.value
            if check.code == Code.COMPACTED.value or cut:
                # not a pure rewrite, or other rows after a cut history (Iceberg expiry: verify says stale, a data
                # change cannot be excluded): an ordinary attestation of what the table now is
                return None
            raise CarrierError(f"{self.noun} {v.id} of {self.reference} cannot carry forward the attestation of "
                               f"{self.noun} {att.attested_version}: {check.message}", code=Code(check.code))
        if check.widened:
            # The rows are the attested ones read as wider types (Delta type widening): the version's digests are of
            # those types, not the continued attestation's total, so it cannot be continued — an ordinary attestation.
            return None
        if not _table_part_kept(att, live, check):
            # What readers get changed besides the rewrites (a column renamed or swapped under column mapping, a read
            # property, a schema given to the snapshot): verify says reader_view_changed, so carrying the producer's
            # program onto it would attest what the producer never wrote. An ordinary attestation, if any.
            return None
        return att, check, computed

    def _continued_unverified(self, att: Attestation, signer: Signer) -> str | None:
        """Why ``signer`` must not sign a carry-forward of ``att`` (None: it may): the continued attestation's own
        envelope must verify, for this table and its version, under ``signer``'s public key. Without that check the
        recorder's signature adopted whatever program an unsigned or untrusted attestation claimed (docs/security.md,
        round 13c)."""
        from attest.signing.attestation import check_table_signature
        from attest.signing.policy import TrustPolicy

        public_key = getattr(signer, "public_key", None)
        if not callable(public_key):
            return (f"the signer (key {signer.key_id}) exposes no public key to check the continued attestation's "
                    "signature with")
        if att.envelope_ref is None:
            return "that attestation is unsigned"
        envelope, problem = att.load_envelope()
        if problem is not None:
            return str(problem.message)
        binding = {"sidecar_digest": att.sidecar_digest,
                   "reader_view_digest": None if att.view is None else att.view.digest}
        result = check_table_signature(envelope, TrustPolicy.from_public_key(public_key()), self.signed_uri,
                                       att.attested_version or "", None, attestation_document(att.document),
                                       binding, names=(self.reference,), locations=self.policy_locations)
        if result.passed and result.signer == signer.key_id:
            return None
        return f"its signature does not verify under key {signer.key_id} ({result.message})"

    def _carry_forward(self, v: Version, live: LiveVersion, triples: list[FileIdentity], att: Attestation,
                       check: ContentCheck, computed: dict[str, Any], *, signer: Signer | None,
                       progress: Progress | None) -> WriteResult:
        """The carry-forward attestation of ``v``: the continued attestation's manifest (program, inputs, producer,
        run) with ``v``'s files, the same content total, naming the sidecar it continues (docs/content-digest.md)."""
        from carriers.content_store import parse_binding, record_content

        document = dict(att.document)
        document["output_hashes"] = [{"hash": t.hash, "path": t.path} for t in sorted(triples, key=lambda t: t.path)]
        manifest = Manifest.from_dict(document)
        content = record_content(self, v, live, att, progress=progress,
                                 total=parse_binding(att.content or {}).total, continues=att.sidecar_digest,
                                 rewrites=check.rewrites, computed=computed)
        ordered, data, identity = attestation_encoded(manifest.to_dict())  # as _record: made once, passed along
        result = self._write(v, manifest, triples, list(att.inputs or ()), live, signer, content=content,
                             identity=identity, encoded=None if signer is None else (ordered, data))
        del ordered, data
        self._check_in_force(v, identity)
        return result

    def _dropped_evidence(self, v: Version, observed: Sequence[ObservedInput], replace: bool) -> list[str]:
        """What a new attestation of ``v`` would lose against the one in force for ``v``: inputs it recorded that the
        new one does not, or records only heuristically. Refused unless ``replace``; then described."""
        try:
            current = self.read(v.id)
        except CarrierError:
            return []
        if current is None or current.attested_version != v.id or not current.inputs:
            return []
        new = {i.table: i for i in observed}
        lost = [f"{i.table} ({i.proof_class})" for i in current.inputs
                if i.table not in new or (i.proof_class == "strong" and new[i.table].proof_class != "strong")]
        if not lost:
            return []
        run = (current.document.get("subject") or {}).get("run_id") if isinstance(current.document, dict) else None
        what = (f"the attestation of {self.noun} {v.id}" + (f" (run {run})" if run else "")
                + f" recorded inputs this one does not: {', '.join(lost)}")
        if not replace:
            raise EvidenceDroppedError(f"{what}; re-attesting would drop that evidence. Pass the same inputs, or "
                                       "replace it explicitly (--replace / replace=True)")
        return [what]

    def live(self, version: str | int | None = None) -> LiveVersion | None:
        """The live files, reader view and problems of a version as the engine resolves them (None: no version)."""
        v = self._version(version)
        return None if v is None else self._live(v)

    def reusable_hashes(self) -> dict[tuple[str, int], str]:
        """{(path, size): hash} of the attestation in force at the newest version when it reads back cleanly: what
        a new attestation may reuse instead of re-reading files."""
        return {(f.path, f.size): f.hash for f in self._reusable() or ()}

    def _reusable(self) -> tuple[FileIdentity, ...] | None:
        """File triples of the attestation in force at the newest version, when it read back without a problem."""
        try:
            latest = self._version(None)
            carried = None if latest is None else self._carried(latest)
            att = None if carried is None or latest is None else self._decode(carried, self._identity(latest))
        except CarrierError:
            return None
        # Reuse needs only what binds the hashes: the sidecar matched the BLAKE3 in the metadata, nothing disagreed.
        if att is None or att.problems or att.files is None:
            return None
        return att.files

    def _check_in_force(self, v: Version, identity: str) -> None:
        """After writing: the attestation in force at ``v`` must be the one just written (concurrent writers), the
        manifest of attestation identity ``identity``."""
        # The metadata in force is read again (a concurrent commit changes it); the sidecar it names is taken as just
        # written only when its stored bytes hash to that sidecar's BLAKE3 (_read_sidecar), else read and parsed.
        written, self._written = self._written, None
        self._in_hand = written if fast.ON else None
        try:
            att = self.read(v.id)
        finally:
            self._in_hand = None
        if att is None or att.attested_version != v.id or att.problems or att.manifest_identity != identity:
            # What was read back, named: a once-seen failure of this check (a test's fixture, flake14) could not be
            # told apart from its message alone — none in force, another binding, a problem, another manifest.
            if att is None:
                found = "no attestation is in force"
            elif att.attested_version != v.id:
                found = f"the one in force binds {self.noun} {att.attested_version} ({att.binding_note})"
            elif att.problems:
                found = "the one in force reads back with " + "; ".join(f"{p.code.value}: {p.message}"
                                                                         for p in att.problems[:3])
            else:
                found = f"the one in force is another manifest ({att.binding_note})"
            raise SupersededError(f"the attestation of {self.noun} {v.id} of {self.reference} was written but is not "
                                  f"in force ({found}): another commit landed before it bound that version. Run "
                                  "record again (or use detached mode)")

    def observe(self, version: str | int | None = None) -> ObservedInput:
        """This table at ``version`` as an upstream input: its content identity (strong) when an attestation that
        holds at the files level covers exactly that version, else its version (heuristic).

        With no attestation in force the input is heuristic whatever the files are, so they are not listed (record
        observes the version its data commit built on: a second table listing, ~a quarter of a record of 200,000
        files, for a verdict that could only fail); an error listing them is then not raised here — it could not
        make the input any weaker. With one in force, a listing error is raised, and an attestation of exactly this
        version that does not hold at the files level (tampered, files changed) makes the input heuristic with a
        WARNING on logger ``attest.inputs`` naming the table, the version and the codes, coded ``input_weakened`` (in
        the WriteResult.warnings of a record that observes it; ``observe_warned``): never a silent downgrade."""
        from attest.verify.table import verify_state

        v = self._observed_version(self._resolve(version))
        if self._carried(v) is None:
            return self._observed(self._identity(v), v, None)
        st = self.state(v.id)
        identity = self._identity(v)
        att = st.attestation
        report = verify_state(st, None, level="files")
        if att is not None and att.files is not None and report.passed:
            return self._observed(identity, v, content_identity(f.hash for f in att.files))
        codes = sorted({p.code.value for p in report.errors} - {Code.STALE.value, Code.UNATTESTED.value})
        if codes and (att is None or att.attested_version == v.id):
            self._warn(Code.INPUT_WEAKENED, f"input {self.reference} {self.noun} {v.id} is attested but its "
                       f"attestation does not hold at the files level ({', '.join(codes)}): recorded as a heuristic "
                       f"input (its {self.noun}), not by its content", logger="attest.inputs")
        return self._observed(identity, v, None)

    def observe_warned(self, version: str | int | None = None) -> tuple[ObservedInput, tuple[str, ...]]:
        """``observe``, and the warnings it gave (``input_weakened: ...``; logged too unless ``log_warnings`` is off):
        what `attest record --input` puts in its ``warnings``."""
        said, self._said = self._said, []
        try:
            observed = self.observe(version)
            return observed, tuple(self._said)
        finally:
            self._said = said

    def _observed_version(self, v: Version) -> Version:
        """The version an input read of ``v`` is recorded as (Delta: the data version in force)."""
        return v

    @property
    def input_location(self) -> str:
        """Where a downstream attestation records this table as an input (what lineage walks open again)."""
        return self.reference

    def _observed(self, identity: str, v: Version, content: str | None) -> ObservedInput:
        if self.kind == "iceberg":
            return ObservedInput(table=identity, content=content, snapshot_id=v.id, location=self.input_location)
        return ObservedInput(table=identity, content=content, version=v.id, location=self.input_location)

    # ---- detached attestations (a pointer file per version instead of a metadata commit) ------------------------
    def _pointer_name(self, version_id: str) -> str:
        return f"{self.pointer_dir}/{version_id}.json"

    def _read_pointer(self, version_id: str) -> Carried | None:
        name = self._pointer_name(version_id)
        data = self.storage.read(name)
        if data is None:
            return None
        try:
            # Read as manifests are (a key named twice, NaN, lone surrogates refused): one document, one meaning.
            doc = load_json_document(data)
            keys = doc["properties"]
            well_formed = isinstance(keys, dict) and all(isinstance(k, str) and isinstance(x, str)
                                                         for k, x in keys.items())
            if doc.get("format") not in (POINTER_FORMAT, LEGACY_POINTER_FORMAT) or \
                    doc.get("table_version") != version_id or not well_formed:
                raise ValueError("not a pointer document for this version")
        except (ManifestMalformedError, ValueError, KeyError, TypeError, RecursionError) as exc:
            return Carried(keys={props.KEY_VERSION: version_id}, where=f"detached attestation {name}",
                           problems=(_tampered(f"{name} is not a {POINTER_FORMAT} document: {exc}"),), detached=True,
                           note=f"detached attestation {name}")
        problems: tuple[Problem, ...] = ()
        if keys.get(props.KEY_VERSION) != version_id:
            problems = (_tampered(f"{name} binds {keys.get(props.KEY_VERSION)!r}, not {version_id}"),)
        return Carried(keys=props.attestation_keys(keys), where=f"detached attestation {name}", problems=problems,
                       detached=True, note=f"detached attestation {name}")

    def _write_pointer(self, version_id: str, keys: Mapping[str, str]) -> None:
        from attest.canonical import canonical_bytes

        data = canonical_bytes({"format": POINTER_FORMAT, "version": 1, "table_version": version_id,
                                "properties": dict(keys)})
        # Immutable: a version is attested once in this mode (write_once refuses different bytes).
        self.storage.write_once(self._pointer_name(version_id), data)


POINTER_FORMAT = "recipe-attest-detached"
LEGACY_POINTER_FORMAT = "recipe-attest-delta-detached"  # first wave, Delta only
Level = Literal["schema", "files", "bytes"]
