"""The Delta Lake carrier: an attestation as ``recipe_manifest.*`` table properties plus a content-addressed sidecar.

Open spec: docs/carrier-properties.md; user guide: docs/delta.md. In short:
- the data commit is an ordinary Delta commit; the attestation is a *separate* later commit that only sets
  ``recipe_manifest.*`` properties (delta-rs ``alter.set_table_properties``), so it never perturbs the data;
- ``recipe_manifest._binding.version`` names the data version the attestation describes; a reader proves the
  binding by checking that nothing changed data between that version and the one verified;
- every attestation writes ``<table>/_recipe_attest/<blake3>.json`` (file triples + observed inputs); above
  ``INLINE_OUTPUTS_MAX`` files the output list lives only there, so the property commit stays small.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from attest import __version__
from attest.build import PRODUCER_NAME, build_manifest, new_run_id
from attest.errors import (
    CarrierError,
    Code,
    Problem,
    TableNotFoundError,
    UnsupportedTableError,
    VersionNotFoundError,
)
from attest.identity.env import env_identity
from attest.identity.inputs import ObservedInput, content_identity, inputs_identity
from attest.model import Manifest
from carriers import properties as props
from carriers.base import Attestation, DataFile, FileIdentity, Progress, TableState, WriteResult, triples_for
from carriers.delta_log import (
    Commit,
    Storage,
    deletion_vector_path,
    live_deletion_vectors,
    read_commit,
)
from carriers.sidecar import Sidecar as _Sidecar
from carriers.sidecar import SidecarError, build, sidecar_name

try:
    import deltalake
    from deltalake import CommitProperties, DeltaTable
    from deltalake.exceptions import TableNotFoundError as _DeltaTableNotFound
except ImportError as exc:  # pragma: no cover - the [delta] extra is missing
    raise ImportError("the Delta carrier needs deltalake: pip install 'recipe-attest[delta]'") from exc

from attest.hashing import hash_bytes, hash_files, hash_stream

__all__ = [
    "SIDECAR_DIR",
    "DeltaCarrier",
    "attest_after_write",
    "hive_partition_dir",
    "write_content_addressed",
]

SIDECAR_DIR = "_recipe_attest"  # "_"-prefixed: Delta readers and VACUUM ignore it (Delta protocol, hidden dirs)
# Budget for the recipe_manifest.* keys of one inline attestation: above it the outputs go to the sidecar even
# when there are at most INLINE_OUTPUTS_MAX of them (long partition paths), so the commit stays <= 16 KiB.
INLINE_BYTES_MAX = 6 * 1024
# How far state() looks past a data version for its follow-up attestation commit, and how far record() walks
# back over metadata-only commits: bounded, so a table with a long metadata-only history cannot stall a read.
_SCAN_LIMIT = 1000
# Operations that read the table they write into (the previous version is then an observed input).
_READS_PREVIOUS = frozenset({"MERGE", "UPDATE", "DELETE", "STREAMING UPDATE"})
_SIDECAR_PROBLEMS = frozenset({Code.SIDECAR_MISSING, Code.SIDECAR_MISMATCH})


def _table_uri(table: str | DeltaTable) -> str:
    if isinstance(table, DeltaTable):
        return str(table.table_uri).rstrip("/")
    parsed = urlparse(table)
    if parsed.scheme and len(parsed.scheme) > 1:
        return table.rstrip("/")
    return Path(table).resolve().as_uri()


@dataclass(frozen=True)
class _Resolved:
    """The attestation in force at a version, with its binding and where it was found."""

    attestation: Attestation | None
    binding: int | None
    found_at: int | None
    notes: tuple[str, ...] = ()


class DeltaCarrier:
    """Attestations of a Delta table's versions, carried in its table properties (see module docstring)."""

    kind = "delta"

    def __init__(
        self,
        table: str | DeltaTable,
        *,
        storage_options: dict[str, str] | None = None,
        property_writer: Callable[[dict[str, str]], None] | None = None,
        detached: bool = False,
    ) -> None:
        """``property_writer(updates)`` replaces delta-rs's ALTER for the attestation commit (the Spark hook
        passes a Spark SQL ``ALTER TABLE ... SET TBLPROPERTIES``); ``detached=True`` never commits to the Delta
        log: the attestation goes to ``_recipe_attest/versions/<version>.json`` (docs/carrier-properties.md)."""
        self.property_writer = property_writer
        self.detached = detached
        self.storage_options = dict(storage_options or {})
        if isinstance(table, DeltaTable) and not self.storage_options and table._storage_options:
            self.storage_options = dict(table._storage_options)
        self.uri = _table_uri(table)
        self.display = table if isinstance(table, str) else self.uri
        self.storage = Storage(self.uri, self.storage_options)

    # ---- table access ------------------------------------------------------------------------------------
    def _load(self, version: int | None = None) -> DeltaTable:
        try:
            return DeltaTable(self.uri, version=version, storage_options=self.storage_options or None)
        except _DeltaTableNotFound as exc:
            raise TableNotFoundError(f"no Delta table at {self.display}") from exc
        except Exception as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if version is not None and ("version" in text.lower() or "not found" in text.lower()):
                raise VersionNotFoundError(f"version {version} of {self.display} cannot be loaded: {text}") from exc
            if "Unsupported" in text or "not yet supported" in text:
                raise UnsupportedTableError(f"delta-rs cannot read {self.display}: {text}") from exc
            raise CarrierError(f"cannot open Delta table {self.display}: {text}") from exc

    def latest_version(self) -> int:
        return int(self._load().version())

    @staticmethod
    def _parse_version(version: str | int) -> int:
        try:
            value = int(version)
        except ValueError as exc:
            raise VersionNotFoundError(f"Delta versions are integers, got {version!r}") from exc
        if value < 0:
            raise VersionNotFoundError(f"Delta versions are non-negative, got {value}")
        return value

    def _version_or_latest(self, version: str | int | None) -> tuple[int, int]:
        latest = self.latest_version()
        n = latest if version is None else self._parse_version(version)
        if n > latest:
            raise VersionNotFoundError(f"{self.display} has no version {n} (latest is {latest})")
        return n, latest

    def data_version(self, latest: int | None = None) -> int:
        """The newest version whose commit changed files: metadata-only commits on top of it (attestations,
        property edits, schema comments) do not change what an attestation of the data would describe."""
        v = self.latest_version() if latest is None else latest
        for _ in range(_SCAN_LIMIT):
            if v == 0:
                return 0
            commit = read_commit(self.storage, v)
            if commit is None or commit.touches_files:
                return v
            v -= 1
        return v

    # ---- files ---------------------------------------------------------------------------------------------
    def _relative(self, raw: str) -> str:
        """A log path as DataFile.path: URL-decoded, relative to the root when under it, else the URI."""
        decoded = unquote(raw)
        if (urlparse(decoded).scheme and len(urlparse(decoded).scheme) > 1) or decoded.startswith("/"):
            root = self.uri + "/"
            if raw.startswith(root):
                return unquote(raw[len(root):])
            if decoded.startswith(unquote(root)):
                return decoded[len(unquote(root)):]
            return raw  # outside the root: keep the absolute URI as written
        return decoded

    def list_files(self, version: str | int | None = None) -> list[DataFile]:
        n, _ = self._version_or_latest(version)
        return self._files_of(self._load(n), n)

    def _files_of(self, dt: DeltaTable, n: int) -> list[DataFile]:
        import pyarrow as pa

        actions = pa.table(dt.get_add_actions(flatten=False)).select(["path", "size_bytes"]).to_pydict()
        files = [DataFile(path=self._relative(p), size=int(s), kind="data")
                 for p, s in zip(actions["path"], actions["size_bytes"], strict=True)]
        protocol = dt.protocol()
        if "deletionVectors" in (protocol.reader_features or []):
            files.extend(self._deletion_vector_files(n))
        return sorted(files, key=lambda f: f.path)

    def _deletion_vector_files(self, n: int) -> list[DataFile]:
        out: dict[str, DataFile] = {}
        for descriptor in live_deletion_vectors(self.storage, n).values():
            try:
                where = deletion_vector_path(descriptor)
            except ValueError as exc:
                raise CarrierError(f"version {n} has a malformed deletion vector descriptor: {exc}") from exc
            if where is None:
                continue  # inline vector: its bits live in the log itself, there is no file
            path = self._relative(where) if descriptor.get("storageType") == "p" else where
            # Several adds may share one DV file (different offsets): it is one file of the version.
            size = self._file_size(path)
            out[path] = DataFile(path=path, size=size, kind="deletion_vector")
        return list(out.values())

    def _file_size(self, path: str) -> int:
        """A DV file's size from storage (the log records only the vector's size inside the file)."""
        if self.storage.local_root is not None and not _is_uri(path):
            try:
                return self.storage.local_path(path).stat().st_size
            except OSError:
                return -1  # missing: the bytes level reports it
        try:
            from pyarrow.fs import FileType

            info = self.storage.handler.get_file_info([path])[0]
            return int(info.size) if info.type == FileType.File else -1
        except Exception:
            return -1

    def hash_files(self, files: Sequence[DataFile], *, progress: Progress | None = None) -> dict[str, str]:
        out: dict[str, str] = {}
        local: dict[str, str] = {}
        remote: list[DataFile] = []
        for f in files:
            if self.storage.local_root is not None and not _is_uri(f.path):
                local[str(self.storage.local_path(f.path))] = f.path
            elif f.path.startswith("file:") or f.path.startswith("/"):
                local[unquote(urlparse(f.path).path)] = f.path
            else:
                remote.append(f)
        present = [p for p in local if Path(p).is_file()]
        if present:
            try:
                hashed = hash_files(present, progress=progress)
            except OSError:
                hashed = {}
                for p in present:  # one unreadable file must not hide the others' hashes
                    try:
                        hashed.update(hash_files([p]))
                    except OSError:
                        continue
            for p, h in hashed.items():
                out[local[p]] = h
        if remote:
            def one(f: DataFile) -> tuple[str, str | None]:
                try:
                    stream = self._open_remote(f.path)
                    try:
                        return f.path, hash_stream(stream)
                    finally:
                        stream.close()
                except Exception:
                    return f.path, None  # unreadable: the verifier reports it as missing

            with ThreadPoolExecutor(max_workers=8) as pool:
                for path, digest_hex in pool.map(one, remote):
                    if digest_hex is not None:
                        out[path] = digest_hex
        return out

    def _open_remote(self, path: str) -> Any:
        if not _is_uri(path):
            return self.storage.open_stream(path)
        parent, _, name = path.rpartition("/")
        return Storage(parent, self.storage_options).open_stream(name)

    # ---- reading attestations ------------------------------------------------------------------------------
    def _parse(self, configuration: Mapping[str, str]) -> tuple[Attestation | None, int | None]:
        """The attestation carried by one property map (None when it carries none) and its binding version."""
        keys = props.manifest_keys(configuration)
        if not any(v != props.ABSENT for v in keys.values()):
            return None, None
        problems: list[Problem] = []
        try:
            document, binding = decode_properties(keys)
        except props.KeyMappingError as exc:
            bad = Problem(Code.CARRIER_TAMPERED, f"recipe_manifest.* properties do not form a manifest: {exc}")
            return Attestation(document={}, attested_version=None, location=self.uri, problems=(bad,)), None
        version: int | None = None
        raw_version = binding.get(props.KEY_VERSION)
        if raw_version is None or not raw_version.isdigit():
            problems.append(Problem(Code.CARRIER_TAMPERED,
                                    f"{props.KEY_VERSION} is {raw_version!r}, not a table version"))
        else:
            version = int(raw_version)
        files: tuple[FileIdentity, ...] | None = None
        inputs: tuple[ObservedInput, ...] | None = None
        where = binding.get(props.KEY_OUTPUTS_WHERE)
        sidecar = self._read_sidecar(binding, problems)
        if sidecar is not None:
            files, inputs = sidecar.files, sidecar.inputs
            if version is not None and sidecar.attested_version != str(version):
                problems.append(Problem(Code.CARRIER_TAMPERED,
                                        f"the sidecar describes version {sidecar.attested_version}, the table "
                                        f"properties bind version {version}"))
            pair = inputs_identity(sidecar.inputs)
            carried = (document.get("inputs_hash"), document.get("inputs_proof_class"))
            if (pair or (None, None)) != carried:
                problems.append(Problem(Code.CARRIER_TAMPERED, "inputs_hash / inputs_proof_class do not match the "
                                        "observed inputs recorded in the sidecar", "$.inputs_hash"))
        if where == "sidecar":
            if "output_hashes" in document:
                problems.append(Problem(Code.CARRIER_TAMPERED,
                                        "output_hashes are both inline and declared to live in the sidecar"))
            elif files is not None:
                # Reconstitute the full manifest: the list in build order (sorted by path), as written.
                document["output_hashes"] = [{"hash": f.hash, "path": f.path}
                                             for f in sorted(files, key=lambda f: f.path)]
            elif not any(p.code in _SIDECAR_PROBLEMS for p in problems):
                problems.append(Problem(Code.SIDECAR_MISSING, "output_hashes live in a sidecar, but the table "
                                        "properties name none"))
        elif where not in (None, "inline"):
            problems.append(Problem(Code.CARRIER_TAMPERED, f"{props.KEY_OUTPUTS_WHERE} is {where!r}"))
        count = binding.get(props.KEY_OUTPUTS_COUNT)
        listed = document.get("output_hashes")
        if count is not None and isinstance(listed, list) and count != str(len(listed)):
            problems.append(Problem(Code.CARRIER_TAMPERED, f"{props.KEY_OUTPUTS_COUNT} is {count}, but "
                                    f"{len(listed)} output hashes were found", "$.output_hashes"))
        return Attestation(document=document, attested_version=None if version is None else str(version),
                           location=self.uri, files=files, inputs=inputs, problems=tuple(problems),
                           manifest_identity=None if sidecar is None else sidecar.manifest), version

    def _read_sidecar(self, binding: Mapping[str, str], problems: list[Problem]) -> _Sidecar | None:
        path = binding.get(props.KEY_SIDECAR_PATH)
        digest_hex = binding.get(props.KEY_SIDECAR_HASH)
        if path is None and digest_hex is None:
            return None
        if not path or not digest_hex or path != f"{SIDECAR_DIR}/{sidecar_name(digest_hex)}":
            # Untrusted metadata never sends the reader outside _recipe_attest/ or to a name not its hash.
            problems.append(Problem(Code.CARRIER_TAMPERED, f"sidecar reference {path!r} / {digest_hex!r} is not "
                                    f"{SIDECAR_DIR}/<blake3>.json with the recorded BLAKE3"))
            return None
        data = self.storage.read(path)
        if data is None:
            problems.append(Problem(Code.SIDECAR_MISSING, "the attestation's sidecar is missing", path))
            return None
        try:
            return _Sidecar.decode(data, digest_hex)
        except SidecarError as exc:
            problems.append(Problem(Code.SIDECAR_MISMATCH, str(exc), path))
            return None

    def _pointer(self, n: int) -> tuple[Attestation | None, int | None]:
        """The detached attestation of version ``n`` (``_recipe_attest/versions/<n>.json``), if any."""
        data = self.storage.read(pointer_name(n))
        if data is None:
            return None, None
        try:
            doc = json.loads(data)
            keys = doc["properties"]
            if doc.get("format") != POINTER_FORMAT or not isinstance(keys, dict) \
                    or not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items()):
                raise ValueError("not a pointer document")
        except (ValueError, KeyError, TypeError) as exc:
            bad = Problem(Code.CARRIER_TAMPERED, f"{pointer_name(n)} is not a {POINTER_FORMAT} document: {exc}")
            return Attestation(document={}, attested_version=str(n), location=self.uri, problems=(bad,)), n
        attestation, binding = self._parse(keys)
        if attestation is not None and binding != n:
            attestation = _with_problem(attestation, Problem(
                Code.CARRIER_TAMPERED, f"{pointer_name(n)} binds version {binding}, not {n}"))
        return attestation, n

    def _detached_before(self, n: int, floor: int | None) -> tuple[Attestation | None, int | None]:
        """The newest detached attestation of a version in (floor, n] (bounded scan)."""
        names = set(self.storage.list_names(POINTER_DIR))
        if not names:
            return None, None
        low = -1 if floor is None else floor
        for v in range(n, max(low, n - _SCAN_LIMIT), -1):
            if f"{v}.json" in names:
                return self._pointer(v)
        return None, None

    def _resolve(self, n: int, latest: int, configuration: Mapping[str, str]) -> _Resolved:
        """The attestation in force at version ``n`` (see docs/carrier-properties.md, "Binding")."""
        resolved = self._resolve_properties(n, latest, configuration)
        if resolved.binding == n:
            return resolved
        # Delta variant "detached": a per-version pointer under _recipe_attest/versions/ (no log commit); the
        # newer of the two bindings is in force.
        attestation, binding = self._detached_before(n, resolved.binding)
        if attestation is not None:
            return _Resolved(attestation, binding, n, (f"detached attestation {pointer_name(binding or n)}",))
        return resolved

    def _resolve_properties(self, n: int, latest: int, configuration: Mapping[str, str]) -> _Resolved:
        attestation, binding = self._parse(configuration)
        notes: list[str] = []
        if binding != n and n < latest:
            # n may be a data version whose own attestation is a later metadata-only commit (ALTER at n+1, or
            # later when retried): the last one binding n before the next file-changing commit is in force.
            for v in range(n + 1, min(latest, n + _SCAN_LIMIT) + 1):
                commit = read_commit(self.storage, v)
                if commit is None or commit.touches_files:
                    break
                if commit.configuration is None:
                    continue
                ahead, ahead_binding = self._parse(commit.configuration)
                if ahead is not None and ahead_binding == n:
                    attestation, binding = ahead, ahead_binding
                    notes = [f"attestation for version {n} recorded at version {v}"]
        return _Resolved(attestation, binding, n, tuple(notes))

    def read(self, version: str | int | None = None) -> Attestation | None:
        n, latest = self._version_or_latest(version)
        return self._resolve(n, latest, self._load(n).metadata().configuration).attestation

    # ---- state (what the verifier judges) -----------------------------------------------------------------
    def _changes(self, attested: int, n: int) -> tuple[Literal["none", "data", "compaction"], str, bool]:
        """What happened in (attested, n]: ("data" | "compaction" | "none", detail, log complete?)."""
        data: list[Commit] = []
        rewrites: list[Commit] = []
        for v in range(attested + 1, n + 1):
            commit = read_commit(self.storage, v)
            if commit is None:
                return "none", f"the log entries for versions {attested + 1}..{n} are no longer available", False
            if not commit.touches_files:
                continue  # metadata only: attestations, property edits; not a change of the table's files
            (data if commit.data_change else rewrites).append(commit)
        if data:
            return "data", _describe(data), True
        if rewrites:
            return "compaction", _describe(rewrites), True
        return "none", "", True

    def state(self, version: str | int | None = None) -> TableState:
        n, latest = self._version_or_latest(version)
        dt = self._load(n)
        live = tuple(self._files_of(dt, n))
        resolved = self._resolve(n, latest, dt.metadata().configuration)
        att = resolved.attestation
        notes = list(resolved.notes)
        changes: Literal["none", "data", "compaction"] = "none"
        detail = ""
        if att is not None and resolved.binding is not None:
            if resolved.binding > n:
                att = _with_problem(att, Problem(Code.CARRIER_TAMPERED, f"the attestation binds version "
                                                 f"{resolved.binding}, later than version {n} itself"))
            else:
                changes, detail, complete = self._changes(resolved.binding, n)
                if not complete:
                    # Without the log we cannot name what happened; compare the file sets instead.
                    notes.append(detail)
                    attested_paths = {f.path for f in att.files or ()}
                    if att.files is not None and attested_paths != {f.path for f in live}:
                        changes, detail = "data", f"{detail}, and the live files differ from the attested ones"
        return TableState(table=self.display, table_format="delta", version=str(n), attestation=att,
                          live_files=live, changes=changes, change_detail=detail, notes=tuple(notes))

    # ---- writing -------------------------------------------------------------------------------------------
    def write(
        self,
        manifest: Manifest,
        *,
        files: Sequence[FileIdentity] | None = None,
        inputs: Sequence[ObservedInput] = (),
        version: str | int | None = None,
    ) -> WriteResult:
        dt = self._load()
        latest = int(dt.version())
        v = self.data_version(latest) if version is None else self._parse_version(version)
        if v > latest:
            raise VersionNotFoundError(f"{self.display} has no version {v} (latest is {latest})")
        document = manifest.to_dict()
        outputs: list[dict[str, str]] | None = document.get("output_hashes")
        if files is None:
            files = triples_for(manifest.output_hashes or (), self.list_files(v), f"version {v}")
        elif outputs is not None and {(o.get("path"), o["hash"]) for o in outputs} != {(f.path, f.hash)
                                                                                      for f in files}:
            raise CarrierError("the manifest's output_hashes and the given file triples disagree")
        sidecar = build(files, inputs, str(v), manifest)
        data, digest_hex = sidecar.encode()
        sidecar_rel = f"{SIDECAR_DIR}/{sidecar_name(digest_hex)}"
        new = encode_properties(document, version=v, sidecar_path=sidecar_rel, sidecar_hash=digest_hex)
        updates = props.replacement(dt.metadata().configuration, new)
        # Sidecar first: properties must never name a sidecar that is not there yet.
        self.storage.write_once(sidecar_rel, data)
        if self.detached:
            # Immutable: a version is attested once in this mode (write_once refuses different bytes).
            self.storage.write_once(pointer_name(v), encode_pointer(v, new))
            return WriteResult(location=self.uri, attested_version=str(v), sidecar=sidecar_rel, manifest=manifest)
        if self.property_writer is not None:
            self.property_writer(updates)
            return WriteResult(location=self.uri, attested_version=str(v), sidecar=sidecar_rel, manifest=manifest)
        try:
            dt.alter.set_table_properties(
                updates, raise_if_not_exists=False,
                commit_properties=CommitProperties(custom_metadata={"recipe_attest.binding_version": str(v)}))
        except Exception as exc:
            raise _unsupported_or_error(self.display, exc) from exc
        return WriteResult(location=self.uri, attested_version=str(v), sidecar=sidecar_rel, manifest=manifest)

    def record(
        self,
        *,
        model: str,
        program_hash: str,
        inputs: Sequence[ObservedInput] = (),
        run_id: str | None = None,
        dialect: str | None = None,
        engines: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        known_hashes: Mapping[str, tuple[int, str]] | None = None,
        version: int | None = None,
    ) -> WriteResult:
        """Attest the current data version (see carriers.base.TableCarrier.record).

        ``known_hashes`` ({path: (size, hash)}) lets a writer that hashed its files while writing them skip
        re-reading them; as with reuse from the previous attestation, (path, size) must match the log.
        ``version`` attests that data version instead of the latest one (in properties mode it must still be
        the latest data version: a later data commit would hide a property attestation of it).
        """
        latest = self.latest_version()
        v = self.data_version(latest) if version is None else self._parse_version(version)
        if v > latest:
            raise VersionNotFoundError(f"{self.display} has no version {v} (latest is {latest})")
        dt = self._load(v)
        live = self._files_of(dt, v)
        reuse: dict[tuple[str, int], str] = {}
        previous, _ = self._parse(self._load(latest).metadata().configuration) if latest != v else \
            self._parse(dt.metadata().configuration)
        if previous is None and self.detached:
            previous, _ = self._detached_before(v, None)
        # Reuse only hashes from a sidecar whose BLAKE3 matched and whose attestation read back cleanly.
        if previous is not None and previous.files is not None and not previous.problems:
            reuse = {(f.path, f.size): f.hash for f in previous.files}
        for path, (size, digest_hex) in (known_hashes or {}).items():
            reuse[(path, size)] = digest_hex
        todo = [f for f in live if (f.path, f.size) not in reuse]
        hashed = self.hash_files(todo, progress=progress) if todo else {}
        unreadable = [f.path for f in todo if f.path not in hashed]
        if unreadable:
            raise CarrierError(f"{len(unreadable)} live file(s) of version {v} cannot be read, e.g. "
                               f"{unreadable[0]}", code=Code.FILE_MISSING, path=unreadable[0])
        triples = [FileIdentity(path=f.path, size=f.size, kind=f.kind,
                                hash=reuse.get((f.path, f.size)) or hashed[f.path]) for f in live]
        observed = list(inputs)
        if v > 0 and self._reads_previous(v, live):
            observed.append(self.observe(v - 1))
        protocol = dt.protocol()
        env = env_identity(
            producer_name=PRODUCER_NAME, producer_version=__version__,
            engines={"deltalake": str(deltalake.__version__), **dict(engines or {})},
            dialect=dialect, table_format="delta", protocol=_protocol_doc(protocol),
        )
        manifest = build_manifest(model=model, program_hash=program_hash, env_hash=env, inputs=observed,
                                  outputs=[(t.path, t.hash) for t in triples], run_id=run_id or new_run_id())
        return self.write(manifest, files=triples, inputs=observed, version=v)

    def _reads_previous(self, v: int, live: Sequence[DataFile]) -> bool:
        """Did commit ``v`` append to / merge into the table's previous version (which is then an input)?"""
        commit = read_commit(self.storage, v)
        if commit is None:
            return False
        if commit.operation.upper() in _READS_PREVIOUS:
            return True
        # An append (or a partial overwrite) keeps files that were live before it: it builds on that version.
        added = {self._relative(str(a["path"])) for a in commit.adds}
        return any(f.kind == "data" and f.path not in added for f in live)

    def observe(self, version: str | int | None = None) -> ObservedInput:
        from attest.verify.table import verify_state

        # Observe the data version in force: metadata-only commits on top (attestations) are the same data,
        # so the same data must give the same heuristic identity.
        n = self.data_version(None if version is None else self._parse_version(version))
        st = self.state(n)
        table_id = f"delta:{self._load(int(st.version)).metadata().id}"
        att = st.attestation
        if att is not None and att.files is not None:
            report = verify_state(st, None, level="files")
            if report.passed:
                return ObservedInput(table=table_id, content=content_identity(f.hash for f in att.files),
                                     version=st.version, location=self.uri)
        return ObservedInput(table=table_id, version=st.version, location=self.uri)


