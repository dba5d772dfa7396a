"""The table part of a Delta version's reader view (docs/security.md, "The reader view"): which table properties and
reader features change what readers get, and the schema as readers resolve it; the same parts read from log actions,
for comparing versions without loading each (``DeltaCarrier.attestable_version``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attest.fast import jsonscan

__all__ = ["READ_PROPERTIES", "mapping_mode_read_otherwise", "raw_reader_table", "statistics_columns_read_otherwise",
           "strip_comments", "view_reader_features"]

# Table properties that change the rows or values readers get (docs/security.md, "The reader view"). Properties not
# listed change how data is written, retained or optimised, not what is read.
READ_PROPERTIES = (
    "delta.columnMapping.mode",
    "delta.enableRowTracking",
    "delta.rowTracking.materializedRowIdColumnName",
    "delta.rowTracking.materializedRowCommitVersionColumnName",
    "delta.enableTypeWidening",
    "delta.enableDeletionVectors",
    "delta.enableChangeDataFeed",
    "delta.enableIcebergCompatV1",
    "delta.enableIcebergCompatV2",
    "delta.universalFormat.enabledFormats",
)


# What each reader feature does to reads (PROTOCOL.md, "Table Features"; docs/security.md, "The reader view"). The view
# binds the reader features a protocol enables, less those that change nothing a reader gets: a commit that only raises
# the protocol's versions, or adds such a feature, keeps the view (issue 30.4: it made the table unverifiable at its
# latest version, record after record). Writer-only features (appendOnly, invariants, checkConstraints, ...) never were
# in the view: they constrain writers, not what is read.
# Kept, each for what it does to reads (and any feature not named below, known or not):
# - columnMapping: columns are resolved by physical name or id (with the mode property and field metadata);
# - deletionVectors: readers drop the rows a file's deletion vector names;
# - timestampNtz: timestamp_ntz values are read without a time zone;
# - typeWidening(-preview): stored values are widened to the schema's type;
# - v2Checkpoint: readers take the table's state from v2 checkpoints and their sidecars;
# - variantType(-preview), variantShredding-preview: variant values are decoded (from shredded columns);
# - catalogManaged, catalogOwned-preview: the latest version is the catalog's, not the log listing's.
_VIEW_NEUTRAL_READER_FEATURES = frozenset({
    # Only VACUUM acts on it (PROTOCOL.md: it must check the protocol first): readers read the same files, rows and
    # values. (delta-rs 1.6's query engine refuses such a table outright, measured: no rows, never other rows.)
    "vacuumProtocolCheck",
})


def view_reader_features(min_reader_version: int, reader_features: Sequence[str] | None) -> list[str]:
    """The reader features a protocol enables that change what readers get (the view's ``reader_features``): reader
    version 1 enables none, 2 column mapping (a legacy version), 3 the ones it names; a version past 3, which this
    release does not know, is kept as a feature of its own. The versions themselves change no read: a bare bump to 3/7
    is the same view."""
    if min_reader_version <= 1:
        enabled: set[str] = set()
    elif min_reader_version == 2:
        enabled = {"columnMapping"}
    else:
        enabled = set(reader_features or ())
        if min_reader_version > 3:
            enabled.add(f"minReaderVersion={min_reader_version}")
    return sorted(enabled - _VIEW_NEUTRAL_READER_FEATURES)


def raw_reader_table(meta: dict[str, Any] | None, protocol: dict[str, Any] | None) -> Any:
    """The parts of a version's reader table (DeltaCarrier._table_view) as its log actions write them, for comparing
    versions without loading each (DeltaCarrier.attestable_version)."""
    meta, protocol = meta or {}, protocol or {}
    try:
        schema = strip_comments(jsonscan.loads_unique(str(meta.get("schemaString"))))
    except (ValueError, RecursionError):
        schema = meta.get("schemaString")
    config = {str(k): str(v) for k, v in (meta.get("configuration") or {}).items() if v is not None}
    version = protocol.get("minReaderVersion")
    features = protocol.get("readerFeatures")
    return (schema, list(meta.get("partitionColumns") or []), {k: config[k] for k in READ_PROPERTIES if k in config},
            view_reader_features(version if type(version) is int else 99,
                                 [str(f) for f in features] if isinstance(features, list) else None))


def strip_comments(node: Any) -> Any:
    """A schema as readers resolve it: column comments change no value read, everything else in field metadata
    (column-mapping ids and physical names, generation expressions, type-widening history) may."""
    if isinstance(node, dict):
        out = {k: strip_comments(v) for k, v in node.items()}
        meta = out.get("metadata")
        if isinstance(meta, dict):
            out["metadata"] = {k: v for k, v in meta.items() if k != "comment"}
        return out
    if isinstance(node, list):
        return [strip_comments(v) for v in node]
    return node


def statistics_columns_read_otherwise(meta: dict[str, Any] | None) -> str | None:
    """What is wrong with a version whose ``delta.dataSkippingStatsColumns`` names a column that delta-rs and Spark
    resolve differently: a name matching a column of the schema only in another case (``B`` for ``b``). Spark
    (delta-spark 4.4) resolves the names without case and reads that column's statistics from the log, skipping files
    and answering ``MIN`` / ``MAX`` by them; delta-rs matches names exactly and reads none of them, so neither the view
    nor the check of the statistics against the rows holds them (measured: a forged maximum became Spark's ``MAX``,
    ``VERIFIED`` before; tests/adversarial/test_delta_round17.py). None when nothing is."""
    meta = meta if isinstance(meta, dict) else {}
    configuration = meta.get("configuration")
    given = configuration.get("delta.dataSkippingStatsColumns") if isinstance(configuration, dict) else None
    if not isinstance(given, str):
        return None
    try:
        schema = jsonscan.loads_unique(str(meta.get("schemaString")))
    except (ValueError, RecursionError):
        return None  # a schema neither reads: refused elsewhere
    for name in _column_names(given):
        fields: Any = schema.get("fields") if isinstance(schema, dict) else None
        for part in name:
            named = [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []
            exact = next((f for f in named if f.get("name") == part), None)
            if exact is None:
                if any(str(f.get("name")).lower() == part.lower() for f in named):
                    return (
                        f"delta.dataSkippingStatsColumns names {'.'.join(name)[:80]!r}, a column only in another "
                        "case: Spark resolves it without case and skips files by that column's statistics in the "
                        "log, delta-rs reads none of them (they are neither bound nor checked)"
                    )
                break
            kind = exact.get("type")
            fields = kind.get("fields") if isinstance(kind, dict) else None
    return None


def _column_names(given: str) -> list[list[str]]:
    """The column names a ``delta.dataSkippingStatsColumns`` value lists, each as its parts: comma-separated, each a
    dotted name whose parts may be quoted in backticks (a doubled backtick inside one)."""
    names: list[list[str]] = []
    parts: list[str] = []
    part, quoted, i = "", False, 0
    while i < len(given):
        c = given[i]
        if quoted:
            if c == "`" and given[i + 1 : i + 2] == "`":
                part, i = part + "`", i + 2
                continue
            if c == "`":
                quoted = False
            else:
                part += c
        elif c == "`":
            quoted = True
        elif c in ".,":
            parts.append(part.strip())
            part = ""
            if c == ",":
                names.append(parts)
                parts = []
        else:
            part += c
        i += 1
    parts.append(part.strip())
    names.append(parts)
    return [n for n in names if any(n)]


def mapping_mode_read_otherwise(meta: dict[str, Any] | None) -> str | None:
    """What is wrong with a version whose ``delta.columnMapping.mode`` spells ``name`` or ``id`` in another case
    (``NAME``): Spark (delta-spark 4.4) parses the mode without case and reads columns by their physical names, delta-rs
    takes only the exact spelling and reads the logical names (measured: nulls in every column against Spark's values;
    the content digest took Spark's reading — recorded, VERIFIED before; tests/adversarial/test_delta_round17.py).
    None when nothing is."""
    configuration = (meta or {}).get("configuration") if isinstance(meta, dict) else None
    mode = configuration.get("delta.columnMapping.mode") if isinstance(configuration, dict) else None
    if not isinstance(mode, str) or mode in ("none", "name", "id") or mode.lower() not in ("name", "id"):
        return None
    return (f"delta.columnMapping.mode is {mode[:40]!r}: Spark reads it without case and resolves columns by their "
            "physical names, delta-rs takes only the exact spelling and reads the logical names")
