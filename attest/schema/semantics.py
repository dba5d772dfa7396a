"""Checks of ours that go further than the published v0.1 schema: verifier semantics, each with its own code.

The reference's schema accepts any non-empty ``hash_scheme`` and an empty ``produced_at`` (``format`` is an
annotation there). A verifier that does not know a hash scheme cannot vouch for the identities computed under it,
and an empty timestamp records nothing, so both are refused here (docs/manifest.md, "Beyond the schema").
A string holding a lone surrogate is not Unicode text: JSON text is refused at parsing, and a document that
reached us another way (table metadata) is refused here, with the same code.
"""

from __future__ import annotations

import re

from attest.errors import Code, Problem

TYPE_CHECKING = False  # typing is not imported at start-up (attest/record.py; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

SUPPORTED_HASH_SCHEMES = ("v1",)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _strings(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(JSON path, value) of every string field a schema-valid manifest can hold (keys are all fixed names)."""
    out = [(f"$.{k}", v) for k, v in document.items() if isinstance(v, str)]
    for section in ("producer", "subject"):
        value = document.get(section)
        if isinstance(value, dict):
            out += [(f"$.{section}.{k}", v) for k, v in value.items() if isinstance(v, str)]
    outputs = document.get("output_hashes")
    if isinstance(outputs, list):
        out += [(f"$.output_hashes[{i}].path", o["path"]) for i, o in enumerate(outputs)
                if isinstance(o, dict) and isinstance(o.get("path"), str)]
    return out


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
    strings = _strings(document)
    # One regex pass over all strings at once (C speed for 100,000 paths); located only when found.
    if _SURROGATE.search("".join(value for _, value in strings)):
        for where, value in strings:
            if _SURROGATE.search(value):
                problems.append(Problem(Code.MANIFEST_MALFORMED_JSON,
                                        f"{where} holds a lone surrogate: not Unicode text", where))
    subject = document.get("subject")
    if isinstance(subject, dict) and subject.get("produced_at") == "":
        problems.append(Problem(Code.MANIFEST_PRODUCED_AT_EMPTY,
                                "subject.produced_at is empty: a timestamp, when present, must say when",
                                "$.subject.produced_at"))
    return problems
