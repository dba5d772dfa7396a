"""The first minutes at the command line (issue 34.4): ``attest`` alone prints the help (exit 2: no command is a usage
error, as argparse's own code for those); an unknown option is refused by its command, with that command's usage and
the closest option it has; a misspelt command names the closest one."""

from __future__ import annotations

import json

from attest.cli.parser import COMMANDS
from tests.conftest import run_cli


def test_attest_alone_prints_the_help() -> None:
    done = run_cli()
    assert done.returncode == 2
    assert done.stdout.startswith("usage: attest") and all(c in done.stdout for c in COMMANDS)
    assert "Attest Delta Lake and Apache Iceberg" in done.stdout and done.stderr == ""


def test_an_unknown_option_gets_its_command_usage_and_the_closest_option() -> None:
    done = run_cli("verify", "/lake/orders", "--levle", "bytes")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: attest verify ")
    assert done.stderr.rstrip().endswith("attest: invalid_argument: unrecognized arguments: --levle bytes; "
                                         "did you mean --level?")
    done = run_cli("audit", "/lake", "--catalogue", "c", "--json")
    problem = json.loads(done.stdout)["errors"][0]
    assert done.returncode == 2 and problem["code"] == "invalid_argument"
    assert problem["message"].endswith("did you mean --catalog?")
    done = run_cli("record", "/lake/t", "--model", "m", "--sql-flie=q.sql")
    assert done.returncode == 2 and "did you mean --sql-file?" in done.stderr
    assert "usage: attest record " in done.stderr
    done = run_cli("show", "/lake/t", "--zzzzzz")  # nothing close: no guess
    assert done.returncode == 2 and "did you mean" not in done.stderr and "usage: attest show " in done.stderr


def test_a_misspelt_command_names_the_closest() -> None:
    done = run_cli("verfy", "x.json")
    assert done.returncode == 2 and done.stderr.rstrip().endswith("did you mean verify?")
    done = run_cli("program-hsh", "--sql", "select 1")
    assert done.returncode == 2 and "did you mean program-hash?" in done.stderr
