"""How long a new user waits for an agent's first move: from an empty compile cache, the first
greedy move in Tablut (the engine kernels it needs included), then the first MCTS move, then a
second greedy move in a new process (the cache warm).

Each measurement runs in a fresh Python process with a fresh numba cache (a temporary
``NUMBA_CACHE_DIR``), so it is what a fresh clone sees. Wall time and the process's CPU time are
both reported: the build is single-threaded, so on an idle machine the two agree, and on a busy
one (other processes on the cores) the CPU time is the figure to compare::

    python benchmarks/first_move.py            # the table
    python benchmarks/first_move.py --builds 15   # and the 15 longest builds (CPU s, inclusive)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, sys, time
t_wall, t_cpu = time.perf_counter(), time.process_time()
from numba.core import event

class CpuRecorder(event.Listener):
    def __init__(self):
        self.open, self.builds, self.depth = {}, [], 0
    def on_start(self, ev):
        self.open[id(ev.data["dispatcher"]), str(ev.data["args"])] = time.process_time()
    def on_end(self, ev):
        d = ev.data["dispatcher"]
        t0 = self.open.pop((id(d), str(ev.data["args"])))
        self.builds.append((time.process_time() - t0, f"{d.py_func.__module__}.{d.py_func.__qualname__}"))

recorder = CpuRecorder()
event.register("numba:compile", recorder)
from tafl_env import make_rules
from tafl_env.engine import Engine
from agents import make_agent
rows = {}
engine = Engine(make_rules("historical_tablut"))
state = engine.initial_state(1)
for label, spec in json.loads(sys.argv[1]):
    make_agent(spec, seed=0).act(engine, state)
    rows[label] = [time.perf_counter() - t_wall, time.process_time() - t_cpu]
print(json.dumps({"rows": rows, "builds": sorted(recorder.builds, reverse=True)}))
"""


def measure(moves: list[tuple[str, str]], cache: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, TAFL_COMPILE_NOTICE="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(moves)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--builds", type=int, default=0, help="also list this many of the longest builds")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        cold = measure([("first greedy move", "greedy"), ("then first mcts:64 move", "mcts:64")], cache)
        warm = measure([("greedy move, cache warm", "greedy")], cache)
    print(f"{'from process start':<28} {'wall s':>8} {'CPU s':>8}")
    for label, (wall, cpu) in {**cold["rows"], **warm["rows"]}.items():
        print(f"{label:<28} {wall:8.1f} {cpu:8.1f}")
    if args.builds:
        print(f"\nlongest builds (CPU s, inclusive), of {len(cold['builds'])}:")
        for seconds, name in cold["builds"][:args.builds]:
            print(f"  {seconds:7.2f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
