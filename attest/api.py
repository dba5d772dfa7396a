"""The Python entry: ``attest.verify``, ``attest.record``, ``attest.show`` and ``attest.lineage``, taking what the
command line takes and returning what it prints from.

A table is any of: a path or URI of a Delta table (``"lake/orders"``, ``"s3://bucket/orders"``), an
``iceberg://<catalog>/<namespace>.<table>`` reference, a ``<namespace>.<table>`` identifier with ``catalog=`` (as
``--catalog``), with ``uri=`` / ``warehouse=`` over the catalog's configuration (as ``--uri`` / ``--warehouse``), a
``carriers.refs.TableRef``, or an engine's own table object: a ``deltalake.DeltaTable`` (its location and the version
it holds) or a pyiceberg ``Table`` (its catalog and identifier, and the snapshot it holds), read through a catalog built
from that catalog's own properties. ``version=`` / ``snapshot_id=`` pick another version, as ``--version`` /
``--snapshot-id`` do; ``"lake/orders@4"`` works too.

::

    import attest

    report = attest.verify("lake/orders", level="bytes")     # an attest.verify.report.Report
    print(report.verdict(), report.passed)
    attest.record("lake/orders", model="orders", sql=sql_text, dialect="spark", inputs=["lake/raw_orders"])
    attest.show("lake/orders")                                # the standalone manifest (a dict), None: unattested
    print("\\n".join(attest.lineage("lake/orders").lines()))

``attest.verify`` (a package), ``attest.record`` and ``attest.lineage`` (modules) are callable: each call is the
function of the same name here. Type checkers see the functions of this module (``from attest.api import verify``).
Failures are ``attest.errors.AttestError`` with the codes of docs/errors.md (``err.code``); nothing here prints.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence

from attest.errors import AttestError, Code, InvalidArgumentError

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.lineage import LineageNode
    from attest.signing.keys import Signer
    from attest.signing.policy import TrustPolicy
    from attest.verify.report import Report
    from carriers.base import WriteResult
    from carriers.core import AttestedTable
    from carriers.refs import TableRef

__all__ = ["lineage", "record", "show", "verify"]

_LEVELS = ("schema", "files", "bytes")
_ICEBERG = "iceberg://"

# pyiceberg catalog classes and the `type` that builds them again from their properties.
_CATALOG_TYPES = {"SqlCatalog": "sql", "RestCatalog": "rest", "HiveCatalog": "hive", "GlueCatalog": "glue",
                  "DynamoDbCatalog": "dynamodb", "InMemoryCatalog": "in-memory", "BigQueryMetastoreCatalog": "bigquery"}


def verify(table: Any, *, level: str | None = None, version: str | int | None = None,
           snapshot_id: str | int | None = None, catalog: str | None = None, uri: str | None = None,
           warehouse: str | None = None, storage_options: Mapping[str, str] | None = None, policy: Any = None,
           allow_external_files: bool = False, program_sql: str | None = None, dialect: str | None = None) -> Report:
    """Verify a table version (``attest verify TABLE``): the Report the command prints. ``policy``: a TrustPolicy,
    a PublicKey or a key / policy file (``--key`` / ``--policy``); ``program_sql`` (with ``dialect``): fail with
    ``program_mismatch`` unless the attestation's program is that SQL (``--program-sql``)."""
    _level(level)
    trust = _policy(policy)
    expected = _expected(program_sql, dialect)
    with _opened(table, version, snapshot_id, catalog, uri, warehouse, storage_options,
                 allow_external=allow_external_files) as (ref, carrier):
        from attest.verify.table import verify_state

        state = carrier.state(ref.version)
        report = verify_state(state, carrier, level=level, policy=trust)  # type: ignore[arg-type]
        if expected is not None:
            from attest.verify.program import check_program

            report = check_program(report, expected, state, dialect)
        if ref.format == "iceberg" and ref.catalog is not None:
            # As the command: a view of the table's name (Trino resolves views first) fails the name's verdict.
            from carriers.discovery import views_named_as

            for twin in views_named_as(ref):
                report.fail(twin.code, twin.message, twin.path)
        return report


