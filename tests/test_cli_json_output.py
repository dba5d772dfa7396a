"""Every JSON the command line prints is valid JSON that decodes to exactly the data (issue 30, item 2), and every
``--json`` prints one object (item 11).

`attest show` printed a model name holding U+2028 / U+0085 — accepted by `record` and stored exactly — as U+FFFD
when stdout was a pipe, so ``attest show T`` no longer had the identity the sidecar recorded and ``show | verify -``
checked another document. JSON is escaped (``\\u2028``), never replaced; replacing is for human text only
(tests/adversarial/test_terminal_attacks.py). Each command runs in a fresh interpreter with stdout a pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

ROOT = Path(__file__).resolve().parents[1]
# What a terminal acts on or a reader misreads: line and paragraph separators, NEL and a C1 CSI, bidirectional
# controls, ESC sequences, BEL, a character beyond the BMP. All are accepted by `record` and stored exactly.
HOSTILE = "m\u2028\u2029\u0085\u009b2J\u202e\u200f\u2066\x1b[8m\x07\U0001f600"
# delta-rs refuses C0 controls in a table path; the others it takes.
HOSTILE_PATH = "t\u2028\u0085\u202e\u200f\u2029z"


def attest(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attest.cli", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=300, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def raw_for_a_terminal(text: str) -> list[str]:
    """Characters of printed JSON that a terminal would act on: none may be raw (they are \\u escapes)."""
    return sorted({c for c in text if not (c.isprintable() or c == "\n")})


def holds(value: Any, text: str) -> bool:
    """Whether ``text`` is in a string somewhere inside the decoded JSON ``value``."""
    if isinstance(value, str):
        return text in value
    if isinstance(value, dict):
        return any(holds(k, text) or holds(v, text) for k, v in value.items())
    if isinstance(value, list):
        return any(holds(v, text) for v in value)
    return False


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lake")
    write_deltalake(str(root / f"up{HOSTILE_PATH}"), pa.table({"x": [1]}))
    write_deltalake(str(root / HOSTILE_PATH), pa.table({"x": [2]}))
    write_deltalake(str(root / "for-record" / HOSTILE_PATH), pa.table({"x": [3]}))  # recorded by record --json
    done = attest("record", str(root / f"up{HOSTILE_PATH}"), "--model", HOSTILE, "--sql", "SELECT 1")
    assert done.returncode == 0, done.stderr
    # An input named by an OpenLineage event (a dataset no table backs): its name is recorded as given.
    events = root / "events.jsonl"
    events.write_text(json.dumps({"eventTime": "2026-01-01T00:00:00Z", "eventType": "COMPLETE", "run": {"runId": "r"},
                                  "job": {"namespace": "n", "name": "j"}, "inputs": [
                                      {"namespace": "file", "name": f"/{HOSTILE}",
                                       "facets": {"version": {"datasetVersion": "1"}}}]}) + "\n", encoding="utf-8")
    done = attest("record", str(root / HOSTILE_PATH), "--model", HOSTILE, "--sql", f"SELECT '{HOSTILE}'",
                  "--run-id", HOSTILE, "--input", str(root / f"up{HOSTILE_PATH}"), "--openlineage-events",
                  str(events))
    assert done.returncode == 0, done.stderr
    return root


def table(lake: Path) -> str:
    return str(lake / HOSTILE_PATH)


def sidecar_manifest(lake: Path) -> dict[str, Any]:
    (sidecar,) = (lake / HOSTILE_PATH / "_recipe_attest").glob("*.json")
    doc: dict[str, Any] = json.loads(sidecar.read_text(encoding="utf-8"))
    return doc


# Every command that prints JSON: (arguments, is --json's one object). {t} is the hostile table, {lake} the lake.
JSON_COMMANDS = [
    (("show", "{t}"), False),
    (("show", "{t}", "--json"), True),
    (("show", "{t}", "--inputs"), False),
    (("show", "{t}", "--inputs", "--json"), True),
    (("verify", "{t}", "--json"), True),
    (("lineage", "{t}", "--json"), True),
    (("lineage", "{t}", "--format", "json"), True),
    (("audit", "{lake}", "--json"), True),
    (("audit", "{lake}", "--format", "json"), True),
    (("record", "{lake}/for-record/{path}", "--model", HOSTILE, "--sql", "SELECT 2", "--json"), True),
    (("verify", "{lake}/no such {hostile}", "--json"), True),  # an error object naming the hostile path
    (("show", "{lake}/{hostile}", "--json"), True),
    (("digest", "{lake}/{hostile}.json", "--json"), True),
    (("keygen", "--out", "{lake}/key-{hostile}", "--json"), True),
]


@pytest.mark.parametrize(("args", "one_object"), JSON_COMMANDS, ids=lambda a: " ".join(a) if isinstance(a, tuple)
                         else str(a))
def test_every_json_output_escapes_and_decodes_to_the_data(lake: Path, args: tuple[str, ...],
                                                           one_object: bool) -> None:
    argv = [a.format(t=table(lake), lake=lake, hostile=HOSTILE, path=HOSTILE_PATH) for a in args]
    done = attest(*argv)
    assert "Traceback" not in done.stderr, done.stderr
    assert raw_for_a_terminal(done.stdout) == [], done.stdout
    assert "\ufffd" not in done.stdout, "a JSON value was replaced, not escaped"
    value = json.loads(done.stdout)
    if one_object:
        assert isinstance(value, dict), value
    # The exact name, every character of it, comes back out of the JSON (the model, the table path, or both).
    assert holds(value, HOSTILE) or holds(value, HOSTILE_PATH), value


def test_show_prints_the_recorded_document_and_verify_checks_it(lake: Path) -> None:
    shown = attest("show", table(lake))
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["subject"]["model"] == HOSTILE and document["subject"]["run_id"] == HOSTILE
    # The identity of what show printed is the one the sidecar recorded (one output file: order is moot).
    digest = attest("digest", "-", stdin=shown.stdout)
    assert digest.returncode == 0 and digest.stdout.strip() == sidecar_manifest(lake)["manifest"], digest.stdout
    as_json = attest("digest", "-", "--json", stdin=shown.stdout)
    assert json.loads(as_json.stdout)["identity"] == sidecar_manifest(lake)["manifest"]
    verified = attest("verify", "-", stdin=shown.stdout)
    assert verified.returncode == 0 and verified.stdout.splitlines()[-1].startswith("VERIFIED (schema only — 1 "
                                                                                   "output hash not checked"), \
        verified.stdout
    # show --json prints the same document.
    assert json.loads(attest("show", table(lake), "--json").stdout) == document


def test_human_text_stays_terminal_safe(lake: Path) -> None:
    """Replacing stays the rule for text meant for people: the verdict, lineage's tree, the audit's lines."""
    for args in (("verify", table(lake)), ("lineage", table(lake)), ("audit", str(lake / HOSTILE_PATH))):
        done = attest(*args)
        assert done.returncode == 0, done.stdout + done.stderr
        assert raw_for_a_terminal(done.stdout + done.stderr) == [], done.stdout


def test_schema_and_digest_print_valid_json(tmp_path: Path) -> None:
    schema = attest("schema")
    assert schema.returncode == 0 and json.loads(schema.stdout) == json.loads(attest("schema", "--json").stdout)
    doc = tmp_path / "d.json"
    doc.write_text(json.dumps({"k": HOSTILE}, ensure_ascii=False), encoding="utf-8")
    as_json = attest("digest", str(doc), "--json")
    assert raw_for_a_terminal(as_json.stdout) == [] and set(json.loads(as_json.stdout)) == {"identity", "hash_scheme"}


def test_show_inputs_json_is_one_object_and_text_is_the_list(lake: Path) -> None:
    listed = json.loads(attest("show", table(lake), "--inputs").stdout)
    wrapped = json.loads(attest("show", table(lake), "--inputs", "--json").stdout)
    assert isinstance(listed, list) and len(listed) == 2
    assert wrapped == {"table": table(lake), "version": None, "attested_version": "0", "inputs": listed}


def test_words_that_are_not_utf8_are_refused_as_the_argument_they_are(lake: Path) -> None:
    """Bytes that are not UTF-8 on the command line reach Python as lone surrogates, which no JSON may hold: `record`
    refuses the argument (exit 2, invalid_argument) and stores nothing; outputs naming such a path stay valid JSON."""
    bad = os.fsdecode(b"m\xff\xfe")
    for option in ("--model", "--run-id", "--sql"):
        words = {"--model": "m", "--sql": "SELECT 1", option: bad}
        args = ["record", table(lake), *(w for pair in words.items() for w in pair), "--json"]
        done = subprocess.run([sys.executable, "-m", "attest.cli", *args], capture_output=True, cwd=ROOT,
                              timeout=300)
        assert done.returncode == 2, done.stdout
        error = json.loads(done.stdout)
        assert error["errors"][0]["code"] == "invalid_argument" and option in error["errors"][0]["message"], error
    missing = subprocess.run([sys.executable, "-m", "attest.cli", "show", str(lake / bad), "--json"],
                             capture_output=True, cwd=ROOT, timeout=300)
    assert missing.returncode == 2 and missing.stdout.isascii()
    assert holds(json.loads(missing.stdout), str(lake / bad))  # the same (undecodable) name, escaped
