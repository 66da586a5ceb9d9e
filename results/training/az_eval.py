"""Evaluate an AZ model against opponents on both sides at the rules' default move cap, with
Wilson 95% intervals, and write the figures as JSON (for the cards in results/training/*_az/).

    python results/training/az_eval.py --variant legacy_ard_ri --agent az:runs/az/X/final.pt:64 \
        --opponents mcts:100 mcts:1000 --games 100 --seed 2701 --out results/training/legacy_ard_ri_az/vs_mcts.json

Each opponent plays ``--games`` games with the agent attacking and as many with the agent
defending, through :func:`agents.evaluation.play.play_games` (``--batch`` games at a time). The
first ``--opening-turns`` turns of every game are uniformly random legal moves drawn from the game's
number, turn and ``--seed`` alone, so game ``i`` opens the same way in both legs (paired openings)
and a batch of deterministic agents still plays different games. Time per move of each side is
recorded too (seconds of the agents' ``act`` calls / moves they chose; the random opening moves,
which cost nothing, are counted among the moves).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from agents import make_agent
from agents.base import Agent
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", required=True)
    p.add_argument("--agent", required=True, help="the evaluated agent spec (az:..., azpolicy:...)")
    p.add_argument("--opponents", nargs="+", required=True)
    p.add_argument("--games", type=int, default=100, help="games per side per opponent")
    p.add_argument("--batch", type=int, default=50, help="games played at once")
    p.add_argument("--seed", type=int, default=2701)
    p.add_argument("--opening-turns", type=int, default=4, help="random opening turns (paired across legs)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    out = {"variant": args.variant, "agent": args.agent, "games_per_side": args.games, "seed": args.seed,
           "opening_turns": args.opening_turns, "move_cap": "the variant's default", "results": {}}
    for j, spec in enumerate(args.opponents):
        # warm-up (kernels loaded from the compile cache): not timed, not counted
        play_games(args.variant, make_agent(args.agent, seed=0), make_agent(spec, seed=1), 2, seed=0, max_turns=4)
        play_games(args.variant, make_agent(spec, seed=1), make_agent(args.agent, seed=0), 2, seed=0, max_turns=4)
        t0 = time.perf_counter()
        res, timing = {}, {}
        for s, side in enumerate(("attacker", "defender")):
            results = []
            spent = {}
            for k in range(0, args.games, args.batch):
                n = min(args.batch, args.games - k)
                seed = args.seed + 10 * j + s + 1000 * (k // args.batch)
                me = Opening(make_agent(args.agent, seed=seed), args.opening_turns, args.seed, k)
                opp = Opening(make_agent(spec, seed=seed + 7), args.opening_turns, args.seed, k)
                pair = (me, opp) if side == "attacker" else (opp, me)
                games = play_games(args.variant, *pair, n, seed=seed, timing=spent)
                results += [g["result"] for g in games]
            res[side] = _row(results, side)
            mine = spent["attacker" if side == "attacker" else "defender"]
            theirs = spent["defender" if side == "attacker" else "attacker"]
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
