"""The Delta Lake format for the attestation core (carriers/core.py): only what is Delta's own.

Open spec: docs/carrier-properties.md; user guide: docs/delta.md. In short:
- the data commit is an ordinary Delta commit; the attestation is a *separate* later metadata-only commit that sets
  the ``recipe_manifest.*`` / ``recipe_attest.*`` properties (carriers/delta/commit.py), so it never perturbs data;
  ``detached`` mode writes no commit at all (``_recipe_attest/versions/<version>.json``); where a version's
  attestation is found is carriers/delta/carriage.py;
- a version's files, schema, partition values and statistics come from delta-rs's snapshot (checkpoint + log), and
  are checked against an independent replay of the log (carriers/delta/log.py); paths engines would resolve
  differently, or a checkpoint that disagrees with the log, make the version ``path_ambiguous`` /
  ``table_inconsistent`` instead of letting attest and the reader see different files;
- every attestation writes ``<table>/_recipe_attest/<blake3>.json`` (file triples, inputs, reader view).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack
from urllib.parse import urlparse

from attest import __version__, fast
from attest.build import PRODUCER_NAME
from attest.canonical import blake3_hex
from attest.errors import (
    AttestError,
    CarrierError,
    Code,
    Problem,
    TableInconsistentError,
    TableNotFoundError,
    UnsupportedTableError,
    VersionNotFoundError,
)
from attest.fast import jsonscan
from attest.fast.realpath import resolve
from attest.identity.env import env_identity
from attest.numbers import is_digits, is_signed_digits
from attest.record import many_records
from attest.tables import DataFile, Progress, data_files
from attest.view import ReaderView, _file_encode, file_digest, json_safe
from carriers.base import AfterWrite, ContentReader, RecordRequest, WriteResult, after_write_request
from carriers.core import AttestedTable, Changes, LiveVersion, Version, canonical_relative
from carriers.delta.adds import MISSING, Kept
from carriers.delta.carriage import POINTER_DIR, SIDECAR_DIR, Carriage
from carriers.delta.columns import add_columns
from carriers.delta.commit import MetadataCommit, check_writable
from carriers.delta.guard import LAST_CHECKPOINT_MAX_BYTES as LAST_CHECKPOINT_MAX_BYTES
from carriers.delta.guard import check_local_log as check_local_log
from carriers.delta.guard import check_log as check_log
from carriers.delta.guard import check_remote_hint as check_remote_hint
from carriers.delta.log import (
    LOG_DIR,
    Commit,
    LogState,
    commit_name,
    deletion_vector_path,
    json_lines,
    log_versions,
    read_commit,
    replay,
    vector_walk,
    z85_decode,
)
from carriers.delta.rows import add_action_rows as add_action_rows
from carriers.delta.rows import engine_relative, outside_python_dates, protocol_doc
from carriers.delta.spellings import _Spellings
from carriers.delta.view import (
    READ_PROPERTIES,
    mapping_mode_read_otherwise,
    raw_reader_table,
    statistics_columns_read_otherwise,
    strip_comments,
    view_reader_features,
)
from carriers.storage.delta import DeltaStorage
from carriers.storage.errors import coded, is_panic
from carriers.storage.head_start import HEAD_START_MAX_FILES, ObjectHeadStart
from carriers.storage.options import check_supported

if TYPE_CHECKING:
    from attest.content import ContentDigest
    from carriers.base import Rewrite

try:
    import deltalake
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError as _DeltaTableNotFound
except ImportError as exc:  # pragma: no cover - the [delta] extra is missing
    raise ImportError("the Delta carrier needs deltalake: pip install 'recipe-attest[delta]'") from exc


def _holds_iceberg_metadata(folder: Path) -> bool:
    """Whether ``folder`` (a table's ``metadata/``) holds Iceberg table metadata (``*.metadata.json``)."""
    try:
        return any(name.endswith((".metadata.json", ".metadata.json.gz")) for name in os.listdir(folder))
    except OSError:
        return False

# One page of a store's listing of ``metadata/`` (one request): whether Iceberg metadata is there is read from it.
ICEBERG_PAGE = 1000


def _remote_iceberg_metadata(storage: Any) -> str | None:
    """On an object store: whether the table's ``metadata/`` holds Iceberg table metadata (UniForm, or metadata put
    there), from one listing request (the first page of its keys, ``ICEBERG_PAGE``) — ``"yes"``; ``"unseen"`` when that
    page is full and names none (a UniForm folder's manifests may sort before its ``.metadata.json``); None when it
    holds none, or the store cannot be listed so (its options map to no obstore store, it refuses: the note is not
    made). A whole listing would cost a request per 1,000 of the folder's objects, and every commit of an Iceberg
    table adds some."""
    from carriers.storage.errors import or_none

    def first_page() -> Sequence[Any] | None:
        import obstore

        store = storage._object_store()
        if store is None:
            return None
        return next(iter(obstore.list(store, prefix="metadata/", chunk_size=ICEBERG_PAGE)), [])

    page = or_none(first_page)
    if page is None:
        return None
    names = [str(meta["path"]).rsplit("/", 1)[-1] for meta in page]
    if any(name.endswith((".metadata.json", ".metadata.json.gz")) for name in names):
        return "yes"
    return "unseen" if len(page) >= ICEBERG_PAGE else None


_ICEBERG_NOTE = ("this folder also holds Iceberg metadata (metadata/*.metadata.json): an Iceberg reader of the path "
                 "reads the files it lists, which this Delta attestation does not cover (attest audit FOLDER checks "
                 "both)")


__all__ = ["POINTER_DIR", "READ_PROPERTIES", "SIDECAR_DIR", "DeltaCarrier", "attest_after_write", "signed_table_uri"]

# The carrier's walks over the log (back over metadata-only commits to the data version, forward from a data version to
# its follow-up attestation commit, back through history for another producer's properties) read each commit once and
# are not cut short: a cut-off walk bound a metadata-only version as the data version (issue 29.6: past 1,000
# metadata-only commits `record` attested version N-1,000 and said `superseded`, while `verify` said VERIFIED). A walk
# ends at the commit it looks for, at version 0, or at a commit the log no longer holds (log cleanup): then the
# version above the gap, whose files are the data version's (only metadata-only commits lie between), is the answer.
# Operations that read the table they write into (the previous version is then an observed input).
_READS_PREVIOUS = frozenset({"MERGE", "UPDATE", "DELETE", "STREAMING UPDATE"})
# The fields of a version's adds the content reader reads (carriers/delta/content.py ``content_reader``): kept when the
# carrier cuts its replay, so the reader needs no replay of its own.
_CONTENT_FIELDS = ("stats", "baseRowId", "defaultRowCommitVersion", "deletionVector")
def _table_uri(table: str | DeltaTable) -> str:
    if isinstance(table, DeltaTable):
        return str(table.table_uri).rstrip("/")
    from attest.locations import is_uri

    if is_uri(table):
        return table.rstrip("/")
    return resolve(Path(table)).as_uri()


def signed_table_uri(location: str) -> str:
    """The URI a signed statement names a Delta table by (see ``DeltaCarrier.signed_uri``)."""
    from carriers.storage.base import local_path_of

    local = local_path_of(location) if len(urlparse(location).scheme) > 1 else location
    if local is not None:
        return resolve(Path(local)).as_uri()
    parsed = urlparse(location.rstrip("/"))
    scheme = {"s3a": "s3", "s3n": "s3", "abfss": "abfs", "wasbs": "wasb"}.get(parsed.scheme, parsed.scheme)
    return parsed._replace(scheme=scheme).geturl()


def _release_arrow_memory() -> None:
    """Hand the memory Arrow freed back to the system: the checkpoints' columns and delta-rs's add actions, read for
    the listing and dropped after it, stay with pyarrow's allocator otherwise (mimalloc keeps freed pages: ~200 MB at
    200,000 files), on top of what reading the attestation then takes. Only a hint to the allocator: nothing read
    changes."""
    import sys

    # A table read without pyarrow holds no Arrow memory. Audits read tables on several threads: another one may be
    # importing pyarrow right now (a partly initialised module, without default_memory_pool yet): skip the hint then.
    pool = getattr(sys.modules.get("pyarrow"), "default_memory_pool", None)
    if pool is not None:
        pool().release_unused()


class DeltaCarrier(Carriage, MetadataCommit, AttestedTable):
    """Attestations of a Delta table's versions, carried in its table properties (see module docstring)."""

    kind = "delta"
    noun = "version"
    sidecar_dir = SIDECAR_DIR
    pointer_dir = POINTER_DIR
    # The command line's head start on a store's objects (carriers/storage/head_start.py), offered delta-rs's first
    # listing; None: the files are hashed when the verification asks for them, as before.
    head_start: ObjectHeadStart | None = None

    def __init__(
        self,
        table: str | DeltaTable,
        *,
        storage_options: dict[str, str] | None = None,
        property_writer: Callable[[dict[str, str], list[str]], None] | None = None,
        detached: bool = False,
        allow_external: bool = False,
    ) -> None:
        """``property_writer(set, remove)`` replaces the carrier's own metadata commit (the Spark hook passes one
        that commits through Spark's own Delta transaction: carriers.spark.hook.spark_property_writer);
        ``detached=True`` never commits to the Delta log: the attestation goes to
        ``_recipe_attest/versions/<version>.json`` (docs/carrier-properties.md)."""
        self.property_writer = property_writer
        self.detached = detached
        self.allow_external = allow_external
        self.storage_options = dict(storage_options or {})
        if isinstance(table, DeltaTable) and not self.storage_options and table._storage_options:
            self.storage_options = dict(table._storage_options)
        self.uri = _table_uri(table)
        self.display = table if isinstance(table, str) else self.uri
        check_supported("delta-rs", self.uri)
        self.storage = DeltaStorage(self.uri, self.storage_options)
        self._tables: dict[int, DeltaTable] = {}
        # The latest version as delta-rs last loaded it (or as this carrier's own attestation commit made it): while
        # the log's newest listed version is still that one, the table has not moved and is not loaded again.
        self._latest: int | None = None
        self._log_checked = False  # check_log ran since the carrier last forgot what it read (or committed)
        self._commit_files_checked: set[tuple[int, int]] = set()  # (version, latest) pairs _check_commit_files passed
        self._live_cache: dict[int, LiveVersion] = {}
        self._replays: dict[int, tuple[LogState, list[str]]] = {}
        # Versions whose replay above was cut to its metaData and protocol once their live files were listed (what the
        # attestation commit and attestable_version read of it): the adds of a large table are not held meanwhile.
        self._slim: set[int] = set()
        # Their adds held to the fields the content reader reads (``content_log``): one replay a version serves it too.
        self._content_adds: dict[int, Kept] = {}
        self._recording = False

    def _forget(self) -> None:
        self._live_cache.clear()
        if not self._recording:
            # The next load checks the log again (check_log) and reads it anew. One record judges and commits on top
            # of one load and one replay of each version it reads (a version's commits never change: put-if-absent);
            # whether the table moved meanwhile is asked of the log itself (latest_version), not of a reload.
            self._tables.clear()
            self._latest = None
            self._log_checked = False
            self._replays.clear()
            self._slim.clear()
            self._content_adds.clear()

    # ---- naming ------------------------------------------------------------------------------------------------
    @property
    def reference(self) -> str:
        return str(self.display)

    @property
    def roots(self) -> list[str]:
        return [self.uri]

    @property
    def input_location(self) -> str:
        return self.uri

    @property
    def signed_uri(self) -> str:
        """The absolute table URI, one spelling per table: ``file:///abs/path`` for local tables (symlinks resolved;
        Spark's ``file:/p`` and a relative path name the same table), object stores with a trailing ``/`` removed
        and Hadoop's scheme aliases (s3a, abfss, ...) folded as delta-rs names them."""
        return signed_table_uri(self.uri)

    def _load(self, version: int | None = None) -> DeltaTable:
        if version is not None and version in self._tables:
            return self._tables[version]
        if not self._log_checked:  # before delta-rs first reads the log
            check_log(self.storage, self.display)
            self._log_checked = True
        try:
            dt = DeltaTable(self.uri, version=version, storage_options=self.storage_options or None)
        except _DeltaTableNotFound as exc:
            if version is not None and self._tables:  # the table is there, this version's log is not
                raise VersionNotFoundError(
                    f"version {version} of {self.display} can no longer be read: its commits are gone from the log "
                    "(log cleanup after a checkpoint, delta.logRetentionDuration); its attestation can no longer be "
                    "checked against the table") from exc
            raise TableNotFoundError(f"no Delta table at {self.display}") from exc
        except Exception as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if version is not None and ("version" in text.lower() or "not found" in text.lower()):
                raise VersionNotFoundError(f"version {version} of {self.display} cannot be loaded: {text}") from exc
            if "Unsupported" in text or "not yet supported" in text:
                raise UnsupportedTableError(f"delta-rs cannot read {self.display}: {text}") from exc
            if self.storage.local_root is None:  # a store's refusal or failure: coded, credentials redacted
                raise coded(exc, where=f"Delta table {self.display}", engine="delta-rs",
                            secrets=self.storage.secrets) from None
            raise CarrierError(f"cannot open Delta table {self.display}: {text}") from exc
        except BaseException as exc:
            if not is_panic(exc):
                raise
            raise coded(exc, where=f"Delta table {self.display}", engine="delta-rs",
                        secrets=self.storage.secrets) from None
        # The latest load is also that version's (verify loads the latest, then reads the same version again).
        loaded = int(dt.version()) if version is None else version
        self._tables[loaded] = dt
        if version is None:
            self._latest = loaded
        return dt

    def latest_version(self) -> int:
        """The table's latest version, as delta-rs loads it. Loaded once: asked again, the log's newest listed version
        (one listing of ``_delta_log``, what delta-rs itself lists first) says whether the table moved since; only
        then is the latest version loaded again (a record asked ~12 times, each a load of the whole table)."""
        if self._latest is not None and self._listed_latest() == self._latest:
            return self._latest
        return int(self._load().version())

    def _listed_latest(self) -> int | None:
        """The newest version the log's listing names a commit or checkpoint of (None: none, or no listing)."""
        try:
            return max(log_versions(self.storage.list_names(LOG_DIR)), default=None)
        except (AttestError, OSError):  # then delta-rs loads the table, and says what is wrong as it always did
            return None

    def _committed(self, version: int | None) -> None:
        """This carrier's own attestation commit published ``version`` on top of the latest version it loaded (put-if-
        absent: no one else's commit is that version): it is now the latest, with the metadata it wrote, and the
        versions loaded before are still what they were. None: committed elsewhere (Spark's transaction, delta-rs's
        own commit), the version unknown: what was loaded is forgotten and read again."""
        if version is None:
            self._tables.clear()
            self._latest = None
            self._log_checked = False
        else:
            self._latest = version

    def _stored_types_judge(self, v: Version) -> Callable[[Any, Any], str | None] | None:
        from carriers.delta.content import stored_types_judge

        return stored_types_judge(self, v)

    def removed_by_cleanup(self, version: str, paths: Sequence[str]) -> str | None:
        """Why files of ``version`` are gone, when the log says so: they left the table later, and a VACUUM
        (delta-rs and Spark both commit ``VACUUM START``/``VACUUM END``) ran after ``version``. None otherwise."""
        if not is_digits(version) or not paths:
            return None
        latest = self.latest_version()
        live = {f.path for f in self._live(Version(id=str(latest), number=latest)).files}
        if any(p in live for p in paths):
            return None  # a file the table still holds is missing: not VACUUM's doing
        end: int | None = None
        for x in range(latest, max(int(version), latest - 10_000), -1):  # newest first, bounded
            commit = read_commit(self.storage, x)
            operation = "" if commit is None else commit.operation.upper()
            if commit is not None and operation == "VACUUM END" and end is None:
                end = x
            elif commit is not None and operation == "VACUUM START":
                millis = str(commit.parameters.get("specifiedRetentionMillis", ""))
                retention = f", retention {int(millis) / 3_600_000:g} h" if is_digits(millis) else ""
                return (f"removed by the VACUUM the log records at version {x}{'' if end is None else f'-{end}'}"
                        f"{retention}: it is no longer in the table at version {latest}")
        if end is not None:
            return f"removed by the VACUUM the log records at version {end}: it is no longer in the table at " \
                   f"version {latest}"
        return None

    @staticmethod
    def _parse_version(version: str | int) -> int:
        # ASCII digits only: int() reads '٣' as 3 and ' 3' or '+3' as 3 too, so an input record's version '٣' opened
        # version 3 and a lineage walk showed that version verified as the one read.
        if isinstance(version, str) and not is_signed_digits(version):
            raise VersionNotFoundError(f"Delta versions are integers, got {version!r}")
        try:
            value = int(version)
        except ValueError as exc:
            raise VersionNotFoundError(f"Delta versions are integers, got {version!r}") from exc
        if value < 0:
            raise VersionNotFoundError(f"Delta versions are non-negative, got {value}")
        return value

    def _version(self, version: str | int | None) -> Version:
        latest = self.latest_version()
        n = latest if version is None else self._parse_version(version)
        if n > latest:
            raise VersionNotFoundError(f"{self.display} has no version {n} (latest is {latest})")
        self._check_commit_files(n, latest)
        # handle: the latest version when this one was resolved; the attestation in force is looked up in that same
        # snapshot of the log (and delta-rs does not load the table a second time to find it).
        return Version(id=str(n), number=n, handle=latest)

    def _check_commit_files(self, n: int, latest: int) -> None:
        """Refuse a version whose commit file is gone while a checkpoint of it is in the log, and every version of a
        table whose latest commit file is so: delta-rs reads such a version from the checkpoint, Spark (delta-spark
        4.x) reads none of them ("Could not find any delta files for version N", measured,
        tests/adversarial/test_delta_commit_behind_checkpoint.py). Log cleanup keeps the commit of the checkpoint it
        keeps (delta-rs's, measured); a version whose commit and checkpoint are both gone is delta-rs's to refuse."""
        if (n, latest) in self._commit_files_checked:
            return
        try:
            names = set(self.storage.list_names(LOG_DIR))
        except (AttestError, OSError):
            return  # delta-rs lists the log next and says what is wrong, as it always did
        for v, whose in ((latest, "the latest version"), (n, f"version {n}")):
            checkpointed = any(name.startswith(f"{v:020d}.checkpoint.") for name in names)
            if f"{v:020d}.json" not in names and checkpointed:
                raise TableInconsistentError(
                    f"the commit file of {whose} of {self.display} ({v:020d}.json) is missing while a checkpoint of "
                    f"it is in the log: delta-rs reads version {v} from the checkpoint, Spark reads "
                    f"{'no version of the table' if v == latest else 'no such version'} (\"Could not find any "
                    f"delta files for version {v}\")")
        self._commit_files_checked.add((n, latest))

    def data_version(self, latest: int | None = None) -> int:
        """The newest version at or before ``latest`` whose commit changed files: metadata-only commits on top of
        it (attestations, property edits) do not change what an attestation of the data would describe."""
        v = self.latest_version() if latest is None else latest
        while v > 0:  # linear, unbounded (see the walks above): one commit read per version
            commit = read_commit(self.storage, v)
            if commit is None or commit.touches_files:
                return v
            v -= 1
        return 0

    def attestable_version(self, latest: int | None = None) -> int:
        """The version ``record`` attests at ``latest``: its data version, unless a metadata-only commit since changed
        what readers get (the table part of the reader view: schema, partitioning, read-changing properties and reader
        features); then the first version from which readers get what they get at ``latest`` (same files, the current
        view). Attesting the data version then left the latest version unverifiable, record after record (issue 30.4:
        ``reader_view_changed``). The same answer after an attestation commit on top, which changes no view."""
        top = self.latest_version() if latest is None else latest
        n = self.data_version(top)
        if n == top:
            return n
        want = self._reader_table(top)
        try:
            if self._reader_table(n) == want:
                return n
        except VersionNotFoundError:
            # Log cleanup removed the data version's commits (a checkpoint after it): the metadata-only commits since
            # kept its files, so the first version still readable whose readers get what they get at ``top``.
            for x in range(n + 1, top):
                try:
                    if self._reader_table(x) == want:
                        return x
                except VersionNotFoundError:
                    continue
            return top
        # One replay of n and one pass over the metadata-only commits after it (their metaData and protocol actions),
        # not a load per version: the last version whose reader table differs from the latest's, plus one.
        try:
            log, _ = self._replay(n, whole=False)
        except TableInconsistentError:
            return top
        meta, protocol = log.metadata, log.protocol
        seen: list[tuple[int, Any]] = [(n, raw_reader_table(meta, protocol))]
        for x in range(n + 1, top + 1):
            commit = read_commit(self.storage, x)
            if commit is None:
                return top
            meta = commit.metadata if commit.metadata is not None else meta
            protocol = commit.protocol if commit.protocol is not None else protocol
            seen.append((x, raw_reader_table(meta, protocol)))
        last = seen[-1][1]
        found = max((x + 1 for x, table in seen if table != last), default=n)
        # Confirmed by the engine's own reading (the view verify compares), else the latest version itself.
        return found if found == top or self._reader_table(found) == want else top

    def _reader_table(self, n: int) -> dict[str, Any]:
        return self._table_view(self._load(n), LogState(version=n))

    def _data_version(self) -> Version:
        n = self.attestable_version()
        return Version(id=str(n), number=n)

    def _observed_version(self, v: Version) -> Version:
        # Reading a metadata-only version (an attestation commit) reads the data version under it, or the version
        # record attests there (attestable_version).
        n = self.attestable_version(v.number)
        return Version(id=str(n), number=n)

    def _identity(self, v: Version) -> str:
        return f"delta:{self.table_id(v.number)}"

    def table_id(self, version: int) -> str:
        """The table's id (its metadata's ``id``) at ``version``: what a Delta streaming offset names it by."""
        return str(self._metadata_table(version).metadata().id)

    def _metadata_table(self, n: int) -> DeltaTable:
        """A loaded table whose metadata (properties, table id) is version ``n``'s: ``n`` itself when loaded; else, when
        this carrier listed version n + 1 without a problem — delta-rs's properties and table id there checked against
        the log's replay, the checkpoint against the log before it (``_cross_check_metadata``, the replay's cross-check)
        — and commit n + 1 holds no metaData action, version n + 1's: the log's metadata at n + 1 is then its metadata
        at n. A record observes the version its data commit built on for its properties and id alone (whether an
        attestation is in force there): loading that version's files cost ~0.3 s and ~100 MiB of the record's peak at
        200,000 files (docs/scale.md, sixteenth pass). Anything else loads ``n``, as before."""
        if n not in self._tables and n + 1 in self._tables:
            listed = self._live_cache.get(n + 1)
            if listed is not None and not listed.problems:
                name = commit_name(n + 1)
                try:
                    data = self.storage.read(name)
                    # Every line read strictly (one object, no key twice); no action of any spelling of metaData.
                    plain = data is not None and not any(
                        str(key).lower() == "metadata" for action in json_lines(data, name) for key in action)
                except (AttestError, OSError, ValueError):  # not read: load n, which says what is wrong as before
                    plain = False
                if plain:
                    return self._tables[n + 1]
        return self._load(n)

    # ---- the live version --------------------------------------------------------------------------------------
    def _location(self, rel: str) -> str:
        """Where the engine reads a canonical relative path (canonical_relative checked it: no '.', '..', '')."""
        root = self.storage.local_root
        return f"{root}/{rel}" if root is not None else f"{self.uri}/{rel}"

    def _live(self, v: Version) -> LiveVersion:
        cached = self._live_cache.get(v.number)
        if cached is None:
            # the replay and every file's view: many small objects, no cycles
            with many_records(), outside_python_dates(f"{self.reference} version {v.number}"):
                cached = self._compute_live(v.number)
            self._live_cache[v.number] = cached
            _release_arrow_memory()
        return cached

    def _replay(self, n: int, *, whole: bool = True) -> tuple[LogState, list[str]]:
        """The log's own replay of version ``n`` (carriers/delta/log.py) and its inconsistencies, made once until the
        carrier forgets what it read (a log that cannot be replayed raises each time). A version's commits never change
        under the protocol (put-if-absent), so the view, the live files and the attestation commit share one replay.
        Not ``whole``: its metaData and protocol are all the caller reads (a replay cut to them will do)."""
        found = self._replays.get(n)
        if found is None or (whole and n in self._slim):
            found = self._replays[n] = replay(self.storage, n)
            self._slim.discard(n)
            self._content_adds.pop(n, None)
        return found

    def content_log(self, n: int) -> LogState:
        """The log's replay of version ``n`` as the content reader reads it (each file's ``stats``, row-tracking ids
        and deletion vector: carriers/delta/content.py): the one replay ``_replay`` made, its adds held to those fields
        once the version was listed (``_CONTENT_FIELDS``), not a replay of its own (tests/delta/test_record_replays.py).
        """
        found = self._replays.get(n)
        adds = self._content_adds.get(n)
        if found is not None and n in self._slim and adds is not None:
            return LogState(version=n, adds=adds.adds(), metadata=found[0].metadata, protocol=found[0].protocol)
        return self._replay(n)[0]

    def _compute_live(self, n: int) -> LiveVersion:
        dt = self._load(n)
        early = self._offer_head_start(dt)
        problems: list[Problem] = []
        notes: list[str] = []
        try:
            log, inconsistencies = self._replay(n)
        except TableInconsistentError as exc:
            log, inconsistencies = LogState(version=n), [exc.message]
        problems += [Problem(Code.TABLE_INCONSISTENT, text) for text in inconsistencies]
        for stray in (_vector_without_the_feature(log), _mapping_without_the_feature(log),
                      statistics_columns_read_otherwise(log.metadata), mapping_mode_read_otherwise(log.metadata)):
            if stray is not None:
                problems.append(Problem(Code.TABLE_INCONSISTENT, stray))
        _release_arrow_memory()  # the checkpoints read for the cross-check, dropped: before delta-rs's adds are read
        if n in self._replays:  # listed once (cached in _live_cache): only its metaData and protocol are read again,
            # and the fields of its adds the content reader reads (the checkpoint's columns of them shared, not copied)
            self._replays[n] = (LogState(version=n, metadata=log.metadata, protocol=log.protocol), inconsistencies)
            self._content_adds[n] = log.adds.kept(_CONTENT_FIELDS)  # its path index rebuilt if read
            self._slim.add(n)
        adds = add_columns(dt) if early is None else add_columns(dt, early)  # the head start read them already
        del early
        spellings = _Spellings(dt)
        paths = adds.paths
        engine_raw = set(paths)
        # delta-rs's paths the log's own, in its order (as delta-rs lists a checkpoint's adds): located without a
        # look-up per path, the same sets without making the log's (carriers/delta/adds.py, Adds.same_order).
        in_order = log.adds.same_order(paths) if ALIGNED_LISTING and len(engine_raw) == len(paths) else None
        if in_order is None and ((log.adds and log.adds.paths() != engine_raw)
                                 or (not log.adds and engine_raw and not inconsistencies)):
            problems.append(Problem(Code.TABLE_INCONSISTENT, f"delta-rs and the log replay disagree on the live files "
                                    f"of version {n} ({len(engine_raw)} vs {len(log.adds)})"))
        files: list[DataFile] = []
        file_views: dict[str, str] = {}
        times: dict[str, Any] = {}
        seen: dict[str, str] = {}
        location = self._location
        # Each file's view is the canonical JSON of {deletion_vector, kind, partition, [partition_text], row_tracking,
        # size, stats, [stats_unread]} (keys sorted, as the views' encoder writes them): the typed parts' texts come
        # from delta-rs's columns (carriers/delta/columns.py), the log's parts are encoded here, file by file only where
        # they are not the common null / no row tracking.
        encode = _file_encode()
        partition_texts = adds.partition_texts
        stats_texts, gaps, plain, sizes, engine_times = adds.stats_texts, adds.gaps, adds.plain, adds.sizes, adds.times
        look_into = bool(spellings.statistics)
        parsed_stats = log.parsed_stats
        # The log's add of each file, as aligned columns (no dict made of a checkpoint's row); MISSING where the
        # add lacks a field (its checkpoint part holds it null in every row) or the path is not live in the log.
        logged_adds = log.adds.locate(paths) if in_order is None else in_order
        live, logged_sizes, logged_values = logged_adds.live, logged_adds.values("size"), \
            logged_adds.values("partitionValues")
        logged_dvs, base_rows, commit_versions = logged_adds.values("deletionVector"), \
            logged_adds.values("baseRowId"), logged_adds.values("defaultRowCommitVersion")
        logged_times = logged_adds.values("modificationTime", MISSING)
        logged_stats = logged_adds.values("stats") if look_into or any(gaps) else None
        # The same files, views, times and problems, in the same order, made in bulk (_bulk_views) where no file needs
        # the loop's per-file branches: every path plain and named once, no statistics to look into.
        bulk = BULK_VIEWS and logged_stats is None and len(engine_raw) == len(paths) and all(plain)
        for i, raw in enumerate(() if bulk else paths):
            if plain[i]:
                rel = raw
            else:
                canonical, reason = canonical_relative(raw)
                if canonical is None:
                    problems.append(Problem(Code.PATH_AMBIGUOUS, f"add path {raw!r}: {reason}", raw))
                    continue
                rel = canonical
            if rel in seen:
                problems.append(Problem(Code.PATH_AMBIGUOUS, f"add paths {seen[rel]!r} and {raw!r} name the same file "
                                        "(engines read it once or twice)", raw))
                continue
            seen[rel] = raw
            size = int(sizes[i])
            logged = logged_sizes[i]
            # A logged size of 0 is a real (empty) file's size, not a missing one.
            if live[i] and (-1 if logged is None else int(logged)) != size:
                problems.append(Problem(Code.TABLE_INCONSISTENT, f"delta-rs and the log disagree on the size of "
                                        f"{rel}", rel))
            values = logged_values[i]
            if look_into or gaps[i]:
                assert logged_stats is not None
                unread = spellings.see(rel, values, logged_stats[i], adds.stats_row(i), parsed_stats)
            else:  # delta-rs read every statistic of this file and no column is a timestamp: nothing to look into
                spellings.see_partitions(rel, values)
                unread = None
            dv = logged_dvs[i]
            base_row, commit_version = base_rows[i], commit_versions[i]
            text = [
                '{"deletion_vector":', "null" if dv is None else encode(_dv_entry(dv)),
                ',"kind":"data","partition":', "null" if partition_texts is None else partition_texts[i],
            ]
            if spellings.partitions:
                # As written too: engines parse some spellings alike and others not (a timestamp's zone, measured).
                text += [',"partition_text":', encode(json_safe(values) if isinstance(values, dict) else None)]
            text += [',"row_tracking":', _NO_ROW_TRACKING if base_row is None and commit_version is None else
                     encode(json_safe({"baseRowId": base_row, "defaultRowCommitVersion": commit_version})),
                     ',"size":', str(size), ',"stats":', stats_texts[i]]
            if unread is not None:
                # Out of delta-rs's typed statistics above, read by Spark (measured): bound as the log writes them.
                text += [',"stats_unread":', encode(unread)]
            text.append("}")
            # Spark's _metadata.file_modification_time is the log's modificationTime (measured: rewritten in the
            # attested commit, the column read 1970 for the same file); delta-rs's typed view above holds no time.
            logged_time = logged_times[i]
            times[rel] = engine_times[i] if logged_time is MISSING else logged_time
            files.append(DataFile(path=rel, size=size, kind="data", location=location(rel)))
            file_views[rel] = blake3_hex("".join(text).encode("utf-8", "surrogatepass"))
        if bulk:
            location_of = f"{self.storage.local_root}/" if self.storage.local_root is not None else f"{self.uri}/"
            files, file_views, times = _bulk_views(
                paths, sizes, partition_texts, stats_texts, engine_times, logged_adds.live, logged_sizes,
                logged_values, logged_dvs, base_rows, commit_versions, logged_times, spellings, location_of, problems)
        spellings.report(problems, notes)
        dv_files = self._deletion_vector_files(log, problems)
        for f in dv_files:
            files.append(f)
            file_views[f.path] = file_digest({"kind": "deletion_vector", "size": f.size})
        past = self.vectors_past_their_rows(log)
        problems += past
        if not past:  # delta-rs would allocate a row mask as long as the greatest row a vector names: not asked
            self._cross_check_dvs(dt, log, problems)
        if log.metadata is not None and not inconsistencies:
            _cross_check_metadata(dt, log, problems)
        table_view = self._table_view(dt, log)
        # The replay's state, delta-rs's add actions and the log's columns are read no further: released before the
        # URI cross-check and confinement make their own per-file lists (they set the listing's peak memory otherwise).
        del log, adds, paths, engine_raw, partition_texts, stats_texts, gaps, plain, sizes, engine_times, parsed_stats
        del logged_adds, live, logged_sizes, logged_values, logged_dvs, base_rows, commit_versions, logged_times
        del logged_stats, in_order
        _release_arrow_memory()
        if self.storage.local_root is not None:
            self._cross_check_uris(dt, files, problems)
            if _holds_iceberg_metadata(self.storage.local_root / "metadata"):
                # A path-based Iceberg reader of this folder reads that metadata, not this log: say what is not checked.
                notes.append(_ICEBERG_NOTE)
        else:
            # On a store too (round 20b: the note was local only), from one listing request (_remote_iceberg_metadata).
            held = self.__dict__.get("_iceberg_held", False)
            if held is False:  # once a carrier: verify reads the attested version and the latest
                held = self.__dict__["_iceberg_held"] = _remote_iceberg_metadata(self.storage)
            if held == "yes":
                notes.append(_ICEBERG_NOTE)
            elif held == "unseen":
                notes.append(f"this folder also holds a metadata/ folder of more than {ICEBERG_PAGE} objects, not all "
                             "looked at: if it holds Iceberg metadata (UniForm), an Iceberg reader of the path reads "
                             "the files that lists, which this Delta attestation does not cover (attest audit FOLDER "
                             "checks both)")
        self._confine(files, problems)
        files.sort(key=lambda f: f.path)
        protocol = dt.protocol()
        view = ReaderView(table={**table_view, "file_times": file_digest(json_safe(times))},
                          files=file_views,
                          # As attestations before view_reader_features bound the protocol (attest.view.REPLACED_KEYS).
                          earlier={"reader_protocol": {"min_reader_version": int(protocol.min_reader_version),
                                                       "reader_features": sorted(protocol.reader_features or [])}})
        return LiveVersion(files=files, view=view, identity=f"delta:{dt.metadata().id}", problems=problems,
                           notes=notes)

    def _offer_head_start(self, dt: DeltaTable) -> Any:
        """delta-rs's add actions, read now and offered to the head start (carriers/storage/head_start.py) when the
        command line gave one and the table is on a store; None otherwise (read after the replay, as before)."""
        head = self.head_start
        if head is None or head.offered or self.storage.local_root is not None:
            return None
        try:
            actions = dt.get_add_actions(flatten=False)
            if int(actions.num_rows) > HEAD_START_MAX_FILES:
                head.offer(())
                return None  # released: read again after the replay, as without a head start
            import pyarrow as pa

            columns = pa.table(actions).select(["path", "size_bytes"]).to_pydict()
        except BaseException as exc:  # read again after the replay, failing there as it always has (coded)
            if not (isinstance(exc, Exception) or is_panic(exc)):
                raise
            head.offer(())
            return None
        location = self._location
        # Where the live version will locate each file (a path it refuses is offered nowhere: never asked for).
        rels = [canonical_relative(raw)[0] for raw in columns["path"]]
        head.offer((location(rel), -1 if size is None else int(size))
                   for rel, size in zip(rels, columns["size_bytes"], strict=True) if rel is not None)
        return actions

    def _table_view(self, dt: DeltaTable, log: LogState) -> dict[str, Any]:
        schema = json.loads(dt.schema().to_json())
        protocol = dt.protocol()
        config = dict(dt.metadata().configuration)
        return {
            "schema": strip_comments(schema),
            "partition_columns": list(dt.metadata().partition_columns),
            "reader_features": view_reader_features(int(protocol.min_reader_version), protocol.reader_features),
            "read_properties": {k: config[k] for k in READ_PROPERTIES if k in config},
        }

    def _live_vectors(self, log: LogState) -> Iterator[_LiveVector]:
        """The live files' deletion-vector descriptors (``_deletion_vector_files``, ``vectors_past_their_rows``): each
        file's raw path, its add, the descriptor and the vector's file (``deletion_vector_path``: None for an inline
        vector, the ValueError where the descriptor names none)."""
        for raw, add in log.adds.having("deletionVector"):
            descriptor = add.get("deletionVector")
            if not isinstance(descriptor, dict):
                continue
            try:
                where: str | ValueError | None = deletion_vector_path(descriptor)
            except ValueError as exc:
                where = exc
            yield raw, add, descriptor, where

    def _vector_relative(self, descriptor: dict[str, Any], where: str) -> tuple[str | None, str]:
        """A stored vector's file relative to the table root (``canonical_relative``), or (None, why it is refused)."""
        if descriptor.get("storageType") == "p":
            # The part under the table root is held to the rules of relative paths ('..', '.', escapes).
            return canonical_relative(where[len(self.uri) + 1:]) if where.startswith(self.uri + "/") \
                else (None, "an absolute deletion vector path outside the table")
        return canonical_relative(where)

    def _deletion_vector_files(self, log: LogState, problems: list[Problem]) -> list[DataFile]:
        out: dict[str, DataFile] = {}
        for raw, _, descriptor, where in self._live_vectors(log):
            if isinstance(where, ValueError):
                problems.append(Problem(Code.TABLE_INCONSISTENT, f"malformed deletion vector of {raw}: {where}", raw))
                continue
            if where is None:
                continue  # inline vector: its bits live in the log itself (and in the file's view), there is no file
            offset = descriptor.get("offset")
            if type(offset) is not int:
                # Measured (delta-spark 4.4, delta-rs 1.6): without an offset Spark reads the vector at byte 0 (and
                # refuses the read: the version byte is no size), delta-rs at byte 1 — its rows, Spark's none.
                problems.append(Problem(Code.TABLE_INCONSISTENT, f"the deletion vector of {raw} is stored in a file "
                                        f"but gives no offset ({str(offset)[:40]}): Spark reads it at byte 0 and "
                                        "refuses the read, delta-rs at byte 1", raw))
                continue
            if descriptor.get("storageType") == "u" and "%" in str(descriptor.get("pathOrInlineDv"))[:-20]:
                # The random prefix before the z85 uuid (the folder of the file). Measured: delta-rs decodes its
                # escapes (a prefix '%41' read 'A/deletion_vector_…'), Spark's Hadoop Path reads it as
                # written ('%41/…'): two files, other rows for each.
                problems.append(Problem(Code.PATH_AMBIGUOUS, f"deletion vector {where!r} of {raw}: its folder prefix "
                                        "holds a percent-escape, which delta-rs decodes and Spark reads as written",
                                        raw))
                continue
            rel, reason = self._vector_relative(descriptor, where)
            if rel is None:
                problems.append(Problem(Code.PATH_AMBIGUOUS, f"deletion vector {where!r}: {reason}", raw))
                continue
            location = self._location(rel)
            # Several adds may share one DV file (different offsets): it is one file of the version.
            if rel not in out:
                size = self.storage.size_of(location)
                out[rel] = DataFile(path=rel, size=-1 if size is None else size, kind="deletion_vector",
                                    location=location)
        return list(out.values())

    def vectors_past_their_rows(self, log: LogState) -> list[Problem]:
        """Deletion vectors naming a row past their file's rows (its ``numRecords``; 2**31 where it states none),
        found from the bitmaps' headers before delta-rs reads them. delta-rs refuses such a vector, but only after
        making a row mask as long as the greatest row named (measured, delta-rs 1.6: 27 s and 4 GiB for row 2**32 + 5
        of a 4-row file; row 2**40 ran the machine out of memory and the process was killed): ``table_unreadable``
        here, delta-rs not asked. Vectors whose bitmap is not one are left to delta-rs (it refuses them unread).
        Rows past 2**31 are refused whatever ``numRecords`` states (a Parquet file of more rows with a vector is not
        attested). An inline vector whose bitmap runs past its stated ``sizeInBytes`` is ``table_inconsistent``
        (Spark reads the stated bytes, delta-rs every decoded one)."""
        out: list[Problem] = []
        stored: dict[str, bytes | None] = {}
        for raw, add, descriptor, where in self._live_vectors(log):
            if isinstance(where, ValueError):
                continue  # refused as it is (_deletion_vector_files)
            try:
                if where is None:  # inline: z85 of the magic number and the bitmap
                    data, at = z85_decode(str(descriptor.get("pathOrInlineDv") or "")), 0
                else:
                    offset = descriptor.get("offset")
                    if type(offset) is not int or offset < 0:
                        continue  # refused as it is (_deletion_vector_files)
                    rel = self._vector_relative(descriptor, where)[0]
                    if rel is None and descriptor.get("storageType") == "p" and not where.startswith(self.uri + "/"):
                        # A 'p' path outside the table (refused by _deletion_vector_files): read relative to the
                        # root, as this check always has (the shared walk changes no result).
                        rel = canonical_relative(where)[0]
                    if rel is None:
                        continue  # refused as it is (_deletion_vector_files)
                    if rel not in stored:
                        stored[rel] = self.storage.read(rel)
                    data, at = stored[rel] or b"", offset + 4  # past the vector's size (i32) at its offset
            except (ValueError, OSError):
                continue
            walked = vector_walk(data, at)
            if walked is None:
                continue
            least, end = walked
            size = descriptor.get("sizeInBytes")
            if where is None and type(size) is int and (end > size or size > len(data)):
                # Spark decodes an inline vector and reads its first sizeInBytes bytes (the rest is z85 padding),
                # delta-rs reads every decoded byte. Measured (delta-spark 4.4, delta-rs 1.x): a vector of rows {1, 2}
                # stated 2 bytes short failed Spark's read of the file while delta-rs deleted both rows (round 19).
                out.append(Problem(Code.TABLE_INCONSISTENT, f"the inline deletion vector of {raw} states "
                                   f"{size} bytes, its bitmap takes {end} of the {len(data)} it decodes to: Spark "
                                   "reads the stated bytes, delta-rs every one — readers get other rows", raw))
                continue
            if least is None:
                continue
            try:
                records = json.loads(add.get("stats") or "null")
            except ValueError:
                records = None
            count = records.get("numRecords") if isinstance(records, dict) else None
            # numRecords is the log's word (delta-rs checks the mask against it): a file stating more rows than 2**31
            # is held to 2**31, so no statement makes delta-rs allocate more than 2 GiB.
            rows = min(count, _MOST_VECTOR_ROWS) if type(count) is int else _MOST_VECTOR_ROWS
            if least >= rows:
                stated = f"{count} rows" if type(count) is int else "unstated rows"
                out.append(Problem(Code.TABLE_UNREADABLE, f"the deletion vector of {raw} names row {least} or later, "
                                   f"past the file's {stated} (or 2**31): delta-rs refuses such a vector after making "
                                   "a row mask that long (gigabytes), so it is not read", raw))
        return out

    def _cross_check_dvs(self, dt: DeltaTable, log: LogState, problems: list[Problem]) -> None:
        """The files the engine applies a deletion vector to must be the ones the log says have one."""
        with_dv = {raw for raw, a in log.adds.having("deletionVector") if isinstance(a.get("deletionVector"), dict)}
        if not with_dv and "deletionVectors" not in (dt.protocol().reader_features or []):
            return
        try:
            reader = dt.deletion_vectors()
            engine: set[str] = set()
            for batch in reader:
                engine.update(str(x) for x in batch.column("filepath").to_pylist())
        except Exception as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problems.append(Problem(Code.TABLE_UNREADABLE, f"delta-rs cannot read the deletion vectors: {text}"))
            return
        expected = {canonical_relative(raw)[0] or raw for raw in with_dv}
        roots = self._engine_roots(dt)
        got = {engine_relative(roots, p, encoded=True) for p in engine}
        if got != expected:
            problems.append(Problem(Code.TABLE_INCONSISTENT, "delta-rs applies deletion vectors to other files than "
                                    "the log names"))

    def _engine_roots(self, dt: DeltaTable) -> tuple[str, ...]:
        """The prefixes of the locations delta-rs gives (see engine_relative): the resolved local root and the table
        URI's path, and on an object store the table URI itself. Computed once per check, not once per file (the URI
        is a call into delta-rs)."""
        uri = str(dt.table_uri).rstrip("/")
        local = "" if self.storage.local_root is None else str(self.storage.local_root)
        return local, urlparse(uri).path.rstrip("/") if uri.startswith("file:") or local else "", uri

    def _cross_check_uris(self, dt: DeltaTable, files: Sequence[DataFile], problems: list[Problem]) -> None:
        """Locally, the files delta-rs reads must be exactly the ones attest reads.

        delta-rs gives a location as its table URI's (percent-encoded) path followed by the decoded relative path,
        so the comparison is on the part after the root."""
        ours = [f.path for f in files if f.kind == "data"]
        roots = self._engine_roots(dt)
        uris = dt.file_uris()
        first = roots[0] + "/" if roots[0] else ""
        if first and not first.startswith("file:") and all(uri.startswith(first) for uri in uris):
            # What engine_relative gives each: the first root is the one every location starts with.
            engine = [uri[len(first):] for uri in uris]
        else:
            engine = [engine_relative(roots, uri) for uri in uris]
        if engine != ours and sorted(engine) != sorted(ours):  # (equal lists sort alike: both come in delta-rs's order)
            odd = sorted(set(engine) ^ set(ours))[:3]
            problems.append(Problem(Code.PATH_AMBIGUOUS, f"delta-rs resolves the live files to other locations than "
                                    f"the log's paths name: {odd}"))

    def _changes(self, attested: str, v: Version) -> Changes:
        if not is_digits(attested):
            raise VersionNotFoundError(f"the attestation binds {attested!r}, not a Delta version")
        b, n = int(attested), v.number
        if b > n:
            # Never written so (an attestation is carried after what it binds): keys edited, or copied from another
            # table with its properties — CREATE TABLE … LIKE and CLONE copy them (round 27).
            raise VersionNotFoundError(f"the attestation binds version {b}, later than version {n} itself (its keys "
                                       "were edited, or copied from another table: CREATE TABLE … LIKE and CLONE "
                                       "copy a table's properties)")
        data: list[Commit] = []
        rewrites: list[Commit] = []
        for x in range(b + 1, n + 1):
            commit = read_commit(self.storage, x)
            if commit is None:
                return Changes("none", f"the log entries for versions {b + 1}..{n} are no longer available; the "
                               "reader view decides", complete=False)
            if not commit.touches_files:
                continue  # metadata only: attestations, property edits; the reader view catches what matters
            (data if commit.data_change else rewrites).append(commit)
        if data:
            return Changes("data", _describe(data))
        if rewrites:
            return Changes("compaction", _describe(rewrites))
        return Changes("none")

    def content_reader(self, version: Version, files: Sequence[DataFile], *,
                       statistics: bool = False) -> ContentReader:
        """See AttestedTable.content_reader (carriers/delta/content.py)."""
        from carriers.delta import content

        return content.content_reader(self, version, files, statistics=statistics)

    def file_content_digests(self, version: Version, files: Sequence[DataFile], *,
                             progress: Progress | None = None, statistics: bool = False) -> dict[str, ContentDigest]:
        """See AttestedTable.file_content_digests (carriers/delta/content.py)."""
        from carriers.delta import content

        return content.file_content_digests(self, version, files, progress=progress, statistics=statistics)

    def content_row_ids(self, version: Version) -> str | None:
        """See AttestedTable.content_row_ids: with ``delta.enableRowTracking`` each row's row_id and
        row_commit_version (carriers/delta/content.py)."""
        from carriers.delta import content

        configuration = dict(self._load(version.number).metadata().configuration)
        return content.ROW_IDS_MARKER if content.row_tracking_enabled(configuration) else None

    def content_rows_read(self, attested: Version, paths: Sequence[str]) -> dict[str, int]:
        """See AttestedTable.content_rows_read (carriers/delta/content.py ``rows_read``)."""
        from carriers.delta import content

        return content.rows_read(self, attested, paths)

    def content_widening(self, attested_view: Mapping[str, Any], view: Mapping[str, Any]) -> dict[str, str] | None:
        """See AttestedTable.content_widening: Delta's typeWidening (carriers/delta/content.py ``widening``)."""
        from carriers.delta import content

        return content.widening(dict(attested_view), dict(view))

    def widened_digests(self, attested: Version, version: Version, files: Sequence[DataFile],
                        identities: Mapping[str, tuple[int, str]], columns: frozenset[str]
                        ) -> dict[str, tuple[ContentDigest, ContentDigest]] | str:
        """See AttestedTable.widened_digests (carriers/delta/content.py)."""
        from carriers.delta import content

        return content.widened_digests(self, attested, version, files, dict(identities), columns)

    def content_type_changes(self, attested: Version, version: Version) -> list[str]:
        """See AttestedTable.content_type_changes: the schemas of the log's replays (Delta type widening)."""
        from carriers.delta import content

        return content.widened(self, attested, version)

    def rewrites_between(self, attested: Version, version: Version) -> list[Rewrite] | None:
        """See AttestedTable.rewrites_between: ``dataChange: false`` commits (carriers/delta/content.py)."""
        from carriers.delta import content

        return content.rewrites_between(self, attested, version)

    def _built_on(self, v: Version) -> Version | None:
        """Did commit ``v`` append to / merge into the table's previous version (which is then an input)?"""
        if v.number == 0:
            return None
        under = self.data_version(v.number)
        if under != v.number:  # a metadata-only version (attestable_version): its data is the data commit's under it
            return self._built_on(Version(id=str(under), number=under))
        commit = read_commit(self.storage, v.number)
        if commit is None:
            return None
        previous = Version(id=str(v.number - 1), number=v.number - 1)
        if commit.operation.upper() in _READS_PREVIOUS:
            return previous
        # An append (or a partial overwrite) keeps files that were live before it: it builds on that version.
        added = {canonical_relative(str(a.get("path")))[0] for a in commit.adds}
        live = self._live(v).files
        return previous if any(f.kind == "data" and f.path not in added for f in live) else None

    def _env(self, dialect: str | None, engines: Mapping[str, str] | None, v: Version) -> str:
        return env_identity(
            producer_name=PRODUCER_NAME, producer_version=__version__,
            engines={"deltalake": str(deltalake.__version__), **dict(engines or {})},
            dialect=dialect, table_format="delta", protocol=protocol_doc(self._load(v.number).protocol()))

    def record(self, request: RecordRequest | None = None, /, **fields: Any) -> WriteResult:
        """See AttestedTable.record; refuses tables with writer features an attestation commit cannot honour."""
        request = RecordRequest.of(request, fields)
        if not self.detached and self.property_writer is None and self.storage.conditional_puts:
            check_writable(protocol_doc(self._load(self.latest_version()).protocol()), str(self.display))
        recording, self._recording = self._recording, True
        try:
            return super().record(request)
        finally:
            self._recording = recording


# ---- helpers -------------------------------------------------------------------------------------------------------
def _cross_check_metadata(dt: DeltaTable, log: LogState, problems: list[Problem]) -> None:
    """The schema, partition columns, properties, reader protocol and table id the view takes from delta-rs must be the
    ones the log's own replay reads: where two readers of one log disagree on them, the view would vouch for one reader
    only. delta-rs reads them from a version's checksum file (``<version>.crc``) when there is one, Spark from the log
    (measured): a forged checksum file is such a disagreement."""
    meta, protocol = log.metadata or {}, log.protocol or {}
    engine_protocol = dt.protocol()
    try:
        schema_agrees = jsonscan.loads_unique(str(meta.get("schemaString"))) == json.loads(dt.schema().to_json())
    except (ValueError, RecursionError):
        schema_agrees = False
    checks = {
        "schema": schema_agrees,
        "partition columns": list(meta.get("partitionColumns") or []) == list(dt.metadata().partition_columns),
        # A null value is no property (delta-rs drops it when it writes one).
        "properties": {str(k): str(v) for k, v in (meta.get("configuration") or {}).items() if v is not None}
        == {k: v for k, v in dt.metadata().configuration.items() if v is not None},
        "reader protocol": protocol.get("minReaderVersion") == engine_protocol.min_reader_version
        and sorted(protocol.get("readerFeatures") or []) == sorted(engine_protocol.reader_features or []),
        "table id": meta.get("id") == dt.metadata().id,  # the identity an attestation is bound to
    }
    differ = [name for name, same in checks.items() if not same]
    if differ:
        problems.append(Problem(Code.TABLE_INCONSISTENT, f"delta-rs and the log replay read other {', '.join(differ)} "
                                f"at version {log.version}"))


# A file's row_tracking part when the log gives neither field (json_safe of two None values, as the encoder writes it).
_NO_ROW_TRACKING = '{"baseRowId":null,"defaultRowCommitVersion":null}'


# Whether a version's file views are made in bulk where the per-file branches are not needed (_bulk_views);
# ATTEST_FAST=0 makes every one in the loop (tests/delta/test_delta_bulk_views.py holds the two to each other).
BULK_VIEWS: bool = fast.ON
# Whether delta-rs's paths, when they are the log's in its order, are located in the log's columns without a look-up
# per path (Adds.same_order); ATTEST_FAST=0 looks each up (tests/delta/test_delta_aligned.py holds the two together).
ALIGNED_LISTING: bool = fast.ON


def _bulk_views(paths: list[str], sizes: list[Any], partition_texts: list[str] | None, stats_texts: list[str],
                engine_times: list[Any], live: list[bool], logged_sizes: list[Any], logged_values: list[Any],
                logged_dvs: list[Any], base_rows: list[Any], commit_versions: list[Any], logged_times: list[Any],
                spellings: _Spellings, location_of: str,
                problems: list[Problem]) -> tuple[list[DataFile], dict[str, str], dict[str, Any]]:
    """What ``DeltaCarrier._compute_live``'s per-file loop makes of files whose paths are all plain (each its own
    canonical relative path), named once, with no statistics to look into: the files, their view digests and times,
    and the size problems (appended to ``problems``, in file order). Each value is made by the loop's own expression,
    column by column rather than file by file; the view texts are made and hashed one at a time (never all held).
    ``stats_texts`` is emptied once the views are hashed."""
    sized = [int(size) for size in sizes]
    for rel, is_live, logged, size in zip(paths, live, logged_sizes, sized, strict=True):
        # A logged size of 0 is a real (empty) file's size, not a missing one.
        if is_live and (-1 if logged is None else int(logged)) != size:
            problems.append(Problem(Code.TABLE_INCONSISTENT, f"delta-rs and the log disagree on the size of {rel}",
                                    rel))
    if spellings.strings or spellings.stamps or spellings.floats:  # else see_partitions finds nothing
        for rel, values in zip(paths, logged_values, strict=True):
            spellings.see_partitions(rel, values)
    encode = _file_encode()
    dvs = ["null" if dv is None else encode(_dv_entry(dv)) for dv in logged_dvs]
    rows = [_NO_ROW_TRACKING if base is None and version is None else
            encode(json_safe({"baseRowId": base, "defaultRowCommitVersion": version}))
            for base, version in zip(base_rows, commit_versions, strict=True)]
    partitions = ["null"] * len(paths) if partition_texts is None else partition_texts
    if spellings.partitions:
        # As written too: engines parse some spellings alike and others not (a timestamp's zone, measured).
        partitions = [f'{part},"partition_text":{encode(json_safe(v) if isinstance(v, dict) else None)}'
                      for part, v in zip(partitions, logged_values, strict=True)]
    texts = (f'{{"deletion_vector":{dv},"kind":"data","partition":{part},"row_tracking":{row},"size":{size},'
             f'"stats":{stats}}}' for dv, part, row, size, stats in zip(dvs, partitions, rows, sized, stats_texts,
                                                                        strict=True))
    file_views = dict(zip(paths, [blake3_hex(text.encode("utf-8", "surrogatepass")) for text in texts], strict=True))
    # The statistics' texts (~34 MiB at 200,000 files) are read no further (the caller reads none of delta-rs's columns
    # after this): emptied before the times and files are made, which set the listing's peak memory otherwise.
    stats_texts.clear()
    del dvs, rows, partitions, texts
    times = dict(zip(paths, [engine if logged is MISSING else logged
                             for engine, logged in zip(engine_times, logged_times, strict=True)], strict=True))
    # [DataFile(path=rel, size=size, kind="data", location=location_of + rel) ...], made in C passes
    files = data_files(paths, sized, map(location_of.__add__, paths))
    return files, file_views, times


def _vector_without_the_feature(log: LogState) -> str | None:
    """What is wrong with a version whose live files carry deletion vectors its protocol does not enable (the
    ``deletionVectors`` reader and writer feature): delta-rs applies them, Spark (delta-spark 4.4) applies none and
    reads every stored row (measured: tests/adversarial/test_delta_dv_cardinality.py). None when nothing is."""
    protocol = log.protocol if isinstance(log.protocol, dict) else {}
    if all("deletionVectors" in (protocol.get(k) or ()) for k in ("readerFeatures", "writerFeatures")):
        return None
    found = next(log.adds.having("deletionVector"), None)
    if found is None:
        return None
    return (f"{str(found[0])[:300]} has a deletion vector, and the protocol does not enable deletion vectors (reader "
            "and writer feature deletionVectors): delta-rs applies it, Spark reads every stored row")


def _mapping_without_the_feature(log: LogState) -> str | None:
    """What is wrong with a version whose ``delta.columnMapping.mode`` maps columns (name, id) while its protocol does
    not enable column mapping (reader version 2, or 3 with the ``columnMapping`` reader feature): delta-rs then reads
    columns by their logical names, Spark (delta-spark 4.4) by their physical names (measured: nulls against the
    values, tests/adversarial/test_delta_mapping_protocol.py). None when nothing is."""
    configuration = (log.metadata or {}).get("configuration") if isinstance(log.metadata, dict) else None
    mode = (configuration or {}).get("delta.columnMapping.mode") if isinstance(configuration, dict) else None
    if mode is None or str(mode).lower() == "none":
        return None
    protocol = log.protocol if isinstance(log.protocol, dict) else {}
    reader = protocol.get("minReaderVersion")
    if reader == 2 or (type(reader) is int and reader >= 3 and "columnMapping" in (protocol.get("readerFeatures")
                                                                                   or ())):
        return None
    return (f"delta.columnMapping.mode is {str(mode)[:40]!r}, and the protocol does not enable column mapping (reader "
            "version 2, or the columnMapping reader feature): delta-rs reads columns by their logical names, Spark by "
            "their physical names")


def _dv_entry(dv: Any) -> Any:
    if not isinstance(dv, dict):
        return None
    return {k: dv.get(k) for k in ("storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality")}


# A live file's deletion vector (DeltaCarrier._live_vectors): the file's raw path, its add, the descriptor and the
# vector's file (None when inline, the ValueError when the descriptor names none).
_LiveVector = tuple[str, dict[str, Any], dict[str, Any], str | ValueError | None]

# The most rows a deletion vector may name a row within (see DeltaCarrier.vectors_past_their_rows): delta-rs's row mask
# for it is at most this many bytes.
_MOST_VECTOR_ROWS = 2 ** 31


def _describe(commits: Sequence[Commit]) -> str:
    labels = [c.label() for c in commits[:5]]
    more = f" (+{len(commits) - 5} more)" if len(commits) > 5 else ""
    return ", ".join(labels) + more


def attest_after_write(table: str | DeltaTable, *, model: str, storage_options: dict[str, str] | None = None,
                       detached: bool = False, **fields: Unpack[AfterWrite]) -> WriteResult:
    """Attest the table's latest data version after an ordinary ``write_deltalake`` (or any engine's commit).

    The program is ``program_hash`` or, given ``sql``, its SQL program identity in ``dialect``. With ``signer``
    (e.g. ``attest.signing.PemSigner.load("ci.key")``) the attestation is signed (docs/signing.md). The other keywords
    are AfterWrite's (carriers/base.py).
    """
    request = after_write_request(model, fields)
    return DeltaCarrier(table, storage_options=storage_options, detached=detached).record(request)


