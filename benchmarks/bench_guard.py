"""What the ``az`` agent's root guard costs beside its search, per variant.

The guard (:meth:`agents.az.agent.AZAgent._guard_in_two`) checks each root for moves that win in
two and, where the search's move leaves the opponent a win now or in two, scans the other moves
for one that does not (:meth:`agents.greedy.wins.WinFinder.leaves_a_win`). This plays ``--games``
games of ``az:MODEL:N`` against greedy from the variant's start (seeded, so the same games in each
mode) and times the agent's moves, its guard, and the calls of ``leaves_a_win``:

* ``early``: ``leaves_a_win`` as shipped, the compiled ``any_win`` that stops at the first win;
* ``full``: every flag of the opponent's moves after the move (``WinFinder.flags``), the
  definition the tests compare it with.

Both modes play the same moves (the answers are equal); only the time differs.

    python benchmarks/bench_guard.py                                        # the shipped models
    python benchmarks/bench_guard.py --variants legacy_alea_evangelii \\
        --model legacy_alea_evangelii=results/training/legacy_alea_evangelii_az/run1_handoff/checkpoints/iter_000051/model.pt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents import make_agent  # noqa: E402
from agents.az import agent as az_agent  # noqa: E402
from agents.evaluation.play import play_games  # noqa: E402
from agents.greedy.wins import WIN_IN_TWO, WIN_NOW, WinFinder, after_move  # noqa: E402
from tafl_env import Game  # noqa: E402


def _full_leaves_a_win(self, engine, state, game, action):
    """The reference: all of the opponent's flags after the move."""
    child, settled = after_move(engine, state, game, action)
    if settled is not None:
        return settled
    _, flags = self.flags(engine, child, 0)
    return bool(((flags == WIN_NOW) | (flags == WIN_IN_TWO)).any())


class _Timer:
    def __init__(self):
        self.calls, self.seconds = 0, 0.0

    def wrap(self, fn):
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.calls += 1
                self.seconds += time.perf_counter() - t
        return timed


def measure(variant: str, model: str, simulations: int, games: int, seed: int, mode: str) -> dict:
    leaves = _Timer()
    guard = _Timer()
    act = _Timer()
    fn = WinFinder.leaves_a_win if mode == "early" else _full_leaves_a_win
    saved = WinFinder.leaves_a_win, az_agent.AZAgent._guard_in_two
    WinFinder.leaves_a_win = leaves.wrap(fn)
    az_agent.AZAgent._guard_in_two = guard.wrap(saved[1])
    try:
        agent = make_agent(f"az:{model}:{simulations}", seed=seed)
        agent.act = act.wrap(agent.act)
        results = play_games(variant, agent, make_agent("greedy", seed=seed + 1), games, seed=seed)
    finally:
        WinFinder.leaves_a_win, az_agent.AZAgent._guard_in_two = saved
    return {"mode": mode, "turns": sum(r["turns"] for r in results), "agent_calls": act.calls,
            "agent_s": act.seconds, "guard_s": guard.seconds, "leaves_calls": leaves.calls,
            "leaves_s": leaves.seconds, "results": [(r["result"], r["turns"]) for r in results]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", nargs="+", default=["legacy_tawlbwrdd", "legacy_berserk"])
    p.add_argument("--model", action="append", default=[], metavar="VARIANT=PATH",
                   help="the model of a variant (default: the shipped one, az:<variant>)")
    p.add_argument("--simulations", type=int, default=64)
    p.add_argument("--games", type=int, default=4, help="games per mode, sides alternating")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--modes", nargs="+", default=["early", "full"], choices=["early", "full"])
    args = p.parse_args(argv)
    models = dict(m.split("=", 1) for m in args.model)
    print("| variant | mode | turns | agent calls | agent ms a call | guard ms a call | leaves_a_win calls | ms each |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for variant in args.variants:
        model = models.get(variant, variant)
        start = Game(variant)                            # load and compile before timing
        make_agent(f"az:{model}:2", seed=0).act(start.engine, start.state)
        action = int(start.legal_moves()[0].action)
        WinFinder().leaves_a_win(start.engine, start.state, 0, action)
        _full_leaves_a_win(WinFinder(), start.engine, start.state, 0, action)
        seen = None
        for mode in args.modes:
            r = measure(variant, model, args.simulations, args.games, args.seed, mode)
            if seen is not None and r["results"] != seen:
                raise SystemExit(f"{variant}: the modes played different games: {seen} vs {r['results']}")
            seen = r["results"]
            n = max(r["agent_calls"], 1)
            print(f"| {variant} | {mode} | {r['turns']:,} | {r['agent_calls']:,} | {1000 * r['agent_s'] / n:.1f} | "
                  f"{1000 * r['guard_s'] / n:.1f} | {r['leaves_calls']:,} | "
                  f"{1000 * r['leaves_s'] / max(r['leaves_calls'], 1):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
