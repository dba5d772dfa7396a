"""An uninstalled hook leaves nothing behind in the JVM: no query listener per hook, one Iceberg commit listener per
JVM (carriers/spark/hook.py ``_register_query_listener``, ``_iceberg_commits``).

Measured before: py4j hands Java a new proxy each time a Python object crosses, and Spark removes a query listener by
identity, so ``uninstall`` removed nothing; each later query called every hook installed so far (their queues full,
256 "attestations pending" warnings per write), and the listener bus fell more than 10 s behind in a long run.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _listeners(spark: SparkSession) -> int:
    return len(spark._jsparkSession.listenerManager().listListeners())


def test_install_then_uninstall_leaves_the_session_s_listeners_as_they_were(spark: SparkSession) -> None:
    from attest.spark import install

    before = _listeners(spark)
    table = f"un_{uuid.uuid4().hex[:8]}"
    for i in range(3):
        hook = install(spark, policy="required")
        assert _listeners(spark) == before + 1
        spark.createDataFrame([(i, "a")], "id int, s string").write.format("delta").mode("append").saveAsTable(table)
        hook.flush()
        assert hook.attested == 1, hook.errors
        hook.uninstall()
        assert _listeners(spark) == before, f"round {i}: a listener outlived its hook"


def test_an_uninstalled_hook_sees_no_later_write(spark: SparkSession) -> None:
    from attest.spark import install

    table = f"un_{uuid.uuid4().hex[:8]}"
    old = install(spark, policy="required")
    old.uninstall()
    hook = install(spark, policy="required")
    try:
        spark.createDataFrame([(1, "a")], "id int, s string").write.format("delta").saveAsTable(table)
        hook.flush()
    finally:
        hook.uninstall()
    assert hook.attested == 1, hook.errors
    assert (old.attested, old.skipped, old.failed, old._queue.qsize()) == (0, 0, 0, 0)


def test_one_iceberg_commit_listener_serves_every_hook(spark: SparkSession) -> None:
    """Iceberg's ``Listeners`` has no unregister: a listener per hook stayed for the JVM's life, each called on every
    later Iceberg commit. One is registered per JVM; it passes events to the hooks installed now."""
    from attest.spark import install
    from carriers.spark.hook import _iceberg_commits

    first = install(spark, policy="required")
    commits = _iceberg_commits(spark)
    first.uninstall()
    second = install(spark, policy="required")
    try:
        assert _iceberg_commits(spark) is commits
        assert commits._hooks == (second,)
    finally:
        second.uninstall()
    assert not commits._hooks
