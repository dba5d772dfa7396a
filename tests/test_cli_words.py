"""What the command line says (issue 30, items 9 and 10): every verdict says what was checked and what was not
(the signature included), and every error names the actual mistake and the fix."""

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

from tests.conftest import cli_in_process

ROOT = Path(__file__).resolve().parents[1]


cli = cli_in_process


def verdict(out: str) -> str:
    return out.strip().splitlines()[-1]


def error_of(*args: str) -> dict[str, Any]:
    rc, out, _ = cli(*args, "--json")
    assert rc == 2, out
    doc: dict[str, Any] = json.loads(out)
    problem: dict[str, Any] = doc["errors"][0]
    return problem


@pytest.fixture
def delta(tmp_path: Path) -> Path:
    path = tmp_path / "orders"
    write_deltalake(str(path), pa.table({"x": [1, 2]}))
    assert cli("record", str(path), "--model", "m", "--sql", "SELECT 1")[0] == 0
    return path


# ---- item 9: verdicts --------------------------------------------------------------------------------------------
def test_an_unsigned_table_says_unsigned(delta: Path) -> None:
    write_deltalake(str(delta), pa.table({"x": [3]}), mode="append")
    rc, out, _ = cli("record", str(delta), "--model", "m", "--sql", "SELECT 1")
    assert rc == 0 and out.strip().endswith(" file(s) hashed, inputs strong, unsigned"), out
    rc, out, _ = cli("verify", str(delta))
    assert rc == 0 and verdict(out).startswith("VERIFIED (bytes, unsigned) — delta table"), out
    rc, out, _ = cli("verify", str(delta), "--level", "files")
    assert rc == 0 and verdict(out).startswith("VERIFIED (files — live file set and sizes; bytes not re-hashed, "
                                               "unsigned) — "), out
    rc, out, _ = cli("verify", str(delta), "--json")
    assert json.loads(out)["signed"] is False


def test_a_signed_table_verified_without_a_key_says_the_signature_was_not_checked(delta: Path,
                                                                                  tmp_path: Path) -> None:
    assert cli("keygen", "--out", str(tmp_path / "ci"))[0] == 0
    write_deltalake(str(delta), pa.table({"x": [3]}), mode="append")
    signed = cli("record", str(delta), "--model", "m", "--sql", "SELECT 1", "--sign-key", str(tmp_path / "ci.key"))
    assert signed[0] == 0, signed
    rc, out, _ = cli("verify", str(delta))
    assert rc == 0 and verdict(out).startswith("VERIFIED (bytes, signature not checked) — "), out
    assert "unsigned" not in verdict(out)
    rc, out, _ = cli("verify", str(delta), "--key", str(tmp_path / "ci.pub"))
    assert rc == 0 and verdict(out).startswith("VERIFIED (bytes, signed by "), out


@pytest.mark.parametrize(("level", "words"), [
    ("files", "NOT VERIFIED (files asked, stopped at schema — files and bytes not checked) — "),
    ("bytes", "NOT VERIFIED (bytes asked, stopped at schema — files and bytes not checked) — "),
    (None, "NOT VERIFIED (bytes asked, stopped at schema — files and bytes not checked) — "),
    ("schema", "NOT VERIFIED (schema only — files and bytes not checked) — "),
])
def test_a_stale_table_says_how_far_the_checks_got(delta: Path, level: str | None, words: str) -> None:
    write_deltalake(str(delta), pa.table({"x": [9]}), mode="append")
    rc, out, _ = cli("verify", str(delta), *(["--level", level] if level else []))
    assert rc == 1 and verdict(out).startswith(words) and verdict(out).endswith(": stale"), out


def test_a_failure_at_the_level_asked_names_that_level(delta: Path) -> None:
    (part,) = delta.glob("*.parquet")
    part.write_bytes(part.read_bytes()[:-1] + b"\0")  # same size, other bytes: fails at bytes
    rc, out, _ = cli("verify", str(delta))
    assert rc == 1 and verdict(out).startswith("NOT VERIFIED (bytes) — "), out


def test_show_into_verify_says_the_output_hashes_were_not_checked(delta: Path) -> None:
    _, shown, _ = cli("show", str(delta))
    manifest = delta.parent / "m.json"
    manifest.write_text(shown, encoding="utf-8")
    rc, out, _ = cli("verify", str(manifest))
    assert rc == 0 and verdict(out) == ("VERIFIED (schema only — 1 output hash not checked: no --artifacts-dir given,"
                                        " unsigned)"), out
    rc, out, _ = cli("verify", str(manifest), "--artifacts-dir", str(delta))
    assert rc == 0 and verdict(out) == "VERIFIED (bytes, unsigned)", out
    rc, out, _ = cli("verify", str(manifest), "--json")
    doc = json.loads(out)
    assert doc["bytes_unchecked"] == "1 output hash not checked: no --artifacts-dir given" and doc["signed"] is False


