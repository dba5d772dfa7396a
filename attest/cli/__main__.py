"""``python -m attest.cli``: the ``attest`` command."""

import sys

from attest.cli import main

sys.exit(main())
