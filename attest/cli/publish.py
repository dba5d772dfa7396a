"""``attest publish``: Iceberg write-audit-publish, the branch head verified before main moves."""

from __future__ import annotations

import argparse

from attest.cli.output import EXIT_FAILED, Output
from attest.cli.shared import open_ref, table_ref, trust_policy
from attest.errors import InvalidArgumentError
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.verify.report import Report


@record
class PublishRefusedResult:
    """``attest publish`` refused because the branch head did not verify: the verdict, main untouched."""

    table: str
    branch: str
    message: str
    report: Report

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED

    def to_json(self) -> dict[str, Any]:
        return {"published": False, "passed": False, "table": self.table, "branch": self.branch,
                "verdict": f"NOT PUBLISHED — {self.message}", "errors": [p.to_json() for p in self.report.errors],
                "report": self.report.to_json()}

    def human(self) -> str:
        return f"{self.report.human()}\nNOT PUBLISHED — main of {self.table} was not moved"


def cmd_publish(args: argparse.Namespace, out: Output) -> Any:
    from attest.errors import VerificationRefusedError
    from carriers.iceberg.publish import publish

    ref = table_ref(args)
    if ref.format != "iceberg" or ref.version is not None:
        raise InvalidArgumentError("publish takes an Iceberg table, iceberg://<catalog>/<namespace>.<table>, without "
                                   "a snapshot: the branch head is what is published")
    from carriers.iceberg.carrier import IcebergCarrier

    policy = trust_policy(args)
    carrier = open_ref(args, ref)
    assert isinstance(carrier, IcebergCarrier)  # an iceberg:// reference opens an IcebergCarrier
    try:
        return publish(carrier, args.branch, policy=policy, level=args.level,
                       progress=out.progress("hashing table files"))
    except VerificationRefusedError as err:
        return PublishRefusedResult(ref.base, args.branch, err.message, err.report)
