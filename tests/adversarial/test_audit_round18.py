"""Round 18: what an audit skips, and what a trust policy names.

A table in a hidden folder (``lake/_staging/orders``, ``lake/.orders``, one copied into a table's own ``_delta_log``)
is not walked: readers of the folders above never list it, and ``attest audit`` only listed it ``SKIPPED``. Under a
trust policy whose ``require_signed`` covers its name (``file:///lake/*``, or ``--key``: every table), the unsigned
table was never judged and the audit passed, exit 0 — a reader opening ``lake/_staging/orders`` by its name got a
table the policy requires signed. Such a table is now an ERROR line (``table_not_audited``) naming the glob; one
audited by its name through another target is judged as any table.

A link to a table inside a hidden folder (``lake/_staging/orders`` -> a table elsewhere) was not even listed: the
search of a hidden folder does not follow links, and passed over them in silence. Each is now listed, and one to a
table is a table to the policy as above.

A ``file:`` glob without an authority (``file:/lake/./finance/*``, as Hadoop and Spark print a local path) was matched
as written only: its ``.``/``..`` segments, repeated slashes and a linked folder were not folded as a path glob's are,
so it covered no table and the unsigned table passed ``attest verify``, exit 0.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attest.signing.policy import TrustPolicy
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_audit_discovery_attacks import audit
from tests.adversarial.test_policy_names import _policy, _signed, _unsigned
from tests.adversarial.test_signing_attacks import KEY


def _rows(doc: dict[str, object]) -> list[tuple[str, str, str | None]]:
    return [(t["table"], t["outcome"], t["code"]) for t in doc["tables"]]  # type: ignore[attr-defined]


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """A signed ``finance/orders``; nothing else."""
    lake = tmp_path / "lake"
    _signed(lake / "finance" / "orders")
    return lake


@pytest.mark.parametrize("hidden", ["_staging/orders", ".orders", "_staging/eu/orders",
                                    "finance/orders/_change_data/t"])
def test_a_hidden_table_the_policy_requires_signed_fails_the_audit(lake: Path, tmp_path: Path, hidden: str) -> None:
    _unsigned(lake / hidden)
    policy = _policy(tmp_path, [f"file://{lake}/*"])
    rc, doc = audit(str(lake), "--policy", policy)
    assert rc == 2, doc
    assert sorted(_rows(doc)) == sorted([(str(lake / "finance" / "orders"), "VERIFIED", None),
                                         (str(lake / hidden), "ERROR", "table_not_audited")]), doc
    error = next(t for t in doc["tables"] if t["outcome"] == "ERROR")
    assert f"require_signed glob 'file://{lake}/*'" in error["message"], error
    assert "audit it by its name" in error["message"], error
    assert doc["skipped"] == [], doc  # an ERROR line, not listed twice


def test_a_key_requires_every_table_so_a_hidden_one_fails_the_audit(lake: Path, tmp_path: Path) -> None:
    _unsigned(lake / "_staging" / "orders")
    (tmp_path / "ci.pub").write_bytes(KEY.public_pem)
    rc, doc = audit(str(lake), "--key", str(tmp_path / "ci.pub"))
    assert rc == 2 and (str(lake / "_staging" / "orders"), "ERROR", "table_not_audited") in _rows(doc), doc


def test_a_link_to_a_table_in_a_hidden_folder_is_never_passed_over(lake: Path, tmp_path: Path) -> None:
    """``lake/_staging/orders`` a link to an unsigned table: not listed at all before (exit 0, ``skipped`` empty)."""
    _unsigned(tmp_path / "elsewhere")
    (lake / "_staging").mkdir()
    os.symlink(tmp_path / "elsewhere", lake / "_staging" / "orders")
    rc, doc = audit(str(lake))
    assert rc == 0 and [s["path"] for s in doc["skipped"]] == [str(lake / "_staging" / "orders")], doc
    assert "a link to" in doc["skipped"][0]["message"] and "a delta table" in doc["skipped"][0]["message"], doc
    rc, doc = audit(str(lake), "--policy", _policy(tmp_path, [f"{lake}/*"]))
    assert rc == 2 and (str(lake / "_staging" / "orders"), "ERROR", "table_not_audited") in _rows(doc), doc


def _globs(lake: Path, link: Path) -> list[str]:
    return [f"file:{lake}/./finance/*", f"file:{lake}//finance/*", f"file:{lake}/x/../finance/*",
            f"file:{link}/finance/*", f"file:{link}/fin?nce/orders"]


@pytest.mark.parametrize("which", range(5))
def test_a_file_glob_without_an_authority_is_folded_as_a_path(tmp_path: Path, which: int) -> None:
    lake = tmp_path / "lake"
    _unsigned(lake / "finance" / "orders")
    link = tmp_path / "data"
    link.symlink_to(lake, target_is_directory=True)
    policy = _policy(tmp_path, [_globs(lake, link)[which]])
    rc, doc = verify(str(lake / "finance" / "orders"), "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = audit(str(lake), "--policy", policy)
    assert rc == 1 and _rows(doc) == [(str(lake / "finance" / "orders"), "NOT VERIFIED", "signature_missing")], doc
    assert "warnings" not in doc, doc


@pytest.mark.parametrize("glob", ["s3a://b/lake/*", "s3://b//lake/_staging/*", "S3://b/lake/_staging/orders/"])
def test_a_hidden_table_on_a_store_is_named_to_the_policy_as_a_judged_one(glob: str) -> None:
    """The store walk's hidden tables go through the same check (``TrustPolicy.requiring``)."""
    assert TrustPolicy.from_toml(policy_text(glob)).requiring("s3://b/lake/_staging/orders") is not None
    assert TrustPolicy.from_toml(policy_text("s3://b/lake/finance/*")).requiring("s3://b/lake/_staging/orders") is None


