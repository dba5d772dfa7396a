"""Sequences of maintenance, data changes, re-attestations and dishonest rewrites on real tables (issue 32).

Each maintenance command has its own test (tests/delta/test_delta_maintenance.py, tests/iceberg/, tests/spark/); this
file checks what happens when they follow one another in any order. A seeded random walk drives a real table through
the engines' own commands — delta-rs 1.6 (``optimize.compact``, ``optimize.z_order``, ``vacuum`` at retention 0,
``create_checkpoint`` + ``cleanup_metadata`` under a short ``delta.logRetentionDuration``, append / delete / update /
overwrite, a deletion vector as Spark commits it) and pyiceberg 0.12 on a sqlite catalog (append, delete, overwrite,
``table.maintenance.expire_snapshots()``, an honest ``replace`` rewrite) — interleaved with ``attest record`` and a
dishonest rewrite (a ``dataChange: false`` commit / a ``replace`` snapshot whose new file changes a row, made as in
tests/adversarial/test_content_rewrite_*.py). After every step ``attest verify T --json`` (the CLI's ``main``, bytes
level) must agree with a model of the table's history:

* only maintenance that keeps the rows since the last attestation: exit 0, VERIFIED, and the program in force
  (``attest show``) is the one the last *data* attestation recorded — a carry-forward keeps the producer's;
* a data change since: never VERIFIED, ``stale``;
* a dishonest rewrite since (and no data change): never VERIFIED, ``content_changed`` — and ``attest record``
  refuses to carry it forward (exit 2, ``content_changed``) until a data change is attested;
* the attestation is never lost (never unattested, never ``sidecar_missing``), and no command raises. Iceberg
  expiry that removes every snapshot between the current one and the attestation leaves the snapshot carrying it
  (the retention tag ``recipe-attest`` keeps it): the current rows are judged against the attested content digest
  (VERIFIED ``content; history since snapshot S expired``, or ``stale``), and ``attest record`` then carries the
  attestation forward (a rewrite) or attests a data change. Unattested with a note only without the tag. Log
  cleanup after a rewrite (``stale``, saying so) and a re-record with nothing new (``evidence_dropped``) are the
  other documented answers the model admits (docs/maintenance.md, "Sequences").

The walks are deterministic (``random.Random(seed)``); a failure names the test's seed and the steps so far, which
is the regression test to write. ``ATTEST_SEQUENCE_SEEDS`` / ``ATTEST_SEQUENCE_STEPS`` widen the run
(docs/maintenance.md, "Sequences").
"""

from __future__ import annotations

import io
import json
import os
import random
import time
import uuid
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.cli import main
from tests.delta.dv import add_deletion_vector
from tests.iceberg.conftest import CATALOG, catalog_properties, iceberg_env  # noqa: F401

pytestmark = pytest.mark.slow

SEEDS = int(os.environ.get("ATTEST_SEQUENCE_SEEDS", "6"))
STEPS = int(os.environ.get("ATTEST_SEQUENCE_STEPS", "24"))


def cli(*args: str) -> tuple[int, Any]:
    """``attest ARGS --json`` in-process: (exit code, the JSON it printed). A raised exception fails the walk (a raw
    traceback is never an answer)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([*args, "--json"])
    text = out.getvalue()
    try:
        return rc, json.loads(text)
    except json.JSONDecodeError:
        raise AssertionError(f"attest {' '.join(args)}: exit {rc}, not JSON: {text!r} {err.getvalue()!r}") from None


def codes(doc: dict[str, Any]) -> list[str]:
    return [e["code"] for e in doc.get("errors", [])]


@dataclass
class Model:
    """What the table's history since its last attestation says the verdict must be."""

    program: str = ""  # the program the attestation in force must name
    dirty: bool = False  # a data change since the last attestation
    forged: bool = False  # a dishonest rewrite since the last attestation (and no attestation of a data change)
    rewritten: bool = False  # honest rewrites since the last attestation
    cleaned: bool = False  # log cleanup (Delta) / snapshot expiry (Iceberg) since the last attestation
    steps: list[str] = field(default_factory=list)

    def attested(self, program: str) -> None:
        self.program, self.dirty, self.forged, self.rewritten, self.cleaned = program, False, False, False, False

    def where(self) -> str:
        return f"steps: {self.steps}; model: dirty={self.dirty} forged={self.forged} rewritten={self.rewritten} " \
               f"cleaned={self.cleaned} program={self.program[:8]}"


