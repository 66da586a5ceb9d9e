"""Agent throughput per variant: random-vs-random and greedy-vs-greedy games per second at full batch
(B games in one batch, both sides played by the agent, finished games restarted in place), and MCTS
simulations per second (one ``act`` call on a batch of games from the start position), for the
default MCTS (``mcts:N``: greedy priors and leaf values, a greedy scoring of every expanded node),
for plain UCT with random rollouts (``mcts:N:random:uniform``), for greedy priors with random
rollouts (``mcts:N:random``) and for the network evaluator (``mcts:N:policy:PATH`` with the
variant's shipped model ``results/training/VARIANT/model.zip``, where there is one; torch on
``--net-threads`` threads).

    python benchmarks/bench_agents.py                         # all variants, B=256, ~3 s per cell
    python benchmarks/bench_agents.py --variants legacy_ard_ri --batch 64 --seconds 1
    python benchmarks/bench_agents.py --write                 # append a dated section to RESULTS.md
    python benchmarks/bench_agents.py --batch 64 --greedy-seconds 30   # longer windows for greedy

Games per second counts games that ended within the timed window (a game restarted in place starts
again from the variant's start); moves per second counts one action of one game.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from tafl_env import VARIANTS, make_rules
from tafl_env.bench import append_section, machine_info
from tafl_env.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agents import make_agent  # noqa: E402
from agents.mcts.evaluators import NetworkEvaluator, RolloutEvaluator  # noqa: E402
from agents.mcts.agent import MCTSAgent  # noqa: E402

HERE = Path(__file__).resolve().parent
MODELS = HERE.parent / "agents" / "pretrained"   # the shipped policies, <variant>.zip
DEFAULT_OUT = HERE / "RESULTS.md"


def selfplay(variant: str, spec: str, batch: int, seconds: float, seed: int = 0) -> dict:
    eng = Engine(make_rules(variant))
    agent = make_agent(spec, seed=seed)
    st = eng.initial_state(batch)
    fresh = eng.initial_state(batch)
    games = moves = 0
    start = time.perf_counter()
    worst = 0.0
    while True:
        t0 = time.perf_counter()
        a = agent.act(eng, st)
        eng.step(st, a)
        worst = max(worst, time.perf_counter() - t0)
        moves += int((a >= 0).sum())
        done = np.flatnonzero(st.done)
        if len(done):
            games += len(done)
            st.put(done, fresh.take(done))
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    # no game finished in the window: report nan (moves/s still says how fast the agent is)
    return {"games_per_s": games / elapsed if games else float("nan"),
            "moves_per_s": moves / elapsed, "worst_step_s": worst}


def mcts_rate(variant: str, batch: int, simulations: int, seed: int = 0, midgame: int = 0,
              evaluator=None) -> dict:
    """Simulations per second of one act() (after a warm-up act on another position);
    ``midgame``: start from the position after that many random actions; ``evaluator``: the
    search's evaluator (default: greedy)."""
    eng = Engine(make_rules(variant))
    agent = MCTSAgent(simulations=simulations, seed=seed, reuse=False, evaluator=evaluator)
    st = eng.initial_state(batch)
    rng = np.random.default_rng(seed)
    for _ in range(midgame):
        live = ~st.done
        if not live.any():
            break
        eng.step(st, np.where(live, eng.random_actions(st, rng), -1))
    agent.act(eng, eng.initial_state(1))
    t0 = time.perf_counter()
    agent.act(eng, st)
    dt = time.perf_counter() - t0
    return {"sims_per_s": batch * simulations / dt}


