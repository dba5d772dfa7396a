"""The sidecar written and read in pieces (carriers/sidecar.py; docs/scale.md, "The sidecar in bounded memory").

- The bytes are the ones the whole-document writer wrote: ``Sidecar.chunks`` joined is ``canonical_bytes(to_dict())``
  at every batch size, and the BLAKE3s below are the ones main's writer (before this reader, at 344286c) gave for the
  same sidecars — an attestation's sidecar name and binding do not change.
- The reader agrees with the whole-document reader (``load_json_document`` and the same checks: main's
  ``Sidecar.decode``, kept below as ``_whole``) on what it accepts and what it refuses, for every hostile document an
  attacker with write access to the sidecar folder (and the metadata naming its BLAKE3) can write: truncated, deeply
  nested, huge strings, keys named twice at every level, lone surrogates, invalid UTF-8, NaN, numbers no f64 holds,
  extra data, the wrong top-level type; and it refuses a document or a value or a file list above its bounds with a
  coded error (sidecar_mismatch) without holding it.
- A table recorded with the pieces writer verifies, and its sidecar file is the one the whole writer writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from operator import attrgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import carriers.sidecar as sidecar_module
from attest.canonical import all_hex_digests, blake3_hex, canonical_bytes
from attest.errors import Code
from attest.identity.inputs import ObservedInput
from attest.model import load_json_document
from attest.record import many_records
from attest.tables import FileIdentity
from attest.view import ReaderView
from carriers.sidecar import SIDECAR_FORMAT, Sidecar, SidecarError

HEX = "0123456789abcdef" * 4


def _files(count: int, prefix: str = "p") -> tuple[FileIdentity, ...]:
    """Paths in code point order unlike UTF-16's or a byte-naive one, escapes, controls, non-ASCII."""
    names = [f"{prefix}={i % 7}/part-{i:05d}.parquet" for i in range(count)]
    names += ["a\u00e9/x.parquet", "a\U0001f600/y.parquet", "a\uff61/z.parquet", 'q"uote\\/t\tab\n.parquet',
              "ctl\u0001\u001f.parquet", "Z/upper.parquet"]
    return tuple(FileIdentity(path=p, size=i * 1000003 % 2**40, hash=f"{i * 7919:064x}",
                              kind=("data", "deletion_vector", "delete")[i % 3]) for i, p in enumerate(names))


def _cases() -> Iterator[tuple[str, Sidecar]]:
    files = _files(2000)
    view = ReaderView(table={"schema": {"f": 1.5, "g": [1, 2.25e300, -0.0, 1e-7], "big": 2**63}, "name": "t\u00e9"},
                      files={f.path: f"{i:064x}" for i, f in enumerate(files)})
    inputs = (ObservedInput(table="delta:/x", content=HEX, version="3", row_count=12),
              ObservedInput(table="iceberg:y", snapshot_id="77"))
    yield "v2-full", Sidecar(attested_version="12", files=files, inputs=inputs, manifest=HEX, table="delta:/t",
                             view=view, content={"scheme": "x", "rows": 5, "total": HEX, "files": [HEX, HEX],
                                                 "f": 0.1})
    yield "v2-empty", Sidecar(attested_version="0", files=(), inputs=(), manifest=HEX, table="delta:/t",
                              view=ReaderView(table={}, files={}))
    yield "v1-legacy", Sidecar(attested_version="3", files=_files(10), inputs=(), version=1)
    yield "v2-one", Sidecar(attested_version="-1", files=_files(0)[:1], inputs=inputs, manifest=HEX, table="t",
                            view=ReaderView(table={"x": None}, files={"a": HEX}))


# What main's whole-document writer (Sidecar.encode at 344286c: canonical_bytes(to_dict())) gave for _cases().
MAIN_WRITER = {
    "v2-full": (473793, "05a173fc40e55ae10ba9dd8863e992d00ea526b11b6171fae22ec468cd440896"),
    "v2-empty": (315, "51d83bf08619d8336a98f477de0d0348127dc4e4d340679173e1492b57a72a0b"),
    "v1-legacy": (2321, "9750174260e65a6d0ecaf43744d860fc37d89b22ac76c18e859dd3610bf3fc2e"),
    "v2-one": (724, "db041552ad77f337905972b87e79c5c1a949bf0b8b5318dac28409ba4986e69a"),
}


@pytest.mark.parametrize("batch", [1, 3, 1000, 8192])
def test_pieces_are_the_bytes_of_the_whole_writer(batch: int) -> None:
    for name, sidecar in _cases():
        data = b"".join(sidecar.chunks(batch))
        assert data == canonical_bytes(sidecar.to_dict()), name
        assert (len(data), blake3_hex(data)) == MAIN_WRITER[name], name
        assert sidecar.encode() == (data, MAIN_WRITER[name][1])


