"""``attest lineage``: the walk over a table's attested inputs, as text, JSON or a picture."""

from __future__ import annotations

import argparse

from attest.cli.output import EXIT_FAILED, EXIT_OK, EXIT_UNREADABLE, Output
from attest.cli.shared import output_format, storage_options, table_ref, trust_policy
from attest.errors import InvalidArgumentError
from attest.fast.record import record

TYPE_CHECKING = False  # typing is not imported at start-up (attest/fast/; mypy reads the name as typing's)
if TYPE_CHECKING:
    from typing import Any

    from attest.lineage import LineageNode


@record
class LineageResult:
    root: LineageNode
    format: str = "text"  # text | json | dot | mermaid | svg (json is printed by the JSON renderer)

    @property
    def exit_code(self) -> int:
        if self.root.error is not None:
            return EXIT_UNREADABLE
        return EXIT_FAILED if self.root.failed() else EXIT_OK

    def to_json(self) -> Any:
        tree = self.root.to_json()
        # "passed" is the whole walk's outcome (the exit code); the root's own verdict stays as "node_passed".
        facts = self.root.facts()
        out = {**tree, "passed": self.exit_code == EXIT_OK, "node_passed": tree.get("passed", False),
               "summary": facts.summary(self.root), "walk": facts.to_json()}
        if self.root.error is not None:  # the root could not be read: the same shape as any error
            out["errors"] = [{"code": self.root.error, "message": self.root.verdict, "path": self.root.ref}]
        return out

    def human(self) -> str:
        summary = self.root.summary()  # why the walk passed or failed: the last line, the caption of a picture
        if self.format == "dot":
            from attest.render.dot import to_dot

            return to_dot(self.root.graph(), caption=summary)
        if self.format == "mermaid":
            from attest.render.mermaid import to_mermaid

            return to_mermaid(self.root.graph(), caption=summary)
        if self.format == "svg":
            from attest.render.svg import to_svg

            return to_svg(self.root.graph(), caption=summary)
        return "\n".join([*self.root.lines(), summary])


def cmd_lineage(args: argparse.Namespace, out: Output) -> LineageResult:
    from carriers.lineage import walk

    if args.depth < 0:
        raise InvalidArgumentError(f"--depth must be 0 or more, got {args.depth}")
    policy = trust_policy(args)
    ref = table_ref(args)
    fmt = output_format(args)
    with out.status(f"walking the lineage of {ref}") as status:  # each node verified: a deep tree takes a while
        root = walk(ref, version=ref.version, depth=args.depth, level=args.level,
                    storage_options=storage_options(args), policy=policy, on_node=status.at)
    return LineageResult(root, format=fmt)