# ---- item 10: errors that name the mistake -----------------------------------------------------------------------
def test_a_missing_sql_file_is_named_as_the_sql_file(delta: Path, tmp_path: Path) -> None:
    problem = error_of("record", str(delta), "--model", "m", "--sql-file", str(tmp_path / "nope.sql"))
    assert problem["code"] == "invalid_argument" and problem["message"].startswith("--sql-file ")
    assert "manifest" not in problem["message"] and "no such file" in problem["message"]
    (tmp_path / "latin1.sql").write_bytes("SELECT 'é'".encode("latin-1"))
    problem = error_of("record", str(delta), "--model", "m", "--sql-file", str(tmp_path / "latin1.sql"))
    assert problem["code"] == "invalid_argument" and "not UTF-8" in problem["message"]
    problem = error_of("record", str(delta), "--model", "m", "--program-json", str(tmp_path / "nope.json"))
    assert problem["code"] == "invalid_argument" and problem["message"].startswith("--program-json ")


def test_a_data_file_given_as_a_manifest_is_named(delta: Path, tmp_path: Path) -> None:
    (part,) = delta.glob("*.parquet")
    for command in ("verify", "digest"):
        problem = error_of(command, str(part))
        assert problem["code"] == "not_a_manifest" and "Parquet data file" in problem["message"], problem
    avro = tmp_path / "snap-1.avro"
    avro.write_bytes(b"Obj\x01" + os.urandom(64))
    problem = error_of("verify", str(avro))
    assert problem["code"] == "not_a_manifest" and "Avro" in problem["message"]


def test_table_metadata_given_as_a_manifest_is_named(delta: Path, tmp_path: Path) -> None:
    problem = error_of("verify", str(delta / "_delta_log" / "00000000000000000000.json"))
    assert problem["code"] == "not_a_manifest" and "Delta log commit" in problem["message"]
    assert f"attest verify {delta}" in problem["message"]
    metadata = tmp_path / "00001-x.metadata.json"
    metadata.write_text(json.dumps({"format-version": 2, "table-uuid": "u", "location": "/w/t", "schemas": []}))
    problem = error_of("verify", str(metadata))
    assert problem["code"] == "not_a_manifest" and "Iceberg table metadata" in problem["message"]
    assert "iceberg://<catalog>/<namespace>.<table>" in problem["message"]


def test_an_envelope_given_as_a_manifest_is_named(tmp_path: Path) -> None:
    from attest.build import build_manifest
    from attest.signing.keys import PemSigner
    from carriers.standalone import StandaloneCarrier

    assert cli("keygen", "--out", str(tmp_path / "ci"))[0] == 0
    out = tmp_path / "out"
    out.mkdir()
    manifest = build_manifest(model="m", program_hash="a" * 64, env_hash="b" * 64)
    StandaloneCarrier(out).write(manifest, signer=PemSigner.load(tmp_path / "ci.key"))
    envelope = out / "manifest.json.dsse.json"
    problem = error_of("verify", str(envelope))
    assert problem["code"] == "not_a_manifest" and "signed envelope" in problem["message"], problem
    assert f"attest verify {out / 'manifest.json'} --key" in problem["message"]


def test_a_json_document_that_is_no_manifest_still_gets_its_schema_verdict(tmp_path: Path) -> None:
    """Only table metadata and log commits are named: any other JSON is judged by the schema (exit 1)."""
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "x", "add": 1}))
    rc, out, _ = cli("verify", str(other))
    assert rc == 1 and verdict(out) == "NOT VERIFIED", out


@pytest.mark.parametrize("kind", ["lake", "warehouse"])
def test_a_folder_of_tables_points_to_one_table_or_audit(tmp_path: Path, kind: str) -> None:
    lake = tmp_path / "lake"
    parent = lake / "ns" if kind == "warehouse" else lake
    for name in ("a", "b"):
        write_deltalake(str(parent / name), pa.table({"x": [1]}))
    problem = error_of("verify", str(lake))
    assert problem["code"] == "not_a_manifest" and "folder of tables" in problem["message"], problem
    assert f"attest verify {parent / 'a'}" in problem["message"] and f"attest audit {lake}" in problem["message"]


