"""Random play through OpenSpiel's state API (tafl_env/openspiel.py) against the AEC loop, per variant.

Every loop plays uniformly random legal moves one game at a time, restarting finished games, and
counts plies per second of the whole loop (the random choice included; the mask loops read the
legal ids with ``mask.view(bool).nonzero()``, as the adapter does). Columns:

- ``engine B=1``: the engine alone, a batch of one: the legal mask, a random legal action, the
  step (the floor under every front end);
- ``AEC``: ``raw_env``'s ``last()`` (observation planes and mask of the agent to move), the choice,
  ``step()``;
- ``OpenSpiel``: ``state.legal_actions()``, the choice, ``state.apply_action()`` (what OpenSpiel's
  search algorithms and rollouts do);
- ``+ observation_tensor()``: the same plus the observation planes as OpenSpiel's state API gives
  them (a list of floats, copied out of the game's observer by OpenSpiel's C++ side);
- ``+ make_observation``: the same plus the planes through OpenSpiel's Python observer
  (``make_observation(game).set_from(state, player)``, a numpy array): what a learner reads, as in
  the AEC loop;
- ``clone``: µs per ``state.clone()`` (MCTS clones at every simulation), mid-game.

    python benchmarks/bench_openspiel.py                       # all five variants, 3 rounds of 2 s
    python benchmarks/bench_openspiel.py --seconds 0.5 --variants legacy_ard_ri
    python benchmarks/bench_openspiel.py --write               # append a dated section to RESULTS.md

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


def _timed(step, reset, seconds: float) -> float:
    """Plies per second of ``step()`` (which returns True when the game has ended; ``reset()``,
    not timed apart, starts the next)."""
    plies, clock = 0, time.perf_counter
    start = clock()
    end = start + seconds
    reset()
    while True:
        if step():
            reset()
        plies += 1
        if not plies & 15 and clock() >= end:
            return plies / (clock() - start)


def bench_engine(variant: str, seconds: float, seed: int = 0) -> float:
    from tafl_env.game import engine_for
    from tafl_env.rules import make_rules

    rng = np.random.default_rng(seed)
    eng = engine_for(make_rules(variant))
    box = {}

    def reset():
        box["st"] = eng.initial_state(1)

    def step():
        st = box["st"]
        legal = eng.legal_action_mask(st)[0].view(np.bool_).nonzero()[0]
        eng.step(st, np.array([legal[int(rng.random() * len(legal))]]))
        return bool(st.reason[0])

    return _timed(step, reset, seconds)


def bench_aec(variant: str, seconds: float, seed: int = 0) -> float:
    from tafl_env.aec import raw_env

    rng = np.random.default_rng(seed)
    e = raw_env(variant)

    def step():
        obs, _, terminated, truncated, _ = e.last()
        legal = obs["action_mask"].view(np.bool_).nonzero()[0]
        e.step(int(legal[int(rng.random() * len(legal))]))
        return any(e.terminations.values()) or any(e.truncations.values())

    return _timed(step, e.reset, seconds)


def bench_state_api(variant: str, seconds: float, seed: int = 0, observe: str | None = None) -> float:
    """``observe``: None, ``"tensor"`` (``observation_tensor()``) or ``"python"`` (OpenSpiel's
    Python observer)."""
    from open_spiel.python.observation import make_observation

    from tafl_env.openspiel import load_game

    rng = np.random.default_rng(seed)
    game = load_game(variant)
    observer = make_observation(game)
    box = {}

    def reset():
        box["state"] = game.new_initial_state()

    def step():
        state = box["state"]
        if observe == "tensor":
            state.observation_tensor()
        elif observe == "python":
            observer.set_from(state, state.current_player())
        legal = state.legal_actions()
        state.apply_action(legal[int(rng.random() * len(legal))])
        return state.is_terminal()

    return _timed(step, reset, seconds)


def bench_clone(variant: str, seconds: float, seed: int = 0) -> float:
    """µs per ``clone()`` of a state 20 random plies into the game."""
    from tafl_env.openspiel import load_game

    rng = np.random.default_rng(seed)
    state = load_game(variant).new_initial_state()
    for _ in range(20):
        state.apply_action(int(rng.choice(state.legal_actions())))
    n, clock = 0, time.perf_counter
    start = clock()
    while clock() - start < seconds:
        for _ in range(64):
            state.clone()
        n += 64
    return (clock() - start) / n * 1e6


def table(rows: list[dict]) -> str:
    us = lambda r, name: f"{1e6 / r[name]:.1f}"
    out = ["| variant | board | engine B=1 plies/s | AEC plies/s | OpenSpiel plies/s | + observation_tensor() "
           "plies/s | + make_observation plies/s | µs/ply: engine / AEC / OpenSpiel / + make_observation | "
           "clone µs |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['variant']} | {r['board']}×{r['board']} | {r['engine']:,.0f} | {r['aec']:,.0f} | "
                   f"{r['openspiel']:,.0f} | {r['openspiel_tensor']:,.0f} | {r['openspiel_python']:,.0f} | "
                   f"{us(r, 'engine')} / {us(r, 'aec')} / {us(r, 'openspiel')} / {us(r, 'openspiel_python')} | "
                   f"{r['clone_us']:.1f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import pyspiel

    from tafl_env import VARIANTS, make_rules

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

    runs = {"engine": bench_engine, "aec": bench_aec, "openspiel": bench_state_api,
            "openspiel_tensor": lambda v, s: bench_state_api(v, s, observe="tensor"),
            "openspiel_python": lambda v, s: bench_state_api(v, s, observe="python")}
    rows = []
    for v in args.variants:
        for fn in runs.values():       # compile and warm every path first
            fn(v, 0.05)
        # The machines are shared and noisy: the columns run in turn, round after round, and each
        # keeps its best round.
        best = {name: 0.0 for name in runs}
        for _ in range(args.rounds):
            for name, fn in runs.items():
                best[name] = max(best[name], fn(v, args.seconds))
        row = {"variant": v, "board": make_rules(v).board_size, **best,
               "clone_us": bench_clone(v, min(args.seconds, 1.0))}
        rows.append(row)
        print(f"  {v:<22} engine {row['engine']:>9,.0f}  AEC {row['aec']:>8,.0f}  OpenSpiel {row['openspiel']:>8,.0f}"
              f"  +tensor {row['openspiel_tensor']:>8,.0f}  +python obs {row['openspiel_python']:>8,.0f} plies/s; "
              f"clone {row['clone_us']:.1f} µs", file=sys.stderr, flush=True)
    body = table(rows)
    print(body)
    if args.write or args.out is not None:
        out = args.out or DEFAULT_OUT
        info = machine_info("numba")
        info["open_spiel"] = getattr(pyspiel, "__version__", None) or _open_spiel_version()
        append_section(out, "OpenSpiel state API against the AEC loop (tafl_env.openspiel)", info,
                       f"python benchmarks/bench_openspiel.py {' '.join(argv)}".rstrip(), body,
                       notes=(f"timed seconds per column and round: {args.seconds:g}, best of {args.rounds} "
                              "interleaved rounds",
                              "one ply = one move of one game, uniformly random legal moves, finished games "
                              "restarted; the whole loop is timed (the random choice included)",
                              "engine B=1: mask, choice, step; AEC: raw_env last() (planes + mask), choice, "
                              "step(); OpenSpiel: legal_actions(), choice, apply_action(); + observation_tensor() "
                              "or + make_observation: and the planes of the player to move that way; clone: "
                              "state.clone() 20 plies into a game"))
        print(f"appended to {out}", file=sys.stderr)
    return 0


def _open_spiel_version() -> str:
    from importlib.metadata import version

    return version("open_spiel")


if __name__ == "__main__":
    sys.exit(main())
