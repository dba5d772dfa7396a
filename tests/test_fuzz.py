"""Fuzzing the untrusted-input parsers: every input is a coded outcome, never an uncaught exception.

Five parsers read text an attacker controls: the manifest parser (``attest verify FILE|-``), the metadata-map decoder
(table properties / snapshot summaries → an attestation), the sidecar parser, the Delta commit reader and the path
canonicalisers (Delta add paths, Iceberg locations). Each runs
on hypothesis-generated inputs — structured documents mutated at random as well as raw bytes — and may only return
an outcome or raise the error its callers turn into a code. ``ATTEST_FUZZ_EXAMPLES`` sets the number per parser
(default 12,000 each, 60,000 in all: the bounded run CI makes, ~90 s on 2 cores; set it higher for a longer
campaign); the count is printed.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attest.errors import AttestError
from attest.verify.manifest import verify_manifest_bytes
from carriers import properties as props
from carriers.core import Carried
from carriers.delta.log import LogState, _Validity, json_lines, parse_commit
from carriers.sidecar import Sidecar, SidecarError

EXAMPLES = int(os.environ.get("ATTEST_FUZZ_EXAMPLES", "12000"))
COUNTS: dict[str, int] = {}
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

pytestmark = pytest.mark.slow

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
VALID_MANIFEST: dict[str, Any] = {
    "manifest_version": "0.1", "hash_scheme": "v1", "producer": {"name": "p", "version": "1"},
    "subject": {"model": "m"}, "program_hash": "a" * 64, "env_hash": "b" * 64,
    "output_hashes": [{"hash": "c" * 64, "path": "f.parquet"}],
}


def _count(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


@st.composite
def mutated_bytes(draw: st.DrawFn, base: bytes) -> bytes:
    """A valid document with a few random byte edits, insertions and deletions (or plain random bytes)."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.binary(max_size=200))
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 2))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == 0 and data:
            data[at] = draw(st.integers(0, 255))
        elif op == 1:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            del data[at:at + draw(st.integers(1, 8))]
    return bytes(data)


@FUZZ
@given(st.one_of(mutated_bytes(json.dumps(VALID_MANIFEST).encode()), JSON.map(lambda d: json.dumps(d).encode()),
                 st.integers(1, 200_000).map(lambda n: b"[" * n)))
def test_manifest_parser(data: bytes) -> None:
    _count("manifest")
    try:
        report = verify_manifest_bytes(data, subject="fuzz")
    except AttestError as exc:
        assert exc.code.value  # coded
        return
    assert report.level == "schema"


TABLE: Any = None


def _table() -> Any:
    """A real (tiny, unattested) Delta table: the decoder reads sidecars from its storage."""
    import tempfile

    import pyarrow as pa
    from deltalake import write_deltalake

    from carriers.delta.carrier import DeltaCarrier

    path = tempfile.mkdtemp(prefix="attest-fuzz-") + "/t"
    write_deltalake(path, pa.table({"v": [1]}))
    return DeltaCarrier(path)


KEY = st.one_of(
    st.sampled_from([*sorted(props.CARRIER_KEYS), props.LEGACY_KEY_VERSION, props.LEGACY_KEY_OUTPUTS_WHERE,
                     props.LEGACY_KEY_SIDECAR_PATH, props.PREFIX + "program_hash", props.PREFIX + "subject.model",
                     props.PREFIX + "output_hashes.0.hash"]),
    st.text(max_size=30).map(lambda s: props.PREFIX + s),
    st.text(max_size=30).map(lambda s: props.CARRIER_PREFIX + s),
)


@FUZZ
@given(st.dictionaries(KEY, st.text(max_size=40), max_size=12))
def test_metadata_map_decoder(keys: dict[str, str]) -> None:
    global TABLE
    _count("metadata map")
    TABLE = TABLE or _table()
    att = TABLE._decode(Carried(keys=props.attestation_keys(keys), where="fuzz"), "delta:fuzz")
    assert isinstance(att.document, dict)
    assert all(p.code.value for p in att.problems)


SIDECAR = Sidecar(attested_version="1", files=(), inputs=(), manifest="a" * 64, table="delta:x").to_dict()


