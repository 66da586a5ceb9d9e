"""Batched random self-play throughput of the engine (``tafl bench``, ``benchmarks/bench_engine.py``).

One *step* is one move of one game: a batched engine step over B running games counts B steps.
Every batched step does what an RL rollout does with the engine:

1. the full legal mask of every game is at hand (the engine keeps it, packed, in the state after each
   step; :meth:`Engine.random_actions` samples uniformly from it without unpacking; with
   ``unpack_mask=True`` the int8 ``(B, num_actions)`` mask that an env returns is built as well),
2. one uniformly random legal action per game,
3. :meth:`Engine.step`, in place,
4. finished games (won, drawn or truncated by the variant's move cap) restarted in place from the
   variant's start.

Timing and memory are measured in two separate runs, so that tracing allocations does not slow the
timed run: the peak is taken under :mod:`tracemalloc` (numpy reports its array allocations to it)
over a few steps of a fresh batch, and counts the batch's state plus the temporaries of a step.

    >>> r = bench_engine("legacy_ard_ri", 8, 0.05)
    >>> sorted(r)
    ['batch', 'games_finished', 'peak_mem_mb', 'seconds', 'steps', 'steps_per_cpu_s', 'steps_per_s', 'threads', 'variant']
    >>> r["steps"] % 8, r["steps_per_s"] > 0, r["peak_mem_mb"] > 0
    (0, True, True)
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from .engine import Engine, State
from .rules import make_rules

MEMORY_STEPS = 4
"""Batched steps of the traced run that measures peak memory."""

MB = 2 ** 20
"""``peak_mem_mb`` is in MiB (2**20 bytes)."""


def _engine(variant: str, options: dict, threads: int = 1) -> Engine:
    return Engine(make_rules(variant, **options), threads=threads)


def _run(eng: Engine, state: State, fresh: State, rng: np.random.Generator, steps: int | None,
         seconds: float | None, unpack_mask: bool) -> tuple[int, int, float, float]:
    """Batched random self-play for ``steps`` batched steps or ``seconds``;
    (steps, finished, wall seconds, CPU seconds of this process)."""
    b = len(state)
    zeros_cache: dict[int, np.ndarray] = {}
    done_steps = finished = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    deadline = t0 + seconds if seconds is not None else None
    while True:
        if unpack_mask:
            eng.legal_action_mask(state)
        actions = eng.random_actions(state, rng)
        eng.step(state, actions)
        done_steps += 1
        done = np.flatnonzero(state.done)
        if len(done):
            k = len(done)
            idx = zeros_cache.get(k)
            if idx is None:
                idx = zeros_cache[k] = np.zeros(k, dtype=np.intp)
            state.put(done, fresh.take(idx))
            finished += k
        if steps is not None and done_steps >= steps:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            break
    return done_steps * b, finished, time.perf_counter() - t0, time.process_time() - c0


def peak_memory_mb(variant: str, batch: int, seed: int = 0, steps: int = MEMORY_STEPS,
                   unpack_mask: bool = False, **options) -> float:
    """Peak traced memory (MiB) of a batch of ``batch`` games over ``steps`` batched steps."""
    eng = _engine(variant, options)
    rng = np.random.default_rng(seed)
    warm = eng.initial_state(1)  # lazily built tables and caches are not part of the batch's cost
    _run(eng, warm, eng.initial_state(1), rng, 2, None, unpack_mask)
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        state = eng.initial_state(batch)
        fresh = eng.initial_state(1)
        _run(eng, state, fresh, rng, steps, None, unpack_mask)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return (peak - base) / MB


def bench_engine(variant: str, batch: int, seconds: float, seed: int = 0, *,
                 unpack_mask: bool = False, threads: int = 1, **options) -> dict:
    """Random self-play throughput of ``batch`` games of ``variant`` for about ``seconds``, the
    batched kernels using ``threads`` threads (batches of 2048 games or more).

    Returns ``{"variant", "batch", "threads", "steps_per_s", "peak_mem_mb", "steps", "seconds",
    "games_finished"}``; ``options`` are rule options (``make_rules``). At least one batched step
    is timed, however small ``seconds`` is.
    """
    if not isinstance(batch, (int, np.integer)) or isinstance(batch, bool) or batch < 1:
        raise ValueError(f"batch must be a positive int, got {batch!r}")
    if not seconds >= 0:
        raise ValueError(f"seconds must be >= 0, got {seconds!r}")
    batch = int(batch)
    eng = _engine(variant, options, threads)
    rng = np.random.default_rng(seed)
    state = eng.initial_state(batch)
    fresh = eng.initial_state(1)
    _run(eng, state, fresh, rng, 2, None, unpack_mask)  # warm-up: first-call costs are not timed
    steps, finished, elapsed, cpu = _run(eng, state, fresh, rng, None, float(seconds), unpack_mask)
    peak = peak_memory_mb(variant, batch, seed, unpack_mask=unpack_mask, **options)
    return {
        "variant": variant,
        "batch": batch,
        "threads": eng.threads,
        "steps_per_s": steps / elapsed if elapsed > 0 else float("inf"),
        # CPU time of this process only: stays meaningful when other jobs share the cores.
        "steps_per_cpu_s": steps / cpu if cpu > 0 else float("inf"),
        "peak_mem_mb": peak,
        "steps": steps,
        "seconds": elapsed,
        "games_finished": finished,
    }


def format_table(results: list[dict]) -> str:
    """A markdown table of :func:`bench_engine` results."""
    lines = ["| variant | batch | threads | steps/s (wall) | steps per CPU-s | peak MiB |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['variant']} | {r['batch']} | {r.get('threads', 1)} | {r['steps_per_s']:,.0f} | "
                     f"{r.get('steps_per_cpu_s', float('nan')):,.0f} | {r['peak_mem_mb']:.2f} |")
    return "\n".join(lines)


# --- writing results down (shared by the scripts in benchmarks/) -------------------------------------

RESULTS_TITLE = ("# Benchmark results\n\nThe current figures: the latest run of each benchmark, one `##` "
                 "section per benchmark (earlier runs are in git's history of this file).\n")


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine_info(*packages: str) -> dict[str, str]:
    """Date, platform, CPU, cores, Python and numpy versions, plus those of ``packages``."""
    import datetime
    import importlib
    import os
    import platform

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    info = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": f"{os.cpu_count()} logical ({usable} usable by this process)",
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for name in packages:
        info[name] = getattr(importlib.import_module(name), "__version__", "?")
    return info


def append_section(path, heading: str, info: dict[str, str], command: str, body: str,
                   notes: tuple[str, ...] = (), topic: str | None = None) -> None:
    """Write a dated run down in ``path`` (``RESULTS.md``, the current figures): it replaces the
    section ``## <topic>`` (``topic`` defaults to ``heading``), or becomes a new section at the end
    (earlier runs are in git's history of the file).

    A ``topic`` keeps one section for a benchmark whose runs carry headings of their own (each run
    of ``bench_compiled.py`` names the tree it compares against).

        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> for n in (1, 2):
        ...     append_section(d / "RESULTS.md", f"Run {n}", {"date": f"day {n}"}, "cmd", "| x |", topic="T")
        >>> print((d / "RESULTS.md").read_text().split("## ", 1)[1])
        T
        <BLANKLINE>
        - run: Run 2
        - date: day 2
        - command: `cmd`
        <BLANKLINE>
        | x |
        <BLANKLINE>
        >>> (d / "HISTORY.md").exists()
        False
    """
    from pathlib import Path

    path = Path(path)
    topic = topic or heading
    details = [f"- {key}: {value}" for key, value in info.items() if key != "date"]
    details += [f"- command: `{command}`"] + [f"- {note}" for note in notes]
    run = [f"- run: {heading}"] if heading != topic else []
    current = "\n".join([f"## {topic}", "", *run, f"- date: {info['date']}", *details, "", body, ""])
    text = path.read_text(encoding="utf-8") if path.exists() else RESULTS_TITLE
    head, *sections = ("\n" + text).split("\n## ")
    sections = ["## " + s.strip("\n") + "\n" for s in sections]
    found = [i for i, s in enumerate(sections) if s.split("\n", 1)[0] == f"## {topic}"]
    if found:
        sections[found[0]] = current
    else:
        sections.append(current)
    path.write_text(head.strip("\n") + "\n\n" + "\n".join(sections), encoding="utf-8")