def policy_text(glob: str) -> str:
    return f'require_signed = ["{glob}"]\n[[keys]]\npublic_key_pem = """{KEY.public_pem.decode()}"""\n'


def _deny(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """``folder`` cannot be listed by the auditor (permission denied; the tests run as root, whom a mode does not
    stop), as a service account's folder is to a reviewer."""
    real = os.scandir

    def scandir(path: str | os.PathLike[str] = ".") -> object:
        if os.fspath(path) == str(folder):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


@pytest.mark.parametrize("glob", ["{lake}/*", "{lake}/_staging/orders", "file://{lake}/_staging/*"])
def test_a_hidden_folder_that_cannot_be_listed_under_the_policy_fails_the_audit(
        lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, glob: str) -> None:
    """``lake/_staging`` unlisted: ``_staging/orders`` (unsigned, required) may be there. Listed only, exit 0."""
    _unsigned(lake / "_staging" / "orders")
    _deny(monkeypatch, lake / "_staging")
    rc, doc = audit(str(lake), "--policy", _policy(tmp_path, [f"{lake}/finance/*", glob.format(lake=lake)]))
    assert rc == 2 and (str(lake / "_staging"), "ERROR", "table_not_audited") in _rows(doc), doc
    assert "cannot be listed" in next(t for t in doc["tables"] if t["outcome"] == "ERROR")["message"], doc


def test_a_hidden_search_cut_short_under_the_policy_fails_the_audit(lake: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import carriers.discovery

    monkeypatch.setattr(carriers.discovery, "MAX_HIDDEN_FOLDERS", 2)
    for i in range(3):
        (lake / "_staging" / f"d{i}").mkdir(parents=True)
    _unsigned(lake / "_staging" / "zz" / "orders")
    rc, doc = audit(str(lake), "--policy", _policy(tmp_path, [f"{lake}/*"]))
    assert rc == 2 and (str(lake / "_staging"), "ERROR", "table_not_audited") in _rows(doc), doc


def test_a_link_to_a_folder_in_a_hidden_folder_under_the_policy_fails_the_audit(lake: Path, tmp_path: Path) -> None:
    """``lake/_staging/eu`` a link to a folder holding a table: not followed, and it was not even listed."""
    _unsigned(tmp_path / "elsewhere" / "orders")
    (lake / "_staging").mkdir()
    os.symlink(tmp_path / "elsewhere", lake / "_staging" / "eu")
    rc, doc = audit(str(lake))
    assert rc == 0 and [s["path"] for s in doc["skipped"]] == [str(lake / "_staging" / "eu")], doc
    assert "not followed" in doc["skipped"][0]["message"], doc
    rc, doc = audit(str(lake), "--policy", _policy(tmp_path, [f"{lake}/_staging/eu/orders"]))
    assert rc == 2 and (str(lake / "_staging" / "eu"), "ERROR", "table_not_audited") in _rows(doc), doc
