"""``LogState.adds`` kept in columns (carriers/delta/adds.py) reads as the dict of raw path -> add it replaces.

A regular checkpoint's add rows stay in its Arrow columns and the commits after it are applied on top; every reader of
the log state reads it through the mapping (keys, values, order, ``get``, ``in``, ``len``) or through aligned columns
(``locate``). Both are held here to a plain dict that went through the same adds and removes, on checkpoint parts
with fields null in every row (left out of their rows), maps with and without entries, and a second part.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from carriers.delta.adds import MISSING, Adds, Columns
from carriers.delta.checkpoint import _columns


def _part(first: int, count: int, *, with_time: bool, partitioned: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A checkpoint part's add struct array read as checkpoint.columnar_state reads it, and the dicts of its rows as
    the line reader makes them (less the fields null in every row, as the columns leave them out)."""
    rows = []
    for i in range(first, first + count):
        rows.append({"path": f"p{i}", "size": i * 7, "modificationTime": (1000 + i) if with_time else None,
                     "dataChange": True, "stats": None if i % 5 == 0 else f'{{"numRecords":{i}}}',
                     "partitionValues": [("k", str(i % 3))] if partitioned else [],
                     "tags": None, "baseRowId": None})
    struct = pa.array(rows, pa.struct([("path", pa.string()), ("size", pa.int64()),
                                       ("modificationTime", pa.int64()), ("dataChange", pa.bool_()),
                                       ("stats", pa.string()),
                                       ("partitionValues", pa.map_(pa.string(), pa.string())),
                                       ("tags", pa.map_(pa.string(), pa.string())), ("baseRowId", pa.int64())]))
    fields = _columns(struct)
    assert fields is not None
    expected = []
    for r in rows:
        d = {k: (dict(v) if k == "partitionValues" and isinstance(v, list) else v) for k, v in r.items()
             if k not in ("tags", "baseRowId") and not (k == "modificationTime" and not with_time)}
        expected.append(d)
    return fields, expected


@pytest.mark.parametrize("seed", range(6))
def test_adds_read_as_the_dict_they_replace(seed: int) -> None:
    rng = random.Random(seed)
    columns = Columns()
    reference: dict[str, dict[str, Any]] = {}
    first = 0
    for part in range(1 + seed % 2):  # one part, or two whose fields differ
        count = rng.randint(20, 60)
        fields, rows = _part(first, count, with_time=part == 0, partitioned=bool(seed % 3))
        paths = fields["path"].to_pylist()
        assert columns.append(fields, paths)
        reference.update((r["path"], r) for r in rows)
        first += count
    adds = Adds(columns)
    assert dict(adds.items()) == reference and list(adds) == list(reference)
    snapshot = adds.copy()
    names = list(reference) + [f"new{i}" for i in range(30)]
    for _ in range(200):  # the commits after the checkpoint: adds (new paths, checkpoint paths again) and removes
        path = rng.choice(names)
        if rng.random() < 0.5:
            add = {"path": path, "size": rng.randint(0, 9), "dataChange": True,
                   "deletionVector": None if rng.random() < 0.8 else {"storageType": "i", "pathOrInlineDv": "x"}}
            adds[path] = add
            reference[path] = add
        elif path in reference:
            del adds[path]
            del reference[path]
        else:
            with pytest.raises(KeyError):
                del adds[path]
        assert len(adds) == len(reference)
    # The order too: a path added again keeps its place, one removed and added again goes last.
    assert list(adds) == list(reference)
    assert dict(adds.items()) == reference and adds.paths() == set(reference)
    for path in [*names, "absent"]:
        assert (path in adds) == (path in reference)
        assert adds.get(path) == reference.get(path)
    assert list(adds.having("deletionVector")) == [(p, a) for p, a in reference.items()
                                                   if a.get("deletionVector") is not None]
    located = adds.locate(names)
    assert located.live == [p in reference for p in names]
    for key in ("size", "stats", "partitionValues", "modificationTime", "deletionVector", "tags"):
        assert located.values(key) == [reference.get(p, {}).get(key) for p in names], key
        assert located.values(key, MISSING) == [reference.get(p, {}).get(key, MISSING) for p in names], key
    # The copy taken before is untouched by what was applied after it, and shares the columns.
    assert dict(snapshot.items()) == {r: columns.row(i) for r, i in columns.index.items()}
    assert snapshot.same_paths(snapshot.copy()) and adds.same_paths(adds.copy())


def test_a_path_twice_across_parts_is_refused() -> None:
    columns = Columns()
    fields, _ = _part(0, 5, with_time=True, partitioned=False)
    assert columns.append(fields, fields["path"].to_pylist())
    again, _ = _part(3, 5, with_time=True, partitioned=False)
    assert not columns.append(again, again["path"].to_pylist())  # p3, p4 twice: the line reader words it


def test_the_arrow_memory_hint_skips_a_pyarrow_still_being_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Audits read tables on several threads: one may list a table while another is importing pyarrow (a partly
    initialised module, no ``default_memory_pool`` yet). The hint is skipped then; it made the table an
    ``internal_error`` ("partially initialized module 'pyarrow'") in a local audit."""
    import sys
    import types

    from carriers.delta.carrier import _release_arrow_memory

    monkeypatch.setitem(sys.modules, "pyarrow", types.ModuleType("pyarrow"))
    _release_arrow_memory()  # no AttributeError
