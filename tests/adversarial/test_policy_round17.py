"""Round 17: a trust policy naming the lake through a symlinked folder covers the tables where it resolves.

``require_signed = ["file:///data/finance/*"]`` with ``/data`` a link to ``/mnt/vol1/lake`` (macOS's ``/tmp`` →
``/private/tmp``, ``/var`` → ``/private/var``; a mount point linked into place): a table's names are the path it was
reached by and where that resolves, never the link the policy author typed. The unsigned table reached by its real
path — ``attest verify /mnt/vol1/lake/finance/orders``, ``attest audit /mnt/vol1/lake`` — passed ``VERIFIED``, exit 0
(the audit only warned that the glob covered nothing). A local glob's folders are now resolved too (the part before
its first wildcard, ``attest.signing.policy._resolved_glob``).

A local glob with a leading ``//`` (``//lake/finance/*``, ``file:////lake/finance/*``: a root ``/`` joined to an
absolute path) covered no table either: ``posixpath.normpath`` keeps a leading ``//`` (POSIX leaves it open; Linux and
macOS read it as ``/``), while names fold it. The unsigned table passed, exit 0. Globs now fold it as names do.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from attest.signing.policy import TrustPolicy
from attest.signing.statement import Target
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_audit_discovery_attacks import audit
from tests.adversarial.test_iceberg_attacks import CATALOG, REF, catalog, iceberg_env, table  # noqa: F401  (fixtures)
from tests.adversarial.test_policy_names import _policy, _unsigned


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """(the real lake holding the unsigned, attested ``finance/orders``, a link to the lake)."""
    real = tmp_path / "mnt" / "vol1" / "lake"
    (real / "finance").mkdir(parents=True)
    _unsigned(real / "finance" / "orders")
    link = tmp_path / "data"
    link.symlink_to(real, target_is_directory=True)
    return real, link


def _globs(link: Path) -> list[str]:
    return [f"file://{link}/finance/*", f"{link}/finance/*", f"{link}/finance/orders", f"{link}/*/orders",
            f"{link}/finance/orders/", f"file://localhost{link}/fin?nce/orders"]


@pytest.mark.parametrize("which", range(6))
def test_a_glob_through_a_symlinked_folder_requires_the_signature(linked: tuple[Path, Path], tmp_path: Path,
                                                                  which: int) -> None:
    real, link = linked
    policy = _policy(tmp_path, [_globs(link)[which]])
    rc, doc = verify(str(real / "finance" / "orders"), "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = audit(str(real), "--policy", policy)
    assert rc == 1, doc
    assert [(t["table"], t["code"]) for t in doc["tables"]] == [(str(real / "finance" / "orders"),
                                                                 "signature_missing")], doc
    assert "warnings" not in doc, doc


def test_the_glob_as_written_still_applies_and_others_are_not_widened(linked: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    real, link = linked
    policy = TrustPolicy.load(_policy(tmp_path, [f"{link}/hr/*"]))
    target = Target.table(f"file://{real}/finance/orders", 1, {"subject": {"model": "orders"}}, None,
                          names=(str(real / "finance" / "orders"),))
    assert not policy.requires_signature(target)  # hr, resolved, names no finance table
    policy = TrustPolicy.load(_policy(tmp_path, [f"{link}/finance/*"]))
    via_link = Target.table(f"file://{link}/finance/orders", 1, {"subject": {"model": "orders"}}, None,
                            names=(str(link / "finance" / "orders"),))
    assert policy.requires_signature(via_link) and policy.requires_signature(target)


@pytest.mark.parametrize("form", ["//{lake}/finance/*", "file:////{lake}/finance/*"])
def test_a_glob_with_a_leading_double_slash_requires_the_signature(tmp_path: Path, form: str) -> None:
    lake = tmp_path / "lake"
    (lake / "finance").mkdir(parents=True)
    _unsigned(lake / "finance" / "orders")
    policy = _policy(tmp_path, [form.format(lake=str(lake).lstrip("/"))])
    rc, doc = verify(str(lake / "finance" / "orders"), "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = audit(str(lake), "--policy", policy)
    assert rc == 1 and [t["code"] for t in doc["tables"]] == ["signature_missing"], doc


@pytest.mark.parametrize("alias", ["http://cat.example:80", "HTTP://Cat.Example:80/", "http://user@cat.example",
                                   "http://cat.example/./"])
def test_a_rest_catalog_spelt_with_its_default_port_is_the_same_catalog(monkeypatch: pytest.MonkeyPatch,
                                                                       alias: str) -> None:
    """One REST server configured as ``http://cat.example`` (prod) and ``http://cat.example:80`` (prod2), one
    warehouse: the HTTP client reaches one server, one catalog. Before, they were two catalogs to the policy, and
    ``require_signed = ["iceberg://prod/*"]`` passed the table reached as ``iceberg://prod2/db.t`` unsigned, exit 0
    (``tests/adversarial/test_policy_catalog_aliases.py`` held the case and trailing ``/`` spellings)."""
    from carriers.iceberg.static import same_table_names
    from tests.adversarial.test_policy_catalog_aliases import _configure, _rest

    _configure(monkeypatch, {"prod": _rest("http://cat.example", "prod-wh"),
                             "elsewhere": _rest("http://cat.example:8080", "prod-wh")})
    assert same_table_names("prod2", _rest(alias, "prod-wh"), "db.t", ()) == ("iceberg://prod/db.t",)
    assert same_table_names("prod2", _rest("http://cat.example:8080/", "prod-wh"), "db.t", ()) == (
        "iceberg://elsewhere/db.t",)  # another port is another server


@pytest.mark.parametrize("glob", ["iceberg://{cat}/ns/*", "iceberg://{cat}/ns/t", "ICEBERG://{cat}/NS/*"])
def test_a_namespace_spelt_with_a_slash_requires_the_signature(catalog: SqlCatalog, table: Table, tmp_path: Path,  # noqa: F811
                                                               glob: str) -> None:
    """``require_signed = ["iceberg://prod/ns/*"]``: the namespace as ``attest audit iceberg://prod/ns`` names it (or
    as a REST path), then ``/*``. Tables are named ``iceberg://prod/ns.t``: the glob covered none, and the unsigned
    table passed, ``verify`` and ``audit`` alike, exit 0 (the audit only warned). Read with ``.`` for ``/`` too."""
    policy = _policy(tmp_path, [glob.format(cat=CATALOG)])
    rc, doc = verify(REF, "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = audit(f"iceberg://{CATALOG}/ns", "--policy", policy)
    assert rc == 1 and [t["code"] for t in doc["tables"]] == ["signature_missing"], doc
