"""``attest schema``: the rocky-manifest v0.1 JSON Schema as the reference publishes it."""

from __future__ import annotations

import argparse
import json

from attest.cli.output import Output

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    pass
from attest.cli.digest import TextResult  # noqa: E402


def cmd_schema(args: argparse.Namespace, out: Output) -> TextResult:
    from attest.schema import schema_text

    text = schema_text()
    return TextResult(text.rstrip("\n"), json.loads(text), json_text=True)