# ---- helpers ---------------------------------------------------------------------------------------------------
POINTER_DIR = f"{SIDECAR_DIR}/versions"
POINTER_FORMAT = "recipe-attest-delta-detached"


def pointer_name(version: int) -> str:
    return f"{POINTER_DIR}/{version}.json"


def encode_pointer(version: int, keys: Mapping[str, str]) -> bytes:
    """A detached attestation: the ``recipe_manifest.*`` keys the ALTER would have set, as canonical JSON."""
    from attest.canonical import canonical_bytes

    return canonical_bytes({"format": POINTER_FORMAT, "version": 1, "table_version": str(version),
                            "properties": {k: v for k, v in keys.items() if v != props.ABSENT}})


def encode_properties(document: Mapping[str, Any], *, version: int, sidecar_path: str | None,
                      sidecar_hash: str | None) -> dict[str, str]:
    """The ``recipe_manifest.*`` keys of one attestation: manifest fields plus binding keys.

    output_hashes stay inline up to INLINE_OUTPUTS_MAX entries and INLINE_BYTES_MAX bytes, else only the
    sidecar carries them (``_outputs.location = sidecar``).
    """
    doc = dict(document)
    outputs = doc.get("output_hashes")
    binding: dict[str, str] = {props.KEY_VERSION: str(version)}
    if sidecar_path is not None and sidecar_hash is not None:
        binding[props.KEY_SIDECAR_PATH] = sidecar_path
        binding[props.KEY_SIDECAR_HASH] = sidecar_hash
    if outputs is not None:
        binding[props.KEY_OUTPUTS_COUNT] = str(len(outputs))
        inline = props.to_properties(doc)
        size = sum(len(k) + len(v) for k, v in inline.items())
        if sidecar_path is not None and (len(outputs) > props.INLINE_OUTPUTS_MAX or size > INLINE_BYTES_MAX):
            doc.pop("output_hashes")
            binding[props.KEY_OUTPUTS_WHERE] = "sidecar"
        else:
            binding[props.KEY_OUTPUTS_WHERE] = "inline"
    out = props.to_properties(doc)
    out.update(binding)
    return out


