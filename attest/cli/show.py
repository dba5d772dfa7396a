"""``attest show``: the standalone manifest (or the inputs) a table version carries."""

from __future__ import annotations

import argparse
import contextlib
import json

from attest.cli.output import EXIT_FAILED, EXIT_OK, Output
from attest.cli.shared import open_ref, table_ref
from attest.errors import AttestError
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any



@record
class ShowResult:
    """``attest show``: the standalone manifest (or the inputs) of a table version, JSON either way: printed as
    JSON prints it (escaped, never replaced: ``show | verify -`` checks the very document the table holds).
    ``wrapped``: the one object ``--json`` prints when the document is not one (``--inputs``: a list)."""

    ref: str
    document: Any
    attested: bool
    exit_code: int = EXIT_OK
    stderr_text: str = ""
    wrapped: Any = None

    @property
    def json_text(self) -> bool:
        return self.attested

    def to_json(self) -> Any:
        return self.document if self.wrapped is None else self.wrapped

    def human(self) -> str:
        return "" if not self.attested else json.dumps(self.document, indent=2, ensure_ascii=False)



def cmd_show(args: argparse.Namespace, out: Output) -> ShowResult:
    from attest.model import Manifest

    ref = table_ref(args)
    attestation = open_ref(args, ref).read(ref.version)
    if attestation is None:
        where = f" at {ref.noun} {ref.version}" if ref.version else ""
        message = f"UNATTESTED — {ref.base}{where} carries no attestation"
        return ShowResult(str(ref), {"attested": False, "table": ref.base, "version": ref.version,
                                     "message": message}, attested=False, exit_code=EXIT_FAILED, stderr_text=message)
    if args.inputs:
        # Text: the list itself; --json: one object, as every --json prints (docs/cli.md).
        inputs = [i.to_dict() for i in (attestation.inputs or ())]
        return ShowResult(str(ref), inputs, attested=True, wrapped={
            "table": ref.base, "version": ref.version, "attested_version": attestation.attested_version,
            "inputs": inputs})
    document = attestation.document
    # Field order as in the spec when the document is valid; an invalid one is shown as read.
    with contextlib.suppress(AttestError):
        document = Manifest.from_dict(document).to_dict()
    return ShowResult(str(ref), document, attested=True)
