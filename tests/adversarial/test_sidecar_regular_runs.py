"""The sidecar reader's regular runs (carriers/sidecar.py; docs/scale.md, "seventh pass").

A window of canonical file entries or reader-view members is read in bulk (split at its quotes, each piece checked)
and anything else by the general reader, a value at a time. The bulk reading may only ever be faster: on random
sidecars, mutated at random (bytes replaced, inserted, deleted, slices repeated: keys and paths named twice, escapes,
white space, quotes and brackets inside strings, cut and invalid UTF-8), read in random pieces with windows down to a
few bytes, the reader with the runs gives the same sidecar as the reader without them, or the same refusal, and the
whole-document reader (main's, ``_whole``) accepts and refuses the same documents.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attest.view as view_module
import carriers.sidecar as sidecar_module
from attest.canonical import blake3_hex, canonical_bytes
from attest.errors import Code
from attest.tables import FileIdentity
from attest.view import ReaderView
from carriers.sidecar import Sidecar, SidecarError
from tests.adversarial.test_sidecar_stream import _whole

HEX = "0123456789abcdef" * 4
# Path pieces: plain ones, and ones that make an entry irregular or put the splitters inside a string.
_PIECES = ["a", "b/", "x=1/", "part-0.parquet", "é", "\U0001f600", '"', "\\", "\x01", "\x7f", "}]", '","',
           '},{"hash":"', '"}', ":", ",", " "]
_BYTES = [b'"', b"|", b"},{|:1",
          b"\\", b"{", b"}", b"[", b"]", b",", b":", b" ", b"0", b"1", b"-", b"a", b"f", b"\x01", b"\xff",
          b"\xc3", b"\\u", b"\\ud800", b'"x"', b'"size":1']


def _path() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join)


def _file(path: str, size: int, digest: int, kind: str) -> FileIdentity:
    return FileIdentity(path=path, size=size, hash=f"{digest:064x}", kind=kind)  # type: ignore[arg-type]


@st.composite
def _sidecars(draw: st.DrawFn) -> bytes:
    paths = draw(st.lists(_path(), max_size=12, unique=True))
    files = tuple(_file(p, draw(st.one_of(st.integers(0, 99), st.integers(0, 2**64))),
                        draw(st.integers(0, 2**256 - 1)), draw(st.sampled_from(["data", "deletion_vector", "delete"])))
                  for p in paths)
    view_values = st.one_of(st.just(HEX), st.text(max_size=8))
    view = ReaderView(table={"name": "t"}, files={p: draw(view_values) for p in paths})
    sidecar = Sidecar(attested_version="1", files=files, inputs=(), manifest=HEX, table="delta:/t", view=view)
    return sidecar.encode()[0]


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(_sidecars()))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["replace", "insert", "delete", "repeat"]))
        if how == "replace" and at < len(data):
            data[at:at + 1] = draw(st.sampled_from(_BYTES))
        elif how == "insert":
            data[at:at] = draw(st.sampled_from(_BYTES))
        elif how == "delete":
            del data[at:at + draw(st.integers(1, 40))]
        else:  # a slice written twice: an entry or a member named twice, or a broken one
            end = min(len(data), at + draw(st.integers(1, 300)))
            data[end:end] = data[at:end]
    return bytes(data)


def _read(data: bytes, piece: int, digest: str | None) -> Sidecar | str:
    try:
        return Sidecar.decode_chunks((data[i:i + piece] for i in range(0, len(data), piece)), digest)
    except SidecarError as exc:
        assert exc.code is Code.SIDECAR_MISMATCH
        return str(exc)


def _read_switched(data: bytes, piece: int, window: int, switch: tuple[object, str],
                   digest: str | None) -> tuple[Any, Any]:
    """The reader with ``switch`` (a module and the name of its boolean) on, then off, windows of ``window``
    characters; both put back after."""
    owner, name = switch
    saved = sidecar_module.CHUNK_BYTES, getattr(owner, name)
    try:
        sidecar_module.CHUNK_BYTES = window
        setattr(owner, name, True)
        on = _read(data, piece, digest)
        setattr(owner, name, False)
        off = _read(data, piece, digest)
    finally:
        sidecar_module.CHUNK_BYTES = saved[0]
        setattr(owner, name, saved[1])
    return on, off


def _same_views(on: Any, off: Any) -> None:
    """``_same``, and for a sidecar read the same view members, in order, and view digest."""
    _same(on, off)
    if isinstance(on, Sidecar):
        assert on.view is not None and off.view is not None
        assert list(on.view.files.items()) == list(off.view.files.items())  # the same members, in order
        assert on.view.digest == off.view.digest


def _both(data: bytes, piece: int, window: int, hashed: bool) -> tuple[Any, Any]:
    """The reader with the regular runs and without, windows of ``window`` characters."""
    return _read_switched(data, piece, window, (sidecar_module, "REGULAR_RUNS"),
                          blake3_hex(data) if hashed else None)


def _same(fast: Any, general: Any) -> None:
    assert fast == general
    if isinstance(fast, Sidecar):
        assert isinstance(general, Sidecar) and fast.view == general.view
        assert [f.kind for f in fast.files] == [f.kind for f in general.files]


_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_mutated(), st.integers(1, 400), st.integers(8, 600), st.booleans())
def test_the_runs_read_what_the_general_reader_reads_or_refuse_as_it_refuses(
        data: bytes, piece: int, window: int, hashed: bool) -> None:
    fast, general = _both(data, piece, window, hashed)
    _same(fast, general)
    try:
        whole: Sidecar | None = _whole(data, blake3_hex(data) if hashed else None)
    except SidecarError:
        whole = None
    assert (whole is None) == isinstance(fast, str)
    if whole is not None:
        assert whole == fast and whole.view == fast.view  # type: ignore[union-attr]


@_SETTINGS
@given(_sidecars(), st.integers(1, 5000), st.integers(8, 5000))
def test_honest_sidecars_read_back_with_the_runs(data: bytes, piece: int, window: int) -> None:
    fast, general = _both(data, piece, window, True)
    assert isinstance(fast, Sidecar)
    _same(fast, general)


def _regular(count: int) -> bytes:
    files = tuple(_file(f"d={i % 5}/part-{i:05d}.parquet", i * 7919, i, "data") for i in range(count))
    view = ReaderView(table={"name": "t"}, files={f.path: HEX for f in files})
    return Sidecar(attested_version="1", files=files, inputs=(), manifest=HEX, table="delta:/t", view=view).encode()[0]


def test_a_regular_sidecar_is_read_in_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs are taken (else the tests above compare the general reader with itself), across windows and pieces."""
    calls: dict[str, int] = {"entries": 0, "members": 0}

    def counted(name: str, function: Any) -> Any:
        def wrapper(text: str) -> Any:
            out = function(text)
            calls[name] += out is not None
            return out
        return wrapper

    monkeypatch.setattr(sidecar_module, "_regular_entries", counted("entries", sidecar_module._regular_entries))
    monkeypatch.setattr(sidecar_module, "_regular_members", counted("members", sidecar_module._regular_members))
    data = _regular(3000)
    for piece, window in ((4096, 4096), (1 << 20, 1 << 20), (997, 200)):
        monkeypatch.setattr(sidecar_module, "CHUNK_BYTES", window)
        got = Sidecar.decode_chunks((data[i:i + piece] for i in range(0, len(data), piece)), blake3_hex(data))
        assert len(got.files) == 3000 and got.view is not None and len(got.view.files) == 3000
        assert calls["entries"] > 0 and calls["members"] > 0
        fast, general = _both(data, piece, window, True)
        _same(fast, general)


