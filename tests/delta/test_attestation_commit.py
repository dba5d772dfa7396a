"""Which attestation is in force at a metadata-only Delta version whose data is an attested version's.

An attestation is a metadata-only commit after the data commit. Versions between the data commit and it (a property
edit, or the ``UNSET TBLPROPERTIES`` commit older Spark hooks wrote before their ``SET``) read the same data: the
attestation recorded after them binds that data, and verify at such a version uses it, saying where it was found.
Never over-claimed: a data commit in between ends the search, and the reader view is checked at the version itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import DeltaCarrier, attest_after_write
from carriers.delta.commit import commit_properties
from carriers.delta.log import read_commit
from tests.delta.conftest import PROGRAM


def _two_commit_writer(carrier: DeltaCarrier) -> Callable[[dict[str, str], list[str]], None]:
    """The property writer of hooks before one-commit attestations: remove every key of the older attestation in
    one metadata commit, then set the new keys in another (ALTER TABLE UNSET, then SET TBLPROPERTIES)."""

    def write(updates: dict[str, str], remove: list[str]) -> None:
        commit_properties(carrier.storage, binding=0, set_keys={}, remove_keys=remove,
                          is_data_version=lambda latest: True, where="test")
        commit_properties(carrier.storage, binding=0, set_keys=updates, remove_keys=[],
                          is_data_version=lambda latest: True, where="test")

    return write


def _old_hook_attest(path: Path) -> None:
    carrier = DeltaCarrier(str(path))
    carrier.property_writer = _two_commit_writer(carrier)
    carrier.record(model="orders", program_hash=PROGRAM)


def _keys(path: Path, version: int) -> dict[str, str]:
    return props.attestation_keys(DeltaTable(str(path), version=version).metadata().configuration)


def test_the_unset_version_of_an_older_hook_verifies_with_the_attestation_recorded_after_it(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)  # version 1 binds 0
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 2
    _old_hook_attest(path)  # version 3: the older attestation removed; version 4: the new one, binding 2
    assert _keys(path, 3) == {} and _keys(path, 4)[props.KEY_VERSION] == "2"
    for version in (2, 3, 4):
        report = verify_table(DeltaCarrier(str(path)), version=version, level="bytes")
        assert report.passed, (version, report.human())
        assert report.attested_version == "2", version
    at_unset = verify_table(DeltaCarrier(str(path)), version=3, level="bytes")
    assert any("attestation for version 2 recorded at version 4, after version 3" in n for n in at_unset.notes), \
        at_unset.notes
    assert DeltaCarrier(str(path)).read(3) is not None  # `attest show T --version 3` finds it too


def test_a_property_edit_before_the_attestation_verifies_with_it_not_the_stale_one(tmp_path: Path) -> None:
    """Version 3 is a property edit on version 2's data still carrying version 0's attestation (stale there); the
    attestation of version 2 recorded at version 4 is the one describing version 3's data."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)  # version 1 binds 0
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 2
    DeltaTable(str(path)).alter.set_table_properties({"owner": "team-a"}, raise_if_not_exists=False)  # version 3
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)  # version 4 binds 2
    assert _keys(path, 3)[props.KEY_VERSION] == "0"
    report = verify_table(DeltaCarrier(str(path)), version=3, level="bytes")
    assert report.passed and report.attested_version == "2", report.human()


def test_no_attestation_of_another_data_version_is_borrowed(tmp_path: Path) -> None:
    """A data commit between the metadata-only version and the later attestation ends the search: that attestation
    binds other data, and the version stays unattested (never over-claimed)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)  # version 1 binds 0
    carrier = DeltaCarrier(str(path))
    owned = sorted(_keys(path, 1))
    commit_properties(carrier.storage, binding=0, set_keys={}, remove_keys=owned,
                      is_data_version=lambda latest: True, where="test")  # version 2: the attestation removed
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 3
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)  # version 4 binds 3
    report = verify_table(DeltaCarrier(str(path)), version=2, level="bytes")
    assert not report.passed and report.attested_version is None, report.human()
    assert [e.code.value for e in report.errors] == ["unattested"], report.human()
    assert DeltaCarrier(str(path)).read(2) is None


def test_the_carriers_own_commit_replaces_an_attestation_in_one_version(tmp_path: Path) -> None:
    """The reference: without a Spark hook, one metadata commit sets the new keys and removes the older ones (an
    ``inputs_hash`` the new run did not observe included)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": [1, 2]}))  # version 0
    first = attest_after_write(str(path), model="orders", program_hash=PROGRAM)  # version 1
    assert first.manifest is not None
    write_deltalake(str(path), pa.table({"v": [3]}), mode="append")  # version 2
    attest_after_write(str(path), model="orders", program_hash=PROGRAM)  # version 3
    assert DeltaTable(str(path)).version() == 3
    commit = read_commit(DeltaCarrier(str(path)).storage, 3)
    assert commit is not None and not commit.touches_files and commit.configuration is not None
    assert props.attestation_keys(commit.configuration)[props.KEY_VERSION] == "2"
