"""Plain data classes for the modules every command imports at start-up, without importing ``dataclasses`` (part of
the fast path, attest/fast/; with it switched off, ``ATTEST_FAST=0``, ``record`` is ``dataclasses.dataclass``).

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``): CPU before any command can start
(measured: docs/hashing.md, "No dataclasses, no typing" and "The fast path as one unit").
``record`` gives the subset those modules use — fields from annotations, defaults, ``field(default_factory=...,
compare=False)``, ``frozen``, ``__eq__``/``__hash__``/``__repr__`` as dataclasses writes them — and ``replace``.
tests/test_record.py holds the behaviour equal to ``dataclasses`` for these uses. Modules a command imports
anyway with a heavy engine (Spark, pyiceberg) keep ``dataclasses``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at start-up (mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:
    def dataclass_transform(**_options):  # type checkers only: nothing to do at run time
        return lambda function: function

__all__ = ["FrozenRecordError", "field", "many_records", "record", "replace"]

from attest.fast import ON  # noqa: E402

_MISSING = object()


class FrozenRecordError(AttributeError):
    """An attribute of a frozen record was set or deleted (dataclasses' FrozenInstanceError)."""


class _Field:
    __slots__ = ("compare", "default", "factory", "name")

    def __init__(self, default: Any, factory: Any, compare: bool) -> None:
        self.name = ""
        self.default, self.factory, self.compare = default, factory, compare


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None, compare: bool = True) -> Any:
    """A field's default or default factory, and whether equality (and the hash) compares it."""
    if default is not _MISSING and default_factory is not None:
        raise ValueError("a field takes a default or a default factory, not both")
    if not ON:
        import dataclasses

        if default_factory is not None:
            return dataclasses.field(default_factory=default_factory, compare=compare)
        return dataclasses.field(default=dataclasses.MISSING if default is _MISSING else default, compare=compare)
    return _Field(default, _MISSING if default_factory is None else default_factory, compare)


def _fields(cls: type) -> list[_Field]:
    fields: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__record_fields__", ()):
            fields[f.name] = f
    # The class's own annotations, not inherited ones (inspect.get_annotations: the import this module avoids).
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if "ClassVar" in str(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, _Field) else _Field(value, _MISSING, True)
        f.name = name
        fields[name] = f
        if isinstance(value, _Field):  # the class attribute is the plain default, as dataclasses leaves it
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    return list(fields.values())


def _init(cls: type, fields: list[_Field], frozen: bool) -> Callable[..., None]:
    """``__init__`` compiled from source, as dataclasses does: one positional-or-keyword parameter per field."""
    scope: dict[str, Any] = {"MISSING": _MISSING, "setattr": object.__setattr__}
    params, body, seen_default = [], [], False
    # A frozen record's fields go straight into the instance dict (what object.__setattr__ does for a name without a
    # data descriptor on the class: a manifest of a million outputs builds a million records; docs/hashing.md, "A
    # manifest of a million files"), through object.__setattr__ only where the class gives the name a descriptor.
    direct = frozen and not any(hasattr(type(getattr(cls, f.name, None)), "__set__") for f in fields)
    names = {f.name for f in fields}
    local = next(f"_d{i}" for i in range(len(names) + 1) if f"_d{i}" not in names)  # no field's name
    if direct:
        body.append(f"{local} = self.__dict__")
    for f in fields:
        if f.default is not _MISSING:
            scope[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
            seen_default = True
        elif f.factory is not _MISSING:
            scope[f"_f_{f.name}"] = f.factory
            params.append(f"{f.name}=MISSING")
            seen_default = True
        elif seen_default:
            raise TypeError(f"{cls.__name__}: non-default field {f.name!r} follows a field with a default")
        else:
            params.append(f.name)
        value = f"_f_{f.name}() if {f.name} is MISSING else {f.name}" if f.factory is not _MISSING else f.name
        if direct:
            body.append(f"{local}[{f.name!r}] = {value}")
        else:
            body.append(f"setattr(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n " + "\n ".join(body or ["pass"])
    exec(source, scope)
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _values(obj: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(getattr(obj, n) for n in names)


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, *, frozen: bool = False) -> Any:
    """Make ``cls`` a data class: ``@record`` or ``@record(frozen=True)``."""
    if not ON:
        import dataclasses

        return dataclasses.dataclass(frozen=frozen) if cls is None else dataclasses.dataclass(cls, frozen=frozen)

    def wrap(cls: type[T]) -> type[T]:
        fields = _fields(cls)
        names = tuple(f.name for f in fields)
        compared = tuple(f.name for f in fields if f.compare)
        setattr(cls, "__record_fields__", tuple(fields))  # noqa: B010 - not a name mypy knows on the class
        setattr(cls, "__init__", _init(cls, fields, frozen))  # noqa: B010

        def __repr__(self: Any) -> str:
            return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

        def __eq__(self: Any, other: Any) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return _values(self, compared) == _values(other, compared)

        cls.__repr__ = __repr__  # type: ignore[method-assign]
        cls.__eq__ = __eq__  # type: ignore[method-assign]
        if frozen:
            def __setattr__(self: Any, name: str, value: Any) -> None:
                raise FrozenRecordError(f"cannot assign to field {name!r}")

            def __delattr__(self: Any, name: str) -> None:
                raise FrozenRecordError(f"cannot delete field {name!r}")

            def __hash__(self: Any) -> int:
                return hash(_values(self, compared))

            cls.__setattr__ = __setattr__  # type: ignore[method-assign]
            cls.__delattr__ = __delattr__  # type: ignore[method-assign]
            cls.__hash__ = __hash__  # type: ignore[method-assign]
        else:
            cls.__hash__ = None  # type: ignore[assignment] # mutable and compared by value: unhashable
        return cls

    return wrap if cls is None else wrap(cls)


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` (dataclasses.replace)."""
    if not ON:
        import dataclasses

        made_: T = dataclasses.replace(obj, **changes)  # type: ignore[type-var]
        return made_
    fields = getattr(type(obj), "__record_fields__", None)
    if fields is None:
        raise TypeError(f"replace() takes a record, not {type(obj).__name__}")
    unknown = set(changes) - {f.name for f in fields}
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    values = {f.name: getattr(obj, f.name) for f in fields}
    values.update(changes)
    made: T = type(obj)(**values)
    return made


class many_records:
    """``with many_records():`` builds a large batch of small objects (a manifest's million outputs, a sidecar's
    million files) with the cycle collector paused, and restores its state after.

    The objects built hold no cycles, but each allocation counts toward a collection, and the full collections on the
    way traverse every object alive (the parsed document included; measured in docs/hashing.md, "A manifest of a
    million files"). Pausing it changes when memory of cycles is reclaimed, never what is built; a class, not
    contextlib, which is not imported at start-up. With the fast path off the collector is left alone."""

    def __enter__(self) -> None:
        import gc

        self._was_enabled = gc.isenabled()
        if ON:  # the fast path off: the collector is left as it is
            gc.disable()

    def __exit__(self, *_exc: object) -> None:
        import gc

        if self._was_enabled:
            gc.enable()
