"""A bounded, seeded run of the Spark-oracle fuzzer of a rewrite's Parquet file (tests/adversarial/spark_oracle.py).

Footers edited field by field and page headers edited, each round's rewrite verified as a process: no verification
may end otherwise than with a verdict (pyarrow ended the process on round 35's first finding), and no ``VERIFIED``
rewrite may be read by Spark (either Parquet reader) or delta-rs as other rows than the attested ones. A reader that
refuses a ``VERIFIED`` table is counted and printed, not failed (a table a reader cannot read, not other rows: Spark's
refusals were held where measured, the rest is left open in docs/security.md). ``ATTEST_SPARK_ORACLE_ROUNDS`` sets
the rounds of each kind (default 16: about a minute on 2 cores), ``ATTEST_FUZZ_SEED`` the seed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.adversarial.spark_oracle import run

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROUNDS = int(os.environ.get("ATTEST_SPARK_ORACLE_ROUNDS", "16"))
SEED = int(os.environ.get("ATTEST_FUZZ_SEED", "0"))


@pytest.mark.parametrize("pages", [False, True], ids=["footers", "page headers"])
def test_no_verified_rewrite_is_read_otherwise(spark: SparkSession, tmp_path: Path, pages: bool) -> None:
    found = run(spark, tmp_path, rounds=ROUNDS, seed=SEED + pages, pages=pages)
    assert found.counts["refused"] + found.counts["verified"] + found.counts["ended"] == ROUNDS, found.counts
    assert not found.kinds("ended"), found.kinds("ended")
    assert not found.kinds("rows"), found.kinds("rows")
    print(f"{ROUNDS} {'page header' if pages else 'footer'} edits (seed {SEED + pages}): {dict(found.counts)}; "
          f"readers refused {len(found.kinds('refused'))} VERIFIED rewrites")
