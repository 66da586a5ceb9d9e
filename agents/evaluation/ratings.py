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
with step halving (the objective is strictly concave).

**Intervals.** The 95% interval of a rating (relative to the anchor, or to the mean) or of ``h``
is a profile-likelihood interval: every value ``v`` at which the best penalised log-likelihood
with that quantity held at ``v`` lies within ``χ²₁(0.95) / 2 = 1.92`` of the maximum. Its width
follows the information in the games: a few games give wide intervals, many games narrow ones,
and a one-sided record leaves the far end to the prior (an agent that won all of 8 games is
known to be better, not by how much). The intervals are deterministic. (A bootstrap that resampled
games within each (attacker, defender) cell collapsed to a point whenever every cell was
unanimous — ``[364.90, 364.90]`` from 8 games — which is why it is gone.)

**Fixed anchors.** :func:`ratings_against_fixed` fits the same model with some ratings and ``h``
held at given values (a benchmark's anchors, :mod:`agents.evaluation.anchors`): they enter every
game's logit as a fixed offset, only the other agents' ratings are free, and rating a new agent
never moves an anchor. Its prior is centred on a given rating (the pinned anchor's) rather than
on the mean.

    >>> round(elo_difference(0.75), 1)
    190.8
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .stats import attacker_score

__all__ = ["ELO_SCALE", "DEFAULT_PRIOR_SD", "DEFAULT_BOOTSTRAP", "elo_difference", "expected_score",
           "fit_bradley_terry", "elo_ratings", "ratings_against_fixed"]

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


MAX_STEP = 4.0
"""The longest Newton step, in logits (about 700 Elo), of :meth:`_Model.maximise`."""


def _lam(prior_sd) -> float:
    return 0.0 if prior_sd is None or not np.isfinite(prior_sd) else (ELO_SCALE / prior_sd) ** 2


class _Model:
    """The penalised log-likelihood of cell data in logits: ``x`` = (ratings…, h)."""

    def __init__(self, i, j, n, s, k, side, prior_sd, *, design=None, offset=None):
        self.n, self.s, self.k, self.side = n, s, k, side
        self.lam = _lam(prior_sd)
        self.dim = k + (1 if side else 0)
        if design is None:
            rows = np.arange(len(i))
            design = np.zeros((len(i), self.dim))
            np.add.at(design, (rows, i), 1.0)
            np.add.at(design, (rows, j), -1.0)
            if side:
                design[:, -1] = 1.0
        self.design = design
        # a fixed part of every game's logit (the fixed anchors' ratings and side term), or 0
        self.offset = np.zeros(len(design)) if offset is None else np.asarray(offset, dtype=float)
        # with no prior and no offset the common offset of the ratings is free: pin it (mean 0)
        free_offset = self.lam == 0 and offset is None
        self.base = np.append(np.ones(k), [0.0] * (self.dim - k))[None] if free_offset else np.zeros((0, self.dim))

    def value(self, x) -> float:
        z = self.design @ x + self.offset
        # s log σ(z) + (n − s) log σ(−z), computed stably
        ll = -(self.s * np.logaddexp(0.0, -z) + (self.n - self.s) * np.logaddexp(0.0, z)).sum()
        return float(ll - 0.5 * self.lam * float(x @ x))

    def grad_neg_hess(self, x):
        p = np.exp(-np.logaddexp(0.0, -(self.design @ x + self.offset)))   # σ(z) without overflow
        grad = self.design.T @ (self.s - self.n * p) - self.lam * x
        w = self.n * p * (1.0 - p)
        return grad, (self.design * w[:, None]).T @ self.design + self.lam * np.eye(self.dim)

    def maximise(self, x, constraints=None, max_iter: int = 100, tol: float = 1e-10):
        """Newton's method with step halving from a feasible ``x``, keeping ``constraints @ x`` fixed
        (the rows of ``self.base`` too); the objective is concave, so this finds the maximum."""
        a = self.base if constraints is None else np.vstack([self.base, constraints])
        m = len(a)
        f = self.value(x)
        for _ in range(max_iter):
            grad, neg_hess = self.grad_neg_hess(x)
            if m:
                kkt = np.block([[neg_hess, a.T], [a, np.zeros((m, m))]])
                rhs = np.concatenate([grad, np.zeros(m)])
                delta = np.linalg.lstsq(kkt, rhs, rcond=None)[0][: self.dim]
            else:
                delta = np.linalg.solve(neg_hess, grad)
            # a Newton step from far off (a flat tail of the likelihood) can be huge: cap its length
            t = min(1.0, MAX_STEP / max(float(np.max(np.abs(delta))), 1e-300))
            while True:
                cand = x + t * delta
                fc = self.value(cand)
                if fc >= f - 1e-12 or t < 1e-6:
                    break
                t *= 0.5
            if fc < f - 1e-12:      # no step improves: x is the maximum to working precision
                break
            x, f_old, f = cand, f, fc
            if np.max(np.abs(t * delta)) < tol or abs(f - f_old) < tol * max(1.0, abs(f)):
                break
        return x, f


def _fit_cells(i, j, n, s, k, side, prior_sd, max_iter=100, tol=1e-10):
    if len(i) == 0:
        return np.zeros(k), 0.0
    x, _ = _Model(i, j, n, s, k, side, prior_sd).maximise(np.zeros(k + (1 if side else 0)), None, max_iter, tol)
    r = x[:k] - x[:k].mean()
    h = float(x[-1]) if side else 0.0
    return r * ELO_SCALE, h * ELO_SCALE


PROFILE_LIMIT = 60.0
"""Logits (about 10,000 Elo) beyond the fit at which a profile interval counts as unbounded."""


def _profile_interval(model: _Model, x_hat, f_hat: float, c, level: float, tol: float = 1e-5):
    """The ``level`` profile-likelihood interval of ``c @ x`` (logits): every value ``v`` whose
    best penalised log-likelihood under ``c @ x = v`` lies within ``χ²₁(level) / 2`` of the maximum.
    An end the objective never drops below that at is ±inf (only without a prior)."""
    from statistics import NormalDist

    drop = NormalDist().inv_cdf(0.5 + level / 2) ** 2 / 2
    v_hat = float(c @ x_hat)
    cc = float(c @ c)
    _, neg_hess = model.grad_neg_hess(x_hat)
    step0 = max(math.sqrt(max(float(c @ np.linalg.pinv(neg_hess) @ c), 0.0)), 0.05)

    def profile(v, x_from):
        x0 = x_from + (v - float(c @ x_from)) / cc * c
        return model.maximise(x0, c[None])

    ends = []
    for sign in (-1.0, 1.0):
        inside, x_in = 0.0, x_hat
        step = step0
        while True:               # walk out until the profile drops far enough
            x_out, f_out = profile(v_hat + sign * step, x_in)
            if f_out < f_hat - drop:
                outside = step
                break
            inside, x_in = step, x_out
            if step > PROFILE_LIMIT:
                outside = None
                break
            step *= 2.0
        if outside is None:
            ends.append(sign * math.inf)
            continue
        while outside - inside > tol:   # bisect between the last point inside and the first outside
            mid = 0.5 * (inside + outside)
            x_mid, f_mid = profile(v_hat + sign * mid, x_in)
            if f_mid >= f_hat - drop:
                inside, x_in = mid, x_mid
            else:
                outside = mid
        ends.append(v_hat + sign * 0.5 * (inside + outside))
    return ends[0], ends[1]


def elo_ratings(games: Sequence[Mapping[str, Any]], names: Sequence[str], *, anchor: str | None = None,
                bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, prior_sd: float | None = DEFAULT_PRIOR_SD,
                side_advantage: bool = True, level: float = 0.95) -> dict[str, Any]:
    """Ratings of ``names`` from game rows (``attacker``, ``defender``, ``result``), with intervals.

    ``anchor``: the agent whose rating is 0 (default: the mean is 0). The intervals are ``level``
    profile-likelihood intervals (module docstring) of each rating relative to the anchor (or the
    mean) and of the side advantage; ``bootstrap=0`` leaves them out. (``bootstrap`` and ``seed``
    once set a resampling bootstrap; any other value of ``bootstrap`` now just asks for intervals,
    and ``seed`` is unused: the intervals are deterministic.)

    Eight games won by one agent, four on each side, leave its rating wide open; a thousand
    mixed games pin it down:

    >>> few = [{"attacker": a, "defender": d, "result": w} for a, d, w in
    ...        [("ppo", "rnd", "attacker"), ("rnd", "ppo", "defender")] * 4]
    >>> r = {row["name"]: row for row in elo_ratings(few, ["rnd", "ppo"], anchor="rnd")["ratings"]}
    >>> r["ppo"]["high"] - r["ppo"]["low"] > 1000
    True
    >>> many = [{"attacker": a, "defender": d, "result": w} for a, d, w in
    ...         [("ppo", "rnd", "attacker"), ("ppo", "rnd", "defender"), ("rnd", "ppo", "defender"),
    ...          ("ppo", "rnd", "attacker"), ("rnd", "ppo", "attacker"), ("rnd", "ppo", "defender")] * 200]
    >>> r = {row["name"]: row for row in elo_ratings(many, ["rnd", "ppo"], anchor="rnd")["ratings"]}
    >>> r["ppo"]["high"] - r["ppo"]["low"] < 100
    True
    """
    names = list(names)
    index = {name: x for x, name in enumerate(names)}
    if anchor is not None and anchor not in index:
        raise ValueError(f"anchor {anchor!r} is not one of the agents {names}")
    k = len(names)
    att = np.array([index[g["attacker"]] for g in games], dtype=np.intp)
    dfd = np.array([index[g["defender"]] for g in games], dtype=np.intp)
    y = np.array([attacker_score(g["result"]) for g in games], dtype=float)

    def contrast(x: int) -> np.ndarray:
        """The rating of agent ``x`` as reported: relative to the anchor, or to the mean."""
        c = np.zeros(k + (1 if side_advantage else 0))
        c[x] += 1.0
        if anchor is not None:
            c[index[anchor]] -= 1.0
        else:
            c[:k] -= 1.0 / k
        return c

    if len(games):
        i, j, n, s = _cells(att, dfd, y, k)
    else:
        i = j = np.zeros(0, dtype=np.intp)
        n = s = np.zeros(0)
    low = high = None
    h_low = h_high = None
    if len(games):
        model = _Model(i, j, n, s, k, side_advantage, prior_sd)
        x_hat, f_hat = model.maximise(np.zeros(model.dim))
        r = np.array([float(contrast(x) @ x_hat) for x in range(k)]) * ELO_SCALE
        h = float(x_hat[-1]) * ELO_SCALE if side_advantage else 0.0
        if bootstrap:
            bounds = [(0.0, 0.0) if anchor == name else _profile_interval(model, x_hat, f_hat, contrast(x), level)
                      for x, name in enumerate(names)]
            low = np.array([b[0] for b in bounds]) * ELO_SCALE
            high = np.array([b[1] for b in bounds]) * ELO_SCALE
            if side_advantage:
                e_h = np.zeros(model.dim)
                e_h[-1] = 1.0
                h_low, h_high = (v * ELO_SCALE for v in _profile_interval(model, x_hat, f_hat, e_h, level))
            else:
                h_low = h_high = 0.0
    else:
        r, h = np.zeros(k), 0.0
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
            "prior_sd": prior_sd, "intervals": "profile likelihood" if low is not None else None,
            "level": level, "draws": "half a win", "ratings": ratings,
            "side_advantage": {"elo": h, "low": h_low, "high": h_high,
                               "attacker_expected_score_equal_players": expected_score(h)}}


def ratings_against_fixed(games: Sequence[Mapping[str, Any]], fixed: Mapping[str, float],
                          side_advantage: float, *, prior_mean: float = 0.0,
                          prior_sd: float | None = DEFAULT_PRIOR_SD, level: float = 0.95) -> dict[str, Any]:
    """Ratings of the agents not in ``fixed``, with every rating in ``fixed`` and the side term held.

    The model of the module docstring with ``r`` of each fixed agent and ``h`` (Elo) given: each
    game's logit is ``(r_att − r_def + h) / s`` where the fixed parts are a constant. The free
    ratings maximise the likelihood plus a Gaussian prior ``N(prior_mean, prior_sd²)`` on each (a
    tiny term that keeps a perfect score finite; ``None`` for none); their ``level`` intervals are
    profile-likelihood intervals, as in :func:`elo_ratings`. Games between two fixed agents carry
    no information here and are ignored.

    Returns ``{"ratings": [{"name", "rating", "low", "high", "games", "score"}], ...}`` for the
    free agents, in order of first appearance.

    An agent that scores ¾ against an anchor at 1000, as often on each side, is 191 Elo above it:

    >>> games = [{"attacker": a, "defender": d, "result": r} for a, d, r in
    ...          [("new", "anchor", "attacker"), ("anchor", "new", "defender")] * 300
    ...          + [("new", "anchor", "defender"), ("anchor", "new", "attacker")] * 100]
    >>> row = ratings_against_fixed(games, {"anchor": 1000.0}, 0.0, prior_sd=None)["ratings"][0]
    >>> round(row["rating"], 1), row["low"] < row["rating"] < row["high"], row["games"]
    (1190.8, True, 800)
    """
    free: list[str] = []
    for g in games:
        for name in (g["attacker"], g["defender"]):
            if name not in fixed and name not in free:
                free.append(name)
    index = {name: x for x, name in enumerate(free)}
    k = len(free)
    rows, offsets, ys = [], [], []
    for g in games:
        a, d = g["attacker"], g["defender"]
        if a in fixed and d in fixed:
            continue
        row = np.zeros(k)
        off = side_advantage
        for name, sign in ((a, 1.0), (d, -1.0)):
            if name in fixed:
                off += sign * float(fixed[name])
            else:
                row[index[name]] += sign
                off += sign * prior_mean
        rows.append(row)
        offsets.append(off / ELO_SCALE)
        ys.append(attacker_score(g["result"]))
    out = []
    if k:
        design = np.array(rows)
        model = _Model(None, None, np.ones(len(rows)), np.array(ys), k, False, prior_sd,
                       design=design, offset=np.array(offsets))
        x_hat, f_hat = model.maximise(np.zeros(k))
        for x, name in enumerate(free):
            c = np.zeros(k)
            c[x] = 1.0
            low, high = _profile_interval(model, x_hat, f_hat, c, level)
            mine = [g for g in games if name in (g["attacker"], g["defender"])]
            pts = sum(attacker_score(g["result"]) if g["attacker"] == name else 1 - attacker_score(g["result"])
                      for g in mine)
            out.append({"name": name, "rating": prior_mean + float(x_hat[x]) * ELO_SCALE,
                        "low": prior_mean + low * ELO_SCALE, "high": prior_mean + high * ELO_SCALE,
                        "games": len(mine), "score": pts / len(mine) if mine else None})
    return {"model": "bradley_terry_elo_with_side_term", "fixed": dict(fixed), "side_advantage": side_advantage,
            "prior_mean": prior_mean, "prior_sd": prior_sd, "level": level, "draws": "half a win",
            "intervals": "profile likelihood", "ratings": out}
