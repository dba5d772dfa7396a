"""Fuzzing attested tables end to end: every edit of a table's metadata or carrier files is a coded verdict.

``tests/test_fuzz.py`` holds each parser of untrusted text to a coded outcome; this holds the commands. An attested
Delta table (partitioned, two data commits, a checkpoint, the attestation's ALTER) and an attested Iceberg table
(sqlite catalog; a tag, a branch, main attested twice) are edited at random — a Delta commit's actions (edited,
dropped, repeated, borrowed; their nested JSON strings too), a checkpoint or its hint, an Iceberg metadata file's
snapshot summaries, properties, refs, statistics or any other field, a carrier file (sidecar, pointer, kept copy), a
manifest list or manifest (bytes) — and ``attest verify`` (any level), ``show``, ``audit``, ``lineage`` and
``record`` (its commit undone after) run on the result, in process; an Iceberg table by its catalog name, by its
folder (read statically: the edited metadata file is the newest) or in a walk of its warehouse. Each must exit 0, 1
or 2 with a JSON document that names no ``internal_error``: a value of an unexpected JSON type, an id in other
digits, a truncated file are verdicts, never an uncaught exception. Round 32's first runs of it found several
(tests/adversarial/test_iceberg_malformed_metadata_round32.py); a failure names where the error was raised.

A third test edits the data files of an attested Delta table that delta-rs compacted (its live files are read for
their rows by a verification) and holds every ``VERIFIED`` to what delta-rs reads: the rows it returns must be the
ones it returned before (a read it refuses is counted) — round 33's findings (tests/adversarial/
test_footer_text_round33.py, test_page_header_round33.py) came from it. Since round 35 a data file's footer is also
edited field by field half the time (``parquet_thrift.random_edit``: a field dropped, an integer moved, a list element
repeated, its Thrift read and written back), the edits of the Spark-checked fuzzer that found round 35's footer
classes (tests/adversarial/test_footer_statistics_round35.py, test_parquet_annotations_round35.py); here they found a
footer row count delta-rs reads otherwise (test_footer_row_count_round35.py).

``ATTEST_FUZZ_TABLE_EXAMPLES`` sets the edits per format (default 1,000: the bounded run CI makes, ~45 s on 2 cores
with the data files' quarter of it), ``ATTEST_FUZZ_SEED`` the seed (default 0, so a failure is reproduced by the same
run; the data files' order is not, their names being new each run); the counts are printed.
"""

from __future__ import annotations

import io
import json
import os
import random
import sqlite3
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from attest.cli import main

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("ATTEST_FUZZ_TABLE_EXAMPLES", "1000"))
SEED = int(os.environ.get("ATTEST_FUZZ_SEED", "0"))

# Values an edit puts in place of another: every JSON type, and strings readers take for ids, paths and numbers.
ODD = ["", "0", "-1", "²", "٣", "1e309", "NaN", "null", "{}", "[]", "../x", "/abs", "a" * 64, "\x00", "🙂", "%2e%2e",
       "9" * 40, 0, -1, 2 ** 63, 2 ** 64, 1.5, -0.0, True, False, None, [], {}, [1], {"a": "b"}]


def _mutate(rng: random.Random, value: Any) -> Any:
    """``value`` with one random edit somewhere inside it (a JSON string holding JSON is edited inside too)."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        roll = rng.random()
        if roll < 0.1:
            del value[key]
        elif roll < 0.15:
            value[key + rng.choice(["", "x", " "])] = rng.choice(ODD)
        else:
            value[key] = _mutate(rng, value[key])
        return value
    if isinstance(value, list) and value and rng.random() < 0.7:
        i = rng.randrange(len(value))
        roll = rng.random()
        if roll < 0.15:
            value.pop(i)
        elif roll < 0.25:
            value.append(value[i])
        else:
            value[i] = _mutate(rng, value[i])
        return value
    if isinstance(value, str) and rng.random() < 0.6:
        try:
            inner = json.loads(value)
        except ValueError:
            inner = None
        if isinstance(inner, (dict, list)) and rng.random() < 0.7:
            return json.dumps(_mutate(rng, inner))
        chars = list(value)
        for _ in range(rng.randint(1, 3)):
            if chars and rng.random() < 0.5:
                chars[rng.randrange(len(chars))] = rng.choice("0a9-_./\\\"{}:,²\x00é")
            else:
                chars.insert(rng.randint(0, len(chars)), rng.choice("0a9-_./\"{}²"))
        return "".join(chars)
    return rng.choice(ODD)


EDITED: list[str] = []  # the footer edits of the last data file edited, for a failure's message


def _edit_bytes(rng: random.Random, data: bytes) -> bytes:
    """A JSON document edited as JSON, a Parquet file's footer (often) field by field (its Thrift read and written
    back: round 35's findings), anything else (or sometimes these too) byte by byte, or cut short."""
    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    if doc is not None and rng.random() < 0.8:
        return json.dumps(_mutate(rng, doc)).encode()
    if data[:4] == data[-4:] == b"PAR1" and rng.random() < 0.5:
        from tests.adversarial.parquet_thrift import random_edit, with_footer

        try:
            return with_footer(data, lambda meta: EDITED.extend(random_edit(rng, meta)
                                                                for _ in range(rng.randint(1, 2))))
        except (ValueError, IndexError, KeyError):  # a footer this reader cannot take apart: edited by bytes
            pass
    if data and rng.random() < 0.2:
        return data[:rng.randrange(len(data))]
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def _run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(args)
    return code, out.getvalue()


