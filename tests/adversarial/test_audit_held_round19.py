"""Round 19, held: a ``file:`` URI with a percent-escape naming one folder is walked as delta-rs opens it (the folder
with a space, ``Path.as_uri``'s ``%20``), and a lake holding a folder literally named ``%6cake`` audits that copy by
its path."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.adversarial.test_audit_discovery_attacks import attested, audit, by_table


def test_a_percent_escaped_file_uri_walks_the_folder_delta_rs_opens(tmp_path: Path) -> None:
    lake = tmp_path / "x"
    attested(lake / "lake")
    rc, doc = audit(f"file://{lake}/%6cake")  # only /x/lake there: walked, named as typed
    assert rc == 0 and [(t["table"], t["outcome"]) for t in doc["tables"]] == [(f"file://{lake}/%6cake", "VERIFIED")], (
        doc
    )
    shutil.copytree(lake / "lake", lake / "%6cake")  # a copy in a folder literally so named, tampered
    victim = sorted((lake / "%6cake").rglob("*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 1
    victim.write_bytes(bytes(data))
    rc, doc = audit(str(lake))  # the literal folder, named by its path, is the tampered copy
    assert rc == 1 and by_table(doc)[str(lake / "%6cake")]["outcome"] == "NOT VERIFIED", doc
    rc, doc = audit(f"file://{lake}/my%20lake")
    assert rc == 2 and doc["errors"][0]["code"] == "table_not_found", doc
    attested(lake / "my lake")
    rc, doc = audit(f"file://{lake}/my%20lake")
    assert rc == 0 and [t["outcome"] for t in doc["tables"]] == ["VERIFIED"], doc
