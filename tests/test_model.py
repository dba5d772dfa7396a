"""The typed model: strict parsing, exact round trips, absent optionals omitted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest.errors import ManifestMalformedError
from attest.model import Manifest, OutputHash, load_json_document

hexes = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
names = st.text(min_size=1, max_size=12)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "manifest_version": "0.1",
        "hash_scheme": "v1",
        "producer": {"name": draw(names), "version": draw(names)},
        "subject": {"model": draw(names)},
        "program_hash": draw(hexes),
        "env_hash": draw(hexes),
    }
    for key in ("run_id", "produced_at", "status"):
        if draw(st.booleans()):
            doc["subject"][key] = draw(names)
    if draw(st.booleans()):
        doc["inputs_hash"] = draw(hexes)
        doc["inputs_proof_class"] = draw(st.sampled_from(["strong", "heuristic"]))
    if draw(st.booleans()):
        doc["output_hashes"] = draw(st.lists(
            st.builds(lambda h, p: {"hash": h} if p is None else {"hash": h, "path": p}, hexes, st.none() | names),
            max_size=5))
    return doc


@given(documents())
@settings(max_examples=200)
def test_dict_model_dict_is_exact(doc: dict[str, Any]) -> None:
    manifest = Manifest.from_dict(doc)
    assert manifest.to_dict() == doc
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert Manifest.from_json(manifest.canonical_bytes()) == manifest


@given(documents())
@settings(max_examples=100)
def test_absent_optionals_are_omitted_not_null(doc: dict[str, Any]) -> None:
    def values(node: Any) -> list[Any]:
        if isinstance(node, dict):
            return [v for item in node.values() for v in [item, *values(item)]]
        if isinstance(node, list):
            return [v for item in node for v in [item, *values(item)]]
        return []

    # Checked on the parsed text, not by searching it: a model may well be named "null".
    assert None not in values(json.loads(Manifest.from_dict(doc).to_json()))


def test_model_is_immutable(valid_doc: dict[str, Any]) -> None:
    manifest = Manifest.from_dict(valid_doc)
    with pytest.raises(AttributeError):
        manifest.program_hash = "b" * 64  # type: ignore[misc]


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', "{", "[1,]", '{"a": NaN}', b"\xff\xfe", ""])
def test_malformed_json_is_refused(text: str | bytes) -> None:
    with pytest.raises(ManifestMalformedError):
        load_json_document(text)


@pytest.mark.parametrize("text", [
    '{"a": 1, "b": 2, "a": 1}',  # the same value twice is refused too: the key is what two readers disagree on
    '{"x": {"k0": "v", "k1": "v", "a": "v", "k2": "v", "a": "w"}}',
    '{"output_hashes": {' + ", ".join(f'"f{i}": "h"' for i in range(5000)) + ', "a": "h"' + ', "a": "h2"}}',
    '[{"ok": 1}, {"a": [], "a": {}}]',
])
def test_a_duplicate_key_anywhere_is_named(text: str) -> None:
    with pytest.raises(ManifestMalformedError, match="duplicate key 'a'"):
        load_json_document(text)


def test_many_distinct_keys_parse_as_written() -> None:
    pairs = {f"part-{i:05d}.parquet": f"{i:064x}" for i in range(20_000)}
    document = load_json_document(json.dumps({"output_hashes": pairs}))
    assert list(document["output_hashes"].items()) == list(pairs.items())  # every key, in document order


# ---- hostile and reference-divergent JSON: every case a coded ManifestMalformedError, never a crash -------------
def test_nesting_limit_is_the_reference_parsers() -> None:
    from attest.canonical import MAX_DEPTH

    assert MAX_DEPTH == 127  # serde_json's recursion limit: rocky-canon reads 127 levels and refuses 128
    assert load_json_document("[" * 127 + "]" * 127) is not None
    assert load_json_document('{"a":' * 127 + "1" + "}" * 127) is not None
    for text in ("[" * 128 + "]" * 128, '{"a":' * 128 + "1" + "}" * 128):
        with pytest.raises(ManifestMalformedError, match="more than 127 arrays/objects deep"):
            load_json_document(text)


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "[" * 100_000, '{"a":' * 100_000 + "1",
                                  '[{"a":[' * 40_000 + "]}]" * 40_000])
def test_a_100000_deep_document_is_malformed_not_a_recursion_error(text: str) -> None:
    with pytest.raises(ManifestMalformedError, match="deep"):
        load_json_document(text)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = '["' + "[" * 1000 + '", "\\"' + "{" * 1000 + '"]'
    assert load_json_document(text) == ["[" * 1000, '"' + "{" * 1000]


def test_size_limit() -> None:
    doc = '{"a": "' + "x" * 1000 + '"}'
    assert load_json_document(doc, max_bytes=len(doc)) == {"a": "x" * 1000}
    with pytest.raises(ManifestMalformedError, match="more than the 1,000 this reader accepts"):
        load_json_document(doc, max_bytes=1000)
    with pytest.raises(ManifestMalformedError, match="bytes"):
        load_json_document(doc.encode(), max_bytes=1000)


@pytest.mark.parametrize("text", ['"\\ud800"', '{"\\udfff": 1}', '["ok", {"k": "a\\ud83dz"}]', '"\\ude00\\ud83d"',
                                  "\"\ud800\""])
def test_lone_surrogates_are_malformed(text: str) -> None:
    with pytest.raises(ManifestMalformedError, match="lone surrogate"):
        load_json_document(text)


def test_surrogate_pairs_and_escaped_backslashes_are_fine() -> None:
    assert load_json_document('"\\ud83d\\ude00"') == "\U0001f600"
    assert load_json_document('"\\\\ud800"') == "\\ud800"  # an escaped backslash, then plain text


@pytest.mark.parametrize("text", ["[1e400]", "[-1e400]", "[1" + "0" * 400 + "]", "[1e2147483648]",
                                  "[1.7976931348623159e308]"])
def test_numbers_no_f64_holds_are_malformed(text: str) -> None:
    with pytest.raises(ManifestMalformedError, match="out of range"):
        load_json_document(text)


def test_numbers_are_the_reference_values() -> None:
    doc = load_json_document("[0, -0, 1.0, 18446744073709551615, 18446744073709551616, -9223372036854775808, "
                             "-9223372036854775809, 1e-400, 0e999999999999, -1.5e-300, 1" + "0" * 5000 + "e-4990]")
    assert doc[0] == 0 and isinstance(doc[0], int)
    assert doc[1] == 0.0 and str(doc[1]) == "-0.0"  # -0 is the float -0.0, as serde_json reads it
    assert doc[2] == 1.0 and isinstance(doc[2], float)
    assert doc[3] == 2**64 - 1 and isinstance(doc[3], int)
    assert doc[4] == 1.8446744073709552e19 and isinstance(doc[4], float)
    assert doc[5] == -(2**63) and isinstance(doc[5], int)
    assert isinstance(doc[6], float)
    assert doc[7] == 0.0 and doc[8] == 0.0
    assert doc[9] == -1.4999999999999998e-300  # serde_json's fast path, not the correctly rounded -1.5e-300
    assert doc[10] == 1e10  # 5000 digits: only the first 20 are kept, the rest only scale (no int() of them)


def _nested(depth: int) -> Any:
    """An array inside an object inside an array ..., ``depth`` containers in all."""
    node: Any = 1
    for level in range(depth):
        node = [node] if level % 2 else {"k": node}
    return node


@pytest.mark.parametrize("where", [0, 500, 999])
def test_depth_is_counted_through_every_shape_of_level(where: int) -> None:
    # The depth walk types a level's children in C and gathers only the containers: one deep branch among many flat
    # ones, under an object or an array, in a level mixing objects, arrays and scalars, is still found.
    for inside in (125, 126):  # with the document, the list and the item around it: 128 and 129 levels
        items: list[Any] = [{"path": f"p/{i}", "hash": "h"} for i in range(1000)]
        items[where] = {"path": "p", "deep": _nested(inside)}
        mixed = {"output_hashes": items, "n": 1, "s": "x", "l": [1, "2", None], "o": {"a": 1}}
        with pytest.raises(ManifestMalformedError, match="more than 127"):
            load_json_document(json.dumps(mixed))
        items[where] = [1, [2, "3"], _nested(inside)]  # an array in a level of objects
        with pytest.raises(ManifestMalformedError, match="more than 127"):
            load_json_document(json.dumps(mixed))
    items[where] = {"path": "p", "deep": _nested(124)}  # 127 levels: what the reference reads
    assert load_json_document(json.dumps({"output_hashes": items, "s": "x", "l": [[[]]]})) is not None
    assert load_json_document(json.dumps([[1, {"a": [2]}]] * 300)) is not None  # many containers, shallow


def test_depth_of_a_document_over_a_mebibyte_is_walked_without_counting_brackets() -> None:
    pad = "x" * (1 << 20)
    with pytest.raises(ManifestMalformedError, match="more than 127"):
        load_json_document(json.dumps({"pad": pad, "deep": _nested(127)}))  # 128 levels with the outer object
    assert load_json_document(json.dumps({"pad": pad, "deep": _nested(126)}))["pad"] == pad


@pytest.mark.parametrize("literal", ["0", "-0", "-1", "9" * 17, "9" * 18, "-" + "9" * 17, "-" + "9" * 18, "9" * 19,
                                     "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                                     "-9223372036854775809", "18446744073709551615", "18446744073709551616",
                                     "1" + "0" * 300])
def test_integers_read_as_the_reference_reads_them_on_either_side_of_the_short_path(literal: str) -> None:
    from attest.numbers import reference_number

    # The parser keeps integers of up to 18 characters as they are and hands longer ones (and -0) to reference_number.
    value = load_json_document(f"[{literal}]")[0]
    expected = reference_number(literal)
    assert value == expected and type(value) is type(expected)
    assert repr(value) == repr(expected)  # -0 is the reference's -0.0, not 0


NASTY = st.sampled_from(["}", "{", "[", "]", "},", "}, {", ",\x00", "},\x00{", "\x00", "\n", "\u2028", '"', "\\",
                         "{}", "[]", "é", "\U0001f600", " ", ":", '": "'])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(NASTY | st.text(max_size=4), max_size=6).map("".join),
                          st.booleans()), max_size=12))
def test_indented_json_is_exactly_what_json_dumps_lays_out(items: list[tuple[str, bool]]) -> None:
    # to_json lays the output list out from one compact C encoding; byte for byte it must be json.dumps(indent=2).
    from attest.build import build_manifest

    outputs = [(f"p/{i}{text}" if with_path else "", format(i, "064x")) for i, (text, with_path) in enumerate(items)]
    manifest = build_manifest(model="m{}[]", program_hash="a" * 64, env_hash="b" * 64,
                              outputs=[(p, h) for p, h in outputs if p] or None)
    manifest = manifest.with_outputs([*(manifest.output_hashes or ()),
                                      *(OutputHash(hash=h) for p, h in outputs if not p)] or None)
    expected = json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n"
    assert manifest.to_json() == expected
    assert json.loads(manifest.to_json()) == manifest.to_dict()


@pytest.mark.parametrize("outputs", [[{}], [{"hash": "h"}, {}], [{"hash": {"nested": "x"}}], [{"hash": ["x"]}],
                                     [{"hash": "h", "path": "a{b"}]])
def test_indented_outputs_lays_out_only_flat_objects_and_leaves_the_rest_to_json(outputs: list[Any]) -> None:
    from attest.model import _indented_outputs

    assert _indented_outputs(outputs) is None  # json.dumps lays these out itself
    assert _indented_outputs([{"hash": "h", "path": "p"}]) == \
        json.dumps({"o": [{"hash": "h", "path": "p"}]}, indent=2)[9:-2]
