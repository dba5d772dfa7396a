"""The first minutes at the command line (issue 34.4): ``attest`` alone prints the help (exit 2: no command is a usage
error, as argparse's own code for those); an unknown option is refused by its command, with that command's usage and
the closest option it has; a misspelt command names the closest one."""

from __future__ import annotations

import argparse
import difflib
import json

import pytest

from attest.cli.parser import COMMANDS, build_parser
from tests.conftest import cli_in_process, run_cli


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


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, as the command line builds them (never a list kept by hand)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _misspelt(option: str) -> str:
    """``option`` with two letters of its name swapped: a typo no option of the command starts with."""
    name = option[2:]
    i = max(1, len(name) // 2)
    return "--" + name[: i - 1] + name[i] + name[i - 1] + name[i + 1:]


def test_the_commands_are_every_command_the_parser_has() -> None:
    assert sorted(_commands()) == sorted(COMMANDS)


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_command_has_help_and_refuses_an_unknown_option_with_its_usage_and_the_closest(command: str) -> None:
    """issue 34 item 5, for every command the parser has: ``--help`` prints the command's usage (exit 0); a misspelt
    option is refused (exit 2) with the command's own usage and the option meant — also when the command's required
    arguments are missing, where argparse would report only those (``keygen --outt K``: ``--out`` "is required")."""
    rc, out, err = cli_in_process(command, "--help")
    assert rc == 0 and out.startswith(f"usage: attest {command} ") and err == "", (out, err)
    options = [o for a in _commands()[command]._actions for o in a.option_strings
               if o.startswith("--") and o != "--help"]
    assert options, command
    for option in options:
        typo = _misspelt(option)
        if any(o.startswith(typo) for o in options) or difflib.get_close_matches(typo, options, n=1)[:1] != [option]:
            continue  # a swap that spells (the start of) another option, or is closer to one: not this option's typo
        rc, out, err = cli_in_process(command, typo)
        assert rc == 2 and out == "" and err.startswith(f"usage: attest {command} "), (typo, out, err)
        assert err.rstrip().endswith(f"unrecognized arguments: {typo}; did you mean {option}?"), (typo, err)
        rc, out, err = cli_in_process(command, f"{typo}=1", "--json")
        problem = json.loads(out)["errors"][0]
        assert rc == 2 and problem["code"] == "invalid_argument", out
        assert problem["message"].endswith(f"did you mean {option}?"), (typo, problem)


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_command_names_the_option_meant_by_a_short_or_single_dash_option(command: str) -> None:
    """A misspelt short option got no suggestion (``attest verify -x T``: "unrecognized arguments: -x"). The commands
    have long options only, besides ``-h``: ``-j`` names the long option(s) starting with j (``--json``), ``-json``
    (one dash) the long option it spells, for every option of every command as the parser builds it — also where the
    command's required arguments are missing (``keygen -o K``). A letter no option starts with gets no guess."""
    options = [o for a in _commands()[command]._actions for o in a.option_strings
               if o.startswith("--") and o != "--help"]
    short = {o for a in _commands()[command]._actions for o in a.option_strings if not o.startswith("--")}
    assert short == {"-h"}, short  # if a command grows a short option, its misspellings need their own cases here
    for letter in sorted({o[2] for o in options} - {"h"}):
        meant = sorted(o for o in options if o[2] == letter)
        said = meant[0] if len(meant) == 1 else f"one of {', '.join(meant)}"
        rc, out, err = cli_in_process(command, f"-{letter}")
        assert rc == 2 and out == "" and err.startswith(f"usage: attest {command} "), (letter, out, err)
        assert err.rstrip().endswith(f"unrecognized arguments: -{letter}; did you mean {said}?"), (letter, err)
    for option in options:
        rc, out, err = cli_in_process(command, option[1:], "--json")
        problem = json.loads(out)["errors"][0]
        assert rc == 2 and problem["code"] == "invalid_argument", out
        assert problem["message"].endswith(f"did you mean {option}?"), (option, problem)
    unused = next(c for c in "xqzwy" if all(o[2] != c for o in options))
    rc, out, err = cli_in_process(command, f"-{unused}")
    assert rc == 2 and "unrecognized arguments" in err and "did you mean" not in err, err


def test_a_short_option_typo_in_context() -> None:
    done = run_cli("verify", "/lake/orders", "-l", "bytes")
    assert done.returncode == 2 and done.stderr.startswith("usage: attest verify ")
    assert done.stderr.rstrip().endswith("unrecognized arguments: -l bytes; did you mean --level?"), done.stderr
    done = run_cli("verify", "-x", "/lake/orders")  # nothing starts with x: no guess
    assert done.returncode == 2 and done.stderr.rstrip().endswith("unrecognized arguments: -x"), done.stderr
    rc, _, err = cli_in_process("show", "-5")  # a negative number is a value, never taken for an option
    assert rc == 2 and "did you mean" not in err, err