# Where each internal error was raised (the project's innermost frames), taken as the command codes it.
WHERE: list[str] = []


@pytest.fixture(autouse=True)
def _where(monkeypatch: pytest.MonkeyPatch) -> None:
    import traceback

    from attest.cli.output import Output

    internal = Output.internal

    def noted(self: Output, exc: BaseException) -> int:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/attest/" in f.filename
                  or "/carriers/" in f.filename]
        WHERE.append(" < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames[-3:])))
        return internal(self, exc)

    monkeypatch.setattr(Output, "internal", noted)


def _judged(args: list[str], what: str) -> None:
    """The command's outcome on an edited table: a coded verdict, as JSON."""
    WHERE.clear()
    code, text = _run(args)
    assert code in (0, 1, 2), (what, args, code, text[:2000])
    document = json.loads(text)  # one JSON document, whatever the outcome
    assert "internal_error" not in text, f"{what}: raised at {WHERE}; {args}: {json.dumps(document)[:3000]}"


@pytest.fixture(scope="module")
def delta_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from deltalake import DeltaTable, write_deltalake

    root = tmp_path_factory.mktemp("fuzz_delta") / "t"
    write_deltalake(str(root), pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["a", "b", "a"]}),
                    partition_by=["p"])
    write_deltalake(str(root), pa.table({"id": pa.array([4], pa.int64()), "p": ["b"]}), mode="append",
                    partition_by=["p"])
    DeltaTable(str(root)).create_checkpoint()  # a checkpoint and its hint to edit too, and the cross-check to make
    assert _run(["record", str(root), "--model", "m", "--sql", "select 1"])[0] == 0
    code, text = _run(["verify", str(root), "--json"])
    assert code == 0 and json.loads(text)["verdict"].startswith("VERIFIED"), text
    return root


@pytest.fixture(scope="module")
def iceberg_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    from pyiceberg.catalog.sql import SqlCatalog

    from carriers.iceberg.carrier import attest_after_write

    root = tmp_path_factory.mktemp("fuzz_iceberg")
    (root / "warehouse").mkdir()
    catalog = SqlCatalog("fuzz", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root / 'warehouse'}")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    attest_after_write(catalog.load_table("ns.t"), model="m", program_hash="0" * 64)
    # refs for the audit's lines to read: a tag at the attested head, a branch of one more row, main attested again
    table = catalog.load_table("ns.t")
    head = table.metadata.refs["main"].snapshot_id
    table.manage_snapshots().create_tag(head, "v1").create_branch(head, "b").commit()
    catalog.load_table("ns.t").append(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), branch="b")
    catalog.load_table("ns.t").append(pa.table({"id": pa.array([4], pa.int64()), "v": ["d"]}))
    attest_after_write(catalog.load_table("ns.t"), model="m", program_hash="0" * 64)
    flags = ["--uri", f"sqlite:///{root / 'catalog.db'}", "--warehouse", f"file://{root / 'warehouse'}"]
    code, text = _run(["verify", "iceberg://fuzz/ns.t", "--json", *flags])
    assert code == 0 and json.loads(text)["verdict"].startswith("VERIFIED"), text
    return root, flags


def _args(rng: random.Random, target: str, flags: list[str]) -> list[str]:
    command = rng.choice(["verify", "verify", "verify", "show", "audit", "lineage"])
    args = [command, target, "--json", *flags]
    if command in ("verify", "audit") and rng.random() < 0.7:
        args += ["--level", rng.choice(["schema", "files", "bytes"])]
    return args


