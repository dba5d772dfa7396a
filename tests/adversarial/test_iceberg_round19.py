"""Round 19 on Iceberg tables named by a local folder (read through the configured catalog owning it, or statically).

``attest verify file://localhost/<warehouse>/ns/t`` (RFC 8089's spelling of this machine) took the folder as the
relative path ``localhost/<warehouse>/ns/t``: no Iceberg folder there, so it was read as a Delta table, exit 2
``table_not_found``, while ``file:///<warehouse>/ns/t`` verified the Iceberg table. It now opens the folder delta-rs
and the Iceberg folder reader open for the URI (``carriers.refs.local_path``), in any case of the host name; an audit
of the warehouse by that spelling walks it likewise.
"""

# ruff: noqa: F811  (the catalog and table fixtures, imported)
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import verify
from tests.adversarial.test_audit_discovery_attacks import audit
from tests.adversarial.test_iceberg_attacks import catalog, iceberg_env, table  # noqa: F401  (fixtures)


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST"])
def test_an_iceberg_folder_named_through_localhost_is_the_same_table(
    catalog: Any, table: Any, tmp_path: Path, host: str
) -> None:
    folder = tmp_path / "warehouse" / "ns" / "t"
    rc_plain, plain = verify(f"file://{folder}")
    assert rc_plain == 0 and plain["verdict"].startswith("VERIFIED"), plain
    rc, doc = verify(f"file://{host}{folder}")
    assert (rc, doc["verdict"].split(" — ")[0]) == (rc_plain, plain["verdict"].split(" — ")[0]), doc
    rc, doc = audit(f"file://{host}{tmp_path / 'warehouse'}")
    assert rc == 0 and [t["outcome"] for t in doc["tables"]] == ["VERIFIED"], doc


def test_an_iceberg_folder_uri_naming_two_folders_is_refused(catalog: Any, table: Any, tmp_path: Path) -> None:
    """``file://<wh>/ns/%74`` is the catalog's table folder ``<wh>/ns/t`` decoded, and a folder literally named ``%74``
    as Hadoop's ``Path`` keeps it (Delta measured with Spark: tests/adversarial/test_audit_round19.py). With both
    there, the folder read went to ``<wh>/ns/t`` (VERIFIED through its catalog) whatever the literal folder holds."""
    import shutil

    folder = tmp_path / "warehouse" / "ns"
    shutil.copytree(folder / "t", folder / "%74")
    rc, doc = verify(f"file://{folder}/%74")
    assert rc == 2 and [e["code"] for e in doc["errors"]] == ["invalid_argument"], doc
    assert "ambiguous" in doc["errors"][0]["message"], doc
