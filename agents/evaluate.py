"""The evaluation harness: batched matches, round-robin tournaments, statistics and Elo ratings.

Pieces, from small to large:

- :func:`play_games` plays G games of one attacker agent against one defender agent at once, in one
  batched engine :class:`~tafl_env.engine.State`; optionally records every game in notation.
- :func:`round_robin` plays every pair of agents both ways round (half the games each way), with a
  seed per pairing leg derived from one base seed, and computes the tables and ratings; with
  ``out_dir`` it writes ``results.json``, ``games.csv``, ``ratings.csv``, ``ratings.png`` and
  optionally ``records/`` (one replayable text file per game) and ``gifs/``.
- Statistics: :func:`wilson_interval`, :func:`pairing_table`, :func:`side_table`.
- Ratings: :func:`fit_bradley_terry` and :func:`elo_ratings` (model below).
- Configs: :func:`load_tournament_config` reads and validates a YAML tournament config
  (``configs/tournaments/*.yaml``) against :data:`TOURNAMENT_SCHEMA`.
- :func:`export_gif` animates a recorded game.

**Scores and draws.** A game scores 1 for the winner, 0 for the loser and ½ for each side in a
draw (a truncated game, reason ``truncated``, is a draw). *Win rates* count wins only; *scores*
count a draw as half a win; Wilson intervals are given for both (for the score, with the fractional
number of "successes" ``wins + draws/2``, the usual approximation).

**Rating model.** Bradley–Terry (logistic Elo) with a side term, since Tafl is asymmetric::

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
    >>> lo, hi = wilson_interval(5, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.2366, 0.7634)
"""

from __future__ import annotations

import csv
import json
import math
import copy
import os
import re
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from tafl_env.engine import REASON_NAMES, RESULT_NAMES, Engine, State
from tafl_env.game import engine_for
from tafl_env.notation import PASS, format_move
from tafl_env.rules import SIDES, VARIANTS, RuleSet, make_rules

from .base import Agent, make_agent

ELO_SCALE = 400.0 / math.log(10.0)
"""Elo points per logit: ``P = σ(Δ / ELO_SCALE)``, so a 400-point gap is 10:1 odds."""

DEFAULT_PRIOR_SD = 1000.0
DEFAULT_BOOTSTRAP = 200

ATTACKER, DEFENDER = 0, 1


# --- playing --------------------------------------------------------------------------------------

def agent_seeds(seed: int | None) -> tuple[int | None, int | None]:
    """The attacker's and the defender's seeds derived from one game-batch seed."""
    if seed is None:
        return None, None
    a, d = np.random.SeedSequence(int(seed)).generate_state(2)
    return int(a), int(d)


def _move_texts(rules: RuleSet, actions: np.ndarray, info, rows: np.ndarray) -> list[str]:
    """Notation of ``actions[rows]`` just played (from the StepInfo of that step)."""
    n = rules.board_size
    s = n * n
    pass_action = s * 4 * (n - 1)
    step = (n, 1, -n, -1)  # north, east, south, west
    out = []
    for g in rows:
        a = int(actions[g])
        if a == pass_action:
            out.append(PASS)
            continue
        origin, rest = divmod(a, 4 * (n - 1))
        d, k = divmod(rest, n - 1)
        target = origin + (k + 1) * step[d]
        caps = tuple(int(c) for c in info.captured[g] if c < s)
        out.append(format_move(origin, target, n, jump=bool(info.jump[g]),
                               continuation=bool(info.continuation[g]), captures=caps))
    return out