def test_bounds_hold_in_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file list or a view longer than a reader keeps is refused in a run as the general reader refuses it."""
    monkeypatch.setattr(sidecar_module, "MAX_SIDECAR_FILES", 1000)
    data = _regular(1001)
    fast, general = _both(data, 1 << 20, 1 << 20, True)
    assert fast == general == "the file list names more than 1000 files"
    files = tuple(_file(f"p{i}", i, i, "data") for i in range(10))
    view = ReaderView(table={}, files={f"v{i}": HEX for i in range(1001)})
    data = Sidecar(attested_version="1", files=files, inputs=(), manifest=HEX, table="delta:/t",
                   view=view).encode()[0]
    fast, general = _both(data, 1 << 20, 1 << 20, True)
    assert fast == general == "the reader view names more than 1000 files"


def _entry(path: str) -> bytes:
    return b'{"hash":"' + HEX.encode() + b'","kind":"data","path":"' + path.encode() + b'","size":1}'


@pytest.mark.parametrize("files, view", [
    ([_entry("a"), _entry("a")], b'"a":"x"'),  # a path named twice in the list
    ([_entry("a"), _entry("b")], b'"a":"x","b":"y","a":"z"'),  # a view key named twice
    ([_entry("a"), _entry('b},{"hash":"')], b'"a":"x"'),  # a cut inside a string (a quote in the path)
    ([_entry("a"), _entry("b\\u0000")], b'"a":"x"'),  # an escape
    ([_entry("a"), _entry("b").replace(b'"size":1', b'"size":01')], b'"a":"x"'),
    ([_entry("a"), _entry("b").replace(b'"size":1', b'"size":1.0')], b'"a":"x"'),
    ([_entry("a"), _entry("b").replace(b'"size":1', b'"size":12345678901234567890')], b'"a":"x"'),
    ([_entry("a"), _entry("b").replace(b'"kind":"data"', b'"kind":"other"')], b'"a":"x"'),
    ([_entry("a"), _entry("b").replace(b'"kind":"data"', b'"kind":"data","kind":"data"')], b'"a":"x"'),
    ([_entry("a"), _entry("b").replace(HEX.encode(), HEX.upper().encode())], b'"a":"x"'),
    ([_entry("a"), _entry("b")], b'"a":"x","b":"\\ud800"'),  # a lone surrogate in the view
    ([_entry("a"), _entry("b")], b'"a":"x","b":"y",'),  # a trailing comma
    ([_entry("a"), _entry("b")], b'"a":"x","b":"y\x01"'),  # a control character
    ([_entry("a").replace(b'"size":1}', b'"size":1},{|:2}'), _entry("b")], b'"a":"x"'),  # the tails' separator
])
def test_irregular_windows_are_read_by_the_general_reader(files: list[bytes], view: bytes) -> None:
    data = (b'{"attested_version":"1","files":[' + b",".join(files) + b'],"format":"recipe-attest-sidecar",'
            b'"inputs":[],"manifest":"' + HEX.encode() + b'","reader_view":{"files":{' + view
            + b'},"table":{},"version":1},"table":"delta:/t","version":2}')
    for piece, window in ((1 << 20, 1 << 20), (7, 16), (64, 64)):
        fast, general = _both(data, piece, window, True)
        _same(fast, general)



# The reader view's digest from the text read (docs/scale.md, "ninth pass"): the sidecar reader hashes the view's files
# object as it reads it, when every member is a string member in ascending key order (the runs' text, and the members
# the general reader reads between them re-encoded), and ReaderView.from_dict finishes the digest from that hash
# instead of encoding the files again — only for views hashed in pieces (more than attest.view._STREAM_FILES files),
# patched to 0 here so that every view takes it. It must compute the digest the values give, and refuse what that
# refuses.
def _both_digests(data: bytes, piece: int, window: int, hashed: bool) -> tuple[Any, Any, int]:
    """``_both`` with every view's digest finished from the text read; and how often it was."""
    calls: list[None] = []
    saved = view_module._STREAM_FILES, view_module._digest_after_files

    def counted(*args: Any) -> str:
        calls.append(None)
        return saved[1](*args)

    try:
        view_module._STREAM_FILES = 0
        view_module._digest_after_files = counted  # type: ignore[assignment]
        fast, general = _both(data, piece, window, hashed)
    finally:
        view_module._STREAM_FILES, view_module._digest_after_files = saved  # type: ignore[assignment]
    return fast, general, len(calls)


