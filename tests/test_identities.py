"""Identity builders: what changes a program, inputs or env identity and what does not."""

from __future__ import annotations

import pytest

from attest.errors import AttestError
from attest.identity import (
    ObservedInput,
    content_identity,
    env_identity,
    inputs_identity,
    program_identity_json,
    program_identity_python,
    program_identity_sql,
)
from attest.identity.env import env_document
from attest.identity.program import ProgramError

BASE_SQL = "SELECT a, SUM(b) AS total FROM sales WHERE region = 'EU' GROUP BY a"


@pytest.mark.parametrize("same", [
    "select a, sum(b) as total from sales where region = 'EU' group by a",
    "SELECT a,\n       SUM(b) AS total -- revenue\n  FROM sales\n WHERE region = 'EU' /* only EU */\n GROUP BY a",
    "  SELECT   a, SUM(b)   AS total FROM sales WHERE region='EU' GROUP BY a ;",
])
def test_sql_layout_comments_and_keyword_case_do_not_count(same: str) -> None:
    assert program_identity_sql(same, "spark") == program_identity_sql(BASE_SQL, "spark")


@pytest.mark.parametrize("different", [
    BASE_SQL.replace("'EU'", "'eu'"),         # a literal
    BASE_SQL.replace("sales", "Sales"),        # an identifier
    BASE_SQL.replace("SUM", "MAX"),            # logic
    BASE_SQL.replace("region =", "region <>"),  # logic
    BASE_SQL.replace("total", "tot"),          # an alias is part of the output schema
])
def test_sql_literals_identifiers_and_logic_count(different: str) -> None:
    assert program_identity_sql(different, "spark") != program_identity_sql(BASE_SQL, "spark")


def test_sql_dialect_is_part_of_the_identity() -> None:
    assert program_identity_sql(BASE_SQL, "spark") != program_identity_sql(BASE_SQL, "duckdb")


def test_sql_that_does_not_parse_is_a_clear_error() -> None:
    with pytest.raises(ProgramError, match="does not parse"):
        program_identity_sql("SELECT FROM WHERE (", "spark")


def f_base(x: int) -> int:
    """Doubles."""
    return x * 2 + 1


def f_reformatted(x: int) -> int:
    # a comment, another docstring below, other layout
    """Another docstring."""
    return (x * 2
            + 1)


def f_changed(x: int) -> int:
    return x * 3 + 1


def test_python_identity_ignores_name_comments_docstrings_layout_but_not_logic() -> None:
    assert program_identity_python(f_base) == program_identity_python(f_reformatted)
    assert program_identity_python(f_base) != program_identity_python(f_changed)


def test_python_identity_needs_source() -> None:
    with pytest.raises(ProgramError):
        program_identity_python(len)


def test_json_identity_is_the_v1_digest_of_the_document() -> None:
    assert program_identity_json({"b": [1], "a": "x"}) == program_identity_json({"a": "x", "b": [1]})
    assert program_identity_json({"a": "x"}) != program_identity_json({"a": "y"})


def test_inputs_order_does_not_matter_and_proof_is_the_weakest() -> None:
    strong = ObservedInput("delta:1", content="a" * 64)
    weak = ObservedInput("delta:2", version="7")
    h1, p1 = inputs_identity([strong, weak]) or ("", "")
    h2, p2 = inputs_identity([weak, strong]) or ("", "")
    assert h1 == h2 and p1 == p2 == "heuristic"
    assert inputs_identity([strong]) == (inputs_identity([strong]) or ("", ""))
    assert (inputs_identity([strong]) or ("", ""))[1] == "strong"


def test_no_inputs_means_no_hash_and_no_class() -> None:
    assert inputs_identity([]) is None


def test_what_enters_the_inputs_hash() -> None:
    a = ObservedInput("delta:1", version="3", location="/mnt/a")
    b = ObservedInput("delta:1", version="3", location="/other/mount")
    c = ObservedInput("delta:1", version="4")
    assert inputs_identity([a]) == inputs_identity([b])  # location is not identity
    assert inputs_identity([a]) != inputs_identity([c])  # the version is
    assert inputs_identity([a, a]) == inputs_identity([a])  # a table read twice is one input


def test_input_needs_content_or_freshness() -> None:
    with pytest.raises(AttestError):
        ObservedInput("delta:1")
    with pytest.raises(AttestError):
        ObservedInput("delta:1", content="XYZ")
    with pytest.raises(AttestError):
        ObservedInput("", version="1")


def test_observed_input_round_trip() -> None:
    i = ObservedInput("iceberg:u", snapshot_id="42", row_count=10, watermark="2026", location="x", name="n")
    assert ObservedInput.from_dict(i.to_dict()) == i


def test_content_identity_is_a_set_of_hashes() -> None:
    assert content_identity(["b" * 64, "a" * 64]) == content_identity(["a" * 64, "b" * 64, "a" * 64])


def test_env_identity_excludes_machines_and_includes_versions() -> None:
    kwargs = dict(producer_name="recipe-attest", producer_version="0.1.0", engines={"spark": "4.0.1"},
                  dialect="Spark", table_format="delta", protocol={"minReaderVersion": 1})
    doc = env_document(**kwargs)  # type: ignore[arg-type]
    text = str(doc)
    import getpass
    import socket

    assert socket.gethostname() not in text and getpass.getuser() not in text
    assert env_identity(**kwargs) == env_identity(**kwargs)  # type: ignore[arg-type]
    newer = dict(kwargs, engines={"spark": "4.0.2"})
    assert env_identity(**newer) != env_identity(**kwargs)  # type: ignore[arg-type]
