"""`attest keygen` and `attest verify MANIFEST --key/--policy` as a user runs them: verdicts, codes, exit codes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import blake3
import pytest

from attest.model import Manifest
from attest.signing.keys import PASSWORD_ENV, PemSigner, PublicKey
from carriers.standalone import StandaloneCarrier
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


def _keygen(tmp_path: Path, name: str, *extra: str) -> str:
    out = run_cli("keygen", "--out", str(tmp_path / name), "--json", *extra)
    assert out.returncode == 0, out.stderr
    key_id: str = json.loads(out.stdout)["key_id"]
    return key_id


def _signed_dir(tmp_path: Path, doc: dict[str, Any], key: str = "ci") -> Path:
    """A standalone carrier directory with one artifact and a manifest signed by ``key``."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    payload = b"PAR1 bytes PAR1"
    digest = blake3.blake3(payload).hexdigest()
    (out / f"{digest}.parquet").write_bytes(payload)
    doc["output_hashes"] = [{"hash": digest, "path": f"{digest}.parquet"}]
    StandaloneCarrier(out).write(Manifest.from_dict(doc), signer=PemSigner.load(tmp_path / f"{key}.key"))
    return out


def _verdict(out: subprocess.CompletedProcess[str]) -> str:
    return out.stdout.strip().splitlines()[-1]


def test_keygen_writes_a_key_pair_and_prints_its_id(tmp_path: Path) -> None:
    out = run_cli("keygen", "--out", str(tmp_path / "ci"))
    assert out.returncode == 0, out.stderr
    private, public = tmp_path / "ci.key", tmp_path / "ci.pub"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    key_id = PublicKey.load(public).key_id
    assert out.stdout.strip().splitlines()[-1] == f"key id: {key_id}"
    assert PemSigner.load(private).key_id == key_id and PemSigner.load(private).type == "ed25519"
    assert private.read_bytes().decode() not in out.stdout + out.stderr


