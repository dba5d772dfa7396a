"""``attest catalog-config W``: the pyiceberg configuration of the Iceberg catalog ``attest.spark.local_session(W)``
sets up, so pyiceberg — and with it ``attest verify --catalog iceberg ns.t`` — sees the tables Spark wrote there.

Printed as ``.pyiceberg.yaml`` content (default), as shell exports (``--format env``: ``eval "$(attest catalog-config
W --format env)"`` is the one step), or written with ``--write`` to ``W/.pyiceberg.yaml`` (pyiceberg reads it with
``PYICEBERG_HOME=W``). The properties are carriers.spark.session.pyiceberg_catalog_properties, the ones the Spark
session's JDBC catalog shares (same sqlite file, same warehouse, schema version V1)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from attest.errors import AttestError, Code, InvalidArgumentError
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.cli.output import Output

__all__ = ["add_parser", "catalog_properties", "cmd_catalog_config", "env_text", "yaml_text"]

YAML_NAME = ".pyiceberg.yaml"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("catalog-config", help="print the pyiceberg configuration of attest.spark.local_session(W)'s "
                       "Iceberg catalog", description="Print the pyiceberg configuration (.pyiceberg.yaml, or shell "
                       "exports with --format env) of the Iceberg catalog attest.spark.local_session(W) sets up, so "
                       "that `attest ... --catalog iceberg ns.table` reads the tables Spark wrote there.")
    p.add_argument("warehouse", metavar="W", help="the warehouse folder given to attest.spark.local_session")
    p.add_argument("--name", default="iceberg", metavar="NAME",
                   help="the catalog's name (local_session's iceberg_catalog; default iceberg)")
    p.add_argument("--format", choices=("yaml", "env"), default="yaml",
                   help="yaml (.pyiceberg.yaml content, default) or env (export lines for a shell's eval)")
    p.add_argument("--write", action="store_true", help=f"write W/{YAML_NAME} (never overwrites another one); "
                   "pyiceberg reads it with PYICEBERG_HOME=W")
    p.add_argument("--json", action="store_true", help="print the properties as one JSON object")
    p.set_defaults(func="catalog_config:cmd_catalog_config")


def catalog_properties(warehouse: str | Path) -> dict[str, str]:
    """pyiceberg's properties for the catalog of ``local_session(warehouse)`` (type sql on its sqlite file)."""
    from carriers.spark.session import pyiceberg_catalog_properties

    return pyiceberg_catalog_properties(warehouse)


def _check_name(name: str) -> None:
    if not name or not all(c.isascii() and (c.isalnum() or c in "_-") for c in name):
        raise InvalidArgumentError(f"--name {name!r}: a catalog name of letters, digits, '_' and '-'")


def yaml_text(name: str, properties: dict[str, str]) -> str:
    """``.pyiceberg.yaml`` content naming one catalog (values quoted as YAML strings: paths may hold ':' or '#')."""
    import json

    lines = ["catalog:", f"  {name}:"]
    lines += [f"    {key}: {json.dumps(value)}" for key, value in properties.items()]
    return "\n".join(lines)


def env_text(name: str, properties: dict[str, str]) -> str:
    """The same as ``PYICEBERG_CATALOG__<NAME>__<KEY>`` exports (pyiceberg's environment form). pyiceberg reads every
    '_' of a variable's name as '-': ``schema_version`` cannot be spelt there and is left out (pyiceberg detects an
    existing catalog's schema version itself), and a catalog name with '_' is refused."""
    if "_" in name:
        raise InvalidArgumentError(f"--name {name}: pyiceberg reads '_' in a variable's name as '-', so this catalog "
                                   "cannot be named by variables; use the yaml form (--write)")
    prefix = f"PYICEBERG_CATALOG__{name.upper().replace('-', '_')}__"
    return "\n".join(f"export {prefix}{key.upper()}={shlex.quote(value)}" for key, value in properties.items()
                     if "_" not in key)


@record
class CatalogConfigResult:
    name: str
    properties: dict[str, str]
    format: str
    written: str | None = None
    exit_code: int = 0

    def to_json(self) -> Any:
        return {"catalog": self.name, "properties": self.properties, "written": self.written}

    def human(self) -> str:
        if self.format == "env":
            return env_text(self.name, self.properties)
        return yaml_text(self.name, self.properties)

    @property
    def stderr_text(self) -> str:
        if self.written is None:
            return ""
        return f"wrote {self.written}; pyiceberg reads it with PYICEBERG_HOME={Path(self.written).parent}"


def cmd_catalog_config(args: argparse.Namespace, out: Output) -> CatalogConfigResult:
    _check_name(args.name)
    root = Path(args.warehouse).expanduser()
    if not root.is_dir():
        raise AttestError(f"{args.warehouse}: no such folder (the warehouse given to local_session)",
                          code=Code.INVALID_ARGUMENT)
    properties = catalog_properties(root)
    if args.format == "env":
        env_text(args.name, properties)  # a name variables cannot spell: refused before anything is written
    written = None
    if args.write:
        target = root.resolve() / YAML_NAME
        content = yaml_text(args.name, properties) + "\n"
        try:
            if target.is_symlink() or (target.exists() and target.read_text("utf-8") != content):
                raise AttestError(f"{target} exists with other content; not overwritten", code=Code.INVALID_ARGUMENT)
            if not target.exists():
                target.write_text(content, "utf-8")
        except OSError as exc:
            raise AttestError(f"{target}: cannot write ({exc.strerror})", code=Code.INVALID_ARGUMENT) from exc
        written = str(target)
    return CatalogConfigResult(args.name, properties, args.format, written)
