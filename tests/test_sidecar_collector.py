"""The sidecar's reader view read with the cycle collector paused (carriers/sidecar.py, ``many_records`` around
``view_object``; docs/scale.md, nineteenth pass): the view's members are strings in a dict, no cycles, and the
collections their allocations set off (a full one among them, traversing every file record made before) were a tenth
of a second at 200,000 files. The sidecar read is the same with the collector paused or not — on random and mutated
sidecars in random pieces and windows — and the collector is as it was after the read (on, or off when it was off)."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import carriers.sidecar as sidecar_module
from attest.canonical import blake3_hex
from attest.fast import record as fast_record
from carriers.sidecar import Sidecar
from tests.adversarial.test_sidecar_regular_runs import _mutated, _read, _read_switched, _same_views, _sidecars
from tests.test_sidecar_shared_keys import PATHS, _sidecar


def _paused_in_view(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the collector was on at each member or run of the view read (a spy on the view's readers)."""
    seen: list[bool] = []
    for name in ("_member_run", "_hash_member"):
        real = getattr(sidecar_module._Reader, name)

        def spy(self: Any, *args: Any, _real: Any = real) -> Any:
            seen.append(gc.isenabled())
            return _real(self, *args)

        monkeypatch.setattr(sidecar_module._Reader, name, spy)
    return seen


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(st.one_of(_sidecars(), _mutated()), st.integers(1, 400), st.integers(8, 600))
def test_the_view_read_paused_is_the_view_read(data: bytes, piece: int, window: int) -> None:
    paused, running = _read_switched(data, piece, window, (fast_record, "ON"), blake3_hex(data))
    assert gc.isenabled()  # the paused read put the collector back (the second read leaves it alone)
    _same_views(paused, running)


@pytest.mark.parametrize("piece, window", [(1 << 20, 1 << 20), (997, 200)])
def test_the_collector_is_paused_while_the_view_is_read(
    piece: int, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sidecar_module, "CHUNK_BYTES", window)
    monkeypatch.setattr(fast_record, "ON", True)
    seen = _paused_in_view(monkeypatch)
    data = _sidecar(PATHS, PATHS)
    assert isinstance(_read(data, piece, blake3_hex(data)), Sidecar)
    assert seen and not any(seen)  # every run of the view read with the collector off
    assert gc.isenabled()  # and on again after
    gc.disable()
    try:
        _read(data, piece, blake3_hex(data))
        assert not gc.isenabled()  # left off when it was off
    finally:
        gc.enable()


def test_with_the_fast_path_off_the_collector_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_record, "ON", False)
    seen = _paused_in_view(monkeypatch)
    data = _sidecar(PATHS, PATHS)
    assert isinstance(_read(data, 4096, blake3_hex(data)), Sidecar)
    assert seen and all(seen)
