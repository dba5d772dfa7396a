"""The ``attest`` argument parser: arguments in, an ``argparse.Namespace`` out (``func`` names the command in
attest/cli/<command>.py). Imported by ``attest.cli.main`` after any head start (argparse, enum and re cost ~6 ms)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

from attest import __version__

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["COMMANDS", "LEVELS", "build_parser", "command_of", "json_format", "parse"]

LEVELS = ("schema", "files", "bytes")
COMMANDS = ("digest", "schema", "verify", "keygen", "show", "lineage", "audit", "record", "publish", "release-tags",
            "program-hash", "catalog-config")


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size finds it, without importing shutil (and bz2, lzma, zlib with
    it): argparse asks for a width on every add_argument, so every command paid for that import."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    json_errors = False  # set by main() when --json is on the command line: errors are then one JSON object
    _given: list[str]  # the arguments this parser was last given (a command's parser: those after its name)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self._given = []

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._given = [str(a) for a in (sys.argv[1:] if args is None else args)]
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        from attest.cli.output import EXIT_UNREADABLE, error_object
        from attest.errors import Code, Problem

        if message.startswith("argument command: invalid choice: '"):  # a misspelt command: the closest one
            word = message.split("'")[1]
            message += _closest(word, list(COMMANDS))
        elif message.startswith("the following arguments are required"):
            # argparse checks required arguments before it reports unknown ones: a misspelt required option
            # (`keygen --outt K`) would be reported as the option missing. The unknown option is the mistake.
            unknown = self._unknown_options()
            if unknown:
                message = f"unrecognized arguments: {' '.join(unknown)}" + _option_hint(unknown[0], self)
        if _Parser.json_errors:
            print(json.dumps(error_object(Problem(Code.INVALID_ARGUMENT, message))))
            self.exit(EXIT_UNREADABLE)
        self.print_usage(sys.stderr)
        self.exit(EXIT_UNREADABLE, f"attest: {Code.INVALID_ARGUMENT.value}: {message}\n")


    def _unknown_options(self) -> list[str]:
        """The options given to this parser that it has none of (``--long`` ones: nor, abbreviated, starts any of;
        ``-x`` ones: no short option of that letter)."""
        known = _long_options(self)
        short = {o for a in self._actions for o in a.option_strings if not o.startswith("--")}
        found: list[str] = []
        for given in self._given:
            if given == "--":
                break  # the rest are positional arguments
            name = given.partition("=")[0]
            long_unknown = name.startswith("--") and not any(o.startswith(name) for o in known)
            if long_unknown or (_is_short(name) and name[:2] not in short):
                found.append(name)
        return found


def _long_options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings if o.startswith("--")]


def _is_short(word: str) -> bool:
    """``-x`` / ``-xyz`` as a command line gives an option (not ``-``, ``--x``, nor a negative number)."""
    return len(word) > 1 and word[0] == "-" and word[1] != "-" and not word[1:].replace(".", "", 1).isdigit()


def _option_hint(given: str, parser: argparse.ArgumentParser) -> str:
    """"; did you mean X?" for a misspelt option: ``--levle`` the closest long option; ``-json`` (one dash) the long
    option it spells; ``-j`` (a short option the command does not have: ``attest`` has long options only, besides
    ``-h``) the long option(s) starting with that letter; "" when nothing is close."""
    options = _long_options(parser)
    if given.startswith("--"):
        return _closest(given, options)
    if not _is_short(given):
        return ""
    name = given[1:]
    if len(name) > 1:  # one dash before a long name: -json, -levle
        return _closest("-" + given, options)
    starting = sorted(o for o in options if o[2:3].lower() == name.lower())
    if len(starting) == 1:
        return f"; did you mean {starting[0]}?"
    if starting:
        return f"; did you mean one of {', '.join(starting)}?"
    return ""


def _command(sub: argparse._SubParsersAction[_Parser], name: str, func: str, target: str | None, *, help: str,
             description: str) -> _Parser:
    """One command's parser: its ``name``, the function that runs it (``func``, ``<module>:<function>`` in
    attest/cli/, imported by main() after parsing), its one-line ``help`` and ``description``, and its positional
    ``target`` argument shown as that metavar (None: it takes none, or its own)."""
    p = sub.add_parser(name, help=help, description=description)
    if target is not None:
        p.add_argument("target", metavar=target)
    p.set_defaults(func=func)
    return p


def _add_level(p: argparse.ArgumentParser, what: str, default: str | None = None) -> None:
    p.add_argument("--level", choices=LEVELS, default=default, help=what)


def _add_table_options(p: argparse.ArgumentParser, *, version: bool = True, branch: bool = False) -> None:
    if version:
        group = p.add_mutually_exclusive_group()
        group.add_argument("--version", dest="version", metavar="N", help="Delta table version (time travel)")
        group.add_argument("--snapshot-id", dest="snapshot_id", metavar="ID",
                           help="Iceberg snapshot id, tag or branch")
        if branch:
            # A branch named as a number (``123``, ``-1``) is a snapshot id to --snapshot-id, as to Spark's VERSION AS
            # OF; readers of ``ns.t.branch_123`` read the branch's head, which this checks.
            group.add_argument("--branch", dest="ref_branch", metavar="NAME",
                               help="Iceberg: the head of this branch, as readers of ns.t.branch_NAME read it")
    p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                   help="object-store option passed to the table library (repeatable; values are never printed)")


def _add_catalog(p: argparse.ArgumentParser) -> None:
    from attest.cli.catalogs import add_catalog_options

    add_catalog_options(p)


def _add_spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spark", action="store_true",
                   help="tables: hash the files on Spark executors (needs the `spark` extra); the verdict is decided "
                   "here, by the same rules (docs/distributed.md)")
    p.add_argument("--master", metavar="URL", help="with --spark: the Spark master (default local[*])")


def _add_json(p: argparse.ArgumentParser, what: str = "print one JSON object instead of text") -> None:
    p.add_argument("--json", action="store_true", help=what)


def _add_trust(p: argparse.ArgumentParser, what: str = "") -> None:
    """--key / --policy: check signatures under a trust policy (docs/signing.md)."""
    signing = p.add_mutually_exclusive_group()
    signing.add_argument("--key", metavar="PUB.pem", help=f"require a signature by this public key{what} "
                         "(docs/signing.md)")
    signing.add_argument("--policy", metavar="TRUST.toml", help=f"require signatures allowed by this trust "
                         f"policy{what}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``command`` (a command's name) one holding only that command: a run builds just what
    it parses (argparse pays per argument). Commands are named, not imported (``func``): main() imports them after
    parsing, so work a command can start early (verify's hashing) starts before the command machinery loads."""
    def want(name: str) -> bool:
        return command not in COMMANDS or command == name

    parser = _Parser(prog="attest", description="Attest Delta Lake and Apache Iceberg table versions as "
                     "rocky-manifest v0.1 documents, and verify them offline.")
    parser.add_argument("--version", action="version", version=f"attest (recipe-attest) {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    if want("digest"):
        p = _command(sub, "digest", "digest:cmd_digest", None,
                     help="print the v1 identity (BLAKE3 of canonical JSON) of a JSON document",
                     description="Print the 64-hex v1 identity of the JSON document in FILE ('-' reads stdin).")
        p.add_argument("file", metavar="FILE.json")
        _add_json(p)

    if want("schema"):
        p = _command(sub, "schema", "schema:cmd_schema", None,
                     help="print the rocky-manifest v0.1 JSON Schema as published by the reference",
                     description="Print the rocky-manifest v0.1 JSON Schema (draft 2020-12) as published by the "
                     "reference implementation (Apache-2.0; attest/schema/NOTICE).")
        _add_json(p, "print the schema compactly as one JSON object")

    if want("verify"):
        p = _command(sub, "verify", "verify:cmd_verify", "MANIFEST.json|TABLE",
                     help="verify a manifest file or a table version",
                     description="Verify a manifest file ('-' reads stdin), a standalone carrier directory, or a table "
                     "(a Delta path/URI or iceberg://<catalog>/<ns>.<table>). Exit 0 verified, 1 not verified "
                     "(including unattested and stale), 2 unreadable input or bad arguments.")
        p.add_argument("--artifacts-dir", metavar="DIR", help="directory holding the artifacts a manifest names")
        _add_level(p, "schema, files (tables) or bytes; default bytes where output hashes and files exist. "
                   "Manifests: bytes needs --artifacts-dir")
        _add_json(p)
        _add_trust(p)
        p.add_argument("--envelope", metavar="FILE", help="manifests: the signed envelope (default: "
                       "<manifest>.dsse.json beside it); a table's envelope is the one its metadata names")
        p.add_argument("--allow-external-files", action="store_true",
                       help="tables: read data files outside the table's locations (shallow clones, migrated tables)")
        _add_table_options(p, branch=True)
        _add_spark_options(p)
        _add_catalog(p)
        from attest.cli.program_hash import add_verify_options

        add_verify_options(p)

    if want("keygen"):
        p = _command(sub, "keygen", "keys:cmd_keygen", None, help="write a signing key pair (PEM) and print its key id",
                     description="Write PREFIX.key (private, PKCS#8, mode 0600) and PREFIX.pub (public) and print "
                     "the key id (SHA-256 of the public key's DER). Never overwrites. --encrypt encrypts the private "
                     "key with the password in $ATTEST_SIGNING_KEY_PASSWORD.")
        p.add_argument("--type", choices=("ed25519", "p256"), default="ed25519", help="key type (default ed25519)")
        p.add_argument("--out", required=True, metavar="PREFIX", help="write PREFIX.key and PREFIX.pub")
        p.add_argument("--encrypt", action="store_true", help="encrypt the private key ($ATTEST_SIGNING_KEY_PASSWORD)")
        _add_json(p)

    if want("show"):
        p = _command(sub, "show", "show:cmd_show", "TABLE", help="print the standalone manifest a table carries",
                     description="Print the reconstituted standalone manifest of a table version as JSON (pipe it "
                     "to 'attest verify -'), or with --inputs the observed input list.")
        p.add_argument("--inputs", action="store_true", help="print the observed inputs kept beside the attestation")
        _add_json(p, "print JSON on every path (an unattested table or an error is an object too)")
        _add_table_options(p, branch=True)
        _add_catalog(p)

    if want("lineage"):
        p = _command(sub, "lineage", "lineage:cmd_lineage", "TABLE",
                     help="walk a table version's upstream inputs and check each one",
                     description="Print the lineage tree of a table version: each upstream version its attestation "
                     "observed, whether that version is attested and verifies, and how strongly it was observed. A "
                     "table's own earlier versions (appends, merges) are one node, each version checked; the "
                     "unattested version its attestations start from is reported as pre-attestation history, not a "
                     "failure. The last line says why the walk passed or failed. Exit 1 when any node does not verify.")
        p.add_argument("--depth", type=int, default=8,
                       help="how many tables upstream to walk (default 8; a table's own versions are one level; where "
                       "the walk is cut is shown)")
        _add_level(p, "how deeply each node is verified (default files)", default="files")
        p.add_argument("--format", choices=("text", "json", "dot", "mermaid", "svg"), default=None,
                       help="text (default), json (as --json), dot (Graphviz), mermaid, or svg: a picture with nodes "
                       "coloured by verdict and edges labelled with the version read (docs/lineage.md)")
        _add_json(p, "print the tree as JSON (same as --format json)")
        _add_trust(p, " on every node")
        _add_table_options(p, branch=True)
        _add_catalog(p)

    if want("audit"):
        p = _command(sub, "audit", "audit:cmd_audit", None,
                     help="verify many tables: everything under a folder or in a catalog",
                     description="Verify every table a target stands for: a folder (every Delta table below it), "
                     "iceberg://<catalog> (every table), iceberg://<catalog>/<namespace>, or single table references. "
                     "One line per table (VERIFIED, STALE, COMPACTED, UNATTESTED, NOT VERIFIED, ERROR), a summary "
                     "with a count per category; exit 0 when every table verified, 1 when any did not, 2 when any "
                     "could not be checked.")
        p.add_argument("targets", nargs="*", metavar="TARGET",
                       help="a folder, a table, iceberg://<catalog>[/<namespace>]; with --catalog, a namespace or a "
                       "<namespace>.<table> (none: the whole catalog)")
        _add_level(p, "schema, files or bytes (default: bytes where output hashes exist)")
        _add_json(p, "print one JSON object with every table's report (same as --format json)")
        p.add_argument("--format", choices=("text", "json", "csv", "table"), default=None,
                       help="text (default: one line per table as it is checked), json, csv (one row per table version "
                       "checked, the --to columns) or table (aligned columns)")
        p.add_argument("--to", metavar="PATH", help="also append one row per table version checked to the Delta table "
                       "at PATH (created if absent; readable by any Delta engine; docs/audit.md), in batches as the "
                       "audit goes")
        p.add_argument("--no-branches", action="store_true",
                       help="Iceberg: check main's head of each table only (its other branches, which readers of "
                       "ns.t.branch_<b> read, are then named in a note, not checked, and its tags not at all; by "
                       "default each branch and each tag at another snapshot has a line)")
        p.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="tables checked at once (default: the number of CPUs, at most 8; 1: one after another); "
                       "the report is the same, in the same order")
        p.add_argument("--progress", action="store_true",
                       help="show progress on stderr even when it is not a terminal (a line every few seconds, for "
                       "logs); on a terminal it is always shown")
        _add_trust(p, " on every table")
        _add_table_options(p, version=False)
        _add_spark_options(p)
        p.add_argument("--spark-catalog", action="append", metavar="CATALOG[.NAMESPACE]",
                       help="also audit every table and view a Spark session's catalogs name, as a reader of each name "
                       "reads it ('*': every catalog the session is configured with; repeatable); the session has "
                       "Delta and Iceberg set up, the configuration of SPARK_CONF_DIR/spark-defaults.conf and "
                       "--spark-conf (docs/spark.md, \"Auditing Spark's catalogs\")")
        p.add_argument("--spark-conf", action="append", metavar="KEY=VALUE",
                       help="with --spark-catalog: a Spark setting of its session (repeatable), e.g. "
                       "spark.sql.catalog.prod=org.apache.iceberg.spark.SparkCatalog")
        _add_catalog(p)

    if want("record"):
        p = _command(sub, "record", "record:cmd_record", "TABLE", help="attest a table's latest data version",
                     description="Attest the latest data version of TABLE (written by any engine). Exit 1 "
                     "(superseded) when another commit keeps the attestation from being in force.")
        p.add_argument("--model", required=True, help="the model / target name (subject.model)")
        p.add_argument("--sql", help="the SQL text of the program")
        p.add_argument("--sql-file", metavar="F", help="a file holding the SQL text of the program")
        p.add_argument("--program-json", metavar="F", help="a producer's typed JSON program representation")
        p.add_argument("--program-hash", metavar="HEX", help="a program identity computed elsewhere")
        p.add_argument("--dialect", help="SQL dialect (sqlglot name, e.g. spark, duckdb, postgres)")
        p.add_argument("--input", action="append", metavar="REF",
                       help="an upstream table the run read: Delta path[@VERSION] or iceberg://...[@SNAPSHOT]")
        p.add_argument("--run-id", help="the producer's run identifier (subject.run_id)")
        p.add_argument("--detached", action="store_true",
                       help="write no table commit: the attestation goes to a pointer file beside the sidecar (tables "
                       "with concurrent writers, or writer features an attestation commit cannot honour)")
        p.add_argument("--replace", action="store_true",
                       help="allow replacing an attestation of the same version that recorded more evidence "
                       "(observed inputs) than this one")
        p.add_argument("--sign-key", metavar="KEY",
                       help="sign the attestation with this private key file (default: $ATTEST_SIGNING_KEY; an "
                       "encrypted key's password comes from $ATTEST_SIGNING_KEY_PASSWORD). docs/signing.md")
        p.add_argument("--branch", metavar="NAME",
                       help="Iceberg: attest the head of this branch (write-audit-publish) instead of main's")
        p.add_argument("--no-retain-tag", action="store_true",
                       help="Iceberg: do not move the retention tag recipe-attest (with --branch B: "
                       "recipe-attest@B) to the attestation's snapshot (expiry may then free the attested files, and "
                       "a version whose history expired is unattested; docs/iceberg.md)")
        p.add_argument("--openlineage-events", action="append", metavar="FILE",
                       help="OpenLineage events (JSON lines, e.g. the file transport of the openlineage-spark "
                       "listener): their input datasets become observed inputs, strong when they resolve to an "
                       "attested table version (repeatable; docs/lineage.md)")
        p.add_argument("--openlineage", action="store_true",
                       help="emit one OpenLineage RunEvent for the attestation through OpenLineage's own transport "
                       "configuration (openlineage.yml, OPENLINEAGE_* variables); also on with ATTEST_OPENLINEAGE=1")
        _add_json(p, "print the result as JSON")
        _add_table_options(p, version=False)
        _add_catalog(p)

    if want("publish"):
        p = _command(sub, "publish", "publish:cmd_publish", "iceberg://CATALOG/NS.TABLE",
                     help="Iceberg write-audit-publish: fast-forward main to a branch that verifies",
                     description="Verify the head of BRANCH of an Iceberg table (its attestation, at --level, under "
                     "--key/--policy) and only then fast-forward main to it. Refused (exit 1) when main moved since "
                     "the branch forked (not_fast_forward) or the branch head does not verify.")
        p.add_argument("--branch", required=True, metavar="NAME", help="the branch the job wrote and attested")
        _add_level(p, "schema, files or bytes (default: bytes where the attestation names files)")
        _add_trust(p)
        _add_json(p, "print the result as JSON")
        _add_catalog(p)

    if want("release-tags"):
        p = _command(sub, "release-tags", "tags:cmd_release_tags", "iceberg://CATALOG/NS.TABLE",
                     help="Iceberg: remove the retention tags of branches the table no longer has",
                     description="Remove each retention tag recipe-attest@BRANCH whose branch was dropped (it would "
                     "keep its snapshot and files from every expiry; docs/iceberg.md). Every attestation commit "
                     "does it too; run this in a maintenance job before expire_snapshots. Only tags recipe-attest "
                     "set are removed.")
        _add_json(p, "print the result as JSON")
        _add_catalog(p)

    if want("program-hash"):
        from attest.cli.program_hash import add_parser as add_program_hash

        add_program_hash(sub)

    if want("catalog-config"):
        from attest.cli.catalog_config import add_parser as add_catalog_config

        add_catalog_config(sub)
    return parser


