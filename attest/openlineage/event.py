"""One OpenLineage RunEvent (COMPLETE) per attestation: a view of the attestation, built with openlineage-python.

- job: namespace ``$OPENLINEAGE_NAMESPACE`` (default ``recipe-attest``), name the manifest's model;
- run: ``runId`` is a UUID, as the spec requires, derived deterministically from the run id the manifest records
  (``run_uuid``): the same attestation always gives the same event, and runs of other models never collide;
- inputs: every observed input that has a location, named as OpenLineage names storage (attest.openlineage.naming),
  with the exact version the run read (``version`` facet) and, for Iceberg, its catalog name (``symlinks``);
- the output: the attested table version with ``version``, ``storage`` and the custom ``attestation`` facet
  (AttestationDatasetFacet.json beside this file) carrying ``_producer`` and ``_schemaURL``.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from attest.build import utc_now
from attest.identity.inputs import ObservedInput
from attest.openlineage import FACET_NAME, FACET_SCHEMA_URL, PRODUCER, PROJECT_URL
from attest.openlineage.naming import ICEBERG, dataset_name

NAMESPACE_ENV, DEFAULT_NAMESPACE = "OPENLINEAGE_NAMESPACE", "recipe-attest"
# runId = UUIDv5(RUN_NAMESPACE, "<job namespace>\n<model>\n<run id>"); RUN_NAMESPACE is itself a UUIDv5 of a URL.
RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, f"{PROJECT_URL}/openlineage/run")


@functools.cache
def facet_class() -> Any:
    """The ``attestation`` facet as an openlineage-python facet class (schema: AttestationDatasetFacet.json).

    Built on first use: importing openlineage-python loads its transports (and fsspec), which the engine-free core
    must not do at import time."""
    import attr
    from openlineage.client.generated.base import DatasetFacet

    @attr.define
    class AttestationDatasetFacet(DatasetFacet):
        """The ``attestation`` dataset facet (schema: AttestationDatasetFacet.json)."""

        manifestIdentity: str
        manifestVersion: str
        hashScheme: str
        manifestProducer: dict[str, str]
        model: str
        programHash: str
        envHash: str
        tableFormat: str
        table: str
        attestedVersion: str
        sidecar: str
        runId: str | None = attr.field(default=None)
        producedAt: str | None = attr.field(default=None)
        inputsHash: str | None = attr.field(default=None)
        inputsProofClass: str | None = attr.field(default=None)
        tableIdentity: str | None = attr.field(default=None)
        outputFiles: int | None = attr.field(default=None)
        signer: str | None = attr.field(default=None)
        inputs: list[dict[str, Any]] | None = attr.field(default=None)

        @staticmethod
        def _get_schema() -> str:
            return FACET_SCHEMA_URL

    return AttestationDatasetFacet


@dataclass(frozen=True)
class AttestedRun:
    """An attestation as the event shows it (carriers/openlineage.py reads it back from the table after record).

    ``location`` is where the table lives (for its OpenLineage name); ``input_locations`` maps an input's recorded
    location (``iceberg://...``) to where that table lives, when the caller knows it."""

    document: Mapping[str, Any]
    manifest_identity: str
    table: str
    table_format: str
    location: str
    attested_version: str
    sidecar: str
    inputs: tuple[ObservedInput, ...] = ()
    table_identity: str | None = None
    output_files: int | None = None
    signer: str | None = None
    input_locations: Mapping[str, str] | None = None


def job_namespace() -> str:
    return os.environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE


def run_uuid(namespace: str, model: str, run_id: str) -> str:
    """The event's runId: a UUIDv5 of the job and the producer's run id (stable, and distinct per model)."""
    return str(uuid.uuid5(RUN_NAMESPACE, f"{namespace}\n{model}\n{run_id}"))


def _facets(location: str, version: str | None, table_format: str | None,
            catalog_name: str | None) -> dict[str, Any]:
    from openlineage.client.facet_v2 import dataset_version_dataset, storage_dataset, symlinks_dataset

    facets: dict[str, Any] = {}
    if version is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=version,
                                                                               producer=PRODUCER)
    if table_format in ("delta", "iceberg"):
        facets["storage"] = storage_dataset.StorageDatasetFacet(storageLayer=table_format, producer=PRODUCER)
    if catalog_name is not None:
        logical = dataset_name(catalog_name)
        if logical != dataset_name(location):
            facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(
                identifiers=[symlinks_dataset.Identifier(namespace=logical.namespace, name=logical.name,
                                                         type="TABLE")], producer=PRODUCER)
    return facets


