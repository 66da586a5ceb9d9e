"""Differential check of two versions of the engine (for speed work that must not change a rule).

``record`` plays random games with the engine importable from this process (64 games per rule
configuration: every variant with each of several rule options) and writes the actions and a
digest of every state after every step (board, side, king, chain, turn, key, result, repetition
count, line masks, occupancy, cached moves, the legal mask and the step's info). ``replay`` plays
the same actions with the engine of another checkout and reports the first step where a digest
differs, per configuration.

    python benchmarks/compare_engines.py record /tmp/engine_digests.json          # this tree
    git worktree add /tmp/base <revision>
    PYTHONPATH=/tmp/base python benchmarks/compare_engines.py replay /tmp/engine_digests.json
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys

import numpy as np

OPTION_SETS = [{}, {"king_armed": False}, {"throne_hostile": False}, {"edge_hostile_to_king": True},
               {"hostile_corners": False}, {"throne_passable": True}, {"encirclement": True},
               {"repetition": "draw"}, {"repetition": "ignore"}, {"king_capture": "tablut"},
               {"king_capture": "four_sided"}, {"escape": "edge"}, {"escape": "corners"},
               {"move_range": 1}, {"move_range": 2}, {"restricted_corners": False},
               {"throne_passable": False}, {"first_to_move": "defender"}, {"max_turns": None},
               {"commander_capture_on_throne": True}, {"commander_sandwich": False},
               {"jumps": True}, {"berserk": True, "jumps": True}, {"edge_hostile_to_king": False}]
GAMES = 64


def digest(engine, state, info, mask) -> str:
    from tafl_env.observation import observe

    h = hashlib.sha1()
    b = len(state)
    for arr in (state.board, state.to_move, state.king_sq, state.chain, state.turn, state.key,
                state.winner, state.reason, state.repeats, state.lines, state.occupancy, state.moves,
                mask, engine.count_legal(state), info.captured, info.jump, info.turn_ended,
                observe(engine, state, np.zeros(b, dtype=np.int8)),
                observe(engine, state, np.ones(b, dtype=np.int8))):
        arr = np.asarray(arr)
        # Fixed dtypes: the digest checks values, not the engine's choice of integer widths.
        wide = np.float32 if arr.dtype.kind == "f" else np.int64
        h.update(np.ascontiguousarray(arr, dtype=wide).tobytes())
    return h.hexdigest()


def record(path: str, steps: int) -> None:
    from tafl_env.game import engine_for
    from tafl_env.rules import VARIANTS, make_rules

    out = []
    for variant, options in itertools.product(VARIANTS, OPTION_SETS):
        engine = engine_for(make_rules(variant, **options))
        rng = np.random.default_rng(len(out))
        state = engine.initial_state(GAMES)
        actions, digests = [], []
        for _ in range(steps):
            a = np.where(state.done, 0, engine.random_actions(state, rng))  # finished: ignored
            info = engine.step(state, a)
            actions.append(a.tolist())
            digests.append(digest(engine, state, info, engine.legal_action_mask(state)))
        out.append({"variant": variant, "options": options, "actions": actions, "digests": digests,
                    "reasons": np.bincount(state.reason, minlength=7).tolist()})
    with open(path, "w") as fh:
        json.dump(out, fh)
    ended = sum(GAMES - r["reasons"][0] for r in out)
    print(f"{len(out)} configurations, {GAMES} games each, {steps} steps: {ended} games ended; "
          f"written to {path}")


def replay(path: str) -> int:
    from tafl_env.game import engine_for
    from tafl_env.rules import make_rules

    with open(path) as fh:
        recorded = json.load(fh)
    differing = 0
    for rec in recorded:
        engine = engine_for(make_rules(rec["variant"], **rec["options"]))
        state = engine.initial_state(GAMES)
        for i, (a, want) in enumerate(zip(rec["actions"], rec["digests"])):
            info = engine.step(state, np.array(a))
            if digest(engine, state, info, engine.legal_action_mask(state)) != want:
                print(f"differs: {rec['variant']} {rec['options']} at step {i}")
                differing += 1
                break
    print(f"{len(recorded)} configurations replayed, {differing} differing")
    return 1 if differing else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["record", "replay"])
    p.add_argument("path")
    p.add_argument("--steps", type=int, default=200, help="steps per configuration (record)")
    args = p.parse_args(argv)
    if args.mode == "record":
        record(args.path, args.steps)
        return 0
    return replay(args.path)


if __name__ == "__main__":
    sys.exit(main())