def play_games(variant_or_rules: str | RuleSet, attacker: Agent, defender: Agent, games: int,
               seed: int | None = None, max_turns: int | None = None, record: bool = False,
               **options) -> list[dict[str, Any]]:
    """Play ``games`` games of ``attacker`` (attackers) against ``defender`` at once.

    All games live in one batched state. At every step the games where the attackers are to move
    go to ``attacker.act`` (as the sub-batch ``state.take(rows)``), the others to
    ``defender.act``, and then every game is stepped with the combined actions.

    Args:
        variant_or_rules: a variant id or a :class:`~tafl_env.rules.RuleSet`.
        attacker, defender: the agents (may be the same object for self-play).
        games: the number of games (the batch size).
        seed: when given, both agents are reset with seeds derived from it (:func:`agent_seeds`),
            so the batch is reproducible.
        max_turns: the move cap in turns (a game reaching it is a truncated draw); ``None``: the
            cap of the rules (the variant's default, or that of a given ``RuleSet``).
        record: also return each game's moves in notation (``'pass'`` for the pass action).
        **options: rule options (RULES.md) for ``make_rules``.

    Returns:
        one dict per game: ``game`` (index), ``result`` (``'attacker'``, ``'defender'``,
        ``'draw'``), ``reason``, ``turns`` and, with ``record``, ``moves``.

    >>> from agents import make_agent
    >>> res = play_games("legacy_ard_ri", make_agent("random"), make_agent("random"), 3, seed=1)
    >>> len(res), sorted(res[0])
    (3, ['game', 'reason', 'result', 'turns'])
    """
    if max_turns is not None:
        options["max_turns"] = max_turns
    rules = make_rules(variant_or_rules, **options)
    engine = engine_for(rules)
    if not isinstance(games, (int, np.integer)) or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
    if seed is not None:
        seed_a, seed_d = agent_seeds(seed)
        attacker.reset(seed_a)
        if defender is not attacker:
            defender.reset(seed_d)
    state = engine.initial_state(int(games))
    moves: list[list[str]] = [[] for _ in range(games)]
    while True:
        running = ~state.done
        if not running.any():
            break
        actions = np.full(games, -1, dtype=np.int64)
        for side, agent in ((ATTACKER, attacker), (DEFENDER, defender)):
            rows = np.flatnonzero(running & (state.to_move == side))
            if not len(rows):
                continue
            acts = np.asarray(agent.act(engine, state.take(rows)), dtype=np.int64).reshape(-1)
            if acts.shape != rows.shape:
                raise ValueError(f"{agent!r} returned {acts.shape[0]} actions for {len(rows)} games")
            actions[rows] = acts
        live = np.flatnonzero(running)
        bad = live[actions[live] < 0]
        if len(bad):
            raise ValueError(f"an agent returned -1 for running game(s) {bad[:5].tolist()}")
        info = engine.step(state, actions)
        if record:
            for g, text in zip(live, _move_texts(rules, actions, info, live)):
                moves[g].append(text)
    out = []
    for g in range(games):
        row: dict[str, Any] = {"game": g, "result": RESULT_NAMES[int(state.winner[g])],
                               "reason": REASON_NAMES[int(state.reason[g])], "turns": int(state.turn[g])}
        if record:
            row["moves"] = moves[g]
        out.append(row)
    return out


def attacker_score(result: str) -> float:
    """1 for an attacker win, 0 for a defender win, ½ for a draw."""
    return {"attacker": 1.0, "defender": 0.0, "draw": 0.5}[result]


# --- statistics -----------------------------------------------------------------------------------

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


def _wdl(scores: Iterable[float]) -> dict[str, Any]:
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
        rows.append({"agent": a, "opponent": b, **_wdl(as_att + as_def),
                     "as_attacker": _wdl(as_att), "as_defender": _wdl(as_def)})
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
            rows.append({"agent": name, "side": side, **_wdl(scores)})
    return rows


# --- ratings --------------------------------------------------------------------------------------

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


# --- tournament configs ---------------------------------------------------------------------------

class AgentSpecError(ValueError):
    """An agent of a tournament cannot be built from its spec (unknown kind, bad argument, missing file)."""


def _build_agent(spec: str, seed: int | None) -> Agent:
    try:
        return make_agent(spec, seed=seed)
    except (ValueError, OSError) as exc:
        raise AgentSpecError(f"cannot build agent {spec!r}: {exc}") from exc


class ConfigError(ValueError):
    """A bad tournament config; ``field`` names the offending field."""

    def __init__(self, field: str, message: str, source: str = "tournament config"):
        self.field = field
        super().__init__(f"{source}: field {field!r}: {message}")


