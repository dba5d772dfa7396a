"""Round 19, held: the per-policy glob forms (test_policy_round19.py) never go stale across policies loaded later, and
do not change what a policy object equals."""

from __future__ import annotations

import os
from pathlib import Path

from attest.signing.statement import Target
from tests.adversarial.test_policy_round19 import DOC, _trust


def test_a_link_changed_after_loading_is_seen_by_the_next_policy(tmp_path: Path) -> None:
    (tmp_path / "a" / "finance").mkdir(parents=True)
    (tmp_path / "b" / "finance").mkdir(parents=True)
    link = tmp_path / "lake"
    link.symlink_to(tmp_path / "a")
    glob = f"{link}/finance/*"
    first = _trust(glob)
    in_a = Target.table(f"file://{tmp_path}/a/finance/orders", 1, DOC, None)
    in_b = Target.table(f"file://{tmp_path}/b/finance/orders", 1, DOC, None)
    assert first.requires_signature(in_a) and not first.requires_signature(in_b)
    os.unlink(link)
    link.symlink_to(tmp_path / "b")
    second = _trust(glob)
    assert second.requires_signature(in_b) and not second.requires_signature(in_a)


def test_a_policy_with_its_forms_computed_still_equals_a_fresh_one(tmp_path: Path) -> None:
    used, fresh = _trust(f"{tmp_path}/x/*"), _trust(f"{tmp_path}/x/*")
    used.requires_signature(Target.table(f"file://{tmp_path}/x/t", 1, DOC, None))
    assert used == fresh and repr(used) == repr(fresh)
