"""AEC environment throughput: random self-play through PettingZoo's public API, per variant.

Each step is what a learner's loop does: ``last()`` (the observation planes and the action mask of
the agent to move), a uniformly random legal action from the mask, ``step(action)``; finished games
are stepped out (``step(None)`` for each agent, not counted) and reset. Columns:

- ``env()``: the wrapped environment (TerminateIllegal, AssertOutOfBounds, OrderEnforcing wrappers),
  time inside ``last()`` and ``step()`` only; ``env() loop``: the whole loop, the choice included;
- ``raw_env``: the bare :class:`tafl_env.aec.TaflEnv`, time inside ``last()`` and ``step()``;
- ``engine B=1``: the same work done directly on the engine with a batch of one (mask, observation
  planes, step), the floor that the environment's bookkeeping adds to.

    python benchmarks/bench_env.py                                  # all five variants, 3 rounds of 2 s
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
    """Random self-play through ``last()``/``step()`` for ``seconds``.

    ``steps_per_s`` counts the time spent inside ``last()`` and ``step()`` only (the API's own
    cost, as bench_vector.py times only ``step``); ``loop_steps_per_s`` the whole loop, with the
    random agent's choice (``np.flatnonzero`` of the mask and a uniform draw, a few µs) included.
    Stepping out finished games and ``reset`` are not counted as steps, and their time is left out
    of ``steps_per_s``.
    """
    rng = np.random.default_rng(seed)
    e = make()
    e.reset(seed=seed)
    steps = episodes = 0
    api = 0.0
    clock = time.perf_counter
    start = clock()
    end = start + seconds
    while True:
        t0 = clock()
        obs, _, terminated, truncated, _ = e.last()
        t1 = clock()
        if terminated or truncated:
            e.step(None)
            if not e.agents:
                episodes += 1
                e.reset()
            continue
        legal = np.flatnonzero(obs["action_mask"])
        action = int(legal[int(rng.random() * len(legal))])   # Generator.integers costs ~4 µs more
        t2 = clock()
        e.step(action)
        t3 = clock()
        api += (t1 - t0) + (t3 - t2)
        steps += 1
        if not steps & 15 and t3 >= end:
            break
    elapsed = clock() - start
    e.close()
    return {"steps_per_s": steps / api, "loop_steps_per_s": steps / elapsed, "steps": steps,
            "episodes": episodes}


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


def bench_wrappers(seconds: float) -> dict:
    """The three wrappers that ``env()`` adds (TerminateIllegal, AssertOutOfBounds,
    OrderEnforcing), as ``env()`` builds them (``tafl_env.wrappers``) and as PettingZoo's own
    classes, timed on a game-free AEC env whose ``observe``/``step`` do nothing: µs per
    ``last()`` + ``step()`` with and without them. The difference is the wrappers' own cost, the
    same for every game."""
    from gymnasium import spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers

    from tafl_env.wrappers import wrap

    class NullEnv(AECEnv):
        metadata = {"name": "null_v0", "render_modes": [], "is_parallelizable": False}

        def __init__(self):
            super().__init__()
            self.possible_agents = ["a", "b"]
            obs = spaces.Dict({"observation": spaces.Box(0, 1, (1,)), "action_mask": spaces.Box(0, 1, (2,), dtype=np.int8)})
            self.observation_spaces = {a: obs for a in self.possible_agents}
            self.action_spaces = {a: spaces.Discrete(2) for a in self.possible_agents}
            self._obs = {"observation": np.zeros(1, dtype=np.float32), "action_mask": np.ones(2, dtype=np.int8)}

        def observation_space(self, agent):
            return self.observation_spaces[agent]

        def action_space(self, agent):
            return self.action_spaces[agent]

        def reset(self, seed=None, options=None):
            self.agents = self.possible_agents[:]
            self.rewards = {a: 0.0 for a in self.agents}
            self._cumulative_rewards = {a: 0.0 for a in self.agents}
            self.terminations = {a: False for a in self.agents}
            self.truncations = {a: False for a in self.agents}
            self.infos = {a: {} for a in self.agents}
            self.agent_selection = "a"

        def observe(self, agent):
            return self._obs

        def step(self, action):
            self._cumulative_rewards[self.agent_selection] = 0.0
            self.agent_selection = "b" if self.agent_selection == "a" else "a"

        def _as_action(self, action, agent):   # what tafl_env's TerminateIllegal asks the env
            return action

    def rate(e) -> float:
        e.reset()
        steps, clock = 0, time.perf_counter
        start = clock()
        end = start + seconds
        while True:
            e.last()
            e.step(1)
            steps += 1
            if not steps & 15 and clock() >= end:
                break
        return (clock() - start) / steps * 1e6

    bare = rate(NullEnv())
    ours = rate(wrap(NullEnv(), illegal_reward=-1))
    pettingzoo = rate(wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(
        wrappers.TerminateIllegalWrapper(NullEnv(), illegal_reward=-1))))
    return {"bare_us": bare, "wrapped_us": ours, "wrappers_us": ours - bare,
            "pettingzoo_us": pettingzoo - bare}


def table(rows: list[dict]) -> str:
    out = ["| variant | board | env() steps/s | raw_env steps/s | env() loop steps/s (with the choice) | engine B=1 steps/s | episodes (env()) |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['variant']} | {r['board']}×{r['board']} | {r['env']:,.0f} | {r['raw']:,.0f} | "
                   f"{r['env_loop']:,.0f} | {r['engine']:,.0f} | {r['episodes']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from tafl_env import VARIANTS, make_rules
    from tafl_env.aec import env, raw_env

    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per variant and column (default 2)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="VARIANT",
                   help="default: all five variants")
    p.add_argument("--rounds", type=int, default=3,
                   help="interleaved rounds per variant; each column reports its best round (default 3)")
    p.add_argument("--write", action="store_true", help=f"append a dated section to {DEFAULT_OUT}")
    p.add_argument("--out", type=Path, default=None, help="append the section to this file instead")
    args = p.parse_args(argv)

    rows = []
    for v in args.variants:
        # The machines are shared and noisy (±10% between runs of a few seconds): the columns
        # run in turn, round after round, and each keeps its best round.
        wrapped, bare, floor = [], [], []
        for _ in range(args.rounds):
            wrapped.append(bench_aec(lambda: env(v), args.seconds))
            bare.append(bench_aec(lambda: raw_env(v), args.seconds))
            floor.append(bench_engine_single(v, args.seconds))
        wrapped = max(wrapped, key=lambda r: r["steps_per_s"])
        bare = max(bare, key=lambda r: r["steps_per_s"])
        floor = max(floor, key=lambda r: r["steps_per_s"])
        rows.append({"variant": v, "board": make_rules(v).board_size, "env": wrapped["steps_per_s"],
                     "raw": bare["steps_per_s"], "env_loop": wrapped["loop_steps_per_s"],
                     "engine": floor["steps_per_s"],
                     "episodes": wrapped["episodes"]})
        print(f"{v}: env() {wrapped['steps_per_s']:,.0f}/s, raw_env {bare['steps_per_s']:,.0f}/s, "
              f"engine B=1 {floor['steps_per_s']:,.0f}/s", file=sys.stderr)
    text = table(rows)
    null = bench_wrappers(args.seconds)
    wrapper_note = (f"env()'s three wrappers on a game-free AEC env (bench_wrappers): "
                    f"{null['wrapped_us']:.1f} µs per last()+step() wrapped, {null['bare_us']:.1f} µs bare, "
                    f"so the wrappers themselves cost {null['wrappers_us']:.1f} µs per step, in every game "
                    f"(PettingZoo's own classes: {null['pettingzoo_us']:.1f} µs)")
    print(text)
    print(wrapper_note)

    out = args.out or (DEFAULT_OUT if args.write else None)
    if out is not None:
        append_section(out, "AEC environment (bench_env.py)", machine_info("pettingzoo"),
                       f"python benchmarks/bench_env.py {' '.join(argv)}".rstrip(), text,
                       notes=(f"timed seconds per cell and round: {args.seconds:g}; best of "
                              f"{args.rounds} interleaved rounds per column", wrapper_note,
                              "steps through the public API: last() (observation and mask), then step() "
                              "with a random legal action; env() and raw_env steps/s count the time inside "
                              "last() and step() only, the loop column the whole loop with the random "
                              "choice; engine B=1 = the bare engine's single-game random self-play "
                              "(mask, observation, random action, step) on the same machine"))
        print(f"appended to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
