"""Conformance tests run the reference implementation (tests/conformance/reference.py says where it is found)."""

from __future__ import annotations

import pytest

from tests.conformance import reference


@pytest.fixture
def reference_built() -> None:
    """Skip (saying why) when the reference binaries are absent; fail instead under ATTEST_REQUIRE_REFERENCE=1."""
    reference.require()
