"""Round 19: a policy's ``require_signed`` globs, matched against every table an audit judges.

Each glob's forms (``_glob_forms``: brace readings, spellings, where the links in its folders resolve — system calls)
were recomputed for every table judged and every glob, three times per table: an audit of 3,000 tables under five
globs spent ~13 of its ~15 s of policy work there. They are now computed once per loaded policy object, and never
shared between objects: a link changed after one policy was loaded is seen by the next one loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attest.signing import policy as policy_module
from attest.signing.keys import PublicKey
from attest.signing.policy import TrustedKey, TrustPolicy
from attest.signing.statement import Target
from tests.adversarial.test_signing_attacks import KEY

DOC = {"subject": {"model": "m"}}


def _trust(*globs: str) -> TrustPolicy:
    return TrustPolicy(keys=(TrustedKey(public_key=PublicKey.load(KEY.public_pem)),), require_signed=globs)


def test_glob_forms_are_computed_once_per_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = policy_module._glob_forms

    def counted(glob: str) -> set[str]:
        calls.append(glob)
        return real(glob)

    monkeypatch.setattr(policy_module, "_glob_forms", counted)
    globs = (f"{tmp_path}/lake/{{finance,hr}}/*", "s3a://b/lake/{x,y}/*", f"file://{tmp_path}/lake/sales/*")
    trust = _trust(*globs)
    for i in range(40):
        target = Target.table(f"file://{tmp_path}/lake/other/t{i}", 1, DOC, None)
        assert trust.evaluate(None, target).passed  # covered by no glob: unsigned passes
        assert trust.requiring(target.scope) is None
    hit = Target.table(f"file://{tmp_path}/lake/hr/people", 1, DOC, None)
    assert trust.evaluate(None, hit).code is not None
    assert sorted(calls) == sorted(globs), calls  # once a glob, not once a table
