"""A record makes its manifest's document, canonical bytes and identity once (``attest.build.built_manifest``,
``attest.tables.attestation_encoded``, passed along; docs/scale.md, "The attestation document made once"), and writes
the same bytes as before: the committed keys (Delta properties, Iceberg snapshot summary), the sidecar and the
envelope are compared with what main's code made from the same manifest (its functions copied below, ``_main_*``), for
Delta and Iceberg tables with inputs, signed and unsigned, and on random manifests; and ``to_dict`` / the manifest's
canonical encoding are counted once a record."""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.catalog.sql import SqlCatalog

import attest.canonical as canonical_module
from attest.build import build_manifest, built_manifest
from attest.canonical import blake3_hex, canonical_bytes, digest
from attest.identity.inputs import ObservedInput
from attest.model import Manifest, OutputHash
from attest.signing.attestation import sign_table_attestation
from attest.signing.keys import KeyPair, PemSigner, generate_keypair
from attest.signing.policy import TrustPolicy
from attest.signing.statement import statement_payload, table_statement
from attest.tables import attestation_document, attestation_encoded
from attest.verify.table import verify_table
from carriers import properties as props
from carriers.core import AttestedTable, encode_keys
from carriers.delta.carrier import DeltaCarrier
from carriers.iceberg.carrier import IcebergCarrier
from carriers.sidecar import Sidecar
from tests.iceberg.conftest import ns_catalog, rows

PROGRAM = "a" * 64
HEX = "0123456789abcdef"


# ---- main's code (53e0e2e), copied: what the record path computed before -------------------------------------------
def _main_identity(manifest: Manifest) -> str:
    """carriers/core.py ``_record``: ``attestation_identity(manifest.to_dict())``."""
    return digest(attestation_document(manifest.to_dict()))


def _main_encode_keys(manifest: Manifest, *, version: str, sidecar_rel: str, sidecar_hash: str,
                      envelope: str | None = None) -> dict[str, str]:
    document = manifest.to_dict()
    outputs = document.pop("output_hashes", None)
    keys = props.to_properties(document)
    keys[props.KEY_LAYOUT] = props.LAYOUT
    keys[props.KEY_VERSION] = version
    keys[props.KEY_SIDECAR_PATH] = sidecar_rel
    keys[props.KEY_SIDECAR_HASH] = sidecar_hash
    if outputs is not None:
        keys[props.KEY_OUTPUTS_COUNT] = str(len(outputs))
    if envelope is not None:
        keys[props.KEY_ENVELOPE] = envelope
    return keys


def _main_envelope(signer: PemSigner, uri: str, version: str, manifest: Manifest, binding: dict[str, str]) -> bytes:
    """carriers/core.py ``sign``: the document made again, its bytes encoded twice more by the statement."""
    return sign_table_attestation(signer, uri, version, attestation_document(manifest.to_dict()), binding)


# ---- end to end: Delta and Iceberg, with inputs, signed and unsigned ------------------------------------------------
def _delta(root: Path, name: str, values: list[int]) -> DeltaCarrier:
    write_deltalake(str(root / name), pa.table({"p": ["a", "b", "a"][:len(values)], "v": values}),
                    partition_by=["p"])
    return DeltaCarrier(str(root / name))


def _iceberg(root: Path, name: str, values: list[int]) -> IcebergCarrier:
    (root / name).mkdir()
    catalog: SqlCatalog = ns_catalog(root / name)  # a catalog a table
    data = rows(values[0], len(values))
    table = catalog.create_table(f"ns.{name}", schema=data.schema)
    table.append(data)
    table.append(rows(values[-1] + 1, 1))  # a second data file
    return IcebergCarrier(table)


MAKERS = {"delta": _delta, "iceberg": _iceberg}


