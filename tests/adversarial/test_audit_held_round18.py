"""Round 18, held: policy scope and audit skips that already answered right (tests/adversarial/test_audit_round18.py
has the ones that did not).

A hidden table the policy does not cover stays a listed SKIPPED place (exit unchanged); one the audit judges by its
name through another target is judged, never an ERROR line too; the audit table a run appends to (``--to``) in a
hidden folder is never required of that run; a policy file with a duplicate key or a key in another case is refused;
a ``FILE:`` glob in capitals and a table argument ending in ``/.`` are one name to the policy.
"""

from __future__ import annotations

import json
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from attest.cli import main
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_audit_discovery_attacks import audit
from tests.adversarial.test_audit_round18 import _deny
from tests.adversarial.test_policy_names import _policy, _signed, _unsigned


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """A signed ``finance/orders`` and an unsigned ``_staging/orders`` (hidden)."""
    lake = tmp_path / "lake"
    _signed(lake / "finance" / "orders")
    _unsigned(lake / "_staging" / "orders")
    return lake


def test_a_hidden_table_the_policy_does_not_cover_stays_listed(lake: Path, tmp_path: Path) -> None:
    rc, doc = audit(str(lake), "--policy", _policy(tmp_path, [f"{lake}/finance/*"]))
    assert rc == 0 and [t["outcome"] for t in doc["tables"]] == ["VERIFIED"], doc
    assert [s["path"] for s in doc["skipped"]] == [str(lake / "_staging" / "orders")], doc


def test_a_hidden_table_audited_by_its_name_is_judged_once(lake: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, [f"{lake}/*"])
    rc, doc = audit(str(lake), str(lake / "_staging" / "orders"), "--policy", policy)
    assert rc == 1, doc
    assert sorted((t["table"], t["code"]) for t in doc["tables"]) == [
        (str(lake / "_staging" / "orders"), "signature_missing"), (str(lake / "finance" / "orders"), None)], doc


def test_the_audit_table_a_run_appends_to_is_not_required_of_it(lake: Path, tmp_path: Path) -> None:
    import shutil

    shutil.rmtree(lake / "_staging")
    to = lake / "_audits"
    out = StringIO()
    with redirect_stdout(out):
        rc = main(["audit", str(lake), "--json", "--to", str(to), "--policy", _policy(tmp_path, [f"{lake}/*"])])
    doc = json.loads(out.getvalue())
    assert rc == 0 and [t["outcome"] for t in doc["tables"]] == ["VERIFIED"], doc
    with redirect_stdout(StringIO()):  # the second run finds the first run's table in the hidden folder
        rc = main(["audit", str(lake), "--to", str(to), "--policy", _policy(tmp_path, [f"{lake}/*"])])
    assert rc == 0


@pytest.mark.parametrize("text", ['require_signed = ["*"]\nrequire_signed = ["x"]\n',
                                  'Require_Signed = ["*"]\n', 'require_signed = ["*"]\n[[Keys]]\n'])
def test_a_policy_with_a_duplicate_or_miscased_key_is_refused(lake: Path, tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text + '[[keys]]\npublic_key = "ci.pub"\n')
    _policy(tmp_path, ["*"])  # writes ci.pub
    rc, doc = verify(str(lake / "finance" / "orders"), "--policy", str(path))
    assert rc == 2 and codes(doc) == ["policy_invalid"], doc


def test_a_capital_file_glob_and_a_dot_argument_are_one_name(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _unsigned(lake / "finance" / "orders")
    for glob, name in ((f"FILE:{lake}/finance/orders/", str(lake / "finance" / "orders")),
                       (f"{lake}/finance/*", f"{lake}/finance/orders/."),
                       (f"file://{lake}/finance/*", f"{lake}/finance/../finance/orders")):
        rc, doc = verify(name, "--policy", _policy(tmp_path, [glob]))
        assert rc == 1 and codes(doc) == ["signature_missing"], (glob, name, doc)


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    _signed(lake / "finance" / "orders")
    return lake


def test_a_hidden_folder_that_cannot_be_listed_outside_the_policy_stays_listed(
        bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _unsigned(bare / "_staging" / "orders")
    _deny(monkeypatch, bare / "_staging")
    rc, doc = audit(str(bare), "--policy", _policy(tmp_path, [f"{bare}/finance/*", f"{bare}/hr/*"]))
    assert rc == 0 and [s["path"] for s in doc["skipped"]] == [str(bare / "_staging")], doc




def test_a_keys_tables_glob_is_not_widened_by_braces(tmp_path: Path) -> None:
    """A key allowed for ``.../{hr,x}/*`` (Hadoop braces) signing a finance table: not allowed, as ever — only
    ``require_signed`` globs are also read as Hadoop reads them (more names required, never more allowed)."""
    lake = tmp_path / "lake"
    _signed(lake / "finance" / "orders")
    for tables in ([f"{lake}/{{hr,finance}}/*"], [f"{lake}/[^h]*/*"]):
        rc, doc = verify(str(lake / "finance" / "orders"), "--policy", _policy(tmp_path, ["*"], tables=tables))
        assert rc == 1 and codes(doc) == ["signer_not_allowed"], (tables, doc)


@pytest.mark.parametrize("suffix", ["@0", "@1", "/@0"])
def test_a_version_suffix_is_one_name_to_the_policy(tmp_path: Path, suffix: str) -> None:
    lake = tmp_path / "lake"
    _unsigned(lake / "finance" / "orders")
    policy = _policy(tmp_path, [f"{lake}/finance/orders"])
    rc, doc = verify(f"{lake}/finance/orders{suffix}", "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = audit(f"{lake}/finance/orders{suffix}", "--policy", policy)
    assert rc == 1 and [t["code"] for t in doc["tables"]] == ["signature_missing"], doc
