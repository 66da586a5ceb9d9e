"""Paired games from openings, in chunks with their own seeds: played here, in processes or on Ray.

A rating (:mod:`.rate`), the anchors' round robin (:mod:`.anchors`) and a tournament
(:mod:`.tournament`) play the same unit of work: a :class:`Chunk`, one agent attacking another
from a block of openings, all at once in one batched engine state
(:func:`agents.evaluation.play.play_games`). Every chunk has a seed derived
from the run's seed, the two players' names, the side and the block (:func:`chunk_seed`), and
both agents are reset from it before the chunk's first move, so a chunk's games depend on nothing
played before it, or elsewhere: the same seed gives the same games whether the chunks run one
after the other here, in ``jobs`` worker processes or as Ray tasks (:class:`ChunkRunner`).

The player of a chunk is an agent spec (built once per process, reset from each chunk's seed) or
an agent object: a fresh pickled copy of it plays each chunk, here as in a worker (an object that
cannot be pickled plays itself here, reset from each chunk's seed, and cannot go to workers).
"""

from __future__ import annotations

import pickle
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tafl_env.errors import preview

from ..base import Agent, make_agent
from ..spec import AgentSpec, AgentSpecError

__all__ = ["Chunk", "ChunkResult", "ChunkRunner", "build_agent", "chunk_seed", "play_chunk", "run_chunks"]


def chunk_seed(seed: int, attacker: str, defender: str, block: int) -> int:
    """The seed of the chunk where ``attacker`` attacks ``defender`` on opening block ``block``
    (names are hashed with CRC-32, so the seed does not depend on Python's string hashing).

    >>> chunk_seed(0, "greedy", "random", 3) == chunk_seed(0, "greedy", "random", 3)
    True
    >>> chunk_seed(0, "greedy", "random", 3) != chunk_seed(0, "random", "greedy", 3)
    True
    """
    words = [int(seed), zlib.crc32(attacker.encode()), zlib.crc32(defender.encode()), int(block)]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


@dataclass(frozen=True)
class Chunk:
    """One attacker against one defender on a block of openings.

    ``attacker``/``defender`` are the players' names; ``*_agent`` what plays: a spec string or an
    :class:`~agents.base.Agent`. ``openings`` holds the block's opening ids (``None`` for a game
    from the start), ``moves`` their move lists (empty: the start); ``block`` numbers the block (it
    enters the seed); ``key`` identifies the chunk in a run's records. With ``record`` each game's
    row keeps its ``moves`` (for records and GIFs).
    """

    key: str
    attacker: str
    defender: str
    attacker_agent: Any
    defender_agent: Any
    openings: tuple[int, ...]
    moves: tuple[tuple[str, ...], ...]
    block: int
    seed: int
    record: bool = False


@dataclass
class ChunkResult:
    chunk: Chunk
    games: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    timing: dict[str, list] = field(default_factory=dict)


_CACHE: dict[tuple[str | AgentSpec, str], Agent] = {}
"""Agents built from specs in this process, by (spec, role): built once, reset per chunk."""


def build_agent(spec: str | AgentSpec, seed: int | None) -> Agent:
    """``make_agent(spec, seed=seed)``; any failure is an :class:`AgentSpecError` naming the spec."""
    try:
        return make_agent(spec, seed=seed)
    except AgentSpecError:
        raise
    except (ValueError, OSError) as exc:
        raise AgentSpecError(f"cannot build agent {preview(str(spec))}: {exc}") from exc


def _agent(source: Any, role: str, rules=None) -> Agent:
    if isinstance(source, (str, AgentSpec)):
        key = (source, role)
        if key not in _CACHE:
            agent = build_agent(source, 0)
            if rules is not None:
                _first_move(agent, rules)
            _CACHE[key] = agent
        return _CACHE[key]
    return source


def _first_move(agent: Agent, rules) -> None:
    """One untimed move from the opening position, so that compiling the agent's kernels on a
    process's first use (up to half a minute a kernel in a fresh checkout) is not counted in the time
    a move that chunks record. The chunk resets the agent from its own seed, so its games are
    unchanged."""
    from tafl_env.game import engine_for
    from tafl_env.rules import make_rules

    engine = engine_for(make_rules(rules))   # as play_games reads ``rules``: a RuleSet or a variant id
    agent.act(engine, engine.initial_state(1))


def play_chunk(rules, chunk: Chunk) -> ChunkResult:
    """Play ``chunk`` (the openings in order; both agents reset from the chunk's seed): one row per
    game with ``opening``, ``result``, ``reason`` and ``turns`` (and ``moves``, the opening's
    first, when the chunk is to ``record``)."""
    from .play import play_games

    att = _agent(chunk.attacker_agent, "attacker", rules)
    dfd = _agent(chunk.defender_agent, "defender", rules)
    timing: dict[str, list] = {}
    t0 = time.perf_counter()
    rows = play_games(rules, att, dfd, len(chunk.openings), seed=chunk.seed, timing=timing,
                      openings=[list(m) for m in chunk.moves], record=chunk.record)
    games = [{"attacker": chunk.attacker, "defender": chunk.defender, "opening": o, "result": r["result"],
              "reason": r["reason"], "turns": r["turns"], "chunk": chunk.key,
              **({"moves": r["moves"]} if chunk.record else {})}
             for o, r in zip(chunk.openings, rows)]
    return ChunkResult(chunk, games, time.perf_counter() - t0, timing)


