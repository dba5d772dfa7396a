"""`attest verify|digest|schema` through a subprocess: every exit code and verdict line a user sees."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import blake3
import pytest

from attest.canonical import digest
from tests.conftest import run_cli

VERIFIED = "VERIFIED (bytes, unsigned)"
SCHEMA_ONLY = "VERIFIED (schema only — no byte-identity attested, unsigned)"
# A manifest read from stdin: no envelope could be looked for beside it.
SCHEMA_ONLY_STDIN = "VERIFIED (schema only — no byte-identity attested, signature not checked)"


def _artifact(tmp_path: Path, payload: bytes = b"PAR1 some parquet-ish bytes PAR1") -> tuple[Path, str]:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir(exist_ok=True)
    h = blake3.blake3(payload).hexdigest()
    (artifacts / f"{h}.parquet").write_bytes(payload)
    return artifacts, h


def _write(tmp_path: Path, doc: Any, name: str = "manifest.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_content_addressed_manifest_verifies(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts, h = _artifact(tmp_path)
    valid_doc["output_hashes"] = [{"hash": h, "path": f"{h}.parquet"}]
    manifest = _write(tmp_path, valid_doc)
    result = run_cli("verify", str(manifest), "--artifacts-dir", str(artifacts))
    assert result.returncode == 0, result.stdout + result.stderr
    assert last_line(result.stdout) == VERIFIED


def test_without_artifacts_dir_says_schema_only(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    _, h = _artifact(tmp_path)
    valid_doc["output_hashes"] = [{"hash": h}]
    result = run_cli("verify", str(_write(tmp_path, valid_doc)))
    assert result.returncode == 0
    # The manifest attests bytes: the verdict says they were not checked, not that none are attested.
    assert last_line(result.stdout) == ("VERIFIED (schema only — 1 output hash not checked: no --artifacts-dir given, "
                                        "unsigned)")
    assert "not checked" in result.stdout


def test_manifest_without_outputs_is_schema_only_even_with_dir(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts, _ = _artifact(tmp_path)
    result = run_cli("verify", str(_write(tmp_path, valid_doc)), "--artifacts-dir", str(artifacts))
    assert result.returncode == 0 and last_line(result.stdout) == SCHEMA_ONLY


def test_stdin(valid_doc: dict[str, Any]) -> None:
    result = run_cli("verify", "-", stdin=json.dumps(valid_doc).encode())
    assert result.returncode == 0 and last_line(result.stdout) == SCHEMA_ONLY_STDIN


@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        (lambda d: d.pop("program_hash"), "manifest_missing_required_field"),
        (lambda d: d.update(extra=1), "manifest_unknown_field"),
        (lambda d: d["producer"].update(host="h"), "manifest_unknown_field"),
        (lambda d: d.update(env_hash="Z" * 64), "manifest_invalid_field"),
        (lambda d: d.update(inputs_proof_class="weak"), "manifest_invalid_field"),
        (lambda d: d.pop("inputs_proof_class"), "inputs_pair_broken"),
        (lambda d: d.pop("inputs_hash"), "inputs_pair_broken"),
        (lambda d: d.update(manifest_version="0.2"), "manifest_unsupported_version"),
        (lambda d: d["subject"].update(model=""), "manifest_invalid_field"),
    ],
)
def test_every_schema_tamper_exits_1_with_its_code(tmp_path: Path, valid_doc: dict[str, Any], tamper: Any,
                                                   code: str) -> None:
    tamper(valid_doc)
    manifest = _write(tmp_path, valid_doc)
    result = run_cli("verify", str(manifest))
    assert result.returncode == 1
    assert last_line(result.stdout) == "NOT VERIFIED"
    assert code in result.stdout
    as_json = run_cli("verify", str(manifest), "--json")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["passed"] is False and report["level"] == "schema"
    assert code in {e["code"] for e in report["errors"]}
    assert all({"code", "message", "path"} <= set(e) for e in report["errors"])


def test_flipped_byte_fails(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts, h = _artifact(tmp_path)
    valid_doc["output_hashes"] = [{"hash": h, "path": f"{h}.parquet"}]
    target = artifacts / f"{h}.parquet"
    data = bytearray(target.read_bytes())
    data[3] ^= 0x01
    target.write_bytes(bytes(data))
    result = run_cli("verify", str(_write(tmp_path, valid_doc)), "--artifacts-dir", str(artifacts), "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["level"] == "bytes" and [e["code"] for e in report["errors"]] == ["artifact_hash_mismatch"]


def test_missing_artifact_is_a_failure_not_a_skip(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts, _ = _artifact(tmp_path)
    valid_doc["output_hashes"] = [{"hash": "d" * 64, "path": "gone.parquet"}]
    result = run_cli("verify", str(_write(tmp_path, valid_doc)), "--artifacts-dir", str(artifacts))
    assert result.returncode == 1
    assert "artifact_missing" in result.stdout and last_line(result.stdout) == "NOT VERIFIED"


def test_lookup_order_basename_then_hash_then_hash_parquet(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    payload = b"bytes"
    h = blake3.blake3(payload).hexdigest()
    for name in ("by-name.bin", h, f"{h}.parquet"):
        d = tmp_path / name.replace(".", "_")
        d.mkdir()
        (d / name).write_bytes(payload)
        valid_doc["output_hashes"] = [{"hash": h, "path": "some/dir/by-name.bin"}]
        assert run_cli("verify", str(_write(tmp_path, valid_doc)), "--artifacts-dir", str(d)).returncode == 0
    # The basename wins: a wrong file under the basename is a mismatch even if hash.parquet is right.
    d = tmp_path / "both"
    d.mkdir()
    (d / "by-name.bin").write_bytes(b"other")
    (d / f"{h}.parquet").write_bytes(payload)
    assert run_cli("verify", str(_write(tmp_path, valid_doc)), "--artifacts-dir", str(d)).returncode == 1


@pytest.mark.parametrize("content", [b"", b"{", b"\xff\xfe", b"[1,]", b'{"a":1,"a":2}', b"not json at all"])
def test_garbage_exits_2(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "garbage.json"
    path.write_bytes(content)
    result = run_cli("verify", str(path))
    assert result.returncode == 2
    assert "manifest_malformed_json" in result.stderr
    as_json = run_cli("verify", str(path), "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["errors"][0]["code"] == "manifest_malformed_json"


def test_missing_manifest_and_bad_arguments_exit_2(tmp_path: Path) -> None:
    result = run_cli("verify", str(tmp_path / "nope.json"))
    assert result.returncode == 2 and "manifest_missing" in result.stderr
    assert run_cli("verify").returncode == 2
    assert run_cli("verify", "x.json", "--level", "weird").returncode == 2
    assert run_cli("frobnicate").returncode == 2
    assert run_cli().returncode == 2


def test_schema_version_and_help() -> None:
    schema = run_cli("schema")
    assert schema.returncode == 0 and json.loads(schema.stdout)["title"] == "rocky-manifest v0.1"
    version = run_cli("--version")
    assert version.returncode == 0 and "recipe-attest" in version.stdout
    for command in ("digest", "schema", "verify", "show", "record"):
        helped = run_cli(command, "--help")
        assert helped.returncode == 0 and "usage: attest " + command in helped.stdout


@pytest.mark.parametrize(
    "doc",
    [{}, {"z": [1, {"b": None, "a": True}], "a": "ü"}, {"nested": {"deep": {"deeper": ["é", "日本", "\U0001f600"]}}}],
)
def test_digest_prints_the_documented_identity(tmp_path: Path, doc: Any) -> None:
    path = tmp_path / "doc.json"
    # Written with other key order and spacing: the identity must not care.
    path.write_text(json.dumps(doc, indent=3, sort_keys=False, ensure_ascii=True), encoding="utf-8")
    result = run_cli("digest", str(path))
    assert result.returncode == 0
    assert result.stdout.strip() == digest(doc)
    assert run_cli("digest", "-", stdin=json.dumps(doc).encode()).stdout.strip() == digest(doc)


def test_digest_of_the_empty_object_is_blake3_of_braces(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("  { }\n", encoding="utf-8")
    assert run_cli("digest", str(path)).stdout.strip() == blake3.blake3(b"{}").hexdigest()


def test_digest_garbage_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{nope", encoding="utf-8")
    assert run_cli("digest", str(path)).returncode == 2


def test_console_script_is_installed() -> None:
    script = Path(os.sys.executable).parent / "attest"
    assert script.exists()


def test_unreadable_table_references_exit_2_with_their_code(tmp_path: Path) -> None:
    missing = run_cli("verify", str(tmp_path / "no_table_here"))
    assert missing.returncode == 2 and "manifest_missing" in missing.stderr and "_delta_log" in missing.stderr
    unknown_catalog = run_cli("verify", "iceberg://no_such_catalog/ns.t", "--json")
    assert unknown_catalog.returncode == 2
    assert json.loads(unknown_catalog.stdout)["errors"][0]["code"] == "table_reference_invalid"
    malformed = run_cli("verify", "iceberg://catalog-without-table")
    assert malformed.returncode == 2 and "table_reference_invalid" in malformed.stderr


# ---- honest outcomes: --level bytes means bytes -------------------------------------------------------------------
@pytest.mark.parametrize("command", ["verify", "show", "lineage", "record", "audit"])
def test_a_file_uri_decoding_to_a_nul_is_a_reference_error_not_an_internal_one(command: str) -> None:
    """``file:///t%00`` decodes to a path no file system holds: every look at it raised ValueError, reported as
    ``internal_error`` by each command (and as an audit's error line)."""
    extra = ["--model", "m", "--sql", "select 1"] if command == "record" else ["--json"] if command == "audit" else []
    out = run_cli(command, "file:///tmp/t%00", *extra)
    assert out.returncode == 2, out.stderr
    assert "internal_error" not in out.stdout + out.stderr
    assert "table_reference_invalid" in out.stdout + out.stderr


def test_level_bytes_without_artifacts_is_an_error_not_a_schema_check(tmp_path: Path,
                                                                      valid_doc: dict[str, Any]) -> None:
    _, h = _artifact(tmp_path)
    valid_doc["output_hashes"] = [{"hash": h}]
    for args, stdin in ((["-"], json.dumps(valid_doc).encode()), ([str(_write(tmp_path, valid_doc))], None)):
        result = run_cli("verify", *args, "--level", "bytes", stdin=stdin)
        assert result.returncode == 2 and "artifacts_dir_required" in result.stderr and result.stdout == ""
        as_json = run_cli("verify", *args, "--level", "bytes", "--json", stdin=stdin)
        assert as_json.returncode == 2
        report = json.loads(as_json.stdout)  # exactly one JSON object
        assert [e["code"] for e in report["errors"]] == ["artifacts_dir_required"] and report["passed"] is False


def test_level_bytes_on_a_manifest_without_output_hashes_fails(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts, _ = _artifact(tmp_path)
    manifest = _write(tmp_path, valid_doc)
    result = run_cli("verify", str(manifest), "--artifacts-dir", str(artifacts), "--level", "bytes", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert [e["code"] for e in report["errors"]] == ["bytes_not_attested"]
    assert report["requested_level"] == "bytes" and report["level"] == "schema" and report["verdict"] == "NOT VERIFIED"
    # Without --level the same manifest is honestly "schema only", exit 0.
    assert last_line(run_cli("verify", str(manifest), "--artifacts-dir", str(artifacts)).stdout) == SCHEMA_ONLY


def test_level_schema_never_reads_artifacts(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts, _ = _artifact(tmp_path)
    valid_doc["output_hashes"] = [{"hash": "e" * 64}]  # no such artifact: a bytes check would fail
    manifest = _write(tmp_path, valid_doc)
    result = run_cli("verify", str(manifest), "--artifacts-dir", str(artifacts), "--level", "schema")
    assert result.returncode == 0 and last_line(result.stdout) == ("VERIFIED (schema only — 1 output hash not "
                                                                   "checked: --level schema, unsigned)")


def test_table_only_options_on_a_manifest_exit_2(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    manifest = str(_write(tmp_path, valid_doc))
    for extra in (["--level", "files"], ["--version", "3"], ["--snapshot-id", "5"]):
        result = run_cli("verify", manifest, *extra, "--json")
        assert result.returncode == 2 and json.loads(result.stdout)["verdict"] == "UNREADABLE"


def test_offline_check_of_a_partitioned_table_directory(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    table = tmp_path / "orders"
    files = {"region=EU/part-0.parquet": b"eu rows", "region=US/part-0.parquet": b"us rows",
             "region=a b/part-1.parquet": b"spaced rows"}
    for rel, data in files.items():
        (table / rel).parent.mkdir(parents=True, exist_ok=True)
        (table / rel).write_bytes(data)
    valid_doc["output_hashes"] = [{"hash": blake3.blake3(d).hexdigest(), "path": p} for p, d in sorted(files.items())]
    manifest = _write(tmp_path, valid_doc)
    result = run_cli("verify", str(manifest), "--artifacts-dir", str(table))
    assert result.returncode == 0 and last_line(result.stdout) == VERIFIED, result.stdout
    (table / "region=US/part-0.parquet").unlink()
    result = run_cli("verify", str(manifest), "--artifacts-dir", str(table), "--json")
    assert result.returncode == 1
    [error] = json.loads(result.stdout)["errors"]
    assert error["code"] == "artifact_missing" and error["path"] == "$.output_hashes[1]"
    assert "tried region=US/part-0.parquet, part-0.parquet, " in error["message"]


# ---- hostile JSON: a coded malformed input, exit 2, one JSON object with --json ------------------------------------
HOSTILE = {
    "deep-array": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "unclosed": b"[" * 100_000,
    "lone-surrogate": b'{"manifest_version": "0.1", "producer": {"name": "\\ud800", "version": "1"}}',
    "out-of-range": b'{"manifest_version": "0.1", "n": 1e400}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_json_is_a_coded_malformed_input(tmp_path: Path, name: str) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(HOSTILE[name])
    for args, stdin in (([str(path)], None), (["-"], HOSTILE[name])):
        result = run_cli("verify", *args, stdin=stdin)
        assert result.returncode == 2 and "manifest_malformed_json" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr
        as_json = run_cli("verify", *args, "--json", stdin=stdin)
        assert as_json.returncode == 2
        report = json.loads(as_json.stdout)
        assert report["verdict"] == "UNREADABLE" and report["errors"][0]["code"] == "manifest_malformed_json"
        digest_result = run_cli("digest", *args, stdin=stdin)
        assert digest_result.returncode == 2 and "manifest_malformed_json" in digest_result.stderr
        assert digest_result.stdout == "" and "Traceback" not in digest_result.stderr


def test_a_lone_surrogate_in_a_valid_manifest_is_refused_by_verify_and_digest(tmp_path: Path,
                                                                             valid_doc: dict[str, Any]) -> None:
    # Formerly accepted by verify (schema only, exit 0) and refused by digest: now refused everywhere.
    valid_doc["subject"]["model"] = "orders\ud83d"
    path = _write(tmp_path, valid_doc)  # json.dumps writes the \ud83d escape
    assert "\\ud83d" in path.read_text()
    for command in ("verify", "digest"):
        result = run_cli(command, str(path))
        assert result.returncode == 2 and "lone surrogate" in result.stderr


@pytest.mark.slow
def test_a_document_beyond_the_size_limit_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    from attest.model import MAX_DOCUMENT_BYTES

    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_DOCUMENT_BYTES + 10 * 2**20)  # sparse: no disk used
    for command in (["verify", "--json"], ["digest"]):
        result = run_cli(command[0], str(path), *command[1:])
        assert result.returncode == 2
        out = json.loads(result.stdout)["errors"][0]["message"] if "--json" in command else result.stderr
        assert "more than the 268,435,456 this reader accepts" in out


@pytest.mark.parametrize(("text", "canonical"), [
    ("[0, -0, 1e-7, 1E+30, 18446744073709551616]", b"[0,-0.0,1e-7,1e+30,1.8446744073709552e+19]"),
    ('{"b": [1.0, 100, 1e2], "a": -1.5e-300}', b'{"a":-1.4999999999999998e-300,"b":[1.0,100,100.0]}'),
])
def test_digest_hashes_numbers_as_the_reference(text: str, canonical: bytes) -> None:
    result = run_cli("digest", "-", stdin=text.encode())
    assert result.returncode == 0 and result.stdout.strip() == blake3.blake3(canonical).hexdigest()


@pytest.mark.parametrize("kind", ["absent", "a file"])
def test_an_artifacts_dir_that_is_no_directory_is_a_wrong_argument(tmp_path: Path, valid_doc: dict[str, Any],
                                                                   kind: str) -> None:
    """The directory the user named is missing (or a file): exit 2 with its own code, never ``artifact_missing``
    (that code is a failed check inside a directory, exit 1, as docs/errors.md says)."""
    _, h = _artifact(tmp_path)
    valid_doc["output_hashes"] = [{"hash": h, "path": f"{h}.parquet"}]
    named = tmp_path / "no-such-dir"
    if kind == "a file":
        named.write_bytes(b"not a folder")
    manifest = str(_write(tmp_path, valid_doc))
    result = run_cli("verify", manifest, "--artifacts-dir", str(named), "--json")
    error = json.loads(result.stdout)["errors"][0]
    assert result.returncode == 2 and error["code"] == "artifacts_dir_missing", result.stdout
    assert str(named) in error["message"]
    text = run_cli("verify", manifest, "--artifacts-dir", str(named))
    assert text.returncode == 2 and "attest: artifacts_dir_missing: --artifacts-dir" in text.stderr
