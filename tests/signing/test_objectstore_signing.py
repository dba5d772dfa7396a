"""Signed table attestations on an object store (S3 on a real SeaweedFS server, tests/servers): the envelope is
one content-addressed object beside the sidecar, verified under a policy; a flipped byte or a deleted envelope
in the bucket fails. Tampering goes around the carrier, straight to the bucket, as an attacker with bucket
access would."""

from __future__ import annotations

from deltalake import DeltaTable, write_deltalake

from attest.signing.keys import PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import SIDECAR_DIR, DeltaCarrier, attest_after_write
from tests.delta.conftest import PROGRAM, special_table
from tests.servers.stores import Bucket

TABLE = "signed"


def test_signed_delta_on_s3_verifies_and_any_envelope_change_fails(s3: Bucket) -> None:
    ci, stranger = generate_keypair("ed25519"), generate_keypair("ecdsa-p256")
    uri = s3.uri(TABLE)
    write_deltalake(uri, special_table(), partition_by=["p"], storage_options=s3.storage_options)
    result = attest_after_write(uri, model="orders", program_hash=PROGRAM, storage_options=s3.storage_options,
                                signer=PemSigner.load(ci.private_pem))
    assert result.signer == ci.key_id
    digest = DeltaTable(uri, storage_options=s3.storage_options).metadata().configuration[props.KEY_ENVELOPE]
    key = f"{TABLE}/{SIDECAR_DIR}/{digest}.dsse.json"
    assert key in s3.keys(f"{TABLE}/{SIDECAR_DIR}/") and result.envelope == s3.uri(key)
    assert ci.private_pem not in s3.get(key)

    def codes(policy: TrustPolicy) -> list[str]:
        report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), policy=policy, level="bytes")
        return [e.code.value for e in report.errors]

    trusted = TrustPolicy.from_public_key(ci.public_pem)
    assert codes(trusted) == []
    report = verify_table(DeltaCarrier(uri, storage_options=s3.storage_options), policy=trusted)
    assert f"signed by {ci.key_id}" in report.human()
    assert codes(TrustPolicy.from_public_key(stranger.public_pem)) == ["signature_invalid"]  # no trusted key signed

    original = s3.get(key)
    s3.flip_byte(key)
    assert codes(trusted) == ["signature_invalid"]
    s3.delete(key)
    assert codes(trusted) == ["signature_missing"]
    s3.put(key, original)
    assert codes(trusted) == []  # the same bytes back: nothing else was touched
