"""Attacks on signed table attestations by someone who can write the table's storage but holds no trusted key.

Each attack is made the way such an actor would (commits, property edits, file swaps), then ``attest verify`` runs
as a user runs it with ``--key``: a non-zero exit and the expected code. Without a key nothing about signatures is
claimed, so some of these attacks verify there (by design, docs/signing.md) — the tests say which.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog.sql import SqlCatalog

from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import SIDECAR_DIR, DeltaCarrier, attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM, codes, latest, metadata_commit, remove_properties, rows, verify
from tests.adversarial.test_iceberg_attacks import REF, catalog, iceberg_env  # noqa: F401  (fixtures)

KEY = generate_keypair("ed25519")  # the trusted CI key (module-wide: key generation is cheap, files are per test)


@pytest.fixture
def pub(tmp_path: Path) -> str:
    path = tmp_path / "ci.pub"
    path.write_bytes(KEY.public_pem)
    return str(path)


def _signer(pair: KeyPair = KEY) -> PemSigner:
    return PemSigner.load(pair.private_pem)


def signed(path: Path, **kw: Any) -> Path:
    write_deltalake(str(path), rows(), partition_by=["p"], mode="append" if path.exists() else "error")
    attest_after_write(str(path), model="orders", program_hash=PROGRAM, signer=_signer(), **kw)
    return path


def config(path: Path) -> dict[str, str]:
    return dict(DeltaTable(str(path)).metadata().configuration)


def envelope(path: Path) -> Path:
    return path / SIDECAR_DIR / f"{config(path)[props.KEY_ENVELOPE]}.dsse.json"


def refused_with_key(path: Path | str, pub: str, code: str, *args: str) -> dict[str, Any]:
    rc, doc = verify(str(path), "--key", pub, *args)
    assert rc == 1 and codes(doc) == [code], (code, doc)
    return doc


def test_control_a_signed_table_verifies_with_the_key(tmp_path: Path, pub: str) -> None:
    rc, doc = verify(str(signed(tmp_path / "t")), "--key", pub)
    assert rc == 0 and doc["signer"] == KEY.key_id and doc["level"] == "bytes", doc


# ---- stripping the signature -------------------------------------------------------------------------------------
def test_signature_stripped_from_the_metadata(tmp_path: Path, pub: str) -> None:
    path = signed(tmp_path / "t")
    remove_properties(path, [props.KEY_ENVELOPE])
    rc, doc = verify(str(path))
    assert rc == 0 and not any("signature" in n for n in doc["notes"]), doc  # unsigned now, and nothing claims more
    refused_with_key(path, pub, "signature_missing")


def test_envelope_file_deleted(tmp_path: Path, pub: str) -> None:
    path = signed(tmp_path / "t")
    envelope(path).unlink()
    doc = refused_with_key(path, pub, "signature_missing")
    assert "missing" in doc["errors"][0]["message"]
    # Even a policy that does not require signing this table refuses a signature that was named and is gone.
    policy = tmp_path / "p.toml"
    policy.write_text(f'require_signed = []\n[[keys]]\npublic_key = "{Path(pub).name}"\n')
    rc, doc = verify(str(path), "--policy", str(policy))
    assert rc == 1 and codes(doc) == ["signature_missing"], doc


def test_attestation_replaced_by_an_unsigned_one(tmp_path: Path, pub: str) -> None:
    path = signed(tmp_path / "t")
    attest_after_write(str(path), model="orders", program_hash="b" * 64)  # same version, no key
    assert verify(str(path))[0] == 0
    refused_with_key(path, pub, "signature_missing")


# ---- swapping envelopes --------------------------------------------------------------------------------------------
def _point_at(path: Path, data: bytes) -> None:
    """Store ``data`` as an envelope of ``path`` and make the metadata name it (content address kept)."""
    from attest.canonical import blake3_hex

    digest = blake3_hex(data)
    (path / SIDECAR_DIR / f"{digest}.dsse.json").write_bytes(data)
    metadata_commit(path, lambda m: m["configuration"].update({props.KEY_ENVELOPE: digest}))


def test_envelope_swapped_in_from_another_table(tmp_path: Path, pub: str) -> None:
    a, b = signed(tmp_path / "a"), signed(tmp_path / "b")
    _point_at(b, envelope(a).read_bytes())
    doc = refused_with_key(b, pub, "statement_mismatch")
    assert "/a@" in doc["errors"][0]["message"]


def test_envelope_swapped_in_from_another_version(tmp_path: Path, pub: str) -> None:
    path = signed(tmp_path / "t")
    old = envelope(path).read_bytes()
    signed(path)  # more data, attested and signed for the new version
    assert verify(str(path), "--key", pub)[0] == 0
    _point_at(path, old)
    refused_with_key(path, pub, "statement_mismatch")


def test_envelope_of_an_earlier_attestation_of_the_same_version(tmp_path: Path, pub: str) -> None:
    """Re-attested (other program) by someone without the key, keeping the old trusted envelope: another manifest."""
    path = signed(tmp_path / "t")
    old = envelope(path).read_bytes()
    attest_after_write(str(path), model="orders", program_hash="c" * 64)
    _point_at(path, old)
    doc = refused_with_key(path, pub, "statement_mismatch")
    assert "another manifest" in doc["errors"][0]["message"]


def test_sidecar_rewritten_consistently_under_a_kept_envelope(tmp_path: Path, pub: str) -> None:
    """A new sidecar (a file dropped from the list is the classic goal) with every hash updated: the signed binding
    names the old sidecar digest and manifest."""
    from attest.canonical import blake3_hex, canonical_bytes

    path = signed(tmp_path / "t")
    cfg = config(path)
    sidecar = json.loads((path / cfg[props.KEY_SIDECAR_PATH]).read_bytes())
    sidecar["inputs"] = [{"table": "delta:forged", "proof_class": "heuristic", "version": "9"}]
    data = canonical_bytes(sidecar)
    digest = blake3_hex(data)
    (path / SIDECAR_DIR / f"{digest}.json").write_bytes(data)
    moved = {props.KEY_SIDECAR_HASH: digest, props.KEY_SIDECAR_PATH: f"{SIDECAR_DIR}/{digest}.json"}
    metadata_commit(path, lambda m: m["configuration"].update(moved))
    rc, doc = verify(str(path), "--key", pub)
    assert rc == 1 and "statement_mismatch" in codes(doc), doc


# ---- editing the envelope key ------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["../../../etc/passwd", "A" * 64, "a" * 63, "g" * 64, " " + "a" * 63,
                                   "a" * 64 + "/../x"])
def test_malformed_envelope_key_is_tampering_even_without_a_key(tmp_path: Path, pub: str, value: str) -> None:
    path = signed(tmp_path / "t")
    metadata_commit(path, lambda m: m["configuration"].update({props.KEY_ENVELOPE: value}))
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and codes(doc) == ["carrier_tampered"], doc
    rc, doc = verify(str(path), "--key", pub)
    assert rc == 1 and "carrier_tampered" in codes(doc), doc


def test_envelope_key_naming_another_file(tmp_path: Path, pub: str) -> None:
    path = signed(tmp_path / "t")
    sidecar_digest = config(path)[props.KEY_SIDECAR_HASH]  # an existing file, but <digest>.json, not .dsse.json
    metadata_commit(path, lambda m: m["configuration"].update({props.KEY_ENVELOPE: sidecar_digest}))
    refused_with_key(path, pub, "signature_missing")
    metadata_commit(path, lambda m: m["configuration"].update({props.KEY_ENVELOPE: "0" * 64}))
    refused_with_key(path, pub, "signature_missing")


def test_envelope_symlinked_out_of_the_table(tmp_path: Path, pub: str) -> None:
    """The envelope file replaced by a symlink to a signed envelope elsewhere: never followed out of the root."""
    other = signed(tmp_path / "other")
    path = signed(tmp_path / "t")
    target = envelope(path)
    target.unlink()
    target.symlink_to(envelope(other))
    rc, doc = verify(str(path), "--key", pub)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc  # the link is not followed: no envelope there


# ---- downgrades: a policy that requires signing refuses what cannot be signed ------------------------------------
def test_downgrade_to_a_foreign_attestation(tmp_path: Path, pub: str) -> None:
    """Every recipe_attest.* key removed and the producer renamed, to pass as another producer's attestation
    (schema level, never signed): the history shows it replaced ours — tampering — and with a key it is refused."""
    path = signed(tmp_path / "t")
    ours = [k for k in config(path) if k.startswith(props.CARRIER_PREFIX)]

    def downgrade(meta: dict[str, Any]) -> None:
        for key in ours:
            meta["configuration"].pop(key)
        meta["configuration"][props.PREFIX + "producer.name"] = "rocky"

    metadata_commit(path, downgrade)
    rc, doc = verify(str(path), "--level", "schema")
    assert rc == 1 and doc["origin"] == "foreign" and codes(doc) == ["carrier_tampered"], doc
    rc, doc = verify(str(path), "--key", pub, "--level", "schema")
    assert rc == 1 and "signature_missing" in codes(doc), doc


def test_a_genuinely_foreign_attestation_fails_a_signing_policy(tmp_path: Path, pub: str) -> None:
    """Another producer's properties (no binding, never signed) verify at schema level without a key; a policy that
    requires signing refuses them."""
    from tests.delta.test_other_layouts import ROCKY

    path = tmp_path / "t"
    write_deltalake(str(path), rows(), partition_by=["p"])
    DeltaTable(str(path)).alter.set_table_properties(ROCKY, raise_if_not_exists=False)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["origin"] == "foreign", doc
    refused_with_key(path, pub, "signature_missing")


def test_downgrade_to_the_legacy_layout(tmp_path: Path, pub: str) -> None:
    """The attestation rewritten in the first-wave layout (binding under recipe_manifest._*), which had no
    signatures: it verifies labelled legacy without a key, and is refused with one."""
    path = signed(tmp_path / "t")
    cfg = config(path)

    def downgrade(meta: dict[str, Any]) -> None:
        conf = meta["configuration"]
        for key in [k for k in conf if k.startswith(props.CARRIER_PREFIX)]:
            conf.pop(key)
        conf.update({props.LEGACY_KEY_VERSION: cfg[props.KEY_VERSION],
                     props.LEGACY_KEY_SIDECAR_PATH: cfg[props.KEY_SIDECAR_PATH],
                     props.LEGACY_KEY_SIDECAR_HASH: cfg[props.KEY_SIDECAR_HASH],
                     props.LEGACY_KEY_OUTPUTS_COUNT: cfg[props.KEY_OUTPUTS_COUNT],
                     props.LEGACY_KEY_OUTPUTS_WHERE: "sidecar"})

    metadata_commit(path, downgrade)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["origin"] == "legacy", doc
    refused_with_key(path, pub, "signature_missing")
    # Keeping the envelope key beside first-wave keys is a mix of layouts: tampering.
    metadata_commit(path, lambda m: m["configuration"].update({props.KEY_ENVELOPE: cfg[props.KEY_ENVELOPE]}))
    assert "carrier_tampered" in codes(verify(str(path), "--key", pub)[1])


def test_downgrade_to_an_unsigned_detached_pointer(tmp_path: Path, pub: str) -> None:
    """A detached pointer for the current version, written by hand without the envelope key."""
    path = signed(tmp_path / "t")
    cfg = config(path)
    keys = {k: v for k, v in cfg.items() if (k.startswith(props.PREFIX) or k.startswith(props.CARRIER_PREFIX))
            and k != props.KEY_ENVELOPE}
    remove_properties(path, sorted(set(cfg) & set(keys) | {props.KEY_ENVELOPE}))
    version = latest(path)
    keys[props.KEY_VERSION] = cfg[props.KEY_VERSION]
    pointer = path / SIDECAR_DIR / "versions" / f"{cfg[props.KEY_VERSION]}.json"
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(json.dumps({"format": "recipe-attest-detached", "version": 1,
                                   "table_version": cfg[props.KEY_VERSION], "properties": keys}))
    assert latest(path) == version
    rc, doc = verify(str(path))
    assert rc == 0, doc  # a consistent unsigned attestation...
    refused_with_key(path, pub, "signature_missing")  # ...that no trusted key signed


def test_commit_log_rewritten_to_drop_the_signed_attestation(tmp_path: Path, pub: str) -> None:
    """The attestation commit deleted from the log (storage access allows it): unattested, never signed."""
    path = signed(tmp_path / "t")
    (path / commit_name(latest(path))).unlink()
    rc, doc = verify(str(path), "--key", pub)
    assert rc == 1 and codes(doc) == ["unattested"], doc


# ---- Iceberg ------------------------------------------------------------------------------------------------------
def test_iceberg_signature_stripped_from_a_follow_up_summary(catalog: SqlCatalog, pub: str) -> None:  # noqa: F811
    from carriers.iceberg.carrier import IcebergCarrier
    from carriers.iceberg.carrier import attest_after_write as iceberg_attest
    from tests.iceberg.conftest import CATALOG, rewrite_metadata
    from tests.iceberg.conftest import rows as ice_rows

    table = catalog.create_table("ns.t", schema=ice_rows(0).schema)
    table.append(ice_rows(0))
    iceberg_attest(IcebergCarrier(table, catalog_name=CATALOG), model="orders", program_hash=PROGRAM,
                   signer=_signer())
    assert verify(REF, "--key", pub)[0] == 0

    def strip(doc: dict[str, Any]) -> None:
        for snap in doc["snapshots"]:
            snap["summary"].pop(props.KEY_ENVELOPE, None)

    rewrite_metadata(catalog, table, strip)
    rc, doc = verify(REF)
    assert rc == 0, doc
    rc, doc = verify(REF, "--key", pub)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc


# ---- any byte, any value (property tests on one signed table, edited in place and restored) ----------------------
@pytest.fixture(scope="module")
def template() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="attest-signed-"))
    path = signed(root / "t")
    assert verify_table(DeltaCarrier(str(path)), policy=TrustPolicy.from_public_key(KEY.public_pem)).passed
    yield path
    shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_edited_byte_of_the_envelope_never_verifies(template: Path, data: st.DataObject) -> None:
    file = envelope(template)
    original = file.read_bytes()
    index = data.draw(st.integers(0, len(original) - 1), label="index")
    flip = data.draw(st.integers(1, 255), label="xor")
    raw = bytearray(original)
    raw[index] ^= flip
    try:
        file.write_bytes(bytes(raw))
        report = verify_table(DeltaCarrier(str(template)), policy=TrustPolicy.from_public_key(KEY.public_pem))
        assert not report.passed and [e.code.value for e in report.errors] == ["signature_invalid"], report.human()
    finally:
        file.write_bytes(original)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(max_size=70) | st.sampled_from(["", "0" * 64, "f" * 64]))
def test_any_edited_envelope_key_never_verifies_under_the_key(template: Path, value: str) -> None:
    if value == config(template)[props.KEY_ENVELOPE]:
        return
    n = metadata_commit(template, lambda m: m["configuration"].update({props.KEY_ENVELOPE: value}))
    try:
        report = verify_table(DeltaCarrier(str(template)), policy=TrustPolicy.from_public_key(KEY.public_pem))
        assert not report.passed, (value, report.human())
    finally:
        (template / commit_name(n)).unlink()  # restore: the edit was the newest commit


def test_the_template_still_verifies_after_the_edits(template: Path) -> None:
    report = verify_table(DeltaCarrier(str(template)), policy=TrustPolicy.from_public_key(KEY.public_pem))
    assert report.passed and report.signer == KEY.key_id, report.human()
