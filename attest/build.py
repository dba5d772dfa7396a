"""Building a manifest from identities: the producer side shared by every carrier and the Spark hook."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from attest import __version__
from attest.identity.inputs import ObservedInput, inputs_identity
from attest.model import Manifest, OutputHash, Producer, Subject
from attest.schema import validate

PRODUCER_NAME = "recipe-attest"


def utc_now() -> str:
    """RFC 3339 UTC timestamp with microseconds, as subject.produced_at."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def new_run_id() -> str:
    import uuid

    return f"run-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"


def build_manifest(
    *,
    model: str,
    program_hash: str,
    env_hash: str,
    inputs: Sequence[ObservedInput] = (),
    outputs: Sequence[tuple[str, str]] | None = None,
    run_id: str | None = None,
    produced_at: str | None = None,
    status: str | None = "success",
    producer: Producer | None = None,
) -> Manifest:
    """A v0.1 manifest (``built_manifest``'s, without its document)."""
    return built_manifest(model=model, program_hash=program_hash, env_hash=env_hash, inputs=inputs, outputs=outputs,
                          run_id=run_id, produced_at=produced_at, status=status, producer=producer)[0]


def built_manifest(
    *,
    model: str,
    program_hash: str,
    env_hash: str,
    inputs: Sequence[ObservedInput] = (),
    outputs: Sequence[tuple[str, str]] | None = None,
    run_id: str | None = None,
    produced_at: str | None = None,
    status: str | None = "success",
    producer: Producer | None = None,
) -> tuple[Manifest, dict[str, Any]]:
    """A v0.1 manifest and its document (``to_dict()``, validated). ``outputs`` are (path, hash) pairs; they are
    sorted by path so the document is stable. The document is the one a record reads for the manifest's identity and
    signature (one output per file: made once, docs/scale.md "The attestation document made once")."""
    pair = inputs_identity(inputs)
    manifest = Manifest(
        producer=producer or Producer(PRODUCER_NAME, __version__),
        subject=Subject(model=model, run_id=run_id, produced_at=produced_at or utc_now(), status=status),
        program_hash=program_hash,
        env_hash=env_hash,
        inputs_hash=None if pair is None else pair[0],
        inputs_proof_class=None if pair is None else pair[1],
        output_hashes=None if outputs is None else tuple(
            OutputHash(hash=h, path=p) for p, h in sorted(outputs)
        ),
    )
    document = manifest.to_dict()
    problems = validate(document)  # Manifest.problems(), on the document kept
    if problems:
        from attest.errors import ManifestInvalidError

        raise ManifestInvalidError(problems)
    return manifest, document
