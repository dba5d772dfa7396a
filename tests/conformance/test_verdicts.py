"""(a) Manifests our code produces get the same verdict from the reference verifier as from `attest verify`.

Each case is a manifest (and an artifacts directory or none) built by recipe-attest's producer side, then
judged twice: by `attest verify` and by rocky-verify. Same exit code, same verdict line. The few places where we
are deliberately stricter or find more are listed at the end, each asserted on both sides.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3
import pytest

from attest.build import build_manifest
from attest.cli import main
from attest.identity.env import env_identity
from attest.identity.inputs import ObservedInput
from attest.identity.program import program_identity_json
from carriers.standalone import StandaloneCarrier
from tests.conformance.reference import rocky_verify

pytestmark = pytest.mark.usefixtures("reference_built")

VERDICTS = ("VERIFIED", "VERIFIED (schema only — no byte-identity attested)", "NOT VERIFIED")


def attest_verify(manifest: Path, artifacts: Path | None = None) -> tuple[int, str]:
    """`attest verify MANIFEST [--artifacts-dir DIR]` in this process: (exit code, stdout)."""
    argv = ["verify", str(manifest)] + (["--artifacts-dir", str(artifacts)] if artifacts is not None else [])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


def reference_line(line: str) -> str:
    """The reference verifier's verdict line for one of ours: ours also says what was not checked and the
    signature (``VERIFIED (bytes, unsigned)``, ``VERIFIED (schema only — 2 output hashes not checked: …)``,
    docs/verify.md); the outcome and the level are the reference's."""
    if line.startswith("VERIFIED (bytes"):
        return "VERIFIED"
    if line.startswith("VERIFIED (schema only"):
        return "VERIFIED (schema only — no byte-identity attested)"
    return line


def verdict(text: str) -> str | None:
    lines = [reference_line(line) for line in text.strip().splitlines()]
    lines = [line for line in lines if line in VERDICTS]
    return lines[-1] if lines else None


def same_verdict(manifest: Path, artifacts: Path | None = None) -> int:
    ours, our_text = attest_verify(manifest, artifacts)
    theirs, their_text = rocky_verify(manifest, artifacts)
    assert ours == theirs, f"attest verify exit {ours}, rocky-verify exit {theirs}\n--- ours\n{our_text}\n" \
                           f"--- theirs\n{their_text}"
    assert verdict(our_text) == verdict(their_text), (our_text, their_text)
    return ours


# ---- what our producer side writes ---------------------------------------------------------------------------------
@dataclass
class Produced:
    manifest: Path
    artifacts: Path | None


def _artifacts(root: Path, count: int, *, content_addressed: bool) -> list[tuple[str, str]]:
    root.mkdir(parents=True, exist_ok=True)
    pairs = []
    for index in range(count):
        data = f"PAR1 rows of part {index} PAR1".encode() * (index + 1)
        h = blake3.blake3(data).hexdigest()
        name = f"{h}.parquet" if content_addressed else f"part-{index:05d}.parquet"
        (root / name).write_bytes(data)
        pairs.append((name, h))
    return pairs


def _identities() -> dict[str, str]:
    return {"program_hash": program_identity_json({"kind": "sql", "statements": "SELECT 1"}),
            "env_hash": env_identity(producer_name="recipe-attest", producer_version="0.1.0", dialect="spark")}


INPUTS = [ObservedInput(table="delta:/lake/raw@3", content="c" * 64),
          ObservedInput(table="iceberg:cat.ns.t", snapshot_id="42", row_count=10)]


def _write(tmp_path: Path, manifest: Any) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(manifest.to_json(), encoding="utf-8")
    return path


def standalone_carrier(tmp_path: Path) -> Produced:
    root = tmp_path / "carrier"
    pairs = _artifacts(root, 3, content_addressed=True)
    manifest = build_manifest(model="orders", run_id="run-1", inputs=INPUTS, outputs=pairs, **_identities())
    StandaloneCarrier(root).write(manifest, marker=True)
    return Produced(root / "manifest.json", root)


def with_inputs_and_outputs(tmp_path: Path) -> Produced:
    pairs = _artifacts(tmp_path / "out", 2, content_addressed=False)
    manifest = build_manifest(model="orders", inputs=INPUTS[:1], outputs=pairs, **_identities())
    return Produced(_write(tmp_path, manifest), tmp_path / "out")


def schema_only_with_outputs(tmp_path: Path) -> Produced:
    pairs = _artifacts(tmp_path / "out", 2, content_addressed=True)
    return Produced(_write(tmp_path, build_manifest(model="m", outputs=pairs, **_identities())), None)


def schema_only_no_inputs_no_outputs(tmp_path: Path) -> Produced:
    return Produced(_write(tmp_path, build_manifest(model="m", status=None, **_identities())), None)


def no_outputs_with_a_directory(tmp_path: Path) -> Produced:
    (tmp_path / "out").mkdir()
    return Produced(_write(tmp_path, build_manifest(model="m", inputs=INPUTS, **_identities())), tmp_path / "out")


