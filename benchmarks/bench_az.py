"""AlphaZero throughput per variant, with the network size of ``configs/az/<variant>.yaml``:

1. **network**: forward passes of a batch of ``games * leaves_per_tree`` positions (the batch of
   one search round), positions per second;
2. **search**: one :class:`agents.az.search.BatchedSearch` move of ``games`` games from positions a
   few random moves into the game, with the config's full ``simulations``: network evaluations
   (leaves) per second, everything included (walks, observation encoding, forward pass,
   expansion, root checks);
3. **self-play**: :class:`agents.az.selfplay.SelfPlay` as training runs it (fast and full searches,
   past-network games off), for ``--seconds``: moves played per second, recorded positions per
   second and network evaluations per second.

Torch runs on ``--threads`` threads (1, as the configs do), numba on one.

    python benchmarks/bench_az.py                                  # legacy_ard_ri and historical_tablut
    python benchmarks/bench_az.py --variants legacy_ard_ri --seconds 20 --write
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def run(variant: str, seconds: float, threads: int) -> dict:
    import torch as th

    from agents.az.config import rules_of, validate_az_config
    from agents.az.network import AZNet, Evaluator
    from agents.az.selfplay import SelfPlay
    from agents.az.search import BatchedSearch
    from agents.az.train import search_settings, selfplay_settings
    from agents.config import read_yaml_config
    from tafl_env.game import engine_for

    th.set_num_threads(threads)
    cfg = validate_az_config(read_yaml_config(ROOT / "configs" / "az" / f"{variant}.yaml"))
    engine = engine_for(rules_of(cfg))
    th.manual_seed(0)
    net = AZNet(engine.n, channels=cfg["channels"], blocks=cfg["blocks"], value_hidden=cfg["value_hidden"]).eval()
    ev = Evaluator(net)
    rng = np.random.default_rng(0)
    out = {"variant": variant, "board": f"{engine.n}x{engine.n}", "channels": cfg["channels"],
           "blocks": cfg["blocks"], "games": cfg["games"], "simulations": cfg["simulations"]}
    # 1. the network alone
    batch = cfg["games"] * cfg["leaves_per_tree"]
    obs = th.rand(batch, engine.n, engine.n, 14)
    with th.inference_mode():
        net(obs)
        t0, k = time.perf_counter(), 0
        while time.perf_counter() - t0 < min(seconds, 5):
            net(obs)
            k += 1
        out["network_pos_per_s"] = batch * k / (time.perf_counter() - t0)
    # 2. one batched search move (warm-up first: the kernels compile on first use)
    state = engine.initial_state(cfg["games"])
    for _ in range(6):
        engine.step(state, engine.random_actions(state, rng))
    state = state.take(np.flatnonzero(~state.done))
    search = BatchedSearch(engine, ev, search_settings(cfg), rng)
    search.run(state.take(np.arange(2)), 4)
    n0, t0 = search.leaf_evaluations, time.perf_counter()
    search.run(state, cfg["simulations"])
    dt = time.perf_counter() - t0
    out["search_evals_per_s"] = (search.leaf_evaluations - n0) / dt
    out["search_moves_per_s"] = len(state) / dt
    # 3. self-play as training runs it
    sp = SelfPlay(engine, ev, search_settings(cfg), selfplay_settings(cfg), rng)
    sp.play(1)
    t0 = time.perf_counter()
    moves = positions = evals = 0
    while time.perf_counter() - t0 < seconds:
        gb = sp.play(1)
        moves += gb.moves
        positions += gb.positions
        evals += gb.leaf_evaluations
    dt = time.perf_counter() - t0
    out["selfplay_moves_per_s"] = moves / dt
    out["selfplay_recorded_per_s"] = positions / dt
    out["selfplay_evals_per_s"] = evals / dt
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", nargs="+", default=["legacy_ard_ri", "historical_tablut"])
    p.add_argument("--seconds", type=float, default=15.0, help="timed self-play seconds per variant")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--write", action="store_true", help="write the figures to benchmarks/RESULTS.md")
    args = p.parse_args(argv)
    rows = []
    for v in args.variants:
        r = run(v, args.seconds, args.threads)
        rows.append(r)
        print(r, flush=True)
    body = ["| variant | board | net (ch x blocks) | games | sims (full/fast share) | network pos/s | "
            "search evals/s | search moves/s | self-play moves/s | self-play evals/s | recorded pos/s |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        body.append(f"| {r['variant']} | {r['board']} | {r['channels']} x {r['blocks']} | {r['games']} | "
                    f"{r['simulations']} | {r['network_pos_per_s']:,.0f} | {r['search_evals_per_s']:,.0f} | "
                    f"{r['search_moves_per_s']:,.1f} | {r['selfplay_moves_per_s']:,.1f} | "
                    f"{r['selfplay_evals_per_s']:,.0f} | {r['selfplay_recorded_per_s']:,.1f} |")
    text = "\n".join(body)
    print(text)
    if args.write:
        sys.path.insert(0, str(ROOT))
        from tafl_env.bench import append_section, machine_info

        append_section(ROOT / "benchmarks" / "RESULTS.md", "AlphaZero self-play throughput (agents/az)",
                       machine_info("torch", "numba"), "python " + " ".join(["benchmarks/bench_az.py", *sys.argv[1:]]),
                       text, notes=(f"torch threads: {args.threads}; numba: 1 thread",
                                    "network pos/s: forward passes alone, batch = games x leaves_per_tree; "
                                    "search evals/s: one batched search move (walks, observations, forward "
                                    "passes, expansion, root checks); self-play: fast (8) and full (32) "
                                    "searches mixed as in training (25% full), so evals per move vary",
                                    "the machine is shared with other jobs: figures are lower bounds"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
