"""AEC environment throughput: random self-play through PettingZoo's public API, per variant.

Each step is what a learner's loop does: ``last()`` (the observation planes and the action mask of
the agent to move), a uniformly random legal action from the mask, ``step(action)``; finished games
are stepped out (``step(None)`` for each agent, not counted) and reset. Columns:

- ``env()``: the wrapped environment (TerminateIllegal, AssertOutOfBounds, OrderEnforcing wrappers);
- ``raw_env``: the bare :class:`tafl_env.aec.TaflEnv`;
- ``engine B=1``: the same work done directly on the engine with a batch of one (mask, observation
  planes, step), the floor that the environment's bookkeeping adds to.

    python benchmarks/bench_env.py                                  # all five variants, 2 s each
    python benchmarks/bench_env.py --seconds 0.5 --variants historical_tablut
    python benchmarks/bench_env.py --write                          # append a dated section to RESULTS.md

DESIGN.md: speed is measured and written down with the machine and the date, not asserted in tests.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from tafl_env.bench import append_section, machine_info

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "RESULTS.md"


def bench_aec(make, seconds: float, seed: int = 0) -> dict:
    """Random self-play through ``last()``/``step()`` for ``seconds``; steps/s and episodes."""
    rng = np.random.default_rng(seed)
    e = make()
    e.reset(seed=seed)
    steps = episodes = 0
    clock = time.perf_counter
    start = clock()
    end = start + seconds
    while True:
        obs, _, terminated, truncated, _ = e.last()
        if terminated or truncated:
            e.step(None)
            if not e.agents:
                episodes += 1
                e.reset()
            continue
        legal = np.flatnonzero(obs["action_mask"])
        e.step(int(legal[rng.integers(len(legal))]))
        steps += 1
        if not steps & 15 and clock() >= end:
            break
    elapsed = clock() - start
    e.close()
    return {"steps_per_s": steps / elapsed, "steps": steps, "episodes": episodes}


def bench_engine_single(variant: str, seconds: float, seed: int = 0) -> dict:
    """The engine alone, batch of one: legal mask, observation planes, random legal action, step."""
    from tafl_env.game import engine_for
    from tafl_env.observation import observe
    from tafl_env.rules import make_rules

    rng = np.random.default_rng(seed)
    eng = engine_for(make_rules(variant))
    st = eng.initial_state(1)
    steps = 0
    clock = time.perf_counter
    start = clock()
    end = start + seconds
    while True:
        mask = eng.legal_action_mask(st)[0]
        observe(eng, st, st.to_move.astype(np.intp))
        legal = np.flatnonzero(mask)
        eng.step(st, np.array([legal[rng.integers(len(legal))]]))
        steps += 1
        if st.reason[0]:
            st = eng.initial_state(1)
        if not steps & 15 and clock() >= end:
            break
    return {"steps_per_s": steps / (clock() - start)}


def table(rows: list[dict]) -> str:
    out = ["| variant | board | env() steps/s | raw_env steps/s | engine B=1 steps/s | episodes (env()) |",
           "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['variant']} | {r['board']}×{r['board']} | {r['env']:,.0f} | {r['raw']:,.0f} | "
                   f"{r['engine']:,.0f} | {r['episodes']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from tafl_env import VARIANTS, make_rules
    from tafl_env.aec import env, raw_env

    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per variant and column (default 2)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="VARIANT",
                   help="default: all five variants")
    p.add_argument("--write", action="store_true", help=f"append a dated section to {DEFAULT_OUT}")
    p.add_argument("--out", type=Path, default=None, help="append the section to this file instead")
    args = p.parse_args(argv)

    rows = []
    for v in args.variants:
        wrapped = bench_aec(lambda: env(v), args.seconds)
        bare = bench_aec(lambda: raw_env(v), args.seconds)
        floor = bench_engine_single(v, args.seconds)
        rows.append({"variant": v, "board": make_rules(v).board_size, "env": wrapped["steps_per_s"],
                     "raw": bare["steps_per_s"], "engine": floor["steps_per_s"],
                     "episodes": wrapped["episodes"]})
        print(f"{v}: env() {wrapped['steps_per_s']:,.0f}/s, raw_env {bare['steps_per_s']:,.0f}/s, "
              f"engine B=1 {floor['steps_per_s']:,.0f}/s", file=sys.stderr)
    text = table(rows)
    print(text)

    out = args.out or (DEFAULT_OUT if args.write else None)
    if out is not None:
        append_section(out, "AEC environment (bench_env.py)", machine_info("pettingzoo"),
                       f"python benchmarks/bench_env.py {' '.join(argv)}".rstrip(), text,
                       notes=(f"timed seconds per cell: {args.seconds:g}",
                              "steps through the public API: last() (observation and mask), then step() "
                              "with a random legal action; engine B=1 = the bare engine's single-game "
                              "random self-play on the same machine"))
        print(f"appended to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
