"""``attest.verify(...)``, ``attest.record(...)``, ``attest.lineage(...)``: the package and the two modules of those
names are callable, each call being attest.api's function of the same name. A plain function ``attest.verify``
could not stay one: importing ``attest.verify.table`` sets the package over it. ``types`` is imported by the
interpreter at start-up already; attest.api is imported on the first call only."""

from __future__ import annotations

import sys
from types import ModuleType

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["make_callable"]


def make_callable(module_name: str) -> None:
    """Calling module ``module_name`` (``attest.verify``) calls ``attest.api.<last part of the name>``."""
    function = module_name.rpartition(".")[2]

    class CallableModule(ModuleType):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            import importlib

            return getattr(importlib.import_module("attest.api"), function)(*args, **kwargs)

    CallableModule.__call__.__doc__ = f"attest.api.{function}: see its docstring (help(attest.api.{function}))."
    sys.modules[module_name].__class__ = CallableModule
