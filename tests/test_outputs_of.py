"""A sidecar's files made into the manifest's ``output_hashes`` only when the document is read
(``Attestation.outputs_of``, carriers/core.py ``LAZY_OUTPUTS``), and a verification judging that list from the files
(attest/verify/table.py ``OUTPUTS_FROM_FILES``: ``validate_outputs``, ``digest_of_rows``) held to the list made:
the same document, the same problems, the same identity, the same verdicts (docs/scale.md, seventeenth pass)."""

from __future__ import annotations

import copy
import pickle
import random
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from attest import canonical
from attest.errors import Code
from attest.schema import validate, validate_outputs
from attest.tables import Attestation, FileIdentity, TableState, attestation_identity
from attest.verify import table as verify_table
from attest.verify.table import verify_state
from carriers import core
from carriers.delta.carrier import DeltaCarrier
from tests.conftest import VALID

HEX = "0123456789abcdef"
NAMES = [
    "a.parquet",
    "part-0/x.parquet",
    "é/ü.parquet",
    'q"uote',
    "back\\slash",
    "{brace}",
    "tab\there",
    "\u2028line",
    "😀.parquet",
    "ctrl\x01",
]


def _files(rng: random.Random, n: int) -> list[FileIdentity]:
    paths = sorted({f"{rng.choice(NAMES)}/{i}" for i in range(n)})
    return [
        FileIdentity(path=p, size=rng.randrange(100), hash="".join(rng.choice(HEX) for _ in range(64))) for p in paths
    ]


def _pair(document: dict[str, Any], outputs: list[FileIdentity], **more: Any) -> tuple[Attestation, Attestation]:
    """(the attestation with its outputs made when read, the one with them made at once: the code before)."""
    lazy = Attestation(document=copy.deepcopy(document), attested_version="1", location="t", outputs_of=outputs, **more)
    eager_doc = copy.deepcopy(document)
    eager_doc["output_hashes"] = [{"hash": f.hash, "path": f.path} for f in outputs]
    return lazy, Attestation(document=eager_doc, attested_version="1", location="t", **more)


def test_the_document_read_is_the_one_made_at_once() -> None:
    files = _files(random.Random(1), 5)
    lazy, eager = _pair(VALID, files, files=tuple(files))
    assert lazy.pending_outputs() is not None and "document" not in lazy.__dict__
    assert lazy.producer_label == eager.producer_label and lazy.pending_outputs() is not None  # read without making
    bare = lazy.pending_outputs()[0]  # type: ignore[index]
    for other in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert other.document == eager.document and list(other.document) == list(eager.document)
    assert lazy.pending_outputs() is not None
    document = lazy.document
    assert document is bare  # the same dict, its list added last (as the carrier did before)
    assert list(document) == list(eager.document) and document == eager.document
    assert lazy.pending_outputs() is None and lazy.document is document
    assert lazy == eager and replace(lazy, problems=("x",)).document == eager.document
    with pytest.raises(AttributeError):
        lazy.no_such_attribute  # type: ignore[attr-defined]  # noqa: B018


def test_a_document_with_its_own_list_keeps_it() -> None:
    document = {**VALID, "output_hashes": [{"hash": "0" * 64, "path": "own"}]}
    att = Attestation(document=document, attested_version="1", location="t", outputs_of=_files(random.Random(2), 3))
    assert att.outputs_of is None and att.pending_outputs() is None and att.document is document


def _mutated(rng: random.Random) -> tuple[dict[str, Any], list[FileIdentity]]:
    document: dict[str, Any] = copy.deepcopy(VALID)
    files = _files(rng, rng.choice((1, 2, 5, 40)))
    for _ in range(rng.choice((0, 0, 1, 2))):
        what = rng.randrange(12)
        i = rng.randrange(len(files))
        if what == 0:
            document["program_hash"] = "X" * 64
        elif what == 1:
            del document["env_hash"]
        elif what == 2:
            document["manifest_version"] = "9.9"
        elif what == 3:
            document["hash_scheme"] = "v2"
        elif what == 4:
            document["subject"] = {**document["subject"], "model": "m\ud800"}
        elif what == 5:
            document["subject"] = {**document["subject"], "produced_at": ""}
        elif what == 6:
            files[i] = replace(files[i], hash=files[i].hash.upper())
        elif what == 7:
            files[i] = replace(files[i], path="")
        elif what == 8:
            files[i] = replace(files[i], path=files[i].path + "\udc80")
        elif what == 9:
            files[i] = replace(files[i], hash=files[i].hash[:63])
        elif what == 10:
            files[i] = replace(files[i], path=7)  # type: ignore[arg-type]
        else:
            document["extra"] = 1
    return document, files


