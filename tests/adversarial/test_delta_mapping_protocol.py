"""A Delta table whose ``delta.columnMapping.mode`` maps columns while its protocol does not enable column mapping
(redteam11d).

Column mapping is a reader feature: reader version 2, or 3 with ``columnMapping`` among the reader features. A table
whose ``metaData`` says ``delta.columnMapping.mode = name`` under protocol 1/2 (a hand-written log; files holding the
physical names, as Spark writes them) is read two ways (measured): delta-rs 1.6 ignores the mode and reads the
logical names — every value null —, Spark (delta-spark 4.4) reads the physical names — the values. The content digest
took the mode from the configuration, as Spark: ``record`` attested, ``verify`` said VERIFIED, while delta-rs readers
got nulls (and a rewrite's file holding the logical names too, with other values, would have kept the digest while
delta-rs's rows changed). Such a version is now ``table_inconsistent``; the same table under protocol 2/5 verifies
(tests/adversarial/test_content_rewrite_delta.py, ``test_column_mapping_honest_rewrite_verifies``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from attest.errors import AttestError
from carriers.delta.log import commit_name
from tests.adversarial.conftest import codes, verify
from tests.adversarial.test_content_rewrite_delta import _mapped_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _unmapped_protocol(path: Path, monkeypatch: pytest.MonkeyPatch, *, attest: bool) -> None:
    """``_mapped_table`` (mode name, files holding the physical names) under protocol 1/2; ``attest``: attested with
    the check off, as before it."""
    import carriers.delta.carrier as delta_carrier

    written = Path.write_text

    def write_text(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        if self.name == Path(commit_name(0)).name:
            text = text.replace('"minReaderVersion": 2, "minWriterVersion": 5',
                                '"minReaderVersion": 1, "minWriterVersion": 2')
        return written(self, text, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(Path, "write_text", write_text)
        if attest:
            m.setattr(delta_carrier, "_mapping_without_the_feature", lambda log: None, raising=False)
            _mapped_table(path, "name")
        else:
            with pytest.raises(AttestError) as err:
                _mapped_table(path, "name")
            assert err.value.code.value == "table_inconsistent", err.value
            assert "does not enable column mapping" in err.value.message


def _delta_rs(path: Path) -> list[dict[str, Any]]:
    return pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all()
                    ).to_pylist()


def test_record_refuses_a_mapping_the_protocol_does_not_enable(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _unmapped_protocol(path, monkeypatch, attest=False)
    assert all(row == {"a": None, "b": None} for row in _delta_rs(path))  # delta-rs: the logical names, nulls


def test_an_attestation_made_before_no_longer_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _unmapped_protocol(path, monkeypatch, attest=True)
    rc, doc = verify(str(path), "--level", "bytes")
    assert rc == 1 and codes(doc) == ["table_inconsistent"], doc
    assert "does not enable column mapping" in doc["errors"][0]["message"], doc


@pytest.mark.spark
def test_spark_reads_the_physical_names_delta_rs_the_logical_ones(spark: SparkSession, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _unmapped_protocol(path, monkeypatch, attest=True)
    assert all(row == {"a": None, "b": None} for row in _delta_rs(path))
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).select("a", "b").collect())
    assert rows == [(0, 100), (1, 101), (10, 200), (11, 201)]
