"""Vector-env throughput: the Gymnasium VectorEnv and the SB3 VecEnv against the bare engine.

For every variant, at B environments (default 1024), for about ``--seconds`` each:

- **engine**: ``tafl_env.bench.bench_engine`` — batched random self-play of B games, the packed
  mask only (``engine``), and with the int8 ``(B, A)`` mask unpacked every step (``engine+mask``,
  what an env must hand out);
- **gym self-play** / **sb3 self-play**: ``TaflVectorEnv`` / ``TaflSB3VecEnv`` in self-play mode
  (B slots = B/2 games; an env step moves only the active slot of each game, so B env steps are B/2
  moves);
- **gym vs random** / **sb3 vs random**: fixed-opponent mode against ``opponent="random"`` (B games;
  an env step is the learner's move plus the opponent's reply, i.e. about 2 moves per env).

Env steps/s count B per ``step`` call (the RL convention: one transition per environment); moves/s
count the engine moves the env played (learner and opponent), comparable with the engine's. The
actions are uniformly random legal actions drawn from the returned masks; drawing them is not
timed (only ``step`` is), so the figures are the env's own cost: observations for all B envs,
masks, rewards, autoreset. The ratios are engine steps/s ÷ env steps/s (and ÷ env moves/s); the
target is ≤ 2. The engine columns are moves/s of B games.

    python benchmarks/bench_vector.py                          # all variants, B=1024, 2 s each
    python benchmarks/bench_vector.py --seconds 0.5 --variants historical_tablut
    python benchmarks/bench_vector.py --write                  # append a dated section to RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import DEFAULT_OUT  # noqa: E402

from tafl_env import VARIANTS  # noqa: E402
from tafl_env.bench import append_section, bench_engine, machine_info  # noqa: E402
from tafl_env.vector import TaflVectorEnv  # noqa: E402

MODES = ("self-play", "vs random")


def sample_from_masks(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of an int8 (B, A) mask (every row has one)."""
    b, a = mask.shape
    counts = mask.sum(axis=1, dtype=np.int64)
    flat = np.flatnonzero(mask)
    starts = np.cumsum(counts) - counts
    pick = starts + (rng.random(b) * counts).astype(np.int64)
    return flat[pick] - np.arange(b) * a


def _mode_kwargs(mode: str) -> dict:
    return {"self_play": True} if mode == "self-play" else {"opponent": "random"}


def bench_gym(variant: str, batch: int, seconds: float, mode: str, seed: int = 0) -> dict:
    env = TaflVectorEnv(variant, batch, **_mode_kwargs(mode))
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    mask = env.action_masks()
    for _ in range(2):  # warm-up
        env.step(sample_from_masks(mask, rng))
        mask = env.action_masks()
    steps, spent, episodes, moves0 = 0, 0.0, 0, env._core.moves
    t_end = time.perf_counter() + seconds
    while True:
        actions = sample_from_masks(mask, rng)
        t0 = time.perf_counter()
        _, _, term, trunc, infos = env.step(actions)
        spent += time.perf_counter() - t0
        mask = infos["action_mask"]
        steps += 1
        episodes += int(np.count_nonzero(term | trunc))
        if time.perf_counter() >= t_end:
            break
    moves = env._core.moves - moves0
    env.close()
    return {"steps_per_s": steps * batch / spent, "moves_per_s": moves / spent, "calls": steps,
            "episodes_ended": episodes}


def bench_sb3(variant: str, batch: int, seconds: float, mode: str, seed: int = 0) -> dict:
    from tafl_env.sb3 import TaflSB3VecEnv

    venv = TaflSB3VecEnv(variant, batch, seed=seed, **_mode_kwargs(mode))
    rng = np.random.default_rng(seed)
    venv.reset()
    for _ in range(2):
        venv.step(sample_from_masks(np.stack(venv.env_method("action_masks")), rng))
    steps, spent, episodes, moves0 = 0, 0.0, 0, venv._core.moves
    t_end = time.perf_counter() + seconds
    while True:
        # what MaskablePPO does each step: get_action_masks(env) = np.stack(env_method(...))
        actions = sample_from_masks(np.stack(venv.env_method("action_masks")), rng)
        t0 = time.perf_counter()
        _, _, dones, _ = venv.step(actions)
        spent += time.perf_counter() - t0
        steps += 1
        episodes += int(np.count_nonzero(dones))
        if time.perf_counter() >= t_end:
            break
    moves = venv._core.moves - moves0
    venv.close()
    return {"steps_per_s": steps * batch / spent, "moves_per_s": moves / spent, "calls": steps,
            "episodes_ended": episodes}


