"""How the engine's kernels are compiled, and how batches are spread over threads.

Every kernel is compiled by numba once per machine and cached on disk (``cache=True``), so a warm
import costs well under a second. Kernels release the GIL (``nogil=True``): two Python threads
may step their own batches at the same time, and a big batch is spread over threads by running
the same kernel on separate ranges of its games from a pool of Python threads
(:func:`run_threaded`). There is one build of every kernel: no numba ``prange`` builds, whose
compile took a third of the total, and no numba threading layer (whose OpenMP flavour hangs in a
forked child).

The thread count comes from the ``threads`` argument of :class:`~tafl_env.engine.Engine`, else
the ``TAFL_THREADS`` environment variable, else 1 (one thread is the right default for RL work,
which usually runs one process per core). The pool is made per process, so SB3's
``SubprocVecEnv`` and ``multiprocessing`` may fork after threads ran: a child makes its own.
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
from numba.core import caching, types
from numba.core.registry import CPUDispatcher

from ..errors import InvalidOptionError

# --- the cache knows every kernel source --------------------------------------------------------
# numba stamps a cached kernel with its own source file only. A kernel inlines helpers from other
# files, so an edit there (a rule fixed in captures.py) would leave kernels of batch.py compiled
# from the old helper. Our locators add a hash of every source file that defines kernels to the
# stamp: any edit recompiles them all. (Installs are safe either way: pip rewrites every file.)
# The locator classes are numba's; the hook (CacheImpl._locator_classes) is internal, and
# tests/test_compiled_engine.py checks that it is in effect.

_PACKAGE = Path(__file__).resolve().parent.parent
_KERNEL_SOURCES = sorted((_PACKAGE / "engine").glob("*.py")) + [_PACKAGE / "observation.py"]


def _digest(paths) -> str:
    return hashlib.sha256(b"".join(Path(p).read_bytes() for p in sorted(paths))).hexdigest()


SOURCE_STAMP = _digest(_KERNEL_SOURCES)
_PACKAGE_STAMPS: dict[Path, str] = {}   # other packages of kernels built on the engine's helpers


def register_kernel_package(directory) -> None:
    """Stamp the cached kernels of the modules in ``directory`` (kernels that inline the engine's
    helpers, such as compiled search agents) with the engine's sources and their own. Call it in
    the package's ``__init__``, before its modules define kernels."""
    directory = Path(directory).resolve()
    _PACKAGE_STAMPS[directory] = _digest(directory.glob("*.py"))


def _stamp_of(py_file: str) -> tuple | None:
    path = Path(py_file).resolve()
    if path in _KERNEL_SOURCES:
        return (SOURCE_STAMP,)
    if path.parent in _PACKAGE_STAMPS:
        return (SOURCE_STAMP, _PACKAGE_STAMPS[path.parent])
    return None


def _engine_locator(base):
    class Locator(base):
        @classmethod
        def from_function(cls, py_func, py_file):
            if _stamp_of(py_file) is None:
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return (super().get_source_stamp(), *_stamp_of(self._py_file))

    Locator.__name__ = Locator.__qualname__ = f"TaflEngine{base.__name__}"
    return Locator


_LOCATORS = [_engine_locator(base) for base in (caching.UserProvidedCacheLocator,
                                                 caching.InTreeCacheLocator,
                                                 caching.UserWideCacheLocator)]
if not any(c.__name__.startswith("TaflEngine") for c in caching.CacheImpl._locator_classes):
    caching.CacheImpl._locator_classes[:0] = _LOCATORS


# Serial kernels run without numba's reference-counted memory (``_nrt=False``): every array they
# touch comes from Python, so nothing is allocated, and no call of one
# compiled function by another increments and decrements the counts of the arrays it passes.
# With those counts, and calls between kernels that LLVM does not inline, one thread rolled out
# 0.55M Tablut moves/s; without them (and with the ``leaf`` helpers inlined) 2.5M. The flag is
# numba's own target option, though not in its user documentation; tests/test_compiled_engine.py
# checks that it is in effect. error_model="numpy": integer division by zero is not checked (the
# kernels never divide by a variable that can be zero), as in numpy.
_FLAGS = dict(cache=True, nogil=True, error_model="numpy")

SERIAL_OPTIONS = dict(_nrt=False, **_FLAGS)


# --- one build of every function, whatever constants its callers pass ---------------------------
# numba types a call between compiled functions with the arguments' types as the caller sees
# them, and a constant argument (``choose_node(W, tb, at, 0, ...)``) has a literal type there
# (``Literal[int](0)``): the callee was compiled once for it, once more for ``int64`` from another
# caller, and again for 1 and 2, each copy compiling its own callees likewise (the step three
# times over in the search agents, whose first use took minutes to compile). Functions compiled
# here are typed with the arguments' plain types, so each is compiled once. The hook
# (``Dispatcher.get_call_template``, where numba's call typing asks a dispatcher for its
# signatures) is internal; tests/test_compiled_engine.py checks that it is in effect.