def test_an_empty_folder_and_an_iceberg_table_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    problem = error_of("verify", str(tmp_path / "empty"))
    assert problem["code"] == "manifest_missing" and "empty folder" in problem["message"]
    assert "manifest.json" in problem["message"] and "_delta_log" in problem["message"]
    folder = tmp_path / "orders" / "metadata"
    folder.mkdir(parents=True)
    (folder / "00000-a.metadata.json").write_text("{}")
    # An Iceberg table folder is read from its newest metadata file (docs/verify.md): one that is not Iceberg table
    # metadata says so, naming the file.
    problem = error_of("verify", str(tmp_path / "orders"))
    assert problem["code"] == "table_unreadable", problem
    assert "00000-a.metadata.json" in problem["message"] and "Iceberg table metadata" in problem["message"]


def test_a_table_path_with_a_typo_suggests_the_table(delta: Path) -> None:
    problem = error_of("verify", str(delta.parent / "ordres"))
    assert problem["code"] == "manifest_missing" and f"did you mean {delta}?" in problem["message"], problem


@pytest.mark.parametrize(("ref", "words"), [
    ("iceberg:/local/sales.orders", "two slashes"),
    ("ICEBERG://local/sales.orders", "lower case"),
    ("iceberg://", "no catalog name"),
    ("iceberg://cat/", "no <namespace>.<table> after the catalog"),
    ("iceberg://cat/orders", "namespace"),
])
def test_iceberg_references_say_what_is_missing(ref: str, words: str) -> None:
    for command in ("verify", "show"):
        problem = error_of(command, ref)
        assert problem["code"] == "table_reference_invalid" and words in problem["message"], problem
        assert "delta-rs" not in problem["message"]


def test_an_unknown_scheme_points_to_iceberg_references() -> None:
    problem = error_of("verify", "sqlite:///tmp/catalog.db")
    assert problem["code"] == "unsupported_storage" and "iceberg://<catalog>/<namespace>.<table>" in problem["message"]


@pytest.mark.parametrize("uri", ["sqlite:///no/such/folder/cat.db", "sqlite:////no/such/folder/cat.db"])
def test_a_sqlite_catalog_that_cannot_be_opened_is_coded(uri: str, tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    pytest.importorskip("sqlalchemy")
    # A fresh interpreter: pyiceberg reads its environment variables once, when first imported.
    env = {**os.environ, "PYICEBERG_CATALOG__BAD__TYPE": "sql", "PYICEBERG_CATALOG__BAD__URI": uri,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "attest.cli", "verify", "iceberg://bad/ns.t", "--json"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    problem = json.loads(done.stdout)["errors"][0]
    assert problem["code"] == "table_reference_invalid", problem
    assert "four before an absolute one" in problem["message"] and "PYICEBERG_CATALOG__BAD__URI" in problem["message"]


def test_missing_sqlglot_is_extra_missing(delta: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sqlglot", None)  # import sqlglot raises ImportError
    problem = error_of("record", str(delta), "--model", "m", "--sql", "SELECT 1")
    assert problem["code"] == "extra_missing" and "recipe-attest[sql]" in problem["message"], problem


def test_show_and_record_of_something_that_is_not_a_delta_table_say_what_it_is(delta: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    write_deltalake(str(lake / "a"), pa.table({"x": [1]}))
    for args in (("show", str(lake)), ("record", str(lake), "--model", "m", "--sql", "SELECT 1")):
        problem = error_of(*args)
        assert problem["code"] == "table_not_found" and "folder of tables" in problem["message"], problem
        assert f"attest audit {lake}" in problem["message"]
    problem = error_of("show", str(delta.parent / "ordres"))
    assert problem["code"] == "table_not_found" and f"did you mean {delta}?" in problem["message"], problem
    iceberg = tmp_path / "ice" / "metadata"
    iceberg.mkdir(parents=True)
    (iceberg / "00000-a.metadata.json").write_text("{}")
    problem = error_of("show", str(tmp_path / "ice"))
    assert problem["code"] == "table_unreadable" and "Iceberg table metadata" in problem["message"], problem


def test_a_manifest_named_by_uri(delta: Path, tmp_path: Path) -> None:
    """A file: URI is the local file (it said "no such file" of one that exists); an object store is refused as a
    place to read a manifest from, saying how to give it."""
    _, shown, _ = cli("show", str(delta))
    manifest = tmp_path / "m.json"
    manifest.write_text(shown, encoding="utf-8")
    rc, out, _ = cli("verify", manifest.as_uri(), "--artifacts-dir", str(delta))
    assert rc == 0 and verdict(out) == "VERIFIED (bytes, unsigned)", out
    problem = error_of("verify", "s3://bucket/m.json")
    assert problem["code"] == "invalid_argument" and "attest verify -" in problem["message"], problem
