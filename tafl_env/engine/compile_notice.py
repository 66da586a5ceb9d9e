"""A notice on stderr while this package's kernels compile, so that a first use never sits silent.

numba compiles a kernel the first time it is called on a machine (about 30 s for the engine, a
minute more for the search agents) and loads it from its disk cache afterwards. While a kernel of
this package (or of a package registered with :func:`._jit.register_kernel_package`) compiles,
the first compile of a process prints one line::

    tafl-env: compiling kernels for this machine (first use only; cached on disk afterwards; `tafl warmup` compiles them all at once) ...

and every kernel called from Python that took a second or more adds a line with its time (on a
terminal, one status line is rewritten instead while the callees compile). Nothing is printed
when the kernels come from the cache. ``TAFL_COMPILE_NOTICE=0`` silences it (the tests do, so that
a test of a command's one-line error does not depend on the state of the cache).

It listens to numba's event API (``numba:compile`` fires only when a function is really built,
not when it is loaded from the cache).

    >>> import io
    >>> notice = CompileNotice(io.StringIO(), is_ours=lambda dispatcher: True)
    >>> notice.started("tafl_env.engine.batch.masks"); notice.finished("tafl_env.engine.batch.masks", 2.5)
    >>> print(notice.stream.getvalue().strip().splitlines()[-1])
    tafl-env: compiled tafl_env.engine.batch.masks in 2.5 s
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from typing import Callable, TextIO

from numba.core import event

NOTICE = ("tafl-env: compiling kernels for this machine (first use only; cached on disk afterwards; "
          "`tafl warmup` compiles them all at once) ...")
REPORT_AFTER_S = 1.0
"""A kernel called from Python gets a line of its own when its build took at least this long."""


def _dispatcher_name(dispatcher) -> str:
    func = dispatcher.py_func
    return f"{func.__module__}.{func.__qualname__}"


class CompileNotice(event.Listener):
    """Listens to ``numba:compile`` events; prints the notice and the progress to ``stream``
    (default: ``sys.stderr`` at the time of printing)."""

    def __init__(self, stream: TextIO | None = None, is_ours: Callable[[object], bool] | None = None):
        self.stream = stream
        self.is_ours = is_ours
        self.depth = 0          # builds in progress (a kernel's build nests its callees' builds)
        self.shown = False      # the notice is printed once per process
        self.built = 0          # functions built so far in this process
        self.t0 = 0.0
        self._status = False    # a rewritten status line is on the terminal

    # numba's Listener interface
    def on_start(self, ev) -> None:
        dispatcher = ev.data["dispatcher"]
        if self.depth or self.is_ours is None or self.is_ours(dispatcher):
            self.started(_dispatcher_name(dispatcher))

    def on_end(self, ev) -> None:
        if self.depth:
            self.finished(_dispatcher_name(ev.data["dispatcher"]), time.perf_counter() - self.t0)

    # the notice itself (separate from numba's events, so that it can be tested without a build)
    def started(self, name: str) -> None:
        if not self.shown:
            self.shown = True
            self._print(NOTICE)
        if self.depth == 0:
            self.t0 = time.perf_counter()
        self.depth += 1

    def finished(self, name: str, seconds: float) -> None:
        self.depth -= 1
        self.built += 1
        out = self._out()
        if self.depth:
            if _is_terminal(out):
                out.write(f"\r  {self.built} functions built, {seconds:.0f} s: {name[-60:]:<60}")
                out.flush()
                self._status = True
        elif seconds >= REPORT_AFTER_S:
            self._print(f"tafl-env: compiled {name} in {seconds:.1f} s")

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def _print(self, line: str) -> None:
        out = self._out()
        if self._status:
            out.write("\r" + " " * 100 + "\r")
            self._status = False
        print(line, file=out, flush=True)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def enabled() -> bool:
    """``False`` when ``TAFL_COMPILE_NOTICE`` is ``0`` (or ``false``, ``no``, ``off``)."""
    return os.environ.get("TAFL_COMPILE_NOTICE", "1").strip().lower() not in ("0", "false", "no", "off")


def install(is_our_file: Callable[[str], bool]) -> CompileNotice | None:
    """Register one :class:`CompileNotice` for this process's builds of functions defined in files
    that ``is_our_file(path)`` accepts (unless :func:`enabled` says no)."""
    if not enabled():
        return None

    def is_ours(dispatcher) -> bool:
        try:
            return is_our_file(inspect.getfile(dispatcher.py_func))
        except (TypeError, OSError):
            return False

    listener = CompileNotice(is_ours=is_ours)
    event.register("numba:compile", listener)
    return listener
