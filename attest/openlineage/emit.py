"""Sending an attestation's RunEvent through openlineage-python's own transports.

Off by default; one switch turns it on: ``ATTEST_OPENLINEAGE=1`` (or ``attest record --openlineage``, or
``install(spark, openlineage=True)``). Where events go is OpenLineage's configuration, never ours: an
``openlineage.yml`` (``$OPENLINEAGE_CONFIG``, the working directory, ``~/.openlineage/``), ``OPENLINEAGE__TRANSPORT__*``
variables, or ``OPENLINEAGE_URL`` for HTTP; with none, openlineage-python's console transport (its log, which the
command line shows on stderr). An event that cannot be sent never undoes the attestation: the result says so, coded
``openlineage_emit_failed``.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attest.errors import Code, Problem

if TYPE_CHECKING:
    from attest.openlineage.event import AttestedRun

SWITCH = "ATTEST_OPENLINEAGE"


def switched_on(flag: bool = False) -> bool:
    """Whether events are wanted: the caller's flag, or ``ATTEST_OPENLINEAGE`` set to 1/true/yes/on."""
    return flag or os.environ.get(SWITCH, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Emitted:
    """What happened to one event: sent (through which transport, under which runId) or not, and why."""

    emitted: bool
    run_id: str | None = None
    transport: str | None = None
    problem: Problem | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"emitted": self.emitted, "run_id": self.run_id, "transport": self.transport}
        if self.problem is not None:
            out["errors"] = [self.problem.to_json()]
        return out

    def line(self) -> str:
        if self.emitted:
            return f"OPENLINEAGE — RunEvent {self.run_id} sent ({self.transport} transport)"
        assert self.problem is not None
        return f"attest: {self.problem.code.value}: {self.problem.message} (the attestation stands)"


def new_client(*, show_console: bool = False) -> Any:
    """An OpenLineageClient configured as OpenLineage configures it. ``show_console``: the console transport's
    events (logged at INFO by openlineage-python) are shown on stderr, never on stdout (--json stays one object)."""
    from openlineage.client import OpenLineageClient

    if show_console:
        console = logging.getLogger("openlineage.client.transport.console")
        if not console.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(message)s"))
            console.addHandler(handler)
            console.setLevel(logging.INFO)
    return OpenLineageClient()


def emit(run: AttestedRun, *, client: Any = None, show_console: bool = False) -> Emitted:
    """Build and send the attestation's RunEvent; every failure is an ``Emitted`` with a coded problem."""
    from attest.openlineage.event import run_event

    try:
        import openlineage.client  # noqa: F401 (present? the extra is optional)
    except ImportError as exc:
        return Emitted(False, problem=Problem(Code.EXTRA_MISSING, f"OpenLineage events need openlineage-python "
                                              f"({exc}): pip install 'recipe-attest[openlineage]'"))
    run_id = None
    try:
        event = run_event(run)
        run_id = event.run.runId
        own = client is None
        client = client or new_client(show_console=show_console)
        try:
            client.emit(event)
        finally:
            if own:
                client.close(timeout=30.0)
        return Emitted(True, run_id=run_id, transport=str(getattr(client.transport, "kind", None)))
    except Exception as exc:  # a transport's failure is reported, never raised: the attestation is written
        return Emitted(False, run_id=run_id, problem=Problem(Code.OPENLINEAGE_EMIT_FAILED,
                                                             f"the OpenLineage event was not sent: "
                                                             f"{type(exc).__name__}: {exc}"))
