"""The one patch layer shared by the read gate and the write stamps (carriers/spark/intercept.py), without Spark."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from carriers.spark import intercept


class Session:
    """Stands in for a pyspark class: intercept patches classes it finds by module and name."""

    def sql(self, text: str) -> str:
        return f"ran {text}"


class Child(Session):
    pass


TARGET = {(__name__, "Session"): ("sql",)}
CHILD = {(__name__, "Child"): ("sql",)}


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    yield
    for name in intercept.registered():
        intercept.unregister(name)
    assert "sql" in vars(Session) and "sql" not in vars(Child)


def test_befores_run_before_arounds_and_a_refusal_stops_the_call() -> None:
    calls: list[str] = []

    def around(method: str, nxt: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        calls.append(f"around-in {method}")
        out = nxt(*args, **kwargs)
        calls.append("around-out")
        return out

    def gate(name: str, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        calls.append(f"gate {name} {args[0]}")
        if args[0] == "bad":
            raise PermissionError("refused")

    intercept.register("stamp", TARGET, around=around)  # registered first, still runs after the gate's check
    intercept.register("gate", TARGET, gate)
    assert Session().sql("ok") == "ran ok"
    assert calls == ["gate Session.sql ok", "around-in sql", "around-out"]
    calls.clear()
    with pytest.raises(PermissionError):
        Session().sql("bad")
    assert calls == ["gate Session.sql bad"]  # the around (the write lock) was never entered


def test_arounds_nest_in_registration_order_and_can_change_the_result() -> None:
    def tag(label: str) -> intercept.Around:
        def around(method: str, nxt: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return f"{label}({nxt(*args, **kwargs)})"
        return around

    intercept.register("outer", TARGET, around=tag("outer"))
    intercept.register("inner", TARGET, around=tag("inner"))
    assert Session().sql("q") == "outer(inner(ran q))"


def test_one_layer_leaving_never_removes_the_other() -> None:
    seen: list[str] = []
    intercept.register("stamp", TARGET, around=lambda m, nxt, a, k: "stamped " + nxt(*a, **k))
    intercept.register("gate", TARGET, lambda n, o, a, k: seen.append(a[0]))
    intercept.unregister("stamp")  # the first to register leaves first: the gate must keep gating
    assert Session().sql("x") == "ran x" and seen == ["x"]
    intercept.register("stamp", TARGET, around=lambda m, nxt, a, k: "stamped " + nxt(*a, **k))
    intercept.unregister("gate")
    assert Session().sql("y") == "stamped ran y" and seen == ["x"]
    intercept.unregister("stamp")
    assert Session.sql is vars(Session)["sql"] and Session().sql("z") == "ran z"
    assert not hasattr(Session.sql, "__wrapped__")  # the original is back, not a wrapper around it


def test_an_inherited_method_is_uncovered_again() -> None:
    intercept.register("gate", CHILD, lambda n, o, a, k: None)
    assert "sql" in vars(Child)
    intercept.unregister("gate")
    assert "sql" not in vars(Child) and Child().sql("q") == "ran q"
