"""Warnings about an attestation the table metadata does not keep reach machines (docs/maintenance.md, docs/cli.md):
the keeping note of a format-v3 detached attestation (no keeper for the catalog: ``not_kept``; every race lost:
``commit_conflict``) is in ``WriteResult.warnings`` and ``attest record --json``'s ``warnings``, code first, and said
once on stderr. Before, it was only logged: a scheduled job reading ``--json`` never learnt that its attestation
would be lost at the next orphan removal or expiry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from carriers.iceberg.carriage import RETAIN_TAG
from carriers.iceberg.carrier import IcebergCarrier
from carriers.iceberg.sql_keep import SqlKeeper
from tests.iceberg.conftest import CATALOG, PROGRAM, catalog_properties, rows
from tests.iceberg.test_iceberg_sql_keep import always_racing, v3_table

REF = f"iceberg://{CATALOG}/ns.t"
RECORD = ["record", REF, "--model", "orders", "--program-hash", PROGRAM]


def _cli(tmp_path: Path, *args: str, keeper_off: bool = False) -> subprocess.CompletedProcess[str]:
    """`attest ARGS` in a fresh process (no logging configured: a logged warning reaches stderr, as for a user);
    ``keeper_off``: the SQL catalog's keeper taken away, standing for a Glue catalog (no keeper there)."""
    props = catalog_properties(tmp_path)
    env = {**os.environ, f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE": "sql",
           f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI": props["uri"],
           f"PYICEBERG_CATALOG__{CATALOG.upper()}__WAREHOUSE": props["warehouse"], "PYICEBERG_HOME": str(tmp_path)}
    boot = ("import sys\n"
            + ("import carriers.iceberg.commit as c\nc.sql_keeper = lambda table: None\n" if keeper_off else "")
            + "from attest.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", boot, *args], capture_output=True, text=True, env=env, timeout=300)


def test_a_glue_like_catalog_puts_the_note_in_json_with_its_code_and_says_it_once(catalog: SqlCatalog, table: Table,
                                                                                  tmp_path: Path) -> None:
    """No keeper (the SQL keeper switched off, as for Glue): `record --json` exits 0 with the note, coded
    ``not_kept``, in ``warnings``; stderr says it exactly once (was: only logged, nothing in the JSON)."""
    table = v3_table(catalog, table)
    done = _cli(tmp_path, *RECORD, "--json", keeper_off=True)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["recorded"] is True
    [note] = doc["warnings"]
    assert note.startswith("not_kept: the detached attestation of snapshot "), note
    assert "SqlCatalog" in note and "Spark hook" in note and "orphan removal deletes it" in note
    assert done.stderr.count(note) == 1, done.stderr
    assert done.stderr.strip() == f"attest: warning: {note}", done.stderr
    fresh = catalog.load_table("ns.t")
    assert not fresh.metadata.statistics and RETAIN_TAG not in fresh.metadata.refs  # what the note says: not kept


def test_the_text_output_says_the_note_once_too(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    v3_table(catalog, table)
    done = _cli(tmp_path, *RECORD, keeper_off=True)
    assert done.returncode == 0 and done.stdout.startswith("RECORDED"), done.stdout + done.stderr
    assert done.stderr.count("not_kept: the detached attestation") == 1, done.stderr


def test_a_kept_record_has_no_warning(catalog: SqlCatalog, table: Table, tmp_path: Path) -> None:
    """A v3 table of a SQL catalog, kept by its keeper: no ``warnings`` member, nothing on stderr."""
    v3_table(catalog, table)
    done = _cli(tmp_path, *RECORD, "--json")
    assert done.returncode == 0, done.stderr
    assert "warnings" not in json.loads(done.stdout), done.stdout
    assert done.stderr == "", done.stderr
    assert RETAIN_TAG in catalog.load_table("ns.t").metadata.refs


@pytest.mark.usefixtures("iceberg_env")
def test_a_lost_race_is_commit_conflict_in_json(catalog: SqlCatalog, table: Table, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str],
                                                caplog: pytest.LogCaptureFixture) -> None:
    """Another writer commits before every one of our swaps (``before_swap``): `record --json` exits 0 with the
    ``commit_conflict`` note in ``warnings``, said once on stderr by the command and not logged besides."""
    from attest.cli import main
    from carriers.iceberg import commit

    table, theirs, other_writer = always_racing(catalog, table, monkeypatch)

    monkeypatch.setattr(commit, "sql_keeper", lambda t: SqlKeeper(t, before_swap=other_writer))
    capsys.readouterr()
    with caplog.at_level("WARNING"):
        rc = main([*RECORD, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    [note] = json.loads(out)["warnings"]
    assert note.startswith("commit_conflict: the detached attestation of snapshot "), note
    assert f"lost {commit.COMMIT_RETRIES + 1} races" in note and "nothing was deleted" in note
    assert len(theirs) == commit.COMMIT_RETRIES + 1
    assert err.count(note) == 1 and err.strip() == f"attest: warning: {note}", err
    assert note not in caplog.text  # the command says it; the carrier does not log it a second time


@pytest.mark.usefixtures("iceberg_env")
def test_a_v2_follow_up_records_no_warning(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    from attest.cli import main

    table.append(rows(0))
    capsys.readouterr()
    rc = main([*RECORD, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and "warnings" not in json.loads(out) and err == "", out + err


def test_the_python_api_returns_the_note_and_logs_it_once(catalog: SqlCatalog, table: Table,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """``IcebergCarrier.record`` (what ``attest.record`` and the Spark hook call): the note in ``WriteResult.warnings``,
    code first, and logged once as before (a library caller that reads no result still sees it)."""
    from carriers.iceberg import commit

    monkeypatch.setattr(commit, "sql_keeper", lambda _table: None)
    table = v3_table(catalog, table)
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    with caplog.at_level("WARNING"):
        result = carrier.record(model="orders", program_hash=PROGRAM)
    [note] = result.warnings
    assert note.startswith("not_kept: ") and note == carrier.kept_note, note
    assert caplog.text.count(note) == 1, caplog.text
    assert [r.levelname for r in caplog.records if note in r.getMessage()] == ["WARNING"]
    assert "not_kept: the detached attestation" in result._repr_html_()  # the notebook display shows it too


@pytest.mark.usefixtures("iceberg_env")
def test_attest_record_api_exposes_the_warnings(catalog: SqlCatalog, table: Table,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import attest
    from carriers.iceberg import commit

    monkeypatch.setattr(commit, "sql_keeper", lambda _table: None)
    v3_table(catalog, table)
    result: Any = attest.record(REF, model="orders", program_hash=PROGRAM)
    assert [w.split(":", 1)[0] for w in result.warnings] == ["not_kept"], result.warnings