def _check_as_main_wrote(carrier: AttestedTable, result: Any, signer: PemSigner | None) -> None:
    """The keys in force, the sidecar and the envelope of ``result``'s attestation are the bytes main's code wrote."""
    manifest: Manifest = result.manifest
    v = carrier._resolve(result.attested_version)
    carried = carrier._carried(v)
    assert carried is not None
    keys = props.attestation_keys(carried.keys)
    rel, sidecar_hash = keys[props.KEY_SIDECAR_PATH], keys[props.KEY_SIDECAR_HASH]
    data = carrier.storage.read(rel)
    assert data is not None and blake3_hex(data) == sidecar_hash
    sidecar = Sidecar.decode(data, sidecar_hash)
    identity = _main_identity(manifest)
    assert sidecar.manifest == identity  # the one value in the sidecar the manifest's document makes
    # The sidecar's bytes are its values encoded (canonical): the same values, main's identity, the same bytes.
    assert b"".join(Sidecar(attested_version=sidecar.attested_version, files=sidecar.files, inputs=sidecar.inputs,
                            manifest=identity, table=sidecar.table, view=sidecar.view,
                            content=sidecar.content).chunks()) == data
    envelope_hash = keys.get(props.KEY_ENVELOPE)
    assert (envelope_hash is None) == (signer is None)
    assert keys == _main_encode_keys(manifest, version=v.id, sidecar_rel=rel, sidecar_hash=sidecar_hash,
                                     envelope=envelope_hash)
    if signer is not None:
        assert envelope_hash is not None and sidecar.view is not None
        envelope = carrier.storage.read(carrier._envelope_rel(envelope_hash))
        # Ed25519 signs deterministically: main's path, signing the same statement, gives the same envelope.
        assert envelope == _main_envelope(signer, carrier.signed_uri, v.id, manifest,
                                          {"sidecar_digest": sidecar_hash, "reader_view_digest": sidecar.view.digest})


@pytest.fixture(scope="module")
def key() -> KeyPair:
    return generate_keypair("ed25519")


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
@pytest.mark.parametrize("fmt", sorted(MAKERS))
def test_a_record_writes_the_bytes_main_wrote(tmp_path: Path, fmt: str, signed: bool, key: KeyPair) -> None:
    make = MAKERS[fmt]
    upstream = make(tmp_path, "upstream", [7, 8])
    upstream.record(model="upstream", program_hash=PROGRAM)
    carrier = make(tmp_path, "orders", [1, 2, 3])
    signer = PemSigner.load(key.private_pem) if signed else None
    observed = upstream.observe()
    result = carrier.record(model="orders", program_hash=PROGRAM, inputs=[observed], signer=signer,
                            run_id="run-fixed")
    assert result.manifest is not None and result.manifest.inputs_hash is not None  # the upstream (and a base)
    assert len(result.manifest.output_hashes or ()) >= 1
    _check_as_main_wrote(carrier, result, signer)
    policy = TrustPolicy.from_public_key(key.public_pem) if signed else None
    assert verify_table(type(carrier)(str(tmp_path / "orders")) if fmt == "delta" else carrier, level="bytes",
                        policy=policy).passed


