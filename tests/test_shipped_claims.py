"""Shipped strength claims stay true: every Elo figure that the README, the docs or a training card
quotes (``1290 [1242, 1339]``: a rating and its 95% interval) is one that the leaderboard holds --
an anchor's fixed rating (agents/evaluation/data/anchors/) or a rated line of
results/leaderboard.json, overall or per side. A re-rating that moves a figure fails here until the
card says so: an old figure stays quoted only as "was E [L, H]" (issue: a benchmark standard;
docs/rating.md)."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import pytest

from agents.evaluation.anchors import load_anchors
from tafl_env import VARIANTS

ROOT = Path(__file__).resolve().parent.parent
ELO = re.compile(r"(?<![\d.])(?<!was )(?<!was\n)(-?\d{3,4}) \[(-?\d{3,4}), (-?\d{3,4})\]")
"""A rating and its interval; one written after "was " is a figure a card says has moved."""
CLAIMS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
          *sorted((ROOT / "results" / "training").glob("*/README.md"))]


def _roundings(*values: float) -> set[tuple[int, ...]]:
    """Each value rounded half to even (Python's ``round``, the Markdown's) or half up (the JSON
    keeps one decimal, so ``tafl rate``'s print of the unrounded 1968.52 says 1969)."""
    return set(itertools.product(*({round(v), math.floor(v + 0.5)} for v in values)))


def _figures() -> set[tuple[int, int, int]]:
    """(Elo, low, high), rounded as the Markdown or ``tafl rate`` prints them, of every anchor
    and rated line."""
    out = set()
    for variant in VARIANTS:
        try:
            anchors = load_anchors(variant)
        except FileNotFoundError:       # not built yet: nothing may be quoted from it
            continue
        for a in anchors["anchors"]:
            out |= _roundings(a["rating"], a["low"], a["high"])
    board = json.loads((ROOT / "results" / "leaderboard.json").read_text(encoding="utf-8"))
    for lines in board["variants"].values():
        for line in lines.values():
            for part in (line, line.get("attacker") or {}, line.get("defender") or {}):
                if "elo" in part:
                    out |= _roundings(part["elo"], part["low"], part["high"])
    return out


def test_the_pattern_finds_the_cards_figures():
    text = ("is **942 [893, 990]** Elo; 0.370 [0.306, 0.439] against mcts:100; -267 [-1482, 199]; "
            "said was 950 [902, 997]")
    assert ELO.findall(text) == [("942", "893", "990"), ("-267", "-1482", "199")]


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_elo_is_on_the_leaderboard(path):
    known = _figures()
    quoted = {tuple(int(x) for x in m) for m in ELO.findall(path.read_text(encoding="utf-8"))}
    stale = sorted(quoted - known)
    assert not stale, (f"{path.relative_to(ROOT)} quotes Elo figures that neither an anchor file nor "
                       f"results/leaderboard.json holds: {stale}; re-rate, or say on the card what moved")
