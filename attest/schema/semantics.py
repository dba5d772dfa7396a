"""Checks of ours that go further than the published v0.1 schema: verifier semantics, each with its own code.

The reference's schema accepts any non-empty ``hash_scheme`` and an empty ``produced_at`` (``format`` is an
annotation there). A verifier that does not know a hash scheme cannot vouch for the identities computed under it,
and an empty timestamp records nothing, so both are refused here (docs/manifest.md, "Beyond the schema").
A string holding a lone surrogate is not Unicode text: JSON text is refused at parsing, and a document that
reached us another way (table metadata) is refused here, with the same code.
"""

from __future__ import annotations

import re
from itertools import repeat

from attest.errors import Code, Problem

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

SUPPORTED_HASH_SCHEMES = ("v1",)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _strings(document: dict[str, Any]) -> list[str]:
    """Every string field a schema-valid manifest can hold (keys are all fixed names), without their places:
    building a JSON path for each of a million output paths took longer than searching them (measured)."""
    out = [v for v in document.values() if isinstance(v, str)]
    for section in ("producer", "subject"):
        value = document.get(section)
        if isinstance(value, dict):
            out += [v for v in value.values() if isinstance(v, str)]
    outputs = document.get("output_hashes")
    if isinstance(outputs, list):
        if set(map(type, outputs)) == {dict}:  # the common shape: the paths picked in C
            paths: list[Any] = list(map(dict.get, outputs, repeat("path")))
        else:
            paths = [o.get("path") if isinstance(o, dict) else None for o in outputs]
        out += paths if set(map(type, paths)) == {str} else [p for p in paths if isinstance(p, str)]
    return out


def _placed_strings(document: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The strings ``_strings`` lists, each with its JSON path: built only to name the place of a problem found."""
    yield from ((f"$.{k}", v) for k, v in document.items() if isinstance(v, str))
    for section in ("producer", "subject"):
        value = document.get(section)
        if isinstance(value, dict):
            yield from ((f"$.{section}.{k}", v) for k, v in value.items() if isinstance(v, str))
    outputs = document.get("output_hashes")
    if isinstance(outputs, list):
        yield from ((f"$.output_hashes[{i}].path", o["path"]) for i, o in enumerate(outputs)
                    if isinstance(o, dict) and isinstance(o.get("path"), str))


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
    # One regex pass over all strings at once (C speed for 100,000 paths); located only when found.
    if _SURROGATE.search("".join(_strings(document))):
        for where, value in _placed_strings(document):
            if _SURROGATE.search(value):
                problems.append(Problem(Code.MANIFEST_MALFORMED_JSON,
                                        f"{where} holds a lone surrogate: not Unicode text", where))
    subject = document.get("subject")
    if isinstance(subject, dict) and subject.get("produced_at") == "":
        problems.append(Problem(Code.MANIFEST_PRODUCED_AT_EMPTY,
                                "subject.produced_at is empty: a timestamp, when present, must say when",
                                "$.subject.produced_at"))
    return problems
