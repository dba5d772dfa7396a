"""A function that passes its arguments on to another, typed as taking that other's arguments: the argument list is
written once, on the function that uses it, and mypy checks every call of both against it (``env_identity`` takes
``env_document``'s arguments, ``verify_manifest_bytes`` ``verify_document``'s options). Nothing is changed at run
time, and typing is not imported then (attest/fast/: start-up)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Concatenate, ParamSpec, TypeVar

    P = ParamSpec("P")
    R = TypeVar("R")
    T = TypeVar("T")

__all__ = ["arguments_of", "options_of"]


def arguments_of(source: Callable[P, Any]) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Decorates a function called with ``source``'s arguments (which it hands to ``source``)."""
    def typed(function: Callable[..., R]) -> Callable[P, R]:
        return function

    return typed


def options_of(source: Callable[Concatenate[Any, P], Any]
               ) -> Callable[[Callable[Concatenate[T, ...], R]], Callable[Concatenate[T, P], R]]:
    """Decorates a function called with a first argument of its own and, after it, the arguments ``source`` takes
    after its first (which it hands to ``source``)."""
    def typed(function: Callable[Concatenate[T, ...], R]) -> Callable[Concatenate[T, P], R]:
        return function

    return typed
