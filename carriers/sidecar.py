"""The attestation sidecar: a content-addressed JSON document kept beside the table's metadata.

Every attestation this project writes has one (docs/carrier-properties.md, "The sidecar"). It holds what the table's
metadata map cannot: every live file's (path, size, hash) triple, the observed inputs, the table it was written for,
the reader view it bound and the v1 identity of the full manifest. Its file name is ``<blake3 of its bytes>.json`` and
the carrier records the same BLAKE3 in the table's metadata, so a swapped or edited sidecar fails verification.

Version 2 (current) requires ``table``, ``manifest`` and ``reader_view``; version 1 (first wave) is still read and
labelled legacy: it binds no reader view.

A sidecar is written and read in pieces (docs/scale.md, "The sidecar in bounded memory"): ``Sidecar.chunks`` yields the
canonical bytes a batch of files at a time (the same bytes ``canonical_bytes(to_dict())`` writes whole, so its name and
binding are unchanged), and ``Sidecar.decode_chunks`` parses a document given in pieces one value at a time, hashing as
it reads: neither the bytes nor the JSON tree of a million files is ever held whole. The format is unchanged.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import blake3

from attest import fast
from attest.canonical import (
    MAX_DEPTH,
    CanonicalizationError,
    all_hex_digests,
    blake3_hex,
    canonical_bytes,
    mapping_chunks,
    object_chunks,
    rows_text,
)
from attest.errors import AttestError, Code
from attest.identity.inputs import ObservedInput
from attest.model import (
    _SURROGATE_ESCAPE,
    JSON_HOOKS,
    Manifest,
    _lone_surrogate,
    _too_deep,
)
from attest.record import many_records
from attest.tables import FileIdentity, FileKind, attestation_identity, file_identities
from attest.view import ReaderView

SIDECAR_FORMAT = "recipe-attest-sidecar"
SIDECAR_VERSION = 2
LEGACY_SIDECAR_VERSION = 1
# A sidecar is untrusted input. It is read in pieces (memory bounded by one piece and one value, never by the
# document), so what bounds a reader is what it keeps: one record per file. A million files take ~233 MB of sidecar;
# MAX_SIDECAR_FILES files (~2.3 GB) is the most a reader keeps, a document of more bytes than MAX_SIDECAR_BYTES is
# refused before it is parsed further, and one value (a file's entry, the table view, the content binding) of more
# than MAX_SIDECAR_VALUE_CHARS characters is refused before it is parsed (a huge string cannot make the reader hold
# it). Until this reader, a whole document of at most 512 MiB (~2.2 million files) was read and parsed at once.
MAX_SIDECAR_FILES = 10_000_000
MAX_SIDECAR_BYTES = 4 << 30
MAX_SIDECAR_VALUE_CHARS = 64 << 20
# Bytes read from storage at a time, and files encoded at a time when writing.
CHUNK_BYTES = 1 << 20
WRITE_BATCH = 8192


class SidecarError(AttestError, ValueError):
    """The sidecar bytes do not match the recorded BLAKE3 or do not parse as a sidecar."""

    code = Code.SIDECAR_MISMATCH


@dataclass(frozen=True)
class Sidecar:
    attested_version: str | None
    files: tuple[FileIdentity, ...]
    inputs: tuple[ObservedInput, ...]
    # v1 identity of the full manifest the metadata must reconstitute to: an edit of any single field of the
    # table metadata (program_hash, env_hash, subject...) no longer matches it.
    manifest: str | None = None
    table: str | None = None
    view: ReaderView | None = None
    version: int = SIDECAR_VERSION
    # The content digest bound (carriers/content_store.py; docs/content-digest.md): scheme, the version's total, the
    # BLAKE3s of the companion files holding each data file's digest, the attestation it continues. None: none bound
    # (attestations written before content digests; readers that predate the key ignore it).
    content: dict[str, Any] | None = None

    @property
    def legacy(self) -> bool:
        return self.version == LEGACY_SIDECAR_VERSION

    def to_dict(self) -> dict[str, Any]:
        doc = self._small_fields()
        doc["files"] = [f.to_dict() for f in sorted(self.files, key=lambda f: f.path)]
        if self.view is not None:
            doc["reader_view"] = self.view.to_dict()
        return doc

    def _small_fields(self) -> dict[str, Any]:
        """The document's fields but ``files`` and ``reader_view`` (the ones that grow with the table), each optional
        one only when set: what ``to_dict`` and ``chunks`` both write as they are."""
        doc: dict[str, Any] = {"format": SIDECAR_FORMAT, "version": self.version,
                               "inputs": [i.to_dict() for i in self.inputs]}
        optional = {"attested_version": self.attested_version, "manifest": self.manifest, "table": self.table,
                    "content": self.content}
        doc.update((key, value) for key, value in optional.items() if value is not None)
        return doc

    def encode(self) -> tuple[bytes, str]:
        """(canonical bytes, their BLAKE3): the bytes are deterministic, so the name is too. Held whole: writers of
        large tables use ``chunks`` (storage ``write_once_stream``)."""
        data = b"".join(self.chunks())
        return data, blake3_hex(data)

    def chunks(self, batch: int = WRITE_BATCH) -> Iterator[bytes]:
        """The canonical bytes of ``to_dict()`` in pieces of at most ``batch`` files: exactly ``canonical_bytes(
        self.to_dict())`` once joined (canonical JSON is written value by value, keys sorted at every level, so a
        list or object written a slice at a time is the same bytes), without building the document or its text."""
        top = self._small_fields()
        streamed: dict[str, Callable[[], Iterator[bytes]]] = {"files": lambda: self._files_chunks(batch)}
        if self.view is not None:
            streamed["reader_view"] = lambda: self._view_chunks(batch)
        return _coalesce(object_chunks(top, streamed))

    def _files_chunks(self, batch: int) -> Iterator[bytes]:
        ordered = sorted(self.files, key=attrgetter("path"))
        yield b"["
        for start in range(0, len(ordered), batch):
            part = _entries_text(ordered[start:start + batch])
            yield part if start == 0 else b"," + part
        yield b"]"

    def _view_chunks(self, batch: int) -> Iterator[bytes]:
        assert self.view is not None
        small = self.view.to_dict()
        files = small.pop("files")
        return object_chunks(small, {"files": lambda: mapping_chunks(files, batch)})

    @classmethod
    def decode(cls, data: bytes, expected_hash: str | None) -> Sidecar:
        view = memoryview(data)
        return cls.decode_chunks((view[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)),
                                 expected_hash)

    @classmethod
    def decode_chunks(cls, chunks: Iterable[bytes | memoryview], expected_hash: str | None) -> Sidecar:
        """The sidecar whose bytes ``chunks`` yields in order, parsed a value at a time while their BLAKE3 is
        computed. Bytes that do not match ``expected_hash`` are refused as such, whatever they parse to (the rest of
        the document is read to tell); an OSError while reading is raised as it is."""
        reader = _Reader(iter(chunks))
        try:
            sidecar = cls._parse(reader)
        except OSError:
            raise
        except Exception as exc:  # any shape error in untrusted bytes is one failure kind
            failure = exc if isinstance(exc, SidecarError) else \
                SidecarError(f"sidecar does not parse: {type(exc).__name__}: {exc}")
            if expected_hash is not None and not isinstance(exc, _TooLarge):
                reader.drain()  # bytes that are not the bound ones are refused as such, as the whole reader did
                if reader.hasher.hexdigest() != expected_hash:
                    raise SidecarError("sidecar bytes do not match the BLAKE3 recorded in the table metadata") \
                        from None
            raise failure from exc
        if expected_hash is not None and reader.hasher.hexdigest() != expected_hash:
            raise SidecarError("sidecar bytes do not match the BLAKE3 recorded in the table metadata")
        return sidecar

    @classmethod
    def _parse(cls, reader: _Reader) -> Sidecar:
        doc: dict[str, Any] = {}
        files: list[FileIdentity] | None = None
        reader.expect("{", "the sidecar is not a JSON object")
        for key in reader.members():
            if key in doc or (key == "files" and files is not None):
                raise SidecarError(f"sidecar does not parse: duplicate key {key!r} in JSON object")
            if key == "files" and reader.peek() == "[":
                files = reader.file_list()
                if SHARED_KEYS:
                    reader._known = list(map(attrgetter("path"), files))
                doc[key] = None
            elif key == "reader_view" and reader.peek() == "{":
                with many_records():  # a member a file of the table: strings and a dict, no cycles (nineteenth pass)
                    doc[key] = reader.view_object()
            else:
                doc[key] = reader.value(1)
        reader.end()
        version = doc.get("version")
        if doc.get("format") != SIDECAR_FORMAT or version not in (SIDECAR_VERSION, LEGACY_SIDECAR_VERSION):
            raise SidecarError(f"not a {SIDECAR_FORMAT} v{SIDECAR_VERSION} (or v1) document")
        if files is None:
            if "files" not in doc:
                raise SidecarError("sidecar does not parse: KeyError: 'files'")
            files = _file_records(doc["files"])  # not a list: refused as the whole-document reader refused it
        if not all_hex_digests(list(map(attrgetter("hash"), files))) or \
                min(map(attrgetter("size"), files), default=0) < 0:
            raise SidecarError("a file triple has a malformed hash or a negative size")
        if len(set(map(attrgetter("path"), files))) != len(files):
            raise SidecarError("the file list names a path twice")
        sidecar = cls(
            attested_version=_opt_str(doc.get("attested_version")),
            files=tuple(files),
            inputs=tuple(ObservedInput.from_dict(i) for i in doc.get("inputs", [])),
            manifest=_opt_str(doc.get("manifest")),
            table=_opt_str(doc.get("table")),
            view=None if doc.get("reader_view") is None else ReaderView.from_dict(
                doc["reader_view"], files_hashed=reader.view_files_hash),
            version=int(version),
            content=_opt_content(doc.get("content")),
        )
        if version == SIDECAR_VERSION and (sidecar.manifest is None or sidecar.table is None
                                           or sidecar.view is None or sidecar.attested_version is None):
            raise SidecarError("a version 2 sidecar must name the table, the attested version, the manifest "
                               "identity and the reader view")
        return sidecar


# FileIdentity.to_dict's keys in code point order, and how each is read from a FileIdentity (_files_chunks).
_ENTRY_KEYS = ("hash", "kind", "path", "size")
_ENTRY_FIELDS = tuple(attrgetter(key) for key in _ENTRY_KEYS)


def _entries_text(files: Sequence[FileIdentity]) -> bytes:
    """``canonical_bytes([f.to_dict() for f in files])[1:-1]``: the entries' fields as columns written in C passes
    (``rows_text``) when every path, hash and kind is an exact string and every size an exact int in range; otherwise,
    or for a lone surrogate, encoded by ``canonical_bytes``, which says what is wrong."""
    part = rows_text(_ENTRY_KEYS, [list(map(get, files)) for get in _ENTRY_FIELDS])
    return part if part is not None else canonical_bytes([f.to_dict() for f in files])[1:-1]


def _file_records(entries: Any) -> list[FileIdentity]:
    with many_records():  # one record per file of the table
        return [FileIdentity.from_dict(f) for f in entries]


def _coalesce(pieces: Iterable[bytes], size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """``pieces`` joined into chunks of about ``size`` bytes (a write per chunk, not per key)."""
    held: list[bytes] = []
    total = 0
    for piece in pieces:
        held.append(piece)
        total += len(piece)
        if total >= size:
            yield b"".join(held)
            held, total = [], 0
    if held:
        yield b"".join(held)


class _TooLarge(SidecarError):
    """The document is larger than a reader reads: refused at once, its hash never computed."""


# The rules of attest.model.load_json_document, value by value: strict strings, no NaN / Infinity, numbers as the
# reference reads them, no key named twice (each value is checked for depth and lone surrogates by _Reader.value).
_DECODER = json.JSONDecoder(**JSON_HOOKS)
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_WHITESPACE = " \t\n\r"


# The regular runs (docs/scale.md, "seventh pass"). A canonical sidecar writes every file entry, and every member of
# the reader view's files, in one shape: a window of them (at most CHUNK_BYTES characters of the held text, cut where
# one ends) is split at its quotes in C and, when every piece is the one that shape puts there, made records in bulk
# instead of a value at a time. Only text the general reader reads to the same values is taken: the four keys in
# canonical order, each once; a hash of 64 lower-case hex digits; a known kind; strings with no escape, no quote and no
# control character (their text is their value, and no lone surrogate can be spelled); a size of at most 16 digits
# without sign, fraction or leading zero (an int within i64); no white space. Split at its quotes, such a text is
# exactly its pieces joined, so checking the pieces checks the text. Anything else (white space, another key order,
# an escape, a key named twice in an entry, a cut inside a string, as in a path holding "}]") fails the check and is
# read by the general reader, one value at a time, for the rest of the held text (a failed check costs one pass over
# it, once): what is accepted and refused is the general reader's (tests/adversarial/test_sidecar_regular_runs.py
# holds the two to each other on random and mutated sidecars).
# The kinds, shared by a million records rather than one string each.
_KINDS: dict[str, FileKind] = {"data": "data", "deletion_vector": "deletion_vector", "delete": "delete"}
_SIZES = re.compile(r"(?::(?:0|[1-9][0-9]{0,15})\},\{\|)*:(?:0|[1-9][0-9]{0,15})\}")
_NOT_PLAIN = re.compile(r"[\\\x00-\x1f]")
_NOT_PLAIN_BYTES = bytes(range(0x20)) + b"\\"
# Whether the regular runs are read in bulk (ATTEST_FAST=0 reads every value with the general reader; the tests
# compare the two).
REGULAR_RUNS: bool = fast.ON
# Whether the reader view's keys, where they are the file list's paths in its order (a sidecar lists both by path), are
# held as the file list's own strings rather than a second copy of each (~16 MiB at 200,000 files, held through the
# verdict, where a verification's peak memory is set); ATTEST_FAST=0 keeps the copies. The same strings either way
# (tests/test_sidecar_shared_keys.py).
SHARED_KEYS: bool = fast.ON


def _plain(text: str) -> bool:
    """Whether ``text`` (quote-free: pieces split at quotes) holds no backslash and no control character."""
    if text.isascii():  # one C pass over the bytes rather than a regex over the text
        data = text.encode("ascii")
        return len(data.translate(None, _NOT_PLAIN_BYTES)) == len(data)
    return _NOT_PLAIN.search(text) is None


def _regular_entries(text: str) -> list[FileIdentity] | None:
    """The file entries ``text`` spells, when it is regular entries joined by commas (see above); else None."""
    parts = text.split('"')
    n, rest = divmod(len(parts) - 1, 14)
    if rest or not n or parts[0] != "{":
        return None
    if (parts[1::14].count("hash"), parts[5::14].count("kind"), parts[9::14].count("path"),
            parts[13::14].count("size")) != (n, n, n, n):
        return None
    if (parts[2::14].count(":"), parts[6::14].count(":"), parts[10::14].count(":"), parts[4::14].count(","),
            parts[8::14].count(","), parts[12::14].count(",")) != (n, n, n, n, n, n):
        return None
    hashes, kinds, paths = parts[3::14], parts[7::14], parts[11::14]
    if not all_hex_digests(hashes) or not _KINDS.keys() >= set(kinds) or not _plain("".join(paths)):
        return None
    tails = "|".join(parts[14::14])  # each ':<size>},{' and the last ':<size>}'
    if _SIZES.fullmatch(tails) is None:
        return None
    sizes = tails[1:-1].split("},{|:")
    if len(sizes) != n:  # a tail holding "|" itself: then the tails are not one size each
        return None
    return file_identities(paths, list(map(int, sizes)), hashes, list(map(_KINDS.__getitem__, kinds)))


def _regular_members(text: str) -> tuple[list[str], list[str]] | None:
    """The keys and the values of the members ``text`` spells, when it is string members joined by commas; else
    None."""
    parts = text.split('"')
    n, rest = divmod(len(parts) - 1, 4)
    if rest or not n or parts[0] or parts[-1]:
        return None
    if parts[2::4].count(":") != n or parts[4:-1:4].count(",") != n - 1:
        return None
    keys, values = parts[1::4], parts[3::4]
    if not _plain("".join(keys)) or not _plain("".join(values)):
        return None
    return keys, values


class _Reader:
    """A JSON document given in byte chunks, read a value at a time: at most one chunk and one value are held (a
    value is bounded by MAX_SIDECAR_VALUE_CHARS). Every byte read is hashed (``hasher``)."""

    def __init__(self, chunks: Iterator[bytes | memoryview]) -> None:
        self._chunks = chunks
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self.hasher = blake3.blake3()
        self.size = 0
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._escapes = False  # whether the held text may spell a surrogate escape (then values are walked)
        self._irregular = ""  # the held text a regular run was refused in: the general reader reads the rest of it
        # The reader view's files object as its canonical text, hashed as it is read (after b'{"files":', as the
        # view's digest hashes it: attest.view.ReaderView.from_dict): kept while every member comes from a regular
        # run in ascending key order, whose text is then that member's canonical text. None otherwise.
        self._files_hash: Any = None
        self._files_last: str | None = None  # the last key hashed
        self.view_files_hash: Any = None  # the hash of the whole files object so read, when it was
        # The file list's paths in its order, while the view's keys read so far are its first ``_known_at``
        # (SHARED_KEYS): the next keys, when they are the next paths, are held as those strings. None once they are not.
        self._known: list[str] | None = None
        self._known_at = 0

    def _fill(self, least: int = 1) -> bool:
        """Append the text of the next chunks, at least ``least`` characters of it unless the document ends first
        (joined once: a buffer is never copied once per chunk); False when nothing was left to read."""
        if self.eof:
            return False
        texts: list[str] = []
        got = 0
        read = False
        while got < least:
            chunk = next(self._chunks, None)
            if chunk is None:
                self.eof = True
                try:
                    text = self._utf8.decode(b"", final=True)
                except UnicodeDecodeError as exc:
                    raise SidecarError(f"sidecar does not parse: not UTF-8: {exc.reason} at the end") from None
                texts.append(text)
                break
            read = True
            self.size += len(chunk)
            if self.size > MAX_SIDECAR_BYTES:
                raise _TooLarge(f"sidecar is larger than {MAX_SIDECAR_BYTES} bytes")
            self.hasher.update(chunk)
            try:
                text = self._utf8.decode(chunk)
            except UnicodeDecodeError as exc:
                raise SidecarError(f"sidecar does not parse: not UTF-8: {exc.reason}") from None
            texts.append(text)
            got += len(text)
        rest = self.buf[self.pos:]
        self.buf = rest + "".join(texts) if texts else rest
        self.pos = 0
        if not self._escapes:  # once seen, values are checked to the end (an escape may span two chunks)
            self._escapes = _SURROGATE_ESCAPE.search(self.buf, max(0, len(rest) - 6)) is not None
        return read or any(texts)

    def drain(self) -> None:
        """Read (and hash) the rest of the document without decoding or parsing it."""
        self.buf, self.pos = "", 0
        if self.eof:
            return
        for chunk in self._chunks:
            self.size += len(chunk)
            if self.size > MAX_SIDECAR_BYTES:
                raise _TooLarge(f"sidecar is larger than {MAX_SIDECAR_BYTES} bytes")
            self.hasher.update(chunk)
        self.eof = True

    def _grow(self) -> bool:
        """Read until the unread text has doubled (a value retried after each chunk would be parsed anew once per
        chunk: doubling bounds the work by twice its length); False at the end of the document."""
        return self._fill(max(len(self.buf) - self.pos, CHUNK_BYTES // 2))

    def peek(self) -> str:
        """The next character that is not whitespace (not consumed); refuses the end of the document."""
        while True:
            buf, pos = self.buf, self.pos
            while pos < len(buf) and buf[pos] in _WHITESPACE:
                pos += 1
            self.pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._fill():
                raise SidecarError("sidecar does not parse: the document ends early (truncated)")

    def expect(self, char: str, message: str) -> None:
        if self.peek() != char:
            raise SidecarError(f"sidecar does not parse: {message}")
        self.pos += 1

    def end(self) -> None:
        """Only whitespace may follow the document."""
        while True:
            rest = self.buf[self.pos:].strip(_WHITESPACE)
            if rest:
                raise SidecarError("sidecar does not parse: extra data after the document")
            self.buf, self.pos = "", 0
            if not self._fill():
                return

    def _string(self) -> str:
        """A string at the reading position (the next character is its opening quote)."""
        while True:
            try:
                text, end = _scanstring(self.buf, self.pos + 1, True)
            except json.JSONDecodeError:
                if len(self.buf) - self.pos > MAX_SIDECAR_VALUE_CHARS:
                    raise SidecarError("sidecar does not parse: a string is longer than "
                                       f"{MAX_SIDECAR_VALUE_CHARS} characters") from None
                if self._grow():
                    continue
                raise
            if self._escapes:
                _refuse_surrogates(self.buf, self.pos, end, text)
            self.pos = end
            return text

    def members(self) -> Iterator[str]:
        """The keys of the object whose '{' was just read, each left for the caller to read its value."""
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise SidecarError("sidecar does not parse: expecting a property name in double quotes")
            key = self._string()
            self.expect(":", "expecting ':' after a property name")
            yield key
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}", "expecting ',' or '}' in an object")
            return

    def value(self, depth: int) -> Any:
        """One JSON value at the reading position, nested ``depth`` arrays/objects deep in the document."""
        self.peek()
        while True:
            start = self.pos
            try:
                value, end = _DECODER.raw_decode(self.buf, start)
            except json.JSONDecodeError:
                if len(self.buf) - start > MAX_SIDECAR_VALUE_CHARS:
                    raise SidecarError(f"sidecar does not parse: a value is longer than {MAX_SIDECAR_VALUE_CHARS} "
                                       "characters") from None
                if self._grow():
                    continue
                raise
            except RecursionError:
                raise SidecarError(f"sidecar does not parse: nested more than {MAX_DEPTH} arrays/objects deep") \
                    from None
            if end >= len(self.buf) and not self.eof and self._fill():
                continue  # a number may go on in the next chunk
            if end - start > 2 * (MAX_DEPTH - depth):  # shallower text cannot nest that deep: only then walk
                nested: Any = value
                for _ in range(depth):
                    nested = [nested]
                if _too_deep(nested):
                    raise SidecarError(f"sidecar does not parse: nested more than {MAX_DEPTH} arrays/objects deep")
            if self._escapes:
                _refuse_surrogates(self.buf, start, end, value)
            self.pos = end
            return value

    def _items(self, close: str) -> Iterator[None]:
        """Once per item of the array or object just opened (its '[' or '{' read), at the item."""
        if self.peek() == close:
            self.pos += 1
            return
        while True:
            yield None
            char = self.peek()
            self.pos += 1
            if char == ",":
                continue
            if char != close:
                raise SidecarError(f"sidecar does not parse: expecting ',' or '{close}'")
            return

    def file_list(self) -> list[FileIdentity]:
        """The ``files`` array, one entry at a time, each made a record at once (a run of regular entries at once)."""
        self.expect("[", "files is not an array")
        out: list[FileIdentity] = []
        with many_records():
            if self.peek() == "]":
                self.pos += 1
                return out
            while True:
                if REGULAR_RUNS and self._entry_run(out):
                    return out
                if len(out) >= MAX_SIDECAR_FILES:
                    raise SidecarError(f"the file list names more than {MAX_SIDECAR_FILES} files")
                out.append(FileIdentity.from_dict(self.value(2)))
                char = self.peek()
                self.pos += 1
                if char == ",":
                    continue
                if char != "]":
                    raise SidecarError("sidecar does not parse: expecting ',' or ']'")
                return out

    def _entry_run(self, out: list[FileIdentity]) -> bool:
        """A window of regular entries from the reading position on, appended to ``out``; True when the array's last
        entry was among them and its ']' read. Nothing is read when the window is not regular (the general reader
        then reads the rest of the held text) or holds no whole entry."""
        window = self._window('{"hash":"', "}]", '},{"hash":"')
        if window is None:
            return False
        text, after, last = window
        records = _regular_entries(text)
        if records is None:
            self._irregular = self.buf
            return False
        if len(out) + len(records) > MAX_SIDECAR_FILES:
            raise SidecarError(f"the file list names more than {MAX_SIDECAR_FILES} files")
        out.extend(records)
        self.pos = after
        return last

    def _window(self, first: str, close: str, between: str) -> tuple[str, int, bool] | None:
        """The window of a run (``_entry_run``, ``_member_run``): the held text from the reading position, which must
        start with ``first``, to the end of the last whole item within CHUNK_BYTES characters — up to the ``close``
        ending the array or object, else up to the last ``between`` two items — as (that text, where the item after
        it starts, whether ``close`` ended it). None when the held text was found irregular, does not start so, or
        holds no whole item within the window (the caller reads a value at a time)."""
        buf, pos = self.buf, self.pos
        if buf is self._irregular or not buf.startswith(first, pos):
            return None
        limit = pos + CHUNK_BYTES  # a window bounds the pieces held at once, whatever the held text's length
        end = buf.find(close, pos, limit)
        cut = end if end >= 0 else buf.rfind(between, pos, limit)
        if cut < 0:
            return None
        # Both ``close`` and ``between`` start with the item's last character: the text ends with it, and the
        # character after it (the close, or the comma between two items) is skipped.
        return buf[pos:cut + 1], cut + 2, end >= 0

    def _new_members(self, seen: dict[str, Any]) -> Iterator[str]:
        """The member names, refusing one already in ``seen`` (the object being filled), as JSON loading does."""
        for key in self.members():
            if key in seen:
                raise SidecarError(f"sidecar does not parse: duplicate key {key!r} in JSON object")
            yield key

    def view_object(self) -> dict[str, Any]:
        """The ``reader_view`` object, its ``files`` object read a member at a time."""
        self.expect("{", "reader_view is not an object")
        view: dict[str, Any] = {}
        for key in self._new_members(view):
            view[key] = self._view_files() if key == "files" and self.peek() == "{" else self.value(2)
        return view

    def _view_files(self) -> dict[str, Any]:
        """The view's ``files`` object, a member at a time (a run of regular members at once): ``members`` and
        ``_new_members`` written out, so that a run can be read between two members."""
        self.expect("{", "the view's files is not an object")
        files: dict[str, Any] = {}
        self.view_files_hash, self._files_last = None, None
        self._files_hash = blake3.blake3(b'{"files":{') if REGULAR_RUNS else None
        if self.peek() == "}":
            self.pos += 1
            return files
        while True:
            if REGULAR_RUNS and self._member_run(files):
                self._files_hashed()
                return files
            if self.peek() != '"':
                raise SidecarError("sidecar does not parse: expecting a property name in double quotes")
            key = self._string()
            known, at = self._known, self._known_at
            if known is not None:  # a member read alone (between two runs): shared as a run's keys are
                if at < len(known) and known[at] == key:
                    key, self._known_at = known[at], at + 1
                else:
                    self._known = None
            self.expect(":", "expecting ':' after a property name")
            if key in files:
                raise SidecarError(f"sidecar does not parse: duplicate key {key!r} in JSON object")
            if len(files) >= MAX_SIDECAR_FILES:
                raise SidecarError(f"the reader view names more than {MAX_SIDECAR_FILES} files")
            files[key] = value = self._string() if self.peek() == '"' else self.value(3)
            if self._files_hash is not None:
                if self.buf is self._irregular:  # not a canonical text: the digest is computed from the values
                    self._files_hash = None
                else:
                    self._hash_member(key, value)
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}", "expecting ',' or '}' in an object")
            self._files_hashed()
            return files

    def _hash_member(self, key: str, value: Any) -> None:
        """A member read by the general reader (one between two runs) into the files text hashed: its canonical
        text, when it is a string member after the last key hashed; else the hashing stops (the view's digest is
        then computed from the values, as before)."""
        if type(value) is str and (self._files_last is None or self._files_last < key):
            try:
                text = canonical_bytes({key: value})[1:-1]
            except CanonicalizationError:  # e.g. a lone surrogate: refused where the digest is computed, as before
                self._files_hash = None
                return
            self._files_hash.update(text if self._files_last is None else b"," + text)
            self._files_last = key
        else:
            self._files_hash = None

    def _files_hashed(self) -> None:
        """The files object read whole: its text's hash is the view's (``view_files_hash``) when it was kept."""
        if self._files_hash is not None:
            self._files_hash.update(b"}")
            self.view_files_hash = self._files_hash

    def _member_run(self, files: dict[str, Any]) -> bool:
        """A window of regular members (a string key, a string value) from the reading position on, put in
        ``files``; True when the object's last member was among them and its '}' read. A key named twice or a
        member too many is refused as the general reader refuses it."""
        window = self._window('"', '"}', '","')
        if window is None:
            return False
        text, after, last = window
        split = _regular_members(text)
        if split is None:
            self._irregular = self.buf
            return False
        keys, values = split
        known, at = self._known, self._known_at
        if known is not None:
            shared = known[at:at + len(keys)]
            if shared == keys:  # equal strings: the file list's are held, the run's copies dropped
                keys, self._known_at = shared, at + len(keys)
            else:
                self._known = None
        found = list(zip(keys, values, strict=True))
        batch = dict(found)
        if len(batch) != len(found) or len(files) + len(batch) > MAX_SIDECAR_FILES \
                or not files.keys().isdisjoint(batch):
            for key, value in found:  # the general reader's checks, in its order, to its refusal
                if key in files:
                    raise SidecarError(f"sidecar does not parse: duplicate key {key!r} in JSON object")
                if len(files) >= MAX_SIDECAR_FILES:
                    raise SidecarError(f"the reader view names more than {MAX_SIDECAR_FILES} files")
                files[key] = value
        else:
            files.update(batch)
        if self._files_hash is not None:
            # No key named twice (refused above), each after the last hashed: canonical order, code point by code
            # point as str compares (what canonical JSON's sort_keys does). Else the digest is computed from the
            # values, as before.
            keys = list(batch)
            if (self._files_last is None or self._files_last < keys[0]) and keys == sorted(keys):
                self._files_hash.update((b"" if self._files_last is None else b",") + text.encode("utf-8"))
                self._files_last = keys[-1]
            else:
                self._files_hash = None
        self.pos = after
        return last


def _refuse_surrogates(buf: str, start: int, end: int, value: Any) -> None:
    if _SURROGATE_ESCAPE.search(buf, start, end):
        lone = _lone_surrogate(value)
        if lone is not None:
            raise SidecarError(f"sidecar does not parse: string {lone[:40]!r} holds a lone surrogate escape: not "
                               "Unicode text")


def _opt_content(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SidecarError(f"the content binding is a {type(value).__name__}, not an object")
    return value


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SidecarError(f"expected a string, got {type(value).__name__}")
    return value


def sidecar_name(digest_hex: str) -> str:
    return f"{digest_hex}.json"


def build(files: Sequence[FileIdentity], inputs: Sequence[ObservedInput], attested_version: str,
          manifest: Manifest, *, table: str, view: ReaderView, content: dict[str, Any] | None = None,
          identity: str | None = None) -> Sidecar:
    """The sidecar of an attestation of ``manifest``; ``identity``: its attestation identity when the caller has it
    already (attest.tables.attestation_identity of ``manifest.to_dict()``, else computed here)."""
    return Sidecar(attested_version=attested_version, files=tuple(files), inputs=tuple(inputs),
                   manifest=attestation_identity(manifest.to_dict()) if identity is None else identity, table=table,
                   view=view, content=content)


def leading_members(chunks: Iterable[bytes], last: str) -> dict[str, Any] | None:
    """The top-level members of the document ``chunks`` yields whose keys sort at most ``last``, read from its start:
    a sidecar is canonical JSON (keys sorted), so reading stops at the first key after ``last`` and the rest (the
    file list, the reader view) is never read (the Iceberg kept copy takes the ``content`` binding so, before it
    copies the sidecar in pieces). A repeated key keeps its last value, as ``json.loads`` does. None when the
    document does not read so (not an object, keys out of order, a value that does not parse): the caller then
    reads it as it would otherwise."""
    reader = _Reader(iter(chunks))
    members: dict[str, Any] = {}
    previous = ""
    try:
        reader.expect("{", "the sidecar is not a JSON object")
        for key in reader.members():
            if key < previous:
                return None
            if key > last:
                break
            previous = key
            members[key] = reader.value(1)
    except (SidecarError, ValueError, RecursionError):
        return None
    return members
