"""Round 18 (Delta), variants that held: log lines in the lenient JSON delta-rs's reader takes.

delta-rs 1.6 reads a commit line with a leading zero in a number, a trailing comma or a raw control character in a
string (measured below: it reads the table's rows), and Spark's Jackson refuses them. The log replay reads every line
strictly (Python's parser, no key twice), so such a line is ``table_inconsistent`` at record — as the statistics text
inside a line now is (test_delta_round18.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from attest.errors import AttestError
from carriers.delta.carrier import attest_after_write
from carriers.delta.log import commit_name
from tests.adversarial.conftest import PROGRAM

LINES: dict[str, Callable[[str], str]] = {
    "a size with a leading zero": lambda t: re.sub(r'"size":(\d+)', r'"size":0\1', t),
    "a modificationTime with a leading zero": lambda t: re.sub(
        r'"modificationTime":(\d+)', r'"modificationTime":0\1', t
    ),
    "a trailing comma in an add": lambda t: t.replace('"dataChange":true', '"dataChange":true,', 1),
    "a raw tab in commitInfo": lambda t: t.replace('"commitInfo":{', '"commitInfo":{"x":"a\tb",', 1),
    "a reader version 01": lambda t: t.replace('"minReaderVersion":1', '"minReaderVersion":01', 1),
}


@pytest.mark.parametrize("case", sorted(LINES))
def test_a_lenient_log_line_is_refused(tmp_path: Path, case: str) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"v": pa.array([1, 2], pa.int64())}))
    log = path / commit_name(0)
    text = log.read_text()
    log.write_text(LINES[case](text))
    assert log.read_text() != text
    assert DeltaTable(str(path)).to_pyarrow_table().num_rows == 2  # delta-rs reads it
    with pytest.raises(AttestError) as caught:
        attest_after_write(str(path), model="orders", program_hash=PROGRAM)
    assert caught.value.code.value == "table_inconsistent", caught.value
    assert "not a JSON action" in str(caught.value), caught.value
