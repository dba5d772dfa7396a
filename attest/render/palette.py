"""The colours of an outcome, one table for every picture and HTML view (the audit's words, plus UNCHECKED and the
cut marker NOT WALKED)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Colour:
    fill: str
    stroke: str
    text: str = "#1b1f23"


PALETTE: dict[str, Colour] = {
    "VERIFIED": Colour("#dcf3e1", "#2e7d32"),
    "STALE": Colour("#fff1cc", "#b7791f"),
    "COMPACTED": Colour("#fde7d2", "#c05621"),
    "UNATTESTED": Colour("#eceff1", "#607d8b"),
    "NOT VERIFIED": Colour("#fadbd8", "#c62828"),
    "ERROR": Colour("#f3d5f0", "#7b1f6a"),
    "UNCHECKED": Colour("#ffffff", "#9e9e9e"),
    "NOT WALKED": Colour("#ffffff", "#9e9e9e"),
}

# What each colour means, for legends.
MEANING: dict[str, str] = {
    "VERIFIED": "attested, and the attestation holds",
    "STALE": "attested, but the table changed since",
    "COMPACTED": "attested, files rewritten since (same data claimed)",
    "UNATTESTED": "no attestation: the chain of evidence stops",
    "NOT VERIFIED": "attested, but a check failed",
    "ERROR": "could not be read or checked",
    "UNCHECKED": "recorded without a table location or version: not opened",
    "NOT WALKED": "beyond --depth: recorded inputs the walk did not open",
}


def colour(outcome: str) -> Colour:
    """The colour of an outcome; anything unknown is drawn as a failure, never as verified."""
    return PALETTE.get(outcome, PALETTE["NOT VERIFIED"])
