"""How the engine's kernels are compiled, and how many threads the batched ones use.

Every kernel is compiled by numba once per machine and cached on disk (``cache=True``), so a warm
import costs well under a second. Kernels release the GIL (``nogil=True``): two Python threads
may step their own batches at the same time.

Batched kernels come in two builds: a plain loop for small batches and a ``prange`` loop that
spreads the games over threads. The thread count comes from the ``threads`` argument of
:class:`~tafl_env.engine.Engine`, else the ``TAFL_THREADS`` environment variable, else 1 (one
thread is the right default for RL work, which usually runs one process per core).

Numba's threading layer is chosen fork-safe (``forksafe``: TBB or the built-in workqueue, never
GNU OpenMP, which hangs in a forked child), so SB3's ``SubprocVecEnv`` and ``multiprocessing`` can
fork after a parallel kernel ran. The workqueue layer must not be entered by two Python threads at
once, so parallel launches are serialised by a lock; single-threaded kernels need none.
"""

from __future__ import annotations

import os
import threading

import numba

# Respect a user's explicit choice; otherwise never pick the fork-unsafe OpenMP layer.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "forksafe"

kernel = numba.njit(cache=True, nogil=True)
"""Decorator of every serial kernel and helper."""

parallel_kernel = numba.njit(cache=True, nogil=True, parallel=True)
"""Decorator of the ``prange`` builds of batched kernels."""

PARALLEL_MIN_BATCH = 64
"""Batches smaller than this run on one thread: below it, starting threads costs more than it saves."""

_launch_lock = threading.Lock()


def threads_setting(threads: int | None) -> int:
    """The thread count for batched kernels: ``threads``, else ``$TAFL_THREADS``, else 1."""
    if threads is None:
        raw = os.environ.get("TAFL_THREADS", "1")
        try:
            threads = int(raw)
        except ValueError:
            raise ValueError(f"TAFL_THREADS must be a positive int, got {raw!r}") from None
        source = "TAFL_THREADS"
    else:
        source = "threads"
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"{source} must be a positive int, got {threads!r}")
    return min(threads, numba.config.NUMBA_NUM_THREADS)


def run_batched(serial, parallel, threads: int, batch: int, *args):
    """Call ``serial(*args)``, or ``parallel(*args)`` on ``threads`` threads for big batches."""
    if threads <= 1 or batch < PARALLEL_MIN_BATCH:
        return serial(*args)
    with _launch_lock:
        numba.set_num_threads(threads)
        return parallel(*args)