def test_edited_delta_tables_get_coded_verdicts(delta_table: Path) -> None:
    rng = random.Random(SEED)
    files = sorted(p for p in (delta_table / "_delta_log").iterdir() if p.is_file()) + \
        sorted((delta_table / "_recipe_attest").iterdir())
    names = {p.name for p in files}
    assert "_last_checkpoint" in names and any(n.endswith(".checkpoint.parquet") for n in names), names
    for n in range(EXAMPLES):
        path = rng.choice(files)
        original = path.read_bytes()
        if path.name.endswith(".json") and path.parent.name == "_delta_log" and rng.random() < 0.85:  # actions
            lines = original.decode().splitlines()
            i = rng.randrange(len(lines))
            roll = rng.random()
            if roll < 0.7:  # one action edited
                lines[i] = json.dumps(_mutate(rng, json.loads(lines[i])), ensure_ascii=rng.random() < 0.5)
            elif roll < 0.8:  # one dropped
                lines.pop(i)
            elif roll < 0.9:  # one given twice
                lines.insert(rng.randrange(len(lines) + 1), lines[i])
            else:  # one of another commit's
                other = rng.choice([f for f in files if f.name.endswith(".json") and f.parent.name == "_delta_log"]
                                   ).read_text().splitlines()
                lines.insert(rng.randrange(len(lines) + 1), rng.choice(other))
            edited = ("\n".join(lines) + "\n").encode()
        else:
            edited = _edit_bytes(rng, original)
        path.write_bytes(edited)
        before = {p for folder in ("_delta_log", "_recipe_attest") for p in (delta_table / folder).iterdir()}
        args = _args(rng, str(delta_table), [])
        if rng.random() < 0.1:  # a record of the edited table: what it commits is removed after
            args = ["record", str(delta_table), "--model", "m", "--sql", "select 1", "--json"]
        try:
            _judged(args, f"example {n}: {path.name} edited")
        finally:
            path.write_bytes(original)
            for folder in ("_delta_log", "_recipe_attest"):
                for made in set((delta_table / folder).iterdir()) - before:
                    made.unlink()
    code, text = _run(["verify", str(delta_table), "--json"])  # every edit was undone
    assert code == 0 and json.loads(text)["verdict"].startswith("VERIFIED"), text
    print(f"{EXAMPLES} edited Delta tables judged (seed {SEED})")


def _metadata_edit(rng: random.Random) -> tuple[str, Callable[[dict[str, Any]], Any]]:
    part = rng.choice(["summary", "summary", "summary", "properties", "refs", "statistics", "snapshots", "schemas",
                       "snapshot-log", "whole"])

    def edit(doc: dict[str, Any]) -> Any:
        if part == "summary":
            snap = rng.choice(doc["snapshots"])
            snap["summary"] = _mutate(rng, snap["summary"])
            return doc
        if part == "whole" or part not in doc:
            return _mutate(rng, doc)
        doc[part] = _mutate(rng, doc[part])
        return doc
    return part, edit


def test_edited_iceberg_tables_get_coded_verdicts(iceberg_table: tuple[Path, list[str]]) -> None:
    root, flags = iceberg_table
    rng = random.Random(SEED)
    db = root / "catalog.db"
    with sqlite3.connect(db) as conn:
        (location,) = conn.execute("SELECT metadata_location FROM iceberg_tables").fetchone()
    current = Path(location.removeprefix("file://"))
    carried = sorted(p for p in (root / "warehouse").rglob("*") if p.is_file() and "recipe_attest" in p.parts)
    assert carried, "the attestation's carrier files"
    carried += sorted((current.parent).glob("*.avro"))  # manifest lists and manifests, edited byte by byte
    for n in range(EXAMPLES):
        if rng.random() < 0.75:
            part, edit = _metadata_edit(rng)
            edited = current.with_name(f"99999-fuzz-{n}.metadata.json")
            edited.write_text(json.dumps(edit(json.loads(current.read_text()))))
            with sqlite3.connect(db) as conn:
                conn.execute("UPDATE iceberg_tables SET metadata_location = ?", (edited.as_uri(),))
            before = set((root / "warehouse").rglob("*"))
            target = rng.choice(["iceberg://fuzz/ns.t", "iceberg://fuzz/ns", "folder"])
            # the table's folder read statically (its newest metadata file: the edited one), or the warehouse walked
            args = _args(rng, target, flags) if target != "folder" else \
                _args(rng, str(rng.choice([current.parent.parent, root / "warehouse"])), [])
            if rng.random() < 0.1:  # a record of the edited table: its commit undone after
                args = ["record", "iceberg://fuzz/ns.t", "--model", "m", "--sql", "select 1", "--json", *flags]
            try:
                _judged(args, f"example {n}: the metadata's {part} edited")
            finally:
                with sqlite3.connect(db) as conn:
                    conn.execute("UPDATE iceberg_tables SET metadata_location = ?", (location,))
                for made in sorted(set((root / "warehouse").rglob("*")) - before, reverse=True):
                    made.rmdir() if made.is_dir() else made.unlink()
        else:
            path = rng.choice(carried)
            original = path.read_bytes()
            path.write_bytes(_edit_bytes(rng, original))
            try:
                _judged(_args(rng, "iceberg://fuzz/ns.t", flags), f"example {n}: {path.name} edited")
            finally:
                path.write_bytes(original)
    code, text = _run(["verify", "iceberg://fuzz/ns.t", "--json", *flags])  # every edit was undone
    assert code == 0 and json.loads(text)["verdict"].startswith("VERIFIED"), text
    print(f"{EXAMPLES} edited Iceberg tables judged (seed {SEED})")


