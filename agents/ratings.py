"""Ratings: Bradley–Terry (logistic Elo) with a side term, fitted to tournament games.

**Rating model.** Since Tafl is asymmetric, the model has a side term::

    P(attacker scores) = σ((r_att − r_def + h) / s),   s = 400 / ln 10   (Elo scale)

where ``r_att`` is the rating of the agent playing the attackers, ``r_def`` that of the agent playing
the defenders and ``h`` the attackers' side advantage in Elo (negative when the defenders are
favoured). Each game contributes its attacker score ``y ∈ {0, ½, 1}`` to the Bernoulli-form
log-likelihood ``y log p + (1 − y) log(1 − p)`` (a draw counts as half a win and half a loss). The
ratings and ``h`` maximise that log-likelihood plus a Gaussian prior ``N(0, prior_sd²)`` (Elo) on
every rating and on ``h`` (a tiny L2 penalty, default ``prior_sd = 1000`` Elo): it keeps perfect
scores finite and pins the otherwise free common offset, so the fit has mean 0; the ratings are then
shifted so that the ``anchor`` agent is 0 (or left with mean 0). The maximisation is Newton's method
with step halving (the objective is strictly concave). 95% intervals come from a bootstrap over
games, stratified by (attacker agent, defender agent) cell and seeded: each replicate resamples
every cell's games with replacement and refits.

    >>> round(elo_difference(0.75), 1)
    190.8
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .stats import attacker_score

__all__ = ["ELO_SCALE", "DEFAULT_PRIOR_SD", "DEFAULT_BOOTSTRAP", "elo_difference", "expected_score",
           "fit_bradley_terry", "elo_ratings"]

ELO_SCALE = 400.0 / math.log(10.0)
"""Elo points per logit: ``P = σ(Δ / ELO_SCALE)``, so a 400-point gap is 10:1 odds."""

DEFAULT_PRIOR_SD = 1000.0
DEFAULT_BOOTSTRAP = 200


def elo_difference(p: float) -> float:
    """The Elo gap that gives an expected score ``p``: ``400 log10(p / (1 − p))``."""
    return ELO_SCALE * math.log(p / (1.0 - p))


def expected_score(diff: float) -> float:
    """The expected score of a player ``diff`` Elo stronger: ``σ(diff / s)``."""
    return 1.0 / (1.0 + math.exp(-diff / ELO_SCALE))


def _cells(att: np.ndarray, dfd: np.ndarray, y: np.ndarray, k: int):
    """Aggregate games into (attacker, defender) cells: index arrays, counts, score sums."""
    key = att * k + dfd
    uniq, inv = np.unique(key, return_inverse=True)
    n = np.bincount(inv).astype(float)
    s = np.bincount(inv, weights=y)
    return uniq // k, uniq % k, n, s


def _objective(x, i, j, n, s, lam, side):
    z = x[i] - x[j] + (x[-1] if side else 0.0)
    # s log σ(z) + (n − s) log σ(−z), computed stably
    ll = -(s * np.logaddexp(0.0, -z) + (n - s) * np.logaddexp(0.0, z)).sum()
    return ll - 0.5 * lam * float(x @ x)


def fit_bradley_terry(attackers: Sequence[int], defenders: Sequence[int], scores: Sequence[float],
                      n_players: int, *, side_advantage: bool = True,
                      prior_sd: float | None = DEFAULT_PRIOR_SD, max_iter: int = 100,
                      tol: float = 1e-10) -> tuple[np.ndarray, float]:
    """Maximum a posteriori Bradley–Terry–Elo ratings with a side term (module docstring).

    Args:
        attackers, defenders: per game, the index (0 … n_players−1) of the agent on each side.
        scores: per game, the attacker's score (1, ½, 0).
        side_advantage: fit ``h``; when False, ``h = 0``.
        prior_sd: the sd (Elo) of the Gaussian prior on every rating and on ``h``; ``None`` or
            ``inf`` for pure maximum likelihood (then perfect scores diverge).

    Returns:
        ``(ratings, h)`` in Elo, ratings with mean 0.

    >>> att, dfd = [0] * 4 + [1] * 4, [1] * 4 + [0] * 4      # each attacks 4 times
    >>> r, h = fit_bradley_terry(att, dfd, [1, 1, 1, 0] * 2, 2, prior_sd=None)
    >>> round(float(r[0] - r[1]), 3), round(h, 1)          # attackers score 3/4: h = 400 log10 3
    (0.0, 190.8)
    """
    att = np.asarray(attackers, dtype=np.intp)
    dfd = np.asarray(defenders, dtype=np.intp)
    y = np.asarray(scores, dtype=float)
    if not (att.shape == dfd.shape == y.shape):
        raise ValueError("attackers, defenders and scores must have the same length")
    k = int(n_players)
    if len(att) and (att.min() < 0 or dfd.min() < 0 or max(att.max(), dfd.max()) >= k):
        raise ValueError("player indices must lie in 0 … n_players-1")
    if np.any((y < 0) | (y > 1)):
        raise ValueError("scores must lie in [0, 1]")
    i, j, n, s = _cells(att, dfd, y, k) if len(att) else (att, dfd, y, y)
    return _fit_cells(i, j, n, s, k, side_advantage, prior_sd, max_iter, tol)


def _fit_cells(i, j, n, s, k, side, prior_sd, max_iter=100, tol=1e-10):
    lam = 0.0 if prior_sd is None or not np.isfinite(prior_sd) else (ELO_SCALE / prior_sd) ** 2
    dim = k + (1 if side else 0)
    x = np.zeros(dim)
    if len(i) == 0:
        return np.zeros(k), 0.0
    # design: +1 at the attacker, −1 at the defender, +1 at h
    rows = np.arange(len(i))
    design = np.zeros((len(i), dim))
    np.add.at(design, (rows, i), 1.0)
    np.add.at(design, (rows, j), -1.0)
    if side:
        design[:, -1] = 1.0
    f = _objective(x, i, j, n, s, lam, side)
    for _ in range(max_iter):
        z = design @ x
        p = 1.0 / (1.0 + np.exp(-z))
        grad = design.T @ (s - n * p) - lam * x
        w = n * p * (1.0 - p)
        neg_hess = (design * w[:, None]).T @ design + lam * np.eye(dim)
        if lam > 0:
            delta = np.linalg.solve(neg_hess, grad)
        else:
            delta = np.linalg.lstsq(neg_hess, grad, rcond=None)[0]
        t = 1.0
        while True:
            cand = x + t * delta
            fc = _objective(cand, i, j, n, s, lam, side)
            if fc >= f - 1e-12 or t < 1e-6:
                break
            t *= 0.5
        x, f_old, f = cand, f, fc
        if np.max(np.abs(t * delta)) < tol or abs(f - f_old) < tol * max(1.0, abs(f)):
            break
    r = x[:k] - x[:k].mean()
    h = float(x[-1]) if side else 0.0
    return r * ELO_SCALE, h * ELO_SCALE


def elo_ratings(games: Sequence[Mapping[str, Any]], names: Sequence[str], *, anchor: str | None = None,
                bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, prior_sd: float | None = DEFAULT_PRIOR_SD,
                side_advantage: bool = True, level: float = 0.95) -> dict[str, Any]:
    """Ratings of ``names`` from game rows (``attacker``, ``defender``, ``result``), with intervals.

    ``anchor``: the agent whose rating is 0 (default: the mean is 0). The intervals are the
    ``level`` percentile intervals of ``bootstrap`` stratified bootstrap replicates (seeded by
    ``seed``; none when ``bootstrap`` is 0).
    """
    names = list(names)
    index = {name: x for x, name in enumerate(names)}
    if anchor is not None and anchor not in index:
        raise ValueError(f"anchor {anchor!r} is not one of the agents {names}")
    k = len(names)
    att = np.array([index[g["attacker"]] for g in games], dtype=np.intp)
    dfd = np.array([index[g["defender"]] for g in games], dtype=np.intp)
    y = np.array([attacker_score(g["result"]) for g in games], dtype=float)

    def shift(r):
        return r - (r[index[anchor]] if anchor is not None else r.mean())

    if len(games):
        i, j, n, s = _cells(att, dfd, y, k)
    else:
        i = j = np.zeros(0, dtype=np.intp)
        n = s = np.zeros(0)
    r, h = _fit_cells(i, j, n, s, k, side_advantage, prior_sd)
    r = shift(r)
    low = high = None
    h_low = h_high = None
    if bootstrap and len(games):
        rng = np.random.default_rng(seed)
        key = att * k + dfd
        cell_of = np.searchsorted(i * k + j, key)
        # per cell: counts of attacker wins, draws, losses
        wins = np.bincount(cell_of, weights=(y == 1.0), minlength=len(i))
        draws = np.bincount(cell_of, weights=(y == 0.5), minlength=len(i))
        probs = np.stack([wins, draws, n - wins - draws], axis=1) / n[:, None]
        reps_r = np.empty((bootstrap, k))
        reps_h = np.empty(bootstrap)
        for b in range(bootstrap):
            counts = np.array([rng.multinomial(int(nc), pc) for nc, pc in zip(n, probs)])
            sb = counts[:, 0] + 0.5 * counts[:, 1]
            rb, hb = _fit_cells(i, j, n, sb, k, side_advantage, prior_sd)
            reps_r[b] = shift(rb)
            reps_h[b] = hb
        q = [50 * (1 - level), 50 * (1 + level)]
        low, high = np.percentile(reps_r, q, axis=0)
        h_low, h_high = (float(v) for v in np.percentile(reps_h, q))
    ratings = []
    for x, name in enumerate(names):
        mine = [g for g in games if name in (g["attacker"], g["defender"])]
        pts = sum(attacker_score(g["result"]) if g["attacker"] == name else 1 - attacker_score(g["result"])
                  for g in mine)
        ratings.append({"name": name, "rating": float(r[x]),
                        "low": float(low[x]) if low is not None else None,
                        "high": float(high[x]) if high is not None else None,
                        "games": len(mine), "score": pts / len(mine) if mine else None})
    ratings.sort(key=lambda row: -row["rating"])
    return {"model": "bradley_terry_elo_with_side_term", "scale": ELO_SCALE, "anchor": anchor,
            "prior_sd": prior_sd, "bootstrap": bootstrap, "bootstrap_seed": seed, "level": level,
            "draws": "half a win", "ratings": ratings,
            "side_advantage": {"elo": h, "low": h_low, "high": h_high,
                               "attacker_expected_score_equal_players": expected_score(h)}}
