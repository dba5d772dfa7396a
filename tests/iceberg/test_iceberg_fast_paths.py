"""The listing's per-file fast paths give what the general code gives (docs/scale.md, "The Iceberg listing's per-file
work", issue 35 item 2): ``view_value`` against ``json_safe(_plain(v))`` with the code before's ``_plain``, the
``file:///`` shortcut of ``local_path_of`` and ``_canonical_uri`` against urlparse, on random values and locations."""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.typedef import Record
from pyiceberg.utils.lazydict import LazyDict

from attest.locations import is_uri
from attest.view import json_safe
from carriers.iceberg import manifests
from carriers.iceberg.manifests import _canonical_uri, _plain, view_value
from carriers.iceberg.views import ViewEntries, file_views
from carriers.storage.base import local_path_of


def _plain_before(value: Any) -> Any:
    """``_plain`` as it was before the per-type branch cache (b7ac93f)."""
    if type(value) in (int, str, bytes, float, bool, type(None)):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Record):
        return [_plain_before(v) for v in value._data]
    if isinstance(value, Mapping) or hasattr(value, "items"):
        return {str(k): _plain_before(v) for k, v in sorted(dict(value.items()).items())}
    return value


class _Items:
    """Not a Mapping, but has items(): _plain reads it as one."""

    def __init__(self, pairs: dict[Any, Any]) -> None:
        self.pairs = pairs

    def items(self) -> Any:
        return self.pairs.items()


class _IntSub(int):
    pass


def _scalar(rng: random.Random) -> Any:
    return rng.choice([None, 0, -7, 2**70, "", "a\x00é", b"", b"\x00\xff", 1.5, float("nan"), -0.0, True, False,
                       _IntSub(3), DataFileContent.DATA, DataFileContent.POSITION_DELETES, FileFormat.PARQUET,
                       FileFormat.PUFFIN])


def _value(rng: random.Random, depth: int = 0) -> Any:
    if depth > 2 or rng.random() < 0.4:
        return _scalar(rng)
    pairs = {rng.choice([1, 2, 3, 17, -1]): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    shape = rng.randrange(6)
    if shape == 0:
        return pairs
    if shape == 1:
        flat = [x for kv in pairs.items() for x in kv]
        return LazyDict([flat[:2], flat[2:]] if rng.random() < 0.5 else [flat])
    if shape == 2:
        return Record(*[_value(rng, depth + 1) for _ in range(rng.randrange(4))])
    if shape == 3:
        return _Items(pairs)
    if shape == 4:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {str(k): v for k, v in pairs.items()}


@pytest.mark.parametrize("seed", range(4))
def test_view_value_is_json_safe_of_plain_as_before(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(3000):
        value = _value(rng)
        expected = json_safe(_plain_before(value))
        assert repr(_plain(value)) == repr(_plain_before(value))  # repr: NaN compares unequal to itself
        got = view_value(value)
        assert repr(got) == repr(expected), value
        # A LazyDict read once (its dict built) reads the same the second time.
        assert repr(view_value(value)) == repr(expected)


def test_view_value_of_a_mapping_with_colliding_keys_and_a_subclass() -> None:
    # 1 and "1" are one key once made strings: the later in key order wins, as before; an int subclass is not a scalar.
    for value in ({1: b"a", 2: _IntSub(5)}, LazyDict([[1, b"\x01", 2, None]]), {"1": 1, "2": 2.5}):
        assert repr(view_value(value)) == repr(json_safe(_plain_before(value)))
    with pytest.raises(TypeError):  # unorderable keys refuse alike
        json_safe(_plain_before({1: 1, "a": 2}))
    with pytest.raises(TypeError):
        view_value({1: 1, "a": 2})


def test_the_branch_cache_is_per_type() -> None:
    manifests._BRANCHES.clear()
    assert _plain(DataFileContent.EQUALITY_DELETES) == 2
    assert _plain(Record(1, FileFormat.AVRO)) == [1, "AVRO"]
    assert _plain(_Items({2: 1, 1: 2})) == {"1": 2, "2": 1}
    assert _plain(object) is object
    assert {DataFileContent: 1, Record: 2, _Items: 0}.items() <= manifests._BRANCHES.items()


_ALPHABET = "ab/./..%2F#?\t\r\n \\\x00é[]@:;=&\x7f\x1f"


def _locations(rng: random.Random) -> list[str]:
    bodies = ["".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(12))) for _ in range(4000)]
    heads = ["file:///", "file://", "file:/", "FILE:///", "file:////", "s3://", "/", ""]
    return [head + body for body in bodies for head in rng.sample(heads, 3)] + [
        "file:///t/data/part-0.parquet", "file:///t/d%20x/p", "file:///t//x", "file:///t/./x", "file:///t/x#f",
        "file:///t/x?q", "file:///t/x\n", "file:///\tt/x", "file:///t/x;p", "file:///[t/x", "file:///t/x\\y"]


