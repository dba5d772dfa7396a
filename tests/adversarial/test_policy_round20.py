"""Round 20: a table's names are spelt once per judgement.

``TrustPolicy.evaluate`` spelt every name of a table four times (``requires_signature``, ``_required_by``, and twice
for ``required_by``), a ``realpath`` of the same path for each of its three names each time: 12 per table, most of an
audit's policy work (3,000 tables under five globs: 3.2 s, now 0.9 s on the same machine). They are now spelt once
per judgement (``_TableNames``), never kept beyond it: a link changed between two judgements is seen by the second.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attest.signing import policy as policy_module
from attest.signing.statement import Target
from tests.adversarial.test_policy_round19 import DOC, _trust


def _target(path: Path) -> Target:
    return Target.table(path.as_uri(), 1, DOC, None, names=(str(path),), locations=(path.as_uri(),))


def test_a_judgement_resolves_each_path_of_a_table_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = os.path.realpath

    def counted(path: str) -> str:
        calls.append(path)
        return real(path)

    trust = _trust(f"{tmp_path}/finance/*", "s3://b/lake/*")
    hit, miss = _target(tmp_path / "finance" / "orders"), _target(tmp_path / "hr" / "people")
    trust.evaluate(None, miss)  # the globs' own forms, computed once per policy, before counting
    monkeypatch.setattr(policy_module.os.path, "realpath", counted)
    result = trust.evaluate(None, miss)
    assert result.passed and result.required_by == (), result
    assert calls == [str(tmp_path / "hr" / "people")], calls  # three names, one path: one resolution
    calls.clear()
    result = trust.evaluate(None, hit)
    assert not result.passed and result.code is not None and result.required_by == (f"{tmp_path}/finance/*",)
    assert calls == [str(tmp_path / "finance" / "orders")], calls


def test_a_link_changed_between_two_judgements_is_seen(tmp_path: Path) -> None:
    (tmp_path / "finance" / "orders").mkdir(parents=True)
    (tmp_path / "hr" / "people").mkdir(parents=True)
    link = tmp_path / "lake" / "t"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "hr" / "people")
    trust = _trust(f"{tmp_path}/finance/*")
    assert trust.evaluate(None, _target(link)).passed  # leads to hr: not covered
    link.unlink()
    link.symlink_to(tmp_path / "finance" / "orders")
    assert not trust.evaluate(None, _target(link)).passed  # now leads to finance: covered, unsigned fails
