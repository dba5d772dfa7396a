"""Recording an Iceberg table again as the code before a fix did, for attacks on what a record reuses."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from carriers.iceberg.carrier import attest_after_write
from tests.adversarial.conftest import verify
from tests.iceberg.conftest import CATALOG, PROGRAM

if TYPE_CHECKING:
    import pytest
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table


def attested_again(catalog: SqlCatalog, table: Table, monkeypatch: pytest.MonkeyPatch | None,
                   identifier: str = "ns.t") -> Table:
    """``table`` attested again, as now or (``monkeypatch`` given) as the code before ``content_reuse_blocked`` did:
    every digest of the attestation in force reused. The table then verifies (the attack comes after); returned
    reloaded."""
    if monkeypatch is None:
        attest_after_write(table, model="orders", program_hash=PROGRAM)
    else:  # as the code before recorded it: every digest of the attestation in force reused
        from carriers.iceberg.carrier import IcebergCarrier

        with monkeypatch.context() as patched:
            patched.setattr(IcebergCarrier, "content_reuse_blocked", lambda self, previous, version: set())
            attest_after_write(table, model="orders", program_hash=PROGRAM)
    rc, doc = verify(f"iceberg://{CATALOG}/{identifier}")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED"), json.dumps(doc)
    return catalog.load_table(identifier)
