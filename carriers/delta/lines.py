"""The lines of a Delta commit file, ``_delta_log/<version>.json``: the one reader of them that the head start
(carriers/delta/prefetch.py) and the search for a write's commit (carriers/delta/write_commit.py) share, and where
the log's names are spelt (carriers/delta/log.py takes them from here).

Commits are newline-delimited JSON: lines are split on ``b"\\n"`` only (a value may hold U+2028 or U+0085). Light on
purpose (the JSON scanner, nothing else): the command line's head start imports it before anything heavy. The log
replay (carriers/delta/log.py ``json_lines``) reads the same lines strictly, decoded as a whole, to judge them.
"""

from __future__ import annotations

from attest.fast import jsonscan

TYPE_CHECKING = False  # the head start imports this module before anything heavy (typing included)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["COMMIT_NAME_LENGTH", "LOG_DIR", "actions", "commit_info", "commit_name", "lines"]

LOG_DIR = "_delta_log"
COMMIT_NAME_LENGTH = 25  # 20 digits + ".json" (Delta protocol: zero-padded commit files)


def commit_name(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.json"


def lines(data: bytes) -> Iterator[bytes]:
    """The lines of a commit that are not blank, split on ``b"\\n"`` only."""
    for line in data.split(b"\n"):
        if line.strip():
            yield line


def actions(data: bytes) -> Iterator[Any]:
    """The JSON value of each line (ValueError or RecursionError on a line that is not JSON)."""
    for line in lines(data):
        yield jsonscan.loads(line)


def commit_info(data: bytes | None) -> dict[str, Any]:
    """A commit's ``commitInfo``, {} when it has none. An unreadable line (another writer's) is skipped, never
    fatal. Read with ``json`` (imported here: the head start never calls this), as Spark's hook always read it."""
    import json

    if data is None:
        return {}
    for line in lines(data):
        if b'"commitInfo"' not in line:
            continue
        try:
            info = json.loads(line).get("commitInfo")
        except (ValueError, RecursionError, AttributeError):
            continue
        if isinstance(info, dict):
            return dict(info)
    return {}
