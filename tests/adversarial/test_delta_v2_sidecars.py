"""V2 checkpoint sidecars (``_delta_log/_sidecars/``), read three ways (redteam9d; delta-spark 4.4, delta-rs 1.6):

- ``_last_checkpoint`` repeats a v2 checkpoint's sidecar list (``v2Checkpoint.sidecarFiles``), and Spark takes the
  sidecars from there, not from the checkpoint: a hint naming a planted sidecar holding one file fewer (its checksum
  dropped) had Spark read a row fewer while delta-rs and the replay read the checkpoint's sidecars — VERIFIED at bytes
  level. A hint whose sidecars are not the checkpoint's is now ``table_inconsistent``.
- the checkpoint names each sidecar by a URI-encoded path: delta-rs decodes it, Spark and the log replay do not
  (measured: ``%30...`` read by delta-rs from the file ``0...``). A planted sidecar under the decoded name, holding
  other modification times, was what delta-rs read while the view bound the literal file's: VERIFIED. A sidecar path
  that is not a plain file name is now ``table_inconsistent``.

The non-Spark tables are made by hand, as a forger with storage access makes one: delta-rs data, the ``v2Checkpoint``
reader feature, the carrier's attestation commit, then a v2 checkpoint of the attestation version (a JSON top-level
file, one Parquet sidecar holding the adds)."""

from __future__ import annotations

import io
import json
import shutil
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from tests.adversarial.conftest import PROGRAM, codes, latest, log_state, rows, verify, write_commit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_ADD = pa.struct([("path", pa.string()), ("partitionValues", pa.map_(pa.string(), pa.string())),
                  ("size", pa.int64()), ("modificationTime", pa.int64()), ("dataChange", pa.bool_()),
                  ("stats", pa.string())])
FORGED_TIME = 86_400_000  # 1970-01-02


def _sidecar(adds: list[dict[str, Any]], time: int | None, where: Path) -> int:
    """A sidecar Parquet file of ``adds`` (their modification times replaced by ``time`` when given), written so that
    two sidecars differing only in those times have one size (the action's sizeInBytes is what engines trust)."""
    rows_ = [{"add": {"path": a["path"], "partitionValues": list((a.get("partitionValues") or {}).items()),
                      "size": a["size"], "modificationTime": a["modificationTime"] if time is None else time,
                      "dataChange": False, "stats": a.get("stats")}} for a in adds]
    pq.write_table(pa.Table.from_pylist(rows_, schema=pa.schema([("add", _ADD)])), where, compression="none",
                   use_dictionary=False)
    return where.stat().st_size


def v2_table(tmp_path: Path) -> Path:
    """An attested table whose latest version (the attestation commit) has a v2 checkpoint with one sidecar."""
    path = tmp_path / "t"
    write_deltalake(str(path), rows(), partition_by=["p"])
    write_commit(path, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
                                      "writerFeatures": ["v2Checkpoint"]}}])
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["record", str(path), "--model", "orders", "--program-hash", PROGRAM]) == 0, out.getvalue()
    version, state = latest(path), log_state(path)
    name = f"{version:020d}.checkpoint.0000000001.0000000001.{uuid.uuid4()}.parquet"
    (path / "_delta_log" / "_sidecars").mkdir()
    size = _sidecar(sorted(state.adds.values(), key=lambda a: str(a["path"])), None,
                    path / "_delta_log" / "_sidecars" / name)
    actions = [{"checkpointMetadata": {"version": version}}, {"protocol": state.protocol},
               {"metaData": state.metadata}, {"sidecar": {"path": name, "sizeInBytes": size, "modificationTime": 1}}]
    (path / "_delta_log" / f"{version:020d}.checkpoint.{uuid.uuid4()}.json").write_text(
        "".join(json.dumps(a) + "\n" for a in actions))
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc
    return path


