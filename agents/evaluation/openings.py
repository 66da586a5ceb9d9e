"""Opening suites: distinct starting positions a few moves in, shipped per variant as data.

A benchmark that starts every game from the variant's start lets agents that choose
deterministically replay the same game again and again; "100 games" may then be a handful of
independent samples. A rating (:mod:`agents.evaluation.rate`) and the anchors' round robin
(:mod:`agents.evaluation.anchors`) therefore play from a suite of openings, each twice against
an opponent: once with each agent on each side.

**The procedure** (:func:`generate_openings`, seeded, so the same arguments give the same suite):

1. From the variant's start, play ``plies`` uniformly random legal actions in a batch of
   candidate games (the engine's own sampler, a generator seeded with ``seed``).
2. Keep a candidate only if no game has ended, no berserk chain is pending, no piece has been
   captured (both sides keep their material) and its position (with the side to move) is not one
   already kept: the suite's positions are distinct.
3. Evaluate each survivor with a short search: the compiled MCTS (:class:`agents.mcts.MCTSAgent`,
   greedy evaluator) runs ``simulations`` simulations from it; the root's mean backed-up value
   (the side to move's view, in [−1, 1]) must lie within ±``max_value``, and the root must not be
   proven won or lost: the position stays playable for both sides.
4. Repeat with fresh candidates until ``count`` openings are kept.

**The file** (``agents/evaluation/data/openings/<variant>.json``, :func:`load_openings`) records
the procedure's arguments and, per opening, its moves in the notation of RULES.md §1 (from the
start), the position string, the side to move and the search value. Regenerate one with::

    python -m agents.evaluation.openings VARIANT [--count 64] [--plies 4] [--seed 26] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tafl_env.game import engine_for
from tafl_env.notation import format_position
from tafl_env.rules import SIDES, VARIANTS, make_rules

__all__ = ["DATA_DIR", "DEFAULTS", "generate_openings", "load_openings", "check_openings", "openings_path",
           "write_json_atomic"]

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Shipped benchmark data: ``openings/<variant>.json`` and ``anchors/<variant>.json``."""

DEFAULTS = {"count": 64, "plies": 4, "seed": 26, "simulations": 200, "max_value": 0.5}
"""The arguments the shipped suites were generated with (the suite files record theirs)."""