def check(target: str, model: Model, *, lost: bool = False, empty: Callable[[], bool] = lambda: False,
          cut: bool = False) -> None:
    """The invariants, after every step. ``lost``: Iceberg, expiry removed every snapshot between the current one and
    the last attestation's (the attested snapshot and the follow-up carrying it), and no retention tag kept the
    follow-up: documented as unattested with a note (docs/maintenance.md). ``cut``: the same expiry with the tag:
    the rows are judged by content against the tagged attestation. ``empty()``: the table holds no data file (an
    attestation listing no output verifies at schema level, there are no bytes to check); asked only where a
    VERIFIED answer's level is checked (it opens the table)."""
    rc, doc = cli("verify", target)
    found = codes(doc)
    why = f"{model.where()} lost={lost}\nverify: exit {rc}, {doc.get('verdict')}, {doc.get('errors')}"
    if lost:
        assert rc == 1 and found == ["unattested"], why
        assert any("ends at expired snapshot" in n or "older snapshots have expired" in n for n in doc["notes"]), \
            f"{why}\n{doc['notes']}"
        return
    assert doc.get("attested") is True, why  # never lost to cleanup
    assert "sidecar_missing" not in found and "unattested" not in found, why
    if model.dirty:
        assert rc == 1 and not doc["passed"], why
        assert "stale" in found or (model.forged and "content_changed" in found), why
        return
    if model.forged:
        assert rc == 1 and not doc["passed"], why
        assert "content_changed" in found or (model.cleaned and "stale" in found), why
        return
    if model.rewritten and model.cleaned and rc != 0:
        # Documented (docs/maintenance.md): log cleanup removed the rewrite's commit, so the log cannot tell it from
        # a data change. Never VERIFIED by accident: stale, saying so.
        assert found == ["stale"] and "log cleanup" in " ".join(e["message"] for e in doc["errors"]), why
        return
    assert rc == 0 and doc["passed"] and doc["verdict"].startswith("VERIFIED"), why
    assert doc["level"] == ("schema" if empty() else "bytes") and not found, why
    if cut:
        # The history since the attestation expired: the whole version's rows were read, the verdict says so.
        assert doc["verdict"].startswith("VERIFIED (content; history since snapshot "), why
        assert any("recipe-attest" in n and "has expired" in n for n in doc["notes"]), f"{why}\n{doc['notes']}"
    else:
        # Rewrites since the attestation are checked by content (their rows read); a carry-forward or nothing, not.
        assert doc["verdict"].startswith("VERIFIED (content; compacted at ") == model.rewritten, why
    rc, shown = cli("show", target)
    assert rc == 0 and shown.get("program_hash") == model.program, f"{why}\nshow: {shown}"