@pytest.mark.parametrize("seed", range(150))
def test_problems_from_the_files_are_the_documents(seed: int) -> None:
    document, files = _mutated(random.Random(seed))
    full = {**copy.deepcopy(document), "output_hashes": [{"hash": f.hash, "path": f.path} for f in files]}
    found = validate_outputs(document, [f.hash for f in files], [f.path for f in files])
    assert found is None or found == validate(full)


def test_a_plain_manifest_is_judged_from_the_files() -> None:
    files = _files(random.Random(3), 50)
    assert validate_outputs(dict(VALID), [f.hash for f in files], [f.path for f in files]) == []
    assert validate_outputs(
        {**VALID, "hash_scheme": "v2"}, [f.hash for f in files], [f.path for f in files]
    ) == validate({**VALID, "hash_scheme": "v2", "output_hashes": [{"hash": f.hash, "path": f.path} for f in files]})


@pytest.mark.parametrize("seed", range(60))
def test_the_identity_from_the_files_is_the_documents(seed: int) -> None:
    rng = random.Random(seed)
    document, files = _mutated(rng)
    batch = rng.choice((1, 2, 3, 8192))
    full = {**copy.deepcopy(document), "output_hashes": [{"hash": f.hash, "path": f.path} for f in files]}
    found = canonical.digest_of_rows(
        document, "output_hashes", ("hash", "path"), [[f.hash for f in files], [f.path for f in files]], batch
    )
    if found is not None:
        assert found == canonical.digest(full) == attestation_identity(full)
    else:  # a lone surrogate or a path that is no string: the whole document refuses it, or is written otherwise
        assert (
            any(type(f.path) is not str or "\udc80" in f.path for f in files)
            or document["subject"]["model"] == "m\ud800"
        )


def test_the_identity_is_refused_to_the_caller_when_the_rows_are_not_plain() -> None:
    files = _files(random.Random(4), 3)
    hashes, paths = [f.hash for f in files], [f.path for f in files]
    assert (
        canonical.digest_of_rows({**VALID, "output_hashes": []}, "output_hashes", ("hash", "path"), [hashes, paths])
        is None
    )  # the key already there
    assert canonical.digest_of_rows(dict(VALID), "output_hashes", ("hash", "path"), [[], []]) is None
    assert (
        canonical.digest_of_rows(dict(VALID), "output_hashes", ("hash", "path"), [hashes, [*paths[:-1], 1.5]]) is None
    )


# ---- verdicts: the files judged as the list, held to the list made (the code before) ---------------------------


