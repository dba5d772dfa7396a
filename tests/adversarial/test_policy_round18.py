"""Round 18: a ``require_signed`` glob written as Spark and Hadoop read path globs.

``spark.read.load("s3a://b/lake/{finance,hr}/*")`` reads both folders: Hadoop's ``GlobPattern`` takes ``{a,b}`` as
alternatives and ``[^a]`` as a negated class. fnmatch reads braces literally and ``[^a]`` as the class of ``^`` and
``a``, so ``require_signed = [".../{finance,hr}/*"]`` or ``[".../[^t]*/*"]`` covered no table: the unsigned table
passed ``attest verify``, exit 0, and the audit only warned. Globs are now read both ways (only ever more names
covered); a key's ``tables`` globs are not widened so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attest.signing.errors import PolicyInvalidError
from attest.signing.policy import TrustPolicy
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_audit_discovery_attacks import audit
from tests.adversarial.test_policy_names import _policy, _unsigned


@pytest.mark.parametrize("glob", ["{lake}/{{finance,hr}}/*", "file://{lake}/{{fin,hr}}ance/orders",
                                  "{lake}/[^t]*/*", "{lake}/{{hr,{{x,finance}}}}/orders", "file:{lake}/{{finance}}/*",
                                  "{lake}/{{finance/orders,hr/*}}", " {lake}/finance/*", "file://{lake}/finance/orders\t"])
def test_a_hadoop_glob_requires_the_signature(tmp_path: Path, glob: str) -> None:
    lake = tmp_path / "lake"
    _unsigned(lake / "finance" / "orders")
    policy = _policy(tmp_path, [glob.format(lake=lake)])
    rc, doc = verify(str(lake / "finance" / "orders"), "--policy", policy)
    assert rc == 1 and codes(doc) == ["signature_missing"], doc
    rc, doc = audit(str(lake), "--policy", policy)
    assert rc == 1 and [t["code"] for t in doc["tables"]] == ["signature_missing"], doc
    assert "warnings" not in doc, doc


def test_a_glob_of_too_many_alternatives_is_refused() -> None:
    from tests.adversarial.test_signing_attacks import KEY

    text = 'require_signed = ["/lake/' + "{a,b}" * 9 + '/*"]\n[[keys]]\npublic_key_pem = """' + \
        KEY.public_pem.decode() + '"""\n'
    with pytest.raises(PolicyInvalidError, match="brace alternatives"):
        TrustPolicy.from_toml(text)