def _format_of(identity: str) -> str | None:
    kind = identity.partition(":")[0]
    return kind if kind in ("delta", "iceberg") else None


def _input(observed: ObservedInput, resolve: Callable[[str], str | None]) -> Any:
    from openlineage.client.event_v2 import InputDataset

    recorded = observed.location
    if not recorded:
        return None  # no location: nothing OpenLineage could name it by (it stays in the facet's inputs)
    location = resolve(recorded) or recorded
    name = dataset_name(location)
    iceberg = recorded if recorded.startswith(ICEBERG) else None
    version = observed.version or observed.snapshot_id
    return InputDataset(namespace=name.namespace, name=name.name,
                        facets=_facets(location, version, _format_of(observed.table), iceberg))


def attestation_facet(run: AttestedRun) -> Any:
    doc = run.document
    subject = doc.get("subject") if isinstance(doc.get("subject"), Mapping) else {}
    producer = doc.get("producer") if isinstance(doc.get("producer"), Mapping) else {}
    assert isinstance(subject, Mapping) and isinstance(producer, Mapping)
    return facet_class()(
        manifestIdentity=run.manifest_identity, manifestVersion=str(doc.get("manifest_version")),
        hashScheme=str(doc.get("hash_scheme")),
        manifestProducer={"name": str(producer.get("name")), "version": str(producer.get("version"))},
        model=str(subject.get("model")), programHash=str(doc.get("program_hash")), envHash=str(doc.get("env_hash")),
        tableFormat=run.table_format, table=run.table, attestedVersion=run.attested_version, sidecar=run.sidecar,
        runId=subject.get("run_id"), producedAt=subject.get("produced_at"), inputsHash=doc.get("inputs_hash"),
        inputsProofClass=doc.get("inputs_proof_class"), tableIdentity=run.table_identity,
        outputFiles=run.output_files, signer=run.signer,
        inputs=[{"identity": i.identity_document(), "proofClass": i.proof_class} for i in run.inputs] or None,
        producer=PRODUCER)


def run_event(run: AttestedRun, *, namespace: str | None = None, event_time: str | None = None) -> Any:
    """The COMPLETE RunEvent of an attestation (an openlineage-python ``event_v2.RunEvent``)."""
    from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState

    namespace = namespace or job_namespace()
    subject = run.document.get("subject") if isinstance(run.document.get("subject"), Mapping) else {}
    assert isinstance(subject, Mapping)
    model = str(subject.get("model"))
    # A manifest without a run id is keyed by its own identity: still one stable run per attestation.
    run_key = str(subject.get("run_id") or run.manifest_identity)
    locations = dict(run.input_locations or {})
    inputs = [d for d in (_input(i, locations.get) for i in run.inputs) if d is not None]
    out_facets = _facets(run.location, run.attested_version, run.table_format,
                         run.table if run.table.startswith(ICEBERG) else None)
    out_facets[FACET_NAME] = attestation_facet(run)
    name = dataset_name(run.location)
    produced = subject.get("produced_at")
    return RunEvent(eventType=RunState.COMPLETE, eventTime=event_time or (produced if isinstance(produced, str)
                                                                            and produced else utc_now()),
                    run=Run(runId=run_uuid(namespace, model, run_key)), job=Job(namespace=namespace, name=model),
                    inputs=inputs, outputs=[OutputDataset(namespace=name.namespace, name=name.name,
                                                          facets=out_facets)], producer=PRODUCER)


def event_json(event: Any) -> dict[str, Any]:
    """The event as the transports send it (nulls and enums resolved, as openlineage-python serialises it)."""
    from openlineage.client.serde import Serde

    out: dict[str, Any] = Serde.to_dict(event)
    return out