def record(table: Any, *, model: str, sql: str | None = None, dialect: str | None = None,
           program_json: Any = None, program_hash: str | None = None, inputs: Sequence[Any] = (),
           run_id: str | None = None, catalog: str | None = None, uri: str | None = None,
           warehouse: str | None = None, storage_options: Mapping[str, str] | None = None, detached: bool = False,
           replace: bool = False, signer: Signer | None = None) -> WriteResult:
    """Attest the table's latest data version (``attest record``): exactly one of ``sql`` (with ``dialect``),
    ``program_json`` (a JSON value) or ``program_hash``; ``inputs``: the upstream tables the run read, each
    anything :func:`verify` takes (``"lake/raw@3"`` pins a version). Returns the carrier's WriteResult; its
    ``warnings`` (each ``"<code>: <message>"``, also logged) say what to act on although the attestation is written:
    ``not_kept``, an Iceberg attestation the table metadata does not keep (docs/maintenance.md); ``input_weakened``,
    an input whose attestation does not hold, recorded heuristic (docs/identities.md)."""
    given = [x for x in (sql, program_json, program_hash) if x is not None]
    if len(given) != 1:
        raise InvalidArgumentError("give exactly one of sql=, program_json=, program_hash=")
    from attest.identity.program import program_identity_json, program_identity_sql

    if sql is not None:
        identity = program_identity_sql(sql, dialect)
    elif program_json is not None:
        identity = program_identity_json(program_json)
    else:
        identity = str(program_hash)
        if len(identity) != 64 or any(c not in "0123456789abcdef" for c in identity):
            raise InvalidArgumentError("program_hash must be 64 lowercase hex characters")
    observed = []
    said: list[str] = []  # the inputs' warnings (input_weakened), returned with the record's
    for upstream in inputs:
        with _opened(upstream, None, None, None, None, None, storage_options) as (up_ref, up_carrier):
            got, warned = up_carrier.observe_warned(up_ref.version)
            observed.append(got)
            said.extend(warned)
    with _opened(table, None, None, catalog, uri, warehouse, storage_options, detached=detached,
                 latest=True) as (ref, carrier):
        if ref.version is not None:
            raise InvalidArgumentError(f"record attests the table's latest data {ref.noun}; drop the @{ref.version}")
        result = carrier.record(model=model, program_hash=identity, inputs=observed, run_id=run_id,
                                dialect=dialect, replace=replace, signer=signer)
    if not said:
        return result
    import dataclasses

    return dataclasses.replace(result, warnings=(*said, *result.warnings))


