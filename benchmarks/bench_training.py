"""Training throughput: PPO steps per second of ``tafl train`` for this checkout against an earlier
one, side by side from one run (issue: fast baselines — training waited on the greedy opponents).

Each run is a fresh subprocess of ``tafl train`` (the checkout's own ``tafl_env.cli.main``) on the
checkout's own ``configs/train/<variant>.yaml`` with the warm start, the periodic evaluations,
checkpoints and the final evaluation switched off, so what is timed is the league's rollouts
(self-play, snapshots, greedy and random opponents) and PPO's updates. The checkouts take turns,
so both see the same machine load; each figure is the best of ``--rounds``.

    git worktree add /tmp/base 9b1f29b                               # the numpy engine
    python benchmarks/bench_training.py --base /tmp/base              # historical_tablut, 30k steps
    python benchmarks/bench_training.py --base /tmp/base --write      # and record it in RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "RESULTS.md"

RUN = ("import sys; from tafl_env.cli import main; "
       "sys.exit(main(['train', '--config', sys.argv[1], '--out', sys.argv[2], '--timesteps', sys.argv[3], "
       "'--no-eval', '--no-progress', '--json']))")


def timing_config(checkout: Path, variant: str, timesteps: int, workdir: Path) -> Path:
    """The checkout's training config for ``variant`` with everything but the training loop off."""
    cfg = yaml.safe_load((checkout / "configs" / "train" / f"{variant}.yaml").read_text())
    cfg.update(imitation_games=0, eval_every=10 * timesteps, checkpoint_every=10 * timesteps,
               max_minutes=None, progress_bar=False)
    path = workdir / f"{checkout.name}-{variant}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_once(checkout: Path, config: Path, timesteps: int, workdir: Path) -> dict:
    out = Path(tempfile.mkdtemp(dir=workdir))
    env = dict(os.environ, PYTHONPATH=str(checkout), TAFL_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", RUN, str(config), str(out / "run"), str(timesteps)],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"{checkout}: tafl train failed:\n{proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"timesteps": summary["timesteps"], "seconds": 60 * summary["minutes"],
            "steps_per_s": summary["timesteps"] / (60 * summary["minutes"])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", type=Path, required=True, help="an earlier checkout (git worktree)")
    p.add_argument("--variant", default="historical_tablut")
    p.add_argument("--timesteps", type=int, default=30_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--write", action="store_true", help=f"record the figures in {DEFAULT_OUT.name}")
    args = p.parse_args(argv)
    checkouts = {"before": args.base.resolve(), "after": ROOT}
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        configs = {k: timing_config(c, args.variant, args.timesteps, work) for k, c in checkouts.items()}
        for r in range(args.rounds):
            for key, checkout in checkouts.items():
                res = run_once(checkout, configs[key], args.timesteps, work)
                print(f"round {r + 1} {key}: {res['timesteps']} steps in {res['seconds']:.1f} s = "
                      f"{res['steps_per_s']:.0f} steps/s", flush=True)
                if key not in best or res["steps_per_s"] > best[key]["steps_per_s"]:
                    best[key] = res
    ratio = best["after"]["steps_per_s"] / best["before"]["steps_per_s"]
    rows = ["| checkout | PPO steps/s (best of %d) |" % args.rounds, "|---|---:|",
            f"| before ({args.base.name}) | {best['before']['steps_per_s']:,.0f} |",
            f"| after (this tree) | {best['after']['steps_per_s']:,.0f} |", "",
            f"after / before: **{ratio:.2f}x**"]
    body = "\n".join(rows)
    print(body)
    if args.write:
        sys.path.insert(0, str(ROOT))
        from tafl_env.bench import append_section, machine_info

        base_rev = subprocess.run(["git", "-C", str(args.base), "rev-parse", "--short", "HEAD"],
                                  capture_output=True, text=True).stdout.strip() or args.base.name
        append_section(DEFAULT_OUT, f"Training throughput, {args.variant}", machine_info("torch", "numba"),
                       f"python benchmarks/bench_training.py --base <worktree of {base_rev}> "
                       f"--variant {args.variant} --timesteps {args.timesteps} --rounds {args.rounds}",
                       body, notes=(f"configs/train/{args.variant}.yaml of each checkout, warm start, "
                                    "evaluations and checkpoints off; best of the rounds",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