@dataclass(frozen=True)
class FieldSpec:
    types: tuple[type, ...]
    required: bool
    default: Any
    doc: str
    check: Callable[[Any], str | None] | None = None


def _agents_check(value: Mapping) -> str | None:
    if len(value) < 2:
        return "needs at least 2 agents"
    for name, spec in value.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            return f"agent name {name!r} must be text of letters, digits, _ . + -"
        if not isinstance(spec, str) or not spec:
            return f"agent {name!r}: the spec must be a string such as 'random' or 'mcts:64', got {spec!r}"
        kind, _, arg = spec.partition(":")
        if kind not in ("random", "greedy", "mcts", "policy"):
            from .base import _REGISTRY  # agents registered by other modules are fine too

            if kind not in _REGISTRY:
                return f"agent {name!r}: unknown kind {kind!r} (random, greedy, mcts:N[:ROLLOUT[:PRIOR]], policy:PATH)"
        if kind == "mcts":   # cheap to build: let the factory judge N:ROLLOUT:PRIOR
            from .base import make_agent

            try:
                make_agent(spec)
            except ValueError as err:
                return f"agent {name!r}: {err}"
    return None


TOURNAMENT_SCHEMA: dict[str, FieldSpec] = {
    "variant": FieldSpec((str,), True, None, "variant id (tafl_env.VARIANTS)",
                         lambda v: None if v in VARIANTS else f"unknown variant {v!r}; one of {', '.join(VARIANTS)}"),
    "agents": FieldSpec((dict,), True, None,
                        "players: name -> agent spec (random | greedy | mcts:N[:ROLLOUT[:PRIOR]] | policy:PATH)",
                        _agents_check),
    "games_per_pair": FieldSpec((int,), True, None,
                                "games per pair of agents, half with each agent attacking (even, >= 2)",
                                lambda v: None if v >= 2 and v % 2 == 0 else f"must be an even int >= 2, got {v}"),
    "seed": FieldSpec((int,), False, 0, "base seed; each pairing leg's seed is derived from it",
                      lambda v: None if v >= 0 else f"must be >= 0, got {v}"),
    "max_turns": FieldSpec((int, type(None)), False, None,
                           "move cap in turns (a game reaching it is a truncated draw); null: the variant's default",
                           lambda v: None if v is None or v >= 1 else f"must be >= 1 or null, got {v}"),
    "output_dir": FieldSpec((str,), False, None,
                            "directory for the results (relative to the working directory); "
                            "default results/tournaments/<variant>",
                            lambda v: None if v.strip() else "must not be empty"),
    "options": FieldSpec((dict,), False, {}, "rule options (RULES.md) passed to make_rules", None),
    "records": FieldSpec((bool,), False, False, "write records/ with one replayable move file per game", None),
    "gifs": FieldSpec((int,), False, 0, "animate the first game of up to this many pairing legs into gifs/",
                      lambda v: None if v >= 0 else f"must be >= 0, got {v}"),
    "fps": FieldSpec((int, float), False, 2, "frames (moves) per second of the GIFs",
                     lambda v: None if v > 0 else f"must be > 0, got {v}"),
    "batch_size": FieldSpec((int, type(None)), False, None,
                            "games played at once per leg; null: all of the leg's games in one batch",
                            lambda v: None if v is None or v >= 1 else f"must be >= 1 or null, got {v}"),
    "bootstrap": FieldSpec((int,), False, DEFAULT_BOOTSTRAP, "bootstrap replicates for the rating intervals (0: none)",
                           lambda v: None if v >= 0 else f"must be >= 0, got {v}"),
    "anchor": FieldSpec((str, type(None)), False, None,
                        "agent whose rating is fixed at 0; null: the ratings have mean 0", None),
    "prior_sd": FieldSpec((int, float), False, DEFAULT_PRIOR_SD,
                          "sd in Elo of the Gaussian prior on ratings and side advantage (tiny L2 term)",
                          lambda v: None if v > 0 else f"must be > 0, got {v}"),
    "description": FieldSpec((str,), False, "", "free text", None),
}
"""The fields of a tournament config: types, whether required, default, meaning and range check."""


