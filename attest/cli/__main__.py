"""``python -m attest.cli``: the ``attest`` command."""

from attest.cli import run

run()
