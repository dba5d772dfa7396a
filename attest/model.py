"""An immutable typed model of a rocky-manifest v0.1 document.

Parsing is strict (the schema decides); serialisation omits absent optionals, so model -> dict -> model is exact.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from itertools import chain

from attest.canonical import HASH_SCHEME, MAX_DEPTH, canonical_bytes, digest
from attest.errors import ManifestInvalidError, ManifestMalformedError, UnsupportedVersionError
from attest.fast.record import many_records, record, replace
from attest.numbers import NumberOutOfRange, reference_integer, reference_number
from attest.schema import validate

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any, Literal

    ProofClass = Literal["strong", "heuristic"]

MANIFEST_VERSION = "0.1"


@record(frozen=True)
class Producer:
    name: str
    version: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}


@record(frozen=True)
class Subject:
    model: str
    run_id: str | None = None
    produced_at: str | None = None
    status: str | None = None

    def to_dict(self) -> dict[str, str]:
        out = {"model": self.model}
        for key in ("run_id", "produced_at", "status"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@record(frozen=True)
class OutputHash:
    hash: str
    path: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {"hash": self.hash} if self.path is None else {"hash": self.hash, "path": self.path}


@record(frozen=True)
class Manifest:
    producer: Producer
    subject: Subject
    program_hash: str
    env_hash: str
    inputs_hash: str | None = None
    inputs_proof_class: ProofClass | None = None
    output_hashes: tuple[OutputHash, ...] | None = None
    manifest_version: str = MANIFEST_VERSION
    hash_scheme: str = HASH_SCHEME

    # ---- serialisation -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manifest_version": self.manifest_version,
            "hash_scheme": self.hash_scheme,
            "producer": self.producer.to_dict(),
            "subject": self.subject.to_dict(),
            "program_hash": self.program_hash,
        }
        if self.inputs_hash is not None:
            out["inputs_hash"] = self.inputs_hash
        if self.inputs_proof_class is not None:
            out["inputs_proof_class"] = self.inputs_proof_class
        out["env_hash"] = self.env_hash
        if self.output_hashes is not None:
            out["output_hashes"] = [o.to_dict() for o in self.output_hashes]
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        """Human-readable JSON (field order as in the spec); use canonical_bytes() for identities."""
        document = self.to_dict()
        outputs = document.get("output_hashes")
        if indent == 2 and outputs:
            body = _indented_outputs(outputs)
            if body is not None:  # output_hashes is the last key: the rest, then the list, as json.dumps lays it out
                del document["output_hashes"]
                head = json.dumps(document, indent=2, ensure_ascii=False)
                return f'{head[:-2]},\n  "output_hashes": {body}\n}}\n'
        return json.dumps(document, indent=indent, ensure_ascii=False) + ("\n" if indent else "")

    def canonical_bytes(self) -> bytes:
        return canonical_bytes(self.to_dict())

    def identity(self) -> str:
        """The v1 identity of the whole manifest document."""
        return digest(self.to_dict())

    def problems(self) -> list[Any]:
        """Schema problems of this model (a model built in code is not validated until asked)."""
        return validate(self.to_dict())

    def with_outputs(self, outputs: list[OutputHash] | tuple[OutputHash, ...] | None) -> Manifest:
        return replace(self, output_hashes=None if outputs is None else tuple(outputs))

    # ---- parsing -------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Manifest:
        """Strictly parse a v0.1 document; raises UnsupportedVersionError or ManifestInvalidError."""
        problems = validate(dict(document) if isinstance(document, Mapping) else document)
        if problems:
            if problems[0].code == "manifest_unsupported_version":
                raise UnsupportedVersionError(problems[0].message, path=problems[0].path)
            raise ManifestInvalidError(problems)
        producer = document["producer"]
        subject = document["subject"]
        outputs = document.get("output_hashes")
        with many_records():
            output_hashes = None if outputs is None else tuple(
                OutputHash(hash=o["hash"], path=o.get("path")) for o in outputs
            )
        return cls(
            manifest_version=document["manifest_version"],
            hash_scheme=document["hash_scheme"],
            producer=Producer(name=producer["name"], version=producer["version"]),
            subject=Subject(
                model=subject["model"],
                run_id=subject.get("run_id"),
                produced_at=subject.get("produced_at"),
                status=subject.get("status"),
            ),
            program_hash=document["program_hash"],
            inputs_hash=document.get("inputs_hash"),
            inputs_proof_class=document.get("inputs_proof_class"),
            env_hash=document["env_hash"],
            output_hashes=output_hashes,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Manifest:
        return cls.from_dict(load_json_document(text))


# Between the items of a list and the keys of an object in _indented_outputs' one C encoding: NUL never appears raw
# in encoded JSON (a string's NUL is written \u0000), so every occurrence is a separator.
_MARK = ",\x00"


def _indented_outputs(outputs: list[dict[str, Any]]) -> str | None:
    """The output list exactly as ``json.dumps(..., indent=2)`` lays it out two levels in, from one encoding in C
    (CPython's encoder is pure Python as soon as it indents: 2.9–3.9 s for a million outputs, measured), or None
    where its shape is not a list of flat objects."""
    compact = _mark_encoder().encode(outputs)
    # One "{" per item and a single "[": no nested array or object, and no brace inside a string, so every "},MARK{"
    # lies between two items and every other MARK between two keys of an item.
    if compact.count("{") != len(outputs) or compact.count("[") != 1 or "{}" in compact:
        return None
    inner = compact[2:-2].replace("}" + _MARK + "{", "\n    },\n    {\n      ").replace(_MARK, ",\n      ")
    return f"[\n    {{\n      {inner}\n    }}\n  ]"


@functools.cache
def _mark_encoder() -> json.JSONEncoder:
    # No circular check: the list is to_dict's, made of fresh flat objects (the check's bookkeeping was a tenth).
    return json.JSONEncoder(ensure_ascii=False, separators=(_MARK, ": "), check_circular=False)


# The largest JSON document read: a manifest of ~1.5 million output hashes. Beyond it parsing alone would take
# gigabytes of memory, so a larger input is refused as malformed instead of exhausting the machine.
MAX_DOCUMENT_BYTES = 256 * 2**20
# A lone surrogate can only come from a \uD800-\uDFFF escape; only then are the strings walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _too_deep(document: Any) -> bool:
    """Whether more than MAX_DEPTH arrays/objects nest, counted as serde_json counts them, without recursion.

    Level by level: a level's children are typed in C (``map(type, ...)``), and only the containers among them are
    gathered for the next level, so a manifest of a million output objects is three levels and one C pass over their
    values (walking every value in Python took 0.5 s there, measured). ``document`` is parsed JSON: its arrays and
    objects are exactly ``list`` and ``dict``."""
    level: list[Any] = [document] if type(document) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        level = _child_containers(level)
    return False


_CONTAINERS = (dict, list)
_COUNT_BRACKETS_MAX = 1 << 20  # characters


def _child_containers(level: list[Any]) -> list[Any]:
    """The arrays and objects directly inside the arrays and objects of ``level``."""
    kinds = set(map(type, level))
    if kinds == {dict}:
        def children() -> Iterable[Any]:
            return chain.from_iterable(map(dict.values, level))
    elif kinds == {list}:
        def children() -> Iterable[Any]:
            return chain.from_iterable(level)
    else:
        def children() -> Iterable[Any]:
            return chain.from_iterable(node.values() if type(node) is dict else node for node in level)
    types = set(map(type, children()))
    if dict not in types and list not in types:
        return []
    if types <= {dict, list}:
        return list(children())
    return [child for child in children() if type(child) in _CONTAINERS]


def _lone_surrogate(document: Any) -> str | None:
    """The first string (key or value) holding a lone surrogate, walked without recursion."""
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _shown(literal: str) -> str:
    return f"{literal[:40]}{'…' if len(literal) > 40 else ''}"


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A duplicate key lets two readers see two different documents: refuse it. One C call in the common case
    # (a key loop in Python was a third of parsing a manifest of a million output hashes, measured); the rare
    # case pays for finding the key.
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ManifestMalformedError(f"duplicate key {key!r} in JSON object")
            seen.add(key)
    return out


def _json_constant(name: str) -> Any:
    raise ManifestMalformedError(f"{name} is not valid JSON")


def _json_number(literal: str, read: Callable[[str], int | float] = reference_number) -> int | float:
    try:
        return read(literal)
    except NumberOutOfRange as exc:
        raise ManifestMalformedError(f"number {_shown(literal)} is out of range: no f64 holds it") from exc
    except ValueError as exc:  # not reachable through json's grammar; kept so no literal can crash a command
        raise ManifestMalformedError(f"number {_shown(literal)} is not JSON") from exc


def _json_integer(literal: str) -> int | float:
    return _json_number(literal, reference_integer)  # json's parse_int: a literal of its integer grammar


# The hooks that make json's parser read as the reference reads (load_json_document; carriers.sidecar reads a
# sidecar value by value with the same ones).
JSON_HOOKS: dict[str, Any] = {"object_pairs_hook": _json_object, "parse_constant": _json_constant,
                              "parse_int": _json_integer, "parse_float": _json_number}


def load_json_document(text: str | bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Any:
    """Parse JSON text as the reference reads it, or raise ManifestMalformedError.

    Refused, because two readers could otherwise disagree on what the document says: duplicate keys,
    NaN/Infinity, invalid UTF-8, lone surrogates (\\ud800), numbers no f64 holds (1e400), more than MAX_DEPTH
    nested arrays/objects, more than ``max_bytes`` bytes. Numbers are the reference's values
    (attest.numbers): an int within i64/u64, otherwise an f64.
    """
    size = len(text)
    if isinstance(text, str) and size * 4 > max_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))  # exact only where it can matter
    if size > max_bytes:
        raise ManifestMalformedError(f"document is {size:,} bytes, more than the {max_bytes:,} this reader accepts")


    given_text = isinstance(text, str)
    too_deep = f"nested more than {MAX_DEPTH} arrays/objects deep: refused, as the reference refuses it"
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        document = json.loads(text, **JSON_HOOKS)
    except UnicodeDecodeError as exc:
        raise ManifestMalformedError(f"not UTF-8: {exc.reason} at byte {exc.start}") from exc
    except json.JSONDecodeError as exc:
        raise ManifestMalformedError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except RecursionError as exc:
        # Python's parser recurses once per level and stops near its recursion limit (~1000): a 100,000-deep
        # document ends here, cleanly, before any deep Python structure exists.
        raise ManifestMalformedError(too_deep) from exc
    # Counting brackets first spares a small document the walk; a large one is walked anyway (the two counts took
    # as long as the walk on a manifest of a million outputs, measured).
    if (len(text) > _COUNT_BRACKETS_MAX or text.count("[") + text.count("{") > MAX_DEPTH) and _too_deep(document):
        raise ManifestMalformedError(too_deep)
    # Decoded bytes hold no surrogate; one can only come from an escape, or from a str given by the caller.
    if _SURROGATE_ESCAPE.search(text) or (given_text and _SURROGATE.search(text)):
        lone = _lone_surrogate(document)
        if lone is not None:
            raise ManifestMalformedError(f"string {lone[:40]!r} holds a lone surrogate escape: not Unicode text")
    return document
