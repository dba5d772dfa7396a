"""docs/content-digest.md's test vectors: our encoder gives their encodings, and the digest recomputed from the
encodings with nothing but BLAKE3 and integer sums (as a third party would) is theirs and ours."""

from __future__ import annotations

import re
from typing import Any

import blake3
import pyarrow as pa
import pytest

from attest.content import CONTEXT, SCHEME, ColumnSpec, ContentDigest, digest_table, encode_rows
from tests.content.vectors import DOC, arrow_array, arrow_type, vectors

VECTORS = vectors()


def _table(vector: dict[str, Any]) -> tuple[pa.Table, list[ColumnSpec], dict[str, tuple[pa.DataType, Any]]]:
    fields = [pa.field(f"col{i}", arrow_type(tag)) for i, (_, tag) in enumerate(vector["columns"])]
    arrays = [arrow_array(f.type, [row[i] for row in vector["rows"]]) for i, f in enumerate(fields)]
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    specs = [ColumnSpec(identity, f) for (identity, _), f in zip(vector["columns"], fields, strict=True)]
    constants = {}
    for identity, tag, value in vector["constants"]:
        t = arrow_type(tag)
        constants[identity] = (t, arrow_array(t, [value])[0].as_py())
    return table, specs, constants


def test_the_doc_holds_the_vectors_and_states_the_parameters() -> None:
    assert len(VECTORS) >= 15
    text = DOC.read_text(encoding="utf-8")
    assert f"`{SCHEME}`" in text and f"`{CONTEXT}`" in text


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"][:40] for v in VECTORS])
def test_vector(vector: dict[str, Any]) -> None:
    table, specs, constants = _table(vector)
    assert [e.hex() for e in encode_rows(table, specs, constants)] == vector["encodings"]
    # A third party's digest: BLAKE3 derive_key per encoding, read to 4096 bytes, lanes added mod 2^32.
    lanes = [0] * 1024
    for encoding in vector["encodings"]:
        element = blake3.blake3(bytes.fromhex(encoding), derive_key_context=CONTEXT).digest(length=4096)
        for i in range(1024):
            lanes[i] = (lanes[i] + int.from_bytes(element[4 * i:4 * i + 4], "little")) % 2**32
    state = b"".join(lane.to_bytes(4, "little") for lane in lanes)
    expected = vector["digest"]
    assert lanes[:4] == expected["first_lanes"]
    assert blake3.blake3(state).hexdigest() == expected["short_id"]
    assert len(vector["encodings"]) == expected["rows"] == len(vector["rows"])
    ours = digest_table(table, specs, constants)
    assert ours == ContentDigest(state, expected["rows"]) and ours.short_id() == expected["short_id"]


def test_every_type_tag_of_the_doc_has_a_vector() -> None:
    """Each tag the doc's value table names (timestamp units spelled out) occurs in some vector's columns."""
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("| type tag | Arrow types"):text.index("U is `s`, `ms`")]
    named = set()
    for line in [x for x in table.splitlines()[2:] if x.startswith("|")]:
        first = line.split("|")[1]
        named.update(re.findall(r"`([^`]+)`", first))
    named -= {"extension(L:NAME)<S>"}  # tests/content/test_types.py covers extension types
    used = " ".join(tag for v in VECTORS for _, tag, *_ in v["columns"] + v["constants"])
    for tag in sorted(named):
        pattern = re.escape(tag).replace("N", r"\d+").replace("P", r"\d+").replace("S", r"\d+")
        pattern = pattern.replace("U", "(s|ms|us|ns)").replace("K", ".+").replace("V", ".+").replace("T", ".+")
        pattern = pattern.replace(r"…", ".*")
        assert re.search(pattern, used), tag
    for unit in ("s", "ms", "us", "ns"):
        assert f"timestamp[{unit}]" in used