def run(variants, batch: int, seconds: float, seed: int, sb3: bool, rounds: int = 3) -> list[dict]:
    """Each measurement ``rounds`` times for ``seconds / rounds``, interleaved; the best round counts
    (other processes on the machine only ever slow a round down)."""
    rows = []
    chunk = seconds / rounds
    for v in variants:
        best: dict[str, float] = {}

        def keep(key, value):
            best[key] = max(best.get(key, 0.0), value)

        for _ in range(rounds):
            keep("engine", bench_engine(v, batch, chunk, seed=seed)["steps_per_s"])
            keep("engine_mask", bench_engine(v, batch, chunk, seed=seed, unpack_mask=True)["steps_per_s"])
            for mode in MODES:
                g = bench_gym(v, batch, chunk, mode, seed)
                keep(f"gym {mode}", g["steps_per_s"])
                keep(f"gym_moves {mode}", g["moves_per_s"])
                if sb3:
                    r = bench_sb3(v, batch, chunk, mode, seed)
                    keep(f"sb3 {mode}", r["steps_per_s"])
                    keep(f"sb3_moves {mode}", r["moves_per_s"])
        for mode in MODES:
            row = {"variant": v, "batch": batch, "mode": mode, "engine": best["engine"],
                   "engine_mask": best["engine_mask"], "gym": best[f"gym {mode}"],
                   "gym_moves": best[f"gym_moves {mode}"], "sb3": best.get(f"sb3 {mode}"),
                   "sb3_moves": best.get(f"sb3_moves {mode}")}
            rows.append(row)
            print(f"  {v:<24} {mode:<10} engine {row['engine']:>10,.0f}  engine+mask "
                  f"{row['engine_mask']:>10,.0f}  gym {row['gym']:>10,.0f} ({row['gym_moves']:,.0f} moves/s)"
                  + (f"  sb3 {row['sb3']:>10,.0f}" if sb3 else ""), file=sys.stderr, flush=True)
    return rows


def format_table(rows: list[dict]) -> str:
    lines = ["| variant | B | mode | engine | engine+mask | Gym env steps/s (moves/s) | "
             "SB3 env steps/s (moves/s) | engine ÷ Gym steps (moves) | engine+mask ÷ Gym moves | "
             "engine ÷ SB3 steps (moves) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(steps, moves):
        return f"{steps:,.0f} ({moves:,.0f})" if steps else "—"

    def ratio(steps, moves, eng):
        return f"{eng / steps:.2f} ({eng / moves:.2f})" if steps else "—"

    for r in rows:
        lines.append(f"| {r['variant']} | {r['batch']} | {r['mode']} | {r['engine']:,.0f} | "
                     f"{r['engine_mask']:,.0f} | {cell(r['gym'], r['gym_moves'])} | "
                     f"{cell(r['sb3'], r['sb3_moves'])} | {ratio(r['gym'], r['gym_moves'], r['engine'])} | "
                     f"{r['engine_mask'] / r['gym_moves']:.2f} | "
                     f"{ratio(r['sb3'], r['sb3_moves'], r['engine'])} |")
    return "\n".join(lines)


NOTES = (
    "engine, engine+mask: bare-engine random self-play of B games, moves/s (packed mask; int8 mask "
    "unpacked every step). Env steps/s count B per `step` call (self-play: B slots = B/2 games, one move "
    "per game per call; vs random: the learner's move plus the opponent's reply); moves/s in brackets "
    "count the engine moves the env played. Only `step` is timed (the random actions are drawn from the "
    "masks outside the timing); ratio = engine ÷ env (target ≤ 2). Each figure is the best of the "
    "interleaved rounds.",
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=2.0,
                   help="timed seconds per measurement, split over --rounds (default 2)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best counts (default 3)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="VARIANT")
    p.add_argument("--batch", type=int, default=1024, help="number of environments (default 1024)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-sb3", action="store_true", help="skip the SB3 VecEnv (no stable_baselines3 import)")
    p.add_argument("--write", action="store_true", help=f"append a dated section to {DEFAULT_OUT.name}")
    p.add_argument("--out", type=Path, default=None, help="append the section to this file (implies --write)")
    p.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    args = p.parse_args(argv)
    if args.batch < 2 or args.batch % 2:
        p.error("--batch must be even and >= 2 (self-play uses two slots per game)")

    info = machine_info("gymnasium", "stable_baselines3")
    print(", ".join(f"{k}: {v}" for k, v in info.items()), flush=True)
    rows = run(args.variants, args.batch, args.seconds, args.seed, sb3=not args.no_sb3, rounds=args.rounds)
    print(format_table(rows))
    if args.write or args.out is not None:
        out = args.out or DEFAULT_OUT
        append_section(out, "Vector envs (bench_vector.py)", info,
                       f"python benchmarks/bench_vector.py {' '.join(argv)}".rstrip(), format_table(rows),
                       notes=(f"timed seconds per row: {args.seconds:g}",) + NOTES)
        print(f"appended to {out}", file=sys.stderr)
    if args.json:
        print(json.dumps({"machine": info, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