@FUZZ
@given(st.one_of(mutated_bytes(json.dumps(SIDECAR).encode()), JSON.map(lambda d: json.dumps(d).encode())))
def test_sidecar_parser(data: bytes) -> None:
    _count("sidecar")
    try:
        Sidecar.decode(data, None)
    except SidecarError:
        return


_STATS = {"numRecords": 1, "maxValues": {"v": 2.5}}
COMMIT = b"".join(json.dumps(action).encode() + b"\n" for action in [
    {"commitInfo": {"operation": "WRITE"}},
    {"add": {"path": "a.parquet", "size": 1, "dataChange": True, "partitionValues": {"p": "1"},
             "partitionValues_parsed": {"p": 1}, "stats": json.dumps(_STATS), "stats_parsed": _STATS,
             "deletionVector": {"storageType": "i", "pathOrInlineDv": "abc", "sizeInBytes": 3, "cardinality": 1}}},
    {"remove": {"path": "b.parquet", "dataChange": True}},
    {"metaData": {"id": "x", "schemaString": json.dumps({"type": "struct", "fields": []}),
                  "configuration": {"k": "v\u2028"}}},
    {"protocol": {"minReaderVersion": 1}},
])


@FUZZ
@given(mutated_bytes(COMMIT))
def test_delta_commit_reader(data: bytes) -> None:
    """The commit summary, and the replay of the same bytes as a commit and as a checkpoint (the protocol's rules on
    what one version may hold, typed twins): a coded outcome or problems, never an uncaught exception."""
    _count("delta log")
    try:
        commit = parse_commit(3, data)
    except AttestError as exc:
        assert exc.code.value
        return
    assert commit.version == 3 and isinstance(commit.touches_files, bool) and commit.label()
    state = LogState(version=3)
    state.apply_commit(json_lines(data, "fuzz"), "fuzz")
    assert isinstance(state.comparable(), dict) and all(isinstance(p, str) for p in state.invalid)
    validity = _Validity("fuzz", checkpoint=True)
    for action in json_lines(data, "fuzz"):
        validity.see(action)
    assert all(isinstance(p, str) for p in validity.report())


# Characters where readers of a path disagree, percent-escapes (valid, malformed, not UTF-8) and any character at all.
_PATH_PIECES = st.sampled_from(["%", "%2F", "%2e", "%FF", "%C3", "%C3%A9", "%00", "%25", "/", ".", "..", "#", "?", "[",
                                "]", ":", "\\", " ", "\x00", "é", "²", "٣", "a", "p=1", "file://", "s3://b"])
PATHS = st.lists(_PATH_PIECES | st.characters(), max_size=12).map("".join)


@FUZZ
@given(PATHS)
def test_path_canonicalisation(raw: str) -> None:
    """A Delta add path and an Iceberg location from the log or a manifest: a reason or a path, never an exception
    (a percent-escape that is not UTF-8 raised UnicodeDecodeError, an internal error)."""
    from carriers.core import canonical_relative
    from carriers.iceberg.carrier import _canonical_uri

    _count("paths")
    rel, reason = canonical_relative(raw)
    if rel is None:
        assert reason
    else:
        assert not rel.startswith("/") and all(s not in ("", ".", "..") for s in rel.split("/")), rel
        assert "\x00" not in rel and "#" not in raw and "?" not in raw
    assert _canonical_uri(raw) is None or isinstance(_canonical_uri(raw), str)
    from attest.locations import is_local, is_uri
    from attest.openlineage.naming import dataset_name, location_of
    from carriers.core import under_root
    from carriers.storage.base import local_path_of

    assert isinstance(is_uri(raw), bool) and isinstance(is_local(raw), bool)
    assert local_path_of(raw) is None or isinstance(local_path_of(raw), str)
    assert isinstance(under_root(raw, "s3://b/t"), bool)
    assert isinstance(dataset_name(raw).name, str)
    assert location_of(raw, "t") is None or isinstance(location_of(raw, "t"), str)


def test_report_the_count() -> None:
    """Runs after the fuzzers (file order): prints how many inputs each parser took, with no uncaught exception."""
    total = sum(COUNTS.values())
    print(f"\nfuzzed {total:,} inputs: " + ", ".join(f"{k} {v:,}" for k, v in COUNTS.items()))
    assert set(COUNTS) == {"manifest", "metadata map", "sidecar", "delta log", "paths"}
