"""The start-up fast path, in one package behind one switch (docs/hashing.md, "Start-up").

``attest verify`` of a manifest or of a local Delta table is measured against ``b3sum`` hashing the same bytes
(benchmarks/bench_cli.py), so what the interpreter does before the first byte is hashed counts. Everything that exists
only to make that start-up short is here; nothing outside this package needs it to be correct:

- ``attest.fast.startup``: the head start (``verify`` read from the raw command line before argparse is imported, so
  hashing overlaps the rest of start-up: attest.verify.artifacts.EarlyHashes, carriers.delta.prefetch) and, after a
  read-only command, the interpreter's teardown skipped.
- ``attest.fast.record``: plain data classes without importing ``dataclasses`` (and with it ``inspect``, ``ast``,
  ``dis``, ``tokenize``), for the modules every command imports; ``many_records`` pauses the cycle collector while a
  large batch of them is built.
- ``attest.fast.jsonscan``: JSON read through CPython's C scanner without ``json``'s Python layer (``re``, ``enum``).
- ``attest.fast.realpath``: ``os.path.realpath`` / ``Path.resolve`` through the C library's ``realpath(3)`` where it
  answers (an audit of many small tables resolves each table's root and carrier files); and, in
  carriers/delta/columns.py, the add-action types delta-rs's columns are read by kept a schema spelling at a time.

``ATTEST_FAST=0`` in the environment switches all of it off, as a unit: no head start and no early hashing, the
ordinary interpreter exit, ``dataclasses`` for the records, ``json`` for the scanner, the collector left alone,
``os.path.realpath``, every add-action schema judged anew. Every
result is the same either way (tests/test_fast.py); only the time differs, and benchmarks/bench_cli.py measures both
(``--fast-off``). Whatever part of this the benchmark no longer justifies is removed here, and only here.
"""

from __future__ import annotations

import os

__all__ = ["ON"]

# Read once, when the package is first imported (before any record class is declared).
ON: bool = os.environ.get("ATTEST_FAST", "1").strip() != "0"
