"""Walk lineage: from a table version, through the observed inputs its attestation records, upstream.

Each node says what is known about that version (attested or not, verified at the files level or not, the
program and the proof class) so a notebook user or an auditor sees where the chain of evidence is strong,
heuristic or broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from attest.errors import AttestError
from attest.identity.inputs import ObservedInput
from attest.lineage import LineageGraph, LineageNode
from attest.verify.report import Level
from attest.verify.table import verify_state
from carriers.refs import TableRef, from_location, open_table

if TYPE_CHECKING:
    from attest.signing.policy import TrustPolicy

__all__ = ["LineageGraph", "LineageNode", "walk"]


def walk(
    ref: TableRef | str,
    *,
    version: str | None = None,
    depth: int = 8,
    level: Level = "files",
    storage_options: Mapping[str, str] | None = None,
    policy: TrustPolicy | None = None,
    _observed: ObservedInput | None = None,
    _seen: set[tuple[str, str | None]] | None = None,
) -> LineageNode:
    """The lineage tree rooted at ``ref`` (at ``version``, default current), verified at ``level`` per node.

    Upstreams are reached through each input's recorded ``location``; an input without one is a leaf.
    ``depth`` bounds the walk; a version already visited is not expanded twice (diamonds, cycles). ``policy``: every
    node's signature is judged under it too (docs/signing.md).
    """
    seen = _seen if _seen is not None else set()
    table = from_location(ref) if isinstance(ref, str) else ref
    version = table.version if version is None else version
    node = LineageNode(ref=table.base, version=version, table_format=table.format,
                       observed_as=None if _observed is None else _observed.proof_class)
    try:
        carrier = open_table(table, storage_options=storage_options)
        state = carrier.state(version)
    except AttestError as exc:
        node.error = exc.code.value
        node.verdict = exc.message
        node.outcome = "ERROR"
        return node
    node.version = state.version
    report = verify_state(state, carrier, level=level, policy=policy)
    node.verdict = report.verdict()
    node.passed = report.passed
    node.outcome = report.outcome
    att = state.attestation
    if att is None:
        return node
    node.attested = True
    doc = att.document
    node.model = (doc.get("subject") or {}).get("model")
    node.program_hash = doc.get("program_hash")
    node.inputs_proof_class = doc.get("inputs_proof_class")
    key = (table.base, node.version)
    if key in seen or depth <= 0:
        return node
    seen.add(key)
    for observed in att.inputs or ():
        node.table = node.table or None
        upstream_version = observed.version or observed.snapshot_id
        if not observed.location or observed.table.startswith("path:"):
            # No location, or a file source (not a table): a leaf the walk cannot check, never a failure.
            node.inputs.append(LineageNode(ref=observed.name or observed.table, version=upstream_version,
                                           table=observed.table, observed_as=observed.proof_class))
            continue
        child = walk(from_location(observed.location), version=upstream_version, depth=depth - 1, level=level,
                     storage_options=storage_options, policy=policy, _observed=observed, _seen=seen)
        child.table = observed.table
        node.inputs.append(child)
    return node
