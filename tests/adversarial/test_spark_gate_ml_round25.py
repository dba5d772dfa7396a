"""Round 25 on the Spark read gate: pyspark.ml reads its dataset in the JVM, past every DataFrame action.

Measured (Spark 4.1, numpy installed as every pyspark.ml user has it): under ``require_verified``, a
``LinearRegression().fit``, a ``StringIndexer().fit``, a ``RegressionEvaluator().evaluate``, ``Correlation.corr`` and
a model's ``evaluate`` over an unattested Delta table ran, the gate having checked nothing (``gate.checked == 0``):
a model trained on, and metrics computed from, rows no attestation covers. Now each of pyspark.ml's reading methods
(``Estimator.fit`` / ``fitMultiple``, ``Evaluator.evaluate``, the statistics' static tests, the models' ``evaluate``)
checks the tables its dataset reads first (carriers/spark/gate.py ``GATED``); a static or class method is wrapped as
one (carriers/spark/intercept.py) and restored as it was.

Each refusal failed on the code before this round (``DID NOT RAISE``); the attested table's reads are held.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _tables(spark: SparkSession, tmp_path: Path) -> tuple[Any, Any]:
    """(an unattested Delta table's DataFrame, an attested one's), each with a ``features`` vector and a ``label``."""
    import pyarrow as pa
    from deltalake import write_deltalake
    from pyspark.ml.feature import VectorAssembler

    from carriers.delta.carrier import attest_after_write

    rows = pa.table({"x": pa.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), "label": pa.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])})
    unattested, attested = tmp_path / f"ml_u_{uuid.uuid4().hex[:6]}", tmp_path / f"ml_a_{uuid.uuid4().hex[:6]}"
    write_deltalake(str(unattested), rows)
    write_deltalake(str(attested), rows)
    attest_after_write(str(attested), model="ml", program_hash="a" * 64)
    assemble = VectorAssembler(inputCols=["x"], outputCol="features")
    return (assemble.transform(spark.read.format("delta").load(str(unattested))),
            assemble.transform(spark.read.format("delta").load(str(attested))))


def _calls() -> dict[str, Any]:
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.feature import StringIndexer
    from pyspark.ml.regression import LinearRegression
    from pyspark.ml.stat import ChiSquareTest, Correlation

    return {
        "Estimator.fit": lambda df: LinearRegression(labelCol="label").fit(df),
        "Estimator.fit (a feature's)": lambda df: StringIndexer(inputCol="label", outputCol="i").fit(df),
        "Estimator.fitMultiple": lambda df: list(LogisticRegression().fitMultiple(df, [{}])),
        "Evaluator.evaluate": lambda df: BinaryClassificationEvaluator().evaluate(df.withColumn("rawPrediction",
                                                                                              df["label"])),
        "Correlation.corr": lambda df: Correlation.corr(df, "features"),
        "ChiSquareTest.test": lambda df: ChiSquareTest.test(df, "features", "label"),
    }


_CALLS = ("Estimator.fit", "Estimator.fit (a feature's)", "Estimator.fitMultiple", "Evaluator.evaluate",
          "Correlation.corr", "ChiSquareTest.test")


@pytest.mark.parametrize("call", _CALLS)
def test_pyspark_ml_reads_are_checked(spark: SparkSession, tmp_path: Path, call: str) -> None:
    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    unattested, attested = _tables(spark, tmp_path)
    run = _calls()[call]
    with require_verified(spark) as gate:
        with pytest.raises(VerificationRefusedError) as refused:
            run(unattested)  # was: ran, gate.checked == 0
        assert refused.value.code.value == "unattested", gate.refused
        assert call.split(" ")[0] in str(refused.value)
        run(attested)  # the attested table's rows: checked and read
        assert gate.checked >= 1


def test_a_models_evaluate_is_checked_and_the_methods_are_restored(spark: SparkSession, tmp_path: Path) -> None:
    from pyspark.ml.classification import LogisticRegressionModel
    from pyspark.ml.regression import LinearRegression
    from pyspark.ml.stat import Correlation

    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    unattested, attested = _tables(spark, tmp_path)
    model = LinearRegression(labelCol="label").fit(attested)  # outside the gate
    static, method = vars(Correlation)["corr"], vars(LogisticRegressionModel)["evaluate"]
    with require_verified(spark) as gate:
        assert isinstance(vars(Correlation)["corr"], staticmethod)  # wrapped as a staticmethod
        with pytest.raises(VerificationRefusedError):
            model.evaluate(unattested)  # was: a summary of unattested rows
        assert model.evaluate(attested).r2 > 0.5
        assert gate.checked >= 1
    assert vars(Correlation)["corr"] is static and vars(LogisticRegressionModel)["evaluate"] is method


@pytest.mark.filterwarnings("ignore:Deprecated in 3.0.0:FutureWarning")  # computeCost: deprecated, still there
def test_a_clustering_models_cost_is_checked(spark: SparkSession, tmp_path: Path) -> None:
    from pyspark.ml.clustering import BisectingKMeans

    from attest.errors import VerificationRefusedError
    from attest.spark import require_verified

    unattested, attested = _tables(spark, tmp_path)
    model = BisectingKMeans(k=2, seed=1).fit(attested)  # outside the gate
    with require_verified(spark):
        with pytest.raises(VerificationRefusedError):
            model.computeCost(unattested)  # was: the cost of unattested rows
        assert model.computeCost(attested) >= 0
