"""Bulk paths of a verification held to the code they replace (attest/tables.py): ``data_files`` and
``file_identities`` make the DataFiles and FileIdentities their dataclasses' ``__init__`` makes, and
``attestation_document`` skips the sort of an output list only where the sort would give the same list back."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from attest import tables
from attest.tables import DataFile, FileIdentity, _made_bare, attestation_document, data_files, file_identities


@pytest.mark.parametrize("seed", range(20))
def test_data_files_are_the_dataclass_made_ones(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 300)
    paths = [rng.choice(["a", "b/c", "é/ü", "", "x" * rng.randint(1, 40)]) + str(i) for i in range(n)]
    sizes = [rng.choice([0, 1, -1, 2**40, rng.randint(0, 10**6)]) for _ in range(n)]
    kind = rng.choice(["data", "deletion_vector", "delete"])
    root = rng.choice(["/t/", "s3://b/t/", ""])
    made = data_files(paths, sizes, map(root.__add__, paths), kind)  # type: ignore[arg-type]
    expected = [DataFile(path=p, size=s, kind=kind, location=root + p)  # type: ignore[arg-type]
                for p, s in zip(paths, sizes, strict=True)]
    assert made == expected
    assert [hash(f) for f in made] == [hash(f) for f in expected]
    assert [repr(f) for f in made] == [repr(f) for f in expected]
    assert all(type(f) is DataFile for f in made)
    for f in made[:3]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            f.size = 5  # type: ignore[misc]
        assert dataclasses.replace(f, size=7) == DataFile(path=f.path, size=7, kind=f.kind, location=f.location)


@pytest.mark.parametrize("seed", range(10))
def test_file_identities_are_the_dataclass_made_ones(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 300)
    paths = [f"p/{rng.randint(0, 10**6)}" for _ in range(n)]
    sizes = [rng.randint(0, 10**16) for _ in range(n)]
    hashes = [f"{rng.getrandbits(256):064x}" for _ in range(n)]
    kinds: list[Any] = [rng.choice(["data", "deletion_vector", "delete"]) for _ in range(n)]
    made = file_identities(paths, sizes, hashes, kinds)
    expected = list(map(FileIdentity, paths, sizes, hashes, kinds))
    assert made == expected
    assert [hash(f) for f in made] == [hash(f) for f in expected]
    assert [f.to_dict() for f in made] == [f.to_dict() for f in expected]
    assert all(type(f) is FileIdentity for f in made)
    if made:
        with pytest.raises(dataclasses.FrozenInstanceError):
            made[0].hash = "0" * 64  # type: ignore[misc]


def test_bulk_makers_refuse_lists_of_other_lengths_and_other_fields() -> None:
    with pytest.raises(ValueError, match="sizes"):
        data_files(["a", "b"], [1], ["x", "y"])
    with pytest.raises(ValueError, match="locations"):
        data_files(["a", "b"], [1, 2], ["x"])
    with pytest.raises(ValueError, match="hashes"):
        file_identities(["a", "b"], [1, 2], ["h"], ["data", "data"])
    with pytest.raises(ValueError, match="fields"):  # a field left unset would be an instance without it
        _made_bare(FileIdentity, {"path": ["a"], "size": [1], "hash": ["h"]}, 1)
    with pytest.raises(ValueError, match="fields"):
        _made_bare(DataFile, {"path": ["a"], "kind": ["data"], "size": [1], "location": ["x"]}, 1)


def _sorted_document(document: dict[str, Any]) -> dict[str, Any]:
    """attestation_document as it was: the outputs always sorted by (path, hash)."""
    outputs = document.get("output_hashes")
    if isinstance(outputs, list) and all(isinstance(o, dict) for o in outputs):
        return {**document, "output_hashes": sorted(
            outputs, key=lambda o: (str(o.get("path", "")), str(o.get("hash", ""))))}
    return document


class _Dict(dict[str, Any]):
    pass


def _outputs(rng: random.Random) -> list[Any]:
    n = rng.randint(0, 40)
    outputs: list[Any] = [{"path": f"p{rng.randint(0, 60):03d}", "hash": rng.choice("abc") * 3} for _ in range(n)]
    shape = rng.random()
    if shape < 0.5:
        outputs.sort(key=lambda o: (o["path"], o["hash"]))  # in order, perhaps with a path twice
    elif shape < 0.6:
        outputs.sort(key=lambda o: o["path"])  # in path order, a path twice with its hashes in any order
    if shape < 0.3:
        seen: set[str] = set()
        outputs = [o for o in outputs if not (o["path"] in seen or seen.add(o["path"]))]  # type: ignore[func-returns-value]
    for o in outputs:
        odd = rng.random()
        if odd < 0.03:
            del o["path"]
        elif odd < 0.06:
            o["path"] = rng.choice([None, 7, b"p010", ["p"]])
        elif odd < 0.08:
            del o["hash"]
    if outputs and rng.random() < 0.1:
        outputs[rng.randrange(len(outputs))] = _Dict(outputs[0])
    if outputs and rng.random() < 0.05:
        outputs[rng.randrange(len(outputs))] = "not a dict"
    return outputs


def test_the_output_list_kept_in_order_is_the_sorted_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(35)
    kept = 0
    real = tables._in_path_order

    def counting(outputs: list[dict[str, Any]]) -> bool:
        nonlocal kept
        found = real(outputs)
        kept += found
        return found

    monkeypatch.setattr(tables, "_in_path_order", counting)
    for _ in range(3000):
        document = {"recipe": "r", "output_hashes": _outputs(rng)}
        expected = _sorted_document(document)
        got = attestation_document(document)
        assert got == expected
        assert [type(o) for o in got["output_hashes"]] == [type(o) for o in expected["output_hashes"]]
        if isinstance(got["output_hashes"], list) and got is not document:
            assert got["output_hashes"] is not document["output_hashes"]  # a new list, as sorted() gives
    assert kept > 300  # the fast path ran


def test_a_document_without_an_output_list_is_itself() -> None:
    for document in ({"recipe": "r"}, {"output_hashes": None}, {"output_hashes": "x"}):
        assert attestation_document(document) is document



def _triples_before(files: list[DataFile], reuse: dict[tuple[str, int], str],
                    hashed: dict[str, str]) -> list[FileIdentity]:
    """carriers.core's record triples as they were made."""
    return [FileIdentity(path=f.path, size=f.size, kind=f.kind, hash=reuse.get((f.path, f.size)) or hashed[f.path])
            for f in files]


@pytest.mark.parametrize("seed", range(30))
def test_the_record_triples_are_the_ones_made_before(seed: int) -> None:
    """A record's (path, size, hash, kind) records (carriers.core._triples): with hashes to reuse or none, a hash
    missing (the same KeyError), kinds of every sort."""
    from carriers.core import _triples

    rng = random.Random(seed)
    files = [DataFile(path=f"p{i}", size=rng.randint(0, 9), kind=rng.choice(["data", "deletion_vector", "delete"]),
                      location=f"/t/p{i}") for i in range(rng.randint(0, 40))]
    reuse = {(f.path, f.size): f"{rng.getrandbits(256):064x}" for f in files if rng.random() < 0.3} \
        if seed % 2 else {}
    hashed = {f.path: f"{rng.getrandbits(256):064x}" for f in files if (f.path, f.size) not in reuse}
    if files and rng.random() < 0.2:
        hashed.pop(files[rng.randrange(len(files))].path, None)
    try:
        expected: Any = _triples_before(files, reuse, hashed)
    except KeyError as exc:
        expected = ("KeyError", exc.args)
    try:
        got: Any = _triples(files, reuse, hashed)
    except KeyError as exc:
        got = ("KeyError", exc.args)
    assert got == expected