def check_schema(raw: Any, schema: dict[str, "FieldSpec"], source: str) -> dict[str, Any]:
    """Check each field of a parsed config against ``schema``; return it with defaults filled.

    Raises :class:`ConfigError` naming the field: an unknown key, a missing required field, a wrong
    type, or a value its ``check`` rejects. Checks across fields are the caller's.
    """
    if not isinstance(raw, dict):
        raise ConfigError("<root>", f"must be a mapping of fields, got {type(raw).__name__}", source)
    for key in raw:
        if key not in schema:
            raise ConfigError(str(key), f"unknown field (known: {', '.join(schema)})", source)
    out: dict[str, Any] = {}
    for key, spec in schema.items():
        if key not in raw:
            if spec.required:
                raise ConfigError(key, "is required", source)
            out[key] = copy.deepcopy(spec.default)
            continue
        value = raw[key]
        ok = isinstance(value, spec.types) and not (isinstance(value, bool) and bool not in spec.types)
        if not ok:
            want = " or ".join("null" if t is type(None) else t.__name__ for t in spec.types)
            raise ConfigError(key, f"must be {want}, got {type(value).__name__} {value!r}", source)
        if spec.check is not None and value is not None:
            problem = spec.check(value)
            if problem:
                raise ConfigError(key, problem, source)
        out[key] = value
    return out


def validate_tournament_config(raw: Any, source: str = "tournament config") -> dict[str, Any]:
    """Check a parsed config against :data:`TOURNAMENT_SCHEMA`; return it with the defaults filled.

    Raises :class:`ConfigError` naming the field: an unknown key, a missing required field, a wrong
    type or a value out of range.

    >>> validate_tournament_config({"variant": "legacy_ard_ri", "agents": {"a": "random"},
    ...                             "games_per_pair": 2})
    Traceback (most recent call last):
    ...
    agents.evaluate.ConfigError: tournament config: field 'agents': needs at least 2 agents
    """
    out = check_schema(raw, TOURNAMENT_SCHEMA, source)
    if out["anchor"] is not None and out["anchor"] not in out["agents"]:
        raise ConfigError("anchor", f"{out['anchor']!r} is not one of the agents {list(out['agents'])}", source)
    try:
        make_rules(out["variant"], **out["options"], **({"max_turns": out["max_turns"]} if out["max_turns"] else {}))
    except ValueError as exc:
        raise ConfigError("options", str(exc), source) from None
    if out["output_dir"] is None:
        out["output_dir"] = f"results/tournaments/{out['variant']}"
    return out


