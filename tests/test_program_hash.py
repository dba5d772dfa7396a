"""``attest program-hash`` prints what ``attest record`` records; ``attest verify --program-file`` /
``--program-sql`` fails with ``program_mismatch`` when another program produced the table; re-recording with only
the dialect changed warns (issue 34.3)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from tests.conftest import run_cli

SQL = "select o.id, sum(o.amount) as total\nfrom orders o -- the raw table\ngroup by o.id"
SAME_LOGIC = "SELECT o.id, SUM(o.amount) AS total FROM orders AS o GROUP BY o.id"
OTHER = "select o.id from orders o"


def _table(tmp_path: Path) -> Path:
    path = tmp_path / "orders"
    write_deltalake(str(path), pa.table({"id": [1, 2], "amount": [3, 4]}))
    return path


def _hash(*args: str) -> str:
    done = run_cli("program-hash", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_program_hash_is_what_record_records(tmp_path: Path) -> None:
    table = _table(tmp_path)
    sql_file = tmp_path / "q.sql"
    sql_file.write_text(SQL)
    printed = _hash("--sql-file", str(sql_file), "--dialect", "spark")
    assert len(printed) == 64 and printed == _hash("--sql", SAME_LOGIC, "--dialect", "spark")
    assert printed != _hash("--sql-file", str(sql_file))  # the dialect is part of the identity
    assert printed != _hash("--sql", OTHER, "--dialect", "spark")
    done = run_cli("record", str(table), "--model", "o", "--sql-file", str(sql_file), "--dialect", "spark")
    assert done.returncode == 0, done.stderr
    shown = json.loads(run_cli("show", str(table)).stdout)
    assert shown["program_hash"] == printed
    done = run_cli("program-hash", "--sql", SQL, "--dialect", "spark", "--json")
    assert json.loads(done.stdout) == {"program_hash": printed, "kind": "sql", "dialect": "spark", "hash_scheme": "v1"}
    program = tmp_path / "p.json"
    program.write_text(json.dumps({"kind": "dataframe", "ops": ["select id"]}))
    json_hash = _hash("--program-json", str(program))
    table2 = tmp_path / "t2"
    write_deltalake(str(table2), pa.table({"id": [1]}))
    assert run_cli("record", str(table2), "--model", "m", "--program-json", str(program)).returncode == 0
    assert json.loads(run_cli("show", str(table2)).stdout)["program_hash"] == json_hash


def test_program_hash_mistakes(tmp_path: Path) -> None:
    for args in ([], ["--sql", "select 1", "--sql-file", "x"], ["--sql", "select (", "--dialect", "spark"],
                 ["--sql", "select 1", "--dialect", "no-such-dialect"], ["--sql-file", str(tmp_path / "none.sql")]):
        done = run_cli("program-hash", *args, "--json")
        assert done.returncode == 2, (args, done.stdout)
        assert json.loads(done.stdout)["errors"][0]["code"] in ("invalid_argument", "manifest_invalid_field"), args


def test_verify_against_a_program(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert run_cli("record", str(table), "--model", "o", "--sql", SQL, "--dialect", "spark").returncode == 0
    sql_file = tmp_path / "q.sql"
    sql_file.write_text(SAME_LOGIC)
    done = run_cli("verify", str(table), "--program-file", str(sql_file), "--dialect", "spark")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "program_hash is this program's" in done.stdout
    done = run_cli("verify", str(table), "--program-sql", OTHER, "--dialect", "spark", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert not report["passed"] and [e["code"] for e in report["errors"]] == ["program_mismatch"]
    # the right SQL without the record's dialect: still a mismatch, and the message names the dialect to give
    done = run_cli("verify", str(table), "--program-file", str(sql_file), "--json")
    assert done.returncode == 1
    message = json.loads(done.stdout)["errors"][0]["message"]
    assert "--dialect spark" in message
    # an unattested table stays unattested (no program to compare)
    bare = tmp_path / "bare"
    write_deltalake(str(bare), pa.table({"id": [1]}))
    done = run_cli("verify", str(bare), "--program-sql", SQL, "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["errors"][0]["code"] == "unattested"
    # mistakes are argument errors before any table is read
    for args in (["--program-sql", SQL, "--program-file", str(sql_file)], ["--dialect", "spark"],
                 ["--program-sql", "select (", "--dialect", "spark"]):
        done = run_cli("verify", str(table), *args, "--json")
        assert done.returncode == 2, (args, done.stdout)
    manifest = tmp_path / "m.json"
    manifest.write_text(run_cli("show", str(table)).stdout)
    done = run_cli("verify", str(manifest), "--program-sql", SQL, "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["errors"][0]["code"] == "invalid_argument"


def test_record_warns_when_only_the_dialect_changed(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert run_cli("record", str(table), "--model", "o", "--sql", SQL, "--dialect", "spark").returncode == 0
    write_deltalake(str(table), pa.table({"id": [5], "amount": [6]}), mode="append")
    done = run_cli("record", str(table), "--model", "o", "--sql", SQL, "--dialect", "duckdb")
    assert done.returncode == 0, done.stderr
    assert "only because the dialect did (--dialect spark before, --dialect duckdb now)" in done.stderr
    assert done.stderr.count("attest: warning: dialect_changed: the program identity changed") == 1, done.stderr
    write_deltalake(str(table), pa.table({"id": [7], "amount": [8]}), mode="append")
    done = run_cli("record", str(table), "--model", "o", "--sql", SQL, "--json")
    assert done.returncode == 0
    warnings = json.loads(done.stdout)["warnings"]
    assert len(warnings) == 1 and "--dialect duckdb before, no --dialect (generic SQL) now" in warnings[0]
    assert warnings[0].startswith("dialect_changed: ")  # code first, as every record warning
    # the same program again, or another program: no dialect warning
    write_deltalake(str(table), pa.table({"id": [9], "amount": [1]}), mode="append")
    done = run_cli("record", str(table), "--model", "o", "--sql", SQL, "--json")
    assert "warnings" not in json.loads(done.stdout)
    write_deltalake(str(table), pa.table({"id": [2], "amount": [1]}), mode="append")
    done = run_cli("record", str(table), "--model", "o", "--sql", OTHER, "--dialect", "spark")
    assert done.returncode == 0 and "dialect" not in done.stderr


def test_the_dialect_warning_reads_a_program_from_stdin_once(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert run_cli("record", str(table), "--model", "o", "--sql", SQL, "--dialect", "spark").returncode == 0
    write_deltalake(str(table), pa.table({"id": [5], "amount": [6]}), mode="append")
    done = run_cli("record", str(table), "--model", "o", "--sql-file", "-", "--dialect", "hive", "--json",
                   stdin=SQL.encode())
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["manifest"]["program_hash"] == _hash("--sql", SQL, "--dialect", "hive")
    assert "--dialect spark before, --dialect hive now" in out["warnings"][0]
