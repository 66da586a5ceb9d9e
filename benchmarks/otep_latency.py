"""How soon ``tafl otep`` says ``hello`` and plays its first move: warm and cold compile caches.

    python benchmarks/otep_latency.py                      # greedy and mcts:200, warm then cold
    python benchmarks/otep_latency.py --agents greedy az:historical_tablut:64 --runs 3

OpenTafl gives an engine about five seconds to say ``hello`` and then its clock: the engine must
answer at once, load torch and compile its kernels afterwards, and play its first move within the
first clock period. Each run starts the engine as OpenTafl would (``tafl otep --agent SPEC``, a
pipe on stdin and stdout), times the ``hello`` line from the start of the process, then sends
Historisches Tablut's rules and ``play attackers`` and times the ``move`` line. **Warm**: the
kernels in numba's cache (a first, untimed run fills it). **Cold**: ``NUMBA_CACHE_DIR`` pointed at
an empty folder, so every kernel the agent needs is compiled in that first move, as on a machine
where the agent never ran (``tafl warmup`` avoids it). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tafl_env import make_rules
from tafl_env.opentafl import rules_string

TAFL = [sys.executable, "-m", "tafl_env"]


def one_run(spec: str, env: dict) -> dict:
    """Seconds from the start of the process to ``hello`` and to the first ``move``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([*TAFL, "otep", "--agent", spec], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        hello = proc.stdout.readline().strip()
        t_hello = time.perf_counter() - t0
        if hello != "hello":
            raise RuntimeError(f"{spec}: expected hello, got {hello!r}")
        t1 = time.perf_counter()
        proc.stdin.write(f"rules {rules_string(make_rules('historical_tablut'))}\nplay attackers\n")
        proc.stdin.flush()
        move = proc.stdout.readline().strip()
        t_move = time.perf_counter() - t1
        if not move.startswith("move "):
            raise RuntimeError(f"{spec}: expected a move, got {move!r}")
        proc.stdin.write("goodbye\n")
        proc.stdin.flush()
        stderr = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    return {"hello_s": round(t_hello, 3), "first_move_s": round(t_move, 3), "stderr_bytes": len(stderr)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", nargs="+", default=["greedy", "mcts:200"])
    p.add_argument("--runs", type=int, default=3, help="warm runs per agent (the median is reported)")
    p.add_argument("--no-cold", action="store_true", help="skip the cold-cache run")
    args = p.parse_args(argv)
    rows = []
    for spec in args.agents:
        env = dict(os.environ)
        one_run(spec, env)                                    # fills the cache
        warm = [one_run(spec, env) for _ in range(args.runs)]
        row = {"agent": spec, "warm_hello_s": sorted(r["hello_s"] for r in warm)[len(warm) // 2],
               "warm_first_move_s": sorted(r["first_move_s"] for r in warm)[len(warm) // 2],
               "stderr_bytes": max(r["stderr_bytes"] for r in warm)}
        if not args.no_cold:
            cache = tempfile.mkdtemp(prefix="otep-cold-")
            try:
                cold = one_run(spec, dict(env, NUMBA_CACHE_DIR=cache))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            row.update(cold_hello_s=cold["hello_s"], cold_first_move_s=cold["first_move_s"])
            row["stderr_bytes"] = max(row["stderr_bytes"], cold["stderr_bytes"])
        rows.append(row)
        print(" ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    print(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
