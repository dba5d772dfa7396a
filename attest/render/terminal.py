"""Text a terminal reads: nothing in it acts on the terminal (docs/cli.md).

Names a table chose — log paths, folder names, sidecar and manifest fields — reach reports and the command line's
output. A control or format character among them would act on the terminal instead of being read: a path holding
``\\r ESC[2K ESC[8m`` printed a fake VERIFIED and hid every later line, the real verdict included. Nothing is
imported here: reports and the command line use it on every path.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)

if TYPE_CHECKING:
    import logging

__all__ = ["json_terminal_safe", "terminal_safe", "terminal_safe_logger"]


def terminal_safe(text: str) -> str:
    """Text for a terminal: control and format characters — from names a table, a log or a manifest chose — shown
    as U+FFFD, line breaks kept. A file named ``x\\r\\x1b[8m`` would otherwise return the cursor and hide every
    later line (the NOT VERIFIED verdict included); bidirectional overrides would reorder what is read."""
    if text.isprintable():
        return text
    return "\n".join(line if line.isprintable() else "".join(c if c.isprintable() else "\ufffd" for c in line)
                     for line in text.split("\n"))


def json_terminal_safe(text: str) -> str:
    """JSON text with every character a terminal could act on written as a ``\\u`` escape: the same JSON value.
    ``json.dumps`` escapes C0 controls; C1 controls (U+0080-U+009F, read as CSI by some terminals) and format
    characters it leaves raw when ``ensure_ascii=False``. Outside strings JSON holds only ASCII and whitespace."""
    if text.isprintable():
        return text
    return "\n".join(line if line.isprintable() else "".join(map(_json_char, line)) for line in text.split("\n"))


def _json_char(c: str) -> str:
    if c.isprintable():
        return c
    if ord(c) > 0xFFFF:  # a surrogate pair, as JSON spells characters beyond the BMP
        v = ord(c) - 0x10000
        return f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}"
    return f"\\u{ord(c):04x}"


def terminal_safe_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` whose records are made terminal-safe once formatted (a job's log is read in a
    terminal too, and its messages name tables and files). Idempotent."""
    import logging

    logger = logging.getLogger(name)
    if not any(isinstance(f, _TerminalSafeRecords) for f in logger.filters):
        logger.addFilter(_TerminalSafeRecords())
    return logger


class _TerminalSafeRecords:
    """A logging filter (duck-typed: ``filter(record)``) that formats a record's message and makes it terminal-safe."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        safe = terminal_safe(message)
        if safe != message:
            record.msg, record.args = safe, None
        return True
