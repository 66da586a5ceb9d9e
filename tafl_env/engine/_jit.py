"""How the engine's kernels are compiled, and how batches are spread over threads.

Every kernel is compiled by numba once per machine and cached on disk (``cache=True``), so a warm
import costs well under a second; the helpers that only compiled code calls are built *lean*
(linked, optimized and compiled once, into each kernel that calls them: see ``_finalize``). Kernels release the GIL (``nogil=True``): two Python threads
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

import ast
import functools
import hashlib
import os
import pickle
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
from numba.core import caching, types
from numba.core import codegen as numba_codegen
from numba.core.registry import CPUDispatcher

from ..errors import InvalidOptionError

# --- the cache knows every source a kernel is built from -----------------------------------------
# numba stamps a cached kernel with its own source file only. A kernel inlines helpers from other
# files and bakes in the module constants it reads, so an edit there (a rule fixed in captures.py)
# would leave kernels of batch.py compiled from the old helper. Our locators add to the stamp a
# hash of every file the kernel's module imports from this package, directly or through other
# modules of it (its import closure): an edit there recompiles the kernels built from it, and an
# edit anywhere else (core.py, the environments, a comment in a front end) recompiles nothing.
# (Installs are safe either way: pip rewrites every file.) The locator classes are numba's; the
# hook (CacheImpl._locator_classes) is internal, and tests/test_compiled_engine.py checks that it
# is in effect.

_PACKAGE = Path(__file__).resolve().parent.parent
_KERNEL_ROOTS: list[tuple[str, Path]] = [("tafl_env", _PACKAGE)]
"""(package name, directory) of the packages whose files may define kernels: this one, and those
registered by :func:`register_kernel_package` (compiled search agents built on the engine)."""


def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` if it lies in one of the kernel packages."""
    for package, directory in _KERNEL_ROOTS:
        if name == package or name.startswith(package + "."):
            base = directory.joinpath(*name[len(package) + 1:].split(".")) if name != package else directory
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    return candidate.resolve()
    return None


def _module_name(path: Path) -> str | None:
    for package, directory in _KERNEL_ROOTS:
        try:
            parts = path.relative_to(directory).with_suffix("").parts
        except ValueError:
            continue
        return ".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts)))
    return None


