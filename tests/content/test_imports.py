"""`attest` (the verifier's import path) and `attest.content` import no pyarrow; only digesting rows does, and an
install without pyarrow gets a coded error for it, while digest arithmetic still works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_verifier_path_and_the_digest_arithmetic_import_no_pyarrow() -> None:
    out = _run("import sys\n"
               "import attest, attest.cli, attest.verify.table, attest.content\n"
               "from attest.content import ContentDigest, SCHEME\n"
               "d = ContentDigest.zero() + ContentDigest(bytes(4096), 2)\n"
               "assert d.rows == 2 and len(d.short_id()) == 64\n"
               "print('pyarrow' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_digesting_rows_imports_pyarrow() -> None:
    out = _run("import sys\n"
               "from attest.content import digest_table, ColumnSpec\n"
               "print('pyarrow' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_without_pyarrow_digesting_rows_is_a_coded_error() -> None:
    out = _run("import sys\n"
               "sys.modules['pyarrow'] = None\n"
               "from attest.content import ContentDigest\n"
               "assert ContentDigest.total([ContentDigest.zero()]) == ContentDigest.zero()\n"
               "from attest.errors import AttestError\n"
               "try:\n"
               "    from attest.content import digest_table\n"
               "except AttestError as e:\n"
               "    print(e.code.value, e.message)\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("extra_missing ") and "recipe-attest[delta]" in out.stdout