def single_game(variant: str, spec: str, seconds: float, seed: int = 0) -> dict:
    """One game at a time (batch of one), the agent playing both sides: its moves per second."""
    eng = Engine(make_rules(variant))
    agent = make_agent(spec, seed=seed)
    st = eng.initial_state(1)
    agent.act(eng, st)
    moves = 0
    t_agent = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        a = agent.act(eng, st)
        t_agent += time.perf_counter() - t0
        eng.step(st, a)
        moves += 1
        if st.done[0]:
            st = eng.initial_state(1)
    return {"moves_per_s": moves / (time.perf_counter() - start), "agent_moves_per_s": moves / t_agent}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="VARIANT")
    p.add_argument("--batch", type=int, default=256, help="games per batch for self-play (default 256)")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per self-play cell")
    p.add_argument("--greedy-batch", type=int, default=None,
                   help="games per batch for greedy self-play (default: --batch)")
    p.add_argument("--greedy-seconds", type=float, default=None,
                   help="timed seconds per greedy cell (default: --seconds); greedy games are long")
    p.add_argument("--mcts-batch", type=int, default=8, help="games per MCTS call (default 8)")
    p.add_argument("--simulations", type=int, default=64, help="MCTS simulations per game (default 64)")
    p.add_argument("--net-threads", type=int, default=1,
                   help="torch threads of the network evaluator (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--write", action="store_true", help=f"append a dated section to {DEFAULT_OUT.name}")
    p.add_argument("--out", type=Path, default=None, help="append to this file instead (implies --write)")
    args = p.parse_args(argv)

    info = machine_info()
    print(", ".join(f"{k}: {v}" for k, v in info.items()), file=sys.stderr, flush=True)
    rows = []
    single = ["| variant | greedy moves/s, one game | MCTS sims/s, one game, mid-game |", "|---|---:|---:|"]
    for v in args.variants:
        r = selfplay(v, "random", args.batch, args.seconds, args.seed)
        g = selfplay(v, "greedy", args.greedy_batch or args.batch, args.greedy_seconds or args.seconds,
                     args.seed)
        m = mcts_rate(v, args.mcts_batch, args.simulations, args.seed)
        u = mcts_rate(v, args.mcts_batch, args.simulations, args.seed,
                      evaluator=RolloutEvaluator("random", "uniform"))
        rg = mcts_rate(v, args.mcts_batch, args.simulations, args.seed,
                       evaluator=RolloutEvaluator("random", "greedy"))
        model = MODELS / f"{v}.zip"
        nt = (mcts_rate(v, args.mcts_batch, args.simulations, args.seed,
                        evaluator=NetworkEvaluator(model, threads=args.net_threads))
              if model.is_file() else {"sims_per_s": float("nan")})
        sg = single_game(v, "greedy", args.seconds, args.seed)
        sm = mcts_rate(v, 1, 10 * args.simulations, args.seed, midgame=60)
        rows.append((v, r, g, m, u, rg, nt))
        single.append(f"| {v} | {sg['moves_per_s']:,.0f} | {sm['sims_per_s']:,.0f} |")
        print(f"  {v}: random {r['games_per_s']:.1f} games/s, greedy {g['games_per_s']:.2f} games/s "
              f"({g['worst_step_s']:.2f} s worst step), mcts {m['sims_per_s']:.0f} sims/s, "
              f"uct {u['sims_per_s']:.0f} sims/s, random rollouts {rg['sims_per_s']:.0f} sims/s, "
              f"network {nt['sims_per_s']:.0f} sims/s", file=sys.stderr, flush=True)
    head = ("| variant | random games/s | random moves/s | greedy games/s | greedy moves/s "
            "| greedy worst step (s) | MCTS sims/s (greedy priors) | UCT sims/s (random rollouts) "
            "| MCTS sims/s (greedy priors, random rollouts) | MCTS sims/s (network) |")
    lines = [head, "|---|" + "---:|" * 9]
    for v, r, g, m, u, rg, nt in rows:
        lines.append(f"| {v} | {r['games_per_s']:,.1f} | {r['moves_per_s']:,.0f} | {g['games_per_s']:,.2f} "
                     f"| {g['moves_per_s']:,.0f} | {g['worst_step_s']:.2f} | {m['sims_per_s']:,.0f} "
                     f"| {u['sims_per_s']:,.0f} | {rg['sims_per_s']:,.0f} | {nt['sims_per_s']:,.0f} |")
    table = "\n".join(lines) + "\n\n" + "\n".join(single)
    print(table)
    if args.write or args.out is not None:
        command = "python benchmarks/bench_agents.py " + " ".join(argv if argv is not None else sys.argv[1:])
        notes = (f"self-play: B={args.batch} games in one batch (greedy: B={args.greedy_batch or args.batch}), "
                 f"both sides the same agent, finished games restarted, {args.seconds:g} s per random cell, "
                 f"{args.greedy_seconds or args.seconds:g} s per greedy cell; games/s counts games that "
                 "ended in the window (nan: none did), moves/s one action of one game",
                 *((f"run at nice {os.nice(0)} while other jobs used the cores: wall-clock rates are "
                    "lower bounds",) if os.nice(0) > 0 else ()),
                 f"MCTS: one act() on {args.mcts_batch} start positions, {args.simulations} simulations "
                 "each, trees not reused; `mcts:N` (greedy priors and leaf values, no rollout), "
                 "`mcts:N:random:uniform` (UCT, random rollouts of at most 40 actions), `mcts:N:random` "
                 "(greedy priors, random rollouts) and `mcts:N:policy:PATH` (the variant's shipped "
                 f"model, 8 leaves per tree per forward pass, torch on {args.net_threads} thread(s); "
                 "nan: no model)")
        append_section(args.out or DEFAULT_OUT, "Agents: self-play and MCTS throughput", info,
                       command.strip(), table, notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
