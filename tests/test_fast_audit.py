"""The fast paths an audit of many small tables takes (attest/fast/, ``ATTEST_FAST``): ``attest.fast.realpath`` —
``realpath(3)`` where the C library answers, ``os.path.realpath`` otherwise, every answer the one
``os.path.realpath`` / ``Path.resolve`` gives — and the add-action types delta-rs's columns are read by
(carriers/delta/columns.py ``_row_types``); an audit of a mixed lake (verified, tampered, unattested, stale, error, a
sidecar linked out of its table) says the same, line for line, with the fast path off (``ATTEST_FAST=0``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attest.fast import realpath as fast_realpath

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "a" * 64


def _tree(tmp_path: Path) -> list[str]:
    base = tmp_path / "b"
    (base / "real" / "sub").mkdir(parents=True)
    (base / "real" / "sub" / "f.json").write_text("{}")
    (base / "link").symlink_to(base / "real")  # absolute target
    (base / "rel").symlink_to("real/sub")  # relative target
    (base / "loop1").symlink_to(base / "loop2")
    (base / "loop2").symlink_to(base / "loop1")
    (base / "dangling").symlink_to(base / "nowhere")
    (base / "real" / "up").symlink_to("..")
    odd = os.fsdecode(b"odd\xff")  # not UTF-8: a surrogate escape
    (base / odd).mkdir()
    b = str(base)
    return [
        f"{b}/real/sub/f.json",
        f"{b}/link/sub/f.json",
        f"{b}/rel/f.json",
        f"{b}/link/up/link/sub",
        f"{b}/real/sub/../sub/f.json",
        f"{b}/link/../real",
        f"{b}/loop1",
        f"{b}/loop1/x",
        f"{b}/dangling",
        f"{b}/dangling/x",
        f"{b}/missing/a/b",
        f"{b}/real/sub/f.json/x",
        f"{b}/{odd}",
        f"{b}/{odd}/x",
        "/",
        f"/{b}/real",
        f"{b}/real/",
        f"{b}/real/./sub",
        "relative/path",
        "",
        f"{b}/real/sub/f.json\x00",
    ]


def test_realpath_is_os_realpath(tmp_path: Path) -> None:
    for path in _tree(tmp_path):
        try:
            want: object = os.path.realpath(path)
        except ValueError as exc:  # an embedded NUL
            want = type(exc)
        try:
            got: object = fast_realpath.realpath(path)
        except ValueError as exc:
            got = type(exc)
        assert got == want, path


def test_resolve_is_path_resolve(tmp_path: Path) -> None:
    for path in _tree(tmp_path):
        if "\x00" in path:
            continue
        try:
            want: object = Path(path).resolve()
        except RuntimeError:  # a link loop: Path.resolve refuses it, and so does the fast one
            want = RuntimeError
        try:
            got: object = fast_realpath.resolve(Path(path))
        except RuntimeError:
            got = RuntimeError
        assert got == want, path


def test_the_c_library_answers_here() -> None:
    """On Linux the C path is taken (else this module would measure nothing); the switch off, it is not."""
    if not sys.platform.startswith("linux"):
        pytest.skip("realpath(3) is used on Linux only")
    assert fast_realpath._load() is not None
    code = "from attest.fast import realpath as r\nassert r._load() is None\nassert r.realpath('/') == '/'\n"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "ATTEST_FAST": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr


def _lake(tmp_path: Path) -> Path:
    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write

    lake = tmp_path / "lake"
    data = pa.table({"id": [1, 2], "name": ["a", "b"]})
    for name in ("verified", "tampered", "stale", "linked_sidecar", "real_of_link"):
        write_deltalake(str(lake / name), data)
        attest_after_write(str(lake / name), model=name, program_hash=PROGRAM)
    write_deltalake(str(lake / "unattested"), data)
    next((lake / "tampered").glob("*.parquet")).write_bytes(b"not the attested bytes")
    write_deltalake(str(lake / "stale"), data, mode="append")
    # A sidecar replaced by a link to a copy outside the table: never read through it.
    sidecar = next((lake / "linked_sidecar" / "_recipe_attest").rglob("*.json"))
    outside = tmp_path / "outside.json"
    outside.write_bytes(sidecar.read_bytes())
    sidecar.unlink()
    sidecar.symlink_to(outside)
    # A table reached through a link to its folder (the carrier root resolved), and one whose log is not JSON.
    (lake / "via_link").symlink_to(lake / "real_of_link")
    write_deltalake(str(lake / "error"), data)
    next((lake / "error" / "_delta_log").glob("*.json")).write_text("not json\n")
    return lake


def _audit(lake: Path, fast: bool, *extra: str) -> tuple[int, object]:
    env = {**os.environ, "ATTEST_FAST": "1" if fast else "0", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "attest.cli", "audit", str(lake), "--jobs", "1", "--json", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    document = json.loads(out.stdout)

    def plain(value: object) -> object:  # times and the run's id are not verdicts
        if isinstance(value, dict):
            return {
                k: plain(v)
                for k, v in value.items()
                if k not in ("checked_at", "audit_id", "elapsed_seconds", "started_at", "finished_at")
            }
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return out.returncode, plain(document)


@pytest.mark.slow
def test_an_audit_of_a_mixed_lake_is_the_same_with_the_fast_path_off(tmp_path: Path) -> None:
    lake = _lake(tmp_path)
    on, off = _audit(lake, True), _audit(lake, False)
    assert on == off
    code, document = on
    assert code == 2  # an ERROR line
    assert isinstance(document, dict)
    outcomes = {Path(row["table"]).name: (row["outcome"], row["code"]) for row in document["tables"]}
    assert outcomes == {
        "verified": ("VERIFIED", None),
        "real_of_link": ("VERIFIED", None),
        "via_link": ("VERIFIED", None),
        "tampered": ("NOT VERIFIED", "size_mismatch"),  # its bytes replaced by fewer: the look at storage finds it
        "unattested": ("UNATTESTED", "unattested"),
        "stale": ("STALE", "stale"),
        "linked_sidecar": ("NOT VERIFIED", "sidecar_missing"),
        "error": ("ERROR", "table_unreadable"),
    }


def test_the_row_types_answer_is_kept_by_the_types_names_and_all() -> None:
    """``_row_types`` keeps its answer by the schema's types as printed, never by arro3's DataType equality (which
    ignores a struct's field names): a struct naming a field twice is refused after one whose single field's name
    prints like two, and the answers are ``_row_type``'s with or without the kept ones."""
    import pyarrow as pa
    from arro3.core import Schema

    from carriers.delta import columns

    def schema(*fields: tuple[str, pa.DataType]) -> object:
        return Schema.from_arrow(pa.schema([("path", pa.string()), ("min", pa.struct(list(fields)))]))

    quoted = schema(('x": Int64, "x', pa.int64()))
    twice = schema(("x", pa.int64()), ("x", pa.int64()))
    other = schema(("y", pa.int64()), ("y", pa.int64()))
    listed = schema(("x", pa.list_(pa.int64())))
    columns._ROW_TYPES.clear()
    for _ in range(2):  # asked, then answered from what was kept
        assert columns._row_types(quoted) is True
        assert columns._row_types(schema(("x", pa.int64()), ("y", pa.int64()))) is True  # equal to twice's for arro3
        assert columns._row_types(twice) is False
        assert columns._row_types(other) is False
        assert columns._row_types(listed) is False
        assert columns._row_types(schema(("x", pa.int64()))) is True
    for each in (quoted, twice, other, listed):
        assert columns._row_types(each) == all(columns._row_type(field.type) for field in each)  # type: ignore[attr-defined]
