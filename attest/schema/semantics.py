"""Checks of ours that go further than the published v0.1 schema: verifier semantics, each with its own code.

The reference's schema accepts any non-empty ``hash_scheme`` and an empty ``produced_at`` (``format`` is an
annotation there). A verifier that does not know a hash scheme cannot vouch for the identities computed under it,
and an empty timestamp records nothing, so both are refused here (docs/manifest.md, "Beyond the schema").
"""

from __future__ import annotations

from typing import Any

from attest.errors import Code, Problem

SUPPORTED_HASH_SCHEMES = ("v1",)


def semantic_problems(document: Any) -> list[Problem]:
    """The semantic problems of a document; values the schema already refused are left to the schema."""
    if not isinstance(document, dict):
        return []
    problems: list[Problem] = []
    scheme = document.get("hash_scheme")
    if isinstance(scheme, str) and scheme and scheme not in SUPPORTED_HASH_SCHEMES:
        problems.append(Problem(Code.MANIFEST_UNSUPPORTED_HASH_SCHEME,
                                f"hash_scheme {scheme!r} is not supported (this consumer understands "
                                f"{', '.join(SUPPORTED_HASH_SCHEMES)}): its identities cannot be checked",
                                "$.hash_scheme"))
    subject = document.get("subject")
    if isinstance(subject, dict) and subject.get("produced_at") == "":
        problems.append(Problem(Code.MANIFEST_PRODUCED_AT_EMPTY,
                                "subject.produced_at is empty: a timestamp, when present, must say when",
                                "$.subject.produced_at"))
    return problems
