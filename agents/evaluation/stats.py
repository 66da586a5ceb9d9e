"""Game statistics: scores, Wilson intervals, and tables per pairing and per side.

**Scores and draws.** A game scores 1 for the winner, 0 for the loser and ½ for each side in a
draw (a truncated game, reason ``truncated``, is a draw). *Win rates* count wins only; *scores*
count a draw as half a win; Wilson intervals are given for both (for the score, with the fractional
number of "successes" ``wins + draws/2``, the usual approximation).

    >>> lo, hi = wilson_interval(5, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.2366, 0.7634)
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Iterable, Mapping, Sequence

from tafl_env.rules import SIDES

__all__ = ["attacker_score", "wilson_interval", "wdl", "pairing_table", "side_table"]


def attacker_score(result: str) -> float:
    """1 for an attacker win, 0 for a defender win, ½ for a draw."""
    return {"attacker": 1.0, "defender": 0.0, "draw": 0.5}[result]


def wilson_interval(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (95% for ``z = 1.96``).

    ``successes`` may be fractional (a score with draws as half wins). ``n = 0`` gives ``(0, 1)``.

    >>> [round(v, 4) for v in wilson_interval(0, 10)]
    [0.0, 0.2775]
    >>> [round(v, 4) for v in wilson_interval(10, 10)]
    [0.7225, 1.0]
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n]; got {successes} of {n}")
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(max(p * (1 - p) / n + z2 / (4 * n * n), 0.0))
    return max(0.0, centre - half), min(1.0, centre + half)


def wdl(scores: Iterable[float]) -> dict[str, Any]:
    """Wins, draws, losses, win rate and score with Wilson intervals, from scores 1/½/0."""
    scores = list(scores)
    n = len(scores)
    w = sum(1 for x in scores if x == 1.0)
    d = sum(1 for x in scores if x == 0.5)
    pts = w + 0.5 * d
    wl, wh = wilson_interval(w, n)
    sl, sh = wilson_interval(pts, n)
    return {"games": n, "wins": w, "draws": d, "losses": n - w - d,
            "win_rate": w / n if n else None, "win_rate_low": wl, "win_rate_high": wh,
            "score": pts / n if n else None, "score_low": sl, "score_high": sh}


def pairing_table(games: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """One row per unordered pair (A, B), from A's point of view: overall, as attacker, as defender.

    ``games`` rows need ``attacker``, ``defender`` (agent names) and ``result``.
    """
    rows = []
    for a, b in combinations(names, 2):
        as_att = [attacker_score(g["result"]) for g in games if g["attacker"] == a and g["defender"] == b]
        as_def = [1.0 - attacker_score(g["result"]) for g in games if g["attacker"] == b and g["defender"] == a]
        rows.append({"agent": a, "opponent": b, **wdl(as_att + as_def),
                     "as_attacker": wdl(as_att), "as_defender": wdl(as_def)})
    return rows


def side_table(games: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """One row per agent and side: its results with that side against every opponent."""
    rows = []
    for name in names:
        for side in SIDES:
            if side == "attacker":
                scores = [attacker_score(g["result"]) for g in games if g["attacker"] == name]
            else:
                scores = [1.0 - attacker_score(g["result"]) for g in games if g["defender"] == name]
            rows.append({"agent": name, "side": side, **wdl(scores)})
    return rows

