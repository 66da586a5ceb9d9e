"""Where greedy's time goes: the cost of one scored child (legal move) by phase, one game.

Greedy scores every legal move of a position (agents/greedy/agent.py) and checks the opponent's replies
only where a child could still be best (the lazy check of ``choose_node``); `mcts:N` scores every
node it expands in full, opponent check included, so it runs at the speed of this loop and act()
at about the speed of its first phases. The phases are timed cumulatively by one
compiled loop over the children of a mid-game position (24 random moves in), built from the
agents' own compiled helpers (agents/greedy/kernels.py):

- ``copy``: the light copy of the position into the child's row (and the row set-up);
- ``+ step``: the engine's whole step of the move (with the opponent's move generation);
- ``+ evaluation``: greedy's evaluation of the child;
- ``+ opponent check``: the exact check of the opponent's winning replies;
- ``act()``: the agent's whole move (``GreedyAgent.act``) divided by the number of children.

    python benchmarks/profile_greedy.py [--variants ...] [--write]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numba
import numpy as np

from agents.greedy import GreedyAgent
from agents.greedy.kernels import copy_full, evaluate, has_repeat, opp_can_win
from tafl_env.bench import append_section, machine_info
from tafl_env.engine import Engine
from tafl_env.engine.rows import I_REASON, copy_light, list_actions, restore_seen, step_row
from tafl_env.rules import make_rules

DEFAULT_OUT = Path(__file__).resolve().parent / "RESULTS.md"
PHASES = ("copy", "+ step", "+ evaluation", "+ opponent check")


@numba.njit(_nrt=False, nogil=True, error_model="numpy")
def _children(R, g, W, tb, at, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw,
              stamp, gen, phases, reps):
    total = 0
    for _ in range(reps):
        for b in range(3):
            copy_full(R, g, W, b)
        n = list_actions(W, tb, 0, acts)
        root_rep = has_repeat(W, 0)
        for i in range(n):
            copy_light(W, 0, 1)
            if phases >= 1:
                step_row(W, tb, 1, acts[i], info, scratch)
            if phases >= 2:
                total += evaluate(W, tb, at, 1, stamp, gen) > 0
            if phases >= 3 and W[I_REASON][1] == 0:
                total += opp_can_win(W, tb, at, 1, 2, root_rep, info, scratch, cacts, ccnt, cidx, rw)
            if phases >= 1:
                restore_seen(W, 0, 1)
    return total


def midgame(engine: Engine, seed: int, plies: int = 24):
    rng = np.random.default_rng(seed)
    while True:
        st = engine.initial_state(1)
        for _ in range(plies):
            if st.done[0]:
                break
            engine.step(st, engine.random_actions(st, rng))
        if not st.done[0]:
            return st


def profile(variant: str, seconds: float = 1.0, seed: int = 0) -> dict:
    eng = Engine(make_rules(variant))
    st = midgame(eng, seed)
    agent = GreedyAgent(seed=seed)
    w = agent.work(eng, st)
    n = int(eng.count_legal(st)[0])
    args = (st.arrays(), 0, w.W, eng.kernel_tables, w.at, *w.node_buffers())
    out = {"variant": variant, "children": n}
    for phases, name in enumerate(PHASES):
        _children(*args, phases, 1)   # compile
        reps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            _children(*args, phases, 64)
            reps += 64
        out[name] = (time.perf_counter() - t0) / reps / n * 1e9
    agent.act(eng, st)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        agent.act(eng, st)
        reps += 1
    out["act()"] = (time.perf_counter() - t0) / reps / n * 1e9
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", nargs="+", default=["historical_tablut", "legacy_tawlbwrdd"])
    p.add_argument("--seconds", type=float, default=1.0, help="timed seconds per phase")
    p.add_argument("--write", action="store_true", help=f"append the section to {DEFAULT_OUT.name}")
    args = p.parse_args(argv)
    lines = ["| variant | children | " + " | ".join(f"{x} (ns)" for x in PHASES) + " | act() (ns) |",
             "|---|---:|" + "---:|" * (len(PHASES) + 1)]
    for v in args.variants:
        r = profile(v, args.seconds)
        lines.append(f"| {v} | {r['children']} | " + " | ".join(f"{r[x]:.0f}" for x in PHASES)
                     + f" | {r['act()']:.0f} |")
        print(lines[-1], flush=True)
    if args.write:
        append_section(DEFAULT_OUT, "Greedy's cost per scored child, by phase (profile_greedy.py)",
                       machine_info("numba"), "python benchmarks/profile_greedy.py",
                       "\n".join(lines), ("cumulative ns per child of one mid-game position (24 "
                                         "random moves in), one game, one thread",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
