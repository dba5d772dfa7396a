"""A differential fuzzer of a Delta rewrite's added Parquet file, with Spark and delta-rs as the oracles (round 35).

Each round copies an attested Delta table, replaces its files (``dataChange: false``) by one pyarrow file of the same
rows written with random options (row groups, page versions, codecs, encodings, statistics, the Arrow schema) and
then edited: its footer field by field, or (``pages``) one page header (``parquet_thrift.random_edit``). ``attest
verify --level bytes`` runs as a process (pyarrow may end a process: round 35's first finding). Wherever it says
VERIFIED, Spark (both Parquet readers) and delta-rs read the table and must read the attested rows; a reader that
refuses the table is counted apart (a ``VERIFIED`` table a reader cannot read, not other rows). Round 35's findings
came from it (tests/adversarial/test_footer_statistics_round35.py, test_parquet_annotations_round35.py,
test_page_statistics_round35.py, test_page_v2_nulls_round35.py); tests/adversarial/test_spark_oracle_fuzz.py runs a
bounded, seeded run of it in CI.

    python -m tests.adversarial.spark_oracle [--rounds N] [--minutes M] [--seed S] [--pages] [--dir D]
"""

from __future__ import annotations

import argparse
import decimal
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.adversarial.parquet_thrift import random_edit, with_footer, with_page_header

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

UTC = pa.timestamp("us", tz="UTC")


