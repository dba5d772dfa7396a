"""The metadata-only commit keeping a format-v3 detached attestation in a SQL catalog (pyiceberg ``SqlCatalog``: sqlite
or any SQLAlchemy URL): carriers/iceberg/json_keep.py's steps, the pointer being the catalog row's
``iceberg_tables.metadata_location``, swapped with the compare-and-swap pyiceberg's ``SqlCatalog.commit_table`` makes
(the same ORM table and conditions, parameterised by SQLAlchemy): 0 rows updated is a concurrent commit,
``KeepRaced``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from carriers.iceberg.json_keep import JsonKeeper

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["SqlKeeper", "sql_keeper"]


def sql_keeper(table: Table) -> SqlKeeper | None:
    """A ``detached_keeper`` for a table of a pyiceberg ``SqlCatalog`` (None: another catalog)."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlKeeper(table) if isinstance(table.catalog, SqlCatalog) else None


class SqlKeeper(JsonKeeper):
    """Commits a ``DetachedKeep`` to a SQL catalog's table at the JSON level (carriers/iceberg/json_keep.py)."""

    def __init__(self, table: Table, *, before_swap: Callable[[str], None] | None = None) -> None:
        from pyiceberg.catalog import Catalog
        from pyiceberg.catalog.sql import SqlCatalog

        super().__init__(table, before_swap=before_swap)
        catalog = table.catalog
        assert isinstance(catalog, SqlCatalog)
        self.catalog = catalog
        identifier = table.name()
        # The row's keys, spelled as SqlCatalog.commit_table spells them.
        self.namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        self.name = Catalog.table_name_from(identifier)

    # ---- the catalog row --------------------------------------------------------------------------------------------
    def _what(self) -> str:
        return f"the catalog pointer of {self.namespace}.{self.name} (catalog {self.catalog.name})"

    def _where(self) -> tuple[Any, ...]:
        from pyiceberg.catalog.sql import IcebergTables

        return (IcebergTables.catalog_name == self.catalog.name, IcebergTables.table_namespace == self.namespace,
                IcebergTables.table_name == self.name)

    def pointer(self) -> str:
        """The metadata location the catalog row names now."""
        from pyiceberg.catalog.sql import IcebergTables
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        with Session(self.catalog.engine) as session:
            found = session.execute(select(IcebergTables.metadata_location).where(*self._where())).scalar()
        if not isinstance(found, str) or not found:
            from attest.errors import TableNotFoundError

            raise TableNotFoundError(f"{self._what()}: no such table in the catalog")
        return found

    def _swap(self, base: str, location: str) -> bool:
        """The compare-and-swap of ``SqlCatalog.commit_table`` (pyiceberg 0.12): the row updated only while it
        still names ``base``; False when it does not (0 rows). Dialects without a reliable row count: the row
        locked (``SELECT … FOR UPDATE``) and changed, as pyiceberg does there."""
        from pyiceberg.catalog.sql import IcebergTables
        from sqlalchemy import update
        from sqlalchemy.exc import NoResultFound
        from sqlalchemy.orm import Session

        with Session(self.catalog.engine) as session:
            if self.catalog.engine.dialect.supports_sane_rowcount:
                stmt = (update(IcebergTables).where(*self._where(), IcebergTables.metadata_location == base)
                        .values(metadata_location=location, previous_metadata_location=base))
                if session.execute(stmt).rowcount < 1:  # type: ignore[attr-defined]
                    return False
            else:
                try:
                    row = (session.query(IcebergTables).with_for_update(of=IcebergTables)
                           .filter(*self._where(), IcebergTables.metadata_location == base).one())
                except NoResultFound:
                    return False
                row.metadata_location = location
                row.previous_metadata_location = base
            session.commit()
        return True
