"""The README's quickstart and its Python section, run as written (the install line checked against pyproject): on a
fresh Delta table, and — as the README says, "the same commands with ``--catalog <name> <namespace>.<table>``" /
``"<ns>.<table>"`` with ``catalog=`` — on an Iceberg table in a sqlite catalog."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SQL = "SELECT id, amount FROM raw_orders\n"


def _block(heading: str, lang: str) -> str:
    """The first ``lang`` code block after ``heading``."""
    found = re.search(rf"^{re.escape(heading)}\n.*?^```{lang}\n(.*?)^```", README, re.S | re.M)
    assert found, f"README: no {lang} block under {heading!r}"
    return found.group(1)


def _quickstart() -> list[tuple[list[str], list[str]]]:
    """The quickstart's commands (shell words, comments dropped), each with the lines it prints."""
    steps: list[tuple[list[str], list[str]]] = []
    for line in _block("## Quickstart: your own Delta table", "console").splitlines():
        if line.startswith("$ "):
            steps.append((shlex.split(line[2:], comments=True), []))
        else:
            steps[-1][1].append(line)
    return steps


def test_the_install_line_names_extras_that_pull_what_its_comment_says() -> None:
    (install, _), *_ = _quickstart()
    assert install[:2] == ["pip", "install"]
    named = re.fullmatch(r"([a-z-]+)\[([a-z,]+)\]", install[2])
    assert named, install
    name, extras = named.groups()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert name == project["name"]
    pulled = {re.split(r"[<>=\[]", d)[0] for d in project["dependencies"]}
    for extra in extras.split(","):
        pulled |= {re.split(r"[<>=\[]", d)[0] for d in project["optional-dependencies"][extra]}
    comment = next(x for x in _block("## Quickstart: your own Delta table", "console").splitlines()
                   if x.startswith("$ pip")).split("# pulls ", 1)[1]
    assert set(re.split(r"[,;]\s*", comment.strip())) == pulled, comment


def _orders(where: Path) -> None:
    """lake/orders as the README's words describe it: its last append (version 4) built on version 3."""
    for i in range(5):
        write_deltalake(str(where / "lake" / "orders"), pa.table({"id": [i], "amount": [i * 1.5]}), mode="append")
    (where / "orders.sql").write_text(SQL)


def test_the_quickstart_on_a_fresh_delta_table(tmp_path: Path) -> None:
    _orders(tmp_path)
    for words, printed in _quickstart()[1:]:
        assert words[0] == "attest"
        done = run_cli(*words[1:], cwd=tmp_path)
        assert done.returncode == 0, (words, done.stdout, done.stderr)
        assert done.stdout.splitlines() == printed, words


@pytest.fixture
def local_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sqlite catalog named ``local`` as pyiceberg's configuration gives one, with ``db.orders`` in it."""
    import pyiceberg.catalog
    from pyiceberg.catalog import load_catalog
    from pyiceberg.utils.config import Config

    (tmp_path / "wh").mkdir()
    for key, value in (("TYPE", "sql"), ("URI", f"sqlite:///{tmp_path / 'wh' / 'catalog.db'}"),
                       ("WAREHOUSE", f"file://{tmp_path / 'wh'}")):
        monkeypatch.setenv(f"PYICEBERG_CATALOG__LOCAL__{key}", value)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))  # no .pyiceberg.yaml of the machine's
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())  # pyiceberg reads its environment once
    catalog = load_catalog("local")
    catalog.create_namespace("db")
    table = catalog.create_table("db.orders", schema=pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
    for i in range(3):
        table.append(pa.table({"id": pa.array([i], pa.int64()), "amount": [i * 1.5]}))
    (tmp_path / "orders.sql").write_text(SQL)
    return tmp_path


def test_the_quickstart_on_an_iceberg_table_with_catalog(local_catalog: Path) -> None:
    """"the same commands with ``--catalog <name> <namespace>.<table>``": ``lake/orders`` becomes
    ``--catalog local db.orders``; the verdicts name the Iceberg table."""
    assert "then the same commands with `--catalog <name> <namespace>.<table>`" in " ".join(README.split())
    first = {"record": "RECORDED — iceberg://local/db.orders snapshot ",
             "verify": "VERIFIED (bytes, unsigned) — iceberg table iceberg://local/db.orders snapshot "}
    for words, _ in _quickstart()[1:]:
        swapped = [w for x in words for w in (["--catalog", "local", "db.orders"] if x == "lake/orders" else [x])]
        done = run_cli(*swapped[1:], cwd=local_catalog)
        assert done.returncode == 0, (swapped, done.stdout, done.stderr)
        assert done.stdout.splitlines()[-1].startswith(first[words[1]]), (swapped, done.stdout)


def _python(where: Path, source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.chdir(where)
    exec(compile(source, "README.md", "exec"), {"sql_text": SQL})  # the README's own lines
    return capsys.readouterr().out


def test_the_python_section_on_a_fresh_delta_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    source = _block("## In Python", "python")
    for i in range(4):  # lake/raw_orders@3: the input the README names
        write_deltalake(str(tmp_path / "lake" / "raw_orders"), pa.table({"id": [i]}), mode="append")
    write_deltalake(str(tmp_path / "lake" / "orders"), pa.table({"id": [1]}), mode="append")
    out = _python(tmp_path, source, monkeypatch, capsys).splitlines()
    assert out[0] == "VERIFIED (bytes, unsigned) — delta table lake/orders version 1, attestation for version 0 True"
    assert "lake/orders@1: ATTESTED" in out[1] and "lake/raw_orders@3 [read as heuristic]" in out[2], out


def test_the_python_section_on_an_iceberg_table_with_catalog(local_catalog: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``"<ns>.<table>"`` with ``catalog=``, as the README says the calls take it."""
    assert '`"<ns>.<table>"` with\n`catalog=`' in README or '`"<ns>.<table>"` with `catalog=`' in README
    source = _block("## In Python", "python")
    assert source.count('"lake/orders"') == 4
    for i in range(4):
        write_deltalake(str(local_catalog / "lake" / "raw_orders"), pa.table({"id": [i]}), mode="append")
    out = _python(local_catalog, source.replace('"lake/orders"', '"db.orders", catalog="local"'), monkeypatch,
                  capsys).splitlines()
    assert out[0].startswith("VERIFIED (bytes, unsigned) — iceberg table iceberg://local/db.orders snapshot "), out
    assert out[0].endswith(" True") and "iceberg://local/db.orders@" in out[1] and ": ATTESTED" in out[1], out
    assert "lake/raw_orders@3 [read as heuristic]" in "\n".join(out[2:]), out
