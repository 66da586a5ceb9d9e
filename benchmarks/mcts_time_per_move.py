"""Time per move of the compiled MCTS: ``mcts:N`` against ``mcts:N`` from the start, one game.

What an anchor ladder needs to know (agents/evaluation/anchors.py: the top anchor should take
about half a second a move): the seconds each budget spends in ``act`` per move chosen, over the
first ``--turns`` turns of one game from the variant's start (agents seeded by the game's seed).
The first call of a fresh process compiles; a short warm-up game runs first and is not counted.

    python benchmarks/mcts_time_per_move.py legacy_berserk --budgets 100 1000 [--turns 24]

To compare two versions of the code on a noisy machine, run both in one session, interleaved
(``git worktree add /tmp/before COMMIT``, then this script in each tree with
``PYTHONPATH=<tree>``), as benchmarks/RESULTS.md does for Berserk's threat check.
"""

from __future__ import annotations

import argparse
import time

from agents import make_agent
from agents.evaluation.play import play_games


def time_per_move(variant: str, budget: int, turns: int = 24, seed: int = 3) -> dict:
    """``{"ms_per_move", "moves", "seconds", "result", "turns"}`` of one ``mcts:budget`` self-play game."""
    timing: dict[str, list] = {}
    t0 = time.perf_counter()
    res = play_games(variant, make_agent(f"mcts:{budget}"), make_agent(f"mcts:{budget}"), 1, seed=seed,
                     max_turns=turns, timing=timing)
    seconds = sum(v[0] for v in timing.values())
    moves = sum(v[1] for v in timing.values())
    return {"ms_per_move": 1000 * seconds / max(moves, 1), "moves": moves,
            "seconds": time.perf_counter() - t0, "result": res[0]["result"], "turns": res[0]["turns"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("variant")
    p.add_argument("--budgets", type=int, nargs="+", default=[100, 1000])
    p.add_argument("--turns", type=int, default=24, help="turns of the timed game (default 24)")
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args(argv)
    play_games(args.variant, make_agent("mcts:10"), make_agent("mcts:10"), 1, seed=args.seed, max_turns=4)
    for budget in args.budgets:
        r = time_per_move(args.variant, budget, args.turns, args.seed)
        print(f"{args.variant} mcts:{budget}: {r['ms_per_move']:.0f} ms/move over {r['moves']} moves "
              f"({r['seconds']:.0f} s; {r['result']} at turn {r['turns']})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