def _whole(data: bytes, expected_hash: str | None) -> Sidecar:
    """main's Sidecar.decode (the whole-document reader at 344286c), without its 512 MiB cap."""
    if expected_hash is not None and blake3_hex(data) != expected_hash:
        raise SidecarError("sidecar bytes do not match the BLAKE3 recorded in the table metadata")
    try:
        doc = load_json_document(data, max_bytes=1 << 40)
        version = doc.get("version") if isinstance(doc, dict) else None
        if doc.get("format") != SIDECAR_FORMAT or version not in (2, 1):
            raise SidecarError("not a sidecar")
        with many_records():
            files = tuple(FileIdentity.from_dict(f) for f in doc["files"])
        if not all_hex_digests(list(map(attrgetter("hash"), files))) or \
                min(map(attrgetter("size"), files), default=0) < 0:
            raise SidecarError("a file triple has a malformed hash or a negative size")
        if len({f.path for f in files}) != len(files):
            raise SidecarError("the file list names a path twice")
        sidecar = Sidecar(
            attested_version=sidecar_module._opt_str(doc.get("attested_version")), files=files,
            inputs=tuple(ObservedInput.from_dict(i) for i in doc.get("inputs", [])),
            manifest=sidecar_module._opt_str(doc.get("manifest")), table=sidecar_module._opt_str(doc.get("table")),
            view=None if doc.get("reader_view") is None else ReaderView.from_dict(doc["reader_view"]),
            version=int(version), content=sidecar_module._opt_content(doc.get("content")))
        if version == 2 and (sidecar.manifest is None or sidecar.table is None or sidecar.view is None
                             or sidecar.attested_version is None):
            raise SidecarError("a version 2 sidecar must name ...")
        return sidecar
    except SidecarError:
        raise
    except Exception as exc:
        raise SidecarError(f"sidecar does not parse: {type(exc).__name__}: {exc}") from exc


def _pieces(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i:i + size] for i in range(0, len(data), size))


def _agree(data: bytes, *, hashed: bool = True) -> Sidecar | None:
    """Both readers on ``data`` (pieces of 1, 7 and 4096 bytes, and whole): same sidecar, or both refuse it."""
    digest = blake3_hex(data) if hashed else None
    try:
        expected: Sidecar | None = _whole(data, digest)
    except SidecarError:
        expected = None
    for size in (1 if len(data) < 20_000 else 997, 7 if len(data) < 20_000 else 4093, 4096, max(len(data), 1)):
        if expected is None:
            with pytest.raises(SidecarError) as caught:
                Sidecar.decode_chunks(_pieces(data, size), digest)
            assert caught.value.code is Code.SIDECAR_MISMATCH
        else:
            got = Sidecar.decode_chunks(_pieces(data, size), digest)
            assert got == expected and got.view == expected.view, size
    return expected


def _doc(name: str = "v2-one") -> dict[str, Any]:
    return json.loads(dict(_cases())[name].encode()[0])


def test_honest_sidecars_read_back_whatever_the_pieces() -> None:
    for name, sidecar in _cases():
        data, _ = sidecar.encode()
        decoded = _agree(data)
        assert decoded == replace(sidecar, files=tuple(sorted(sidecar.files, key=attrgetter("path")))), name


def test_whitespace_and_key_order_are_read_as_the_whole_reader_reads_them() -> None:
    doc = _doc("v2-full")
    assert _agree(json.dumps(doc, indent=3).encode()) is not None
    shuffled = dict(reversed(list(doc.items())))
    shuffled["reader_view"] = dict(reversed(list(doc["reader_view"].items())))
    assert _agree(json.dumps(shuffled, ensure_ascii=True).encode()) is not None
    assert _agree(b" \n\t" + canonical_bytes(doc) + b"\r\n ") is not None


