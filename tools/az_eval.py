"""Evaluate an AZ model against opponents on both sides at the rules' default move cap, with
Wilson 95% intervals, and write the figures as JSON (for the cards in results/training/*_az/).

    python tools/az_eval.py --variant legacy_ard_ri --agent az:runs/az/X/final.pt:64 \
        --opponents mcts:100 mcts:1000 --games 100 --seed 2701 --out results/training/legacy_ard_ri_az/vs_mcts.json

Each opponent plays ``--games`` games with the agent attacking and as many with the agent
defending, through :func:`agents.evaluation.play.play_games` (``--batch`` games at a time, over
``--jobs`` processes). Game ``i`` of each leg starts from opening ``i`` of the variant's shipped
opening suite (``agents/evaluation/data/openings/``, cycled), so the two legs are paired and a
batch of deterministic agents still plays different games; ``--openings random`` instead plays
``--opening-turns`` uniformly random legal turns drawn from the game's number, turn and
``--seed`` alone (how the first cards were made). Time per move of each side is recorded too
(seconds of the agents' ``act`` calls / moves they chose).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from agents import make_agent
from agents.base import Agent
from agents.evaluation.openings import load_openings
from agents.evaluation.play import play_games


class Opening(Agent):
    """``inner``, except that the first ``turns`` turns are random legal moves drawn from
    (``seed``, the game's number ``first + row``, its turn): the same in both legs of a pairing."""

    def __init__(self, inner: Agent, turns: int, seed: int, first: int):
        super().__init__(None)
        self.inner, self.turns, self.seed, self.first = inner, turns, seed, first
        self.name = inner.name

    def reset(self, seed=None):
        self.inner.reset(seed)

    def act(self, engine, state):
        early = np.flatnonzero(~state.done & (state.turn < self.turns))
        if not len(early):
            return self.inner.act(engine, state)
        if len(early) != len(state):
            raise RuntimeError("games out of step during the opening")
        out = np.empty(len(state), dtype=np.int64)
        for g in range(len(state)):
            legal = engine.legal_actions(state, g)
            rng = np.random.default_rng([self.seed, self.first + g, int(state.turn[g])])
            out[g] = legal[rng.integers(len(legal))]
        return out
from agents.evaluation.stats import wilson_interval


def _row(results, side):
    n = len(results)
    w = sum(r == side for r in results)
    d = sum(r == "draw" for r in results)
    lo, hi = wilson_interval(w + 0.5 * d, n)
    return {"games": n, "wins": w, "draws": d, "losses": n - w - d, "score": (w + 0.5 * d) / n,
            "score_low": lo, "score_high": hi}


def _chunk(job: tuple) -> tuple:
    """One batch of games: ``(results, timing)``."""
    variant, agent, spec, side, n, seed, first, openings, turns, open_seed = job
    me, opp = make_agent(agent, seed=seed), make_agent(spec, seed=seed + 7)
    if openings is None:
        me, opp = Opening(me, turns, open_seed, first), Opening(opp, turns, open_seed, first)
    pair = (me, opp) if side == "attacker" else (opp, me)
    spent: dict = {}
    games = play_games(variant, *pair, n, seed=seed, timing=spent, openings=openings)
    return [g["result"] for g in games], spent


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", required=True)
    p.add_argument("--agent", required=True, help="the evaluated agent spec (az:..., azpolicy:...)")
    p.add_argument("--opponents", nargs="+", required=True)
    p.add_argument("--games", type=int, default=100, help="games per side per opponent")
    p.add_argument("--batch", type=int, default=50, help="games played at once")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--seed", type=int, default=2701)
    p.add_argument("--openings", choices=("suite", "random"), default="suite")
    p.add_argument("--opening-turns", type=int, default=4, help="random opening turns (--openings random)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    suite = load_openings(args.variant) if args.openings == "suite" else None
    out = {"variant": args.variant, "agent": args.agent, "games_per_side": args.games, "seed": args.seed,
           "openings": (f"the shipped suite ({len(suite)} openings, game i from opening i mod {len(suite)})"
                        if suite else f"{args.opening_turns} random turns"),
           "move_cap": "the variant's default", "results": {}}
    # spawn: a forked child of a process with torch's threads started can hang
    pool = ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn")) if args.jobs > 1 else None
    for j, spec in enumerate(args.opponents):
        # warm-up (kernels loaded from the compile cache): not timed, not counted
        play_games(args.variant, make_agent(args.agent, seed=0), make_agent(spec, seed=1), 2, seed=0, max_turns=4)
        play_games(args.variant, make_agent(spec, seed=1), make_agent(args.agent, seed=0), 2, seed=0, max_turns=4)
        t0 = time.perf_counter()
        jobs = []
        for s, side in enumerate(("attacker", "defender")):
            for k in range(0, args.games, args.batch):
                n = min(args.batch, args.games - k)
                seed = args.seed + 10 * j + s + 1000 * (k // args.batch)
                openings = [suite[(k + i) % len(suite)] for i in range(n)] if suite else None
                jobs.append((args.variant, args.agent, spec, side, n, seed, k, openings, args.opening_turns, args.seed))
        done = list(pool.map(_chunk, jobs)) if pool else [_chunk(job) for job in jobs]
        res, timing = {}, {}
        for side in ("attacker", "defender"):
            results, mine, theirs = [], [0.0, 0], [0.0, 0]
            for job, (r, spent) in zip(jobs, done):
                if job[3] != side:
                    continue
                results += r
                for acc, key in ((mine, side), (theirs, "defender" if side == "attacker" else "attacker")):
                    acc[0] += spent[key][0]
                    acc[1] += spent[key][1]
            res[side] = _row(results, side)
            timing[side] = {"agent_s_per_move": mine[0] / max(mine[1], 1), "opponent_s_per_move": theirs[0] / max(theirs[1], 1)}
            print(f"{args.agent} as {side} vs {spec}: {res[side]}", flush=True)
        both = {k: res["attacker"][k] + res["defender"][k] for k in ("games", "wins", "draws", "losses")}
        lo, hi = wilson_interval(both["wins"] + 0.5 * both["draws"], both["games"])
        both.update(score=(both["wins"] + 0.5 * both["draws"]) / both["games"], score_low=lo, score_high=hi)
        res["both"] = both
        out["results"][spec] = {**res, "timing": timing, "minutes": (time.perf_counter() - t0) / 60}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