@pytest.fixture(autouse=True)
def _on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both shortcuts on (whatever ATTEST_FAST says): the tests hold them to the code they replace."""
    monkeypatch.setattr(core, "LAZY_OUTPUTS", True)
    monkeypatch.setattr(verify_table, "OUTPUTS_FROM_FILES", True)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> TableState:
    path = tmp_path_factory.mktemp("outputs") / "t"
    for i in range(3):
        write_deltalake(str(path), pa.table({"v": [i, i + 1]}), mode="append")
    DeltaCarrier(str(path)).record(model="orders", program_hash="a" * 64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core, "LAZY_OUTPUTS", True)
        state = DeltaCarrier(str(path)).state()
    assert state.attestation is not None and state.attestation.pending_outputs() is not None
    return state


def _variants(att: Attestation) -> list[tuple[str, dict[str, Any], list[FileIdentity], tuple[FileIdentity, ...]]]:
    pending = att.pending_outputs()
    assert pending is not None and att.files is not None
    bare, outputs, files = pending[0], list(pending[1]), att.files
    edited = [replace(outputs[0], hash="0" * 64), *outputs[1:]]
    return [
        ("intact", bare, outputs, files),
        ("a manifest field edited", {**bare, "program_hash": "b" * 64}, outputs, files),
        ("a manifest field invalid", {**bare, "program_hash": "B" * 64}, outputs, files),
        ("the outputs other than the files", bare, edited, files),
        ("the outputs and the files edited alike", bare, edited, (edited[0], *files[1:])),
        ("the files other than the outputs", bare, outputs, (edited[0], *files[1:])),
        ("the files in another order", bare, outputs, files[::-1]),
        ("the outputs out of order", bare, outputs[::-1], files),
        ("a file named twice", bare, [outputs[0], *outputs], (files[0], *files)),
        ("a path that is not text", bare, [replace(outputs[0], path=outputs[0].path + "\ud800"), *outputs[1:]], files),
        ("no outputs", bare, [], files),
    ]


@pytest.mark.parametrize("index", range(11))
@pytest.mark.parametrize("level", ["schema", "files"])
def test_verdicts_from_the_files_are_the_lists(recorded: TableState, index: int, level: Any) -> None:
    assert recorded.attestation is not None
    name, bare, outputs, files = _variants(recorded.attestation)[index]
    lazy, eager = _pair_like(recorded.attestation, bare, outputs, files)
    carrier = DeltaCarrier(recorded.table)
    fast = verify_state(replace(recorded, attestation=lazy), carrier, level=level).to_json()
    slow = verify_state(replace(recorded, attestation=eager), carrier, level=level).to_json()
    assert fast == slow, name
    if name == "intact":
        assert fast["passed"] and lazy.pending_outputs() is not None  # judged without making the list
    if name in ("a manifest field edited", "the outputs and the files edited alike") or (
        name == "the files other than the outputs" and level == "files"
    ):
        assert Code.CARRIER_TAMPERED.value in {e["code"] for e in fast["errors"]}, name
    if name in ("intact", "the files in another order", "the outputs out of order"):
        assert fast["passed"], name


def _pair_like(
    att: Attestation, bare: dict[str, Any], outputs: list[FileIdentity], files: tuple[FileIdentity, ...]
) -> tuple[Attestation, Attestation]:
    keep = {
        k: getattr(att, k)
        for k in (
            "attested_version",
            "location",
            "inputs",
            "manifest_identity",
            "view",
            "origin",
            "binding_note",
            "table_identity",
            "sidecar_digest",
            "content",
        )
    }
    lazy = Attestation(document=copy.deepcopy(bare), files=files, outputs_of=outputs, **keep)
    eager_doc = {**copy.deepcopy(bare), "output_hashes": [{"hash": f.hash, "path": f.path} for f in outputs]}
    return lazy, Attestation(document=eager_doc, files=files, **keep)


@pytest.mark.parametrize("lazy", [True, False])
def test_the_carrier_reads_the_same_document_either_way(
    recorded: TableState, lazy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "LAZY_OUTPUTS", lazy)
    monkeypatch.setattr(verify_table, "OUTPUTS_FROM_FILES", lazy)
    state = DeltaCarrier(recorded.table).state()
    assert state.attestation is not None
    assert (state.attestation.pending_outputs() is not None) is lazy
    report = verify_state(state, DeltaCarrier(recorded.table), level="files").to_json()
    assert report["passed"]
    assert (state.attestation.pending_outputs() is not None) is lazy  # a verification does not make the list
    assert recorded.attestation is not None
    assert state.attestation.document == recorded.attestation.document
    assert state.attestation.document["output_hashes"] == [
        {"hash": f.hash, "path": f.path} for f in sorted(state.attestation.files or (), key=lambda f: f.path)
    ]


def test_threads_reading_the_document_at_once_get_the_one_list() -> None:
    from concurrent.futures import ThreadPoolExecutor

    files = _files(random.Random(5), 2000)
    for _ in range(20):
        lazy, eager = _pair(VALID, files, files=tuple(files))
        with ThreadPoolExecutor(8) as pool:
            seen = list(pool.map(lambda att: att.document, [lazy] * 16))
        assert all(d is seen[0] for d in seen) and seen[0] == eager.document