# ---- counted: one document, one canonical encoding a record ---------------------------------------------------------
@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Calls of ``Manifest.to_dict`` (of a manifest listing outputs), of ``OutputHash.to_dict``, and the canonical
    encodings (every ``canonical_bytes`` goes through ``canonical._scan`` at depth 0) of a manifest document or of a
    statement holding one."""
    counts: Counter[str] = Counter()
    to_dict, output_to_dict, scan = Manifest.to_dict, OutputHash.to_dict, canonical_module._scan

    def manifest_to_dict(self: Manifest) -> dict[str, Any]:
        if self.output_hashes is not None:  # the metadata keys' document, without outputs, costs nothing a file
            counts["Manifest.to_dict"] += 1
        return to_dict(self)

    def output_dict(self: OutputHash) -> dict[str, str]:
        counts["OutputHash.to_dict"] += 1
        return output_to_dict(self)

    def counting_scan(value: Any, depth: int) -> bool:
        if depth == 0 and isinstance(value, Mapping):
            if "output_hashes" in value:
                counts["manifest encoded"] += 1
            predicate = value.get("predicate")
            if isinstance(predicate, Mapping) and "manifest" in predicate:
                counts["statement encoded whole"] += 1
        return scan(value, depth)

    monkeypatch.setattr(Manifest, "to_dict", manifest_to_dict)
    monkeypatch.setattr(OutputHash, "to_dict", output_dict)
    monkeypatch.setattr(canonical_module, "_scan", counting_scan)
    yield counts


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
@pytest.mark.parametrize("fmt", sorted(MAKERS))
def test_a_record_makes_the_manifest_document_once(tmp_path: Path, fmt: str, signed: bool, key: KeyPair,
                                                   counted: Counter[str]) -> None:
    """Before: three documents a carrier's record (validation, identity, metadata keys; ``attest record`` made a
    fourth for its result), a fourth signed (the signature's), whose bytes the statement encoded twice more (its
    digests, its payload): three canonical encodings of the manifest."""
    carrier = MAKERS[fmt](tmp_path, "orders", [1, 2, 3])
    result = carrier.record(model="orders", program_hash=PROGRAM,
                            signer=PemSigner.load(key.private_pem) if signed else None)
    files = len(result.manifest.output_hashes or ())
    assert files >= 2
    assert counted == Counter({"Manifest.to_dict": 1, "OutputHash.to_dict": files, "manifest encoded": 1})


# ---- random manifests: the shared document, bytes and keys are main's -----------------------------------------------
_text = st.text(alphabet=string.ascii_letters + "/._-é☃\t\"\\", min_size=1, max_size=12)
_hex = st.text(alphabet=HEX, min_size=64, max_size=64)


@st.composite
def manifests(draw: st.DrawFn) -> Manifest:
    outputs = draw(st.none() | st.lists(st.tuples(_text, _hex), max_size=12))
    inputs = draw(st.lists(st.builds(ObservedInput, table=_text, content=_hex) |
                           st.builds(ObservedInput, table=_text, version=_text), max_size=3))
    manifest = build_manifest(model=draw(_text), program_hash=draw(_hex), env_hash=draw(_hex), inputs=inputs,
                              outputs=outputs, run_id=draw(st.none() | _text), produced_at="2026-12-04T00:00:00Z",
                              status=draw(st.none() | st.sampled_from(["success", "failed"])))
    made, document = built_manifest(model=manifest.subject.model, program_hash=manifest.program_hash,
                                    env_hash=manifest.env_hash, inputs=inputs, outputs=outputs,
                                    run_id=manifest.subject.run_id, produced_at="2026-12-04T00:00:00Z",
                                    status=manifest.subject.status)
    assert made == manifest and document == manifest.to_dict()  # the document kept is the manifest's
    if draw(st.booleans()):  # outputs in another order, a path missing (standalone manifests): sorted for identity
        hashes = draw(st.lists(st.tuples(st.none() | _text, _hex), max_size=8))
        manifest = manifest.with_outputs([OutputHash(hash=h, path=p) for p, h in hashes])
    return manifest


@settings(max_examples=150, deadline=None)
@given(manifests())
def test_the_shared_document_and_bytes_are_mains(manifest: Manifest) -> None:
    document, data, identity = attestation_encoded(manifest.to_dict())
    assert document == attestation_document(manifest.to_dict())
    assert data == canonical_bytes(attestation_document(manifest.to_dict()))
    assert identity == _main_identity(manifest)
    assert encode_keys(manifest, version="3", sidecar_rel="s.json", sidecar_hash="f" * 64, envelope="e" * 64) == \
        _main_encode_keys(manifest, version="3", sidecar_rel="s.json", sidecar_hash="f" * 64, envelope="e" * 64)
    binding = {"sidecar_digest": "c" * 64, "reader_view_digest": "d" * 64}
    old = table_statement("file:///t", "3", attestation_document(manifest.to_dict()), binding)
    new = table_statement("file:///t", "3", document, binding, manifest_bytes=data)
    assert new == old
    assert statement_payload(new, manifest_bytes=data) == statement_payload(old) == canonical_bytes(old)


def test_a_signature_with_the_bytes_is_mains(key: KeyPair) -> None:
    manifest = build_manifest(model="m", program_hash="a" * 64, env_hash="b" * 64,
                              outputs=[(f"d/{i}.parquet", HEX[i % 16] * 64) for i in range(50, 0, -1)])
    signer = PemSigner.load(key.private_pem)
    binding = {"sidecar_digest": "c" * 64, "reader_view_digest": "d" * 64}
    document, data, _ = attestation_encoded(manifest.to_dict())
    assert sign_table_attestation(signer, "file:///t", "1", document, binding, manifest_bytes=data) == \
        _main_envelope(signer, "file:///t", "1", manifest, binding)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_an_iceberg_content_addressed_write_writes_the_bytes_main_wrote(tmp_path: Path, signed: bool, key: KeyPair,
                                                                         counted: Counter[str]) -> None:
    """The content-addressed write (its attestation in the data snapshot's own summary) makes the document once too."""
    from carriers.iceberg.write import write_content_addressed

    carrier = _iceberg(tmp_path, "orders", [1, 2, 3])
    signer = PemSigner.load(key.private_pem) if signed else None
    result = write_content_addressed(carrier, rows(10, 4), model="orders", program_hash=PROGRAM, signer=signer,
                                     run_id="run-fixed")
    assert result.manifest is not None
    assert counted == Counter({"Manifest.to_dict": 1, "OutputHash.to_dict": len(result.manifest.output_hashes or ()),
                               "manifest encoded": 1})
    _check_as_main_wrote(carrier, result, signer)
