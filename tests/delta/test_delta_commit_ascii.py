"""A JSON commit judged UTF-8 by an ASCII look first (carriers/delta/commits.py ``ASCII_FIRST``, issue 35.2 nineteenth
pass): ``regular_adds_of`` reads the same adds, and refuses the same commits, with it and without it (every commit
decoded) — on random commits of hostile paths (``..``, ``%2F``, ``#``, ``?``, escaped and raw control characters,
non-ASCII, lone surrogates, absolute paths, ``file:`` URIs) and bytes put anywhere (invalid UTF-8, overlong forms,
encoded surrogates, four-byte characters, a byte-order mark)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from carriers.delta import commits

_PATHS = [
    "d/part-0.parquet",
    "../up.parquet",
    "a%2Fb.parquet",
    "x#y.parquet",
    "q?v=1.parquet",
    "tab\tx",
    "nl\nx",
    "\x01c",
    "é.parquet",
    "日本/x.parquet",
    "\udc80lone",
    "/abs/x.parquet",
    "file:///t/x.parquet",
    "a:b",
    "😀.parquet",
    "sp ace",
]
_BYTES = [
    b"\xff",
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xe2\x82",
    b"\xf0\x9f\x98\x80",
    b"\xef\xbb\xbf",
    b"\xc3\xa9",
    b"\x80",
    b"\xf4\x90\x80\x80",
    b"\x00",
    b"\r",
    b"NaN",
    b"\\u0041",
]
INFO = '{"commitInfo":{"timestamp":1,"operation":"WRITE","engineInfo":"x"}}'


def _line(i: int, rng: random.Random) -> str:
    path = rng.choice(_PATHS) + str(i) if rng.random() < 0.15 else f"d/part-{i:05d}.parquet"
    stats = json.dumps(
        {"numRecords": 1, "minValues": {"id": i, "s": rng.choice(["a", "é", "日"])}},
        separators=(",", ":"),
        ensure_ascii=rng.random() < 0.05,
    )
    add: dict[str, Any] = {
        "path": path,
        "partitionValues": {},
        "size": i,
        "modificationTime": 1700000000000 + i,
        "dataChange": True,
        "stats": stats,
    }
    return json.dumps({"add": add}, separators=(",", ":"), ensure_ascii=rng.random() < 0.05)


def _commit(rng: random.Random) -> bytes:
    lines = [INFO] + [_line(i, rng) for i in range(rng.randint(1, 6))]
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    for _ in range(rng.choice((0, 0, 1, 2))):  # bytes put anywhere
        at = rng.randrange(len(data))
        data = data[:at] + rng.choice(_BYTES) + data[at:]
    return data


def _read(data: list[bytes], ascii_first: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(commits, "ASCII_FIRST", ascii_first)
    got = commits.regular_adds_of(data)
    if got is None:
        return None
    return [
        (
            {
                name: (column.length if isinstance(column, commits_empty()) else column.to_pylist())
                for name, column in fields.items()
            },
            paths,
        )
        for fields, paths in got
    ]


def commits_empty() -> type:
    from carriers.delta.adds import EmptyMaps

    return EmptyMaps


@pytest.mark.parametrize("seed", range(60))
def test_the_ascii_look_reads_what_decoding_reads(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    read = regular = 0
    for _ in range(25):
        data = [_commit(rng) for _ in range(rng.choice((1, 1, 2, 3)))]
        fast, slow = _read(data, True, monkeypatch), _read(data, False, monkeypatch)
        assert fast == slow
        read += 1
        regular += fast is not None
    assert 0 < regular < read  # both kinds met


def test_invalid_utf8_is_refused_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    line = _line(1, rng).replace("d/part", "d/\x7fpart")
    for bad in (b"\xff", b"\xed\xa0\x80", b"\xc0\x80", b"\xe2\x82"):
        data = (INFO + "\n" + line).encode().replace(b"\x7f", bad) + b"\n"
        assert _read([data], True, monkeypatch) is None
        assert _read([data], False, monkeypatch) is None
    good = (INFO + "\n" + line.replace("\x7f", "é")).encode() + b"\n"
    assert _read([good], True, monkeypatch) == _read([good], False, monkeypatch) is not None
