"""``attest keygen``: a signing key pair (docs/signing.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from attest.cli.output import EXIT_OK, Output
from attest.errors import AttestError, Code
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any



@record
class KeygenResult:
    type: str
    key_id: str
    private: str
    public: str
    encrypted: bool
    exit_code: int = EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "key_id": self.key_id, "private_key": self.private, "public_key": self.public,
                "encrypted": self.encrypted}

    def human(self) -> str:
        return (f"KEYGEN — {self.type} key pair: {self.private} (private, mode 0600"
                + (", encrypted" if self.encrypted else "") + f"), {self.public}\nkey id: {self.key_id}")


def cmd_keygen(args: argparse.Namespace, out: Output) -> KeygenResult:
    from attest.signing.keys import PASSWORD_ENV, generate_keypair

    password = os.environ.get(PASSWORD_ENV) if args.encrypt else None
    if args.encrypt and not password:
        raise AttestError(f"--encrypt takes the password from ${PASSWORD_ENV}, which is not set",
                          code=Code.KEY_INVALID)
    pair = generate_keypair("ecdsa-p256" if args.type == "p256" else "ed25519",
                            password=None if password is None else password.encode("utf-8"))
    private, public = Path(args.out + ".key"), Path(args.out + ".pub")
    try:
        for path in (private, public):
            if path.exists() or path.is_symlink():
                raise AttestError(f"{path} exists; keygen never overwrites a key", code=Code.KEY_INVALID)
        # Public first: a failure after it leaves no orphan private key. O_EXCL + mode 0600 at creation: the
        # private key is never readable by others, not even for a moment, and never replaces an existing file.
        for path, data, mode in ((public, pair.public_pem, 0o644), (private, pair.private_pem, 0o600)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
    except OSError as exc:
        raise AttestError(f"{exc.filename}: cannot write the key ({exc.strerror})", code=Code.KEY_INVALID) from exc
    return KeygenResult(pair.type, pair.key_id, str(private), str(public), pair.encrypted)
