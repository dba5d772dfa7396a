"""``attest release-tags``: remove the Iceberg retention tags of branches the table no longer has (docs/iceberg.md
"Expiry and tags"), for a maintenance job to run before ``expire_snapshots``."""

from __future__ import annotations

import argparse

from attest.cli.shared import open_ref, table_ref
from attest.errors import InvalidArgumentError
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.cli.output import Output


@record
class ReleasedTags:
    """The retention tags ``attest release-tags`` removed (none: nothing was committed)."""

    table: str
    released: list[str]

    @property
    def exit_code(self) -> int:
        return 0

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "released": list(self.released)}

    def human(self) -> str:
        if not self.released:
            return f"{self.table}: no retention tag of a dropped branch (nothing committed)"
        return f"{self.table}: released {', '.join(self.released)} (their branches no longer exist)"


def cmd_release_tags(args: argparse.Namespace, out: Output) -> Any:
    ref = table_ref(args)
    if ref.format != "iceberg" or ref.version is not None:
        raise InvalidArgumentError("release-tags takes an Iceberg table, iceberg://<catalog>/<namespace>.<table>, "
                                   "without a snapshot")
    from carriers.iceberg.carrier import IcebergCarrier, release_stale_tags

    carrier = open_ref(args, ref)
    assert isinstance(carrier, IcebergCarrier)  # an iceberg:// reference opens an IcebergCarrier
    return ReleasedTags(ref.base, release_stale_tags(carrier))
