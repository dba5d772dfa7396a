"""OpenLineage: attestations as OpenLineage events, and OpenLineage events as evidence (docs/lineage.md).

- ``event``: one RunEvent (COMPLETE) per attestation — a view of the attestation, not a second model: the job is
  the model, the run its run id, the inputs the exact versions the run read, the output the attested version with
  an ``attestation`` dataset facet (its JSON schema ships beside this file);
- ``emit``: sends it through openlineage-python's own transports (console, file, http, kafka, ...), configured as
  OpenLineage configures them (``openlineage.yml``, ``OPENLINEAGE_*``); off unless switched on;
- ``evidence``: reads events (e.g. the openlineage-spark listener's file transport) back as input datasets.

Engine-free; openlineage-python (the ``openlineage`` extra) is imported only by ``event`` and ``emit``.
"""

from __future__ import annotations

from attest import __version__

# The project's home (pyproject's [project.urls]); events and the facet schema are named under it.
PROJECT_URL = "https://example.invalid/recipe-attest"
PRODUCER = f"{PROJECT_URL}/tree/{__version__}"
FACET_NAME = "attestation"
FACET_SCHEMA_ID = f"{PROJECT_URL}/spec/facets/1-0-0/AttestationDatasetFacet.json"
FACET_SCHEMA_URL = f"{FACET_SCHEMA_ID}#/$defs/AttestationDatasetFacet"


def facet_schema() -> dict[str, object]:
    """The JSON schema of the ``attestation`` dataset facet (draft 2020-12), as shipped in the package."""
    import json
    from importlib.resources import files

    loaded: dict[str, object] = json.loads(files(__name__).joinpath("AttestationDatasetFacet.json").read_text())
    return loaded
