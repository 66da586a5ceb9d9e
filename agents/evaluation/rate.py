"""Rating any agent against a variant's fixed anchors: ``tafl rate`` and :func:`rate`.

**Games.** The rated agent plays the anchors (:mod:`.anchors`) from the variant's opening suite
(:mod:`.openings`) in **rounds**: each round, against each of the two anchors nearest its current
estimate (the nearest at or below it and the nearest above; the two nearest when it lies beyond the
ladder's end, or when one of those is over :data:`FAR_ELO` away, as random often is), the next
block of :data:`~.anchors.BLOCK` openings of that anchor, **each opening twice: once with the
rated agent attacking, once defending** (a game pair). After the suite the blocks come round again
with new seeds. The first estimate is the pinned anchor's rating.

**Rating.** The anchors' ratings and the side term ``h`` are fixed (the anchor file's); the rated
agent's Elo maximises the Bradley–Terry likelihood of its games with them held
(:func:`agents.evaluation.ratings.ratings_against_fixed`; draws count ½), with a 95%
profile-likelihood interval. Per side: the same fit on its games as attacker only, and as
defender only. Rating never moves an anchor.

**Stopping**, checked after every round: ``games`` played (a cap, rounded up to whole game pairs
of a block; 400 by default, 2000 when a rule below may stop it first, :func:`game_cap`);
``target_ci``: the interval's half-width (the larger side) is at most that many Elo;
``sprt=(elo0, elo1)``: the sequential probability ratio test of H0 "its Elo is ``elo0``" against
H1 "its Elo is ``elo1``" (Wald 1945) decides, at error rates ``alpha``, ``beta`` (5% each). The
log-likelihood ratio is the normal (GSPRT) approximation on game-pair scores used by chess engine
testing (Fishtest's pentanomial SPRT; M. Van den Bergh, "A practical introduction to the GSPRT"):
with ``x_k`` the score of pair ``k`` (½ × its two games' points) and ``μ_k(R)`` its expected value
at Elo ``R`` (the mean of ``σ((R − R_a ± h)/s)`` for anchor ``a``),
``LLR = Σ_k [(x_k − μ_k(elo0))² − (x_k − μ_k(elo1))²] / (2 σ̂²)``, ``σ̂²`` the mean square of
``x_k − μ_k(R̂)`` at the fitted Elo ``R̂``; H1 is accepted when ``LLR ≥ ln((1 − β)/α)``, H0 when
``LLR ≤ ln(β/(1 − α))``.

**Reproducibility.** Every chunk's seed derives from (``seed``, anchor, side, block)
(:func:`~.matches.chunk_seed`) and the choice of anchors only from finished rounds, so the same
seed gives the same games and the same rating, with ``jobs`` worker processes or on Ray too.

**Errors.** The rated agent plays through :class:`~.adapters.GuardedAgent`: an exception, an
illegal move or a refusal of the variant stops the rating with an :class:`~.adapters.AgentError`
of one line naming it; nothing is written.

**Time.** ``time_per_move`` puts the rated agent, if it searches (``mcts`` specs), on that many
seconds a move; the anchors keep their simulation budgets (their ratings hold for those, on any
machine), and their measured time per move is in the anchor file, for comparison.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from tafl_env.cli import MAX_SEED
from tafl_env.rules import make_rules

from ..checks import check_int, check_number
from ..spec import AgentSpecError
from .adapters import AgentError, GuardedAgent, agent_source
from .anchors import BLOCK, PIN, check_anchor_table, load_anchors
from .matches import Chunk, ChunkRunner, check_picklable, chunk_seed
from .openings import check_openings, load_openings
from .ratings import DEFAULT_PRIOR_SD, ELO_SCALE, expected_score, ratings_against_fixed
from .stats import attacker_score, wdl

__all__ = ["Rating", "rate", "game_cap", "choose_anchors", "sprt_llr", "RATED", "FAR_ELO", "GAMES",
           "GAMES_WITH_A_STOP"]

RATED = "rated"
"""The rated agent's name in game rows and seeds (so that its label never changes the games)."""


