"""Low-level Delta log reading the Delta carrier needs beyond delta-rs's public API.

- ``Storage``: bytes under a table root, locally (plain files) or on an object store (delta-rs's own object
  store handler, so ``storage_options`` mean what they mean to delta-rs);
- ``Commit``: one ``_delta_log/<version>.json`` summarised (operation, file actions, configuration) to classify
  what happened between an attested version and a later one;
- deletion vectors: the Delta protocol's z85 path encoding and a log replay that recovers each live add's
  ``deletionVector`` descriptor (delta-rs does not expose it).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from attest.errors import CarrierError, Code
from carriers.atomic import write_once_local

LOG_DIR = "_delta_log"
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}
_CHECKPOINT = re.compile(
    r"^(?P<v>[0-9]{20})\.checkpoint(?:\.(?P<part>[0-9]{10})\.(?P<parts>[0-9]{10})|\.(?P<uuid>[0-9a-fA-F-]{36}))?"
    r"\.(?P<ext>parquet|json)$"
)


# ---- storage -----------------------------------------------------------------------------------------------
class Storage:
    """Bytes addressed by POSIX paths relative to a table root (URL-decoded, as on disk)."""

    def __init__(self, table_uri: str, storage_options: dict[str, str] | None = None) -> None:
        self.uri = table_uri.rstrip("/")
        self.options = dict(storage_options or {})
        parsed = urlparse(self.uri)
        # A bare path or file:// URI is read with plain file I/O (fast, no object-store layer).
        self.local_root: Path | None = None
        if parsed.scheme == "file":
            self.local_root = Path(unquote(parsed.path))
        elif parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
            self.local_root = Path(self.uri).resolve()
        self._handler: Any = None

    @property
    def handler(self) -> Any:
        if self._handler is None:
            from deltalake._internal import DeltaFileSystemHandler

            self._handler = DeltaFileSystemHandler(table_uri=self.uri, options=self.options or None)
        return self._handler

    def local_path(self, rel: str) -> Path:
        assert self.local_root is not None
        return self.local_root.joinpath(*rel.split("/"))

    def read(self, rel: str) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        if self.local_root is not None:
            try:
                return self.local_path(rel).read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                return None
        try:
            stream = self.handler.open_input_file(rel)
        except Exception as exc:  # object_store raises its own error types; NotFound is the common case
            if _not_found(exc):
                return None
            raise
        try:
            return bytes(stream.read(stream.size()))
        finally:
            stream.close()

    def open_stream(self, rel: str) -> Any:
        """A readable stream (``.read(n)``) for hashing remote files."""
        return self.handler.open_input_file(rel)

    def list_names(self, rel_dir: str) -> list[str]:
        """File names directly under ``rel_dir`` (empty when it does not exist)."""
        if self.local_root is not None:
            try:
                return sorted(os.listdir(self.local_path(rel_dir)))
            except (FileNotFoundError, NotADirectoryError):
                return []
        # The raw delta-rs handler takes the selector's fields as arguments (pyarrow's PyFileSystem would
        # unpack a FileSelector for it; we call the handler directly).
        infos = self.handler.get_file_info_selector(rel_dir, True, False)
        return sorted(i.path.rstrip("/").rsplit("/", 1)[-1] for i in infos)

    def write_once(self, rel: str, data: bytes) -> bool:
        """Write content-addressed bytes: True when written, False when identical bytes were already there.

        Never replaces a different existing file (same name must mean same bytes); locally temp + fsync + link
        (link refuses to clobber), on object stores a single PUT.
        """
        existing = self.read(rel)
        if existing is not None:
            if existing != data:
                raise CarrierError(f"{rel} exists with different bytes; a content-addressed file is never "
                                   "overwritten", code=Code.SIDECAR_MISMATCH, path=rel)
            return False
        if self.local_root is not None:
            try:
                return write_once_local(self.local_path(rel), data)
            except CarrierError as exc:
                raise CarrierError(exc.message.replace(str(self.local_path(rel)), rel), code=exc.code,
                                   path=rel) from None
        out = self.handler.open_output_stream(rel, None)
        try:
            out.write(data)
        finally:
            out.close()
        return True


def _not_found(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return isinstance(exc, FileNotFoundError) or "not found" in text or "notfound" in text or "no such" in text


# ---- commits -----------------------------------------------------------------------------------------------
def commit_name(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.json"


@dataclass(frozen=True)
class Commit:
    """One commit file, summarised."""

    version: int
    operation: str
    parameters: dict[str, Any]
    adds: tuple[dict[str, Any], ...]
    removes: tuple[dict[str, Any], ...]
    configuration: dict[str, str] | None  # the metaData action's full configuration, when the commit has one
    protocol: dict[str, Any] | None = None
    engine: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def touches_files(self) -> bool:
        return bool(self.adds or self.removes)

    @property
    def data_change(self) -> bool:
        # dataChange is required on add/remove; a missing flag is read as a data change (the safe side).
        return any(a.get("dataChange", True) is not False for a in (*self.adds, *self.removes))

    def label(self) -> str:
        mode = self.parameters.get("mode")
        op = self.operation or "commit"
        shown = f"{op} ({mode})" if isinstance(mode, str) else op
        return f"{shown} at version {self.version}"


def parse_commit(version: int, data: bytes) -> Commit:
    operation, params, engine = "", {}, ""
    adds: list[dict[str, Any]] = []
    removes: list[dict[str, Any]] = []
    configuration: dict[str, str] | None = None
    protocol: dict[str, Any] | None = None
    for line in data.decode("utf-8").splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "add" in action:
            adds.append(action["add"])
        elif "remove" in action:
            removes.append(action["remove"])
        elif "metaData" in action:
            configuration = {str(k): str(v) for k, v in (action["metaData"].get("configuration") or {}).items()}
        elif "protocol" in action:
            protocol = action["protocol"]
        elif "commitInfo" in action:
            info = action["commitInfo"] or {}
            operation = str(info.get("operation") or "")
            raw = info.get("operationParameters") or {}
            params = raw if isinstance(raw, dict) else {}
            engine = str(info.get("engineInfo") or "")
    return Commit(version, operation, params, tuple(adds), tuple(removes), configuration, protocol, engine)


def read_commit(storage: Storage, version: int) -> Commit | None:
    """The commit at ``version``, or None when its JSON is gone (log cleanup after a checkpoint)."""
    data = storage.read(commit_name(version))
    return None if data is None else parse_commit(version, data)


# ---- deletion vectors --------------------------------------------------------------------------------------
def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) as the Delta protocol uses it for deletion-vector UUIDs."""
    if len(text) % 5:
        raise ValueError(f"z85 text length {len(text)} is not a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for ch in text[i:i + 5]:
            if ch not in _Z85_INDEX:
                raise ValueError(f"{ch!r} is not a z85 character")
            value = value * 85 + _Z85_INDEX[ch]
        if value > 0xFFFFFFFF:
            raise ValueError("z85 group out of range")
        out += value.to_bytes(4, "big")
    return bytes(out)


def z85_encode(data: bytes) -> str:
    if len(data) % 4:
        raise ValueError("z85 input length must be a multiple of 4")
    chars: list[str] = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i:i + 4], "big")
        group = []
        for _ in range(5):
            value, rem = divmod(value, 85)
            group.append(_Z85[rem])
        chars.extend(reversed(group))
    return "".join(chars)


