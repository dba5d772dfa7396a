"""The OpenLineage specification's JSON schemas, offline, and a validator for every event we emit.

The pip package does not ship the schemas: they are the ``spec/`` folder of github.com/OpenLineage/OpenLineage, kept
in ``shared/reference/openlineage-spec`` beside (or above) this clone, or wherever ``ATTEST_OPENLINEAGE_SPEC``
points. Tests that validate events skip, saying why, when it is absent, and fail instead when
``ATTEST_REQUIRE_REFERENCE=1`` (CI's .ci/run sets it: there, absence is a broken build).

``validate_event(event)`` checks an event the strict way a consumer could: the event against the spec's
``RunEvent``, then every facet against the schema its own ``_schemaURL`` names (the spec's facets, or our
``attestation`` facet shipped in the package) — a facet naming a schema nobody publishes fails.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from attest.openlineage import facet_schema

REPO = Path(__file__).resolve().parents[2]
SPEC_ENV = "ATTEST_OPENLINEAGE_SPEC"
REQUIRE_ENV = "ATTEST_REQUIRE_REFERENCE"
RELATIVE = Path("shared/reference/openlineage-spec")
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


def spec_dir() -> Path | None:
    given = os.environ.get(SPEC_ENV)
    if given:
        return Path(given) if (Path(given) / "spec" / "OpenLineage.json").is_file() else None
    for ancestor in REPO.parents:
        if (ancestor / RELATIVE / "spec" / "OpenLineage.json").is_file():
            return ancestor / RELATIVE
    return None


def require() -> Path:
    found = spec_dir()
    if found is not None:
        return found
    reason = f"the OpenLineage spec schemas ({RELATIVE}) are not beside or above this clone; set {SPEC_ENV}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@cache
def registry(root: Path) -> Registry:  # type: ignore[type-arg]
    resources = []
    for path in sorted((root / "spec").rglob("*.json")):
        if "tests" in path.relative_to(root / "spec").parts:
            continue  # example events, not schemas
        schema = json.loads(path.read_text())
        if isinstance(schema, dict) and "$id" in schema:
            resources.append((schema["$id"], Resource.from_contents(schema)))
    ours = facet_schema()
    resources.append((str(ours["$id"]), Resource.from_contents(ours)))
    return Registry().with_resources(resources)


def _check(schema_url: str, value: Any, where: str) -> None:
    validator = Draft202012Validator({"$ref": schema_url}, registry=registry(require()),
                                     format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    assert not errors, f"{where} breaks {schema_url}: " + "; ".join(e.message for e in errors[:3])


def _absolute_uri(text: Any) -> bool:
    parsed = urlparse(text) if isinstance(text, str) else None
    return parsed is not None and bool(parsed.scheme) and bool(parsed.netloc)


def validate_event(event: dict[str, Any]) -> None:
    """Assert that ``event`` is a valid RunEvent and every facet in it valid under its own ``_schemaURL``."""
    _check(RUN_EVENT, event, "the event")
    assert _absolute_uri(event["producer"]) and _absolute_uri(event["schemaURL"])
    facets: list[tuple[str, dict[str, Any]]] = []
    facets += [(f"run.facets.{k}", v) for k, v in (event["run"].get("facets") or {}).items()]
    facets += [(f"job.facets.{k}", v) for k, v in (event["job"].get("facets") or {}).items()]
    for side in ("inputs", "outputs"):
        for i, dataset in enumerate(event.get(side) or []):
            for group in ("facets", "inputFacets", "outputFacets"):
                facets += [(f"{side}[{i}].{group}.{k}", v) for k, v in (dataset.get(group) or {}).items()]
    for where, facet in facets:
        assert _absolute_uri(facet.get("_producer")), f"{where}: _producer is not an absolute URI"
        url = facet.get("_schemaURL")
        assert _absolute_uri(url) and "#" in url, f"{where}: _schemaURL {url!r} names no schema definition"
        _check(url, facet, where)