def respell(path: Path, spelling: str, *, plant_decoded: bool) -> None:
    """The checkpoint's sidecar renamed to ``spelling`` (the file moved there); with ``plant_decoded``, a second
    sidecar of the same size and files, holding other modification times, under the name engines decode it to."""
    log = path / "_delta_log"
    top = next(log.glob("*.checkpoint.*.json"))
    actions = [json.loads(line) for line in top.read_text().splitlines()]
    for action in actions:
        if "sidecar" in action:
            honest = log / "_sidecars" / action["sidecar"]["path"]
            adds = sorted(log_state(path).adds.values(), key=lambda a: str(a["path"]))
            if plant_decoded:
                shutil.copy(honest, log / "_sidecars" / spelling)
                assert _sidecar(adds, FORGED_TIME, honest) == action["sidecar"]["sizeInBytes"]
            else:
                honest.rename(log / "_sidecars" / spelling)
            action["sidecar"]["path"] = spelling
    top.write_text("".join(json.dumps(a) + "\n" for a in actions))


def test_an_honest_v2_checkpoint_with_a_sidecar_verifies_and_delta_rs_reads_it(tmp_path: Path) -> None:
    path = v2_table(tmp_path)
    times = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).column("modification_time").to_pylist()
    assert FORGED_TIME not in times and len(times) == 2


def test_a_sidecar_named_in_an_encoded_spelling_over_a_planted_decoded_one_gets_no_verdict(tmp_path: Path) -> None:
    path = v2_table(tmp_path)
    name = next((path / "_delta_log" / "_sidecars").iterdir()).name
    respell(path, "%3" + name[0] + name[1:], plant_decoded=True)
    # delta-rs reads the planted times (measured), which the view never saw: VERIFIED before.
    times = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).column("modification_time").to_pylist()
    assert times == [FORGED_TIME, FORGED_TIME]
    rc, doc = verify(str(path))
    assert rc != 0 and "table_inconsistent" in codes(doc), doc


@pytest.mark.parametrize("spelling", ["%41.parquet", "./a.parquet", "sub/a.parquet", "a b.parquet", "a+b.parquet",
                                      "a?b.parquet", "a#b.parquet", "..", "file:a.parquet", "/a.parquet"])
def test_a_sidecar_path_that_is_not_a_plain_name_gets_no_verdict(tmp_path: Path, spelling: str) -> None:
    path = v2_table(tmp_path)
    if "/" in spelling and not spelling.startswith("/"):
        (path / "_delta_log" / "_sidecars" / spelling.rsplit("/", 1)[0]).mkdir(exist_ok=True)
    if spelling in ("..", "/a.parquet"):  # no file of that name can be put there: only the action names it
        log = path / "_delta_log"
        top = next(log.glob("*.checkpoint.*.json"))
        top.write_text(top.read_text().replace(next((log / "_sidecars").iterdir()).name, spelling))
    else:
        respell(path, spelling, plant_decoded=False)
    rc, doc = verify(str(path))
    # delta-rs fails to open some of these (the decoded name is missing: table_unreadable); never a verdict.
    assert rc != 0 and {"table_inconsistent", "table_unreadable"} & set(codes(doc)), doc


def write_hint(path: Path, sidecars: list[dict[str, Any]] | None = None, top: str | None = None) -> None:
    """``_last_checkpoint`` for the v2 checkpoint, as Spark writes one (without its checksum, which Spark then does not
    check): its sidecars are the checkpoint's unless ``sidecars`` is given."""
    log = path / "_delta_log"
    checkpoint = next(log.glob("*.checkpoint.*.json"))
    actions = [json.loads(line) for line in checkpoint.read_text().splitlines()]
    held = [a["sidecar"] for a in actions if "sidecar" in a]
    hint = {"version": latest(path), "size": 4, "v2Checkpoint": {
        "path": top or checkpoint.name, "sizeInBytes": checkpoint.stat().st_size, "modificationTime": 1,
        "nonFileActions": [a for a in actions if "sidecar" not in a],
        "sidecarFiles": held if sidecars is None else sidecars}}
    (log / "_last_checkpoint").write_text(json.dumps(hint))


def test_a_hint_repeating_the_checkpoints_sidecars_verifies(tmp_path: Path) -> None:
    path = v2_table(tmp_path)
    write_hint(path)
    rc, doc = verify(str(path))
    assert rc == 0 and doc["level"] == "bytes", doc
    write_hint(path, sidecars=[], top="00000000000000000002.checkpoint.00000000-0000-0000-0000-000000000000.json")
    rc, doc = verify(str(path))  # a hint naming a checkpoint the log does not hold: Spark lists the log instead
    assert rc == 0 and doc["level"] == "bytes", doc