def rows(seed: int, n: int = 12) -> pa.Table:
    """``n`` rows of ten typical columns (nulls, empty strings and lists, a struct, a decimal), from ``seed``."""
    r = random.Random(seed)
    return pa.table({
        "i": pa.array([r.choice([None, r.randint(-99, 99)]) for _ in range(n)], pa.int32()),
        "l": pa.array([r.randint(-10**12, 10**12) for _ in range(n)], pa.int64()),
        "s": pa.array([r.choice([None, "", "ab", "Zz", "x" * 40, "é"]) for _ in range(n)], pa.string()),
        "d": pa.array([r.choice([0.0, 1.5, -2.25, None]) for _ in range(n)], pa.float64()),
        "ts": pa.array([1_700_000_000_000_000 + r.randint(0, 10**9) for _ in range(n)], UTC),
        "dt": pa.array([r.randint(0, 20000) for _ in range(n)], pa.int32()).cast(pa.date32()),
        "dec": pa.array([r.choice([None, decimal.Decimal("12.34"), decimal.Decimal("-0.05"), decimal.Decimal(0)])
                         for _ in range(n)], pa.decimal128(10, 2)),
        "b": pa.array([r.choice([True, False, None]) for _ in range(n)], pa.bool_()),
        "st": pa.array([{"a": r.randint(0, 9), "b": r.choice(["p", "q", None])} for _ in range(n)],
                       pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "li": pa.array([r.choice([None, [], [1, 2], [3]]) for _ in range(n)], pa.list_(pa.int64())),
    })


def write_options(rng: random.Random, table: pa.Table, *, pages: bool) -> dict[str, Any]:
    """pyarrow writer options at random (never BYTE_STREAM_SPLIT, which Spark's vectorized reader refuses: left
    open, docs/security.md); no page index when page headers are edited (their offsets would move)."""
    opts: dict[str, Any] = {
        "row_group_size": rng.choice([3, 5, 7, 12, 24, 1000]), "data_page_version": rng.choice(["1.0", "2.0"]),
        "compression": rng.choice(["snappy", "zstd", "none", "gzip"]), "write_statistics": rng.choice([True, False]),
        "write_page_index": False if pages else rng.choice([True, False]),
        "data_page_size": rng.choice([64, 1 << 20]), "version": rng.choice(["1.0", "2.4", "2.6"]),
        "store_schema": rng.choice([True, False]), "use_dictionary": rng.choice([True, False]),
    }
    if not opts["use_dictionary"] and rng.random() < 0.5:
        encodings = {f.name: rng.choice(["DELTA_BINARY_PACKED", "PLAIN"]) for f in table.schema
                     if pa.types.is_integer(f.type) and rng.random() < 0.5}
        encodings.update({f.name: rng.choice(["DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "PLAIN"])
                          for f in table.schema if pa.types.is_string(f.type) and rng.random() < 0.5})
        if encodings:
            opts["column_encoding"] = encodings
    return opts


def edited_file(rng: random.Random, table: pa.Table, *, pages: bool) -> tuple[bytes, list[str]]:
    """``table`` written with random options, then edited (one or two edits); the bytes and what was done."""
    opts = write_options(rng, table, pages=pages)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **opts)
    data = bytes(sink.getvalue().to_pybytes())
    done = [json.dumps(opts, sort_keys=True)]
    for _ in range(rng.choice([1, 1, 2])):
        try:
            if pages:
                meta = pq.ParquetFile(pa.BufferReader(data)).metadata
                chunk = rng.randrange(meta.num_row_groups * meta.num_columns)
                data = with_page_header(data, chunk, 0, lambda header: done.append(random_edit(rng, header)))
            else:
                data = with_footer(data, lambda meta: done.append(random_edit(rng, meta)))
        except Exception as exc:  # a file an earlier edit made that these helpers cannot take apart
            done.append(f"not edited ({type(exc).__name__})")
    return data, done


def _stats(table: pa.Table) -> str:
    from tests.adversarial.conftest import delta_stats

    return delta_stats(table)


def rewrite(path: Path, data: bytes, table: pa.Table) -> None:
    """A ``dataChange: false`` commit replacing every live file of ``path`` by one file holding ``data``."""
    from carriers.delta.log import commit_name
    from tests.adversarial.conftest import latest
    from tests.adversarial.test_content_rewrite_delta import _adds

    adds = _adds(path)
    rel = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    (path / rel).write_bytes(data)
    actions: list[dict[str, Any]] = [{"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {}}}]
    actions += [{"remove": {"path": p, "dataChange": False, "deletionTimestamp": 1, "extendedFileMetadata": True,
                            "partitionValues": a.get("partitionValues") or {}, "size": a["size"]}}
                for p, a in adds.items()]
    actions.append({"add": {"path": rel, "partitionValues": {}, "size": len(data), "modificationTime": 2,
                            "dataChange": False, "stats": _stats(table)}})
    (path / commit_name(latest(path) + 1)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_canonical(v) for v in value)
    if isinstance(value, float):
        return ("float", value.hex())
    return None if value is None else repr(value)


def spark_rows(spark: SparkSession, path: Path, vectorized: bool) -> Counter[Any]:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]  # a fresh snapshot
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", str(vectorized).lower())
    try:
        return Counter(_canonical(r.asDict(recursive=True)) for r in spark.read.format("delta").load(str(path))
                       .collect())
    finally:
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", "true")


def delta_rs_rows(path: Path) -> Counter[Any]:
    from deltalake import DeltaTable, QueryBuilder

    table = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all())
    return Counter(_canonical(r) for r in table.to_pylist())


@dataclass
class Run:
    """What a run found: each round's outcome counted; ``findings``: (what, edits) of every VERIFIED round whose
    rows a reader read otherwise, or that a reader refused, or whose verification ended otherwise than 0, 1 or 2."""

    counts: Counter[str] = field(default_factory=Counter)
    findings: list[tuple[str, list[str]]] = field(default_factory=list)

    def kinds(self, kind: str) -> list[tuple[str, list[str]]]:
        return [f for f in self.findings if f[0].startswith(kind)]


def attested_table(path: Path) -> pa.Table:
    """An attested Delta table of two delta-rs files at ``path``; its rows as stored."""
    from deltalake import write_deltalake

    from carriers.delta.carrier import attest_after_write
    from tests.adversarial.test_content_rewrite_delta import _adds

    write_deltalake(str(path), rows(1))
    write_deltalake(str(path), rows(2), mode="append")
    attest_after_write(str(path), model="m", program_hash="a" * 64)
    return pa.concat_tables([pq.read_table(path / p) for p in sorted(_adds(path))])


def run(spark: SparkSession, work: Path, *, rounds: int, seed: int, pages: bool = False,
        minutes: float | None = None, say: Any = None) -> Run:
    """``rounds`` rounds (or until ``minutes`` pass) against a table attested under ``work``."""
    base = work / "base"
    table = attested_table(base)
    want_spark = spark_rows(spark, base, True)
    want_rs = delta_rs_rows(base)
    rng, out, start = random.Random(seed), Run(), time.monotonic()
    for k in range(rounds):
        if minutes is not None and time.monotonic() - start > minutes * 60:
            break
        path = work / f"r{k}"
        shutil.copytree(base, path)
        data, edits = edited_file(rng, table, pages=pages)
        rewrite(path, data, table)
        done = subprocess.run([sys.executable, "-m", "attest.cli", "verify", str(path), "--level", "bytes", "--json"],
                              capture_output=True, text=True, timeout=600)
        if done.returncode not in (0, 1, 2):
            out.counts["ended"] += 1
            out.findings.append((f"ended: exit {done.returncode} {done.stderr[-300:]}", edits))
        elif done.returncode != 0:
            out.counts["refused"] += 1
        else:
            out.counts["verified"] += 1
            for reader, read in (("Spark", lambda p: spark_rows(spark, p, True)),
                                 ("Spark (not vectorized)", lambda p: spark_rows(spark, p, False)),
                                 ("delta-rs", delta_rs_rows)):
                want = want_rs if reader == "delta-rs" else want_spark
                try:
                    if read(path) != want:
                        out.findings.append((f"rows: {reader} read other rows", edits))
                except Exception as exc:
                    out.findings.append((f"refused: {reader}: {str(exc).splitlines()[0][:200]}", edits))
        shutil.rmtree(path, ignore_errors=True)
        if say is not None and k % 20 == 0:
            say(f"[{k}] {dict(out.counts)}, {len(out.findings)} findings, {time.monotonic() - start:.0f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pages", action="store_true", help="edit a page header instead of the footer")
    parser.add_argument("--dir", help="where the tables are made (default: the system temp folder)")
    args = parser.parse_args(argv)
    from carriers.spark.session import local_session

    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        spark = local_session(Path(scratch) / "warehouse", app_name="spark-oracle")
        found = run(spark, Path(scratch), rounds=args.rounds, seed=args.seed, pages=args.pages,
                    minutes=args.minutes, say=lambda line: print(line, flush=True))
    for what, edits in found.findings:
        print(f"FINDING {what}\n  {edits}", flush=True)
    print(f"done: {dict(found.counts)}, {len(found.findings)} findings")
    return 1 if found.kinds("rows") or found.kinds("ended") else 0


if __name__ == "__main__":
    sys.exit(main())
