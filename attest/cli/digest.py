"""``attest digest``: the v1 identity of a JSON document, and the text result it shares with ``attest schema``."""

from __future__ import annotations

import argparse

from attest.cli.output import EXIT_OK, Output
from attest.cli.shared import read_input
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any



@record
class TextResult:
    """A result that is a text (digest, schema) with its JSON form. ``json_text``: the text is JSON itself (the
    schema), printed escaped like any JSON (attest/cli/output.py), never with characters replaced."""

    text: str
    document: Any
    exit_code: int = EXIT_OK
    json_text: bool = False

    def to_json(self) -> Any:
        return self.document

    def human(self) -> str:
        return self.text



def cmd_digest(args: argparse.Namespace, out: Output) -> TextResult:
    from attest.canonical import digest
    from attest.model import load_json_document

    data = read_input(args.file)
    from attest.cli.mistakes import refuse_data_file

    refuse_data_file(args.file, data, expected="JSON document")
    identity = digest(load_json_document(data))
    return TextResult(identity, {"identity": identity, "hash_scheme": "v1"})
