"""Where the cold compile goes: every compiled function's build time, and every function built
more than once (a second build is compile time spent twice).

Runs in a fresh numba cache (a temporary ``NUMBA_CACHE_DIR``, set before numba loads), compiles
what ``tafl warmup`` compiles (:data:`agents.warmup.PHASES`: the engine's kernels, and with
``--agents`` the search agents' too), while numba's event API records each build::

    python benchmarks/profile_compile.py            # the engine (about 30 s)
    python benchmarks/profile_compile.py --agents   # and the search agents (minutes)

Times are inclusive (a function's build includes the builds of the functions it calls that were
not built yet). A function listed under "built more than once" has one build per distinct
argument type tuple; the engine's decorators type calls with plain (non-literal) argument types
(``tafl_env/engine/_jit.py``), so what remains there is a real difference of types (an int8 in one
caller, an int64 in another).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _compile_everything(agents: bool) -> dict[str, float]:
    from agents.warmup import PHASES

    phases = {}
    for name, run in PHASES if agents else PHASES[:1]:
        t0 = time.perf_counter()
        run()
        phases[name] = time.perf_counter() - t0
    return phases


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", action="store_true", help="compile the search agents' kernels too")
    p.add_argument("--top", type=int, default=25, help="how many of the longest builds to list")
    args = p.parse_args(argv)
    if "numba" in sys.modules:
        raise SystemExit("run this as a script: numba must load after NUMBA_CACHE_DIR is set")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache
        sys.path.insert(0, str(ROOT))
        from numba.core import event

        with event.install_recorder("numba:compile") as recorder:
            phases = _compile_everything(args.agents)
    builds, started = [], {}
    for stamp, ev in recorder.buffer:
        name = getattr(ev.data["dispatcher"].py_func, "__qualname__", "?")
        key = (name, str(ev.data["args"]))
        if ev.is_start:
            started[key] = stamp
        else:
            builds.append((stamp - started.pop(key), name, ev.data["args"]))
    for phase, seconds in phases.items():
        print(f"{phase}: {seconds:.1f} s")
    print(f"\nlongest builds (inclusive), of {len(builds)}:")
    for seconds, name, _ in sorted(builds, key=lambda b: -b[0])[:args.top]:
        print(f"  {seconds:7.2f} s  {name}")
    by_name: dict[str, list] = {}
    for seconds, name, types in builds:
        by_name.setdefault(name, []).append((seconds, types))
    repeated = {name: b for name, b in by_name.items() if len(b) > 1}
    print(f"\nbuilt more than once: {len(repeated) or 'none'}")
    for name, versions in repeated.items():
        print(f"  {name}: {len(versions)} builds, {sum(s for s, _ in versions):.2f} s")
        first = versions[0][1]
        for seconds, types in versions[1:]:
            differ = [f"argument {i}: {a} / {b}" for i, (a, b) in enumerate(zip(first, types)) if a != b]
            print(f"      {'; '.join(differ) or 'same argument types'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
