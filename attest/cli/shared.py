"""What the commands share: reading the files and tables they are given, the storage options, the trust
policy, the output format and ``--spark``. Heavy libraries are imported inside the function that needs them."""

from __future__ import annotations

import argparse
import contextlib
import sys

from attest.errors import AttestError, Code, InvalidArgumentError

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from attest.signing.policy import TrustPolicy
    from attest.verify.report import Report
    from attest.verify.table import FileHasher
    from carriers.core import AttestedTable
    from carriers.refs import TableRef
    from carriers.spark.distributed import ExecutorHasher, SessionOnDemand


# ---- exit codes ------------------------------------------------------------------------------------------------
# Failures of a run that are verdicts about the table, not unreadable input: exit 1.
NOT_DONE = frozenset({Code.SUPERSEDED, Code.COMMIT_CONFLICT, Code.EVIDENCE_DROPPED, Code.NOT_FAST_FORWARD,
                      Code.NOTHING_TO_CARRY, Code.ALREADY_ATTESTED, Code.CARRY_FORWARD_UNVERIFIED})


# ---- shared argument handling ----------------------------------------------------------------------------------
def read_input(name: str, *, regular_only: bool = False) -> bytes:
    """The bytes of a file or stdin, at most one byte more than any JSON document accepted (the parser then refuses
    it as too large, instead of this reading gigabytes). ``regular_only``: a file the user did not name themselves (a
    carrier directory's manifest.json) must be a regular file — a FIFO there would block the command forever, a link
    to /dev/zero fill the limit — while a named one may be a pipe (``attest verify <(...)``)."""
    from attest.model import MAX_DOCUMENT_BYTES

    limit = MAX_DOCUMENT_BYTES + 1
    if name == "-":
        return sys.stdin.buffer.read(limit)
    try:
        return read_bounded(name, limit, regular_only=regular_only)
    except FileNotFoundError as exc:
        from attest.cli.mistakes import missing_file

        raise missing_file(name) from exc
    except IsADirectoryError as exc:
        raise AttestError(f"{name}: is a directory", code=Code.MANIFEST_MISSING) from exc
    except OSError as exc:
        raise AttestError(f"{name}: {exc.strerror}", code=Code.MANIFEST_MISSING) from exc


def read_argument_file(option: str, name: str) -> bytes:
    """The bytes of the file an option names (``--sql-file``, ``--program-json``): its errors name that option, never
    a manifest (a missing ``--sql-file`` said "no such manifest file (nor a Delta table)")."""
    from attest.model import MAX_DOCUMENT_BYTES

    if name == "-":
        return sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
    try:
        return read_bounded(name, MAX_DOCUMENT_BYTES + 1, regular_only=False)
    except OSError as exc:
        from attest.cli.mistakes import unreadable_argument_file

        raise unreadable_argument_file(option, name, exc) from exc


def read_bounded(name: str, limit: int, *, regular_only: bool) -> bytes:
    """Up to ``limit`` bytes of ``name``; with ``regular_only``, only a regular file (attest.hashing.read_regular:
    opened without blocking, checked on the descriptor)."""
    if regular_only:
        from attest.hashing import read_regular

        return read_regular(name, limit)
    with open(name, "rb") as handle:
        return handle.read(limit)


