"""Concurrent writers: two processes append to one Delta table in a loop while a third attests it.

Per mode it prints how many of the *other* writers' commits aborted because of the attestations, and how many data
versions ended attested:

- ``properties``: each attestation is a metadata-only commit. Any metadata commit makes a concurrent transaction
  that read an older version fail its conflict check ("Metadata changed"), so writers can abort; only the latest
  data version can be attested, so some versions end unattested.
- ``detached``: no commit at all (a pointer file per version): goal 0 aborts, every version attested.

    python benchmarks/bench_concurrent_writers.py [--appends 25]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROGRAM = "a" * 64


def writer(path: str, appends: int, seed: int, results: mp.Queue) -> None:  # type: ignore[type-arg]
    import pyarrow as pa
    from deltalake import write_deltalake

    aborted = committed = 0
    for i in range(appends):
        try:
            write_deltalake(path, pa.table({"w": [seed], "i": [i]}), mode="append")
            committed += 1
        except Exception as exc:  # the writer's commit lost against a concurrent commit
            aborted += 1
            if "Metadata changed" not in str(exc) and "onflict" not in str(exc) and "oncurrent" not in str(exc):
                print(f"writer {seed}: {type(exc).__name__}: {str(exc).splitlines()[0]}", file=sys.stderr)
        time.sleep(0.005)
    results.put(("writer", seed, committed, aborted))


def attester(path: str, mode: str, stop: mp.Event, results: mp.Queue) -> None:  # type: ignore[type-arg]
    from attest.errors import AttestError
    from carriers.delta.carrier import DeltaCarrier

    done: set[int] = set()
    failures = 0
    while True:
        final = stop.is_set()
        carrier = DeltaCarrier(path, detached=mode == "detached")
        latest = carrier.latest_version()
        # Detached mode attests every data version; properties mode can only attest the latest one.
        targets = range(0, latest + 1) if mode == "detached" else [carrier.data_version(latest)]
        for v in targets:
            if v in done:
                continue
            try:
                from carriers.delta.log import read_commit

                commit = read_commit(carrier.storage, v)
                if commit is None or not commit.touches_files:
                    continue
                carrier.record(model="bench", program_hash=PROGRAM, version=v)
                done.add(v)
            except AttestError:
                failures += 1
        if final:
            break
        time.sleep(0.01)
    results.put(("attester", mode, len(done), failures))


def run(mode: str, appends: int) -> dict[str, int]:
    import pyarrow as pa
    from deltalake import write_deltalake

    from attest.verify.table import verify_table
    from carriers.delta.carrier import DeltaCarrier
    from carriers.delta.log import read_commit

    root = Path(tempfile.mkdtemp(prefix=f"bench-cw-{mode}-"))
    path = str(root / "t")
    write_deltalake(path, pa.table({"w": [-1], "i": [-1]}))
    ctx = mp.get_context("spawn")  # no forked copies of delta-rs's runtime threads
    results: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    stop = ctx.Event()
    procs = [ctx.Process(target=writer, args=(path, appends, seed, results)) for seed in (1, 2)]
    att = ctx.Process(target=attester, args=(path, mode, stop, results))
    att.start()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    stop.set()
    att.join()
    rows = [results.get() for _ in range(3)]
    aborted = sum(r[3] for r in rows if r[0] == "writer")
    committed = sum(r[2] for r in rows if r[0] == "writer")
    carrier = DeltaCarrier(path)
    latest = carrier.latest_version()
    data_versions = [v for v in range(latest + 1)
                     if (c := read_commit(carrier.storage, v)) is not None and c.touches_files]
    attested = sum(1 for v in data_versions if verify_table(DeltaCarrier(path), version=v, level="files").passed)
    return {"committed": committed, "aborted": aborted, "data_versions": len(data_versions), "attested": attested}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--appends", type=int, default=25, help="appends per writer process (default 25)")
    args = parser.parse_args()
    print(f"two writer processes x {args.appends} appends, one attesting process")
    print(f"{'mode':<11} {'writer commits':>15} {'aborted by us':>14} {'data versions':>14} {'attested':>9}")
    ok = True
    for mode in ("properties", "detached"):
        r = run(mode, args.appends)
        print(f"{mode:<11} {r['committed']:>15} {r['aborted']:>14} {r['data_versions']:>14} {r['attested']:>9}")
        if mode == "detached":
            ok = r["aborted"] == 0 and r["attested"] == r["data_versions"]
    print("detached goal (0 aborts, every version attested):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