def deletion_vector_path(descriptor: dict[str, Any]) -> str | None:
    """The file a deletion-vector descriptor points to: relative to the table root for storage type ``u``,
    the absolute path for ``p``, None for inline (``i``) vectors, which have no file."""
    kind = descriptor.get("storageType")
    value = str(descriptor.get("pathOrInlineDv") or "")
    if kind == "i":
        return None
    if kind == "p":
        return value
    if kind == "u":
        # The last 20 characters are the z85 UUID; anything before them is a random directory prefix.
        if len(value) < 20:
            raise ValueError(f"deletion vector id {value!r} is shorter than a z85 UUID")
        prefix, encoded = value[:-20], value[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name
    raise ValueError(f"unknown deletion vector storage type {kind!r}")


def _checkpoint_candidates(storage: Storage, version: int) -> list[tuple[int, list[str]]]:
    """Complete checkpoints at or below ``version``, newest first, as (version, [file names])."""
    groups: dict[tuple[int, str], list[str]] = {}
    expected: dict[tuple[int, str], int] = {}
    for name in storage.list_names(LOG_DIR):
        m = _CHECKPOINT.match(name)
        if not m or int(m.group("v")) > version:
            continue
        v = int(m.group("v"))
        # Classic, v2 (uuid-named) and multi-part checkpoints of one version are separate candidates.
        tag = f"parts:{m.group('parts')}" if m.group("parts") else (f"uuid:{m.group('uuid')}" if m.group("uuid")
                                                                      else "classic")
        groups.setdefault((v, tag), []).append(name)
        expected[(v, tag)] = int(m.group("parts")) if m.group("parts") else 1
    complete = [(v, sorted(names)) for (v, tag), names in groups.items() if len(names) == expected[(v, tag)]]
    return sorted(complete, key=lambda item: -item[0])


def _checkpoint_actions(storage: Storage, names: list[str]) -> Iterator[dict[str, Any]]:
    for name in names:
        data = storage.read(f"{LOG_DIR}/{name}")
        if data is None:
            raise CarrierError(f"checkpoint {name} vanished while reading", code=Code.VERSION_NOT_FOUND)
        if name.endswith(".json"):
            for line in data.decode("utf-8").splitlines():
                if line.strip():
                    yield json.loads(line)
        else:
            yield from _parquet_actions(data)
    # v2 checkpoints may move their add actions to sidecar files under _delta_log/_sidecars.


def _parquet_actions(data: bytes) -> Iterator[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data))
    names = set(table.column_names)
    cols = [c for c in ("add", "remove", "sidecar") if c in names]
    if not cols:
        return
    for row in table.select(cols).to_pylist():
        for col in cols:
            if row.get(col) is not None:
                yield {col: row[col]}