def _imports_of(path: Path) -> set[Path]:
    """The files of the kernel packages that ``path`` imports at module level (relative or
    absolute imports; those inside functions bind no name that a kernel could read)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[Path] = set()
    for node in _module_level(ast.parse(path.read_bytes()).body):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            # a name may be a module; `from . import x` reads x alone, not the package's __init__
            targets = ([module] if node.module else []) + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(f for f in map(_module_file, targets) if f is not None)
    return found


def _module_level(statements):
    """The statements run at import: the top level and the blocks of top-level if/try/with."""
    for node in statements:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for inner in getattr(node, block, ()):
                    yield from _module_level(inner.body if isinstance(inner, ast.ExceptHandler) else [inner])


@functools.lru_cache(maxsize=None)
def import_closure(path: Path) -> frozenset[Path]:
    """``path`` and every file of the kernel packages it imports, directly or indirectly."""
    seen, todo = set(), [Path(path).resolve()]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(_imports_of(f) - seen)
    return frozenset(seen)


def _digest(paths) -> str:
    return hashlib.sha256(b"".join(Path(p).read_bytes() for p in sorted(paths))).hexdigest()


def register_kernel_package(package: str) -> None:
    """Let the modules of ``package`` (a package's ``__name__``) define cached kernels that build
    on the engine's helpers (compiled search agents): their cache is stamped like the engine's,
    and their builds get the compile notice. Call it in the package's ``__init__``, before its
    modules define kernels: ``register_kernel_package(__name__)``."""
    entry = (package, Path(sys.modules[package].__file__).resolve().parent)
    if entry not in _KERNEL_ROOTS:
        _KERNEL_ROOTS.append(entry)
        import_closure.cache_clear()


def _in_kernel_package(py_file) -> bool:
    path = Path(py_file).resolve()
    return any(path.is_relative_to(directory) for _, directory in _KERNEL_ROOTS)


def source_stamp(py_file) -> str | None:
    """The stamp added to the cache entries of kernels defined in ``py_file``: a hash of its import
    closure; ``None`` for a file outside the kernel packages (numba's own stamp alone)."""
    if not _in_kernel_package(py_file):
        return None
    return _digest(import_closure(Path(py_file).resolve()))


def _engine_locator(base):
    class Locator(base):
        @classmethod
        def from_function(cls, py_func, py_file):
            if not _in_kernel_package(py_file):
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return (super().get_source_stamp(), source_stamp(self._py_file))

    Locator.__name__ = Locator.__qualname__ = f"TaflEngine{base.__name__}"
    return Locator


_LOCATORS = [_engine_locator(base) for base in (caching.UserProvidedCacheLocator,
                                                 caching.InTreeCacheLocator,
                                                 caching.UserWideCacheLocator)]
if not any(c.__name__.startswith("TaflEngine") for c in caching.CacheImpl._locator_classes):
    caching.CacheImpl._locator_classes[:0] = _LOCATORS


# numba unpickles a cache index before it compares its stamp, and an index pickles the argument
# types of its kernels: one that names a class since moved or renamed (a tree record of the
# search agents) raised ModuleNotFoundError on the next call instead of compiling anew. An index
# that cannot be read is obsolete; it is rebuilt. (numba's internal IndexDataCacheFile._load_index,
# guarded by tests/test_compiled_engine.py.)
_numba_load_index = caching.IndexDataCacheFile._load_index


def _load_index_or_obsolete(self):
    try:
        return _numba_load_index(self)
    except (ImportError, AttributeError, EOFError, pickle.UnpicklingError):
        return {}


if getattr(caching.IndexDataCacheFile._load_index, "__name__", "") != "_load_index_or_obsolete":
    caching.IndexDataCacheFile._load_index = _load_index_or_obsolete



def _install_compile_notice():
    from . import compile_notice   # imported here: the notice is no source of any kernel

    return compile_notice.install(_in_kernel_package)


COMPILE_NOTICE = _install_compile_notice()
"""The listener that prints a notice while kernels compile (:mod:`.compile_notice`), or ``None``."""


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


# --- each function's code optimized and compiled once -------------------------------------------
# numba links into the module of each compiled function a copy of every function it calls,
# directly or not, then optimizes that module (LLVM O3) and compiles it to machine code: a helper
# called by a helper called by a kernel was optimized and compiled again at every level of the
# call tree (the greedy agent's first move: 41 of its 68 s of CPU were those passes, over the same
# code again and again). A function that only other compiled functions call (``helper``,
# ``inlined``) needs no optimized code of its own, so it is built *lean*: its module keeps only
# its own functions, unoptimized beyond numba's per-function passes (were Python to call it, its
# calls resolve to the callees' own machine code), and a function that calls it links the whole
# tree of lean callees below it, each once, and optimizes and compiles it once. Lean functions are
# not cached on disk (a cached module without its callees could not be linked into a new caller);
# they are built only when a caller is. The hook (numba's internal CPUCodeLibrary.finalize, by the
# library's name: the function's qualified name) is checked by tests/test_compiled_engine.py.

_LEAN: set[str] = set()
"""Qualified names of the lean functions (their libraries link none of their callees)."""
_CALLED_FROM_PYTHON: set[str] = set()
"""Qualified names of the kernels (built whole); none may share a name with a lean function."""

_numba_finalize = numba_codegen.CPUCodeLibrary.finalize


def _with_lean_callees(libraries: list) -> list:
    """``libraries`` and, below every lean one, the libraries it calls: each once, in order."""
    out, seen, todo = [], set(), list(libraries)
    while todo:
        lib = todo.pop(0)
        if id(lib) in seen:
            continue
        seen.add(id(lib))
        out.append(lib)
        if getattr(lib, "_tafl_lean", False):
            todo.extend(lib._linking_libraries)
    return out


def _finalize(self):
    if self.name in _LEAN and not self._finalized:
        self._tafl_lean = True
        # numba's finalize without the linking and the module passes; its check that every
        # numba function is defined does not hold for a module that declares its callees
        self._verify_declare_only_symbols = lambda: None
        self._codegen._check_llvm_bugs()
        self._final_module.verify()
        self._finalize_final_module()
        return
    self._linking_libraries = _with_lean_callees(self._linking_libraries)
    _numba_finalize(self)


if numba_codegen.CPUCodeLibrary.finalize.__name__ != "_finalize":
    numba_codegen.CPUCodeLibrary.finalize = _finalize


def njit(lean: bool = False, **options):
    """``numba.njit(**options)``, with calls from other compiled functions typed by the
    arguments' plain types; ``lean``: built lean and not cached (see above)."""

    def decorate(func):
        names, others = (_LEAN, _CALLED_FROM_PYTHON) if lean else (_CALLED_FROM_PYTHON, _LEAN)
        if func.__qualname__ in others:
            raise RuntimeError(f"{func.__module__}.{func.__qualname__}: a kernel and a lean helper share this "
                               "name, which tells numba's libraries apart: rename one")
        names.add(func.__qualname__)
        dispatcher = numba.njit(**(dict(options, cache=False) if lean else options))(func)
        dispatcher.__class__ = _PlainArgumentsDispatcher
        return dispatcher
    return decorate


kernel = njit(**SERIAL_OPTIONS)
"""Decorator of the serial kernels: functions that Python calls (other kernels may too)."""

helper = njit(lean=True, **SERIAL_OPTIONS)
"""The per-game helpers that only compiled functions call: built lean (see above)."""

leaf = numba.njit(inline="always", **SERIAL_OPTIONS)   # inlined before typing: no call typed
"""Small helpers called many times a move (bit counts, one piece's moves, one square's toggles):
inlined by numba into their callers, since a call between compiled functions is not inlined by
LLVM and costs more than these functions' work. Only small ones: inlining the big per-move
functions into every kernel made the cold compile five times longer (and inlining the greedy
search's single-caller helpers made its first move's compile a quarter longer)."""

inlined = njit(lean=True, forceinline=True, **SERIAL_OPTIONS)
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