# ---- Delta (delta-rs) ----------------------------------------------------------------------------------------------
class DeltaWalk:
    def __init__(self, path: Path, rng: random.Random) -> None:
        self.path, self.rng, self.model = path, rng, Model()
        self.next_v = 0

    @property
    def where(self) -> str:
        return str(self.path)

    def rows(self, n: int) -> pa.Table:
        vs = list(range(self.next_v, self.next_v + n))
        self.next_v += n
        return pa.table({"p": [self.rng.choice("abc") for _ in vs], "v": pa.array(vs, pa.int64()),
                         "w": [f"w{v}" for v in vs]})

    def table(self) -> DeltaTable:
        return DeltaTable(self.where)

    def version(self) -> int:
        return int(self.table().version())

    def values(self) -> list[int]:
        from deltalake import QueryBuilder  # reads deletion vectors (to_pyarrow_table refuses them)

        got = pa.table(QueryBuilder().register("t", self.table()).execute("select v from t").read_all())
        return sorted(got.column("v").to_pylist())

    def start(self) -> None:
        cfg = {"delta.enableDeletionVectors": "true", "delta.logRetentionDuration": "interval 0 seconds",
               "delta.checkpointInterval": "1000"}
        for i in range(self.rng.randint(2, 4)):
            write_deltalake(self.where, self.rows(self.rng.randint(2, 5)), mode="append", partition_by=["p"],
                            configuration=cfg if i == 0 else None)
        if self.rng.random() < 0.5:
            self.dv()
            self.model.steps.append("dv")
        self.record()

    # -- data changes
    def append(self) -> None:
        write_deltalake(self.where, self.rows(self.rng.randint(1, 4)), mode="append", partition_by=["p"])
        self.model.dirty = True

    def delete(self) -> None:
        values = self.values()
        if not values:
            return self.append()
        self.table().delete(f"v = {self.rng.choice(values)}")
        self.model.dirty = True
        return None

    def update(self) -> None:
        values = self.values()
        if not values:
            return self.append()
        self.table().update(updates={"w": "'updated'"}, predicate=f"v = {self.rng.choice(values)}")
        self.model.dirty = True
        return None

    def overwrite(self) -> None:
        write_deltalake(self.where, self.rows(self.rng.randint(1, 4)), mode="overwrite", partition_by=["p"])
        self.model.dirty = True

    def adds(self) -> list[dict[str, Any]]:
        """The live add actions (the log as the carrier replays it: deletion vectors included), in delta-rs' order."""
        from tests.adversarial.conftest import log_state

        live = dict(log_state(self.path).adds)
        out = []
        for a in pa.table(self.table().get_add_actions()).to_pylist():
            out.append({**a, "deletionVector": live[a["path"]].get("deletionVector")})
        return out

    def dv(self) -> None:
        """A deletion vector as Spark's DELETE commits it (delta-rs 1.6 writes none: its DELETE rewrites files), on
        delta-rs' first live file (tests/delta/dv.py)."""
        adds = self.adds()
        if not adds or adds[0]["deletionVector"] or adds[0]["num_records"] < 2:
            return self.append()
        add_deletion_vector(self.path, [self.rng.randrange(adds[0]["num_records"])])
        self.model.dirty = True
        return None

    # -- maintenance
    def compact(self) -> None:
        before = self.version()
        self.table().optimize.compact()
        if self.version() != before:
            self.model.rewritten = True

    def z_order(self) -> None:
        before = self.version()
        self.table().optimize.z_order(["v"])
        if self.version() != before:
            self.model.rewritten = True

    def vacuum(self) -> None:
        self.table().vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)

    def checkpoint(self) -> None:
        """Measured: under a short ``delta.logRetentionDuration`` delta-rs' next commit removes the commits before
        the checkpoint (expired-log cleanup after a commit): a checkpoint is log cleanup."""
        self.table().create_checkpoint()
        self.model.cleaned = True

    def cleanup(self) -> None:
        self.table().create_checkpoint()
        old = time.time() - 40 * 86400
        for commit in (self.path / "_delta_log").glob("*.json"):
            os.utime(commit, (old, old))
        self.table().cleanup_metadata()
        self.model.cleaned = True

    # -- attestation
    def record(self) -> None:
        program = uuid.uuid4().hex * 2
        rc, doc = cli("record", self.where, "--model", "orders", "--program-hash", program)
        m = self.model
        why = f"{m.where()}\nrecord: exit {rc}, {doc}"
        if self.lost():  # nothing in force: an attestation of its own
            assert rc == 0 and doc["manifest"]["program_hash"] == program, why
            m.attested(program)
            self.attested(doc)
            return
        if m.forged and not m.dirty and (rc != 0 or not m.cleaned):
            # Never carried forward, never re-attested under another program: the rewrite changed the rows. Once log
            # cleanup removed the rewrite's commit the log no longer tells a rewrite from a data change: an
            # attestation of its own (the program given) is then written.
            assert rc == 2 and codes(doc) == ["content_changed"], why
            return
        if not (m.dirty or m.forged or m.rewritten or m.cleaned) and rc == 1:
            # Nothing changed since the last attestation: re-attesting the same version under another program would
            # drop the inputs it recorded (a carry-forward keeps the producer's): refused, unless --replace.
            assert codes(doc) == ["evidence_dropped"], why
            return
        assert rc == 0 and doc.get("recorded") is True, why
        carried = "continues" in json.dumps(doc) or doc["manifest"]["program_hash"] != program
        if m.rewritten and not m.dirty and not m.forged and (not m.cleaned or self.cut()):
            assert doc["manifest"]["program_hash"] == m.program, why  # a carry-forward keeps the producer's
        elif m.dirty or m.forged:
            assert doc["manifest"]["program_hash"] == program, why
        m.attested(doc["manifest"]["program_hash"] if carried else program)
        self.attested(doc)

    def lost(self) -> bool:
        return False

    def cut(self) -> bool:
        return False

    def empty(self) -> bool:
        return not self.adds()

    def attested(self, doc: dict[str, Any]) -> None:
        """After a record: a checkpoint newer than the attested version (record attests the data version under
        VACUUM's commits, say) means the next delta-rs commit removes the commits after the attested version."""
        last = self.path / "_delta_log" / "_last_checkpoint"
        if last.exists() and json.loads(last.read_text())["version"] > int(doc["attested_version"]):
            self.model.cleaned = True

    # -- the attack
    def forge(self) -> None:
        """A ``dataChange: false`` commit (OPTIMIZE's shape) whose new file changes one value of a partition's rows."""
        from tests.adversarial.test_content_rewrite_delta import rewrite

        clean = [a for a in self.adds() if not a["deletionVector"] and a["num_records"] > 0]
        if not clean:
            return self.append()
        victim = self.rng.choice(clean)
        rows = pq.read_table(self.path / victim["path"], columns=["v", "w"])
        v = rows.column("v").to_pylist()
        v[0] += 1_000_000
        rows = rows.set_column(0, "v", pa.array(v, pa.int64()))
        rewrite(self.path, [victim["path"]], [(rows, {"p": victim["partition"]["p"]})])
        self.model.forged = True
        return None

    ACTIONS: ClassVar[dict[str, int]] = {"append": 3, "delete": 2, "update": 2, "overwrite": 1, "dv": 1,
                                         "compact": 4, "z_order": 3, "vacuum": 3, "checkpoint": 2, "cleanup": 2,
                                         "record": 4, "forge": 2}


