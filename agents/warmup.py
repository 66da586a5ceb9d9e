"""Compile every kernel once (``tafl warmup``), e.g. right after installing.

numba compiles a kernel the first time it is called on a machine and caches it on disk; this
calls each of them once, on small batches of a variant that takes every code path (Berserk:
chains, jumps, the commander and knight), so that a later first use (an environment's first
step, an agent's first move) starts from the cache. The kernels are the same for every variant
(they take the rules as tables), so one variant compiles them for all.

Each phase is timed and reports how many functions it built (0: they were in the cache)::

    $ tafl warmup
    engine           28.4 s   41 functions built
    greedy agent     14.2 s   12 functions built
    mcts agent       16.0 s   20 functions built
    ...

    >>> [name for name, _ in PHASES]
    ['engine', 'greedy agent', 'mcts agent', 'mcts rollouts', 'network search', 'az search']
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from tafl_env.engine import Engine
from tafl_env.rules import make_rules

VARIANT = "legacy_berserk"
"""The variant whose games compile every kernel (every piece kind and the berserk chains)."""


def compile_engine() -> None:
    """The engine's kernels: one game and a batch big enough to run on threads."""
    from tafl_env.engine._jit import PARALLEL_MIN_BATCH
    from tafl_env.observation import observe

    for threads, batch in ((1, 8), (2, PARALLEL_MIN_BATCH)):
        engine = Engine(make_rules(VARIANT), threads=threads)
        state = engine.initial_state(batch)
        rng = np.random.default_rng(0)
        engine.step(state, engine.random_actions(state, rng))
        engine.play_random(state, rng, 5)
        engine.legal_action_mask(state)
        engine.count_legal(state)
        engine.check_legal(state, np.zeros(batch, dtype=np.int64))
        observe(engine, state, state.to_move)
    engine.perft(engine.initial_state(1), 2)
    engine.audit(state)
    state.grow_history(1000)
    engine.play_random(engine.initial_state(1), rng)   # the one-game rollout path


def _one_move(spec: str) -> Callable[[], None]:
    def run() -> None:
        from agents.base import make_agent

        engine = Engine(make_rules(VARIANT))
        for games in (1, 4):
            make_agent(spec, seed=0).act(engine, engine.initial_state(games))
    return run


def _network_search() -> None:
    from tafl_env.extras import MissingExtraError, require

    try:
        require("train", "the network search", modules=("torch", "sb3_contrib"))
    except MissingExtraError:
        return   # nothing of it can run without torch, so nothing needs compiling
    _one_move(f"mcts:8:policy:{VARIANT}")()


def _az_search() -> None:
    """The AlphaZero search's kernels, with a small untrained network saved for the purpose."""
    import tempfile

    from tafl_env.extras import MissingExtraError, require

    try:
        require("train", "the AlphaZero search", modules=("torch",))
    except MissingExtraError:
        return
    from agents.az.checkpoint import save_model
    from agents.az.network import AZNet

    rules = make_rules(VARIANT)
    with tempfile.TemporaryDirectory() as folder:
        path = save_model(f"{folder}/warmup.pt", AZNet(rules.board_size, channels=4, blocks=0), rules)
        _one_move(f"az:{path}:8")()


PHASES: list[tuple[str, Callable[[], None]]] = [
    ("engine", compile_engine),
    ("greedy agent", _one_move("greedy")),
    ("mcts agent", _one_move("mcts:16")),
    ("mcts rollouts", _one_move("mcts:16:random:uniform")),
    ("network search", _network_search),
    ("az search", _az_search),
]
"""What ``tafl warmup`` compiles, in order (a later phase reuses what an earlier one built)."""


def warmup(report: Callable[[str, float, int], None] | None = None) -> list[dict]:
    """Run every phase of :data:`PHASES`; returns ``[{"phase", "seconds", "built"}, ...]`` and
    calls ``report(phase, seconds, built)`` after each."""
    from numba.core import event

    rows = []
    for name, run in PHASES:
        with event.install_recorder("numba:compile") as recorder:
            t0 = time.perf_counter()
            run()
            seconds = time.perf_counter() - t0
        built = sum(1 for _, ev in recorder.buffer if ev.is_end)
        rows.append({"phase": name, "seconds": round(seconds, 2), "built": built})
        if report is not None:
            report(name, seconds, built)
    return rows
