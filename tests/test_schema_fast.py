"""The plain-Python schema check (``attest.schema.conforms``) never accepts what the published schema refuses.

``validate`` skips jsonschema for a document ``conforms`` accepts, so ``conforms`` must be sound: on documents
generated around the schema's edges (every field kept, dropped, retyped, emptied, lengthened; extra keys at every
level; output lists of every shape) acceptance implies jsonschema finds nothing. It must also be useful: every
valid document the generator makes from valid parts is accepted, so the fast path is the path taken.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest.schema import _validator, conforms, schema_problems
from tests.conftest import HEX_A, HEX_B, VALID

ROOT = Path(__file__).resolve().parents[1]

# Values around each rule: valid ones, wrong types, empty, near-miss hashes, unicode look-alikes, a trailing newline.
ODD = st.sampled_from([None, 0, 1, 1.5, True, False, [], {}, "", " ", "x", "0.1", "0.10", 0.1, "v1", "strong",
                       "heuristic", "Strong", HEX_A, HEX_A.upper(), HEX_A[:-1], HEX_A + "0", HEX_A + "\n",
                       "\u0660" * 64, "a" * 63 + "g", {"name": "n", "version": "v"}, {"model": "m"}])
HASHES = st.sampled_from([HEX_A, HEX_B] * 6 + [HEX_A + "\n", HEX_A.upper(), "", 7])
PATHS = st.sampled_from(["x.parquet", "p=1/x.parquet"] * 6 + ["", 3, None])


@st.composite
def outputs(draw: st.DrawFn) -> Any:
    item = st.one_of(
        st.fixed_dictionaries({"hash": HASHES}),
        st.fixed_dictionaries({"hash": HASHES, "path": PATHS}),
        st.fixed_dictionaries({"hash": HASHES, "path": PATHS}),
        st.fixed_dictionaries({"path": PATHS}),
        st.fixed_dictionaries({"hash": HASHES, "path": PATHS, "size": st.just(1)}),
        ODD,
    )
    return draw(st.lists(item, max_size=4)) if draw(st.integers(0, 9)) else draw(ODD)


@st.composite
def documents(draw: st.DrawFn) -> Any:
    doc: dict[str, Any] = copy.deepcopy(VALID)
    if draw(st.booleans()):
        doc["output_hashes"] = draw(outputs())
    for key in list(doc):
        action = draw(st.sampled_from(["keep"] * 40 + ["drop", "odd"]))
        if action == "drop":
            del doc[key]
        elif action == "odd":
            doc[key] = draw(ODD)
    for section, keys in (("producer", ("name", "version")), ("subject", ("model", "run_id", "produced_at",
                                                                          "status"))):
        node = doc.get(section)
        if isinstance(node, dict):
            for key in keys:
                action = draw(st.sampled_from(["keep"] * 30 + ["drop", "odd", "add"]))
                if action == "drop":
                    node.pop(key, None)
                elif action in ("odd", "add"):
                    node[key] = draw(ODD)
            if draw(st.integers(0, 29)) == 0:
                node["extra"] = "x"
    if draw(st.integers(0, 29)) == 0:
        doc["extra"] = draw(ODD)
    if draw(st.integers(0, 29)) == 0:
        doc["inputs_proof_class"] = draw(ODD)
    return doc if draw(st.integers(0, 29)) else draw(ODD)


@settings(max_examples=3000, deadline=None)
@given(documents())
def test_accepted_means_the_published_schema_accepts(doc: Any) -> None:
    valid = not list(_validator().iter_errors(doc))
    assert valid or not conforms(doc), doc
    # Where the two differ, it is only ever caution: a valid document conforms refuses still validates (slowly).
    assert not valid or conforms(doc) or schema_problems(doc) == [], doc


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"hash": st.sampled_from([HEX_A, HEX_B])},
                                      optional={"path": st.text(min_size=1, max_size=8)}), max_size=80),
       st.booleans(), st.booleans())
def test_valid_documents_take_the_fast_path(items: list[dict[str, str]], inputs: bool, optional: bool) -> None:
    doc: dict[str, Any] = copy.deepcopy(VALID)
    doc["output_hashes"] = items
    if not inputs:
        del doc["inputs_hash"], doc["inputs_proof_class"]
    if not optional:
        doc["subject"] = {"model": "m"}
    assert conforms(doc) and schema_problems(doc) == []
    assert list(_validator().iter_errors(doc)) == []


def test_valid_documents_are_validated_without_importing_jsonschema() -> None:
    code = ("import json, sys\n"
            "from attest.schema import validate\n"
            "from tests.conftest import VALID\n"
            "assert validate(VALID) == []\n"
            "assert 'jsonschema' not in sys.modules, 'a valid document paid for jsonschema'\n"
            "assert validate({**VALID, 'program_hash': 'x'})\n"
            "assert 'jsonschema' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_verifying_a_manifest_imports_only_what_it_uses(tmp_path: Path) -> None:
    """Start-up is a visible share of a short verification: the manifest path imports no schema library, no table
    engine, no thread-pool or archive machinery, no standalone carrier."""
    import json

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.bin").write_bytes(b"x")
    from attest.hashing import hash_file

    doc = {**VALID, "output_hashes": [{"hash": hash_file(tmp_path / "a" / "f.bin"), "path": "f.bin"}]}
    (tmp_path / "m.json").write_text(json.dumps(doc))
    code = ("import sys\n"
            "from attest.cli import main\n"
            f"rc = main(['verify', {str(tmp_path / 'm.json')!r}, '--artifacts-dir', {str(tmp_path / 'a')!r}])\n"
            "assert rc == 0\n"
            "heavy = ['jsonschema', 'deltalake', 'pyarrow', 'pyiceberg', 'pyspark', 'concurrent.futures', 'shutil',\n"
            "         'importlib.resources', 'carriers.standalone', 'attest.signing']\n"
            "print([m for m in heavy if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_the_cli_finds_envelopes_where_the_standalone_carrier_puts_them() -> None:
    from attest.cli.verify import _envelope_beside
    from carriers.standalone import envelope_name

    for target in ("m.json", "dir/m.json", "/abs/dir/manifest.json", "./x.json"):
        assert _envelope_beside(target) == str(Path(target).with_name(envelope_name(Path(target).name)))


# One bad item among many, at the start, middle and end: the list checks run over the whole list at once (C passes,
# one over the joined digests), so a defect must not hide behind its neighbours or be joined into one.
BAD_ITEMS = [
    {"hash": HEX_A[:63]},  # 63 + 65 characters: the joined digests would still be 64-character runs of hex
    {"hash": HEX_A + "0"},
    {"hash": HEX_A[:32] + "\n" + HEX_A[:31]},
    {"hash": HEX_A.upper()},
    {"hash": "\u0660" * 64},  # Arabic-Indic digits: isdigit, not hex
    {"hash": "g" * 64},
    {"hash": 7},
    {"hash": None},
    {"path": "x.parquet"},
    {"hash": HEX_A, "path": ""},
    {"hash": HEX_A, "path": 3},
    {"hash": HEX_A, "Path": "x.parquet"},
    {"hash": HEX_A, "path": "x.parquet", "size": 1},
    {},
    [HEX_A],
    HEX_A,
]


@pytest.mark.parametrize("bad", BAD_ITEMS, ids=lambda b: repr(b)[:40])
@pytest.mark.parametrize("where", [0, 500, 999])
@pytest.mark.parametrize("with_paths", [True, False])
def test_one_bad_item_among_a_thousand_is_refused(bad: Any, where: int, with_paths: bool) -> None:
    items: list[Any] = [{"hash": HEX_B, "path": f"p/{i}.parquet"} if with_paths else {"hash": HEX_B}
                        for i in range(1000)]
    items[where] = bad
    if bad == {"hash": HEX_A[:63]}:
        items[where + 1 if where < 999 else where - 1] = {"hash": HEX_A + "0"}
    doc: dict[str, Any] = {**copy.deepcopy(VALID), "output_hashes": items}
    assert list(_validator().iter_errors(doc))  # the published schema refuses it
    assert not conforms(doc)
    assert schema_problems(doc)


@pytest.mark.parametrize("shape", ["paths", "no paths", "mixed"])
def test_a_thousand_valid_items_of_each_shape_conform(shape: str) -> None:
    items = [{"hash": HEX_A if i % 2 else HEX_B, **({"path": f"p/{i}"} if shape == "paths" or
                                                    (shape == "mixed" and i % 3) else {})} for i in range(1000)]
    doc: dict[str, Any] = {**copy.deepcopy(VALID), "output_hashes": items}
    assert conforms(doc)
    assert list(_validator().iter_errors(doc)) == []