def show(table: Any, *, version: str | int | None = None, snapshot_id: str | int | None = None,
         catalog: str | None = None, uri: str | None = None, warehouse: str | None = None,
         storage_options: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The standalone manifest a table version carries (``attest show``), None when it carries none."""
    from attest.model import Manifest

    with _opened(table, version, snapshot_id, catalog, uri, warehouse, storage_options) as (ref, carrier):
        attestation = carrier.read(ref.version)
    if attestation is None:
        return None
    document = attestation.document
    with contextlib.suppress(AttestError):
        document = Manifest.from_dict(document).to_dict()
    return dict(document)


def lineage(table: Any, *, depth: int = 8, level: str = "files", version: str | int | None = None,
            snapshot_id: str | int | None = None, catalog: str | None = None, uri: str | None = None,
            warehouse: str | None = None, storage_options: Mapping[str, str] | None = None,
            policy: Any = None) -> LineageNode:
    """The lineage tree of a table version (``attest lineage``): each upstream version its attestation observed,
    verified at ``level``. ``.lines()`` is the text the command prints, ``.graph()`` what pictures are drawn from."""
    _level(level)
    if depth < 0:
        raise InvalidArgumentError(f"depth must be 0 or more, got {depth}")
    trust = _policy(policy)
    from carriers.lineage import walk

    with _referenced(table, version, snapshot_id, catalog, uri, warehouse) as ref:
        return walk(ref, version=ref.version, depth=depth, level=level,  # type: ignore[arg-type]
                    storage_options=dict(storage_options or {}), policy=trust)


# ---- resolving what a caller hands over ----------------------------------------------------------------------------
def _level(level: str | None) -> None:
    if level is not None and level not in _LEVELS:
        raise InvalidArgumentError(f"level {level!r}: one of schema, files, bytes")


def _policy(policy: Any) -> TrustPolicy | None:
    if policy is None:
        return None
    from attest.signing.policy import load_policy

    return load_policy(policy)


def _expected(program_sql: str | None, dialect: str | None) -> tuple[str, str] | None:
    if program_sql is None:
        if dialect is not None:
            raise InvalidArgumentError("dialect= applies with program_sql=")
        return None
    from attest.identity.program import program_identity_sql

    return program_sql, program_identity_sql(program_sql, dialect)


@contextlib.contextmanager
def _referenced(table: Any, version: str | int | None, snapshot_id: str | int | None, catalog: str | None,
                uri: str | None, warehouse: str | None, *, latest: bool = False) -> Iterator[TableRef]:
    """The TableRef ``table`` stands for, with its catalog's overrides in force while the caller uses it."""
    from carriers.iceberg.catalog_options import default_catalog_name, overriding
    from carriers.refs import TableRef, parse_ref

    overrides = {k: v for k, v in (("uri", uri), ("warehouse", warehouse)) if v is not None}
    held: str | None = None  # the version an engine's table object holds
    if isinstance(table, TableRef):
        ref = table
    elif isinstance(table, (str, os.PathLike)):
        text = os.fspath(table)
        if not isinstance(text, str):
            raise TypeError("a table path must be text, not bytes")
        name = catalog if catalog is not None or not overrides or text.startswith(_ICEBERG) else default_catalog_name()
        ref = parse_ref(text, catalog=name)
    else:
        ref, held, engine_overrides = _engine_table(table)
        if engine_overrides is not None:
            if overrides:
                raise InvalidArgumentError("uri= / warehouse= apply to a table named by text; a pyiceberg Table brings "
                                           "its catalog")
            overrides = engine_overrides
    if catalog is not None and ref.format == "iceberg" and ref.catalog != catalog:
        raise InvalidArgumentError(f"catalog={catalog!r} and {ref} name two catalogs: give one")
    if version is not None:
        ref = ref.with_version(str(version), option="--version")
    if snapshot_id is not None:
        ref = ref.with_version(str(snapshot_id), option="--snapshot-id")
    if held is not None and ref.version is None and not latest:
        ref = ref.with_version(held)
    if not overrides:
        yield ref
        return
    if ref.format != "iceberg" or ref.catalog is None:
        raise InvalidArgumentError("uri= / warehouse= apply to Iceberg catalogs; a Delta table is named by its path")
    with overriding(ref.catalog, overrides):
        yield ref


@contextlib.contextmanager
def _opened(table: Any, version: str | int | None, snapshot_id: str | int | None, catalog: str | None,
            uri: str | None, warehouse: str | None, storage_options: Mapping[str, str] | None, *,
            detached: bool = False, allow_external: bool = False,
            latest: bool = False) -> Iterator[tuple[TableRef, AttestedTable]]:
    from carriers.refs import open_table

    options = dict(storage_options or {})
    if options:
        from attest.redact import register_secrets
        from carriers.storage.options import option_secrets

        register_secrets(option_secrets(options))  # no message may echo a credential
    with _referenced(table, version, snapshot_id, catalog, uri, warehouse, latest=latest) as ref:
        yield ref, open_table(ref, storage_options=options, detached=detached, allow_external=allow_external)


def _engine_table(table: Any) -> tuple[TableRef, str | None, dict[str, str] | None]:
    """An engine's table object: (its reference, the version it holds, the catalog properties to open it with)."""
    from carriers.refs import TableRef

    kind = f"{type(table).__module__}.{type(table).__qualname__}"
    if kind.startswith("deltalake.") and hasattr(table, "table_uri") and hasattr(table, "version"):
        return TableRef("delta", str(table.table_uri).rstrip("/") or "/"), str(table.version()), None
    if kind.startswith("pyiceberg.") and callable(getattr(table, "name", None)) and hasattr(table, "catalog"):
        cat = table.catalog
        properties = {str(k): str(v) for k, v in dict(getattr(cat, "properties", {}) or {}).items()}
        if "type" not in properties and "py-catalog-impl" not in properties:
            kind_name = _CATALOG_TYPES.get(type(cat).__name__)
            if kind_name is None:
                raise AttestError(f"a pyiceberg Table of a {type(cat).__name__}: name it as iceberg://<catalog>/"
                                  "<namespace>.<table> with its catalog configured for pyiceberg",
                                  code=Code.TABLE_REFERENCE_INVALID)
            properties["type"] = kind_name
        snapshot = table.current_snapshot()
        held = None if snapshot is None else str(snapshot.snapshot_id)
        return TableRef("iceberg", ".".join(table.name()), catalog=str(cat.name)), held, properties
    raise TypeError(f"attest takes a table as a path or URI, an iceberg:// reference, a <namespace>.<table> with "
                    f"catalog=, a deltalake.DeltaTable or a pyiceberg Table; not a {kind}")