def test_truncated_documents_are_refused() -> None:
    data = dict(_cases())["v2-full"].encode()[0]
    for cut in [0, 1, 2, 10, 100, len(data) // 3, len(data) // 2, len(data) - 200, len(data) - 2, len(data) - 1]:
        assert _agree(data[:cut]) is None, cut
    small = dict(_cases())["v2-one"].encode()[0]
    for cut in range(len(small)):
        assert _agree(small[:cut], hashed=False) is None, cut


def test_truncated_bytes_under_the_bound_hash_say_they_are_not_the_bound_bytes() -> None:
    data, digest = dict(_cases())["v2-full"].encode()
    for cut in (1, len(data) // 2, len(data) - 1):
        with pytest.raises(SidecarError, match="do not match the BLAKE3"):
            Sidecar.decode_chunks(_pieces(data[:cut], 4096), digest)
    with pytest.raises(SidecarError, match="do not match the BLAKE3"):  # parses, but is not the bound document
        Sidecar.decode_chunks(_pieces(data, 4096), HEX)


def _nest(depth: int) -> Any:
    value: Any = 1
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@pytest.mark.parametrize("depth", [120, 124, 125, 126, 127, 200, 5000, 100_000])
@pytest.mark.parametrize("where", ["file", "content", "view_table", "view_extra", "top_extra", "input"])
def test_deeply_nested_values_are_refused_where_the_whole_reader_refuses_them(where: str, depth: int) -> None:
    doc = _doc()
    nested = _nest(depth)
    if where == "file":
        doc["files"][0]["extra"] = nested
    elif where == "content":
        doc["content"] = {"deep": nested}
    elif where == "view_table":
        doc["reader_view"]["table"] = {"deep": nested}  # its digest no longer matches either way
    elif where == "view_extra":
        doc["reader_view"]["extra"] = nested
    elif where == "top_extra":
        doc["extra"] = nested
    else:
        doc["inputs"][0]["watermark"] = nested
    try:
        data = json.dumps(doc).encode()
    except RecursionError:
        data = _deep_text(doc, where, depth)
    result = _agree(data)  # the two readers agree at every depth, on each side of the bound
    if depth >= 127:
        assert result is None
    elif depth == 120 and where != "view_table":
        assert result is not None


def _deep_text(doc: dict[str, Any], where: str, depth: int) -> bytes:
    """The document with a value nested ``depth`` levels spliced in as text (json.dumps recurses)."""
    marker = "\u0000MARK\u0000"
    if where == "file":
        doc["files"][0]["extra"] = marker
    elif where == "content":
        doc["content"] = {"deep": marker}
    elif where == "view_table":
        doc["reader_view"]["table"] = {"deep": marker}
    elif where == "view_extra":
        doc["reader_view"]["extra"] = marker
    elif where == "top_extra":
        doc["extra"] = marker
    else:
        doc["inputs"][0]["watermark"] = marker
    text = json.dumps(doc)
    return text.replace(json.dumps(marker), "[" * depth + "1" + "]" * depth).encode()


def test_a_deep_document_is_refused_without_a_crash() -> None:
    assert _agree(b"[" * 200_000 + b"]" * 200_000) is None
    assert _agree(b'{"files":' + b"[" * 200_000) is None
    assert _agree(b'{"reader_view":{"files":{"a":' + b"{\"a\":" * 100_000) is None


@pytest.mark.parametrize("where", ["top", "files_twice", "file_entry", "view", "view_files", "content", "input"])
def test_keys_named_twice_are_refused_at_every_level(where: str) -> None:
    data = dict(_cases())["v2-one"].encode()[0]
    text = data.decode()
    doc = json.loads(text)
    path = json.dumps(doc["files"][0]["path"], ensure_ascii=False)
    digest = doc["reader_view"]["files"]["a"]
    edits = {
        "top": ('"table":"t"', '"table":"t","table":"t"'),
        "files_twice": ('"format":', '"files":[],"format":'),
        "file_entry": (f'"path":{path}', f'"path":{path},"path":"other"'),
        "view": ('"table":{"x":null}', '"table":{"x":null},"table":{"x":null}'),
        "view_files": (f'"a":"{digest}"', f'"a":"{digest}","a":"{digest}"'),
        "content": ('"attested_version":"-1"', '"attested_version":"-1","content":{"a":1,"a":2}'),
        "input": ('"row_count":12', '"row_count":12,"row_count":13'),
    }
    old, new = edits[where]
    assert text.count(old) >= 1
    assert _agree(text.replace(old, new, 1).encode()) is None


def test_huge_strings_and_values_are_refused_without_being_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sidecar_module, "MAX_SIDECAR_VALUE_CHARS", 50_000)
    monkeypatch.setattr(sidecar_module, "CHUNK_BYTES", 4096)
    doc = _doc()
    for edit in ("path", "key", "view_value", "content", "unterminated"):
        hostile = json.loads(json.dumps(doc))
        if edit == "path":
            hostile["files"][0]["path"] = "x" * 200_000
        elif edit == "key":
            hostile["reader_view"]["files"] = {"k" * 200_000: HEX}
        elif edit == "view_value":
            hostile["reader_view"]["files"] = {"a": "v" * 200_000}
        elif edit == "content":
            hostile["content"] = {"blob": ["y" * 1000] * 200}
        data = json.dumps(hostile).encode()
        if edit == "unterminated":
            data = b'{"files":[{"path":"' + b"z" * 500_000
        with pytest.raises(SidecarError, match="longer than 50000 characters"):
            Sidecar.decode_chunks(_pieces(data, 4096), None)


def test_more_files_or_bytes_than_a_reader_keeps_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    data = dict(_cases())["v2-full"].encode()[0]
    monkeypatch.setattr(sidecar_module, "MAX_SIDECAR_FILES", 1000)
    with pytest.raises(SidecarError, match="names more than 1000 files") as caught:
        Sidecar.decode_chunks(_pieces(data, 4096), blake3_hex(data))
    assert caught.value.code is Code.SIDECAR_MISMATCH
    monkeypatch.setattr(sidecar_module, "MAX_SIDECAR_FILES", 10_000_000)
    monkeypatch.setattr(sidecar_module, "MAX_SIDECAR_BYTES", 100_000)
    taken = 0

    def endless() -> Iterator[bytes]:  # a sidecar that never ends: refused at the bound, not read to its end
        nonlocal taken
        yield b'{"files":['
        while True:
            taken += 1
            yield b'{"hash":"' + HEX.encode() + b'","path":"p","size":1},' * 100

    with pytest.raises(SidecarError, match="larger than 100000 bytes"):
        Sidecar.decode_chunks(endless(), HEX)
    assert taken < 100


@pytest.mark.parametrize("text", [
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"x":NaN}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"x":1e400}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"x":-Infinity}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"x":"\\ud800"}',
    b'{"files":[{"hash":"' + HEX.encode() + b'","path":"\\udc00","size":1}],"format":"recipe-attest-sidecar",'
    b'"version":1}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"x":"\xff"}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"x":"\xe2\x82"}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1}{}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1} x',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,}',
    b'{"files":[,],"format":"recipe-attest-sidecar","version":1}',
    b'{"files":[1 2],"format":"recipe-attest-sidecar","version":1}',
    b'{"files":"abc","format":"recipe-attest-sidecar","version":1}',
    b'{"format":"recipe-attest-sidecar","version":1}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":3}',
    b'[]', b'"x"', b'', b'   ', b'nul', b'{', b'{"files"', b'{"files":', b'{"files":[', b'{"files":[]',
    b'\xef\xbb\xbf{"files":[],"format":"recipe-attest-sidecar","version":1}',
    b'{"files":[{"hash":"' + HEX.encode() + b'","path":"p","size":1},{"hash":"' + HEX.encode()
    + b'","path":"p","size":2}],"format":"recipe-attest-sidecar","version":1}',
    b'{"files":[{"hash":"' + HEX.encode() + b'","path":"p","size":-1}],"format":"recipe-attest-sidecar",'
    b'"version":1}',
    b'{"files":[{"hash":"' + HEX.encode() + b'","path":"p","size":1,"kind":"x"}],"format":'
    b'"recipe-attest-sidecar","version":1}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"reader_view":{"files":{"a":1}}}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"reader_view":[]}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"reader_view":{"files":[]}}',
])
def test_hostile_documents_are_refused_as_the_whole_reader_refuses_them(text: bytes) -> None:
    assert _agree(text) is None
    assert _agree(text, hashed=False) is None


