"""The reader view's keys held as the file list's own strings (carriers/sidecar.py ``SHARED_KEYS``; docs/scale.md,
sixteenth pass (Delta verify)).

Where the view's keys are the file list's paths in its order, the reader keeps the file list's strings as the keys
rather than a second copy of each. The sidecar read is the same either way — the same files, view, digest, refusals —
on random and mutated sidecars in random pieces and windows; the keys are shared on a regular sidecar whatever the
windows (members read alone between two runs included), and a view whose keys are not the file list's paths (a key
more, one fewer, another order) is read as without the sharing.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import carriers.sidecar as sidecar_module
from attest.canonical import blake3_hex
from attest.view import ReaderView
from carriers.sidecar import Sidecar
from tests.adversarial.test_sidecar_regular_runs import HEX, _file, _mutated, _read_switched, _same_views, _sidecars


def _both(data: bytes, piece: int, window: int, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[Any, Any]:
    """The reader with the keys shared and without, windows of ``window`` characters."""
    shared, own = _read_switched(data, piece, window, (sidecar_module, "SHARED_KEYS"), blake3_hex(data))
    _same_views(shared, own)
    return shared, own


def _shared_keys(sidecar: Sidecar) -> int:
    assert sidecar.view is not None
    paths = {id(f.path) for f in sidecar.files}
    return sum(id(key) in paths for key in sidecar.view.files)


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(st.one_of(_sidecars(), _mutated()), st.integers(1, 400), st.integers(8, 600))
def test_shared_keys_read_what_the_own_keys_read(data: bytes, piece: int, window: int) -> None:
    _both(data, piece, window)


def _sidecar(paths: list[str], keys: list[str]) -> bytes:
    files = tuple(_file(p, i, i, "data") for i, p in enumerate(paths))
    view = ReaderView(table={"name": "t"}, files={k: HEX for k in keys})
    return Sidecar(attested_version="1", files=files, inputs=(), manifest=HEX, table="delta:/t", view=view).encode()[0]


PATHS = [f"d={i % 5}/part-{i:05d}.parquet" for i in range(3000)]


@pytest.mark.parametrize("piece, window", [(1 << 20, 1 << 20), (4096, 4096), (997, 200), (7, 16)])
def test_a_regular_sidecars_keys_are_its_paths(piece: int, window: int) -> None:
    shared, own = _both(_sidecar(PATHS, PATHS), piece, window)
    assert _shared_keys(shared) == len(PATHS)  # every key the file list's string, runs or members read alone
    assert _shared_keys(own) == 0


@pytest.mark.parametrize("keys", [
    sorted([*PATHS, "d=9/a-deletion-vector.bin"]),  # a key more (the file list lacks it)
    PATHS[:1500] + PATHS[1501:],  # a key fewer
    [p.replace("part-01", "part-x1") for p in PATHS],  # other keys from some point on
    PATHS[:10],  # the view stops early
])
@pytest.mark.parametrize("piece, window", [(1 << 20, 1 << 20), (997, 200)])
def test_keys_not_the_paths_are_read_as_without_sharing(keys: list[str], piece: int, window: int) -> None:
    shared, _ = _both(_sidecar(sorted(PATHS), keys), piece, window)
    assert isinstance(shared, Sidecar) and shared.view is not None
    assert list(shared.view.files) == sorted(keys)
