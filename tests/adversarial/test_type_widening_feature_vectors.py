"""A Delta table with the typeWidening reader feature on (docs/content-digest.md, "Delta type widening", "The feature
on"): delta-rs 1.6 reads no deletion vector of it, so the digest reads none where the log names none. An attacker's
log naming a deletion vector on such a table — with or without the deletionVectors feature — must never have it
skipped (the rows the vector deletes would be counted as read): the record is refused, nothing is attested. (Two
guards hold it: the live files' cross-check of the vectors delta-rs applies against those the log names refuses it
first — measured: it still does with the digest's skip forced on — and the digest skips only where the log names
none.)"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import DeltaCarrier
from tests.adversarial.conftest import PROGRAM, latest, log_state, write_commit
from tests.adversarial.test_delta_protocol_view import protocol

# A deletion vector descriptor as Spark writes one (a file beside the data, UUID-relative z85 path); the file is not
# there: no reader can apply it, and none may be assumed away.
VECTOR = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
          "cardinality": 1}


@pytest.mark.parametrize("features", [["typeWidening"], ["typeWidening", "deletionVectors"]])
def test_a_named_deletion_vector_is_never_skipped(tmp_path: Path, features: list[str]) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": pa.array([1, 2, 3], pa.int32())}))
    write_commit(path, [protocol(3, 7, features, features)])
    rel, add = next(iter(log_state(path).adds.items()))
    write_commit(path, [{"remove": {"path": rel, "dataChange": True, "deletionTimestamp": 1}},
                        {"add": {**add, "path": rel, "dataChange": True, "deletionVector": VECTOR}}])
    with pytest.raises(AttestError) as raised:
        DeltaCarrier(str(path)).record(model="orders", program_hash=PROGRAM)
    # Without the deletionVectors feature Spark applies no vector and delta-rs every one: table_inconsistent
    # (tests/adversarial/test_delta_dv_cardinality.py); with it, the vector no reader can read: table_unreadable.
    wanted = "table_unreadable" if "deletionVectors" in features else "table_inconsistent"
    assert raised.value.code.value == wanted and "deletion vector" in raised.value.message, raised.value
    assert latest(path) == 2  # nothing committed: no attestation
