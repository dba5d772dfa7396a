"""The JSON commits read in columns (carriers/delta/commits.py, issue 35.2) held to the strict line reader
(``log.json_lines``): a commit the columnar reading takes is one the strict reader accepts, with the same adds; and a
replay reads the same state, refusals and problems either way — on honest commits and on every kind of hostile line
(NaN and Infinity, lone surrogates, keys named twice, integers past 64 bits, fractions, invalid UTF-8, trailing text,
two objects on a line, blank lines, carriage returns, a byte-order mark, lines that are not objects, other actions,
fields null or absent, paths added again)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attest.errors import TableInconsistentError
from carriers.delta import log as delta_log
from carriers.delta.commits import regular_adds
from carriers.delta.log import LogState, _json_replay, commit_name, json_lines


class _Log:
    """A storage of commit files only (all ``_json_replay`` reads)."""

    def __init__(self, commits: list[bytes]) -> None:
        self.files = {commit_name(v): data for v, data in enumerate(commits)}

    def read(self, name: str) -> bytes | None:
        return self.files.get(name)


@pytest.fixture(autouse=True, params=["each", "together"])
def _columns_even_when_small(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commits here are small: the columnar reading and the bulk statistics are used for them all the same, each
    commit read alone ("each") or, below 10 lines, with the commits after it up to 20 lines ("together")."""
    rows, together = (1, 1) if request.param == "each" else (10, 20)
    monkeypatch.setattr(delta_log, "COMMIT_ROWS_MIN", rows)
    monkeypatch.setattr(delta_log, "_SMALL_LINES", together)
    monkeypatch.setattr(delta_log, "BULK_MIN", 1)
    monkeypatch.setattr(delta_log, "COMMIT_COLUMNS", delta_log.COMMIT_COLUMNS)  # restored after tests that set it


def _add(i: int, **over: Any) -> dict[str, Any]:
    stats = json.dumps({"numRecords": 1, "minValues": {"id": i}, "maxValues": {"id": i}}, separators=(",", ":"))
    add = {"path": f"d/part-{i:05d}.parquet", "partitionValues": {}, "size": 10 + i,
           "modificationTime": 1700000000000 + i, "dataChange": True, "stats": stats}
    add.update(over)
    return add


INFO = '{"commitInfo":{"timestamp":1,"operation":"WRITE","operationParameters":{"mode":"Append"},"engineInfo":"x"}}'