class _PlainArgumentsDispatcher(CPUDispatcher):
    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(types.unliteral(a) for a in args),
                                         {k: types.unliteral(v) for k, v in kws.items()})


def njit(**options):
    """``numba.njit(**options)``, with calls from other compiled functions typed by the
    arguments' plain types."""

    def decorate(func):
        dispatcher = numba.njit(**options)(func)
        dispatcher.__class__ = _PlainArgumentsDispatcher
        return dispatcher
    return decorate


kernel = njit(**SERIAL_OPTIONS)
"""Decorator of the serial kernels and of the per-game helpers they call."""

helper = kernel
"""The per-game helpers (same build; the name says a function is not called from Python)."""

leaf = numba.njit(inline="always", **SERIAL_OPTIONS)   # inlined before typing: no call typed
"""Small helpers called many times a move (bit counts, one piece's moves, one square's toggles):
inlined by numba into their callers, since a call between compiled functions is not inlined by
LLVM and costs more than these functions' work. Only small ones: inlining the big per-move
functions into every kernel made the cold compile five times longer."""

inlined = njit(forceinline=True, **SERIAL_OPTIONS)
"""Big per-game functions called once a move (the step; the greedy agent's evaluation, once a
scored child): too big to inline into every kernel at numba's level (that doubled the cold
compile), but a call passes every array argument as 7-11 machine words, and the step's 28
arrays (state and tables) took about a third of a random move. ``forceinline`` (a numba target
option) marks the function ``alwaysinline`` for LLVM, which inlines it into each caller's machine
code at a fraction of numba's cost. LLVM still optimizes every inlined copy: what is called
seldom stays a ``helper`` (the greedy agent's opponent check, run for a few children a move
since it runs lazily: inlined into its three callers it was half the agents' cold compile)."""


@leaf
def ix(i):
    """``i`` as an unsigned array index. numba guards every signed index against negative values
    (wrapping them as Python does: a compare and a select per dimension); move generation reads
    a few hundred indices a move, none negative."""
    return np.uint64(i)


PARALLEL_MIN_BATCH = 2048
"""Batches smaller than this run on one thread: handing ranges to the pool costs tens of µs, so
threads pay only for big batches (whole rollouts in one call gain most)."""

ROLLOUT_CHUNKS_PER_THREAD = 4
"""Whole rollouts split their games into this many ranges per thread, so that a thread slowed by
another process (or given games that last longer) does not hold the others up; one pass over the
batch (a step, the masks) takes one range per thread."""

_pools: dict = {}
_pools_lock = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    """This process's pool of ``threads`` workers (a forked child makes its own: the parent's
    workers do not exist there)."""
    key = (os.getpid(), threads)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(threads, thread_name_prefix="tafl-engine")
        return pool


def run_threaded(work, threads: int, n: int, chunks_per_thread: int = 1) -> list:
    """Call ``work(lo, hi)`` on ranges covering ``0 .. n-1``, spread over ``threads`` threads: the
    caller and ``threads - 1`` pool workers each take the next range until none is left. Returns
    the results in range order. ``work`` should call kernels, which release the GIL."""
    chunks = max(1, min(n, threads * chunks_per_thread))
    bounds = [n * i // chunks for i in range(chunks + 1)]
    results = [None] * chunks
    ranges = iter(range(chunks))
    lock = threading.Lock()

    def drain():
        while True:
            with lock:
                i = next(ranges, None)
            if i is None:
                return
            results[i] = work(bounds[i], bounds[i + 1])

    helpers = [_pool(threads - 1).submit(drain) for _ in range(threads - 1)] if threads > 1 else []
    try:
        drain()
    finally:
        for f in helpers:
            f.result()   # waits for every range (and re-raises a worker's exception)
    return results


def threads_setting(threads: int | None) -> int:
    """The thread count for batched kernels: ``threads``, else ``$TAFL_THREADS``, else 1."""
    if threads is None:
        raw = os.environ.get("TAFL_THREADS", "1")
        try:
            threads = int(raw)
        except ValueError:
            raise InvalidOptionError(f"TAFL_THREADS must be a positive int, got {raw!r}") from None
        if threads < 1:
            raise InvalidOptionError(f"TAFL_THREADS must be a positive int, got {raw!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidOptionError(f"threads must be a positive int, got {threads!r}")
    return min(threads, os.cpu_count() or 1)
