"""attest.record behaves as ``dataclasses`` does for the uses the start-up modules make of it: each behaviour is
checked on a class made both ways."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from attest.record import FrozenRecordError, field, record, replace

ROOT = Path(__file__).resolve().parent.parent


def _pair(frozen: bool) -> tuple[Any, Any]:
    """The same class, once with dataclasses and once with record."""

    as_dataclass = dataclasses.dataclass(frozen=True) if frozen else dataclasses.dataclass
    as_record = record(frozen=True) if frozen else record

    @as_dataclass
    class Thing:
        a: int
        b: str | None = None
        c: list[int] = dataclasses.field(default_factory=list)
        d: bool = dataclasses.field(default=False, compare=False)
        e: ClassVar[int] = 5

    dc = Thing

    @as_record
    class Thing:  # type: ignore[no-redef]
        a: int
        b: str | None = None
        c: list[int] = field(default_factory=list)
        d: bool = field(default=False, compare=False)
        e: ClassVar[int] = 5

    return dc, Thing


@pytest.mark.parametrize("frozen", [False, True])
def test_init_repr_and_equality_as_dataclasses(frozen: bool) -> None:
    dc, rc = _pair(frozen)
    for args, kwargs in (((1,), {}), ((1, "x"), {}), ((), {"a": 2, "c": [3], "d": True}), ((1, "x", [1], True), {})):
        x, y = dc(*args, **kwargs), rc(*args, **kwargs)
        assert repr(x) == repr(y)
        assert (x.a, x.b, x.c, x.d) == (y.a, y.b, y.c, y.d)
    # A factory makes a new value for every instance; a class variable is no field.
    assert rc(1).c is not rc(1).c and rc.e == 5 and "e=" not in repr(rc(1))
    # compare=False: not in equality (nor in the hash of frozen ones).
    assert rc(1, d=True) == rc(1, d=False) and dc(1, d=True) == dc(1, d=False)
    assert rc(1) != rc(2) and rc(1, "x") != rc(1, "y")
    assert rc(1) != dc(1) and rc(1).__eq__(object()) is NotImplemented
    with pytest.raises(TypeError):
        rc()
    with pytest.raises(TypeError):
        rc(1, zz=2)


def test_frozen_records_refuse_changes_and_hash_by_value() -> None:
    _, rc = _pair(True)
    x = rc(1, "x", [2])
    with pytest.raises(FrozenRecordError):
        x.a = 2
    with pytest.raises(AttributeError):  # dataclasses raises FrozenInstanceError, an AttributeError too
        del x.b
    dc, _ = _pair(True)
    for args in ((1, "x", (), True), (1, "x", (), False), (2, None, (3,))):
        assert hash(rc(*args)) == hash(dc(*args))  # the fields compared, as a tuple (d is not)
    assert len({rc(1, "x", ()), rc(1, "x", (), True), rc(2, "x", ())}) == 2


def test_mutable_records_are_unhashable_and_settable() -> None:
    _, rc = _pair(False)
    x = rc(1)
    x.a = 7
    assert x.a == 7
    with pytest.raises(TypeError):
        hash(x)


def test_replace_copy_and_pickle() -> None:
    _, rc = _pair(True)
    x = rc(1, "x", [2], True)
    y = replace(x, b="y")
    assert (y.a, y.b, y.c, y.d) == (1, "y", [2], True) and x.b == "x"
    with pytest.raises(TypeError, match="no field 'zz'"):
        replace(x, zz=1)
    with pytest.raises(TypeError, match="takes a record"):
        replace(object())
    assert copy.copy(x) == x and copy.deepcopy(x) == x
    assert pickle.loads(pickle.dumps(Problem_like())) == Problem_like()


@record(frozen=True)
class Problem_like:  # module level: pickle finds a class by its name
    code: str = "c"
    message: str = "m"


def test_a_field_without_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="follows a field with a default"):
        record(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1}))
    with pytest.raises(ValueError):
        field(default=1, default_factory=list)


def test_post_init_and_inheritance() -> None:
    @record
    class Base:
        a: int
        b: int = 2

        def __post_init__(self) -> None:
            self.seen = True

    @record
    class Child(Base):
        c: int = 3

    child = Child(1, c=4)
    assert (child.a, child.b, child.c, child.seen) == (1, 2, 4, True)
    assert repr(child).endswith("Child(a=1, b=2, c=4)")


def test_verifying_a_manifest_imports_no_dataclasses_or_typing(tmp_path: Path) -> None:
    """The point of attest.record: a whole ``attest verify m.json --artifacts-dir D`` (and a failing one, which
    prints a report) runs without importing typing, dataclasses or inspect (~13 ms of CPU, docs/hashing.md)."""
    from attest.build import build_manifest
    from attest.hashing import hash_file

    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "a.bin").write_bytes(b"abc")
    manifest = build_manifest(model="m", program_hash="a" * 64, env_hash="a" * 64,
                              outputs=[("a.bin", hash_file(tmp_path / "art" / "a.bin"))])
    (tmp_path / "m.json").write_text(manifest.to_json())
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.bin").write_bytes(b"abd")
    for folder, code in (("art", 0), ("bad", 1)):
        script = ("import sys\n"
                  "before = set(sys.modules)\n"
                  f"sys.argv = ['attest', 'verify', {str(tmp_path / 'm.json')!r}, '--artifacts-dir', "
                  f"{str(tmp_path / folder)!r}]\n"
                  "from attest.cli import main\n"
                  "code = main()\n"
                  "print([m for m in ('typing', 'dataclasses', 'inspect') if m in sys.modules and m not in before])\n"
                  "sys.exit(code)\n")
        out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == code, out.stdout + out.stderr
        assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_frozen_fields_with_any_name_are_set_where_reads_find_them() -> None:
    # A frozen record's __init__ writes its fields straight into the instance dict through a local name: no field's
    # name may shadow it, and the values must read back as object.__setattr__ would have left them.
    @record(frozen=True)
    class Odd:
        d: int
        _d0: int
        _d1: int = 3
        self_: str = "s"

    odd = Odd(1, 2)
    assert (odd.d, odd._d0, odd._d1, odd.self_) == (1, 2, 3, "s")
    assert vars(odd) == {"d": 1, "_d0": 2, "_d1": 3, "self_": "s"}
    with pytest.raises(FrozenRecordError):
        odd.d = 5  # type: ignore[misc]


def test_many_records_pauses_the_cycle_collector_and_restores_its_state() -> None:
    import gc

    from attest.record import many_records

    assert gc.isenabled()
    with many_records():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), many_records():
        raise RuntimeError("a failure inside still restores it")
    assert gc.isenabled()
    gc.disable()
    try:
        with many_records():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()
