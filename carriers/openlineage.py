"""OpenLineage where it meets tables: an attestation read back as an ``AttestedRun`` (the event is a view of it), and
OpenLineage input datasets resolved to observed inputs (docs/lineage.md).

Resolution of an event's input dataset, in order:

1. an Iceberg catalog name — the dataset's own namespace ``iceberg://<catalog>``, or a ``symlinks`` identifier of
   that form — opens that table through pyiceberg's configuration; else its storage location (``file`` + path,
   ``s3://bucket`` + key, ...) opens the Delta table there, when there is one;
2. with the version the event reports, the input is ``observe(version)``: **strong** when an attestation that holds
   at the files level covers exactly that version, heuristic (by version / snapshot id) otherwise;
3. anything else — no version in the event, no table at the location, a version the table does not have, a dataset
   that names no storage (a database table, a topic) — is a **heuristic** input recorded as the event stated it,
   a leaf for lineage walks. An Iceberg table named only by its location cannot be mapped back to a catalog
   offline: it is recorded heuristically by location and version.

The table being recorded is skipped when an event lists it as an input: ``record`` adds the version its data
commit built on itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from attest.errors import AttestError, CarrierError, Code, Problem
from attest.identity.inputs import ObservedInput
from attest.openlineage.evidence import EventDataset
from attest.openlineage.naming import ICEBERG, dataset_name, location_of
from attest.tables import attestation_identity
from carriers.refs import from_location, is_local, local_path, open_table

if TYPE_CHECKING:
    from attest.openlineage.emit import Emitted
    from attest.openlineage.event import AttestedRun
    from carriers.base import WriteResult
    from carriers.core import AttestedTable


def attested_run(carrier: AttestedTable, result: WriteResult, *,
                 input_locations: Mapping[str, str] | None = None, signer: str | None = None) -> AttestedRun:
    """The attestation ``record`` just wrote, read back from the table (what a reader will find), as an event view."""
    from attest.openlineage.event import AttestedRun

    version = result.attested_version
    att = carrier.read(version)
    if att is None or att.attested_version != version:
        raise CarrierError(f"the attestation of {carrier.noun} {version} of {carrier.reference} cannot be read back")
    return AttestedRun(document=att.document, manifest_identity=att.manifest_identity or
                       attestation_identity(att.document), table=carrier.reference, table_format=carrier.kind,
                       location=carrier.roots[0], attested_version=str(version), sidecar=result.sidecar or "",
                       inputs=tuple(att.inputs or ()), table_identity=att.table_identity,
                       output_files=None if att.files is None else len(att.files), signer=signer,
                       input_locations=input_locations)


def table_locations(carriers: Iterable[AttestedTable]) -> dict[str, str]:
    """{recorded input location: where the table lives} for carriers a caller already opened."""
    return {c.input_location: c.roots[0] for c in carriers if c.input_location != c.roots[0]}


def resolver(storage_options: Mapping[str, str] | None = None, *,
             catalog: Callable[[str], Any] | None = None) -> Callable[[str], str | None]:
    """Where an ``iceberg://`` input lives: opened through ``catalog(name)`` (a pyiceberg catalog) when given, else
    pyiceberg's own configuration; None when it cannot be (the input keeps its catalog name)."""
    cache: dict[str, str | None] = {}

    def locate(location: str) -> str:
        ref = from_location(location)
        if catalog is not None and ref.catalog is not None:
            return str(catalog(ref.catalog).load_table(ref.location).location())
        return open_table(ref, storage_options=storage_options).roots[0]

    def resolve(location: str) -> str | None:
        if not location.startswith(ICEBERG):
            return None
        if location not in cache:
            cache[location] = None
            with contextlib.suppress(Exception):  # naming only: an unreachable catalog keeps the catalog name
                cache[location] = locate(location)
        return cache[location]

    return resolve


def emit_attestation(carrier: AttestedTable, result: WriteResult, *, client: Any = None,
                     resolve: Callable[[str], str | None] | None = None,
                     input_locations: Mapping[str, str] | None = None, show_console: bool = False) -> Emitted:
    """Read back what ``record`` wrote and send its OpenLineage RunEvent; never raises (a failure is an ``Emitted``
    with a coded problem: the attestation stands)."""
    from attest.openlineage.emit import Emitted, emit

    try:
        run = attested_run(carrier, result, input_locations=input_locations)
        resolve = resolve or resolver()
        found = {i.location: where for i in run.inputs if i.location and (where := resolve(i.location))}
        run = replace(run, input_locations={**found, **dict(run.input_locations or {})})
    except Exception as exc:
        return Emitted(False, problem=Problem(Code.OPENLINEAGE_EMIT_FAILED, "the OpenLineage event was not built: "
                                              f"{type(exc).__name__}: {exc}"))
    return emit(run, client=client, show_console=show_console)


def observe_events(datasets: Iterable[EventDataset], *, target: AttestedTable,
                   storage_options: Mapping[str, str] | None = None) -> list[ObservedInput]:
    """Observed inputs for the input datasets of OpenLineage events (see the module docstring for the rules)."""
    target_name = dataset_name(target.roots[0])
    target_names = {target_name, dataset_name(target.reference)}
    out: list[ObservedInput] = []
    for ds in datasets:
        location = _table_location(ds)
        if location is not None and dataset_name(location) in target_names:
            continue
        if location is not None and ds.version is not None:
            observed = _observe(location, ds.version, storage_options)
            if observed is not None:
                if dataset_name(observed.location or location) not in target_names:
                    out.append(observed)
                continue
        out.append(_as_stated(ds, location))
    return out


def _table_location(ds: EventDataset) -> str | None:
    for namespace, name in ((ds.namespace, ds.name), *ds.symlinks):
        if namespace.startswith(ICEBERG):
            found = location_of(namespace, name)
            if found is not None:
                return found
    return location_of(ds.namespace, ds.name)


def _observe(location: str, version: str, storage_options: Mapping[str, str] | None) -> ObservedInput | None:
    ref = from_location(location)
    if ref.format == "delta" and is_local(location) and not (local_path(location) / "_delta_log").is_dir():
        return None  # a local path that holds no Delta table: a file source, recorded as stated
    try:
        observed = open_table(ref, storage_options=storage_options).observe(version)
    except (AttestError, ValueError, OSError):
        return None  # no table there, or no such version: recorded as the event stated it
    return observed


def _as_stated(ds: EventDataset, location: str | None) -> ObservedInput:
    """A heuristic input exactly as the event reported it: by version, else by the event's time."""
    table = f"path:{location}" if location is not None else f"openlineage:{ds.namespace}/{ds.name}"
    watermark = None if ds.version is not None else f"openlineage-event:{ds.event_time or 'unknown time'}"
    return ObservedInput(table=table, version=ds.version, watermark=watermark, location=location,
                         name=f"{ds.namespace}/{ds.name}" if location is None else None)