def test_a_hint_naming_a_planted_sidecar_gets_no_verdict(tmp_path: Path) -> None:
    path = v2_table(tmp_path)
    sidecars = path / "_delta_log" / "_sidecars"
    adds = sorted(log_state(path).adds.values(), key=lambda a: str(a["path"]))
    size = _sidecar(adds[1:], None, sidecars / "planted.parquet")  # one file fewer
    write_hint(path, sidecars=[{"path": "planted.parquet", "sizeInBytes": size, "modificationTime": 1}])
    rc, doc = verify(str(path))  # VERIFIED before: nothing read the hint
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    out = io.StringIO()
    with redirect_stdout(out):  # nor is it attested again
        assert main(["record", str(path), "--model", "orders", "--program-hash", PROGRAM]) != 0


@pytest.mark.parametrize("said", [None, "not a list", [{"path": 1}], [None]])
def test_a_hint_whose_sidecars_are_not_a_list_of_files_gets_no_verdict(tmp_path: Path, said: Any) -> None:
    path = v2_table(tmp_path)
    write_hint(path)
    hint = json.loads((path / "_delta_log" / "_last_checkpoint").read_text())
    if said is None:  # no sidecar list: Spark reads the checkpoint's, as the replay does
        del hint["v2Checkpoint"]["sidecarFiles"]
    else:
        hint["v2Checkpoint"]["sidecarFiles"] = said
    (path / "_delta_log" / "_last_checkpoint").write_text(json.dumps(hint))
    rc, doc = verify(str(path))
    assert (rc == 0) == (said is None), doc


@pytest.mark.spark
def test_spark_reads_the_sidecars_the_hint_names(spark: SparkSession, tmp_path: Path) -> None:
    """What made the hint a false VERIFIED: Spark read the planted sidecar the hint names, a row fewer."""
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, s STRING) USING delta "
              "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')")
    for values in ("(1, 'a'), (2, 'b')", "(3, 'c')"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES {values}")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["record", str(path), "--model", "m", "--program-hash", PROGRAM]) == 0, out.getvalue()
    assert verify(str(path))[0] == 0
    forged = shutil.copytree(path, tmp_path / "forged")  # a copy: Spark keeps the snapshot of a path it read
    for crc in forged.rglob(".*.crc"):  # Hadoop's checksums of the files, which a forger rewrites or drops
        crc.unlink()
    log = forged / "_delta_log"
    hint = json.loads((log / "_last_checkpoint").read_text())
    sidecar = hint["v2Checkpoint"]["sidecarFiles"][0]
    pq.write_table(pq.read_table(log / "_sidecars" / sidecar["path"]).slice(1), log / "_sidecars" / "planted.parquet")
    sidecar.update(path="planted.parquet", sizeInBytes=(log / "_sidecars" / "planted.parquet").stat().st_size)
    hint.pop("checksum")
    (log / "_last_checkpoint").write_text(json.dumps(hint))
    assert spark.read.format("delta").load(str(forged)).count() == 2  # of 3
    rc, doc = verify(str(forged))
    assert rc != 0 and "table_inconsistent" in codes(doc), doc


@pytest.mark.parametrize("change", ["longer", "recorded larger"])
def test_a_sidecar_whose_length_is_not_its_recorded_size_gets_no_verdict(tmp_path: Path, change: str) -> None:
    """delta-rs reads a sidecar's footer at the checkpoint's ``sizeInBytes``, the replay at the file's end: bytes after
    the recorded size (a second Parquet file's footer) would be read by one and not the other."""
    path = v2_table(tmp_path)
    log = path / "_delta_log"
    sidecar = next((log / "_sidecars").iterdir())
    if change == "longer":
        sidecar.write_bytes(sidecar.read_bytes() + sidecar.read_bytes())  # a second copy after the recorded size
    else:
        top = next(log.glob("*.checkpoint.*.json"))
        size = sidecar.stat().st_size
        top.write_text(top.read_text().replace(f'"sizeInBytes": {size}', f'"sizeInBytes": {size + 1}'))
    rc, doc = verify(str(path))
    if change == "recorded larger":  # delta-rs reads past the end and fails first: no verdict either way
        assert rc != 0 and {"table_inconsistent", "table_unreadable"} & set(codes(doc)), doc
        return
    assert rc != 0 and "table_inconsistent" in codes(doc), doc
    assert "recorded size" in json.dumps(doc), doc