def read_yaml_config(path: str | os.PathLike) -> Any:
    """The parsed YAML of a config file; an unreadable file or bad YAML is a :class:`ConfigError`."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError("<file>", f"cannot read {path}: {exc.strerror or exc}", str(path)) from None
    except yaml.YAMLError as exc:
        raise ConfigError("<file>", f"not valid YAML: {exc}", str(path)) from None


def load_tournament_config(path: str | os.PathLike) -> dict[str, Any]:
    """Read a YAML tournament config and validate it (:func:`validate_tournament_config`)."""
    return validate_tournament_config(read_yaml_config(path), str(path))


# --- tournaments ----------------------------------------------------------------------------------

def leg_seed(seed: int, i: int, j: int) -> int:
    """The seed of the leg where agent ``i`` attacks agent ``j`` (indices in the config's order)."""
    return int(np.random.SeedSequence([int(seed), int(i), int(j)]).generate_state(1)[0])


def round_robin(variant: str, agents: Mapping[str, str], games_per_pair: int, seed: int = 0, *,
                max_turns: int | None = None, options: Mapping[str, Any] | None = None,
                out_dir: str | os.PathLike | None = None, records: bool = False, gifs: int = 0,
                fps: float = 2, batch_size: int | None = None, bootstrap: int = DEFAULT_BOOTSTRAP,
                anchor: str | None = None, prior_sd: float = DEFAULT_PRIOR_SD, progress: bool = True,
                config: Mapping[str, Any] | None = None,
                agent_factory: Callable[[str, int], Agent] | None = None) -> dict[str, Any]:
    """Every pair of agents plays ``games_per_pair`` games, half with each agent attacking.

    Leg (A attacks B) gets the seed :func:`leg_seed` ``(seed, i, j)``; its agents are built afresh
    by ``make_agent(spec, seed=...)`` with the seeds :func:`agent_seeds` of the leg seed (or by
    ``agent_factory(spec, seed)``), so each leg is reproducible on its own. Returns the content of
    ``results.json``; with ``out_dir`` writes the result files (module docstring).
    """
    from tqdm import tqdm

    if games_per_pair < 2 or games_per_pair % 2:
        raise ValueError(f"games_per_pair must be an even int >= 2 (half each way round), got {games_per_pair}")
    names = list(agents)
    if len(names) < 2:
        raise ValueError("a round robin needs at least 2 agents")
    options = dict(options or {})
    rule_opts = dict(options, **({"max_turns": max_turns} if max_turns is not None else {}))
    rules = make_rules(variant, **rule_opts)
    factory = agent_factory or _build_agent
    for name in names:  # every agent must build before any game is played
        try:
            factory(agents[name], 0)
        except AgentSpecError as exc:
            raise AgentSpecError(f"agent {name!r}: {exc}") from exc
    half = games_per_pair // 2
    want_moves = records or gifs > 0
    legs = []
    games: list[dict[str, Any]] = []
    n_legs = len(names) * (len(names) - 1)
    t_start = time.perf_counter()
    bar = tqdm(total=n_legs * half, desc=f"{variant} round robin", unit="game", disable=not progress,
               dynamic_ncols=True)
    try:
        for a, b in combinations(range(len(names)), 2):
            for i, j in ((a, b), (b, a)):
                s = leg_seed(seed, i, j)
                sa, sd = agent_seeds(s)
                att = factory(agents[names[i]], sa)
                dfd = factory(agents[names[j]], sd)
                bar.set_postfix_str(f"{names[i]} (att) vs {names[j]} (def)")
                t0 = time.perf_counter()
                chunk = batch_size or half
                results = []
                for start in range(0, half, chunk):
                    part = play_games(rules, att, dfd, min(chunk, half - start),
                                      seed=s if start == 0 else leg_seed(s, start, 0), record=want_moves)
                    results.extend(part)
                    bar.update(len(part))
                leg = {"leg": len(legs), "attacker": names[i], "defender": names[j],
                       "attacker_spec": agents[names[i]], "defender_spec": agents[names[j]],
                       "seed": s, "games": half, "first_game": len(games),
                       "seconds": round(time.perf_counter() - t0, 3)}
                legs.append(leg)
                for r in results:
                    row = {"game": len(games), "leg": leg["leg"], "attacker": names[i], "defender": names[j],
                           "attacker_spec": agents[names[i]], "defender_spec": agents[names[j]],
                           "seed": s, "index_in_leg": r["game"], "result": r["result"],
                           "reason": r["reason"], "turns": r["turns"],
                           "attacker_score": attacker_score(r["result"])}
                    if want_moves:
                        row["moves"] = r["moves"]
                    games.append(row)
    finally:
        bar.close()
    ratings = elo_ratings(games, names, anchor=anchor, bootstrap=bootstrap, seed=seed, prior_sd=prior_sd)
    side_totals = {"games": len(games), **_wdl([g["attacker_score"] for g in games])}
    result = {
        "config": dict(config) if config is not None else {
            "variant": variant, "agents": dict(agents), "games_per_pair": games_per_pair, "seed": seed,
            "max_turns": max_turns, "options": options, "records": records, "gifs": gifs,
            "batch_size": batch_size, "bootstrap": bootstrap, "anchor": anchor, "prior_sd": prior_sd},
        "variant": variant,
        "rules": {"max_turns": rules.max_turns, "options": options},
        "agents": dict(agents),
        "seed": seed,
        "seconds": round(time.perf_counter() - t_start, 3),
        "scoring": "win 1, draw 1/2 (a truncated game is a draw), loss 0; win_rate counts wins only; "
                   "intervals: Wilson 95%",
        "legs": legs,
        "attacker_results": side_totals,
        "pairings": pairing_table(games, names),
        "sides": side_table(games, names),
        "ratings": ratings,
        "games": [{k: v for k, v in g.items() if k != "moves"} for g in games],
    }
    if out_dir is not None:
        result["out_dir"] = str(out_dir)
        write_results(result, games, out_dir, rules=rules, records=records, gifs=gifs, fps=fps)
    return result


# --- output ---------------------------------------------------------------------------------------

GAME_COLUMNS = ("game", "leg", "attacker", "defender", "attacker_spec", "defender_spec", "seed",
                "index_in_leg", "result", "reason", "turns", "attacker_score")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


def replay_command(rules: RuleSet, path: str, options: Mapping[str, Any] | None = None) -> str:
    """The ``tafl replay`` command line that replays a record file to the same result."""
    parts = ["tafl", "replay", rules.name, "--file", path]
    if rules.max_turns is not None:
        parts += ["--max-turns", str(rules.max_turns)]
    for k, v in (options or {}).items():
        if k != "max_turns":
            parts += ["--option", f"{k}={v}"]
    return " ".join(parts)


def format_record(rules: RuleSet, game: Mapping[str, Any], path: str = "F",
                  options: Mapping[str, Any] | None = None) -> str:
    """A game as a move file for ``tafl replay VARIANT --file F``: '#' header lines, one move a line."""
    if game["result"] == "draw":
        verdict = f"draw ({game['reason']})"
    else:
        verdict = f"{game['result']} wins ({game['reason']})"
    lines = [
        "# tafl-env game record",
        f"# variant: {rules.name}",
        f"# attacker: {game['attacker']} ({game.get('attacker_spec', game['attacker'])})",
        f"# defender: {game['defender']} ({game.get('defender_spec', game['defender'])})",
        f"# seed: {game.get('seed')} (leg seed; game {game.get('index_in_leg', 0)} of the leg's batch)",
        f"# max_turns: {rules.max_turns}",
        f"# result: {verdict} after {game['turns']} turns",
        f"# replay: {replay_command(rules, path, options)}",
    ]
    return "\n".join(lines + list(game["moves"])) + "\n"


def write_results(result: Mapping[str, Any], games: Sequence[Mapping[str, Any]], out_dir: str | os.PathLike,
                  *, rules: RuleSet, records: bool = False, gifs: int = 0, fps: float = 2) -> dict[str, str]:
    """Write results.json, games.csv, ratings.csv, ratings.png (and records/, gifs/). Returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    options = result.get("rules", {}).get("options", {})
    if records:
        rec_dir = out / "records"
        rec_dir.mkdir(exist_ok=True)
        for g in games:
            name = f"game{g['game']:05d}_{_safe(g['attacker'])}_vs_{_safe(g['defender'])}.txt"
            p = rec_dir / name
            p.write_text(format_record(rules, g, str(p), options), encoding="utf-8")
        paths["records"] = str(rec_dir)
    if gifs:
        gif_dir = out / "gifs"
        gif_dir.mkdir(exist_ok=True)
        done = 0
        for leg in result["legs"]:
            if done >= gifs:
                break
            g = games[leg["first_game"]]
            name = f"game{g['game']:05d}_{_safe(g['attacker'])}_vs_{_safe(g['defender'])}.gif"
            export_gif(rules, g["moves"], gif_dir / name, fps=fps)
            done += 1
        paths["gifs"] = str(gif_dir)
    p = out / "results.json"
    p.write_text(json.dumps(result, indent=1, default=_json_default) + "\n", encoding="utf-8")
    paths["results"] = str(p)
    p = out / "games.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=GAME_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(games)
    paths["games"] = str(p)
    p = out / "ratings.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "spec", "rating", "low", "high", "games", "score"])
        for r in result["ratings"]["ratings"]:
            w.writerow([r["name"], result["agents"].get(r["name"], ""), _num(r["rating"]), _num(r["low"]),
                        _num(r["high"]), r["games"], _num(r["score"])])
        sa = result["ratings"]["side_advantage"]
        w.writerow(["<attacker side advantage>", "", _num(sa["elo"]), _num(sa["low"]), _num(sa["high"]),
                    result["attacker_results"]["games"], _num(result["attacker_results"]["score"])])
    paths["ratings"] = str(p)
    p = out / "ratings.png"
    plot_ratings(result, p)
    paths["plot"] = str(p)
    return paths


def _num(v):
    return "" if v is None else f"{v:.2f}" if isinstance(v, float) else v


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def plot_ratings(result: Mapping[str, Any], path: str | os.PathLike) -> None:
    """A horizontal bar chart of the ratings with their interval bars (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(reversed(result["ratings"]["ratings"]))
    names = [r["name"] for r in rows]
    vals = np.array([r["rating"] for r in rows])
    lo = np.array([r["low"] if r["low"] is not None else r["rating"] for r in rows])
    hi = np.array([r["high"] if r["high"] is not None else r["rating"] for r in rows])
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.5 * len(rows)))
    ax.errorbar(vals, np.arange(len(rows)), xerr=[vals - lo, hi - vals], fmt="o", capsize=4, color="tab:blue")
    ax.set_yticks(np.arange(len(rows)), names)
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    sa = result["ratings"]["side_advantage"]
    ax.set_xlabel("Elo (95% bootstrap interval)")
    ax.set_title(f"{result['variant']}: {result['attacker_results']['games']} games, "
                 f"attacker side advantage {sa['elo']:+.0f} Elo", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _fallback_rgb(engine: Engine, state: State, game: int = 0, square_px: int = 24) -> np.ndarray:
    """A plain board image (used only when tafl_env.render is unavailable)."""
    n = engine.rules.board_size
    img = np.full((n * square_px, n * square_px, 3), (222, 190, 140), dtype=np.uint8)
    colours = {1: (35, 35, 40), 2: (150, 20, 20), 3: (245, 245, 240), 4: (80, 120, 230), 5: (212, 160, 20)}
    for sq in range(n * n):
        code = int(state.board[game, sq])
        r, f = divmod(sq, n)
        y0, x0 = (n - 1 - r) * square_px, f * square_px
        img[y0, x0:x0 + square_px] = (150, 115, 75)
        img[y0:y0 + square_px, x0] = (150, 115, 75)
        if code in colours:
            m = square_px // 5
            img[y0 + m:y0 + square_px - m, x0 + m:x0 + square_px - m] = colours[code]
    return img


def export_gif(variant: str | RuleSet, moves: Sequence[str], path: str | os.PathLike, fps: float = 2,
               *, square_px: int = 24, position: str | None = None, to_move: str | None = None,
               **options) -> Path:
    """An animated GIF of a game: one frame for the start and one after every move (PIL).

    Frames come from :func:`tafl_env.render.render_rgb` (a plain fallback drawing without it);
    the last frame is held three times as long.
    """
    from PIL import Image

    from tafl_env.game import Game

    try:
        from tafl_env.render import render_rgb
    except ImportError:  # pragma: no cover - render.py is part of the package
        render_rgb = _fallback_rgb
    if isinstance(variant, RuleSet):
        game = Game(variant, position=position, to_move=to_move)
    else:
        game = Game(variant, position=position, to_move=to_move, **{"max_turns": None, **options})
    frames = [render_rgb(game.engine, game.state, 0, square_px=square_px)]
    for m in moves:
        game.push(m)
        frames.append(render_rgb(game.engine, game.state, 0, square_px=square_px))
    images = [Image.fromarray(np.ascontiguousarray(f, dtype=np.uint8)) for f in frames]
    ms = max(int(round(1000.0 / fps)), 20)
    durations = [ms] * (len(images) - 1) + [3 * ms]
    path = Path(path)
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0,
                   optimize=False, disposal=1)
    return path


