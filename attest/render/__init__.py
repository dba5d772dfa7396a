"""Views of attestations, verify reports, audits and lineage walks: DOT, Mermaid, SVG and notebook HTML.

Renderers only read result objects (``attest.lineage``, ``attest.verify``); they never open a table. Every string
that came from a table, a sidecar or a manifest is escaped for the format it is written into.
"""
