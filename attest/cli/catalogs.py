"""``--catalog NAME``, ``--uri URI`` and ``--warehouse W`` on every command that takes a table, spelt as pyiceberg's own
CLI spells them: ``attest verify --catalog prod sales.orders`` is ``attest verify iceberg://prod/sales.orders``, and
``--uri`` / ``--warehouse`` override that catalog's configured properties (carriers.iceberg.catalog_options) for the
whole command. As in pyiceberg, ``--uri`` without ``--catalog`` is about pyiceberg's default catalog (``default``)."""

from __future__ import annotations

import argparse
import contextlib

from attest.errors import InvalidArgumentError

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["add_catalog_options", "audit_targets", "catalog_for", "scope"]

_ICEBERG = "iceberg://"


def add_catalog_options(p: argparse.ArgumentParser) -> None:
    """The three options, on a command's parser."""
    p.add_argument("--catalog", metavar="NAME", help="the pyiceberg catalog (.pyiceberg.yaml, PYICEBERG_CATALOG__"
                   "<NAME>__*) the table is in: TABLE is then <namespace>.<table>, as in pyiceberg")
    p.add_argument("--uri", metavar="URI", help="the catalog's uri (REST http(s)://, sqlite:///..., thrift://), over "
                   "its configuration; without --catalog, of pyiceberg's default catalog")
    p.add_argument("--warehouse", metavar="W", help="the catalog's warehouse, over its configuration")


def _overridden(args: argparse.Namespace) -> dict[str, str]:
    return {key: value for key in ("uri", "warehouse") if (value := getattr(args, key, None)) is not None}


def catalog_for(args: argparse.Namespace, text: str | None) -> str | None:
    """The catalog a typed table ``text`` is to be read in: ``--catalog``; with only ``--uri`` / ``--warehouse``, the
    one an ``iceberg://`` reference names or pyiceberg's default; else None (the reference says it all)."""
    catalog: str | None = getattr(args, "catalog", None)
    if catalog is not None or not _overridden(args):
        return catalog
    if text is not None and text.startswith(_ICEBERG):
        return None
    from carriers.iceberg.catalog_options import default_catalog_name

    return default_catalog_name()


def _scoped_catalog(args: argparse.Namespace) -> str:
    catalog = catalog_for(args, None)
    if getattr(args, "catalog", None) is None:
        texts = [t for t in [getattr(args, "target", None), *(getattr(args, "targets", None) or [])] if t]
        named = {t[len(_ICEBERG):].partition("/")[0] for t in texts if t.startswith(_ICEBERG)}
        if len(named) > 1:
            raise InvalidArgumentError(f"--uri / --warehouse would apply to {len(named)} catalogs "
                                       f"({', '.join(sorted(named))}): name one with --catalog")
        if named:
            catalog = named.pop()
    assert catalog is not None  # catalog_for gives one whenever an override is given
    return catalog


@contextlib.contextmanager
def scope(args: argparse.Namespace) -> Iterator[None]:
    """The command runs with its ``--uri`` / ``--warehouse`` over its catalog's configuration."""
    properties = _overridden(args)
    if not properties:
        yield
        return
    for key, value in properties.items():
        if not value or value.strip() != value:
            raise InvalidArgumentError(f"--{key} is empty or has surrounding spaces")
    from urllib.parse import urlparse

    from attest.redact import register_secrets

    with contextlib.suppress(ValueError):  # postgresql://user:password@host/db: the password is never printed
        register_secrets([p for p in (urlparse(properties.get("uri", "")).password,) if p])
    from carriers.iceberg.catalog_options import overriding

    with overriding(_scoped_catalog(args), properties):
        yield


def audit_targets(args: argparse.Namespace) -> list[str]:
    """``attest audit``'s targets: with ``--catalog`` (or ``--uri`` alone), each is a namespace or a
    ``<namespace>.<table>`` of that catalog, and none is the whole catalog."""
    targets: list[str] = list(args.targets)
    if getattr(args, "catalog", None) is None and targets and all(t.startswith(_ICEBERG) for t in targets):
        # Each names its catalog; --uri / --warehouse apply to the one they all name (``scope`` refuses two). Two
        # tables of one catalog were refused as "--catalog default and … name two catalogs".
        return targets
    catalog = catalog_for(args, targets[0] if len(targets) == 1 else None)
    if catalog is None:
        if not targets and getattr(args, "spark_catalog", None):
            return []  # the Spark session's catalogs alone (attest/cli/audit.py)
        if not targets:
            raise InvalidArgumentError("audit needs a TARGET (a folder, a table, iceberg://<catalog>), --catalog "
                                       "NAME for a whole catalog, or --spark-catalog for a Spark session's")
        return targets
    out = []
    for target in targets or [""]:
        if target.startswith(_ICEBERG):
            if target[len(_ICEBERG):].partition("/")[0] != catalog:
                raise InvalidArgumentError(f"--catalog {catalog} and {target!r} name two catalogs: give one")
            out.append(target)
        elif "/" in target or "\\" in target or target.startswith(".") or target.endswith("."):
            raise InvalidArgumentError(f"with --catalog {catalog}, {target!r} must be a namespace or a "
                                       "<namespace>.<table> (Delta folders are audited without --catalog)")
        else:
            out.append(f"{_ICEBERG}{catalog}/{target}" if target else f"{_ICEBERG}{catalog}")
    return out
