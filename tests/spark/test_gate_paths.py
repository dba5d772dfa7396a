"""The read gate's path arithmetic on paths as Spark prints them (carriers/spark/gate.py ``_parent``, ``_real``): the
walk from a listed folder up to a read's root must stop at the root and never skip a folder."""

from __future__ import annotations

import os
from pathlib import Path

from carriers.spark.gate import _name, _parent, _real


def test_parents_keep_the_scheme_and_authority() -> None:
    assert _parent("file:/w/t/data/p=0") == "file:/w/t/data"
    assert _parent("file:/w") == "file:/"
    assert _parent("file:/") is None
    assert _parent("s3a://bucket/lake/t") == "s3a://bucket/lake"
    assert _parent("s3a://bucket/lake") == "s3a://bucket/"
    assert _parent("s3a://bucket/") is None
    assert _parent("file:///w/t") == "file:///w"
    assert _parent("/w/t") == "/w"
    assert _name("s3a://bucket/lake/_delta_log") == "_delta_log"


def test_a_local_link_is_resolved(tmp_path: Path) -> None:
    (tmp_path / "t" / "data").mkdir(parents=True)
    os.symlink(tmp_path / "t" / "data", tmp_path / "link")
    real = str((tmp_path / "t" / "data").resolve())
    assert _real(f"file:{tmp_path}/link") == f"file:{real}"
    assert _real(f"file://{tmp_path}/link") == f"file:{real}"
    assert _real(f"file:{real}") == f"file:{real}"  # unchanged when nothing to resolve
    assert _real(f"s3a://b{tmp_path}/link") == f"s3a://b{tmp_path}/link"  # remote: as it is