def openings_path(variant: str) -> Path:
    """Where the shipped suite of ``variant`` lives."""
    return DATA_DIR / "openings" / f"{variant}.json"


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` through a temporary file and a rename: a reader (or a
    crash) never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _root_value(agent, engine, state) -> tuple[float, bool]:
    """Search one position with ``agent`` (an MCTSAgent): the root's mean backed-up value from the
    side to move, and whether the root is proven (won or lost)."""
    from ..mcts import kernels as _m

    agent.reset()
    agent.act(engine, state)
    tree = agent.trees()[0]
    root = int(tree.hdr[_m.H_ROOT])
    first, count = int(tree.nodes.first[root]), int(tree.nodes.count[root])
    proven = int(tree.nodes.proven[root])
    e_n, e_w = tree.edges.visits[first:first + count], tree.edges.value_sum[first:first + count]
    visits = float(e_n.sum())
    return (float(e_w.sum()) / visits if visits else 0.0), proven != 0


def generate_openings(variant: str, count: int = DEFAULTS["count"], plies: int = DEFAULTS["plies"],
                      seed: int = DEFAULTS["seed"], simulations: int = DEFAULTS["simulations"],
                      max_value: float = DEFAULTS["max_value"],
                      progress: bool = False) -> dict[str, Any]:
    """A suite of ``count`` distinct, playable openings of ``plies`` actions (module docstring).

    >>> suite = generate_openings("legacy_ard_ri", count=3, plies=2, simulations=20)
    >>> len(suite["openings"]), [len(o["moves"]) for o in suite["openings"]]
    (3, [2, 2, 2])
    >>> suite == generate_openings("legacy_ard_ri", count=3, plies=2, simulations=20)   # seeded
    True
    """
    from ..mcts import MCTSAgent
    from .play import move_texts

    if count < 1 or plies < 1 or simulations < 1:
        raise ValueError(f"count, plies and simulations must be >= 1, got {count}, {plies}, {simulations}")
    rules = make_rules(variant)
    engine = engine_for(rules)
    rng = np.random.default_rng(seed)
    searcher = MCTSAgent(simulations, seed=seed, reuse=False)
    start = engine.initial_state(1)
    pieces = int((start.board[0, :engine.s] != 0).sum())
    kept: list[dict[str, Any]] = []
    seen: set[int] = set()
    tried = rejected_search = 0
    batch = max(4 * count, 64)
    for _round in range(100):
        state = engine.initial_state(batch)
        moves: list[list[str]] = [[] for _ in range(batch)]
        for _ in range(plies):
            live = np.flatnonzero(~state.done)
            actions = np.full(batch, -1, dtype=np.int64)
            actions[live] = engine.random_actions(state.take(live), rng)
            info = engine.step(state, actions)
            for g, text in zip(live, move_texts(engine, actions, info, live)):
                moves[g].append(text)
        for g in range(batch):
            tried += 1
            board = state.board[g, :engine.s]
            key = int(state.key[g])
            if (state.done[g] or state.chain[g] >= 0 or int((board != 0).sum()) != pieces or key in seen):
                continue
            seen.add(key)
            value, proven = _root_value(searcher, engine, state.take([g]))
            if proven or abs(value) > max_value:
                rejected_search += 1
                continue
            kept.append({"id": len(kept), "moves": moves[g], "position": format_position(board, engine.n),
                         "to_move": SIDES[int(state.to_move[g])], "value": round(value, 4)})
            if progress:
                print(f"\r{variant}: {len(kept)}/{count} openings", end="", file=sys.stderr, flush=True)
            if len(kept) == count:
                break
        if len(kept) == count:
            break
    if progress:
        print(file=sys.stderr)
    if len(kept) < count:
        raise ValueError(f"{variant}: only {len(kept)} of {count} openings of {plies} plies pass the filter")
    return {"variant": variant, "procedure": "agents.evaluation.openings.generate_openings",
            "arguments": {"count": count, "plies": plies, "seed": seed, "simulations": simulations,
                          "max_value": max_value},
            "filter": "no game over, no chain pending, no capture, distinct position; "
                      f"mcts:{simulations} root value within +-{max_value}, root not proven",
            "candidates_tried": tried, "rejected_by_search": rejected_search, "openings": kept}


def load_openings(variant: str, path: str | os.PathLike | None = None) -> list[list[str]]:
    """The move lists of ``variant``'s shipped suite (or of the suite file ``path``), in order.

    >>> suite = load_openings("legacy_ard_ri")
    >>> len(suite) >= 32 and len({tuple(m) for m in suite}) == len(suite)
    True
    """
    file = Path(path) if path is not None else openings_path(variant)
    if not file.is_file():
        raise FileNotFoundError(f"no opening suite for {variant} ({file}); generate one with: "
                                f"python -m agents.evaluation.openings {variant} --write")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"cannot read the opening suite {file}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("openings"), list):
        raise ValueError(f"{file}: an opening suite is a JSON object with a list 'openings' "
                         f"(as python -m agents.evaluation.openings writes)")
    if data.get("variant") != variant:
        raise ValueError(f"{file} is the opening suite of {data.get('variant')!r}, not {variant!r}")
    rows = data["openings"]
    bad = next((k for k, o in enumerate(rows) if not isinstance(o, dict) or "moves" not in o), None)
    if bad is not None:
        raise ValueError(f"{file}: opening {bad} is not an object with 'moves'")
    return check_openings(variant, [o["moves"] for o in rows], str(file))


def check_openings(variant: str, suite: object, where: str = "openings") -> list[list[str]]:
    """``suite`` as a list of move lists if every opening is a list of moves in notation that are
    legal from the start and leave the game running; else a ``ValueError`` of one line naming
    ``where``, the opening and the move.

    >>> check_openings("legacy_ard_ri", [["d2-c2"]], "mine")
    Traceback (most recent call last):
    ...
    ValueError: mine: opening 0, move 'd2-c2': ...
    """
    from tafl_env.game import Game

    if isinstance(suite, (str, bytes)) or not isinstance(suite, (list, tuple)) or not suite:
        raise ValueError(f"{where}: openings must be a non-empty list of move lists, got {str(suite)[:60]}")
    out = []
    for k, moves in enumerate(suite):
        if isinstance(moves, (str, bytes)) or not isinstance(moves, (list, tuple)) \
                or not all(isinstance(m, str) for m in moves):
            raise ValueError(f"{where}: opening {k} must be a list of moves in notation, got {str(moves)[:60]}")
        game = Game(variant)
        for move in moves:
            try:
                game.push(move)
            except ValueError as exc:
                raise ValueError(f"{where}: opening {k}, move {move[:20]!r}: {exc}") from None
        if game.is_over():
            raise ValueError(f"{where}: opening {k} ends the game")
        out.append(list(moves))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m agents.evaluation.openings",
                                description="Generate a variant's opening suite (module docstring of "
                                            "agents/evaluation/openings.py): print it, or --write it "
                                            "to agents/evaluation/data/openings/VARIANT.json.")
    p.add_argument("variants", nargs="+", choices=VARIANTS, metavar="VARIANT")
    for name, value in DEFAULTS.items():
        p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value,
                       help=f"default {value}")
    p.add_argument("--write", action="store_true", help="write the shipped suite file (atomically)")
    args = p.parse_args(argv)
    for variant in args.variants:
        suite = generate_openings(variant, args.count, args.plies, args.seed, args.simulations,
                                  args.max_value, progress=True)
        if args.write:
            write_json_atomic(openings_path(variant), suite)
            print(f"wrote {openings_path(variant)}: {len(suite['openings'])} openings "
                  f"({suite['candidates_tried']} candidates tried)")
        else:
            print(json.dumps(suite, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