def _commit(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def _regular(first: int, n: int, *, stats: bool = True) -> list[str]:
    """A commitInfo line and ``n`` adds (without statistics, as the hostile lines below: the same fields)."""
    adds = [_add(i) for i in range(first, first + n)]
    if not stats:
        for add in adds:
            del add["stats"]
    return [INFO] + [json.dumps({"add": add}) for add in adds]


def _outcome(commits: list[bytes], *, columns: bool, check: bool = True, start: LogState | None = None) -> Any:
    """What a replay of ``commits`` gives: its state as plain values, or the refusal's words."""
    saved = delta_log.COMMIT_COLUMNS
    delta_log.COMMIT_COLUMNS = columns
    try:
        state = _json_replay(_Log(commits), start, 0, len(commits) - 1, check=check)  # type: ignore[arg-type]
    except TableInconsistentError as exc:
        return ("refused", exc.message)
    finally:
        delta_log.COMMIT_COLUMNS = saved
    assert state is not None
    return ([(path, _read_as(add)) for path, add in state.adds.items()], state.metadata, state.protocol, state.twice,
            state.invalid,
            state.adds.on_columns() is not False and len(state.adds) > 0)


# Add fields every reader reads absent as null (add.get): a field null in every add is left out of the columns, as a
# checkpoint's is (carriers/delta/commits.py _NULL_FIELDS).
_ABSENT_AS_NULL = ("tags", "baseRowId", "defaultRowCommitVersion", "clusteringProvider", "deletionVector")


def _read_as(add: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in add.items() if not (k in _ABSENT_AS_NULL and v is None)}


def _same(commits: list[bytes], *, check: bool = True) -> bool:
    """Both readings agree; True when the columnar one read (some) commits in columns."""
    lines, cols = _outcome(commits, columns=False, check=check), _outcome(commits, columns=True, check=check)
    if lines[0] == "refused":
        assert cols == lines
        return False
    assert cols[:5] == lines[:5]
    return bool(cols[5])


# ---- honest commits ----------------------------------------------------------------------------------------------
def test_regular_commits_read_in_columns_give_the_same_state() -> None:
    commits = [_commit(_regular(i * 10, 10)) for i in range(5)]
    assert _same(commits)
    assert _same(commits, check=False)
    got = regular_adds(commits[0])
    assert got is not None
    _, paths = got
    assert paths == [f"d/part-{i:05d}.parquet" for i in range(10)]
    assert [a["add"] for a in json_lines(commits[0], "c") if "add" in a] == [_add(i) for i in range(10)]


def test_commits_as_delta_rs_writes_them() -> None:
    """delta-rs names tags, baseRowId, defaultRowCommitVersion and clusteringProvider null in every add."""
    nulls = {"tags": None, "baseRowId": None, "defaultRowCommitVersion": None, "clusteringProvider": None}
    commits = [_commit([INFO] + [json.dumps({"add": _add(i, **nulls)}) for i in range(j * 5, j * 5 + 5)])
               for j in range(4)]
    assert _same(commits)
    assert _same(commits, check=False)
    got = regular_adds(commits[0])
    assert got is not None and set(got[0]) == {"path", "partitionValues", "size", "modificationTime", "dataChange",
                                               "stats"}


def test_a_line_read_commit_between_keeps_the_order() -> None:
    meta = '{"metaData":{"id":"t","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[]}}'
    proto = '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}'
    remove = '{"remove":{"path":"d/part-00003.parquet","dataChange":true}}'
    commits = [_commit([proto, meta]), _commit(_regular(0, 5)), _commit([INFO, meta]), _commit(_regular(5, 5)),
               _commit([INFO, remove]), _commit(_regular(10, 5)), _commit(_regular(3, 1))]
    _same(commits)
    delta_log.COMMIT_ROWS_MIN = delta_log._SMALL_LINES = 1  # each commit in columns
    assert _same(commits[:4])  # up to the remove, the state stays in columns


def test_regular_commits_between_commits_that_add_nothing() -> None:
    """A commit read line by line that adds and removes nothing (a txn, metaData) keeps the state in columns: the
    regular commits after it are appended to the same columns, extended in place (one part, never copied again)."""
    txn = '{"txn":{"appId":"a","version":1}}'
    commits = []
    for i in range(6):
        commits += [_commit(_regular(i * 10, 10)), _commit([INFO, txn.replace("1", str(i + 1))])]
    assert _same(commits)
    assert _same(commits, check=False)
    delta_log.COMMIT_COLUMNS = True
    state = _json_replay(_Log(commits), None, 0, len(commits) - 1)  # type: ignore[arg-type]
    assert state is not None
    columns = state.adds.on_columns()
    from carriers.delta.adds import Columns

    assert isinstance(columns, Columns) and len(columns.parts) == 1 and columns.rows == 60
    assert list(state.adds) == [f"d/part-{i:05d}.parquet" for i in range(60)]
    # A path added again after such a commit: those commits are read line by line, the state as the line reader's.
    _same([*commits, _commit(_regular(100, 3)), _commit([INFO, txn]), _commit(_regular(5, 2))])


def test_small_commits_read_together() -> None:
    """Commits of fewer than COMMIT_ROWS_MIN lines are read together in columns (the same state), one commit adding
    nothing among them; a batch holding one irregular commit is read line by line, the commits before it in columns."""
    delta_log.COMMIT_ROWS_MIN, delta_log._SMALL_LINES = 10, 20
    commits = [_commit(_regular(i * 3, 3)) for i in range(12)]
    commits.insert(5, _commit([INFO]))
    assert _same(commits)
    assert _same(commits, check=False)
    hostile = [*commits[:7], _commit([*_regular(90, 2), '{"commitInfo":{"m":NaN}}']), *commits[7:]]
    _same(hostile)
    late = [*commits, _commit([*_regular(90, 2)[:1], '{"add":{"path":1}}'])]
    _same(late)


def test_a_path_added_again_is_read_line_by_line() -> None:
    for commits in ([_commit(_regular(0, 5)), _commit(_regular(4, 3))],  # across commits
                    [_commit([*_regular(0, 5), json.dumps({"add": _add(2)})])]):  # in one commit: its problem
        _same(commits)
    assert _outcome([_commit([*_regular(0, 5), json.dumps({"add": _add(2)})])], columns=True)[4]


def test_onto_a_checkpoint_in_columns() -> None:
    """Commits after a checkpoint's columns are appended to them (one part when the fields are the same)."""
    from carriers.delta.adds import Adds, Columns
    from carriers.delta.commits import columns_with

    first = regular_adds(_commit(_regular(0, 4)))
    assert first is not None
    base = columns_with(None, [first])
    start = LogState(version=0, adds=Adds(base), checkpoint=0)
    commits = [b"", _commit(_regular(4, 3)), _commit(_regular(7, 2))]
    delta_log.COMMIT_ROWS_MIN = delta_log._SMALL_LINES = 1  # each commit in columns
    delta_log.COMMIT_COLUMNS = False
    lines = _json_replay(_Log(commits), start, 1, 2)  # type: ignore[arg-type]
    delta_log.COMMIT_COLUMNS = True
    cols = _json_replay(_Log(commits), start, 1, 2)  # type: ignore[arg-type]
    assert lines is not None and cols is not None
    assert list(cols.adds.items()) == list(lines.adds.items())
    columns = cols.adds.on_columns()
    assert isinstance(columns, Columns) and len(columns.parts) == 1 and columns is not base
    assert len(base.index) == 4  # the checkpoint's columns are not changed


# ---- hostile lines -----------------------------------------------------------------------------------------------
def _adds_line(i: int, **over: Any) -> str:
    return json.dumps({"add": _add(i, **over)})


HOSTILE = [
    '{"add":{"path":"d/x","size":NaN,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":Infinity,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":-Infinity,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":-Inf,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"commitInfo":{"m":NaN}}',
    '{"commitInfo":{"m":[1, Infinity]}}',
    '{"add":{"path":"d/\\ud800","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/\\udc00\\ud800","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/\\u0078","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","path":"d/y","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1,"size":2,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},"add":{"path":"d/y"}}',
    '{"commitInfo":{"a":1,"a":2}}',
    '{"commitInfo":{"x":[{"a":1,"a":2}]}}',
    '{"commitInfo":{"\\/":1,"/":2}}',
    '{"add":{"path":"d/x","size":9223372036854775808,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":123456789012345678901234567890,"partitionValues":{},"modificationTime":1,'
    '"dataChange":true}}',
    '{"add":{"path":"d/x","size":-9223372036854775809,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1.0,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1e3,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1e400,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}} x',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}} {"commitInfo":{}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}\r{"commitInfo":{}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},}',
    '{"add":{"path":"d/x","size":01,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x\ty","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x\x01","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x\\q","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '\ufeff{"commitInfo":{}}',
    '\u00a0',
    '   ',
    '',
    '[1]', '1', '"x"', 'null', '{}', '{"add":null}', '{"add":1}', '{"commitInfo":1}', '{"commitInfo":null}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},"commitInfo":{}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},"foo":1}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},"Remove":1}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},'
    '"remove":{"path":"d/y"}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},"metaData":null}',
    '{"add":{"Path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true,"tags":null}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true,"tags":{"a":"b"}}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{"p":"1"},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":null,"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":null,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":null,"size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":1,"size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"2020-01-01T00:00:00","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":"1","partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":"true"}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true,"stats":{}}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true,'
    '"stats":"{\\"a\\":1,\\"a\\":2}"}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true,"stats":"{"}}',
    '{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true,'
    '"deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":1,"sizeInBytes":1,"cardinality":1}}}',
    '{"remove":{"path":"d/part-00001.parquet","dataChange":true}}',
    '{"metaData":{"id":"t","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[]}}',
    '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}',
    '{"txn":{"appId":"a","version":1}}',
    '{"add":{"dataChange":true,"size":1,"path":"d/y","modificationTime":1,"partitionValues":{}}}',
    '{"add":{"path":"d/\u00e9\u2028\u0085","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}',
    '{"add":{"path":"d/\\"q\\\\\\/\\b\\f\\n\\r\\t","size":1,"partitionValues":{},"modificationTime":1,'
    '"dataChange":true}}',
    '{"add":{"path":"d/x","size":-0,"partitionValues":{},"modificationTime":-1,"dataChange":false}}',
    '{"add":{"path":"d/x","size":9223372036854775807,"partitionValues":{},"modificationTime":-9223372036854775808,'
    '"dataChange":true}}',
    '{"add" : { "path" : "d/x" , "size" : 1 , "partitionValues" : { } , "modificationTime" : 1 ,'
    ' "dataChange" : true } }',
    _adds_line(1),
    # as delta-rs writes an add (its four fields null), and one naming them otherwise
    '{"add":{"path":"d/x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"tags":null,'
    '"baseRowId":null,"defaultRowCommitVersion":null,"clusteringProvider":null}}',
    '{"add":{"path":"d/x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"baseRowId":4}}',
    '{"add":{"path":"d/x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"clusteringProvider":'
    '"liquid"}}',
    '{"add":{"path":"d/x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":null}}',
]
# Raw bytes the strict reader refuses as UTF-8: invalid, overlong, an encoded surrogate, cut short.
BAD_BYTES = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"]