@dataclass
class Rating:
    """The result of :func:`rate`: Elo with its 95% interval, per side, per anchor, and how it
    stopped. ``str(rating)`` is the text report; :meth:`to_dict` the JSON one."""

    agent: str
    variant: str
    elo: float
    low: float
    high: float
    games: int
    draws: int
    score: float
    attacker: dict[str, Any]
    defender: dict[str, Any]
    opponents: list[dict[str, Any]]
    stopped: str
    seed: int
    seconds: float
    sprt: dict[str, Any] | None = None
    time_per_move: float | None = None
    anchors: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    """Every game: ``attacker``, ``defender`` (``"rated"`` or an anchor), ``opening``, ``block``,
    ``result``, ``reason``, ``turns``."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        fmt = lambda r: f"{r['elo']:.0f} [{r['low']:.0f}, {r['high']:.0f}]" if r["games"] else "no games"
        lines = [f"{self.agent} in {self.variant}: Elo {self.elo:.0f}  95% [{self.low:.0f}, {self.high:.0f}]  "
                 f"({self.games} games, {self.draws} draws; anchors fixed, {self.anchors.get('pin')})",
                 f"  as attacker: {fmt(self.attacker)}   as defender: {fmt(self.defender)}",
                 f"  {'anchor':<10} {'spec':<22} {'Elo':>6} {'games':>6}  W-D-L      score  (att W-D-L / def W-D-L)"]
        for o in self.opponents:
            lines.append(f"  {o['name']:<10} {o['spec']:<22} {o['anchor_elo']:6.0f} {o['games']:6d}  "
                         f"{o['wins']}-{o['draws']}-{o['losses']:<8} {o['score']:.3f}  "
                         f"({o['as_attacker']} / {o['as_defender']})")
        if self.sprt:
            s = self.sprt
            lines.append(f"  SPRT H0 Elo {s['elo0']:g} vs H1 Elo {s['elo1']:g}: LLR {s['llr']:.2f} "
                         f"[{s['lower']:.2f}, {s['upper']:.2f}] -> {s['decision']}")
        lines.append(f"  stopped: {self.stopped}; seed {self.seed}; {self.seconds:.0f} s")
        a = self.anchors
        if a.get("games") is not None:
            lines.append(f"  anchors: {a['games']} games, built {a.get('built')}; their widest 95% interval "
                         f"+-{a.get('widest_half_interval')}" + ("" if a.get("target_met") else " (not yet at target)"))
        if a.get("note"):
            lines.append(f"  note: {a['note']}")
        return "\n".join(lines)


FAR_ELO = 400.0
"""Of two players this many Elo apart, the weaker is expected to score 1 point in 11: games with an
anchor this far from the estimate say little, so :func:`choose_anchors` passes it over where a
nearer one exists."""


def choose_anchors(estimate: float, anchors: Sequence[tuple[str, float]]) -> list[str]:
    """The two anchors to play next: the two that bracket ``estimate`` (the nearest at or below
    and the nearest above; the two nearest when it lies beyond an end of the ladder), unless one
    of them is more than :data:`FAR_ELO` from it: then the two nearest ``estimate``. So an agent
    just under a rung whose only neighbour below is random plays the rungs above it, not random.
    Returned weakest first.

    >>> ladder = [("random", 500.0), ("greedy", 1000.0), ("mcts", 1400.0)]
    >>> choose_anchors(1000.0, ladder), choose_anchors(1200, ladder), choose_anchors(2000, ladder)
    (['greedy', 'mcts'], ['greedy', 'mcts'], ['greedy', 'mcts'])
    >>> choose_anchors(700.0, ladder), choose_anchors(980.0, ladder)
    (['random', 'greedy'], ['greedy', 'mcts'])
    >>> choose_anchors(100.0, ladder)
    ['random', 'greedy']
    """
    ladder = sorted(anchors, key=lambda a: a[1])
    if len(ladder) <= 2:
        return [name for name, _ in ladder]
    below = [k for k, (_, r) in enumerate(ladder) if r <= estimate]
    k = min(below[-1] if below else 0, len(ladder) - 2)
    pair = ladder[k:k + 2]
    if max(abs(r - estimate) for _, r in pair) > FAR_ELO:
        nearest = sorted(ladder, key=lambda a: abs(a[1] - estimate))[:2]
        pair = sorted(nearest, key=lambda a: a[1])
    return [name for name, _ in pair]


def _pair_scores(games: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
    """(anchor, the rated agent's mean score) of each complete game pair (same anchor, opening,
    block: once on each side)."""
    pairs: dict[tuple, list[float]] = {}
    for g in games:
        rated_attacks = g["attacker"] == RATED
        anchor = g["defender"] if rated_attacks else g["attacker"]
        y = attacker_score(g["result"])
        pairs.setdefault((anchor, g["opening"], g["block"]), []).append(y if rated_attacks else 1.0 - y)
    return [(k[0], sum(v) / 2) for k, v in pairs.items() if len(v) == 2]


def _pair_mean(elo: float, anchor: float, h: float) -> float:
    return 0.5 * (expected_score(elo - anchor + h) + expected_score(elo - anchor - h))


def sprt_llr(games: Sequence[dict[str, Any]], fixed: dict[str, float], h: float, elo0: float, elo1: float,
             elo_hat: float) -> float:
    """The GSPRT log-likelihood ratio of H1 (Elo ``elo1``) against H0 (``elo0``) from the complete
    game pairs of ``games`` (module docstring); 0 with fewer than two pairs.

    Pairs scored ¾ on average against an anchor at 1000 favour 1200 over 1000:

    >>> rows = [{"attacker": a, "defender": d, "result": r, "opening": k, "block": 0}
    ...         for k in range(40) for a, d, r in [("rated", "x", "attacker"),
    ...                                            ("x", "rated", "attacker" if k % 2 else "defender")]]
    >>> sprt_llr(rows, {"x": 1000.0}, 0.0, 1000, 1200, 1190.8) > 2.94
    True
    """
    pairs = _pair_scores(games)
    if len(pairs) < 2:
        return 0.0
    resid = [(x - _pair_mean(elo_hat, fixed[a], h)) ** 2 for a, x in pairs]
    var = max(sum(resid) / len(resid), 1e-3)
    return sum((x - _pair_mean(elo0, fixed[a], h)) ** 2 - (x - _pair_mean(elo1, fixed[a], h)) ** 2
               for a, x in pairs) / (2 * var)


def _fit(games, fixed, h) -> dict[str, Any]:
    if not games:
        return {"elo": PIN[1], "low": -math.inf, "high": math.inf, "games": 0}
    row = ratings_against_fixed(games, fixed, h, prior_mean=PIN[1], prior_sd=DEFAULT_PRIOR_SD)["ratings"][0]
    return {"elo": row["rating"], "low": row["low"], "high": row["high"], "games": row["games"]}


def _wdl_text(scores: list[float]) -> str:
    t = wdl(scores)
    return f"{t['wins']}-{t['draws']}-{t['losses']}"


GAMES = 400
"""The default cap on games with no stopping rule."""
GAMES_WITH_A_STOP = 2000
"""The default cap with ``target_ci`` or ``sprt``: high enough that the rule, not the cap, stops a
rating (the shipped Tablut policy needs about 800 games for ±50; a decisive SPRT far fewer)."""


def game_cap(games: int | None, target_ci: float | None = None, sprt: tuple[float, float] | None = None) -> int:
    """The most games :func:`rate` plays: ``games`` if given, else :data:`GAMES`, or
    :data:`GAMES_WITH_A_STOP` when ``target_ci`` or ``sprt`` may stop it first.

    >>> game_cap(None), game_cap(None, target_ci=50), game_cap(96, target_ci=50)
    (400, 2000, 96)
    """
    if games is not None:
        return games
    return GAMES if target_ci is None and sprt is None else GAMES_WITH_A_STOP


MAX_GAMES = 1_000_000
"""The most games one rating may be asked for (a million games is years of a strong agent's play)."""


def _check_arguments(games, target_ci, sprt, alpha, beta, time_per_move, jobs, seed) -> tuple:
    """:func:`rate`'s numeric arguments checked (a ``TypeError`` or ``ValueError`` naming the
    argument), with the default cap filled in."""
    if target_ci is not None:
        target_ci = check_number("target_ci", target_ci, low=0, high=10_000, low_open=True)
    if sprt is not None:
        if isinstance(sprt, (str, bytes)) or not isinstance(sprt, (tuple, list)) or len(sprt) != 2:
            raise TypeError(f"sprt must be a pair (elo0, elo1), got {sprt!r}")
        sprt = tuple(check_number(f"sprt[{k}]", x, low=-10_000, high=10_000) for k, x in enumerate(sprt))
        if not sprt[0] < sprt[1]:
            raise ValueError(f"sprt needs ELO0 < ELO1, got {sprt[0]:g} {sprt[1]:g}")
    alpha = check_number("alpha", alpha, low=0, high=0.5, low_open=True, high_open=True)
    beta = check_number("beta", beta, low=0, high=0.5, low_open=True, high_open=True)
    games = check_int("games", game_cap(games, target_ci, sprt), low=1, high=MAX_GAMES)
    if time_per_move is not None:
        time_per_move = check_number("time_per_move", time_per_move, low=0, high=3600, low_open=True)
    jobs = check_int("jobs", jobs, low=1, high=1024)
    seed = check_int("seed", seed, low=0, high=MAX_SEED)
    return games, target_ci, sprt, alpha, beta, time_per_move, jobs, seed


def rate(agent: Any, variant: str, *, games: int | None = None, target_ci: float | None = None,
         sprt: tuple[float, float] | None = None, alpha: float = 0.05, beta: float = 0.05,
         time_per_move: float | None = None, jobs: int = 1, ray: bool | str = False, seed: int = 0,
         anchors: dict[str, Any] | str | None = None, openings: Sequence[Sequence[str]] | str | None = None,
         progress: bool = False) -> Rating:
    """Rate ``agent`` in ``variant`` against the fixed anchors (module docstring).

    Args:
        agent: an agent spec, an :class:`~agents.base.Agent`, a callable ``(observation,
            action_mask) -> action``, an SB3 model or an RLlib module (:mod:`.adapters`).
        games: the most games to play (rounded up to whole rounds' game pairs); by default
            400, or 2000 with ``target_ci`` or ``sprt`` (:func:`game_cap`); at most :data:`MAX_GAMES`.
        target_ci: stop once the 95% interval is within ± this many Elo.
        sprt: ``(elo0, elo1)``: stop when the SPRT decides (error rates ``alpha``, ``beta``).
        time_per_move: seconds a move for a searching rated agent (the anchors keep theirs).
        jobs: worker processes; ``ray``: play the chunks as Ray tasks (``True`` for a local Ray or
            $RAY_ADDRESS, or an address).
        seed: the base seed of every chunk.
        anchors: the anchor file's content or path (default: the shipped one of ``variant``).
        openings: the suite's move lists or a suite file (default: the shipped suite).

    Raises:
        AgentError: the rated agent cannot be built, cannot play the variant, raised or played
            an illegal move (one line naming it).
        TypeError, ValueError: an argument of the wrong type or out of range, an anchor table or
            opening suite that rating cannot use (one line naming it); nothing is played.
    """
    games, target_ci, sprt, alpha, beta, time_per_move, jobs, seed = _check_arguments(
        games, target_ci, sprt, alpha, beta, time_per_move, jobs, seed)
    if not isinstance(ray, (bool, str)):
        raise TypeError(f"ray must be True, False or an address, got {ray!r}")
    rules = make_rules(variant)
    if isinstance(anchors, dict):
        table = check_anchor_table(anchors, variant, "anchors")
    elif anchors is None or isinstance(anchors, (str, os.PathLike)):
        table = load_anchors(variant, anchors)
    else:
        raise TypeError(f"anchors must be an anchor table (dict), a file path or None, got {type(anchors).__name__}")
    if openings is None or isinstance(openings, (str, os.PathLike)):
        suite = load_openings(variant, openings)
    else:
        suite = check_openings(variant, openings, "openings")
    fixed = {a["name"]: float(a["rating"]) for a in table["anchors"]}
    specs = {a["name"]: a["spec"] for a in table["anchors"]}
    h = float(table["side_advantage"]["elo"])
    ladder = [(a["name"], float(a["rating"])) for a in table["anchors"]]
    try:
        source, label = agent_source(agent, time_per_move)
    except AgentError:
        raise
    except AgentSpecError as exc:       # its message names the spec already
        raise AgentError(str(exc)) from None
    except ValueError as exc:
        raise AgentError(f"agent {agent!r}: {exc}") from None
    rated = GuardedAgent(source, label)
    note = rated.check_rules(rules)        # builds a spec here: a bad one fails before any game
    if jobs > 1 or ray:
        try:
            check_picklable(rated, f"agent {label}")
        except ValueError as exc:
            raise AgentError(str(exc)) from None
    blocks = max(1, len(suite) // BLOCK)
    played: dict[str, int] = {name: 0 for name in fixed}
    rows: list[dict[str, Any]] = []
    estimate = PIN[1]
    fit = _fit(rows, fixed, h)
    sprt_state = None
    stopped = "games"
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=games, desc=f"rating {label}", unit="game", dynamic_ncols=True)
    try:
        with ExitStack() as stack:
            if ray:
                from ..ray_session import check_address, ray_session, resolve_address

                address = resolve_address(ray if isinstance(ray, str) and ray else None)
                if address is not None:
                    check_address(address)
                stack.enter_context(ray_session(address))
            runner = stack.enter_context(ChunkRunner(rules, jobs, bool(ray)))
            while len(rows) < games:
                chosen = choose_anchors(estimate, ladder)
                if games - len(rows) <= 2 * BLOCK:      # the last round: the nearest anchor only
                    chosen = [min(chosen, key=lambda a: abs(fixed[a] - estimate))]
                chunks = []
                for name in chosen:
                    block = played[name]
                    played[name] += 1
                    first = (block % blocks) * BLOCK
                    ids = tuple(range(first, min(len(suite), first + BLOCK)))
                    moves = tuple(tuple(suite[i]) for i in ids)
                    for att, dfd in ((RATED, name), (name, RATED)):
                        pieces = {RATED: rated, name: specs[name]}
                        chunks.append(Chunk(f"{att}>{dfd}:{block}", att, dfd, pieces[att], pieces[dfd], ids,
                                            moves, block, chunk_seed(seed, att, dfd, block)))
                done = runner.run(chunks, on_done=(lambda res: bar.update(len(res.games))) if bar else None)
                for res in done:
                    for g in res.games:
                        rows.append({**g, "block": res.chunk.block})
                fit = _fit(rows, fixed, h)
                estimate = fit["elo"]
                if bar:
                    bar.set_postfix_str(f"Elo {fit['elo']:.0f} [{fit['low']:.0f}, {fit['high']:.0f}]")
                if target_ci is not None and max(fit["elo"] - fit["low"], fit["high"] - fit["elo"]) <= target_ci:
                    stopped = f"target interval +-{target_ci:g} reached"
                    break
                if sprt is not None:
                    llr = sprt_llr(rows, fixed, h, sprt[0], sprt[1], fit["elo"])
                    lower, upper = math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)
                    decision = "H1 accepted" if llr >= upper else "H0 accepted" if llr <= lower else "undecided"
                    sprt_state = {"elo0": sprt[0], "elo1": sprt[1], "alpha": alpha, "beta": beta, "llr": llr,
                                  "lower": lower, "upper": upper, "decision": decision,
                                  "pairs": len(_pair_scores(rows))}
                    if decision != "undecided":
                        stopped = f"SPRT: {decision}"
                        break
    finally:
        if bar:
            bar.close()
    mine = lambda g: attacker_score(g["result"]) if g["attacker"] == RATED else 1.0 - attacker_score(g["result"])
    opponents = []
    for name, r in sorted(ladder, key=lambda a: a[1]):
        vs = [g for g in rows if name in (g["attacker"], g["defender"])]
        if not vs:
            continue
        att = [mine(g) for g in vs if g["attacker"] == RATED]
        dfd = [mine(g) for g in vs if g["defender"] == RATED]
        t = wdl(att + dfd)
        opponents.append({"name": name, "spec": specs[name], "anchor_elo": r, "games": t["games"],
                          "wins": t["wins"], "draws": t["draws"], "losses": t["losses"], "score": t["score"],
                          "as_attacker": _wdl_text(att), "as_defender": _wdl_text(dfd)})
    everything = wdl([mine(g) for g in rows])
    sides = {side: _fit([g for g in rows if g[side] == RATED], fixed, h) for side in ("attacker", "defender")}
    for side in sides:
        sides[side]["wdl"] = _wdl_text([mine(g) for g in rows if g[side] == RATED])
    return Rating(agent=label, variant=variant, elo=fit["elo"], low=fit["low"], high=fit["high"], games=len(rows),
                  draws=everything["draws"], score=everything["score"], attacker=sides["attacker"],
                  defender=sides["defender"], opponents=opponents, stopped=stopped, seed=seed,
                  seconds=round(time.perf_counter() - t0, 1), sprt=sprt_state, time_per_move=time_per_move,
                  anchors={"pin": f"{PIN[0]} = {PIN[1]:g}", "side_advantage": h, "built": table.get("built"),
                           "games": table.get("games"), "widest_half_interval": table.get("widest_half_interval"),
                           "target_met": table.get("target_met"), "note": note},
                  records=[{k: g[k] for k in ("attacker", "defender", "opening", "block", "result", "reason", "turns")}
                           for g in rows])
