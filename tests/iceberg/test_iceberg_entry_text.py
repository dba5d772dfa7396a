"""A live file's view entry written as text straight from the manifest's record (carriers/iceberg/entry_text.py,
docs/scale.md eighteenth pass) is the text of the entry ``IcebergCarrier.file_entry`` makes: on random records of
every field kind, the same text or the general way taken (``None``), and the listing's file, its view digests and
any error the same with the fast path on and off (``ATTEST_FAST=0``)."""

from __future__ import annotations

import datetime
import decimal
import random
import uuid
from typing import Any

import pytest
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.typedef import Record
from pyiceberg.utils.lazydict import LazyDict

from attest import fast
from attest.view import file_text
from carriers.iceberg import entry_text
from carriers.iceberg.carrier import _FILE_FIELDS, IcebergCarrier
from carriers.iceberg.entry_text import view_text
from carriers.iceberg.views import ViewEntries

_INTS = [0, 1, -1, 4, 9, 10, 100, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**64, -(2**64) - 1, 10**30]
_STRINGS = [
    "",
    "a",
    'q"uote',
    "back\\slash",
    "tab\tnl\n",
    "\x00\x1f\x7f",
    "é",
    "日本",
    "\U0001f600",
    "\ud800",
    "a\udfffb",
    "</script>",
    "{}[],:",
]
_BYTES = [b"", b"\x00", b"\xff\xfe", b"n150000", bytes(range(16))]
_FLOATS = [0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf"), 1e300, 5e-324]


class _IntSub(int):
    pass


class _StrSub(str):
    pass


_ODD = [0.0]  # how often a value is of a kind the text is not written for (set per record)


def _leaf(rng: random.Random) -> Any:
    pick = rng.randrange(10) if rng.random() < _ODD[0] else rng.randrange(7)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick in (2, 3):
        return rng.choice(_INTS)
    if pick == 4:
        return rng.choice(_STRINGS)
    if pick == 5:
        return rng.choice(_BYTES)
    if pick == 6:
        return rng.choice(_FLOATS)
    # Kinds the text is not written for: the general way must be taken
    return rng.choice(
        [
            decimal.Decimal("1.10"),
            datetime.date(2020, 1, 2),
            uuid.UUID(int=5),
            _IntSub(3),
            _StrSub("s"),
            DataFileContent.DATA,
            FileFormat.PARQUET,
            (1, 2),
            10**5000,
        ]
    )


def _map(rng: random.Random) -> Any:
    keys = rng.sample([1, 2, 3, 9, 10, 11, 100, 1000, -1, 0, 2**40], rng.randrange(5))
    if rng.random() < _ODD[0]:
        keys.append(rng.choice([True, "1", 1.0, _IntSub(7), "a"]))  # keys of another type: the general way
    shape = rng.randrange(4)
    if shape == 0:  # counts
        held = {k: rng.choice([0, 1, 7, 2**63 - 1, 10**20]) for k in keys}
    elif shape == 1:  # bounds
        held = {k: rng.choice(_BYTES) for k in keys}
    else:
        held = {k: _leaf(rng) for k in keys}
    if rng.random() < 0.5:
        flat = [x for kv in held.items() for x in kv]
        return LazyDict([flat[:2], flat[2:]] if rng.random() < 0.5 else [flat])
    return held


def _member(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(8)
    if depth < 2 and pick == 0:
        return Record(*[_member(rng, depth + 1) for _ in range(rng.randrange(3))])
    if depth < 2 and pick == 1:
        return _map(rng)
    if depth < 2 and pick == 2:
        return [_leaf(rng) for _ in range(rng.randrange(3))]
    return _leaf(rng)


def _value(rng: random.Random, field: str) -> Any:
    if rng.random() < 0.1:
        return _leaf(rng)
    if field == "partition":
        return Record(*[_member(rng, 0) for _ in range(rng.randrange(5))])
    if field.endswith(("_counts", "_bounds")):
        return _map(rng)
    if field == "equality_ids":
        return rng.choice([None, [1], [1, 2, 10], [], [None, "a", True, -0.0, b"x"], [[1]], (1, 2), [{1: 2}]])
    if field == "file_format":
        return rng.choice(["PARQUET", "parquet", "PUFFIN", "AVRO", "ORC", "", None, FileFormat.PUFFIN, "é\ud800"])
    if field == "content":
        return rng.choice([0, 0, 1, 2, None, True, DataFileContent.POSITION_DELETES])
    return rng.choice([None, rng.choice(_INTS), rng.choice(_STRINGS)])


def _record(rng: random.Random) -> dict[str, Any]:
    _ODD[0] = rng.choice([0.0, 0.0, 0.02, 0.3])
    df: dict[str, Any] = {k: _value(rng, k) for k in _FILE_FIELDS if rng.random() < 0.95}  # some fields absent
    df["file_path"] = "file:///t/data/" + rng.choice(_STRINGS) + rng.choice(["x.parquet", "é", ""])
    df["file_size_in_bytes"] = rng.choice([1, 0, 2**40, 2**63 - 1])
    df["split_offsets"] = rng.choice([None, None, [4], [4.0], [4, 100], [], [None], (4,), [[4]], "4", [True]])
    df["spec_id"] = rng.choice([0, 0, 1, 2**31, None, True, "0"] if rng.random() < _ODD[0] else [0, 1, 2**31, None])
    df["data_sequence_number"] = rng.choice(
        [0, 4, 2**63 - 1, None, 1.5, "3", True] if rng.random() < _ODD[0] else [0, 4, 2**63 - 1, None]
    )
    return df


def _carrier() -> IcebergCarrier:
    carrier = IcebergCarrier.__new__(IcebergCarrier)
    carrier.relative = lambda uri: uri.removeprefix("file:///t/")  # type: ignore[method-assign]
    return carrier


def _outcome(carrier: IcebergCarrier, df: dict[str, Any], deletes_apply: bool) -> tuple[Any, ...]:
    """What the listing takes from a record: the live file and its entry's text, or the error's type."""
    try:
        data_file, entry = carrier.file_entry_text(df, deletes_apply=deletes_apply)
        return data_file, entry if isinstance(entry, str) else file_text(entry)
    except Exception as error:  # the general way's errors, whatever they are, must be the fast path's too
        return (type(error),)


@pytest.mark.parametrize("seed", range(5))
def test_view_text_is_the_entrys_file_text(seed: int) -> None:
    rng = random.Random(seed)
    carrier = _carrier()
    written = general = 0
    for _ in range(4000):
        df = _record(rng)
        deletes_apply = rng.random() < 0.5
        text = view_text(df, str(df["file_path"]), deletes_apply=deletes_apply)
        try:
            expected: str | None = file_text(IcebergCarrier.file_entry(carrier, df, deletes_apply=deletes_apply)[1])
        except Exception:  # the record is refused (a content that is no number): alike both ways, below
            expected = None
        if text is None:
            general += 1
        elif expected is not None:
            written += 1
            assert text == expected, df
        fast.ON = True
        on = _outcome(carrier, df, deletes_apply)
        fast.ON = False
        try:
            off = _outcome(carrier, df, deletes_apply)
        finally:
            fast.ON = True
        assert repr(on) == repr(off), df  # repr: the same types of error
    assert written > 600 and general > 600  # both ways were taken, often


def test_common_records_take_the_text_and_match() -> None:
    # The benchmark's record, and its kin: two columns' counts and bounds, unpartitioned or partitioned.
    carrier = _carrier()
    for partition in (Record(), Record(5, "é", None, b"\x00", 2.5, True), Record(Record(1), LazyDict([[1, 2]]))):
        for keys in ((1, 2), (2, 1), (9, 10, 11), (100, 20, 3)):
            df = {
                "content": 0,
                "file_path": "file:///t/data/p\ud800.parquet",
                "file_format": "PARQUET",
                "partition": partition,
                "record_count": 1,
                "file_size_in_bytes": 1,
                "value_counts": LazyDict([[k for key in keys for k in (key, 1)]]),
                "null_value_counts": LazyDict([[k for key in keys for k in (key, 0)]]),
                "nan_value_counts": {},
                "lower_bounds": {k: b"\xf0I" for k in keys},
                "upper_bounds": {k: b"n1" for k in keys},
                "key_metadata": None,
                "split_offsets": [4],
                "equality_ids": None,
                "spec_id": 0,
                "data_sequence_number": 4,
            }
            for deletes_apply in (False, True):
                text = view_text(df, str(df["file_path"]), deletes_apply=deletes_apply)
                assert text is not None
                assert text == file_text(carrier.file_entry(df, deletes_apply=deletes_apply)[1])
    assert entry_text._FORMS  # the maps' forms were made and used


def test_view_entries_take_texts_and_entries_alike() -> None:
    rng = random.Random(7)
    carrier = _carrier()
    as_text, as_entry = ViewEntries(), ViewEntries()
    for i in range(3000):
        df = _record(rng)
        path = rng.choice(["a", "b", "\ud800", f"p{i}"])  # paths named by several entries (deletion vectors)
        try:
            entry = IcebergCarrier.file_entry(carrier, df)[1]
            file_text(entry)
        except Exception:
            continue
        text = view_text(df, str(df["file_path"]))
        as_text.add(path, entry if text is None else text)
        as_entry.add(path, entry)
    assert as_text.digests() == as_entry.digests()


def test_fast_off_makes_the_entry() -> None:
    df = {"content": 0, "file_path": "file:///t/x", "file_format": "PARQUET", "file_size_in_bytes": 1}
    carrier = _carrier()
    assert isinstance(carrier.file_entry_text(df)[1], str)
    fast.ON = False
    try:
        assert isinstance(carrier.file_entry_text(df)[1], dict)
    finally:
        fast.ON = True