# --- running a config -----------------------------------------------------------------------------

def run_tournament(config: Mapping[str, Any], *, games_per_pair: int | None = None,
                   out_dir: str | os.PathLike | None = None, agents: Sequence[str] | None = None,
                   progress: bool = True) -> dict[str, Any]:
    """Run a validated config (:func:`load_tournament_config`), with optional overrides."""
    cfg = dict(config)
    if games_per_pair is not None:
        if games_per_pair < 2 or games_per_pair % 2:
            raise ConfigError("games_per_pair", f"must be an even int >= 2, got {games_per_pair} (--games)")
        cfg["games_per_pair"] = games_per_pair
    if out_dir is not None:
        cfg["output_dir"] = str(out_dir)
    if agents:
        unknown = [a for a in agents if a not in cfg["agents"]]
        if unknown:
            raise ConfigError("agents", f"unknown agent(s) {unknown}; the config has {list(cfg['agents'])}")
        cfg["agents"] = {a: cfg["agents"][a] for a in cfg["agents"] if a in agents}
        if len(cfg["agents"]) < 2:
            raise ConfigError("agents", "at least 2 agents must be selected")
        if cfg["anchor"] not in cfg["agents"]:
            cfg["anchor"] = None
    return round_robin(cfg["variant"], cfg["agents"], cfg["games_per_pair"], cfg["seed"],
                       max_turns=cfg["max_turns"], options=cfg["options"], out_dir=cfg["output_dir"],
                       records=cfg["records"], gifs=cfg["gifs"], fps=cfg["fps"], batch_size=cfg["batch_size"],
                       bootstrap=cfg["bootstrap"], anchor=cfg["anchor"], prior_sd=cfg["prior_sd"],
                       progress=progress, config=cfg)


