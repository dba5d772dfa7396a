"""One patch layer over pyspark's driver API, shared by the write guard (hook.py) and the read gate (gate.py).

Spark offers no hook that runs *before* a query executes and can stop it from Python: a QueryExecutionListener is
called after, analyzer check rules are fixed when a session is built, planner strategies are JVM classes. The
driver's Python API is the last place every statement of a PySpark job passes through before the JVM executes it,
so the write guard and the read gate wrap it there.

Several layers wrap some of the same methods (``SparkSession.sql``, the writers): the read gate, and the write
stamping + write guard (carriers/spark/stamp.py). Patching them twice, each layer restoring "its" original on
uninstall, would let the first layer to leave silently remove the other one (a read gate that stops gating when a
write hook is uninstalled). So there is one layer: each patched method runs every registered *before* interceptor
that asked for it (registration order; raising stops the call), then the *around* interceptors (each gets the
call to make, registration order from the outside in), then the original; a method is patched while at least one
interceptor wants it and restored when none does. Befores run first so a refused read never takes a write lock.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Around", "Interceptor", "Target", "register", "registered", "unregister"]

# (module, class) -> method names. A property (DataFrame.rdd) is wrapped on its getter; a classmethod stays one (the
# class is passed where an instance would be), and so does a staticmethod (None is passed there).
Target = Mapping[tuple[str, str], Sequence[str]]
# Called before the original with (qualified method name, the instance, args, kwargs); raising stops the call.
Interceptor = Callable[[str, Any, tuple[Any, ...], dict[str, Any]], None]
# Wraps the call: (method name as in the class, the original-like callable taking (instance, *args, **kwargs),
# the args with the instance first, kwargs) -> the call's result.
Around = Callable[[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]

_LOCK = threading.RLock()
_REGISTRY: dict[str, tuple[dict[tuple[type, str], str], Interceptor | None, Around | None]] = {}
_ORIGINALS: dict[tuple[type, str], tuple[bool, Any]] = {}  # (defined on the class itself?, the original)


def _resolve(targets: Target) -> dict[tuple[type, str], str]:
    out: dict[tuple[type, str], str] = {}
    for (module_name, class_name), methods in targets.items():
        try:
            cls = getattr(importlib.import_module(module_name), class_name, None)
        except ImportError:
            continue  # another pyspark layout: that class does not exist here
        if not isinstance(cls, type):
            continue
        for method in methods:
            if hasattr(cls, method):
                out[(cls, method)] = f"{class_name}.{method}"
    return out


def _wrapper(cls: type, method: str, original: Any) -> Any:
    if isinstance(original, classmethod):  # DeltaTable.convertToDelta: the class comes first, as an instance would
        return classmethod(_wrapper(cls, method, original.__func__))
    if isinstance(original, staticmethod):  # pyspark.ml.stat's Correlation.corr: None where an instance would be
        function = original.__func__
        on_none = _wrapper(cls, method, lambda _none, *args, **kwargs: function(*args, **kwargs))

        def static(*args: Any, **kwargs: Any) -> Any:
            return on_none(None, *args, **kwargs)

        static.__wrapped__ = function  # type: ignore[attr-defined]
        static.__doc__ = getattr(function, "__doc__", None)
        static.__name__ = method
        return staticmethod(static)

    def run_interceptors(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        with _LOCK:
            chain = [b for wanted, b, _ in _REGISTRY.values() if b is not None and (cls, method) in wanted]
        for callback in chain:
            callback(f"{cls.__name__}.{method}", obj, args, kwargs)

    def call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        run_interceptors(obj, args, kwargs)
        with _LOCK:
            arounds = [a for wanted, _, a in _REGISTRY.values() if a is not None and (cls, method) in wanted]
        inner: Callable[..., Any] = original
        for around in reversed(arounds):  # the first registered is the outermost
            inner = (lambda a, nxt: lambda *xs, **kw: a(method, nxt, xs, kw))(around, inner)
        return inner(obj, *args, **kwargs)

    if isinstance(original, property):
        getter = original.fget
        assert getter is not None

        def get(obj: Any) -> Any:
            run_interceptors(obj, (), {})
            return getter(obj)

        return property(get, original.fset, original.fdel, original.__doc__)

    def wrapped(obj: Any, *args: Any, **kwargs: Any) -> Any:
        return call(obj, args, kwargs)

    wrapped.__wrapped__ = original  # type: ignore[attr-defined]
    wrapped.__doc__ = getattr(original, "__doc__", None)
    wrapped.__name__ = method
    return wrapped


def register(name: str, targets: Target, interceptor: Interceptor | None = None, *,
             around: Around | None = None) -> None:
    """Run ``interceptor`` before, and/or ``around`` around, each of ``targets``' methods (replacing an earlier
    registration of ``name``). Properties take befores only."""
    wanted = _resolve(targets)
    with _LOCK:
        _REGISTRY[name] = (wanted, interceptor, around)
        for cls, method in wanted:
            if (cls, method) in _ORIGINALS:
                continue
            original = vars(cls).get(method, getattr(cls, method))
            _ORIGINALS[(cls, method)] = (method in vars(cls), original)
            setattr(cls, method, _wrapper(cls, method, original))


def unregister(name: str) -> None:
    """Stop running ``name``'s interceptor; restore every method no other interceptor still wants."""
    with _LOCK:
        _REGISTRY.pop(name, None)
        still = {key for wanted, _, _ in _REGISTRY.values() for key in wanted}
        for key in [k for k in _ORIGINALS if k not in still]:
            own, original = _ORIGINALS.pop(key)
            cls, method = key
            if own:
                setattr(cls, method, original)
            else:  # inherited: removing our attribute uncovers the base class's again
                delattr(cls, method)


def registered() -> list[str]:
    with _LOCK:
        return list(_REGISTRY)
