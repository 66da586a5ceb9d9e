"""Engine throughput and memory: batched random self-play for every variant and batch size.

Each batched step computes the full legal mask of every game, picks a uniformly random legal action
per game, steps, and restarts finished games in place (``tafl_env.bench.bench_engine``); one step of
one game counts as one step. Peak memory (MiB) comes from a separate short run under tracemalloc.

    python benchmarks/bench_engine.py                      # all five variants, batches 1 64 1024 4096
    python benchmarks/bench_engine.py --seconds 0.3 --variants historical_tablut --batch 1 64
    python benchmarks/bench_engine.py --write              # append a dated section to RESULTS.md
    python benchmarks/bench_engine.py --out my_results.md  # append it to another file

The results go into ``RESULTS.md`` with the machine and the date (DESIGN.md: speed is measured and
written down, not asserted in a timed unit test).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


from tafl_env import VARIANTS
from tafl_env.bench import append_section, bench_engine, format_table, machine_info

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "RESULTS.md"
DEFAULT_BATCHES = (1, 64, 1024, 4096)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=2.0,
                   help="timed seconds per variant and batch (default 2)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="VARIANT",
                   help="default: all five variants")
    p.add_argument("--batch", nargs="+", type=int, default=list(DEFAULT_BATCHES), metavar="B",
                   help="batch sizes (default: 1 64 1024 4096)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None,
                   help="append the dated section to this markdown file (implies --write; "
                        f"default {DEFAULT_OUT})")
    p.add_argument("--write", action="store_true", help=f"append the dated section to {DEFAULT_OUT.name}")
    p.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    args = p.parse_args(argv)

    info = machine_info()
    print(", ".join(f"{k}: {v}" for k, v in info.items()), flush=True)
    results = []
    for v in args.variants:
        for b in args.batch:
            r = bench_engine(v, b, args.seconds, seed=args.seed)
            results.append(r)
            print(f"  {v:<24} batch {b:>5}: {r['steps_per_s']:>12,.0f} steps/s, "
                  f"peak {r['peak_mem_mb']:.2f} MiB", file=sys.stderr, flush=True)
    print(format_table(results))
    if args.write or args.out is not None:
        out = args.out or DEFAULT_OUT
        append_section(out, "Engine: batched random self-play", info,
                       f"python benchmarks/bench_engine.py {' '.join(argv)}".rstrip(), format_table(results),
                       notes=(f"timed seconds per row: {args.seconds:g}",
                              "one step = one move of one game; the full legal mask (packed) every step, a "
                              "uniformly random legal action per game, finished games restarted; peak MiB = "
                              "traced memory of the batch over a few steps"))
        print(f"appended to {out}", file=sys.stderr)
    if args.json:
        print(json.dumps({"machine": info, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