def storage_options(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in getattr(args, "storage_option", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            # Never echo the value: storage options carry credentials.
            raise InvalidArgumentError(f"--storage-option takes KEY=VALUE; got one without '=' ({len(item)} "
                                       "characters, not shown)")
        out[key] = value
    from attest.redact import register_secrets
    from carriers.storage.options import option_secrets

    register_secrets(option_secrets(out))  # before anything can fail: no message may echo a credential
    return out


def table_ref(args: argparse.Namespace, text: str | None = None) -> TableRef:
    """The command's table, parsed once with its version options."""
    from attest.cli.catalogs import catalog_for
    from carriers.refs import parse_ref

    typed = text if text is not None else args.target
    ref = parse_ref(typed, version=getattr(args, "version", None), snapshot_id=getattr(args, "snapshot_id", None),
                    catalog=catalog_for(args, typed))
    return on_branch(ref, getattr(args, "ref_branch", None))


def on_branch(ref: TableRef, branch: str | None) -> TableRef:
    """``ref`` at the head of ``--branch``'s branch (verify, show, lineage; record's write-audit-publish branch): read
    as ``attest audit`` reads the branch's line, as readers of ``ns.t.branch_<name>`` read it."""
    if branch is None:
        return ref
    if ref.format != "iceberg":
        raise InvalidArgumentError("--branch applies to Iceberg tables (Delta has no branches)")
    if ref.version is not None:  # "t@5 --branch b": two versions asked for
        raise InvalidArgumentError(f"{ref} names a snapshot; --branch names the branch whose head is checked: "
                                   "give one")
    if not branch:
        raise InvalidArgumentError("--branch needs a branch name")
    from attest.record import replace

    return replace(ref, branch=branch)


def open_ref(args: argparse.Namespace, ref: TableRef, *, detached: bool = False,
             allow_external: bool = False) -> AttestedTable:
    from carriers.refs import open_table

    return open_table(ref, storage_options=storage_options(args), detached=detached, allow_external=allow_external)



# ---- --spark (docs/distributed.md) --------------------------------------------------------------------------------
@contextlib.contextmanager
def spark_for(args: argparse.Namespace) -> Iterator[SessionOnDemand | None]:
    """The command's Spark session when --spark was given (started only once bytes are to be hashed), else None."""
    if getattr(args, "master", None) and not getattr(args, "spark", False) and not getattr(args, "spark_catalog", None):
        raise InvalidArgumentError("--master applies only with --spark (or audit's --spark-catalog)")
    if getattr(args, "spark", False) and getattr(args, "spark_catalog", None):
        # One SparkContext a process, and the two want different ones (a plain one for executors' hashing, one with
        # Delta, Iceberg and the user's catalogs): whichever started first would serve both.
        raise InvalidArgumentError("--spark and --spark-catalog cannot be given together: audit the Spark catalogs "
                                   "in a run of their own")
    if getattr(args, "spark_conf", None) and not getattr(args, "spark_catalog", None):
        raise InvalidArgumentError("--spark-conf applies only with --spark-catalog")
    if not getattr(args, "spark", False):
        spark_master(args)  # --spark-catalog's, checked before any table is
        yield None
        return
    spark_master(args)
    try:
        import pyspark  # noqa: F401  (the extra's presence, checked before any table is read)

        from carriers.spark.distributed import SessionOnDemand
    except ImportError as exc:
        raise AttestError("--spark needs the `spark` extra: pip install 'recipe-attest[spark]'",
                          code=Code.EXTRA_MISSING) from exc
    session = SessionOnDemand(args.master)
    try:
        yield session
    finally:
        session.stop()


def spark_master(args: argparse.Namespace) -> str | None:
    """``--master``, held to Spark's own rule (SparkSubmit) before its JVM starts and exits with a Java stack trace."""
    master: str | None = getattr(args, "master", None)
    if master is not None and not (master == "yarn" or master.startswith(("local", "spark", "k8s"))):
        raise InvalidArgumentError(f"--master {master!r} is not a Spark master: yarn, local[N], spark://HOST:PORT or "
                                   "k8s://URL")
    return master


def spark_settings(args: argparse.Namespace) -> dict[str, str]:
    """``--spark-conf KEY=VALUE`` pairs (the last of a key wins, as spark-submit's ``--conf``)."""
    out: dict[str, str] = {}
    for pair in getattr(args, "spark_conf", None) or []:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise InvalidArgumentError(f"--spark-conf {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def verify_with(carrier: AttestedTable, spark: SessionOnDemand | None, *, version: str | None, level: Any,
                progress: Any = None, policy: TrustPolicy | None = None, state: Any = None,
                hasher: FileHasher | None = None) -> Report:
    """verify_state on ``state`` (default: the carrier's state of ``version``), with the bytes hashed on Spark
    executors when ``spark`` is given (the same decision), else by ``hasher`` when given (the head start)."""
    from attest.verify.table import verify_state

    executors: ExecutorHasher | None = None
    if spark is not None:
        from carriers.spark.distributed import ExecutorHasher, executor_content

        content = executor_content(carrier, spark)  # installed before ``state`` when the caller built one
        assert isinstance(content.hasher, ExecutorHasher)
        hasher, executors = content, content.hasher
    report = verify_state(state if state is not None else carrier.state(version), carrier, level=level,
                          progress=progress, policy=policy, hasher=hasher)
    if executors is not None:
        from carriers.spark.distributed import executor_note

        note = executor_note(executors)
        if note is not None:
            report.notes.append(note)
    return report


def trust_policy(args: argparse.Namespace) -> TrustPolicy | None:
    """The TrustPolicy that --key or --policy names, or None; signing code is imported only when asked for."""
    if getattr(args, "key", None) is None and getattr(args, "policy", None) is None:
        return None
    from attest.signing.policy import TrustPolicy

    return TrustPolicy.from_public_key(args.key) if args.key is not None else TrustPolicy.load(args.policy)




def output_format(args: argparse.Namespace) -> str:
    """The output format: ``--format``, with ``--json`` as ``--format json`` (both at once must agree)."""
    if args.json and args.format not in (None, "json"):
        raise InvalidArgumentError(f"--json and --format {args.format} ask for two formats: give one")
    return "json" if args.json else str(args.format or "text")