def decode_properties(properties: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``properties.from_properties`` plus the one case keys cannot express: an empty output list (no keys)
    is restored from ``_outputs.count = 0`` with ``_outputs.location = inline``."""
    document, binding = props.from_properties(properties)
    if ("output_hashes" not in document and binding.get(props.KEY_OUTPUTS_COUNT) == "0"
            and binding.get(props.KEY_OUTPUTS_WHERE) == "inline"):
        document["output_hashes"] = []
    return document, binding


def _protocol_doc(protocol: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"minReaderVersion": int(protocol.min_reader_version),
                           "minWriterVersion": int(protocol.min_writer_version)}
    if protocol.reader_features is not None:
        doc["readerFeatures"] = sorted(protocol.reader_features)
    if protocol.writer_features is not None:
        doc["writerFeatures"] = sorted(protocol.writer_features)
    return doc


def _describe(commits: Sequence[Commit]) -> str:
    labels = [c.label() for c in commits[:5]]
    more = f" (+{len(commits) - 5} more)" if len(commits) > 5 else ""
    return ", ".join(labels) + more


def _with_problem(att: Attestation, problem: Problem) -> Attestation:
    from dataclasses import replace

    return replace(att, problems=(*att.problems, problem))


def _is_uri(path: str) -> bool:
    scheme = urlparse(path).scheme
    return len(scheme) > 1 or path.startswith("/")


def _unsupported_or_error(table: str, exc: Exception) -> CarrierError:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "nsupported" in text or "not supported" in text or "not yet supported" in text:
        return UnsupportedTableError(f"delta-rs cannot write the attestation commit to {table}: {text}")
    return CarrierError(f"the attestation commit to {table} failed: {text}")


def attest_after_write(
    table: str | DeltaTable,
    *,
    model: str,
    program_hash: str | None = None,
    sql: str | None = None,
    dialect: str | None = None,
    inputs: Sequence[ObservedInput] = (),
    run_id: str | None = None,
    storage_options: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> WriteResult:
    """Attest the table's current version after an ordinary ``write_deltalake`` (or any engine's commit).

    The program is ``program_hash`` or, given ``sql``, its SQL program identity in ``dialect``.
    """
    if program_hash is None:
        if sql is None:
            raise CarrierError("attest_after_write needs program_hash or sql", code=Code.MANIFEST_INVALID_FIELD)
        from attest.identity.program import program_identity_sql

        program_hash = program_identity_sql(sql, dialect)
    carrier = DeltaCarrier(table, storage_options=storage_options)
    return carrier.record(model=model, program_hash=program_hash, inputs=inputs, run_id=run_id, dialect=dialect,
                          progress=progress)


# ---- the content-addressed write path --------------------------------------------------------------------------
# Characters Hive/Spark escape in partition directory names (ExternalCatalogUtils.charToEscape), as %XX.
_HIVE_ESCAPE = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(0x01, 0x20))
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _hive_escape(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPE else c for c in value)


def _partition_value(value: Any) -> str | None:
    """A partition value as the Delta log writes it (None = null)."""
    import datetime as _dt

    if value is None:
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
) -> WriteResult:
    """Write ``data`` as Parquet files named ``<blake3>.parquet`` (Hive partition folders kept), commit them
    to the Delta table through delta-rs, then attest the new version.

    The output identity is known before the commit: each file's name is the BLAKE3 of its bytes, and the
    attestation reuses those hashes instead of reading the files back.
    """
    import pyarrow.compute as pc
    from deltalake.transaction import AddAction, create_table_with_add_actions

    table = _to_arrow(data)
    columns = list(partition_by or [])
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise CarrierError(f"partition column(s) {missing} are not in the data", code=Code.MANIFEST_INVALID_FIELD)
    uri = _table_uri(table_uri)
    storage = Storage(uri, storage_options)
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
    import time

    now = int(time.time() * 1000)
    exists = DeltaTable.is_deltatable(uri, storage_options)
    live = {f.path for f in DeltaCarrier(uri, storage_options=storage_options).list_files()} \
        if exists and mode == "append" else set()
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
            # Same bytes, same name: a second add of a live path would silently drop those rows. Refuse.
            if rel in live or any(p[3] == rel for p in planned):
                raise CarrierError(f"{rel} would hold rows identical to a file the table already has (or to "
                                   "another chunk of this write); a content-addressed append cannot add the same "
                                   "bytes twice without losing rows — nothing was written",
                                   code=Code.MANIFEST_INVALID_FIELD, path=rel)
            planned.append((values, chunk, blob, rel, digest_hex))
    for values, chunk, blob, rel, digest_hex in planned:  # every check passed: now write
        storage.write_once(rel, blob)
        known[rel] = (len(blob), digest_hex)
        stats = {"numRecords": chunk.num_rows}
        # delta-rs takes the on-disk path and URI-encodes it for the log itself (% in a Hive dir -> %25).
        adds.append(AddAction(path=rel, size=len(blob), partition_values=dict(zip(columns, values, strict=True)),
                              modification_time=now, data_change=True, stats=_json(stats)))
    schema = table.schema
    if exists:
        dt = DeltaTable(uri, storage_options=storage_options)
        try:
            dt.create_write_transaction(adds, mode, schema, partition_by=columns or None)
        except Exception as exc:
            raise _unsupported_or_error(table_uri, exc) from exc
    else:
        create_table_with_add_actions(uri, _delta_schema(schema), adds, mode="error", partition_by=columns or None,
                                      configuration=configuration, storage_options=storage_options)
    carrier = DeltaCarrier(uri, storage_options=storage_options)
    return carrier.record(model=model, program_hash=program_hash, inputs=inputs, run_id=run_id, dialect=dialect,
                          progress=progress, known_hashes=known)


def _delta_schema(schema: Any) -> Any:
    from deltalake import Schema

    return Schema.from_arrow(schema)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))
