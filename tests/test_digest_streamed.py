"""``attest.canonical.digest_streamed`` (a manifest's identity with its outputs hashed a batch at a time) is
``digest`` of the same document, on every document: the same identity, or the same refusal (docs/scale.md)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from attest.canonical import MAX_DEPTH, CanonicalizationError, digest, digest_streamed
from attest.tables import attestation_identity

_ALPHABET = ["a", "/", "é", "\"", "\\", "\n", "\u2028", "\x00", "\x7f", "😀", "\t", " ", "Z", "%"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12)))


def _outputs(rng: random.Random, n: int) -> list[Any]:
    return [{"hash": f"{rng.getrandbits(256):064x}", "path": _text(rng) + str(i)} for i in range(n)]


def _same(document: dict[str, Any], batch: int) -> None:
    try:
        expected: Any = digest(document)
    except CanonicalizationError as exc:
        with pytest.raises(CanonicalizationError) as got:
            digest_streamed(document, "output_hashes", batch)
        assert got.value.message == exc.message
        return
    assert digest_streamed(document, "output_hashes", batch) == expected


@pytest.mark.parametrize("seed", range(60))
def test_the_identity_of_random_manifests(seed: int) -> None:
    rng = random.Random(seed)
    batch = rng.choice([1, 2, 3, 7, 64])
    outputs = _outputs(rng, rng.randint(0, 200))
    document: dict[str, Any] = {"schema_version": "0.1", "producer": {"name": _text(rng), "n": rng.randint(-5, 5)},
                                "output_hashes": outputs, _text(rng): [_text(rng), None, True]}
    if seed % 3 == 0:
        document["metrics"] = {"rows": 1.5, "big": 2 ** 70}  # numbers written by the slow path, elsewhere
    if seed % 4 == 0:
        document["nested"] = {"output_hashes": [] if seed % 8 else outputs[:2]}  # the key's text elsewhere
    if seed % 5 == 0 and outputs:
        outputs[rng.randrange(len(outputs))]["extra"] = _text(rng)  # a member of three strings
    _same(document, batch)


@pytest.mark.parametrize("odd", [
    lambda o: o.__setitem__(0, {"hash": "a" * 64, "path": 1}),  # a value not a string
    lambda o: o.__setitem__(0, {"hash": "a" * 64, "path": 1.5}),  # a float: the slow path
    lambda o: o.__setitem__(0, {"hash": "a" * 64, "path": None}),
    lambda o: o.__setitem__(0, {1: "x", "path": "p"}),  # a key not a string: refused
    lambda o: o.__setitem__(0, ["a", "b"]),  # a member not an object
    lambda o: o.__setitem__(0, "text"),
    lambda o: o.__setitem__(0, {"hash": "a" * 64, "path": {"deep": "x"}}),  # nested
    lambda o: o.__setitem__(5, {"hash": "a" * 64, "path": "lone \ud800 surrogate"}),  # refused when encoded
    lambda o: o.__setitem__(5, {"hash": "a" * 64, "path": "x", "n": float("nan")}),  # refused
    lambda o: o.__setitem__(3, type("D", (dict,), {})(hash="a" * 64, path="p")),  # a dict subclass
    lambda o: o.append({"hash": "b" * 64, "path": "y"}),
])
def test_members_of_other_shapes_give_digests_answer(odd: Any) -> None:
    outputs = _outputs(random.Random(7), 40)
    odd(outputs)
    _same({"output_hashes": outputs, "producer": "p"}, 4)


def test_a_refusal_elsewhere_and_the_depth_limit_are_digests() -> None:
    outputs = _outputs(random.Random(8), 30)
    _same({"output_hashes": outputs, "bad": float("inf")}, 4)
    _same({"output_hashes": outputs, "bad": "\udfff"}, 4)
    _same({"output_hashes": outputs, 5: "key not a string"}, 4)  # type: ignore[dict-item]
    deep: Any = "x"
    for _ in range(MAX_DEPTH - 2):
        deep = [deep]
    _same({"output_hashes": outputs, "deep": deep}, 4)  # at the limit inside the document, not alone
    _same({"output_hashes": outputs, "deep": [deep]}, 4)  # past it
    _same({"output_hashes": "not a list"}, 4)
    _same({"other": outputs}, 4)


def test_the_marker_met_in_the_document_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import attest.canonical as canonical

    outputs = _outputs(random.Random(9), 30)
    monkeypatch.setattr(canonical.os, "urandom", lambda n: b"\x00" * n)  # a marker the document holds
    document = {"output_hashes": outputs, "note": "output_hashes:" + "00" * 16}
    assert digest_streamed(document, "output_hashes", 4) == digest(document)


def test_a_verifications_identity_is_the_whole_documents() -> None:
    rng = random.Random(10)
    outputs = sorted(_outputs(rng, 20_000), key=lambda o: o["path"])
    document = {"schema_version": "0.1", "output_hashes": outputs}
    assert attestation_identity(document) == digest(document)
    assert attestation_identity({**document, "output_hashes": outputs[::-1]}) == digest(document)  # reordered