def _engine_reads(path: Path) -> tuple[str, ...]:
    """What delta-rs returns for a full read and two filtered ones (page and row-group skipping on), as text; a
    refused read is its own answer."""
    from deltalake import DeltaTable, QueryBuilder

    out = []
    for query in ("select * from t", "select id, p from t where id >= 17", "select id from t where id = 22"):
        try:
            rows = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute(query).read_all())
            out.append(str(sorted(map(str, rows.to_pylist()))))
        except Exception:
            out.append("refused")
    return tuple(out)


def _engine_error(path: Path) -> str:
    from deltalake import DeltaTable, QueryBuilder

    try:
        QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()
    except Exception as exc:
        return str(exc)[:500]
    return ""


@pytest.fixture(scope="module")
def compacted_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An attested Delta table (a deletion vector on one file) then compacted by delta-rs: its live files are the
    ones the compaction added, read for their rows by a verification."""
    from deltalake import DeltaTable, WriterProperties, write_deltalake

    from tests.delta.dv import add_deletion_vector

    root = tmp_path_factory.mktemp("fuzz_compacted") / "t"
    for i in range(3):
        rows = pa.table({"id": pa.array(range(10 * i, 10 * i + 10), pa.int64()), "p": ["a", "b"] * 5,
                         "s": pa.array([{"x": i}] * 10)})
        write_deltalake(str(root), rows, mode="append",
                        configuration={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    add_deletion_vector(root, [1])
    assert _run(["record", str(root), "--model", "m", "--sql", "select 1"])[0] == 0
    # pages of four rows: the filtered reads below skip pages by the page index (its offset index too)
    DeltaTable(str(root)).optimize.compact(writer_properties=WriterProperties(data_page_row_count_limit=4,
                                                                              write_batch_size=4))
    code, text = _run(["verify", str(root), "--json"])
    assert code == 0 and json.loads(text)["verdict"].startswith("VERIFIED (content; compacted"), text
    return root


def test_edited_data_files_of_a_compacted_table(compacted_table: Path) -> None:
    """Every live data file's bytes (and the removed files', the deletion vector's) edited byte by byte or cut
    short: a coded verdict, and never VERIFIED while delta-rs reads other rows than before (a full read, or a
    filtered one: pages and row groups skipped by the file's own indexes)."""
    rng = random.Random(SEED)
    root = compacted_table
    files = sorted(p for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts
                   and "_recipe_attest" not in p.parts)
    honest = _engine_reads(root)
    assert "refused" not in honest, honest
    refused = 0
    for n in range(max(EXAMPLES // 4, 1)):
        path = rng.choice(files)
        original = path.read_bytes()
        EDITED.clear()
        path.write_bytes(_edit_bytes(rng, original))
        before = {p for folder in ("_delta_log", "_recipe_attest") for p in (root / folder).iterdir()}
        args = ["verify", str(root), "--json", "--level", rng.choice(["schema", "files", "bytes"])]
        if rng.random() < 0.15:
            args = ["record", str(root), "--model", "m", "--sql", "select 1", "--json"]
        try:
            _judged(args, f"example {n}: {path.name} edited")
            if args[0] == "verify" and _run(args)[0] == 0:
                # Rows delta-rs returns must be the honest ones; a read it refuses is counted, not failed: its
                # ARROW:schema is read more strictly by arrow-rs than by pyarrow (left open, docs/security.md)
                reads = _engine_reads(root)
                refused += "refused" in reads
                assert all(got in ("refused", want) for got, want in zip(reads, honest, strict=True)), (
                    f"example {n}: {path.name} edited ({EDITED or 'bytes'}), VERIFIED, other rows read", args,
                    reads, honest, _engine_error(root))
        finally:
            path.write_bytes(original)
            for folder in ("_delta_log", "_recipe_attest"):
                for made in set((root / folder).iterdir()) - before:
                    made.unlink()
    code, text = _run(["verify", str(root), "--json"])
    assert code == 0 and json.loads(text)["verdict"].startswith("VERIFIED"), text
    print(f"{max(EXAMPLES // 4, 1)} edits of a compacted table's files judged (seed {SEED}); {refused} VERIFIED "
          "with a read delta-rs refused")
