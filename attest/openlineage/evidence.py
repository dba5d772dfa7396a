"""OpenLineage events read as evidence for ``attest record --openlineage-events FILE``.

The file is what an OpenLineage producer wrote: the file transport's JSON lines (one event per line, e.g. the
openlineage-spark listener with ``append: true``), or one event / an array of events as a JSON document. Every
line is parsed with the strict reader manifests use (duplicate keys, NaN, lone surrogates, depth and size are
refused). Only RunEvents count; a run with a FAIL or ABORT event contributes nothing (it wrote nothing that is
attested). Each input dataset is returned once per version with its namespace, name, the version the run read
(``version`` facet) and its ``symlinks`` identifiers; carriers/openlineage.py resolves them to tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attest.errors import AttestError, OpenLineageError
from attest.model import load_json_document

MAX_DATASETS = 10_000  # more input datasets than any run reads: refused rather than opening that many tables


@dataclass(frozen=True)
class EventDataset:
    """One input dataset as an event reported it."""

    namespace: str
    name: str
    version: str | None
    symlinks: tuple[tuple[str, str], ...] = ()
    event_time: str | None = None


def _events(data: bytes, source: str) -> list[Any]:
    try:
        whole = load_json_document(data)
    except AttestError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    if isinstance(whole, list):
        return whole
    events = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            events.append(load_json_document(line))
        except AttestError as exc:
            raise OpenLineageError(f"{source}: line {number} is not a JSON event: {exc.message}",
                                   path=f"{source}:{number}") from exc
    return events


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _version(facets: Mapping[str, Any]) -> str | None:
    facet = facets.get("version")
    value = facet.get("datasetVersion") if isinstance(facet, Mapping) else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return _text(value)


def _symlinks(facets: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    facet = facets.get("symlinks")
    identifiers = facet.get("identifiers") if isinstance(facet, Mapping) else None
    out = []
    for ident in identifiers if isinstance(identifiers, list) else ():
        if isinstance(ident, Mapping) and _text(ident.get("namespace")) and _text(ident.get("name")):
            out.append((str(ident["namespace"]), str(ident["name"])))
    return tuple(out)


def read_events(data: bytes, source: str) -> list[EventDataset]:
    """The input datasets of the successful runs in ``data`` (one per namespace/name/version, first seen first)."""
    events = [e for e in _events(data, source) if isinstance(e, Mapping) and isinstance(e.get("run"), Mapping)
              and isinstance(e.get("job"), Mapping)]
    if not events:
        raise OpenLineageError(f"{source}: holds no OpenLineage RunEvent", path=source)
    failed = {e["run"].get("runId") for e in events if e.get("eventType") in ("FAIL", "ABORT")}
    out: dict[tuple[str, str, str | None], EventDataset] = {}
    for event in events:
        if event["run"].get("runId") in failed:
            continue
        inputs = event.get("inputs")
        for item in inputs if isinstance(inputs, list) else ():
            if not isinstance(item, Mapping) or not _text(item.get("namespace")) or not _text(item.get("name")):
                continue
            facets = item.get("facets") if isinstance(item.get("facets"), Mapping) else {}
            assert isinstance(facets, Mapping)
            dataset = EventDataset(namespace=str(item["namespace"]), name=str(item["name"]), version=_version(facets),
                                   symlinks=_symlinks(facets), event_time=_text(event.get("eventTime")))
            key = (dataset.namespace, dataset.name, dataset.version)
            if key not in out:
                out[key] = dataset
            if len(out) > MAX_DATASETS:
                raise OpenLineageError(f"{source}: more than {MAX_DATASETS:,} input datasets", path=source)
    # A dataset seen with a version makes its version-less sightings redundant (the version is what was read).
    versioned = {(d.namespace, d.name) for d in out.values() if d.version is not None}
    return [d for d in out.values() if d.version is not None or (d.namespace, d.name) not in versioned]
