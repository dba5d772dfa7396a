"""The standalone carrier: a manifest as a JSON file in a directory (local or an object store).

Layout (seed-000 trust contract, adapted):
  <dir>/manifest.json            canonical, last writer wins, replaced atomically
  <dir>/manifest-<run_id>.json   immutable run-unique copy, written first, never overwritten with other bytes
  <dir>/_SUCCESS                 optional completion marker, one line ``blake3:<hex of manifest.json bytes>``,
                                 written only after manifest.json is readable and byte-identical
  <dir>/<manifest>.dsse.json     with a signer: the DSSE envelope signing that manifest file (docs/signing.md)
Order: artifacts are committed by the caller before write() (M1); marker after manifest (M2); no partial
manifest is ever observable (M7: temp + fsync + rename locally, one single PUT on object stores, never multipart).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Unpack

from attest.canonical import blake3_hex
from attest.errors import CarrierError, Code, ManifestMissingError
from attest.model import Manifest, load_json_document
from carriers.atomic import atomic_write_local
from carriers.base import Attestation, DataFile, WriteOptions, WriteResult, keywords_of

MANIFEST_NAME = "manifest.json"
MARKER_NAME = "_SUCCESS"
ENVELOPE_SUFFIX = ".dsse.json"
_RUN_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def run_unique_name(run_id: str) -> str:
    """``manifest-<run_id>.json`` with every character outside [A-Za-z0-9._-] replaced, so no run id can name a
    path outside the directory."""
    safe = _RUN_ID_UNSAFE.sub("_", run_id).strip(".") or "_"
    return f"manifest-{safe}.json"


def envelope_name(manifest_name: str) -> str:
    """The signed envelope of a manifest file is the file beside it named ``<manifest file name>.dsse.json``."""
    return manifest_name + ENVELOPE_SUFFIX


def _is_carrier_file(name: str) -> bool:
    if name.endswith(ENVELOPE_SUFFIX):
        name = name[: -len(ENVELOPE_SUFFIX)]
    return name in (MANIFEST_NAME, MARKER_NAME) or (name.startswith("manifest-") and name.endswith(".json"))


# A directory walk for the notes below stops after this many entries: an auditor's verify never walks without end.
WALK_LIMIT = 100_000
_NAMED_IN_NOTE = 5


def _reader_ignores(rel: str) -> bool:
    # Directory readers skip any component starting with '.' or '_' (Hadoop's hidden-file filter, pyarrow's
    # default ignore_prefixes): such files never reach a reader of the whole directory.
    return any(part.startswith((".", "_")) for part in rel.split("/"))


def directory_notes(directory: str | os.PathLike[str], manifest: bytes) -> list[str]:
    """What a verification of a local standalone directory leaves out, said as notes: files a reader of the whole
    directory would read that this manifest does not list (earlier runs' artifacts, or files nobody attested), and a
    completion marker naming another manifest.json. Never follows a symlinked folder, never blocks on a FIFO."""
    from attest.verify.artifacts import candidate_names  # the names an entry may resolve to under the directory

    root = os.fspath(directory)
    notes: list[str] = []
    marker = StandaloneCarrier(root).marker()
    if marker is not None and marker != f"blake3:{blake3_hex(manifest)}":
        notes.append(f"the completion marker {MARKER_NAME} names another manifest.json than the one verified (a run "
                     "still writing, or manifest.json replaced after the marker): a poller that trusts the marker "
                     "reads another manifest")
    try:
        document = load_json_document(manifest)
        outputs = document.get("output_hashes") if isinstance(document, dict) else None
    except Exception:  # the verification said what is wrong with the manifest
        return notes
    listed: set[str] = set()
    for entry in outputs if isinstance(outputs, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("hash"), str):
            listed.update(candidate_names(entry))
    unlisted: list[str] = []
    walked = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        rel_folder = os.path.relpath(folder, root)
        prefix = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
        walked += len(dirs)  # folders count too: a tree of empty folders is no cheaper to walk
        dirs[:] = sorted(d for d in dirs if not _reader_ignores(prefix + d))
        # os.walk lists a symlinked folder without entering it; engines reading the directory follow it.
        unlisted += [prefix + d + "/" for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in sorted(names):
            walked += 1
            rel = prefix + name
            if (not prefix and _is_carrier_file(name)) or _reader_ignores(rel) or rel in listed:
                continue
            unlisted.append(rel)
        if walked >= WALK_LIMIT:
            break
    if unlisted:
        shown = ", ".join(unlisted[:_NAMED_IN_NOTE]) + (", ..." if len(unlisted) > _NAMED_IN_NOTE else "")
        count = f"at least {len(unlisted)}" if walked >= WALK_LIMIT else str(len(unlisted))
        notes.append(f"{count} file(s) in {root} are not outputs of this manifest ({shown}): earlier runs' artifacts "
                     "or files nobody attested; a reader of the whole directory reads them unverified")
    elif walked >= WALK_LIMIT:
        notes.append(f"{root} was looked through for files this manifest does not list up to {WALK_LIMIT} entries "
                     "only: files beyond them were not looked at")
    return notes


class StandaloneCarrier:
    """A directory that holds a manifest and, on a content-addressed path, the artifacts it names.

    ``location`` is a local path or an fsspec URL (``s3://bucket/prefix``); ``filesystem`` an fsspec filesystem.
    """

    kind = "standalone"

    def __init__(self, location: str | os.PathLike[str], *, filesystem: Any = None) -> None:
        self.location = str(location)
        self._fs = filesystem
        from attest.locations import is_local

        if filesystem is None and not is_local(self.location):
            import fsspec  # only object stores need it

            self._fs, self.location = fsspec.core.url_to_fs(self.location)
        elif self.location.startswith("file://"):
            self.location = self.location[len("file://"):]

    # ---- byte I/O: local or one-shot object store -------------------------------------------------------
    def _path(self, name: str) -> str:
        return f"{self.location.rstrip('/')}/{name}"

    def _put(self, name: str, data: bytes) -> None:
        if self._fs is None:
            atomic_write_local(Path(self._path(name)), data)
        else:
            # pipe_file sends the whole body in one request: object stores make a single PUT atomic.
            self._fs.pipe_file(self._path(name), data)

    def _remove(self, name: str) -> None:
        try:
            if self._fs is None:
                Path(self._path(name)).unlink()
            else:
                self._fs.rm_file(self._path(name))
        except FileNotFoundError:
            pass

    def _get(self, name: str) -> bytes | None:
        """A carrier file's bytes (None when absent), bounded: locally only a regular file (a FIFO would block forever,
        a link to /dev/zero read without end), on a store never an object of gigabytes downloaded whole."""
        import errno

        from attest.hashing import read_regular
        from attest.model import MAX_DOCUMENT_BYTES

        path, limit = self._path(name), MAX_DOCUMENT_BYTES + 1
        try:
            if self._fs is None:
                data = read_regular(path, limit)
            else:
                with self._fs.open(path, "rb") as handle:
                    data = handle.read(limit)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            raise CarrierError(f"{path} is not a regular file", code=Code.MANIFEST_MISSING, path=path) from None
        if len(data) > MAX_DOCUMENT_BYTES:
            raise CarrierError(f"{path} is larger than {MAX_DOCUMENT_BYTES} bytes", code=Code.MANIFEST_MALFORMED_JSON,
                               path=path)
        return bytes(data)

    # ---- the carrier protocol ------------------------------------------------------------------------
    def write(self, manifest: Manifest, *, marker: bool = False, **options: Unpack[WriteOptions]) -> WriteResult:
        """Write the run-unique copy, then manifest.json, then (``marker=True``) the completion marker.

        With ``signer``, each manifest file gets its DSSE envelope beside it, written before the manifest so a
        reader that sees the new manifest also finds its signature. ``files``, ``inputs`` and ``version`` (the
        table carriers' WriteOptions) name nothing a standalone manifest carries: they are taken and unused.
        """
        keywords_of(WriteOptions, options, "write")
        signer = options.get("signer")
        problems = manifest.problems()
        if problems:
            raise CarrierError(f"refusing to write an invalid manifest: {problems[0].message}",
                               code=problems[0].code)
        data = manifest.to_json().encode("utf-8")
        envelope: bytes | None = None
        if signer is not None:
            from attest.signing.attestation import sign_manifest_attestation  # only signing pays for cryptography

            envelope = sign_manifest_attestation(signer, manifest.to_dict())
        run_id = manifest.subject.run_id or manifest.identity()[:16]
        unique = run_unique_name(run_id)
        existing = self._get(unique)
        if existing is not None and existing != data:
            # M4: a run's record is never amended in place; a second, different manifest for it is a conflict.
            raise CarrierError(f"{self._path(unique)} already holds a different manifest for run {run_id!r}",
                               code=Code.CARRIER_TAMPERED)
        if existing is None:
            if envelope is not None:
                self._put(envelope_name(unique), envelope)
            self._put(unique, data)
        if envelope is not None:
            self._put(envelope_name(MANIFEST_NAME), envelope)
        else:
            # An envelope left from an earlier, signed manifest would sign nothing here: it goes (metadata only).
            self._remove(envelope_name(MANIFEST_NAME))
        self._put(MANIFEST_NAME, data)
        if marker:
            self.write_marker()
        return WriteResult(location=self._path(MANIFEST_NAME), attested_version=None, manifest=manifest)

    def write_marker(self) -> str:
        """Write ``_SUCCESS`` only once manifest.json is readable and parses as a manifest (M2)."""
        data = self._get(MANIFEST_NAME)
        if data is None:
            raise ManifestMissingError(f"{self._path(MANIFEST_NAME)} is not readable; no completion marker written")
        Manifest.from_json(data)
        body = f"blake3:{blake3_hex(data)}\n"
        self._put(MARKER_NAME, body.encode("ascii"))
        return body.strip()

    def marker(self) -> str | None:
        """The completion marker's line (``blake3:<hex>``); None without one; "" for one that is no regular file."""
        try:
            data = self._get(MARKER_NAME)
        except CarrierError:  # a FIFO, a device, too large: it names no manifest
            return ""
        return None if data is None else data.decode("ascii", "replace").strip()

    def marker_matches(self) -> bool | None:
        """None without a marker; else whether the marker names the current manifest.json bytes."""
        marker = self.marker()
        if not marker:
            return None if marker is None else False  # "": no regular file, it names no manifest
        data = self._get(MANIFEST_NAME)
        return data is not None and marker == f"blake3:{blake3_hex(data)}"

    def read_envelope(self, version: str | int | None = None) -> bytes | None:
        """The signed envelope of manifest.json (or of run ``version``'s copy); None when it is unsigned."""
        return self._get(envelope_name(MANIFEST_NAME if version is None else run_unique_name(str(version))))

    def read(self, version: str | int | None = None) -> Attestation | None:
        data = self._get(MANIFEST_NAME if version is None else run_unique_name(str(version)))
        if data is None:
            return None
        document = load_json_document(data)
        if not isinstance(document, dict):
            document = {"": document}
        return Attestation(document=document, attested_version=None, location=self._path(MANIFEST_NAME))

    def list_files(self, version: str | int | None = None) -> list[DataFile]:
        """The artifacts beside the manifest (everything but the carrier's own files)."""
        out: list[DataFile] = []
        if self._fs is None:
            root = Path(self.location)
            if not root.is_dir():
                return out
            for entry in sorted(root.iterdir()):
                if entry.is_file() and not _is_carrier_file(entry.name) and not entry.name.startswith("."):
                    out.append(DataFile(path=entry.name, size=entry.stat().st_size))
            return out
        for info in self._fs.ls(self.location, detail=True):
            name = str(info["name"]).rsplit("/", 1)[-1]
            if info.get("type") == "file" and not _is_carrier_file(name):
                out.append(DataFile(path=name, size=int(info["size"])))
        return sorted(out, key=lambda f: f.path)