def _local_path_before(location: str, decode: bool) -> str | None:
    if not is_uri(location):
        return location
    try:
        parsed = urlparse(location)
    except ValueError:
        return None
    if parsed.scheme == "file":
        path = unquote(parsed.path) if decode else parsed.path
        return path if parsed.netloc in ("", "localhost") else f"{parsed.netloc}{path}"
    return None


def _canonical_before(path: str) -> str | None:
    """``_canonical_uri`` as it was before the ``file:///`` shortcut (b7ac93f)."""
    try:
        parsed = urlparse(path)
    except ValueError:
        return "an authority with an unbalanced '[' or ']' (URI parsers refuse or read it differently)"
    if len(parsed.scheme) <= 1 and not path.startswith("/"):
        return "a relative path"
    if parsed.scheme == "file" and (parsed.netloc or not parsed.path.startswith("/")):
        return "a file URI with a host or a relative path: readers resolve it against their working directory"
    if len(parsed.scheme) > 1 and parsed.scheme != "file" and not path[len(parsed.scheme) + 1:].startswith("//"):
        return "a URI without '//' after its scheme (FileIOs parse it differently, or refuse it)"
    body = parsed.path if len(parsed.scheme) > 1 else path
    segments = body.split("/")[1:]
    if any(s in ("", ".", "..") for s in segments) or "\\" in path or "\x00" in path:
        return "'.', '..' or empty segments (Hadoop FileIO normalises them, object stores do not)"
    if "#" in path or "?" in path:
        return "a '#' or '?' in the location (some FileIOs read the file named before it, others the whole name)"
    return None


@pytest.mark.parametrize("seed", range(3))
def test_file_uri_shortcuts_match_urlparse(seed: int) -> None:
    fast = 0
    for location in _locations(random.Random(seed)):
        for decode in (True, False):
            assert local_path_of(location, decode=decode) == _local_path_before(location, decode), (location, decode)
        assert _canonical_uri(location) == _canonical_before(location), location
        fast += location.startswith("file:///") and not manifests._FAST_REFUSED.intersection(location)
    assert fast > 1000  # the shortcut itself was compared, not only the general path


@pytest.mark.parametrize("seed", range(3))
def test_view_entries_held_as_text_give_file_views(seed: int) -> None:
    rng = random.Random(seed)
    entries: dict[str, list[dict[str, Any]]] = {}
    held = ViewEntries()
    for _ in range(2000):
        path = rng.choice(["a", "b/c", "é", "x\\y", "\ud800", *(f"p{i}" for i in range(500))])
        entry = {"spec_id": rng.choice([0, 1, None]), "location": rng.choice(["file:///t/a", "é\x00", "\ud800"]),
                 **{k: view_value(_value(rng)) for k in ("content", "lower_bounds", "value_counts")}}
        entries.setdefault(path, []).append(entry)
        held.add(path, entry)
    assert any(len(e) > 2 for e in entries.values())  # paths named by several entries, in several orders
    got = held.digests()
    assert list(got.items()) == list(file_views(entries).items())