def _fresh_digest(view: ReaderView) -> str:
    saved = view_module._STREAM_FILES
    try:
        view_module._STREAM_FILES = 0
        return ReaderView(table=view.table, files=view.files).digest
    finally:
        view_module._STREAM_FILES = saved


@_SETTINGS
@given(_mutated(), st.integers(1, 400), st.integers(8, 600), st.booleans())
def test_the_view_digest_from_the_text_read_is_the_values_digest(
        data: bytes, piece: int, window: int, hashed: bool) -> None:
    fast, general, _ = _both_digests(data, piece, window, hashed)
    _same(fast, general)
    if isinstance(fast, Sidecar) and fast.view is not None:
        assert fast.view.digest == _fresh_digest(fast.view)


@_SETTINGS
@given(_sidecars(), st.integers(1, 5000), st.integers(8, 5000))
def test_honest_views_take_the_digest_from_the_text_read(data: bytes, piece: int, window: int) -> None:
    fast, general, calls = _both_digests(data, piece, window, True)
    assert isinstance(fast, Sidecar) and fast.view is not None
    _same(fast, general)
    assert fast.view.digest == _fresh_digest(fast.view)
    assert calls <= 1  # the reader with the runs hashed the text, or read a member otherwise and did not


def test_a_regular_view_takes_the_digest_from_the_text_read() -> None:
    data = _regular(300)
    for piece, window in ((1 << 20, 1 << 20), (7, 16), (64, 64), (1000, 333)):
        fast, general, calls = _both_digests(data, piece, window, True)
        assert isinstance(fast, Sidecar) and fast.view is not None
        _same(fast, general)
        assert fast.view.digest == _fresh_digest(fast.view)
        assert calls == 1  # the runs' windows and the members read between them, hashed as read


