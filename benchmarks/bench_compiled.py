"""The compiled engine against an earlier checkout, side by side from one run (issue: one compiled
engine), plus what only the compiled engine has (in-kernel rollouts, threads, compile times).

Every figure is measured in a fresh subprocess per checkout, the checkouts taking turns, so both
see the same machine load:

    git worktree add /tmp/base 9b1f29b                          # the numpy engine
    python benchmarks/bench_compiled.py --base /tmp/base --numpy-base   # this tree against it
    git worktree add /tmp/prev b0ff16f                          # or an earlier compiled engine
    python benchmarks/bench_compiled.py --base /tmp/prev --repeat 3 --write   # every row, both

Rows (Historisches Tablut unless named):

- ``self-play B=4096``: batched steps from Python, each a random legal action per game
  (``Engine.random_actions`` then ``Engine.step``), finished games restarted;
- ``rollout B=4096``: whole random games inside one kernel call (``Engine.play_random``), timed
  from 4096 fresh games to their end (making the games, ``initial_state``, is outside the clock;
  the ``with initial_state`` rows time it too: 37 MB of fresh memory a call at Tablut's 200-turn
  cap, about 8 ms, page faults mostly);
- ``B=1 step``: one game, one ``random_actions`` + ``step`` call pair per move;
- ``B=1 random step in one call``: one game, one ``play_random(state, rng, max_steps=1)`` call
  per move (the random choice and the step in one kernel call);
- ``raw_env`` / ``env()``: the AEC env with a uniformly random legal action (``last()``, mask,
  choice and ``step`` all timed);
- ``mask B=4096``: ``legal_action_mask`` of 4096 mid-game positions (positions per second); with
  a reused buffer (``out=``, the compiled engine only) it skips allocating and first touching
  10.6 MB per call;
- ``long game``: one uncapped game that cannot end, the rate of its moves 160,000-200,000 (the
  numpy engine slowed down as its history grew);
- ``perft Alea 3``: ``tafl perft legacy_alea_evangelii 3`` (63,982,532), seconds;
- ``cold compile`` / ``warm import``: a fresh process that compiles every kernel into an empty
  numba cache, and one that loads them from it (seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "RESULTS.md"

MEASURE = r'''
import json, sys, time
import numpy as np
which, seconds = sys.argv[1], float(sys.argv[2])
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1

def rate(fn, secs=seconds):
    fn()                                                     # warm-up (and compile)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < secs:
        n += fn()
    return n / (time.perf_counter() - t0)

def timed_rate(setup, fn, secs=seconds):
    """Like rate, with ``setup()`` (its result passed to ``fn``) outside the clock."""
    fn(setup())
    n, clock, t0 = 0, 0.0, time.perf_counter()
    while time.perf_counter() - t0 < secs:
        arg = setup()
        t1 = time.perf_counter()
        n += fn(arg)
        clock += time.perf_counter() - t1
    return n / clock

from tafl_env.engine import Engine
from tafl_env.rules import make_rules

def engine(variant):
    try:
        return Engine(make_rules(variant), threads=threads)
    except TypeError:                                         # engines without threads
        if threads > 1:
            print(json.dumps(None)); sys.exit(0)              # no threaded figure to give
        return Engine(make_rules(variant))

out = None
if which.startswith("selfplay:"):
    variant = which.split(":")[1]
    eng = engine(variant); rng = np.random.default_rng(0)
    state = eng.initial_state(4096); fresh = eng.initial_state(1)
    def go():
        eng.step(state, np.where(state.done, 0, eng.random_actions(state, rng)))
        done = np.flatnonzero(state.done)
        if len(done):
            state.put(done, fresh.take(np.zeros(len(done), dtype=np.intp)))
        return 4096
    out = rate(go)
elif which.startswith("rollout"):
    # rollout: the play_random call on 4096 fresh games (made before the clock starts);
    # rollout_fresh: making them (initial_state) timed too
    kind, variant = which.split(":")
    eng = engine(variant); rng = np.random.default_rng(0)
    if not hasattr(eng, "play_random"):
        out = None
    elif kind == "rollout_fresh":
        out = rate(lambda: int(eng.play_random(eng.initial_state(4096), rng).sum()))
    else:
        out = timed_rate(lambda: eng.initial_state(4096),
                         lambda st: int(eng.play_random(st, rng).sum()))
elif which in ("b1", "b1_random"):
    # one game, one move per iteration: random_actions + step, or play_random's one-call step
    eng = engine("historical_tablut"); rng = np.random.default_rng(0)
    box = [eng.initial_state(1)]
    if which == "b1":
        move = lambda st: eng.step(st, eng.random_actions(st, rng))
    else:
        move = lambda st: eng.play_random(st, rng, 1)
    def go():
        st = box[0]
        if st.reason[0]:
            st = box[0] = eng.initial_state(1)
        move(st)
        return 1
    out = rate(go)
elif which in ("raw_env", "env"):
    import tafl_env
    env = getattr(tafl_env, which)("historical_tablut"); env.reset(seed=0)
    rng = np.random.default_rng(0)
    def go():
        obs, r, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            if not env.agents:
                env.reset()
            return 1
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        return 1
    out = rate(go)
elif which == "mask":
    eng = engine("historical_tablut"); rng = np.random.default_rng(0)
    state = eng.initial_state(4096)
    for _ in range(30):
        eng.step(state, np.where(state.done, 0, eng.random_actions(state, rng)))
    out = rate(lambda: (eng.legal_action_mask(state), 4096)[1])
elif which == "mask_out":
    eng = engine("historical_tablut"); rng = np.random.default_rng(0)
    state = eng.initial_state(4096)
    for _ in range(30):
        eng.step(state, np.where(state.done, 0, eng.random_actions(state, rng)))
    buf = np.empty((4096, eng.num_actions), dtype=np.int8)
    try:
        eng.legal_action_mask(state, out=buf)
    except TypeError:                                         # engines without out=
        print(json.dumps(None)); sys.exit(0)
    out = rate(lambda: (eng.legal_action_mask(state, out=buf), 4096)[1])
elif which == "longgame":
    # One uncapped game that cannot end (a soldier each, nothing hostile, no king): the rate of
    # its moves 160,000-200,000, with the repetition count kept all the way.
    eng = Engine(make_rules("legacy_tawlbwrdd", max_turns=None, repetition="ignore",
                            hostile_corners=False, throne_hostile=False))
    st = eng.initial_state(1, "/11/11/11/11/11/3t3T3/11/11/11/11/11/", "attacker")
    rng = np.random.default_rng(0)
    for _ in range(160000):
        eng.step(st, eng.random_actions(st, rng))
    t0 = time.perf_counter()
    for _ in range(40000):
        eng.step(st, eng.random_actions(st, rng))
    out = 40000 / (time.perf_counter() - t0)
elif which == "perft":
    from tafl_env.game import Game
    from tafl_env.perft import perft
    g = Game("legacy_alea_evangelii")
    perft(g.engine, g.state, 2)                               # warm-up (and compile)
    t0 = time.perf_counter()
    assert perft(g.engine, g.state, 3) == 63982532
    out = time.perf_counter() - t0
elif which == "compile":
    t0 = time.perf_counter()
    from tafl_env.observation import observe
    from tafl_env.engine._jit import PARALLEL_MIN_BATCH
    for th, b in ((1, 8), (2, PARALLEL_MIN_BATCH)):   # one game and a threaded batch
        e = Engine(make_rules("legacy_berserk"), threads=th)
        s = e.initial_state(b); r = np.random.default_rng(0)
        e.step(s, e.random_actions(s, r)); e.play_random(s, r, 5); e.legal_action_mask(s)
        e.count_legal(s); e.check_legal(s, np.zeros(b, dtype=int)); observe(e, s, s.to_move)
    e.perft(e.initial_state(1), 3); e.audit(s); s.grow_history(1000)
    out = time.perf_counter() - t0
print(json.dumps(out))
'''

ROWS = [
    # (label, measurement, unit, threads, only in the compiled engine)
    ("self-play B=4096, Tablut", "selfplay:historical_tablut", "moves/s", 1, False),
    ("self-play B=4096, Tablut, 2 threads", "selfplay:historical_tablut", "moves/s", 2, True),
    ("self-play B=4096, Berserk", "selfplay:legacy_berserk", "moves/s", 1, False),
    ("self-play B=4096, Alea", "selfplay:legacy_alea_evangelii", "moves/s", 1, False),
    ("rollout B=4096, Tablut", "rollout:historical_tablut", "moves/s", 1, True),
    ("rollout B=4096, Tablut, 2 threads", "rollout:historical_tablut", "moves/s", 2, True),
    ("rollout B=4096, Berserk", "rollout:legacy_berserk", "moves/s", 1, True),
    ("rollout B=4096, Berserk, 2 threads", "rollout:legacy_berserk", "moves/s", 2, True),
    ("rollout B=4096, Alea", "rollout:legacy_alea_evangelii", "moves/s", 1, True),
    ("rollout B=4096, Alea, 2 threads", "rollout:legacy_alea_evangelii", "moves/s", 2, True),
    ("rollout B=4096 with initial_state, Tablut", "rollout_fresh:historical_tablut", "moves/s", 1,
     True),
    ("rollout B=4096 with initial_state, Tablut, 2 threads", "rollout_fresh:historical_tablut",
     "moves/s", 2, True),
    ("B=1 step, Tablut", "b1", "moves/s", 1, False),
    ("B=1 random step in one call, Tablut", "b1_random", "moves/s", 1, False),
    ("raw_env, Tablut", "raw_env", "steps/s", 1, False),
    ("env(), Tablut", "env", "steps/s", 1, False),
    ("mask B=4096, Tablut", "mask", "positions/s", 1, False),
    ("mask B=4096, Tablut, 2 threads", "mask", "positions/s", 2, True),
    ("mask B=4096, Tablut, reused buffer (out=)", "mask_out", "positions/s", 1, True),
    ("mask B=4096, Tablut, reused buffer, 2 threads", "mask_out", "positions/s", 2, True),
    ("long game, moves 160k-200k, B=1", "longgame", "moves/s", 1, False),
    ("perft Alea depth 3", "perft", "s", 1, False),
]


def measure(tree: Path, which: str, seconds: float, threads: int, env: dict | None = None,
            timeout: float = 600) -> float | None:
    environ = dict(os.environ, PYTHONPATH=str(tree), **(env or {}))
    try:
        proc = subprocess.run([sys.executable, "-c", MEASURE, which, str(seconds), str(threads)],
                              capture_output=True, text=True, env=environ, timeout=timeout, cwd=tree)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        print(f"  {tree} {which}: failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compile_times(tree: Path) -> tuple[float | None, float | None]:
    """(cold, warm) seconds: all kernels into an empty numba cache, then from it."""
    with tempfile.TemporaryDirectory() as cache:
        cold = measure(tree, "compile", 0, 1, {"NUMBA_CACHE_DIR": cache})
        warm = measure(tree, "compile", 0, 1, {"NUMBA_CACHE_DIR": cache})
    return cold, warm


def fmt(value, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", type=Path, help="an earlier checkout to compare with (e.g. a worktree of 9b1f29b)")
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per row (default 2)")
    p.add_argument("--perft-timeout", type=float, default=300, help="seconds before a perft row gives up")
    p.add_argument("--rows", default="", help="only the rows whose label contains this text "
                   "(e.g. 'B=1'); the compile rows only when it is empty")
    p.add_argument("--repeat", type=int, default=1,
                   help="measure each row this many times, the checkouts taking turns, and keep "
                        "each one's best (default 1)")
    p.add_argument("--numpy-base", action="store_true",
                   help="the base is the numpy engine: skip its rows of what only the compiled "
                        "engine has (rollouts, threads, reused mask buffers, compile times)")
    p.add_argument("--write", action="store_true", help=f"append the section to {DEFAULT_OUT.name}")
    p.add_argument("--heading", default="Compiled engine against the numpy engine",
                   help="the run's heading (a run against an earlier compiled checkout gets its own); "
                        "RESULTS.md keeps one section, the latest run")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tafl_env.bench import append_section, machine_info

    lines = ["| case | unit | " + ("before | " if args.base else "") + "compiled | " +
             ("ratio |" if args.base else ""), "|---|---|" + ("---:|" if args.base else "") + "---:|" +
             ("---:|" if args.base else "")]
    def best(values, unit):
        values = [v for v in values if v is not None]
        return (min(values) if unit == "s" else max(values)) if values else None

    for label, which, unit, threads, new_only in ROWS:
        if args.rows not in label:
            continue
        timeout = args.perft_timeout if which == "perft" else 600
        olds, news = [], []
        for _ in range(max(1, args.repeat)):
            if args.base and not (new_only and args.numpy_base):
                olds.append(measure(args.base, which, args.seconds, threads, timeout=timeout))
            news.append(measure(ROOT, which, args.seconds, threads, timeout=timeout))
        old, new = best(olds, unit), best(news, unit)
        row = f"| {label} | {unit} | "
        if args.base:
            ratio = (old / new if unit == "s" else new / old) if old and new else None
            row += f"{fmt(old, unit)} | {fmt(new, unit)} | {f'{ratio:.1f}×' if ratio else '—'} |"
        else:
            row += f"{fmt(new, unit)} |"
        lines.append(row)
        print(row, flush=True)
    if not args.rows:
        now = compile_times(ROOT)
        before = compile_times(args.base) if args.base and not args.numpy_base else (None, None)
        for label, old, new in zip(("cold compile, all kernels",
                                    "warm start, all kernels from the cache"), before, now):
            row = f"| {label} | s | " + (f"{fmt(old, 's')} | " if args.base else "") + f"{fmt(new, 's')} |"
            lines.append(row + (" |" if args.base else ""))
        print(*lines[-2:], sep="\n")
    table = "\n".join(lines)
    if args.write:
        info = machine_info("numba")
        notes = [f"before: {args.base} (`git -C {args.base} rev-parse --short HEAD`: "
                 f"{subprocess.run(['git', '-C', str(args.base), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()})"] if args.base else []
        append_section(DEFAULT_OUT, args.heading, info,
                       "python benchmarks/bench_compiled.py" + (f" --base {args.base}" if args.base else "")
                       + (" --numpy-base" if args.numpy_base else "")
                       + (f" --rows '{args.rows}'" if args.rows else "")
                       + (f" --repeat {args.repeat}" if args.repeat > 1 else "")
                       + (f" --seconds {args.seconds:g}" if args.seconds != 2.0 else "")
                       + (f" --heading '{args.heading}'" if args.heading != p.get_default("heading") else ""),
                       table, tuple(notes), topic="Compiled engine, case by case (bench_compiled.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
