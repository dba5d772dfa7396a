"""The metadata-only commit keeping a format-v3 detached attestation in a Hive Metastore (pyiceberg ``HiveCatalog``):
carriers/iceberg/json_keep.py's steps, the pointer being the HMS table's ``metadata_location`` parameter, swapped as
pyiceberg's ``HiveCatalog.commit_table`` (and Java's ``HiveTableOperations``) swap it: under an exclusive HMS table
lock, the table read, its ``metadata_location`` checked to be the file we read (else ``KeepRaced``: another writer
committed), then ``alter_table`` with ``metadata_location`` and ``previous_metadata_location`` set, every other
parameter as read. Names reach the metastore only as thrift call arguments, never in a query text.

A lock the metastore does not grant within pyiceberg's own bound (the catalog's ``lock-check-retries``,
``lock-check-min-wait-time``, ``lock-check-max-wait-time``: 4 checks, about 14 s, by default) ends the keep with a
``commit_conflict`` error, not retried: another writer holds the table (a retry would wait as long again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attest.errors import CommitConflictError, TableNotFoundError
from carriers.iceberg.json_keep import JsonKeeper

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["HiveKeeper", "hive_keeper"]


def hive_keeper(table: Table) -> HiveKeeper | None:
    """A ``detached_keeper`` for a table of a pyiceberg ``HiveCatalog`` (None: another catalog, or pyiceberg's hive
    extra, thrift, not installed)."""
    try:
        from pyiceberg.catalog.hive import HiveCatalog
    except ImportError:  # no thrift: no table of this process can be a Hive one
        return None
    return HiveKeeper(table) if isinstance(table.catalog, HiveCatalog) else None


class HiveKeeper(JsonKeeper):
    """Commits a ``DetachedKeep`` to a Hive Metastore table at the JSON level (module docstring)."""

    def __init__(self, table: Table, *, before_swap: Callable[[str], None] | None = None) -> None:
        from pyiceberg.catalog.hive import HiveCatalog
        from pyiceberg.exceptions import NoSuchTableError

        super().__init__(table, before_swap=before_swap)
        catalog = table.catalog
        assert isinstance(catalog, HiveCatalog)
        self.catalog = catalog
        # database and table, split as HiveCatalog.commit_table splits them
        self.database, self.name = catalog.identifier_to_database_and_table(table.name(), NoSuchTableError)

    def _what(self) -> str:
        return f"the metadata_location of {self.database}.{self.name} (Hive Metastore {self.catalog.name})"

    def _get(self, client: Any) -> Any:
        from hive_metastore.ttypes import NoSuchObjectException

        try:
            return client.get_table(dbname=self.database, tbl_name=self.name)
        except NoSuchObjectException as exc:
            raise TableNotFoundError(f"{self._what()}: no such table in the metastore") from exc

    def pointer(self) -> str:
        """The metadata location the metastore's table names now."""
        from pyiceberg.catalog import METADATA_LOCATION

        # the catalog's own connection (its uri, ugi and Kerberos settings), opened for this call and closed after
        with self.catalog._client as client:
            found = (self._get(client).parameters or {}).get(METADATA_LOCATION)
        if not isinstance(found, str) or not found:
            raise TableNotFoundError(f"{self._what()}: the metastore table is not an Iceberg table")
        return str(found)

    def _swap(self, base: str, location: str) -> bool:
        """``HiveCatalog.commit_table``'s swap (pyiceberg 0.12): locked, checked, altered, unlocked; False when the
        table names another metadata file than ``base`` (the lock released, nothing altered)."""
        from hive_metastore.ttypes import EnvironmentContext, LockState, UnlockRequest
        from pyiceberg.catalog import METADATA_LOCATION, PREVIOUS_METADATA_LOCATION
        from pyiceberg.catalog.hive import DO_NOT_UPDATE_STATS, DO_NOT_UPDATE_STATS_DEFAULT
        from pyiceberg.exceptions import CommitFailedException, WaitingForLockException

        catalog = self.catalog
        with catalog._client as client:
            # pyiceberg's own lock request (exclusive, table level) and wait (bounded by the catalog's lock-check-*)
            lock = client.lock(catalog._create_lock_request(self.database, self.name))
            try:
                if lock.state != LockState.ACQUIRED:
                    try:
                        if lock.state != LockState.WAITING:
                            raise CommitFailedException(f"lock state {lock.state}")
                        catalog._wait_for_lock(self.database, self.name, lock.lockid, client)
                    except (WaitingForLockException, CommitFailedException) as exc:
                        raise CommitConflictError(
                            f"{self._what()}: the metastore's table lock was not granted ({exc}; another writer "
                            f"holds it); the metadata file {location} we wrote is left in place, referenced by "
                            "nothing (orphan removal deletes it)", path=location) from exc
                hive_table = self._get(client)
                parameters = dict(hive_table.parameters or {})
                if parameters.get(METADATA_LOCATION) != base:
                    return False
                # only the pointer moves: the keep changes no property, schema or location the table mirrors
                parameters[METADATA_LOCATION] = location
                parameters[PREVIOUS_METADATA_LOCATION] = base
                hive_table.parameters = parameters
                client.alter_table_with_environment_context(
                    dbname=self.database, tbl_name=self.name, new_tbl=hive_table,
                    environment_context=EnvironmentContext(properties={DO_NOT_UPDATE_STATS:
                                                                       DO_NOT_UPDATE_STATS_DEFAULT}))
            finally:
                client.unlock(UnlockRequest(lockid=lock.lockid))  # a waiting request too: it must not queue on
        return True
