"""Games from a variant's real start position: an AZ agent against an anchor, both sides.

    python tools/start_games.py --variant legacy_ard_ri --agent legacy_ard_ri --opponent mcts:20000 \
        --games 20 --seed 7 --out results/training/legacy_ard_ri_az/start_position.json

The opening suite is the yardstick of strength; the game a person plays starts from the start. From
there two deterministic searches play one game per side over and over, so the AZ agent plays with
its search's own randomness: the Gumbel noise of its root (``gumbel_scale`` 1, as in self-play), a
different draw in every game. ``--games`` games with the agent attacking and as many defending, at
the variant's default move cap; each game's moves are kept. Then ``--probe`` simulations of each
agent's search at the start (the AZ search's root value, MCTS's root value and most visited move)
say which side each search believes wins from there: the evidence beside the results.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from agents import make_agent
from agents.az.agent import AZAgent
from agents.evaluation.play import play_games
from agents.evaluation.stats import wilson_interval
from tafl_env import Game


def _az_start_value(model: str, variant: str, simulations: int) -> dict:
    agent = AZAgent(model, simulations=simulations)
    game = Game(variant)
    from agents.az.search import BatchedSearch

    search = BatchedSearch(game.engine, agent.model.evaluate, agent.settings, np.random.default_rng(0))
    res = search.run(game.state, simulations, noise=False)
    move = str(game.copy().push(int(res.action[0])))
    return {"simulations": simulations, "value_for_side_to_move": round(float(res.value[0]), 3),
            "side_to_move": game.to_move, "move": move}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", required=True)
    p.add_argument("--agent", required=True, help="the AZ model (a path or a variant id with a shipped model)")
    p.add_argument("--simulations", type=int, default=64)
    p.add_argument("--opponent", required=True, help="the anchor's spec, e.g. mcts:20000")
    p.add_argument("--games", type=int, default=20, help="games per side")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--probe", type=int, default=2000, help="simulations of the AZ search's look at the start")
    p.add_argument("--out", type=Path, help="write the figures and the games here (JSON)")
    args = p.parse_args(argv)

    noisy = AZAgent(args.agent, simulations=args.simulations, gumbel_scale=1.0)
    opponent = make_agent(args.opponent)
    legs = {}
    t0 = time.perf_counter()
    for side in ("attacker", "defender"):
        att, dfn = (noisy, opponent) if side == "attacker" else (opponent, noisy)
        games = play_games(args.variant, att, dfn, args.games, seed=args.seed + (side == "defender"),
                           record=True)
        wins = sum(g["result"] == side for g in games)
        draws = sum(g["result"] == "draw" for g in games)
        score = (wins + 0.5 * draws) / len(games)
        low, high = wilson_interval(wins + 0.5 * draws, len(games))
        legs[side] = {"games": len(games), "wins": wins, "draws": draws, "score": score,
                      "interval": [round(low, 3), round(high, 3)],
                      "reasons": dict(Counter(g["reason"] for g in games)),
                      "distinct_games": len({tuple(g["moves"]) for g in games}),
                      "turns": [g["turns"] for g in games], "moves": [g["moves"] for g in games]}
        print(f"agent as {side}: {wins}/{len(games)} won ({draws} drawn), score {score:.3f} "
              f"[{low:.3f}, {high:.3f}], {legs[side]['distinct_games']} distinct games, "
              f"reasons {legs[side]['reasons']}", flush=True)
    probe = _az_start_value(args.agent, args.variant, args.probe)
    print(f"AZ search at the start, {args.probe} simulations: value {probe['value_for_side_to_move']:+.3f} for the "
          f"{probe['side_to_move']}s (to move), plays {probe['move']}")
    out = {"variant": args.variant, "agent": f"az:{args.agent}:{args.simulations} with root noise (gumbel_scale 1)",
           "opponent": args.opponent, "seed": args.seed, "games_per_side": args.games,
           "minutes": round((time.perf_counter() - t0) / 60, 1), "legs": legs, "az_start_search": probe}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "legs"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
