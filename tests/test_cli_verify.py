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

VERIFIED = "VERIFIED"
SCHEMA_ONLY = "VERIFIED (schema only — no byte-identity attested)"


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
    assert last_line(result.stdout) == SCHEMA_ONLY
    assert "not checked" in result.stdout


def test_manifest_without_outputs_is_schema_only_even_with_dir(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    artifacts, _ = _artifact(tmp_path)
    result = run_cli("verify", str(_write(tmp_path, valid_doc)), "--artifacts-dir", str(artifacts))
    assert result.returncode == 0 and last_line(result.stdout) == SCHEMA_ONLY


def test_stdin(valid_doc: dict[str, Any]) -> None:
    result = run_cli("verify", "-", stdin=json.dumps(valid_doc).encode())
    assert result.returncode == 0 and last_line(result.stdout) == SCHEMA_ONLY


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
