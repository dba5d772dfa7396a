"""The Apache Iceberg format (docs/iceberg.md), one concern per module:

- ``carrier``: ``IcebergCarrier`` — snapshot navigation, a snapshot's state, record and write;
- ``carriage``: where a snapshot's attestation is carried (summaries, follow-ups, detached pointers, kept copies);
- ``commit``: the follow-up commit carrying an attestation, with its retries;
- ``manifests``, ``views``, ``summaries``: manifests as the format version writes them, the reader view's digests,
  what a snapshot summary says;
- ``catalogs`` and ``catalog_options``: opening tables through pyiceberg catalogs, with command-line overrides;
- ``deletes``: which delete files each reader (pyiceberg, Iceberg Java) applies;
- ``static``: a table read from its metadata file alone, no catalog;
- ``kept``: the attestation kept in a Puffin file registered in the table's statistics (survives cleanup);
- ``write``: content-addressed writes whose snapshot carries its own attestation;
- ``publish``: verify a write-audit-publish branch, then fast-forward main.

The public names (``IcebergCarrier``, ``attest_after_write``, ``tag_attested``, ...) are importable from here; each is
loaded on first use, so importing one module of the package never loads the others.
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: the fast path imports carriers.delta.prefetch before typing is loaded (mypy reads
# this name the same way).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from carriers.iceberg.carrier import (
        SIDECAR_DIR as SIDECAR_DIR,
    )
    from carriers.iceberg.carrier import (
        SUMMARY_BUDGET as SUMMARY_BUDGET,
    )
    from carriers.iceberg.carrier import (
        IcebergCarrier as IcebergCarrier,
    )
    from carriers.iceberg.carrier import (
        attest_after_write as attest_after_write,
    )
    from carriers.iceberg.carrier import (
        classify_changes as classify_changes,
    )
    from carriers.iceberg.carrier import (
        release_stale_tags as release_stale_tags,
    )
    from carriers.iceberg.carrier import (
        tag_attested as tag_attested,
    )
    from carriers.iceberg.write import write_content_addressed as write_content_addressed

__all__ = ["SIDECAR_DIR", "SUMMARY_BUDGET", "IcebergCarrier", "attest_after_write", "classify_changes",
           "release_stale_tags", "tag_attested", "write_content_addressed"]

# Each public name -> the module holding it (loaded on first access: PEP 562).
# (``publish`` stays the submodule's name: the function is ``carriers.publish.publish``, as docs/signing.md shows.)
_HOME = {"write_content_addressed": "carriers.iceberg.write"}


def __getattr__(name: str) -> Any:
    import importlib

    if name not in __all__:
        raise AttributeError(f"module 'carriers.iceberg' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME.get(name, "carriers.iceberg.carrier")), name)
