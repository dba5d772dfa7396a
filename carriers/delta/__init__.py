"""The Delta Lake format (docs/delta.md), one concern per module:

- ``carrier``: ``DeltaCarrier`` — versions, a version's live files and reader view from delta-rs checked against the
  log's own replay, what changed since the attested version; composed of the two parts below;
- ``carriage``: where a version's attestation is carried (its properties, a later attestation commit, a detached
  pointer, another producer's properties) — ``Carriage``, a part of ``DeltaCarrier``;
- ``commit``: the metadata-only attestation commit (put-if-absent of the next version) — ``MetadataCommit``, a part
  of ``DeltaCarrier``;
- ``view``: the table part of the reader view (read-changing properties and reader features, the schema as read);
- ``rows``: what delta-rs answers about a loaded version, as plain values;
- ``columns``: delta-rs's add actions in columns, each file's typed view parts written for all files at once;
- ``content``: the rows of a data file as readers get them (content digests) and the ``dataChange: false`` rewrites
  between two versions (issue 32; carriers/content_store.py records and judges);
- ``log``: an independent replay of ``_delta_log`` (the second opinion against delta-rs);
- ``checkpoint``: a checkpoint read in columns for the replay when it is regular (docs/scale.md);
- ``write``: content-addressed writes whose commit carries its own attestation;
- ``prefetch``: the start-up head start on a local table's hashing (attest.fast).

The public names (``DeltaCarrier``, ``attest_after_write``, ...) are importable from here; each is loaded on first
use, so importing one module of the package (the log replay, the prefetch) never loads delta-rs.
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: the fast path imports carriers.delta.prefetch before typing is loaded (mypy reads
# this name the same way).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from carriers.delta.carriage import POINTER_DIR as POINTER_DIR
    from carriers.delta.carriage import SIDECAR_DIR as SIDECAR_DIR
    from carriers.delta.carrier import (
        DeltaCarrier as DeltaCarrier,
    )
    from carriers.delta.carrier import (
        attest_after_write as attest_after_write,
    )
    from carriers.delta.carrier import (
        signed_table_uri as signed_table_uri,
    )
    from carriers.delta.view import READ_PROPERTIES as READ_PROPERTIES
    from carriers.delta.write import write_content_addressed as write_content_addressed

__all__ = ["POINTER_DIR", "READ_PROPERTIES", "SIDECAR_DIR", "DeltaCarrier", "attest_after_write", "signed_table_uri",
           "write_content_addressed"]

# Each public name -> the module holding it (loaded on first access: PEP 562).
_HOME = {"POINTER_DIR": "carriers.delta.carriage", "SIDECAR_DIR": "carriers.delta.carriage",
         "READ_PROPERTIES": "carriers.delta.view", "write_content_addressed": "carriers.delta.write"}


def __getattr__(name: str) -> Any:
    import importlib

    if name not in __all__:
        raise AttributeError(f"module 'carriers.delta' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME.get(name, "carriers.delta.carrier")), name)
