"""The canonical text of whole columns (``attest.canonical.rows_text`` / ``string_members``: a sidecar's file list and
a reader view's members written in C passes, docs/scale.md "sixteenth pass") is ``canonical_bytes``' text, or None
where ``canonical_bytes`` would write otherwise or refuse; and a sidecar and a view written with them are the bytes the
general writer gives."""

from __future__ import annotations

import random
from typing import Any

import pytest

from attest import canonical
from attest import view as view_module
from attest.canonical import CanonicalizationError, canonical_bytes, mapping_chunks, rows_text, string_members
from attest.numbers import I64_MIN, U64_MAX
from attest.tables import FileIdentity
from attest.view import ReaderView
from carriers.sidecar import Sidecar


class _Str(str):
    pass


class _Int(int):
    pass


_TEXTS = ["", "a", "é", "日本", "\U0001f600", '"', "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "\u2028", "{}",
          "{0}", "}", "a b", "p/q=1.parquet", "\ud800"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_TEXTS) for _ in range(rng.randrange(5)))


def _int(rng: random.Random) -> int:
    return rng.choice([0, 1, -1, 7, 2**31, I64_MIN, U64_MAX, I64_MIN - 1, U64_MAX + 1, 2**63, -(2**63) - 5,
                       rng.randrange(-10**6, 10**6)])


def _other(rng: random.Random) -> Any:
    return rng.choice([True, False, None, 1.5, _Str("s"), _Int(3), b"x", ["a"], {"a": "b"}])


def _column(rng: random.Random, n: int) -> list[Any]:
    kind = rng.randrange(4)
    column: list[Any] = [_text(rng) if kind < 2 else _int(rng) for _ in range(n)]
    if kind == 3 and n:  # a value of another kind somewhere
        column[rng.randrange(n)] = _other(rng) if rng.random() < 0.7 else _text(rng)
    return column


def _canonical_or_refused(document: Any) -> bytes | None:
    try:
        return canonical_bytes(document)
    except CanonicalizationError:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_rows_text_is_canonical_bytes_or_none(seed: int) -> None:
    rng = random.Random(seed)
    written = 0
    for _ in range(1500):
        names = tuple(sorted(set(rng.sample(["hash", "kind", "path", "size", "a{", "}b", "é", "A"],
                                            rng.randrange(1, 5)))))
        if rng.random() < 0.1:
            names = names[::-1]  # not in code point order: left to canonical_bytes
        n = rng.randrange(0, 6)
        columns = [_column(rng, n) for _ in names]
        got = rows_text(names, columns)
        rows = [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]
        expected = _canonical_or_refused(rows)
        if got is not None:
            written += 1
            assert expected is not None and got == expected[1:-1], (names, columns)
    assert written > 200  # the C passes wrote many of them: not canonical_bytes compared with itself


def test_rows_text_leaves_to_canonical_bytes_what_it_writes_otherwise() -> None:
    names = ("hash", "size")
    assert rows_text(names, [["a"], [U64_MAX]]) == b'{"hash":"a","size":18446744073709551615}'
    assert rows_text(names, [["a"], [I64_MIN]]) == b'{"hash":"a","size":-9223372036854775808}'
    for size in (U64_MAX + 1, I64_MIN - 1, True, _Int(1), 1.0, None):
        assert rows_text(names, [["a"], [size]]) is None
    for text in (_Str("a"), None, b"a", 1.0):
        assert rows_text(names, [[text], [1]]) is None
    assert rows_text(names, [["a", 1], [1, 2]]) is None  # a column of strings and ints
    assert rows_text(names, [["\ud800"], [1]]) is None  # a lone surrogate: canonical_bytes refuses it
    with pytest.raises(CanonicalizationError):
        canonical_bytes([{"hash": "\ud800", "size": 1}])
    assert rows_text(names, [["a", "b"], [1]]) is None  # columns of different lengths
    assert rows_text(("size", "hash"), [[1], ["a"]]) is None  # names out of order
    assert rows_text(("a", "a"), [["x"], ["y"]]) is None
    assert rows_text(names, [[], []]) is None


@pytest.mark.parametrize("seed", range(4))
def test_string_members_and_mapping_chunks(seed: int) -> None:
    rng = random.Random(seed)
    written = 0
    for _ in range(1500):
        mapping: dict[Any, Any] = {_text(rng) + str(i): _text(rng) for i in range(rng.randrange(1, 7))}
        if rng.random() < 0.2:
            key = rng.choice(list(mapping))
            mapping[key] = _other(rng)
        keys = sorted(mapping)
        got = string_members(keys, [mapping[k] for k in keys])
        expected = _canonical_or_refused(mapping)
        if got is not None:
            written += 1
            assert expected is not None and got == expected[1:-1]
        batch = rng.randrange(1, 5)
        try:
            chunks: bytes | None = b"".join(mapping_chunks(mapping, batch))
        except CanonicalizationError:
            chunks = None
        assert chunks == expected
    assert written > 200


def _sidecar(rng: random.Random, n: int) -> Sidecar:
    files = [FileIdentity(path=f"d/{_text(rng).replace(chr(0xd800), '')}{i}.parquet", size=rng.choice([0, 1, U64_MAX,
                          rng.randrange(10**9)]), hash=f"{rng.getrandbits(256):064x}",
                          kind=rng.choice(["data", "delete", "deletion_vector"])) for i in range(n)]
    view = ReaderView(table={"t": "x"}, files={f.path: f"{rng.getrandbits(256):064x}" for f in files})
    return Sidecar(attested_version="3", files=tuple(files), inputs=(), view=view)


@pytest.mark.parametrize("seed", range(3))
def test_a_sidecar_in_columns_is_the_general_writers_bytes(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    calls = {"rows": 0}
    real = canonical.rows_text

    def counted(*args: Any) -> bytes | None:
        got = real(*args)
        calls["rows"] += got is not None
        return got

    monkeypatch.setattr("carriers.sidecar.rows_text", counted)
    monkeypatch.setattr(view_module, "_STREAM_FILES", 0)  # every view's digest hashed in pieces (mapping_chunks)
    for n in (1, 2, 7, 40):
        sidecar = _sidecar(rng, n)
        for batch in (1, 3, 8192):
            assert b"".join(sidecar.chunks(batch)) == canonical_bytes(sidecar.to_dict())
        view = sidecar.view
        assert view is not None
        assert view.digest == canonical.digest({"view": view_module.VIEW_VERSION, "table": view.table,
                                                "files": view.files})
    assert calls["rows"] > 0