def test_keygen_p256_json_and_no_overwrite(tmp_path: Path) -> None:
    out = run_cli("keygen", "--type", "p256", "--out", str(tmp_path / "k"), "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["type"] == "ecdsa-p256" and report["encrypted"] is False
    assert report["key_id"] == PublicKey.load(tmp_path / "k.pub").key_id
    before = (tmp_path / "k.key").read_bytes()
    again = run_cli("keygen", "--out", str(tmp_path / "k"), "--json")
    assert again.returncode == 2 and json.loads(again.stdout)["errors"][0]["code"] == "key_invalid"
    assert (tmp_path / "k.key").read_bytes() == before
    nowhere = run_cli("keygen", "--out", str(tmp_path / "missing-dir" / "k"))
    assert nowhere.returncode == 2 and "key_invalid" in nowhere.stderr and "Traceback" not in nowhere.stderr


def test_keygen_encrypt_takes_the_password_from_the_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != PASSWORD_ENV}
    out = subprocess.run([sys.executable, "-m", "attest.cli", "keygen", "--out", str(tmp_path / "e"), "--encrypt"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 2 and PASSWORD_ENV in out.stderr and not (tmp_path / "e.key").exists()
    env[PASSWORD_ENV] = "correct horse"
    out = subprocess.run([sys.executable, "-m", "attest.cli", "keygen", "--out", str(tmp_path / "e"), "--encrypt"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "encrypted" in out.stdout and "correct horse" not in out.stdout
    assert b"ENCRYPTED" in (tmp_path / "e.key").read_bytes()
    assert PemSigner.load(tmp_path / "e.key", environ={PASSWORD_ENV: "correct horse"}).key_id == \
        PublicKey.load(tmp_path / "e.pub").key_id


def test_signed_directory_verifies_with_its_key(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    key_id = _keygen(tmp_path, "ci")
    out_dir = _signed_dir(tmp_path, valid_doc)
    out = run_cli("verify", str(out_dir), "--key", str(tmp_path / "ci.pub"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert _verdict(out) == f"VERIFIED (bytes, signed by {key_id})"
    as_json = json.loads(run_cli("verify", str(out_dir), "--key", str(tmp_path / "ci.pub"), "--json").stdout)
    assert as_json["passed"] and as_json["signer"] == key_id and as_json["signature"]["signed"] is True
    schema_only = run_cli("verify", str(out_dir / "manifest.json"), "--key", str(tmp_path / "ci.pub"))
    # The manifest attests bytes that no --artifacts-dir let us check: said so, beside the signer.
    assert _verdict(schema_only) == ("VERIFIED (schema only — 1 output hash not checked: no --artifacts-dir given, "
                                     f"signed by {key_id})")


def test_without_a_key_the_signature_is_not_claimed(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    _keygen(tmp_path, "ci")
    out = run_cli("verify", str(_signed_dir(tmp_path, valid_doc)))
    assert out.returncode == 0 and _verdict(out) == "VERIFIED (bytes, signature not checked)"
    assert "signature was not checked" in out.stdout


@pytest.mark.parametrize("case", ["other key", "envelope byte", "manifest byte", "no envelope", "revoked",
                                  "outside globs", "expired"])
def test_every_failure_is_exit_1_with_its_code(tmp_path: Path, valid_doc: dict[str, Any], case: str) -> None:
    _keygen(tmp_path, "ci")
    _keygen(tmp_path, "other")
    out_dir = _signed_dir(tmp_path, valid_doc)
    envelope, manifest = out_dir / "manifest.json.dsse.json", out_dir / "manifest.json"
    args = ["--key", str(tmp_path / "ci.pub")]
    expected = {"other key": "signature_invalid", "envelope byte": "signature_invalid",
                "manifest byte": "statement_mismatch", "no envelope": "signature_missing", "revoked": "key_revoked",
                "outside globs": "signer_not_allowed", "expired": "key_expired"}[case]
    if case == "other key":
        args = ["--key", str(tmp_path / "other.pub")]
    elif case == "envelope byte":
        data = bytearray(envelope.read_bytes())
        position = data.index(b'"sig":"') + 20
        data[position] = ord("A") if data[position] != ord("A") else ord("B")
        envelope.write_bytes(bytes(data))
    elif case == "manifest byte":
        manifest.write_text(manifest.read_text().replace('"orders_clean"', '"orders_dirty"'))
    elif case == "no envelope":
        envelope.unlink()
    else:
        extra = {"revoked": "revoked = true", "outside globs": 'models = ["finance_*"]',
                 "expired": "not_after = 2020-01-01T00:00:00Z"}[case]
        (tmp_path / "trust.toml").write_text(f'[[keys]]\npublic_key = "ci.pub"\n{extra}\n')
        args = ["--policy", str(tmp_path / "trust.toml")]
    out = run_cli("verify", str(out_dir), *args, "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["passed"] is False and expected in [e["code"] for e in report["errors"]]
    human = run_cli("verify", str(out_dir), *args)
    assert human.returncode == 1 and _verdict(human) == "NOT VERIFIED" and f"{expected}:" in human.stdout


def test_policy_file_verifies(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    key_id = _keygen(tmp_path, "ci")
    (tmp_path / "trust.toml").write_text(f'[[keys]]\nid = "{key_id}"\npublic_key = "ci.pub"\n'
                                         'tables = ["manifest:orders_*"]\n')
    out = run_cli("verify", str(_signed_dir(tmp_path, valid_doc)), "--policy", str(tmp_path / "trust.toml"))
    assert out.returncode == 0 and _verdict(out) == f"VERIFIED (bytes, signed by {key_id})"


def test_stdin_manifest_with_an_envelope_file(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    key_id = _keygen(tmp_path, "ci")
    out_dir = _signed_dir(tmp_path, valid_doc)
    data = (out_dir / "manifest.json").read_bytes()
    out = run_cli("verify", "-", "--key", str(tmp_path / "ci.pub"), "--envelope",
                  str(out_dir / "manifest.json.dsse.json"), stdin=data)
    assert out.returncode == 0 and key_id in _verdict(out)
    missing = run_cli("verify", "-", "--key", str(tmp_path / "ci.pub"), stdin=data)
    assert missing.returncode == 1 and "signature_missing" in missing.stdout


@pytest.mark.parametrize("case", ["missing key", "private key as public", "bad policy", "missing policy",
                                  "table target"])
def test_unreadable_key_or_policy_is_exit_2_with_one_json_object(tmp_path: Path, valid_doc: dict[str, Any],
                                                                  case: str) -> None:
    _keygen(tmp_path, "ci")
    out_dir = _signed_dir(tmp_path, valid_doc)
    (tmp_path / "bad.toml").write_text("[[keys]]\npublic_key = 'ci.pub'\nrevokd = true\n")
    target = str(out_dir)
    args, code = {
        "missing key": (["--key", str(tmp_path / "nope.pub")], "key_invalid"),
        "private key as public": (["--key", str(tmp_path / "ci.key")], "key_invalid"),
        "bad policy": (["--policy", str(tmp_path / "bad.toml")], "policy_invalid"),
        "missing policy": (["--policy", str(tmp_path / "nope.toml")], "policy_invalid"),
        # A table's envelope is the one its metadata names: --envelope is refused, never silently ignored.
        "table target": (["--key", str(tmp_path / "ci.pub"), "--envelope", str(tmp_path / "e.json")],
                         "invalid_argument"),
    }[case]
    if case == "table target":
        (tmp_path / "table" / "_delta_log").mkdir(parents=True)
        target = str(tmp_path / "table")
    out = run_cli("verify", target, *args, "--json")
    assert out.returncode == 2, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["verdict"] == "UNREADABLE" and report["errors"][0]["code"] == code
    human = run_cli("verify", target, *args)
    assert human.returncode == 2 and f"attest: {code}:" in human.stderr and "Traceback" not in human.stderr


def test_key_and_policy_are_exclusive(tmp_path: Path) -> None:
    out = run_cli("verify", "m.json", "--key", "a.pub", "--policy", "t.toml", cwd=tmp_path)
    assert out.returncode == 2 and "not allowed with" in out.stderr


def test_commands_that_do_not_sign_never_load_cryptography(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    (tmp_path / "m.json").write_text(json.dumps(valid_doc))
    for argv in (["digest", str(tmp_path / "m.json")], ["verify", str(tmp_path / "m.json")]):
        code = ("import sys\nfrom attest.cli import main\n"
                f"rc = main({argv!r})\n"
                "print('LOADED' if any(m.startswith(('cryptography', 'attest.signing')) for m in sys.modules) "
                "else 'LAZY', rc)")
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert out.stdout.strip().splitlines()[-1] == "LAZY 0", out.stdout + out.stderr


def test_signed_verify_needs_no_engine(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    # The verifier-only install (blake3, jsonschema, cryptography) checks signatures: every engine made unimportable.
    from tests.test_packaging import ENGINES

    key_id = _keygen(tmp_path, "ci")
    out_dir = _signed_dir(tmp_path, valid_doc)
    code = ("import sys\n"
            f"for m in {ENGINES!r}: sys.modules[m] = None\n"
            "from attest.cli import main\n"
            f"sys.exit(main(['verify', {str(out_dir)!r}, '--key', {str(tmp_path / 'ci.pub')!r}]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert _verdict(out) == f"VERIFIED (bytes, signed by {key_id})"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("what", ["fifo", "link to /dev/zero"])
def test_an_envelope_beside_the_manifest_that_is_no_file_never_hangs(tmp_path: Path, valid_doc: dict[str, Any],
                                                                     what: str) -> None:
    """A directory's envelope swapped for a FIFO blocked `verify --key` forever; a link to /dev/zero read without
    end. Neither is read: the signature is refused, coded, at once."""
    import os

    _keygen(tmp_path, "ci")
    out_dir = _signed_dir(tmp_path, valid_doc)
    envelope = out_dir / "manifest.json.dsse.json"
    envelope.unlink()
    if what == "fifo":
        os.mkfifo(envelope)
    else:
        envelope.symlink_to("/dev/zero")
    out = run_cli("verify", str(out_dir), "--key", str(tmp_path / "ci.pub"), "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 2 and [e["code"] for e in doc["errors"]] == ["signature_invalid"], out.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("what", ["fifo", "link to /dev/zero"])
def test_a_directory_manifest_that_is_no_file_never_hangs(tmp_path: Path, what: str) -> None:
    import os

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    if what == "fifo":
        os.mkfifo(out_dir / "manifest.json")
    else:
        (out_dir / "manifest.json").symlink_to("/dev/zero")
    out = run_cli("verify", str(out_dir), "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 2 and [e["code"] for e in doc["errors"]] == ["manifest_missing"], out.stdout
    assert "not a regular file" in doc["errors"][0]["message"]


def test_a_manifest_named_on_the_command_line_may_be_a_pipe(tmp_path: Path, valid_doc: dict[str, Any]) -> None:
    """`attest verify <(...)`: a path the user names is read as given, pipes included (a directory's own manifest
    is the one held to regular files)."""
    import os
    import threading

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    data = json.dumps(valid_doc).encode()

    def feed() -> None:
        with open(pipe, "wb") as handle:
            handle.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = run_cli("verify", str(pipe), "--json")
    writer.join(10)
    assert out.returncode == 0 and json.loads(out.stdout)["passed"], out.stdout + out.stderr
