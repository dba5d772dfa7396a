"""Round 19, delete applicability: variants tried and held (pinned so they stay held).

Delta deletion vectors stored in a file, in a ``dataChange: false`` rewrite of the attested file (its bytes under a
new name, the attested bitmap in a new vector file), each integrity field broken. Measured (delta-rs 1.x / its
kernel; Spark 4.1 with delta-spark 4.4):

- the CRC after the bitmap flipped: delta-rs refuses ("CRC32 checksum mismatch"), Spark refuses
  (``DELTA_DELETION_VECTOR_CHECKSUM_MISMATCH``);
- the descriptor's ``sizeInBytes`` 4 below the size the file states: both refuse (``DV size mismatch`` /
  ``DELTA_DELETION_VECTOR_SIZE_MISMATCH``);
- the file's format-version byte 2: delta-rs refuses ("Invalid version 2"), Spark reads the attested rows;
- a vector of rows {1, 2} whose file size, descriptor size and CRC all stop 2 bytes before the bitmap's end (the
  stored analogue of the inline vector stated short, test_deletes_round19.py): delta-rs refuses it ("Failed to
  deserialize"; Spark not measured: it reads the stated bytes as for an inline vector).

No reader returns rows other than the attested ones, and verify says ``table_unreadable`` (delta-rs, which the digest
reads with, refuses), never VERIFIED.

Iceberg: the delete manifest's entry given its own sequence number explicitly, its list ``sequence_number`` left as
written (the honest value): both readers plan as before, and it verifies; the data manifest's ``min_sequence_number``
lowered below its entries (a wider summary, as writers may write one): pyiceberg keeps more delete manifests, rows
unchanged, verifies.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from attest.errors import AttestError  # noqa: F401
from carriers.iceberg.carrier import attest_after_write
from tests.adversarial import test_delta_dv_cardinality as cardinality
from tests.adversarial.conftest import codes, verify
from tests.adversarial.iceberg_lists import edit_manifest_list
from tests.adversarial.test_deletes_round19 import explicit_then_lowered, ids, partitioned
from tests.delta.dv import MAGIC, _roaring32
from tests.iceberg.conftest import (  # noqa: F401
    CATALOG,
    PROGRAM,
    catalog_properties,
    local,
)

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog

table = cardinality.table


def _broken_vector(path: Path, how: str) -> None:
    """The attested file rewritten (``dataChange: false``) with its vector (row 1) in a new file, ``how`` broken."""
    rows = [1, 2] if how == "cut" else [1]
    data = struct.pack("<i", MAGIC) + struct.pack("<QI", 1, 0) + _roaring32(rows)
    if how == "cut":  # the file's size, the descriptor's and the CRC all of the bitmap less its last 2 bytes
        data = data[:-2]
    crc = zlib.crc32(data) & 0xFFFFFFFF
    body = struct.pack(">i", len(data)) + data + struct.pack(">I", crc ^ 1 if how == "crc" else crc)
    cardinality._rewrite(path, buckets=[(0, rows)])
    (vector,) = (path / "cd").glob("*.bin")
    vector.write_bytes((b"\x02" if how == "version" else b"\x01") + body)
    if how in ("size", "cut"):
        log = sorted(path.glob("_delta_log/*.json"))[-1]
        actions = [json.loads(line) for line in log.read_text().splitlines()]
        for action in actions:
            if "add" in action:
                action["add"]["deletionVector"]["sizeInBytes"] = len(data) - (4 if how == "size" else 0)
                action["add"]["deletionVector"]["cardinality"] = len(rows)
        log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_the_honest_vector_in_a_new_file_verifies(table: Path) -> None:
    _broken_vector(table, "none")
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc == 0 and doc["verdict"].startswith("VERIFIED (content; compacted"), json.dumps(doc)


@pytest.mark.parametrize("how", ["crc", "size", "version", "cut"])
def test_a_vector_failing_its_integrity_checks_is_never_verified(table: Path, how: str) -> None:
    _broken_vector(table, how)
    said = {"crc": "CRC32", "size": "size mismatch", "version": "Invalid version", "cut": "deserialize"}[how]
    with pytest.raises(Exception, match=said):
        cardinality._delta_rs(table)
    rc, doc = verify(str(table), "--level", "bytes")
    assert rc != 0 and not doc["passed"] and "table_unreadable" in codes(doc), json.dumps(doc)


def test_an_explicit_sequence_number_listed_as_written_verifies(catalog: SqlCatalog) -> None:
    table = partitioned(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    explicit_then_lowered(catalog.load_table("ns.t"), listed=3)
    assert ids(catalog.load_table("ns.t"), "p = 2") == [4]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)


def test_a_data_manifest_summary_wider_than_its_entries_verifies(catalog: SqlCatalog) -> None:
    from pyiceberg.manifest import ManifestContent

    table = partitioned(catalog)
    attest_after_write(table, model="orders", program_hash=PROGRAM)
    snap = catalog.load_table("ns.t").current_snapshot()
    assert snap is not None

    def edit(manifests: list[Any], names: list[str]) -> None:
        for m in manifests:
            if m.content == ManifestContent.DATA:
                m._data[names.index("min_sequence_number")] = 0

    edit_manifest_list(local(snap.manifest_list), 2, edit)
    assert ids(catalog.load_table("ns.t"), "p = 2") == [4]
    rc, doc = verify(f"iceberg://{CATALOG}/ns.t")
    assert rc == 0 and doc["passed"], json.dumps(doc)

