"""A kept audit: ``attest audit --to PATH`` appends one row per table version checked to a Delta table, so auditors
query the history with any engine (deltalake, Spark, DuckDB, ...). Columns: attest.verify.audit.COLUMNS
(docs/audit.md).

The audit table is one this project created: it carries the table property ``attest.audit.layout`` and exactly
our columns. Anything else at PATH — another Delta table, a file, a non-empty folder — is refused before any table
is checked: an audit is never appended to user data. The table is created append-only (``delta.appendOnly``):
engines that honour the protocol refuse to delete or rewrite kept rows.

A long audit is kept in batches (``append_rows``: one commit per batch of rows, ``attest audit`` writes one every
``BATCH_ROWS`` tables or ``BATCH_SECONDS``), so a run cut short keeps what it checked. Each commit's commit info says
which run and batch it holds (``attest.audit.id``, ``attest.audit.batch``) and the run's last batch says
``attest.audit.complete: true``: a run whose commits never say so was cut short (``DeltaTable.history()``; Spark's
``DESCRIBE HISTORY`` shows the same in ``userMetadata``: ``attest audit <id> batch <k> [complete]``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from attest.errors import AuditTableError
from attest.verify.audit import COLUMNS, COLUMNS_BEFORE_NOTES, AuditReport
from carriers.refs import TableRef, is_local, local_path

LAYOUT_KEY, LAYOUT = "attest.audit.layout", "1"
# The commit info keys of a kept batch (DeltaTable.history()): the run, the batch's number in it, and on the run's
# last batch only, that the run completed.
RUN_KEY, BATCH_KEY, COMPLETE_KEY = "attest.audit.id", "attest.audit.batch", "attest.audit.complete"
BATCH_ROWS, BATCH_SECONDS = 1000, 60.0


def _schema() -> Any:
    import pyarrow as pa

    # checked_at is a timestamp (queries sort and filter on it); everything else is text or null.
    return pa.schema([pa.field(c, pa.timestamp("us", tz="UTC") if c == "checked_at" else pa.string())
                      for c in COLUMNS])


@dataclass
class AuditTable:
    """Where an audit is kept; ``open`` checks the destination, ``append`` writes one commit per audit run."""

    uri: str
    storage_options: dict[str, str]
    exists: bool
    # A table kept before the notes column: the next append adds it (rows kept before read null there).
    without_notes: bool = False

    @classmethod
    def open(cls, uri: str, *, storage_options: Mapping[str, str] | None = None) -> AuditTable:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        options = dict(storage_options or {})
        try:
            table = DeltaTable(uri, storage_options=options or None)
        except TableNotFoundError:
            table = None
        except Exception as exc:  # unreadable (permissions, a corrupt log): not a place to append to
            raise AuditTableError(f"{uri}: cannot be opened as the audit table ({type(exc).__name__}: {exc})",
                                  path=uri) from exc
        if table is None:
            if is_local(uri):
                where = local_path(uri)
                if where.is_symlink() or where.is_file() or (where.is_dir() and any(where.iterdir())):
                    raise AuditTableError(f"{uri} exists and is not an audit table (a file, a link or a folder "
                                          "with content): refusing to write the audit there", path=uri)
            return cls(uri=uri, storage_options=options, exists=False)
        configuration = table.metadata().configuration or {}
        names = [f.name for f in table.schema().fields]
        if configuration.get(LAYOUT_KEY) != LAYOUT or names not in (list(COLUMNS), list(COLUMNS_BEFORE_NOTES)):
            raise AuditTableError(f"{uri} is a Delta table but not an audit table written by attest (no "
                                  f"{LAYOUT_KEY}={LAYOUT} property, or other columns): refusing to append to it",
                                  path=uri)
        return cls(uri=uri, storage_options=options, exists=True, without_notes=names != list(COLUMNS))

    def is_table(self, ref: TableRef) -> bool:
        """Whether an audited table is this audit table by its own name (the run writing to it does not audit it).

        By its name only — the path given to ``--to`` or the one it resolves to — never by where a table resolves:
        ``lake/orders`` replaced by a link to the audit table (its readers get the audit's rows) was left out of the
        audit without a word, exit 0. Reached by another name it is audited as any table."""
        if ref.format != "delta":
            return False
        if is_local(ref.location) and is_local(self.uri):
            return _same(local_path(ref.location), local_path(self.uri))
        return ref.location.rstrip("/") == self.uri.rstrip("/")

    def append(self, audit: AuditReport) -> str:
        """Append the audit's rows (one commit); returns ``"<uri> version <N>"``."""
        records = audit.records()
        if not records:
            return f"{self.uri} (nothing to append)"
        return f"{self.uri} version {self.append_rows(records, audit_id=audit.audit_id, batch=1, complete=True)}"

    def append_rows(self, records: list[dict[str, str | None]], *, audit_id: str, batch: int, complete: bool) -> int:
        """One commit of a run's rows (COLUMNS), the table created by the first; returns the version written. The
        commit info names the run and the batch, and says whether it is the run's last (module docstring)."""
        import pyarrow as pa
        from deltalake import CommitProperties, DeltaTable, write_deltalake

        columns: dict[str, list[Any]] = {c: [r[c] for r in records] for c in COLUMNS}
        columns["checked_at"] = [None if t is None else datetime.fromisoformat(t.replace("Z", "+00:00"))
                                 for t in columns["checked_at"]]
        data = pa.table(columns, schema=_schema())
        options = self.storage_options or None
        # userMetadata too: the one commit info field Spark's DESCRIBE HISTORY shows.
        said = f"attest audit {audit_id} batch {batch}" + (" complete" if complete else "")
        info = CommitProperties(custom_metadata={RUN_KEY: audit_id, BATCH_KEY: batch, COMPLETE_KEY: complete,
                                                 "userMetadata": said})
        try:
            if not self.exists:
                # delta-rs takes only delta.* keys when creating a table: the layout marker is a second commit,
                # before any row (a table left without it by a crash is refused, never silently adopted).
                table = DeltaTable.create(self.uri, _schema(), mode="error", storage_options=options,
                                          description="attest audit: one row per table version checked",
                                          configuration={"delta.appendOnly": "true"})
                table.alter.set_table_properties({LAYOUT_KEY: LAYOUT}, raise_if_not_exists=False)
            # A table kept before the notes column gains it with this commit (the one schema change an append
            # makes: a column added, nullable; no row rewritten, which delta.appendOnly would refuse).
            write_deltalake(self.uri, data, mode="append", storage_options=options, commit_properties=info,
                            schema_mode="merge" if self.without_notes else None)
            version = DeltaTable(self.uri, storage_options=options).version()
        except Exception as exc:
            raise AuditTableError(f"{self.uri}: the audit could not be appended ({type(exc).__name__}: {exc})",
                                  path=self.uri) from exc
        self.exists, self.without_notes = True, False
        return version


def _same(found: Path, sink: Path) -> bool:
    # The found table's name (absolute, not resolved) against the sink's as given and as it resolves.
    try:
        return os.path.abspath(found) in (os.path.abspath(sink), os.path.realpath(sink))
    except OSError:
        return False
