"""AlphaZero throughput per variant, with the network size of ``configs/az/<variant>.yaml`` (or of
any AZ config, ``--configs``):

1. **network**: forward passes of a batch of ``games * leaves_per_tree`` positions (the batch of
   one search round), positions per second;
2. **search**: one :class:`agents.az.search.BatchedSearch` move of ``games`` games from positions a
   few random moves into the game, with the config's full ``simulations``: network evaluations
   (leaves) per second, everything included (walks, observation encoding, forward pass,
   expansion, root checks);
3. **self-play**: :class:`agents.az.selfplay.SelfPlay` as training runs it (fast and full searches,
   past-network games off), for ``--seconds``: moves played per second, recorded positions per
   second and network evaluations per second.

Torch runs on ``--threads`` threads (1, as the configs do), numba on one. ``--static-value-weights``
measures each config at those weights of the leaf's static value (the greedy evaluation of every
leaf, :mod:`agents.az.search`), to show what that evaluation costs beside the forward pass.

    python benchmarks/bench_az.py                                  # legacy_ard_ri and historical_tablut
    python benchmarks/bench_az.py --variants legacy_ard_ri --seconds 20 --write
    python benchmarks/bench_az.py --variants legacy_ard_ri --ray-workers 1 2 --write   # Ray scaling
    python benchmarks/bench_az.py --variants legacy_tawlbwrdd legacy_alea_evangelii --heads board sizeless
    python benchmarks/bench_az.py --variants legacy_tawlbwrdd --static-value-weights 0 0.5   # the leaf's cost
    python benchmarks/bench_az.py --configs configs/az/legacy_alea_evangelii_sizeless.yaml     # a run's own config

"Recorded pos/s" counts the positions of games that finished within the timed window (long games,
as in Tablut, finish few in a short window). With ``--ray-workers``, self-play runs on that many
Ray actors of a local Ray (:class:`agents.az.workers.RaySelfPlay`, as training with ``workers: N``
does) for ``--seconds`` each, and the moves per second of each count are compared.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def run(config: Path, seconds: float, threads: int, head: str | None = None, weight: float | None = None) -> dict:
    """The three measurements (module docstring) of the AZ config at ``config``, its network with
    ``head`` (None: the config's own) and the leaf's static-value weight ``weight`` (None: the
    config's own)."""
    import torch as th

    from agents.az.config import rules_of, validate_az_config
    from agents.az.network import AZNet, Evaluator
    from agents.az.selfplay import SelfPlay
    from agents.az.search import BatchedSearch
    from agents.az.train import search_settings, selfplay_settings
    from agents.schema import read_yaml_config
    from tafl_env.game import engine_for

    th.set_num_threads(threads)
    cfg = validate_az_config(read_yaml_config(config), str(config))
    variant, head = cfg["variant"], head or cfg["head"]
    if weight is not None:
        cfg = validate_az_config({**cfg, "static_value_weight": weight})
    engine = engine_for(rules_of(cfg))
    th.manual_seed(0)
    net = AZNet(engine.n, channels=cfg["channels"], blocks=cfg["blocks"], value_hidden=cfg["value_hidden"],
                head=head).eval()
    ev = Evaluator(net)
    rng = np.random.default_rng(0)
    out = {"variant": variant, "board": f"{engine.n}x{engine.n}", "head": head, "channels": cfg["channels"],
           "blocks": cfg["blocks"], "games": cfg["games"], "simulations": cfg["simulations"],
           "static_value_weight": search_settings(cfg).static_value_weight}
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


def ray_scaling(variant: str, counts: list, seconds: float) -> list:
    """Self-play moves per second on ``count`` Ray actors, for each count."""
    import ray

    from agents.az.config import validate_az_config
    from agents.az.network import AZNet
    from agents.az.workers import RaySelfPlay
    from agents.schema import read_yaml_config

    cfg = validate_az_config(read_yaml_config(ROOT / "configs" / "az" / f"{variant}.yaml"))
    rows = []
    for count in counts:
        ray.init(num_cpus=count, include_dashboard=False, logging_level="ERROR")
        try:
            from tafl_env.game import engine_for
            from agents.az.config import rules_of

            net = AZNet(engine_for(rules_of(cfg)).n, channels=cfg["channels"], blocks=cfg["blocks"],
                        value_hidden=cfg["value_hidden"])
            workers = RaySelfPlay(cfg, count, 0)
            workers.play(net, 1)                     # start-up and compile, not timed
            t0, moves, evals = time.perf_counter(), 0, 0
            while time.perf_counter() - t0 < seconds:
                gb = workers.play(net, 1)
                moves += gb.moves
                evals += gb.leaf_evaluations
            dt = time.perf_counter() - t0
            rows.append({"workers": count, "moves_per_s": moves / dt, "evals_per_s": evals / dt})
            print(rows[-1], flush=True)
        finally:
            ray.shutdown()
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", nargs="+", default=None,
                   help="variants, each with configs/az/<variant>.yaml (default: legacy_ard_ri historical_tablut)")
    p.add_argument("--configs", nargs="+", type=Path, default=[], metavar="PATH",
                   help="AZ configs measured after the variants' own")
    p.add_argument("--seconds", type=float, default=15.0, help="timed self-play seconds per variant")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--heads", nargs="+", choices=["board", "sizeless"], default=[None],
                   help="the network heads to measure (agents/az/network.py), each with the config's sizes "
                        "(default: the config's own)")
    p.add_argument("--static-value-weights", type=float, nargs="+", metavar="W",
                   help="the leaf's static-value weights to measure (agents/az/search.py; default: each "
                        "config's own)")
    p.add_argument("--write", action="store_true", help="write the figures to benchmarks/RESULTS.md")
    p.add_argument("--ray-workers", type=int, nargs="+", metavar="N",
                   help="measure self-play on N Ray actors instead (first variant only)")
    args = p.parse_args(argv)
    if args.variants is None:
        args.variants = [] if args.configs else ["legacy_ard_ri", "historical_tablut"]
    configs = [ROOT / "configs" / "az" / f"{v}.yaml" for v in args.variants] + list(args.configs)
    if not configs:
        p.error("no variant and no config to measure")
    if args.ray_workers:
        if not args.variants:
            p.error("--ray-workers measures the first of --variants")
        rows = ray_scaling(args.variants[0], args.ray_workers, args.seconds)
        base = rows[0]["moves_per_s"]
        text = "\n".join(["| Ray self-play actors | moves/s | network evals/s | vs the first |", "|---:|---:|---:|---:|"]
                         + [f"| {r['workers']} | {r['moves_per_s']:,.1f} | {r['evals_per_s']:,.0f} | "
                            f"{r['moves_per_s'] / base:.2f}x |" for r in rows])
        print(text)
        if args.write:
            from tafl_env.bench import append_section, machine_info

            append_section(ROOT / "benchmarks" / "RESULTS.md", f"AlphaZero Ray self-play scaling ({args.variants[0]})",
                           machine_info("torch", "ray"), "python " + " ".join(["benchmarks/bench_az.py", *sys.argv[1:]]),
                           text, notes=("each actor: one CPU, its own games (the config's), torch 1 thread",
                                        "the machine is shared with other jobs: figures are lower bounds"))
        return 0
    rows = []
    for config in configs:
        for head in args.heads:
            for weight in args.static_value_weights or [None]:
                r = run(config, args.seconds, args.threads, head, weight)
                rows.append(r)
                print(r, flush=True)
    body = ["| variant | board | net (ch x blocks, head) | games | full sims | static value weight | network pos/s | "
            "search evals/s | search moves/s | self-play moves/s | self-play evals/s | recorded pos/s |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        body.append(f"| {r['variant']} | {r['board']} | {r['channels']} x {r['blocks']}, {r['head']} | {r['games']} | "
                    f"{r['simulations']} | {r['static_value_weight']:g} | {r['network_pos_per_s']:,.0f} | "
                    f"{r['search_evals_per_s']:,.0f} | "
                    f"{r['search_moves_per_s']:,.1f} | {r['selfplay_moves_per_s']:,.1f} | "
                    f"{r['selfplay_evals_per_s']:,.0f} | {r['selfplay_recorded_per_s']:,.1f} |")
    text = "\n".join(body)
    print(text)
    if args.write:
        sys.path.insert(0, str(ROOT))
        from tafl_env.bench import append_section, machine_info

        big = all(r["variant"] in ("legacy_tawlbwrdd", "legacy_berserk", "legacy_alea_evangelii") for r in rows)
        topic = "AlphaZero self-play throughput, 11x11 and 19x19 (agents/az)" if big else \
            "AlphaZero self-play throughput (agents/az)"
        append_section(ROOT / "benchmarks" / "RESULTS.md", topic,
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