@st.composite
def _reordered_views(draw: st.DrawFn) -> tuple[bytes, bool]:
    """A sidecar whose view's files are written in another order than canonical (or not), with a digest over the text
    as written: a document that is not canonical, whose digest the text read would give if order were not checked.
    Second: whether the order is the canonical one (then the document is honest)."""
    paths = draw(st.lists(_path(), min_size=2, max_size=10, unique=True))
    values = {p: draw(st.one_of(st.just(HEX), st.text(max_size=4))) for p in paths}
    order = draw(st.permutations(sorted(paths)))
    table = {"name": "t"}
    members = b",".join(canonical_bytes({p: values[p]})[1:-1] for p in order)
    digest = blake3_hex(b'{"files":{' + members + b'},"table":' + canonical_bytes(table) + b',"view":1}')
    data = (b'{"attested_version":"1","files":[],"format":"recipe-attest-sidecar","inputs":[],"manifest":"'
            + HEX.encode() + b'","reader_view":{"digest":"' + digest.encode() + b'","files":{' + members
            + b'},"table":' + canonical_bytes(table) + b',"version":1},"table":"delta:/t","version":2}')
    return data, list(order) == sorted(paths)


@_SETTINGS
@given(_reordered_views(), st.integers(1, 400), st.integers(8, 600))
def test_a_view_out_of_canonical_order_is_refused_as_the_values_refuse_it(
        document: tuple[bytes, bool], piece: int, window: int) -> None:
    data, canonical = document
    fast, general, _ = _both_digests(data, piece, window, True)
    _same(fast, general)
    assert isinstance(fast, Sidecar) == canonical  # its digest is the canonical text's only when written in order