def json_format(arguments: list[str]) -> bool:
    """``--format json`` (or ``--format=json``) asks for JSON on every path, as ``--json`` does."""
    pairs = itertools.pairwise(arguments)
    return "--format=json" in arguments or any(a == "--format" and b == "json" for a, b in pairs)


def parse(arguments: list[str]) -> argparse.Namespace:
    """Parse a command line; a bad one prints one coded line (one JSON object with --json / --format json) and
    exits 2. ``attest`` alone prints the help and exits 2 (no command is a usage error, argparse's exit code for
    those; the help goes to stdout, where ``attest | less`` reads it). An unknown option is refused with its command's
    usage and the closest option it has."""
    if not arguments:
        build_parser().print_help(sys.stdout)
        sys.exit(2)
    _Parser.json_errors = "--json" in arguments or json_format(arguments)
    parser = build_parser(command_of(arguments))
    args, extras = parser.parse_known_args(arguments)
    if extras:
        _unrecognized(parser, args, extras)
    return args


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser | None = action.choices.get(command or "")
            return found
    return None


def _closest(word: str, choices: list[str]) -> str:
    """"; did you mean X?" for the choice closest to ``word``, or ""."""
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> NoReturn:
    """Arguments the command does not take: said by the command's own parser (its usage, not the top level's), with
    the closest option it has (``--levle`` → ``--level``, ``-l`` / ``-level`` → ``--level``)."""
    sub = _subparser(parser, getattr(args, "command", None)) or parser
    message = f"unrecognized arguments: {' '.join(extras)}"
    option = next((e.partition("=")[0] for e in extras if e.startswith("--") or _is_short(e)), None)
    if option is not None:
        message += _option_hint(option, sub)
    sub.error(message)


def command_of(arguments: list[str]) -> str | None:
    """The command a line names: its first word that is not an option (the top level has only --help / --version)."""
    return next((a for a in arguments if not a.startswith("-")), None)