@pytest.mark.parametrize("line", HOSTILE)
@pytest.mark.parametrize("where", [0, 1, 4, 7])
@pytest.mark.parametrize("stats", [False, True])
def test_a_hostile_line_is_read_as_the_strict_reader_reads_it(line: str, where: int, stats: bool) -> None:
    lines = _regular(0, 6, stats=stats)
    lines.insert(where, line)  # first, after the commitInfo, among the adds, last
    commits = [_commit(_regular(100, 3)), _commit(lines), _commit(_regular(200, 3))]
    _same(commits)
    _same(commits, check=False)
    _accepted_only_as_the_strict_reader_does(commits[1])


@pytest.mark.parametrize("pair", [
    # a line holding two actions beside one holding none: as many actions as lines
    ['{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},"commitInfo":{}}',
     '{"commitInfo":null}'],
    ['{"add":{"path":"d/x","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true},"commitInfo":{}}',
     '{"add":null}'],
    # two objects on one line beside a blank line: as many rows as lines
    ['{"commitInfo":{}} {"commitInfo":{}}', ''],
    ['{"commitInfo":{}} {"commitInfo":{}}', '  '],
])
def test_two_hostile_lines_that_balance_each_other(pair: list[str]) -> None:
    lines = _regular(0, 4, stats=False)
    lines[2:2] = pair
    commits = [_commit(lines)]
    assert _outcome(commits, columns=True) == _outcome(commits, columns=False)
    _accepted_only_as_the_strict_reader_does(commits[0])