def summary_line(result: Mapping[str, Any]) -> dict[str, Any]:
    """The short JSON summary that ``tafl eval --json`` prints last."""
    sa = result["ratings"]["side_advantage"]
    return {"variant": result["variant"], "out": result.get("out_dir"),
            "games": result["attacker_results"]["games"],
            "attacker_score": result["attacker_results"]["score"],
            "side_advantage": {"elo": sa["elo"], "low": sa["low"], "high": sa["high"]},
            "ratings": [{"name": r["name"], "rating": r["rating"], "low": r["low"], "high": r["high"]}
                        for r in result["ratings"]["ratings"]],
            "seconds": result["seconds"]}


def format_report(result: Mapping[str, Any]) -> str:
    """A text report: ratings, side advantage and pairings."""
    lines = [f"{result['variant']}: {result['attacker_results']['games']} games in {result['seconds']:.1f} s"]
    lines.append(f"{'agent':<16} {'Elo':>8} {'95% interval':>20} {'games':>6} {'score':>6}")
    for r in result["ratings"]["ratings"]:
        iv = f"[{r['low']:.0f}, {r['high']:.0f}]" if r["low"] is not None else ""
        lines.append(f"{r['name']:<16} {r['rating']:>8.1f} {iv:>20} {r['games']:>6} {r['score']:>6.3f}")
    sa = result["ratings"]["side_advantage"]
    iv = f" [{sa['low']:.0f}, {sa['high']:.0f}]" if sa["low"] is not None else ""
    ar = result["attacker_results"]
    lines.append(f"attacker side advantage {sa['elo']:+.1f} Elo{iv}; attackers won {ar['wins']}, "
                 f"drew {ar['draws']}, lost {ar['losses']}")
    lines.append("pairings (score of the first agent, draws = 1/2; Wilson 95%):")
    for p in result["pairings"]:
        lines.append(f"  {p['agent']} vs {p['opponent']}: +{p['wins']} ={p['draws']} -{p['losses']}  "
                     f"score {p['score']:.3f} [{p['score_low']:.3f}, {p['score_high']:.3f}]  "
                     f"(as attacker {p['as_attacker']['score']:.2f}, as defender {p['as_defender']['score']:.2f})")
    return "\n".join(lines)
