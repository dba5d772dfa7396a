"""Property tests: any single edited value in the metadata map, and any edited byte of the sidecar, never verifies.

The metadata map is every key an attestation owns (``recipe_manifest.*`` and ``recipe_attest.*``) plus every table
property that changes what readers get; edits are real commits (Delta) or hand-written metadata (Iceberg), then the
whole verification runs as a user runs it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attest.verify.table import verify_table
from carriers import properties as props
from carriers.delta.carrier import READ_PROPERTIES, DeltaCarrier, attest_after_write
from tests.adversarial.conftest import PROGRAM, metadata_commit, rows

VALUES = st.text(max_size=70) | st.sampled_from(["", "0", "1", "true", "name", "v1", "0.1", "a" * 64, "f" * 64])


@pytest.fixture(scope="module")
def template() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="attest-props-"))
    path = root / "t"
    write_deltalake(str(path), rows(), partition_by=["p"])
    attest_after_write(str(path), model="orders", program_hash=PROGRAM, inputs=[])
    assert verify_table(DeltaCarrier(str(path)), level="schema").passed
    yield path
    shutil.rmtree(root, ignore_errors=True)


def _fresh(template: Path) -> Path:
    dst = Path(tempfile.mkdtemp(prefix="attest-edit-")) / "t"
    shutil.copytree(template, dst)
    return dst


def _owned_keys(template: Path) -> list[str]:
    return sorted(props.attestation_keys(DeltaTable(str(template)).metadata().configuration))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_single_edited_value_never_verifies(template: Path, data: st.DataObject) -> None:
    config = DeltaTable(str(template)).metadata().configuration
    key = data.draw(st.sampled_from([*_owned_keys(template), *READ_PROPERTIES]), label="key")
    value = data.draw(VALUES.filter(lambda v: v != config.get(key)), label="value")
    path = _fresh(template)
    try:
        metadata_commit(path, lambda m: m["configuration"].update({key: value}))
        for level in ("schema", "bytes"):
            report = verify_table(DeltaCarrier(str(path)), level=level)  # type: ignore[arg-type]
            assert not report.passed, (key, value, report.human())
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_added_key_under_our_prefixes_never_verifies(template: Path, data: st.DataObject) -> None:
    segment = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
    prefix = data.draw(st.sampled_from([props.PREFIX, props.PREFIX + "subject.", props.PREFIX + "producer.",
                                        props.CARRIER_PREFIX, props.CARRIER_PREFIX + "binding."]))
    key = prefix + data.draw(segment)
    config = DeltaTable(str(template)).metadata().configuration
    if key in config:
        return
    value = data.draw(VALUES.filter(bool))
    path = _fresh(template)
    try:
        metadata_commit(path, lambda m: m["configuration"].update({key: value}))
        report = verify_table(DeltaCarrier(str(path)), level="schema")
        assert not report.passed, (key, value, report.human())
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_edited_byte_of_the_sidecar_never_verifies(template: Path, data: st.DataObject) -> None:
    rel = DeltaTable(str(template)).metadata().configuration[props.KEY_SIDECAR_PATH]
    size = (template / rel).stat().st_size
    index = data.draw(st.integers(0, size - 1), label="index")
    flip = data.draw(st.integers(1, 255), label="xor")
    path = _fresh(template)
    try:
        sidecar = path / rel
        raw = bytearray(sidecar.read_bytes())
        raw[index] ^= flip
        sidecar.write_bytes(bytes(raw))
        report = verify_table(DeltaCarrier(str(path)), level="schema")
        assert not report.passed and [p.code.value for p in report.errors] == ["sidecar_mismatch"], report.human()
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


def test_the_template_itself_verifies_at_every_level(template: Path) -> None:
    """The control: without an edit, a copy verifies (so the failures above are the edits' doing)."""
    path = _fresh(template)
    try:
        for level in ("schema", "files", "bytes"):
            assert verify_table(DeltaCarrier(str(path)), level=level).passed  # type: ignore[arg-type]
        assert json.loads((path / "_delta_log" / f"{1:020d}.json").read_text().splitlines()[0])
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
