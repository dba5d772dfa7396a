"""A version's live adds by raw path (``LogState.adds``), a checkpoint's rows kept in the columns they were read in.

The replay of a table of many files (issue 35.2) made every add of the newest checkpoint a Python dict — and of the
checkpoint before it, for the cross-check — though most readers look at a few fields of each (the carrier: the size,
partition values, times, row-tracking ids; the comparison of two replays: the fields that change the rows readers get).
Here a regular checkpoint's adds (``carriers/delta/checkpoint.py`` decided it is one) stay in its Arrow columns
(``Columns``); the adds and removes of the JSON commits after it are kept on top as the dicts they were parsed into
(``Adds``). ``Adds`` is a mutable mapping of raw path to add with the same keys, values and order as the dict it
replaces (a row is made a dict when it is asked for, the fields the checkpoint part holds in the order it holds them);
readers of many files ask for aligned columns instead (``Adds.locate``), without a dict per file.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Collection, Iterator, MutableMapping, Sequence
from typing import Any, Literal

# A field an add does not hold (a column null in every row of its checkpoint part, left out as ``add.get`` reads it),
# or a path that is not live: told apart from a null value where a reader's default depends on it.
MISSING: Any = object()


class EmptyMaps:
    """A map column with no entry in any row (an unpartitioned table's partition values): ``{}`` in each row, a fresh
    dict each time it is read (as each row's own dict was)."""

    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        self.length = length


class Columns:
    """The add rows of a regular checkpoint, part by part: each part's fields (a pyarrow array for a scalar type, a
    list of Python values for a map or struct, already made as the line reader makes them, ``EmptyMaps``), by name in
    the order of the part's add struct, and every path's row."""

    __slots__ = ("index", "parts", "rows", "starts")

    def __init__(self) -> None:
        self.index: dict[str, int] = {}  # raw path -> row, counted across parts
        self.starts: list[int] = []
        self.parts: list[dict[str, Any]] = []
        self.rows = 0

    def append(self, fields: dict[str, Any], paths: list[str]) -> bool:
        """One part's add rows (``paths``: its ``path`` column as Python strings); False when a path is one already
        held (a path added twice: the checkpoint is left to the line reader)."""
        held = len(self.index)
        self.index.update(zip(paths, range(self.rows, self.rows + len(paths)), strict=True))
        if len(self.index) != held + len(paths):
            return False
        self.starts.append(self.rows)
        self.parts.append(fields)
        self.rows += len(paths)
        return True

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as the dict the line reader (less the fields null in every row of its part) makes of it."""
        p = bisect.bisect_right(self.starts, i) - 1
        j = i - self.starts[p]
        return {name: _value(column, j) for name, column in self.parts[p].items()}

    def holds(self, name: str) -> bool:
        """Whether some part holds field ``name`` (not null in every row)."""
        return any(name in fields for fields in self.parts)

    def values(self, name: str, rows: list[int | None], missing: Any, taken: Any = None) -> list[Any]:
        """Field ``name`` of each of ``rows`` (None: no row, given ``missing``), ``missing`` where its part lacks it;
        ``taken``: ``rows`` as a pyarrow array, when made already."""
        if len(self.parts) == 1 and self.starts[0] == 0:
            return _take(self.parts[0].get(name, MISSING), rows, missing, taken)
        out = [missing] * len(rows)
        for p, fields in enumerate(self.parts):
            start = self.starts[p]
            end = start + _length(fields)
            at = [k for k, r in enumerate(rows) if r is not None and start <= r < end]
            got = _take(fields.get(name, MISSING), [rows[k] - start for k in at], missing)  # type: ignore[operator]
            for k, v in zip(at, got, strict=True):
                out[k] = v
        return out


def _length(fields: dict[str, Any]) -> int:
    column = fields["path"]  # always held: the index is built from it
    return len(column)


def _value(column: Any, j: int) -> Any:
    if isinstance(column, list):
        return column[j]
    if isinstance(column, EmptyMaps):
        return {}
    return column[j].as_py()


# The partition values of an add in a part with no entry in any row, as aligned lists give them: one shared empty
# dict (those lists are read, never written; ``Columns.row`` makes each row a dict of its own).
_NO_ENTRIES: dict[str, Any] = {}


def _take(column: Any, rows: Sequence[int | None], missing: Any, taken: Any = None) -> list[Any]:
    """``column``'s values at ``rows`` (None rows: ``missing``); ``missing`` throughout when the column is MISSING."""
    if column is MISSING:
        return [missing] * len(rows)
    if isinstance(column, list):
        return [missing if r is None else column[r] for r in rows]
    if isinstance(column, EmptyMaps):
        return [missing if r is None else _NO_ENTRIES for r in rows]
    import pyarrow as pa

    got: list[Any] = column.take(pa.array(rows, pa.int64()) if taken is None else taken).to_pylist()
    if missing is not None and None in rows:
        got = [missing if r is None else v for r, v in zip(rows, got, strict=True)]
    return got


class Located:
    """The adds of given paths, in their order: which are live (``live``) and their fields as aligned lists
    (``values``). Made by ``Adds.locate``."""

    __slots__ = ("_overlay", "_taken", "_whole", "base", "live", "over", "rows")

    def __init__(self, adds: Adds, paths: Sequence[str], *, rows: int | None = None) -> None:
        self.base = adds._base
        over, gone = adds._over, adds._gone
        self._overlay = over  # every add on top (of these paths or not): whether one holds a field is asked of all
        self._taken: Any = None
        self._whole: bool | None = None  # whether ``rows`` are 0..n-1 of the one part (``arrow``), once asked
        if rows is not None:  # Adds.in_order: every row of the one part, in order, nothing on top
            self.over: list[dict[str, Any] | None] = []
            self.rows: list[int | None] = list(range(rows))
            self.live = [True] * rows
            self._whole = True
            return
        index = self.base.index if self.base is not None else {}
        # Each path's checkpoint row, or None (not in the checkpoint, removed since, or added again after it); the add
        # a commit after the checkpoint made of each path, or None (the list left empty when there is none).
        self.over = []
        if over:
            get = over.get
            self.over = [get(p) for p in paths]
            self.rows = [None if d is not None or p in gone else index.get(p)
                                           for p, d in zip(paths, self.over, strict=True)]
            self.live = [r is not None or d is not None for r, d in zip(self.rows, self.over, strict=True)]
        else:
            # map over C callables: the same lists as the comprehensions, without a Python frame step per path
            self.rows = list(map(index.get, paths)) if not gone else \
                [None if p in gone else index.get(p) for p in paths]
            self.live = list(map(operator.is_not, self.rows, itertools.repeat(None)))

    def holds(self, name: str) -> bool:
        """Whether any of the adds may hold field ``name`` not null (False: ``values(name)`` is None throughout)."""
        if self.base is not None and self.base.holds(name) and any(r is not None for r in self.rows):
            return True
        return bool(self.over) and any(a.get(name) is not None for a in self._overlay.values())

    def arrow(self, name: str) -> Any:
        """Field ``name`` of each path's add as one pyarrow array aligned to the paths (what ``values(name)`` reads,
        before it is made Python values), when every path is a row of a single checkpoint part (or of the one part
        regular commits extended) that holds the field as a pyarrow array, and no add is on top; else None (read
        ``values``)."""
        base = self.base
        if base is None or self.over or len(base.parts) != 1 or base.starts[0] != 0 or None in self.rows:
            return None
        column = base.parts[0].get(name, MISSING)
        if column is MISSING or isinstance(column, (list, EmptyMaps)):
            return None
        if self._whole is None:  # every row in order: the column itself is what a take would copy (a stats
            # column of 200,000 files: ~26 MiB a side, two sides compared in the cross-check)
            self._whole = len(self.rows) == len(column) and self.rows == list(range(len(column)))
        if self._whole:
            return column
        if self._taken is None:
            import pyarrow as pa

            self._taken = pa.array(self.rows, pa.int64())
        return column.take(self._taken)

    def values(self, name: str, missing: Any = None) -> list[Any]:
        """Field ``name`` of each path's add; ``missing`` for a path not live or whose add lacks the field. The values
        are read, not written (an add with no partition value in a checkpoint part of none shares one empty dict)."""
        base = self.base
        if base is None:
            out = [missing] * len(self.rows)
        elif self._whole and not self.over:  # every row of the one part, in order: its column whole, nothing taken
            column = base.parts[0].get(name, MISSING)
            if column is MISSING:
                out = [missing] * len(self.rows)
            elif isinstance(column, list):
                out = list(column)
            elif isinstance(column, EmptyMaps):
                out = [_NO_ENTRIES] * len(self.rows)
            else:
                out = column.to_pylist()
        else:
            if self._taken is None and len(base.parts) == 1:
                import pyarrow as pa

                self._taken = pa.array(self.rows, pa.int64())  # made once for every field read
            out = base.values(name, self.rows, missing, self._taken)
        if self.over:
            out = [v if d is None else d.get(name, missing) for d, v in zip(self.over, out, strict=True)]
        return out


class Adds(MutableMapping[str, dict[str, Any]]):
    """Live adds by raw path: a checkpoint's rows in columns (``Columns``, never changed once built), with what the
    commits after it did on top — adds by path (``_over``: new paths, and checkpoint paths added again) and the
    checkpoint's paths removed (``_gone``). Keys, values and iteration order are those of the dict it replaces: a
    checkpoint path keeps its place when added again, a path removed and added again goes last."""

    __slots__ = ("_base", "_gone", "_new", "_over")

    def __init__(self, base: Columns | None = None) -> None:
        self._base = base
        self._over: dict[str, dict[str, Any]] = {}
        self._gone: set[str] = set()
        self._new = 0  # paths of _over that are not a checkpoint row held in place

    def _in_base(self, path: str) -> bool:
        return self._base is not None and path in self._base.index and path not in self._gone

    def __getitem__(self, path: str) -> dict[str, Any]:
        found = self._over.get(path)
        if found is not None:
            return found
        if self._in_base(path):
            assert self._base is not None
            return self._base.row(self._base.index[path])
        raise KeyError(path)

    def get(self, path: str, default: Any = None) -> Any:  # as dict.get, without raising and catching a KeyError
        found = self._over.get(path)
        if found is not None:
            return found
        base = self._base
        if base is not None:
            row = base.index.get(path)
            if row is not None and path not in self._gone:
                return base.row(row)
        return default

    def __contains__(self, path: object) -> bool:
        return path in self._over or (isinstance(path, str) and self._in_base(path))

    def __setitem__(self, path: str, add: dict[str, Any]) -> None:
        over = self._over
        if path not in over:
            base = self._base
            if base is None or path not in base.index or path in self._gone:
                self._new += 1
        over[path] = add

    def __delitem__(self, path: str) -> None:
        if path in self._over:
            del self._over[path]
            if self._in_base(path):  # a checkpoint row held in place: removed with it
                self._gone.add(path)
            else:
                self._new -= 1
        elif self._in_base(path):
            self._gone.add(path)
        else:
            raise KeyError(path)

    def __iter__(self) -> Iterator[str]:
        base, over, gone = self._base, self._over, self._gone
        if base is not None:
            if not gone and not over:
                yield from base.index
            else:
                yield from (p for p in base.index if p not in gone)
        if self._new:
            yield from (p for p in over if base is None or p not in base.index or p in gone)

    def __len__(self) -> int:
        held = 0 if self._base is None else len(self._base.index)
        return held - len(self._gone) + self._new

    def copy(self) -> Adds:
        """A copy to apply more commits to: the columns are shared (never changed), what is on top is copied."""
        out = Adds(self._base)
        out._over = dict(self._over)
        out._gone = set(self._gone)
        out._new = self._new
        return out

    def on_columns(self) -> Columns | Literal[False] | None:
        """The columns this mapping is, when nothing is on top of them (no add or remove since: ``None`` for an empty
        mapping without columns), else False: a replay keeps reading commits in columns onto such a mapping
        (carriers/delta/commits.py), in the order of the dict it replaces."""
        return False if self._over or self._gone else self._base

    def paths(self) -> set[str]:
        """The live paths, as a set."""
        if self._base is None:
            return set(self._over)
        out = set(self._base.index)
        if self._gone:
            out -= self._gone
        if self._over:
            out.update(self._over)
        return out

    def having(self, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(path, add) of the live adds whose field ``name`` is not null, in order (``items()`` filtered on
        ``add.get(name) is not None``); when no checkpoint part holds the field, only the adds on top are read."""
        base, over = self._base, self._over
        if base is None or any(name in fields for fields in base.parts):
            yield from ((p, a) for p, a in self.items() if a.get(name) is not None)
            return
        if not any(a.get(name) is not None for a in over.values()):
            return  # the checkpoint's rows lack the field, and so does every add after it
        for path in self:  # no dict is made of the checkpoint's rows
            add = over.get(path)
            if add is not None and add.get(name) is not None:
                yield path, add

    def same_paths(self, other: Adds) -> bool:
        """Whether ``other`` holds the same live paths."""
        if len(self) != len(other):
            return False
        if self._base is other._base and not self._gone and not other._gone:
            return all(p in self for p in other._over) and all(p in other for p in self._over)
        return self.paths() == other.paths()

    def project(self, names: Collection[str]) -> Adds:
        """The same live adds, in the same order, holding only the fields ``names`` (and ``path``): what a reader of
        those fields needs kept of a replay, the checkpoint's columns shared (never changed), not copied."""
        keep = {"path", *names}
        base = None
        if self._base is not None:
            base = Columns()
            base.index, base.starts, base.rows = self._base.index, self._base.starts, self._base.rows
            base.parts = [{k: v for k, v in fields.items() if k in keep} for fields in self._base.parts]
        out = Adds(base)
        out._over = {p: {k: v for k, v in add.items() if k in keep} for p, add in self._over.items()}
        out._gone = set(self._gone)
        out._new = self._new
        return out

    def kept(self, names: Collection[str]) -> Kept:
        """``project(names)`` held without its index of paths (a dict of every path: ~30 MiB at 200,000 files, kept
        through a verification for a content reader that may never read it); ``Kept.adds`` rebuilds it when read."""
        return Kept(self.project(names))

    def locate(self, paths: Sequence[str]) -> Located:
        """The adds of ``paths`` (live or not), to read as aligned columns (``Located.values``)."""
        return Located(self, paths)

    def in_order(self) -> Located | None:
        """``locate(list(self))`` without a look-up per path, when this mapping is the rows of one checkpoint part
        (or of the one part regular commits extended) and nothing is on top (its keys are then that part's paths, in
        order); else None. The same rows, live flags and values (tests/delta/test_delta_aligned.py)."""
        base = self._base
        if base is None or self._over or self._gone or len(base.parts) != 1 or base.starts != [0] \
                or base.rows != len(base.index):
            return None
        return Located(self, (), rows=base.rows)

    def same_order(self, paths: Sequence[str]) -> Located | None:
        """``in_order()`` when ``paths`` are this mapping's keys in their order (then ``locate(paths)`` is it, and the
        live paths are exactly ``paths``); else None. The keys are compared as one list (in C: no look-up per path)."""
        located = self.in_order()
        if located is None or len(paths) != len(self) or list(self._base.index) != list(paths):  # type: ignore[union-attr]
            return None
        return located

    def same_order_as(self, other: Adds) -> tuple[Located, Located] | None:
        """``(self.in_order(), other.in_order())`` when both mappings hold the same paths in the same order (their
        path columns equal row by row, compared in Arrow where both are Arrow strings); else None."""
        mine, theirs = self.in_order(), other.in_order()
        if mine is None or theirs is None or len(self) != len(other):
            return None
        a, b = self._base.parts[0]["path"], other._base.parts[0]["path"]  # type: ignore[union-attr]
        if isinstance(a, list) or isinstance(b, list) or a.type != b.type:
            return (mine, theirs) if list(self._base.index) == list(other._base.index) else None  # type: ignore[union-attr]
        import pyarrow.compute as pc

        if len(a) and (a.null_count or b.null_count or not pc.all(pc.equal(a, b)).as_py()):
            return None  # (Arrow's string equality is of the bytes: equal bytes are equal str, the index's keys)
        return mine, theirs


class Kept:
    """A state's adds held to some fields (``Adds.kept``), their index of paths dropped: ``adds()`` gives the projection
    back whole, the index rebuilt from the parts' own ``path`` columns (the keys it was built from, in the same order:
    ``Columns.append`` and ``commits.columns_with`` index each part's paths in turn), once."""

    __slots__ = ("_adds",)

    def __init__(self, adds: Adds) -> None:
        self._adds = adds
        base = adds._base
        if base is not None and len(base.parts) == len(base.starts):  # (every part: its paths are what it indexed)
            lean = Columns()
            lean.starts, lean.parts, lean.rows = base.starts, base.parts, base.rows
            lean.index = _NOT_INDEXED
            adds._base = lean

    def adds(self) -> Adds:
        base = self._adds._base
        if base is not None and base.index is _NOT_INDEXED:
            index: dict[str, int] = {}
            for start, fields in zip(base.starts, base.parts, strict=True):
                paths = fields["path"]
                paths = paths if isinstance(paths, list) else paths.to_pylist()
                index.update(zip(paths, range(start, start + len(paths)), strict=True))
            base.index = index
        return self._adds


# The index of a ``Kept`` projection before it is rebuilt: never read as one (``Kept.adds`` replaces it first).
_NOT_INDEXED: dict[str, int] = {}
