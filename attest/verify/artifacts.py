"""Where a manifest's artifacts are under an artifacts directory, confined to it, and hashing them early.

Light on purpose (os, stat, threading, attest.hashing, attest.fast.jsonscan — not json, which imports re): the command
line imports this module, starts hashing, and only then imports the model, the schema and the report machinery
(``EarlyHashes``).
"""

from __future__ import annotations

import os
import stat
import threading

from attest.fast import jsonscan
from attest.hashing import BackgroundHashing

TYPE_CHECKING = False  # typing and pathlib are not imported before the hashing starts
if TYPE_CHECKING:
    from typing import Any

    StrPath = str | os.PathLike[str]

__all__ = ["EARLY_HASH_MAX_BYTES", "EARLY_READ_MAX_BYTES", "EarlyHashes", "Resolver", "candidate_names"]

# Hashing starts before the manifest is validated only up to this many bytes (attest.hashing.BackgroundHashing's bound).
EARLY_HASH_MAX_BYTES = BackgroundHashing.max_bytes
# The command line reads a manifest for the head start only up to this size (a 2,000-file manifest is ~0.3 MB).
EARLY_READ_MAX_BYTES = 64 << 20


def _file_name(path: str) -> str | None:
    """The last component of ``path`` as the reference takes it (Rust's ``Path::file_name`` on Unix): ``/`` is the
    only separator, empty and ``.`` components are ignored, and a path ending in ``..`` (or naming nothing) has
    no file name."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or parts[-1] == "..":
        return None
    return parts[-1]


def _relative_path(path: str) -> str | None:
    """``path`` when it is a plain relative path of at least two components (a partition folder and a file),
    else None: absolute paths, URIs and ``.``/``..``/empty components are never followed under the directory."""
    if path.startswith("/") or "://" in path or "/" not in path:
        return None
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return path


def candidate_names(entry: dict[str, Any]) -> list[str]:
    """The names tried under the artifacts directory, in order: the recorded path itself (a table directory
    keeps partition folders), then the reference's rules: the path's file name, ``<hash>``, ``<hash>.parquet``."""
    names: list[str] = []
    path = entry.get("path")
    if isinstance(path, str):
        for name in (_relative_path(path), _file_name(path)):
            if name is not None:
                names.append(name)
    digest = entry["hash"]
    names += [digest, f"{digest}.parquet"]
    return list(dict.fromkeys(n for n in names if "\x00" not in n))  # a NUL names no file anywhere


class Resolver:
    """``resolve_artifact`` for many entries with as few system calls as the rule allows: one ``lstat`` per
    candidate tried, plus one ``realpath`` per distinct sub-folder (cached) and per symlink. A candidate that is not
    a symlink, in a folder whose real path is inside the root, is inside the root: no per-component walk."""

    def __init__(self, root: StrPath) -> None:
        self.root = os.fspath(root)
        self.real_root = os.path.realpath(root)
        self._prefix = self.real_root.rstrip("/") + "/"
        self._folders: dict[str, str] = {}

    def _inside(self, real: str) -> bool:
        return real == self.real_root or real.startswith(self._prefix)

    def _real_folder(self, folder: str) -> str:
        real = self._folders.get(folder)
        if real is None:
            real = self._folders[folder] = os.path.realpath(os.path.join(self.root, folder))
        return real

    def resolve(self, entry: dict[str, Any]) -> tuple[str, int] | str | None:
        """(real path, size) of the first regular file among the candidates; a reason when one escapes the root;
        None when none exists."""
        for name in candidate_names(entry):
            candidate = os.path.join(self.root, name)
            try:
                st = os.lstat(candidate)  # follows symlinked folders on the way: checked below via the folder
            except (OSError, ValueError):
                continue  # absent (or a loop / a too-long name): as os.path.lexists, try the next name
            folder, _, base = name.rpartition("/")
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(candidate)  # never raises, even on a symlink loop (then: not a file)
            else:
                real = os.path.join(self._real_folder(folder), base) if folder else os.path.join(self.real_root, base)
            if not self._inside(real):
                return f"{name} resolves outside the artifacts directory (to {real})"
            if stat.S_ISLNK(st.st_mode):
                try:
                    st = os.stat(real)
                except OSError:
                    continue
            if stat.S_ISREG(st.st_mode):
                return real, st.st_size
        return None


class EarlyHashes(BackgroundHashing):
    """Resolution and hashing of a manifest's artifacts, started as soon as the manifest's bytes are read: before it
    is parsed strictly, validated, and before the rest of the verifier is imported, so start-up overlaps the work.

    It decides nothing. It resolves names with the same confined ``Resolver`` (regular files inside the directory
    only) on a thread of its own; the verification reuses that resolution only for exactly the entries it validated
    under exactly this directory (``resolution``), the hashes only for exactly the files it then names (``take``),
    and resolves afresh when a file changed size by the end (attest.verify.manifest): the two passes are then one, as
    in a verifier that resolves and hashes once. A document it cannot read plainly (not JSON, no output list) starts
    nothing.
    """

    name = "attest-early-hash"

    def __init__(self, outputs: list[dict[str, Any]], root: StrPath) -> None:
        self.outputs = outputs
        self.root = os.fspath(root)
        self.real_root = ""
        self._resolved: list[tuple[str, int] | str | None] | None = None
        self._resolving = threading.Event()
        super().__init__()

    def listing(self) -> dict[str, int] | None:
        try:
            resolver = Resolver(self.root)
            resolved = [resolver.resolve(entry) for entry in self.outputs]
            self.real_root, self._resolved = resolver.real_root, resolved
        finally:
            self._resolving.set()
        return {r[0]: r[1] for r in resolved if isinstance(r, tuple)}

    @classmethod
    def start(cls, data: bytes, root: StrPath | None) -> EarlyHashes | None:
        if root is None:
            return None
        try:
            document = jsonscan.loads(data)  # plain: the strict parse comes later and decides
            outputs = document["output_hashes"]
            if not isinstance(outputs, list) or not outputs or not os.path.isdir(root):
                return None
            if not all(isinstance(e, dict) and isinstance(e.get("hash"), str) for e in outputs):
                return None
        except Exception:  # anything odd: no head start, the ordinary path judges the document
            return None
        return cls(outputs, root)

    def resolution(self, outputs: list[dict[str, Any]], root: StrPath) -> list[tuple[str, int] | str | None] | None:
        """Where each of ``outputs`` resolved under ``root``, when they are exactly the entries resolved here, under
        the same directory; else None."""
        self._resolving.wait()
        if self._resolved is None or outputs != self.outputs or os.path.realpath(root) != self.real_root:
            return None
        return self._resolved