# ---- Iceberg (pyiceberg on a sqlite catalog) -----------------------------------------------------------------------
class IcebergWalk:
    def __init__(self, catalog: Any, rng: random.Random) -> None:
        self.catalog, self.rng, self.model = catalog, rng, Model()
        self.next_id = 0
        self.table = catalog.create_table("ns.t", schema=self.rows(0).schema)

    where = "iceberg://attesttest/ns.t"

    def rows(self, n: int) -> pa.Table:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"row-{i}" for i in ids], pa.string())})

    def reload(self) -> Any:
        self.table = self.catalog.load_table("ns.t")
        return self.table

    def ids(self) -> list[int]:
        return sorted(self.reload().scan().to_arrow().column("id").to_pylist())

    def start(self) -> None:
        for _ in range(self.rng.randint(2, 4)):
            self.reload().append(self.rows(self.rng.randint(1, 4)))
        self.record()

    # -- data changes
    def append(self) -> None:
        self.reload().append(self.rows(self.rng.randint(1, 4)))
        self.model.dirty = True

    def delete(self) -> None:
        from pyiceberg.expressions import EqualTo

        ids = self.ids()
        if len(ids) < 2:
            return self.append()
        self.reload().delete(EqualTo("id", self.rng.choice(ids)))
        self.model.dirty = True
        return None

    def overwrite(self) -> None:
        self.reload().overwrite(self.rows(self.rng.randint(1, 4)))
        self.model.dirty = True

    # -- maintenance
    def rewrite(self) -> None:
        """An honest ``replace`` of every live data file by one holding the rows pyiceberg reads (what
        rewrite_data_files commits; pyiceberg 0.12 has no rewrite API: tests/iceberg/rewrites.py)."""
        from tests.iceberg.rewrites import replace

        if not self.ids():
            return None
        self.table = replace(self.catalog, self.reload())
        self.model.rewritten = True
        return None

    def expire_all(self) -> None:
        """``table.maintenance.expire_snapshots().older_than(now)``: every snapshot but the current one."""
        from datetime import UTC, datetime, timedelta

        self.reload().maintenance.expire_snapshots().older_than(datetime.now(UTC) + timedelta(seconds=1)).commit()
        self.model.cleaned = True

    def expire_one(self) -> None:
        """``expire_snapshots().by_id(S)``, S any snapshot but the current one."""
        table = self.reload()
        current = table.current_snapshot()
        # pyiceberg refuses to expire a snapshot a ref names (the retention tag's: the last attestation's carrier).
        protected = {ref.snapshot_id for ref in table.metadata.refs.values()}
        others = [s.snapshot_id for s in table.snapshots() if s.snapshot_id not in protected
                  and (current is None or s.snapshot_id != current.snapshot_id)]
        if not others:
            return None
        table.maintenance.expire_snapshots().by_id(self.rng.choice(others)).commit()
        self.model.cleaned = True
        return None

    # -- attestation
    record = DeltaWalk.record
    carriers: set[int]

    def attested(self, doc: dict[str, Any]) -> None:
        """After a record: the attested snapshot and the follow-up carrying it."""
        current = self.reload().current_snapshot()
        assert current is not None
        self.carriers = {int(doc["attested_version"]), current.snapshot_id}

    def empty(self) -> bool:
        from tests.iceberg.rewrites import live_data_files

        return self.reload().current_snapshot() is None or not live_data_files(self.table)

    def lost(self) -> bool:
        """Is the last attestation lost: out of the current snapshot's reach (``cut``) and its carrier not kept by the
        retention tag?"""
        from carriers.iceberg.carriage import RETAIN_TAG

        ref = self.reload().metadata.refs.get(RETAIN_TAG)
        return self.cut() and (ref is None or ref.snapshot_id not in getattr(self, "carriers", ()))

    def cut(self) -> bool:
        """Is the last attestation out of the current snapshot's reach: its ancestry ends (at an expired snapshot;
        pyiceberg's expiry sets the parent of a snapshot it keeps to none) before the attested snapshot or its
        follow-up?"""
        table = self.reload()
        snapshot = table.current_snapshot()
        while snapshot is not None:
            if snapshot.snapshot_id in getattr(self, "carriers", ()):
                return False
            if snapshot.parent_snapshot_id is None:  # pyiceberg's expiry clears the parent of what it keeps
                return True
            snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id)
        return True

    # -- the attack
    def forge(self) -> None:
        """A ``replace`` snapshot whose new file changes one row's value (tests/adversarial/test_content_rewrite_
        iceberg.py)."""
        from tests.iceberg.rewrites import replace, with_ids

        data = self.reload().scan().to_arrow()
        if data.num_rows == 0:
            return self.append()
        values = data.column("v").to_pylist()
        values[self.rng.randrange(len(values))] = f"forged-{self.rng.getrandbits(64)}"  # never the value it had
        data = data.set_column(1, "v", pa.array(values, pa.string()))
        self.table = replace(self.catalog, self.table, [with_ids(data, [1, 2])])
        self.model.forged = True
        return None

    ACTIONS: ClassVar[dict[str, int]] = {"append": 3, "delete": 2, "overwrite": 1, "rewrite": 4, "expire_all": 2,
                                         "expire_one": 2, "record": 4, "forge": 2}


def walk(w: Any, steps: int) -> None:
    w.start()
    check(w.where, w.model, lost=w.lost(), empty=w.empty, cut=w.cut())
    names = list(w.ACTIONS)
    weights = [w.ACTIONS[n] for n in names]
    for _ in range(steps):
        name = w.rng.choices(names, weights)[0]
        w.model.steps.append(name)
        getattr(w, name)()
        check(w.where, w.model, lost=w.lost(), empty=w.empty, cut=w.cut())


@pytest.mark.parametrize("seed", range(SEEDS))
def test_delta_maintenance_sequences(tmp_path: Path, seed: int) -> None:
    walk(DeltaWalk(tmp_path / "t", random.Random(seed)), STEPS)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_iceberg_maintenance_sequences(tmp_path: Path, iceberg_env: str, seed: int) -> None:  # noqa: F811
    from pyiceberg.catalog.sql import SqlCatalog

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(CATALOG, **catalog_properties(tmp_path))
    catalog.create_namespace("ns")
    walk(IcebergWalk(catalog, random.Random(seed)), STEPS)