@pytest.mark.parametrize("raw", BAD_BYTES)
def test_invalid_utf8_is_refused_as_before(raw: bytes) -> None:
    commit = _commit(_regular(0, 3)).replace(b"part-00001", b"part-" + raw)
    assert regular_adds(commit) is None
    assert _outcome([commit], columns=True) == _outcome([commit], columns=False)
    assert _outcome([commit], columns=True)[0] == "refused"


def _accepted_only_as_the_strict_reader_does(data: bytes) -> None:
    """The heart of it: a commit the columnar reading takes is one the strict reader takes, with the same adds."""
    got = regular_adds(data)
    if got is None:
        return
    fields, paths = got
    actions = list(json_lines(data, "commit"))  # raises when the strict reader refuses
    adds = [a["add"] for a in actions if a.get("add") is not None]
    assert all(set(a) <= {"add", "commitInfo"} and sum(v is not None for v in a.values()) == 1 for a in actions)
    assert paths == [a["path"] for a in adds]
    from carriers.delta.adds import Columns

    columns = Columns()
    if len(set(paths)) < len(paths):  # a path added twice: the replay reads the commit line by line
        assert not columns.append(fields, paths)
        return
    assert columns.append(fields, paths)
    assert [columns.row(i) for i in range(len(paths))] == [_read_as(a) for a in adds]


# ---- random commits ----------------------------------------------------------------------------------------------
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=6)  # surrogates too
_VALUE = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                   st.floats(allow_nan=True, allow_infinity=True), _TEXT)


@st.composite
def _line(draw: st.DrawFn) -> str:
    i = draw(st.integers(0, 12))
    kind = draw(st.sampled_from(["add", "add", "add", "info", "raw", "hostile", "field"]))
    if kind == "add":
        return _adds_line(i) if draw(st.booleans()) else json.dumps({"add": {k: v for k, v in _add(i).items()
                                                                             if k != "stats"}})
    if kind == "info":
        return INFO
    if kind == "hostile":
        return draw(st.sampled_from(HOSTILE))
    if kind == "field":  # one add field replaced by a random value (or a random field added)
        name = draw(st.sampled_from(["path", "size", "modificationTime", "dataChange", "stats", "partitionValues",
                                     "tags", "x"]))
        value = draw(_VALUE)
        text = json.dumps({"add": _add(i, **{name: value})}, ensure_ascii=draw(st.booleans()))
        return text
    # raw: a regular line with a random cut, doubling or insertion
    text = _adds_line(i)
    at = draw(st.integers(0, len(text)))
    piece = draw(st.sampled_from(["", "NaN", "Infinity", ",", "}", "{", " ", "\\u0000", '"a":1,', "\\", '"', "\r",
                                  "\t", "\ufeff", "Info", "-Inf", "1e999"]))
    return text[:at] + piece + text[at + draw(st.integers(0, 3)):]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_line(), min_size=1, max_size=8), min_size=1, max_size=4), st.booleans())
def test_random_commits_read_alike(commits: list[list[str]], check: bool) -> None:
    data = [_commit(lines) for lines in commits]
    _same(data, check=check)
    for commit in data:
        _accepted_only_as_the_strict_reader_does(commit)
