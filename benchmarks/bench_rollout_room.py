"""Rollouts with their history room made up front against the history doubling as games fill it,
in one process, the two taking turns (so both see the same machine load: on these noisy 2-core
machines two separate runs may differ by 30%).

``Engine.play_random`` makes room for every position a big batch's rollout can record before the
kernel runs (``tafl_env.engine.core.PREGROW_MIN_BATCH``, ``ROLLOUT_PREGROW_BYTES``); the other
mode sets the threshold out of reach, so the kernel stops each game that fills the history, the
batch is moved into a buffer of twice the width (its repetition tables rebuilt) and the kernel is
called again. Each round times one ``play_random`` call on 4096 fresh games of each mode (making
the games is outside the clock) and reports the best and the median round.

    python benchmarks/bench_rollout_room.py [--variants ...] [--rounds 12] [--write]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from tafl_env.bench import append_section, machine_info
from tafl_env.engine import Engine, core
from tafl_env.rules import make_rules

DEFAULT_OUT = Path(__file__).resolve().parent / "RESULTS.md"
MODES = {"room made up front": core.PREGROW_MIN_BATCH, "history doubling": 1 << 62}


def measure(variant: str, threads: int, rounds: int, batch: int, seed: int = 0) -> dict:
    eng = Engine(make_rules(variant), threads=threads)
    rng = np.random.default_rng(seed)
    eng.play_random(eng.initial_state(batch), rng)            # compile, warm the caches
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    default = core.PREGROW_MIN_BATCH
    try:
        for _ in range(rounds):
            for mode, threshold in MODES.items():
                core.PREGROW_MIN_BATCH = threshold
                state = eng.initial_state(batch)
                t0 = time.perf_counter()
                moves = int(eng.play_random(state, rng).sum())
                rates[mode].append(moves / (time.perf_counter() - t0))
    finally:
        core.PREGROW_MIN_BATCH = default
    return rates


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", nargs="+", default=["historical_tablut", "legacy_berserk",
                                                     "legacy_alea_evangelii"])
    p.add_argument("--rounds", type=int, default=12, help="rounds per variant and thread count")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--write", action="store_true", help=f"append the section to {DEFAULT_OUT.name}")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    info = machine_info("numba")
    print(", ".join(f"{k}: {v}" for k, v in info.items()), file=sys.stderr, flush=True)
    lines = ["| variant | threads | " + " | ".join(f"{m}: best, median (moves/s)" for m in MODES)
             + " | best ratio |", "|---|---:|" + "---:|" * (len(MODES) + 1)]
    for variant in args.variants:
        for threads in (1, 2):
            rates = measure(variant, threads, args.rounds, args.batch)
            made, doubling = (rates[m] for m in MODES)
            cells = " | ".join(f"{max(r) / 1e6:.2f}M, {np.median(r) / 1e6:.2f}M"
                               for r in (made, doubling))
            lines.append(f"| {variant} | {threads} | {cells} | {max(made) / max(doubling):.2f}× |")
            print(lines[-1], flush=True)
    body = "\n".join(lines)
    if args.write:
        command = "python benchmarks/bench_rollout_room.py " + " ".join(argv or sys.argv[1:])
        append_section(args.out, "Rollouts: history room made up front or doubling (bench_rollout_room.py)",
                       info, command.strip(), body,
                       notes=(f"B = {args.batch} fresh games per call, {args.rounds} rounds, "
                              "the modes alternating; making the games is outside the clock",))
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