def live_deletion_vectors(storage: Storage, version: int) -> dict[str, dict[str, Any]]:
    """{raw add path: deletionVector descriptor} for every live add with a deletion vector at ``version``.

    Replays the newest complete checkpoint at or below ``version`` (classic, multi-part or v2 with sidecars)
    and the JSON commits after it.
    """
    live: dict[str, dict[str, Any] | None] = {}
    start = 0
    for cp_version, names in _checkpoint_candidates(storage, version):
        try:
            for action in _checkpoint_actions(storage, names):
                if action.get("sidecar"):
                    sc = action["sidecar"]["path"]
                    data = storage.read(f"{LOG_DIR}/_sidecars/{sc}")
                    if data is None:
                        raise CarrierError(f"checkpoint sidecar {sc} is missing", code=Code.VERSION_NOT_FOUND)
                    for inner in _parquet_actions(data) if sc.endswith(".parquet") else (
                            json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()):
                        _apply(live, inner)
                else:
                    _apply(live, action)
        except CarrierError:
            live.clear()
            continue  # try an older checkpoint
        start = cp_version + 1
        break
    for v in range(start, version + 1):
        commit = read_commit(storage, v)
        if commit is None:
            raise CarrierError(f"the Delta log entry for version {v} is missing, so deletion vectors at version "
                               f"{version} cannot be listed", code=Code.VERSION_NOT_FOUND)
        for r in commit.removes:
            live.pop(str(r["path"]), None)
        for a in commit.adds:
            live[str(a["path"])] = a.get("deletionVector")
    return {path: dv for path, dv in live.items() if dv}


def _apply(live: dict[str, dict[str, Any] | None], action: dict[str, Any]) -> None:
    # A checkpoint holds only live adds plus tombstones; tombstones are not live.
    add = action.get("add")
    if add:
        live[str(add["path"])] = add.get("deletionVector")
