"""Row tracking as a Spark writer commits it, put by hand on commits delta-rs wrote (delta-rs refuses to commit to a
table with the ``rowTracking`` writer feature, so the commits are rewritten once every version is written)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from carriers.delta.log import commit_name


def give_row_tracking(path: Path, ids: Mapping[int, tuple[int, int]], *, enabled: bool,
                      require_stats: bool = False) -> None:
    """Rewrite each version ``v`` in ``ids`` as a row-tracking writer commits it: protocol 1/7 with ``rowTracking``
    and ``domainMetadata``, ``delta.enableRowTracking`` set to ``enabled``, each add given ``baseRowId`` (the first of
    the pair) and ``defaultRowCommitVersion`` ``v``, and the ``delta.rowTracking`` domain's high-water mark (the
    second). ``require_stats``: each add must already carry its statistics (the caller's test reads them)."""
    for v, (base, high_water_mark) in ids.items():
        commit = path / commit_name(v)
        lines = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in lines:
            if "protocol" in action:
                action["protocol"] = {"minReaderVersion": 1, "minWriterVersion": 7,
                                      "writerFeatures": ["rowTracking", "domainMetadata"]}
            if "metaData" in action:
                action["metaData"]["configuration"]["delta.enableRowTracking"] = "true" if enabled else "false"
            if "add" in action:
                assert not require_stats or action["add"].get("stats"), action
                action["add"].update(baseRowId=base, defaultRowCommitVersion=v)
        lines.append({"domainMetadata": {"domain": "delta.rowTracking", "removed": False,
                                         "configuration": json.dumps({"rowIdHighWaterMark": high_water_mark})}})
        commit.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