@pytest.mark.parametrize("text", [
    b'{"files":[],"format":"recipe-attest-sidecar","version":1}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1.0,"x":[1.5,-0,12345678901234567890]}',
    b'{"files":[{"hash":"' + HEX.encode() + b'","path":5,"size":"7"}],"format":"recipe-attest-sidecar",'
    b'"version":true}',
    b'{"files":[],"format":"recipe-attest-sidecar","version":1,"x":"\\ud83d\\ude00 \\u00e9"}',
    b'{"files":{},"format":"recipe-attest-sidecar","version":1}',  # an empty object lists no file, as before
])
def test_what_the_whole_reader_accepted_is_accepted(text: bytes) -> None:
    assert _agree(text) is not None


def test_a_recorded_table_verifies_and_its_sidecar_is_the_whole_writers(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    from carriers.delta.carrier import DeltaCarrier, attest_after_write

    table = tmp_path / "t"
    for i in range(3):
        write_deltalake(str(table), pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}),
                        mode="append")
    result = attest_after_write(str(table), model="m", program_hash="a" * 64)
    carrier = DeltaCarrier(str(table))
    written = Path(result.sidecar)
    data = written.read_bytes()
    assert written.name == f"{blake3_hex(data)}.json"
    att = DeltaCarrier(str(table)).read()
    assert att is not None and not att.problems and att.files is not None
    assert canonical_bytes(Sidecar.decode(data, None).to_dict()) == data  # the whole writer's bytes
    state = DeltaCarrier(str(table)).state()
    assert state.attestation is not None and not state.attestation.problems
    # The same sidecar written again (same bytes): left as it is; a different file under its name: refused.
    rel, digest = carrier.storage.write_once_stream(carrier.sidecar_dir, ".json", [data[:10], data[10:]])
    assert digest == blake3_hex(data) and rel.endswith(written.name)
    written.chmod(0o644)
    written.write_bytes(data + b" ")
    with pytest.raises(Exception) as caught:
        carrier.storage.write_once_stream(carrier.sidecar_dir, ".json", [data])
    assert getattr(caught.value, "code", None) is Code.SIDECAR_MISMATCH
    assert not [p for p in written.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_large_reader_view_is_hashed_in_pieces_to_the_same_digest() -> None:
    from attest.canonical import digest
    from attest.view import VIEW_VERSION

    for count in (8192, 8193, 30_000):
        files = {f"p={i % 7}/\u00e9{i:06d}.parquet": f"{i:064x}" for i in range(count)}
        view = ReaderView(table={"schema": {"f": 1.5}, "n": "\u00e9"}, files=files)
        assert view.digest == digest({"view": VIEW_VERSION, "table": view.table, "files": files})


@pytest.mark.timeout(60)
@pytest.mark.parametrize("what", ["fifo", "link to /dev/zero", "dangling link", "folder", "other bytes"])
def test_a_streamed_write_over_a_name_that_is_no_such_file_is_refused_never_read(tmp_path: Path, what: str) -> None:
    """As write_once_local (tests/test_atomic.py): the name the pieces' BLAKE3 gives, planted before the write as a
    FIFO (blocked forever), a link to /dev/zero (read until memory ran out), a folder or other bytes: refused, coded,
    left alone — and no temporary file is left behind."""
    import os

    from attest.errors import CarrierError
    from carriers.atomic import write_once_local_stream

    data = b'{"a":1}'
    target = tmp_path / f"{blake3_hex(data)}.json"
    if what == "fifo":
        os.mkfifo(target)
    elif what == "folder":
        target.mkdir()
    elif what == "other bytes":
        target.write_bytes(b'{"a":2}')
    else:
        target.symlink_to("/dev/zero" if what == "link to /dev/zero" else tmp_path / "missing")
    with pytest.raises(CarrierError) as info:
        write_once_local_stream(tmp_path, ".json", [data[:3], data[3:]])
    assert info.value.code is Code.SIDECAR_MISMATCH
    assert os.path.lexists(target) and not (target.is_file() and target.read_bytes() == data)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_streamed_write_publishes_once_and_agrees_with_identical_bytes(tmp_path: Path) -> None:
    from carriers.atomic import write_once_local_stream

    data = b'{"a":1}'
    assert write_once_local_stream(tmp_path / "d", ".json", iter([data])) == (blake3_hex(data), True)
    assert write_once_local_stream(tmp_path / "d", ".json", [data[:1], data[1:]]) == (blake3_hex(data), False)
    assert [p.name for p in (tmp_path / "d").iterdir()] == [f"{blake3_hex(data)}.json"]
    assert (tmp_path / "d" / f"{blake3_hex(data)}.json").read_bytes() == data


def test_a_fifo_or_an_escaping_link_in_place_of_a_sidecar_is_not_read(tmp_path: Path) -> None:
    import os

    from carriers.storage.delta import DeltaStorage

    root = tmp_path / "t"
    (root / "_recipe_attest").mkdir(parents=True)
    storage = DeltaStorage(str(root))
    os.mkfifo(root / "_recipe_attest" / "a.json")
    (tmp_path / "outside.json").write_bytes(b"{}")
    (root / "_recipe_attest" / "b.json").symlink_to(tmp_path / "outside.json")
    (root / "_recipe_attest" / "c.json").write_bytes(b"x" * 3_000_000)
    assert storage.read_chunks("_recipe_attest/a.json") is None
    assert storage.read_chunks("_recipe_attest/b.json") is None
    assert storage.read_chunks("_recipe_attest/missing.json") is None
    pieces = storage.read_chunks("_recipe_attest/c.json")
    assert pieces is not None and [len(p) for p in pieces] == [1 << 20, 1 << 20, 3_000_000 - (2 << 20)]
