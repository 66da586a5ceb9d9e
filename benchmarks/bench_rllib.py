"""RLlib throughput: sampling with 1 and 2 env runners, and sample + learn, in one run.

The config (default ``configs/rllib/legacy_ard_ri.yaml``, its league, network and batch sizes) is
built with ``num_env_runners`` = 1 and then 2 (``num_envs_per_env_runner`` games each, on a local
Ray of ``--cpus`` CPUs). For each:

- ``sampling``: env steps per second of RLlib's synchronous parallel sampling alone (the env
  runners step their games with the current module: env, connectors, the masked module's forward
  pass), ``--rounds`` rounds of one training batch each, the first round (warm-up) left out;
- ``sample + learn``: env steps per second of whole ``algo.train()`` iterations (sampling, then
  PPO's epochs on the learner in the driver), as a training run sees them.

    python benchmarks/bench_rllib.py                        # 1 and 2 env runners, 2 CPUs
    python benchmarks/bench_rllib.py --rounds 3 --envs 8
    python benchmarks/bench_rllib.py --write                # append a dated section to RESULTS.md

DESIGN.md: speed is measured and written down with the machine and the date, not asserted in tests.
On a 2-core machine, 2 env runners can at best double one runner's sampling; the learner shares
the same cores, so ``sample + learn`` gains less.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tafl_env.bench import append_section, machine_info

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "RESULTS.md"
DEFAULT_CONFIG = ROOT / "configs" / "rllib" / "legacy_ard_ri.yaml"


def measure(cfg: dict, runners: int, rounds: int) -> dict:
    """Sampling and sample + learn throughput of ``cfg`` with ``runners`` env runners (Ray running)."""
    from agents.rllib.league import env_steps
    from agents.rllib.trainer import build_config

    algo = build_config({**cfg, "num_env_runners": runners}).build_algo()
    try:
        sampled = []
        for r in range(rounds + 1):
            t0 = time.perf_counter()
            each = -(-cfg["train_batch_size"] // runners)     # one batch, split over the runners
            parts = algo.env_runner_group.foreach_env_runner(
                lambda w, n=each: sum(e.env_steps() for e in w.sample(num_timesteps=n)),
                local_env_runner=False, timeout_seconds=600)
            dt = time.perf_counter() - t0
            steps = sum(parts)
            if r:                          # the first round warms up (compiles, connectors)
                sampled.append(steps / dt)
        learned = []
        before = 0
        for r in range(rounds + 1):
            t0 = time.perf_counter()
            result = algo.train()
            dt = time.perf_counter() - t0
            now = env_steps(result)
            if r:
                learned.append((now - before) / dt)
            before = now
    finally:
        algo.stop()
    return {"runners": runners, "sampling": sum(sampled) / len(sampled), "sample_learn": sum(learned) / len(learned),
            "sampling_rounds": sampled, "learn_rounds": learned}


def table(rows: list[dict], envs: int) -> str:
    base = rows[0]
    lines = ["| env runners × games | sampling (env steps/s) | vs 1 runner | sample + learn (env steps/s) | vs 1 runner |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['runners']} × {envs} | {r['sampling']:,.0f} | {r['sampling'] / base['sampling']:.2f}× "
                     f"| {r['sample_learn']:,.0f} | {r['sample_learn'] / base['sample_learn']:.2f}× |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="an RLlib training config (backend: rllib)")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2], help="env runner counts (default 1 2)")
    p.add_argument("--envs", type=int, default=None, help="games per env runner (default: the config's)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds of one batch each, after one warm-up (default 3)")
    p.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray (default 2)")
    p.add_argument("--write", action="store_true", help=f"append a dated section to {DEFAULT_OUT}")
    p.add_argument("--out", type=Path, default=None, help="append the section to this file instead")
    args = p.parse_args(argv)

    import ray
    import torch

    from agents.schema import read_yaml_config
    from agents.rllib.config import validate_rllib_config

    cfg = validate_rllib_config(read_yaml_config(args.config), source=str(args.config))
    if args.envs is not None:
        cfg["num_envs_per_env_runner"] = args.envs
    torch.set_num_threads(cfg["torch_threads"])
    ray.init(num_cpus=args.cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    rows = []
    try:
        for n in args.runners:
            rows.append(measure(cfg, n, args.rounds))
            r = rows[-1]
            print(f"{n} env runner(s): sampling {r['sampling']:,.0f} steps/s, sample + learn "
                  f"{r['sample_learn']:,.0f} steps/s", file=sys.stderr)
    finally:
        ray.shutdown()
    text = table(rows, cfg["num_envs_per_env_runner"])
    print(text)
    out = args.out or (DEFAULT_OUT if args.write else None)
    if out is not None:
        append_section(out, "RLlib sampling, 1 vs 2 env runners (bench_rllib.py)", machine_info("ray", "torch"),
                       f"python benchmarks/bench_rllib.py {' '.join(argv)}".rstrip(), text,
                       notes=(f"config: {args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config} "
                              f"(league weights, network, train_batch_size {cfg['train_batch_size']}, "
                              f"{cfg['num_epochs']} epochs of minibatches of {cfg['minibatch_size']}); local Ray of "
                              f"{args.cpus} CPUs; the learner runs in the driver",
                              f"{args.rounds} timed rounds of one batch each after one warm-up round; mean of the rounds",
                              "the machine is shared with other jobs: figures vary by ±20% between runs"))
        print(f"appended to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