def many_outputs(tmp_path: Path) -> Produced:
    # Above the validator's fast-path threshold (64 items): the hand-written item checks must agree too.
    pairs = _artifacts(tmp_path / "out", 80, content_addressed=True)
    return Produced(_write(tmp_path, build_manifest(model="m", outputs=pairs, **_identities())), tmp_path / "out")


def unicode_everywhere(tmp_path: Path) -> Produced:
    root = tmp_path / "out"
    root.mkdir()
    data = b"bytes"
    name = "r\u00e9gion \u65e5\u672c \U0001f600 \u2028.parquet"
    (root / name).write_bytes(data)
    manifest = build_manifest(model="\u00e9t\u00e9\u2028\u0085", run_id="\U0001f600",
                              outputs=[(name, blake3.blake3(data).hexdigest())], **_identities())
    return Produced(_write(tmp_path, manifest), root)


PRODUCERS: dict[str, Callable[[Path], Produced]] = {f.__name__: f for f in (
    standalone_carrier, with_inputs_and_outputs, schema_only_with_outputs, schema_only_no_inputs_no_outputs,
    no_outputs_with_a_directory, many_outputs, unicode_everywhere)}


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_what_we_produce_verifies_alike(tmp_path: Path, name: str) -> None:
    produced = PRODUCERS[name](tmp_path)
    assert same_verdict(produced.manifest, produced.artifacts) == 0


# ---- tampered: every edit a third party could make, judged alike -------------------------------------------------
def _doc(produced: Produced) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(produced.manifest.read_text(encoding="utf-8"))
    return loaded


def _rewrite(produced: Produced, edit: Callable[[dict[str, Any]], Any]) -> None:
    doc = _doc(produced)
    edit(doc)
    produced.manifest.write_text(json.dumps(doc), encoding="utf-8")


def _flip_first_artifact(produced: Produced) -> None:
    assert produced.artifacts is not None
    target = sorted(p for p in produced.artifacts.iterdir() if p.suffix == ".parquet")[0]
    data = bytearray(target.read_bytes())
    data[5] ^= 1
    target.write_bytes(bytes(data))


def _remove_artifacts(produced: Produced) -> None:
    assert produced.artifacts is not None
    for p in produced.artifacts.iterdir():
        if p.suffix == ".parquet":
            p.unlink()


def _raw(text: bytes) -> Callable[[Produced], None]:
    return lambda produced: produced.manifest.write_bytes(text)


