"""The content digests an attestation recorded, against the driver's own path (tests/spark/test_executor_content.py,
tests/spark/cluster_job.py): what the executors computed must be what ``file_content_digests`` computes here."""

from __future__ import annotations

import json
from typing import Any

from attest.content import ContentDigest
from carriers.content_store import load_records, parse_binding, record_content
from carriers.core import AttestedTable


def against_driver(carrier: AttestedTable, *, first: bool = False) -> dict[str, Any]:
    """The attestation in force: each live data file's recorded digest (its companion record) against the driver's
    digest of the same file at the attested version, and the recorded total against the sum of the driver's.
    ``first`` (the table's first attestation): the ``content`` object and companion file the driver's path records
    are the recorded ones, byte for byte (write_once refuses other bytes under the companion's name)."""
    att = carrier.read(None)
    assert att is not None and att.content is not None and att.attested_version is not None, att
    binding = parse_binding(att.content)
    records = load_records(carrier, binding)
    v = carrier._resolve(att.attested_version)
    live = carrier._live(v)
    data = [f for f in live.files if f.kind == "data"]
    driver = carrier.file_content_digests(v, data)
    differ = [f.path for f in data if records.get((f.path, live.view.files.get(f.path, ""))) != driver.get(f.path)]
    out = {"files": len(data), "differ": differ, "read": len(driver),
           "total_same": ContentDigest.total(driver.values()) == binding.total}
    if first:
        out["content_same"] = record_content(carrier, v, live, None) == json.loads(json.dumps(att.content))
    return out
