"""``record`` makes its per-file records after the hashing (identities, the manifest's outputs, the sidecar) with the
cycle collector paused and restores it after (docs/scale.md, "sixteenth pass"), and the sidecar it writes is the
general writer's bytes (``canonical_bytes`` of its document: the columns' writer ran, not the general one alone)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import Table

import carriers.core
from attest import canonical
from attest.canonical import canonical_bytes
from carriers.iceberg.carrier import IcebergCarrier
from carriers.sidecar import Sidecar
from tests.iceberg.conftest import CATALOG, PROGRAM, local, rows


def test_the_records_after_the_hashing_are_made_with_the_collector_paused(table: Table,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    table.append(rows(0))
    table.append(rows(3))
    seen: dict[str, bool] = {}
    built, check = getattr(carriers.core, "built_manifest"), IcebergCarrier._check_in_force  # noqa: B009 - not exported

    def watched_build(*a: Any, **k: Any) -> Any:
        seen["manifest"] = gc.isenabled()
        return built(*a, **k)

    def watched_check(self: IcebergCarrier, *a: Any) -> None:
        seen["check"] = gc.isenabled()
        check(self, *a)

    monkeypatch.setattr(carriers.core, "built_manifest", watched_build)
    monkeypatch.setattr(IcebergCarrier, "_check_in_force", watched_check)
    assert gc.isenabled()
    IcebergCarrier(table, catalog_name=CATALOG).record(model="m", program_hash=PROGRAM)
    assert seen == {"manifest": False, "check": False}
    assert gc.isenabled()  # restored


def test_the_collector_is_restored_when_the_record_fails(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    table.append(rows(0))

    def refused(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("refused")

    monkeypatch.setattr(carriers.core, "built_manifest", refused)
    with pytest.raises(RuntimeError):
        IcebergCarrier(table, catalog_name=CATALOG).record(model="m", program_hash=PROGRAM)
    assert gc.isenabled()


def test_the_sidecar_written_is_the_general_writers_bytes(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(4):
        table.append(rows(n))
    ran = {"rows": 0}
    real = canonical.rows_text

    def counted(*a: Any) -> bytes | None:
        got = real(*a)
        ran["rows"] += got is not None
        return got

    monkeypatch.setattr("carriers.sidecar.rows_text", counted)
    carrier = IcebergCarrier(table, catalog_name=CATALOG)
    result = carrier.record(model="m", program_hash=PROGRAM)
    assert ran["rows"] > 0
    assert result.sidecar is not None
    stored = Path(local(result.sidecar))
    data = stored.read_bytes()
    sidecar = Sidecar.decode(data, stored.stem)
    assert len(sidecar.files) == 4
    assert data == canonical_bytes(sidecar.to_dict())  # what the writer before (whole or in pieces) wrote
    att = IcebergCarrier(table, catalog_name=CATALOG).read()
    assert att is not None and not att.problems


def test_the_record_command_runs_with_the_collector_paused(table: Table, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``attest record``: the hashing and the manifest's ``to_dict`` too (seventeenth pass, Iceberg record)."""
    from attest.cli import main
    from attest.model import Manifest
    from tests.iceberg.conftest import catalog_properties

    table.append(rows(0))
    seen: dict[str, bool] = {}
    hashing, to_dict = IcebergCarrier.hash_files, Manifest.to_dict

    def watched_hashing(self: IcebergCarrier, *a: Any, **k: Any) -> Any:
        seen["hashing"] = gc.isenabled()
        return hashing(self, *a, **k)

    def watched_to_dict(self: Manifest) -> Any:
        seen["to_dict"] = gc.isenabled()
        return to_dict(self)

    monkeypatch.setattr(IcebergCarrier, "hash_files", watched_hashing)
    monkeypatch.setattr(Manifest, "to_dict", watched_to_dict)
    props = catalog_properties(tmp_path)
    assert gc.isenabled()
    assert main(["record", "--catalog", CATALOG, "ns.t", "--uri", props["uri"], "--warehouse", props["warehouse"],
                 "--model", "m", "--program-hash", PROGRAM]) == 0
    assert seen == {"hashing": False, "to_dict": False}
    assert gc.isenabled()  # restored
    assert IcebergCarrier(table.refresh(), catalog_name=CATALOG).read() is not None  # recorded


def test_the_record_command_restores_the_collector_when_it_fails(table: Table, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from attest.cli import main
    from tests.iceberg.conftest import catalog_properties

    table.append(rows(0))

    def refused(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("refused")

    monkeypatch.setattr(carriers.core, "built_manifest", refused)
    props = catalog_properties(tmp_path)
    assert gc.isenabled()
    assert main(["record", "--catalog", CATALOG, "ns.t", "--uri", props["uri"], "--warehouse", props["warehouse"],
                 "--model", "m", "--program-hash", PROGRAM]) != 0  # refused, said as an internal error
    assert gc.isenabled()