def _play_pickled(rules, blob: bytes) -> ChunkResult:
    return play_chunk(rules, pickle.loads(blob))


def check_picklable(agent: Any, label: str) -> None:
    """Raise a one-line ``ValueError`` when ``agent`` (not a spec) cannot go to worker processes."""
    if isinstance(agent, (str, AgentSpec)):
        return
    try:
        pickle.dumps(agent)
    except Exception as exc:
        raise ValueError(f"{label} cannot be sent to worker processes or Ray ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:120]}); rate it with jobs=1 and no Ray, or "
                         "give it as an agent spec") from None


class ChunkRunner:
    """Plays chunks here (``jobs == 1``), in ``jobs`` worker processes kept for the runner's life (so
    their built agents and compiled kernels serve every round), or as Ray tasks (``ray=True``; Ray
    initialised by the caller: :func:`agents.ray_session.ray_session`). A context manager.
    """

    def __init__(self, rules, jobs: int = 1, ray: bool = False):
        self.rules, self.jobs, self.ray = rules, int(jobs), bool(ray)
        self._pool = None
        self._rules_ref = None

    def __enter__(self) -> "ChunkRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def run(self, chunks: Sequence[Chunk], on_done: Callable[[ChunkResult], Any] | None = None,
            stop: Callable[[], bool] | None = None) -> list[ChunkResult]:
        """The results of ``chunks`` in their order, whatever order they finish in; ``on_done`` is
        called as each finishes. The first error stops the run (pending chunks are cancelled) and
        is raised here.

        ``stop`` (say, a deadline) is asked before each chunk starts: once it answers true, the
        chunks not yet started are skipped, those running finish, and the result holds the played
        chunks only. Workers take the next chunk as soon as they finish one, so a long chunk does
        not hold up the others."""
        chunks = list(chunks)
        done: dict[int, ChunkResult] = {}
        halted = stop if stop is not None else (lambda: False)

        def finish(k: int, res: ChunkResult) -> None:
            done[k] = res
            if on_done:
                on_done(res)

        if self.ray:
            import ray as _ray

            task = _ray.remote(num_cpus=1)(_play_pickled)
            if self._rules_ref is None:
                self._rules_ref = _ray.put(self.rules)
            # every chunk goes to the cluster at once (its scheduler spreads them); ``stop`` is asked once
            refs = {} if halted() else {task.remote(self._rules_ref, pickle.dumps(c)): k for k, c in enumerate(chunks)}
            pending = list(refs)
            try:
                while pending:
                    ready, pending = _ray.wait(pending, num_returns=1)
                    for ref in ready:
                        finish(refs[ref], _ray.get(ref))
            except BaseException:
                for ref in pending:
                    _ray.cancel(ref, force=True)
                raise
        elif self.jobs > 1:
            from concurrent.futures import FIRST_COMPLETED, wait

            if self._pool is None:
                import multiprocessing as mp
                from concurrent.futures import ProcessPoolExecutor

                self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=mp.get_context("spawn"))
            futures: dict[Any, int] = {}
            queue = iter(enumerate(chunks))
            pending: set = set()

            def submit() -> None:
                # at most one chunk queued per worker, so that ``stop`` is asked as each one starts
                while len(pending) < self.jobs and not halted():
                    nxt = next(queue, None)
                    if nxt is None:
                        return
                    fut = self._pool.submit(_play_pickled, self.rules, pickle.dumps(nxt[1]))
                    futures[fut] = nxt[0]
                    pending.add(fut)

            try:
                submit()
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        finish(futures[fut], fut.result())
                    submit()
            except BaseException:
                for fut in pending:
                    fut.cancel()
                raise
        else:
            for k, c in enumerate(chunks):
                if halted():
                    break
                # a fresh copy of an agent object per chunk, as a worker gets (one that cannot be
                # pickled plays itself, reset from the chunk's seed)
                try:
                    blob = pickle.dumps(c)
                except Exception:
                    blob = None
                finish(k, play_chunk(self.rules, c) if blob is None else _play_pickled(self.rules, blob))
        return [done[k] for k in range(len(chunks)) if k in done]


def run_chunks(rules, chunks: Sequence[Chunk], *, jobs: int = 1, ray: bool = False,
               on_done: Callable[[ChunkResult], Any] | None = None) -> list[ChunkResult]:
    """Play ``chunks`` once with a :class:`ChunkRunner` (module docstring)."""
    with ChunkRunner(rules, jobs, ray) as runner:
        return runner.run(chunks, on_done)