TAMPERS: dict[str, tuple[Callable[[Produced], Any], int]] = {
    "flipped artifact byte": (_flip_first_artifact, 1),
    "artifacts deleted": (_remove_artifacts, 1),
    "output hash edited": (lambda p: _rewrite(p, lambda d: d["output_hashes"][0].update(hash="0" * 64)), 1),
    "output hash upper case": (lambda p: _rewrite(p, lambda d: d["output_hashes"][0].update(
        hash=d["output_hashes"][0]["hash"].upper())), 1),
    "output entry without hash": (lambda p: _rewrite(p, lambda d: d["output_hashes"][0].pop("hash")), 1),
    "output path empty": (lambda p: _rewrite(p, lambda d: d["output_hashes"][0].update(path="")), 1),
    "output item not an object": (lambda p: _rewrite(p, lambda d: d["output_hashes"].append("x")), 1),
    "output_hashes not a list": (lambda p: _rewrite(p, lambda d: d.update(output_hashes={})), 1),
    "program_hash truncated": (lambda p: _rewrite(p, lambda d: d.update(program_hash=d["program_hash"][:63])), 1),
    "program_hash with a newline": (lambda p: _rewrite(p, lambda d: d.update(program_hash=d["program_hash"] + "\n")),
                                    1),
    "env_hash removed": (lambda p: _rewrite(p, lambda d: d.pop("env_hash")), 1),
    "inputs_proof_class removed": (lambda p: _rewrite(p, lambda d: d.pop("inputs_proof_class")), 1),
    "inputs_hash removed": (lambda p: _rewrite(p, lambda d: d.pop("inputs_hash")), 1),
    "proof class forged": (lambda p: _rewrite(p, lambda d: d.update(inputs_proof_class="proven")), 1),
    "unknown top-level field": (lambda p: _rewrite(p, lambda d: d.update(signature="x")), 1),
    "unknown producer field": (lambda p: _rewrite(p, lambda d: d["producer"].update(host="h")), 1),
    "unknown subject field": (lambda p: _rewrite(p, lambda d: d["subject"].update(user="u")), 1),
    "model empty": (lambda p: _rewrite(p, lambda d: d["subject"].update(model="")), 1),
    "model a number": (lambda p: _rewrite(p, lambda d: d["subject"].update(model=7)), 1),
    "manifest_version 0.2": (lambda p: _rewrite(p, lambda d: d.update(manifest_version="0.2")), 1),
    "manifest_version a number": (lambda p: _rewrite(p, lambda d: d.update(manifest_version=0.1)), 1),
    "hash_scheme empty": (lambda p: _rewrite(p, lambda d: d.update(hash_scheme="")), 1),
    "producer removed": (lambda p: _rewrite(p, lambda d: d.pop("producer")), 1),
    "document an array": (_raw(b"[]"), 1),
    "truncated JSON": (lambda p: p.manifest.write_bytes(p.manifest.read_bytes()[:-3]), 2),
    "not UTF-8": (_raw(b'{"manifest_version": "\xff"}'), 2),
    "lone surrogate": (lambda p: p.manifest.write_text(p.manifest.read_text().replace('"orders"', '"\\ud800"')), 2),
    "NaN": (_raw(b'{"manifest_version": NaN}'), 2),
    "number out of range": (_raw(b'{"manifest_version": "0.1", "n": 1e999}'), 2),
    "128 levels deep": (_raw(b'{"x": ' + b"[" * 127 + b"]" * 127 + b"}"), 2),
    "100000 levels deep": (_raw(b"[" * 100_000 + b"]" * 100_000), 2),
    "empty file": (_raw(b""), 2),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_tampered_manifests_are_judged_alike(tmp_path: Path, tamper: str) -> None:
    produced = with_inputs_and_outputs(tmp_path)
    edit, expected = TAMPERS[tamper]
    edit(produced)
    assert same_verdict(produced.manifest, produced.artifacts) == expected


def test_127_levels_deep_is_readable_by_both(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(b'{"x": ' + b"[" * 126 + b"]" * 126 + b"}")  # 127 with the outer object: a schema failure
    assert same_verdict(path) == 1


# ---- where we deliberately differ: each asserted on both sides ----------------------------------------------------
def test_divergence_unknown_hash_scheme(tmp_path: Path) -> None:
    # The published schema accepts any non-empty hash_scheme; we cannot vouch for identities under a scheme we do
    # not know (docs/manifest.md, "Beyond the schema").
    produced = schema_only_no_inputs_no_outputs(tmp_path)
    _rewrite(produced, lambda d: d.update(hash_scheme="v2"))
    assert rocky_verify(produced.manifest)[0] == 0
    code, text = attest_verify(produced.manifest)
    assert code == 1 and "manifest_unsupported_hash_scheme" in text


def test_divergence_empty_produced_at(tmp_path: Path) -> None:
    produced = schema_only_no_inputs_no_outputs(tmp_path)
    _rewrite(produced, lambda d: d["subject"].update(produced_at=""))
    assert rocky_verify(produced.manifest)[0] == 0
    code, text = attest_verify(produced.manifest)
    assert code == 1 and "manifest_produced_at_empty" in text


def test_divergence_duplicate_keys(tmp_path: Path) -> None:
    # serde_json keeps the last value; two readers of such a document may see different manifests, so we refuse.
    produced = schema_only_no_inputs_no_outputs(tmp_path)
    text = produced.manifest.read_text(encoding="utf-8").rstrip().rstrip("}") + ', "env_hash": "' + "d" * 64 + '"}'
    produced.manifest.write_text(text, encoding="utf-8")
    assert rocky_verify(produced.manifest)[0] == 0
    code, out = attest_verify(produced.manifest)
    assert code == 2 and "duplicate key" in out


def test_divergence_partitioned_table_directory(tmp_path: Path) -> None:
    # Output paths with partition folders: we look under DIR at the recorded path first; the reference only at
    # the file name, so it finds nothing.
    table = tmp_path / "table"
    pairs = []
    for region in ("EU", "US"):
        folder = table / f"region={region}"
        folder.mkdir(parents=True)
        data = f"rows of {region}".encode()
        (folder / "part-0.parquet").write_bytes(data)
        pairs.append((f"region={region}/part-0.parquet", blake3.blake3(data).hexdigest()))
    manifest = _write(tmp_path, build_manifest(model="m", outputs=pairs, **_identities()))
    assert rocky_verify(manifest, table)[0] == 1
    assert attest_verify(manifest, table)[0] == 0


def test_divergence_symlink_out_of_the_directory(tmp_path: Path) -> None:
    produced = with_inputs_and_outputs(tmp_path)
    outside = tmp_path / "elsewhere"
    assert produced.artifacts is not None
    produced.artifacts.rename(outside)
    produced.artifacts.mkdir()
    for p in outside.iterdir():
        os.symlink(p, produced.artifacts / p.name)
    assert rocky_verify(produced.manifest, produced.artifacts)[0] == 0  # it follows the links
    code, text = attest_verify(produced.manifest, produced.artifacts)
    assert code == 1 and "artifact_outside_root" in text


def test_divergence_missing_artifacts_directory(tmp_path: Path) -> None:
    produced = with_inputs_and_outputs(tmp_path)
    absent = tmp_path / "no-such-dir"
    assert rocky_verify(produced.manifest, absent)[0] == 1  # every artifact "not found"
    code, text = attest_verify(produced.manifest, absent)
    assert code == 2 and "artifacts_dir_missing" in text  # a wrong argument: exit 2, with its own code
