"""What bounds the single-game path (B = 1): a profile of batched random self-play with one game.

Counts the numpy C-level calls made per step and times each engine phase with cProfile, so the
cost can be compared with the per-call overhead of numpy on this machine.

    python benchmarks/profile_single_game.py [VARIANT] [--steps 3000] [--write]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import timeit
from pathlib import Path

import numpy as np

from tafl_env.bench import append_section, machine_info
from tafl_env.engine import Engine
from tafl_env.rules import make_rules

DEFAULT_OUT = Path(__file__).resolve().parent / "RESULTS.md"


def play(engine: Engine, steps: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    fresh = engine.initial_state(1)
    state = fresh.copy()
    for _ in range(steps):
        engine.step(state, engine.random_actions(state, rng))
        if state.done[0]:
            state = fresh.copy()


def count_c_calls(engine: Engine, steps: int) -> float:
    """Explicit C-function calls per step (operators and indexing come on top of these)."""
    calls = [0]

    def hook(frame, event, arg):
        if event == "c_call":
            calls[0] += 1

    sys.setprofile(hook)
    try:
        play(engine, steps)
    finally:
        sys.setprofile(None)
    return calls[0] / steps


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("variant", nargs="?", default="historical_tablut")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--write", action="store_true")
    args = p.parse_args(argv)
    engine = Engine(make_rules(args.variant))
    play(engine, 100)  # warm-up (lazy tables)

    start = time.process_time()
    play(engine, args.steps)
    per_step = (time.process_time() - start) / args.steps * 1e6
    c_calls = count_c_calls(engine, 500)
    tiny, flag = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=bool)

    def cost(fn) -> float:
        return timeit.timeit(fn, number=20000) / 20000 * 1e6

    int_us, bool_us, fancy_us = cost(lambda: tiny + tiny), cost(lambda: flag & flag), cost(lambda: tiny[tiny])

    profiler = cProfile.Profile()
    profiler.runcall(play, engine, args.steps)
    stats = pstats.Stats(profiler)
    rows = []
    for (path, _, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        if "tafl_env" in path and name != "play":
            rows.append((cumtime / args.steps * 1e6, tottime / args.steps * 1e6, ncalls / args.steps, name))
    rows.sort(reverse=True)
    lines = [f"per step (CPU): {per_step:.0f} µs → {1e6 / per_step:,.0f} steps/s; explicit numpy/C calls "
             f"per step: {c_calls:.0f} (operators and indexing come on top). On one-element arrays an "
             f"integer ufunc costs {int_us:.2f} µs, a boolean one {bool_us:.2f} µs, a fancy index "
             f"{fancy_us:.2f} µs here.", "",
             "| engine function | cumulative µs/step | own µs/step | calls/step |", "|---|---:|---:|---:|"]
    lines += [f"| `{name}` | {cum:.0f} | {own:.0f} | {n:.1f} |" for cum, own, n, name in rows[:14]]
    text = "\n".join(lines)
    print(text)
    if args.write:
        append_section(DEFAULT_OUT, f"Single-game path profile ({args.variant}, B = 1)", machine_info(),
                       f"python benchmarks/profile_single_game.py {' '.join(argv)}".rstrip(), text,
                       notes=("cProfile adds overhead to the per-function figures; the per-step "
                              "figure above them is measured without it",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
