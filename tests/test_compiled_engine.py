"""The compiled engine's own guarantees: any engine instance steps any state, memory follows what
games use, threads and fork are safe, and whole rollouts run inside one kernel call."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import subprocess
import sys
import threading

import numba
import numpy as np
import pytest
from numba import literal_unroll

import tafl_env
from tafl_env.engine import Engine
from tafl_env.engine.core import INITIAL_HISTORY
from tafl_env.engine.layout import STATE_HEADER, state_views, table_views
from tafl_env.engine.state import State
from tafl_env.errors import InvalidOptionError
from tafl_env.game import Game
from tafl_env.notation import parse_square
from tafl_env.rules import VARIANTS, make_rules

JUMPERS = "/11/cT7Tc/11/cT9/11/cT3K5/11/cT9/11/cT9/11/"


def _action(env, move: str) -> int:
    origin, target = (parse_square(sq, 11) for sq in move.split("-"))
    return env.unwrapped.engine.encode(origin, target)


def _pickled_env_after_a4_a3() -> bytes:
    env = tafl_env.raw_env("legacy_berserk", position=JUMPERS, to_move="attacker")
    env.reset(seed=0)
    env.step(_action(env, "a4-a3"))
    return pickle.dumps(env)


def test_a_pickled_game_keeps_its_jumps_in_a_fresh_process():
    """More jumping pieces than the start layout has: a fresh process (a new Engine) must still
    generate every jump (a8^c8 and a10^c10 went missing when jump slots were sized per instance)."""
    blob = _pickled_env_after_a4_a3()
    code = (
        "import pickle, sys\n"
        "env = pickle.loads(sys.stdin.buffer.read())\n"
        "from tafl_env.notation import parse_square\n"
        "eng = env.unwrapped.engine\n"
        "env.step(eng.encode(parse_square('f6', 11), parse_square('f7', 11)))\n"
        "print(sorted(str(m) for m in env.unwrapped.game.legal_moves()))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    moves = eval(proc.stdout.decode().strip().splitlines()[-1])
    assert len(moves) == 31
    assert "a8^c8" in moves and "a10^c10" in moves


def test_any_engine_instance_steps_any_state():
    first = Engine(make_rules("legacy_berserk"))
    other = Engine(make_rules("legacy_berserk"))
    state = first.initial_state(1, JUMPERS, "attacker")
    assert np.array_equal(first.legal_action_mask(state), other.legal_action_mask(state))
    a = int(np.flatnonzero(other.legal_action_mask(state)[0])[0])
    twin = state.copy()
    first.step(state, [a])
    other.step(twin, [a])
    for name in ("board", "moves", "key", "pieces"):
        assert np.array_equal(getattr(state, name), getattr(twin, name))


@pytest.mark.parametrize("max_turns", [10**6, 10**12, None])
def test_memory_follows_what_games_use_not_the_cap(max_turns):
    eng = Engine(make_rules("historical_tablut", max_turns=max_turns))
    state = eng.initial_state(1024)
    assert state.history.shape[1] == INITIAL_HISTORY
    # 4 KiB a game whatever the cap (preallocating the cap took 3.9 GB at 10**6)
    assert state.history.nbytes + state.seen_keys.nbytes + state.seen_counts.nbytes <= 4 * 2**20


def test_history_grows_as_a_game_gets_longer_and_stays_consistent():
    eng = Engine(make_rules("historical_tablut", max_turns=None, repetition="ignore"))
    state = eng.initial_state(4)
    played = eng.play_random(state, np.random.default_rng(1), max_steps=300)
    assert (state.turn <= played).all()
    assert state.history.shape[1] >= int(state.turn.max()) + 1
    assert eng.audit(state) == []


def test_play_random_one_step_per_call_and_a_zero_seed():
    """``max_steps=1`` plays exactly one random legal move; a raw draw of 0 (a xorshift generator
    would stay at 0 and always pick the first legal move) is replaced by a fixed seed."""

    class ZeroBits:
        def random_raw(self, size=None):
            return 0 if size is None else np.zeros(size, dtype=np.uint64)

    class ZeroRng:
        bit_generator = ZeroBits()

    eng = Engine(make_rules("historical_tablut"))
    state, first = eng.initial_state(1), eng.initial_state(1)
    for _ in range(12):
        assert eng.play_random(state, ZeroRng(), 1).tolist() == [1]
        assert state.turn[0] == first.turn[0] + 1
        eng.step(first, [int(eng.legal_actions(first)[0])])
    assert not np.array_equal(state.board, first.board)   # not the first legal move every time
    assert eng.audit(state) == []


def test_one_game_rollout_draws_its_seed_as_a_batch_does():
    """A one-game rollout takes its seed as a scalar (the fast path); it plays what the first game
    of a batch plays with the same generator."""
    eng = Engine(make_rules("legacy_berserk"))
    one, two = eng.initial_state(1), eng.initial_state(2)
    for _ in range(3):
        assert (eng.play_random(one, np.random.default_rng(9), 40)[0]
                == eng.play_random(two, np.random.default_rng(9), 40)[0])
        assert (one.board[0] == two.board[0]).all() and one.turn[0] == two.turn[0]
    # to the end: the one game's history grows on the way (64 turns at first), its stream goes on
    rng_one, rng_two = np.random.default_rng(4), np.random.default_rng(4)
    assert eng.play_random(one, rng_one)[0] == eng.play_random(two, rng_two)[0]
    assert one.turn[0] > 64 and one.history_capacity > 64
    assert (one.board[0] == two.board[0]).all() and one.reason[0] == two.reason[0] != 0
    assert eng.audit(one) == []


def test_play_random_plays_games_to_their_end():
    """The in-kernel rollout ends every game (here by the move cap at the latest) and leaves a
    state that agrees with a recomputation from the boards."""
    eng = Engine(make_rules("legacy_berserk", max_turns=80))
    state = eng.initial_state(16)
    eng.play_random(state, np.random.default_rng(3))
    assert (state.reason != 0).all()
    assert eng.audit(state) == []


def test_rollout_grows_the_history_once_and_plays_the_same_games(monkeypatch):
    """A big batch's rollout makes room up front for the positions it can record (the move cap
    here) instead of doubling the history as games fill it; the games are the same either way,
    and a cap too big for the bound grows the history only as games need it."""
    from tafl_env.engine import core

    grows = []
    real_grow = State.grow_history
    monkeypatch.setattr(State, "grow_history",
                        lambda st, capacity: (grows.append(capacity), real_grow(st, capacity)))
    eng = Engine(make_rules("historical_tablut", max_turns=150))
    b = core.PREGROW_MIN_BATCH
    pregrown = eng.initial_state(b)
    played = eng.play_random(pregrown, np.random.default_rng(4))
    assert grows == [151] and pregrown.history.shape[1] == 256
    assert (pregrown.reason != 0).all()
    monkeypatch.setattr(core, "PREGROW_MIN_BATCH", 1 << 30)
    grows.clear()
    doubled = eng.initial_state(b)
    assert eng.play_random(doubled, np.random.default_rng(4)).tolist() == played.tolist()
    assert grows == [128, 256]   # stopped twice for room
    for name in ("board", "turn", "winner", "reason", "key"):
        assert (getattr(doubled, name) == getattr(pregrown, name)).all(), name
    assert (doubled.history[:, :256] == pregrown.history).all()
    assert eng.audit(pregrown) == []
    monkeypatch.undo()
    huge = Engine(make_rules("historical_tablut", max_turns=10**12))
    state = huge.initial_state(b)
    huge.play_random(state, np.random.default_rng(4), max_steps=10)
    assert state.history.shape[1] == INITIAL_HISTORY


def test_perft_refuses_what_cannot_finish_and_bounds_depth():
    g = Game("historical_tablut")
    with pytest.raises(InvalidOptionError, match="hours of work"):
        g.engine.perft(g.state, 9)
    with pytest.raises(InvalidOptionError, match="too deep"):
        g.engine.perft(g.state, 1000)


def test_cli_perft_refusal_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "tafl_env", "perft", "historical_tablut", "12"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _run_batch(variant: str, threads: int, seed: int) -> np.ndarray:
    from tafl_env.engine._jit import PARALLEL_MIN_BATCH

    eng = Engine(make_rules(variant), threads=threads)
    state = eng.initial_state(PARALLEL_MIN_BATCH)   # big enough for the threaded kernels
    assert eng._parallel(len(state)) == (threads > 1)
    rng = np.random.default_rng(seed)
    for _ in range(30):
        eng.step(state, np.where(state.done, 0, eng.random_actions(state, rng)))
    return state.board.copy()


@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_berserk"])
def test_threads_give_the_same_games_as_one_thread(variant):
    assert np.array_equal(_run_batch(variant, 1, 5), _run_batch(variant, 2, 5))


@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_berserk"])
def test_threaded_rollouts_and_masks_equal_one_thread(variant):
    from tafl_env.engine._jit import PARALLEL_MIN_BATCH

    runs = []
    for threads in (1, 2):
        eng = Engine(make_rules(variant), threads=threads)
        state = eng.initial_state(PARALLEL_MIN_BATCH + 3)   # ranges of unequal length
        mid = eng.play_random(state, np.random.default_rng(11), max_steps=25)
        masks = eng.legal_action_mask(state)
        played = eng.play_random(state, np.random.default_rng(12))
        runs.append((mid, masks, played, state.buffer.copy()))
    for one, two in zip(*runs):
        assert np.array_equal(one, two)
    assert runs[0][1].any() and runs[0][2].sum() > 0   # the rollouts and masks did something


def test_two_python_threads_may_step_at_once():
    results = {}

    def work(i):
        results[i] = _run_batch("historical_tablut", 2, i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert np.array_equal(results[i], _run_batch("historical_tablut", 1, i))


def _child(queue):
    queue.put(_run_batch("historical_tablut", 2, 7).sum())


def test_fork_after_a_threaded_kernel_ran():
    expected = _run_batch("historical_tablut", 2, 7).sum()   # the parent's thread pool ran
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue,))
    proc.start()
    proc.join(timeout=300)
    assert proc.exitcode == 0
    assert queue.get(timeout=5) == expected


def test_threads_setting_from_argument_and_environment(monkeypatch):
    rules = make_rules("legacy_ard_ri")
    assert Engine(rules).threads == 1
    monkeypatch.setenv("TAFL_THREADS", "2")
    assert Engine(rules).threads == 2
    monkeypatch.setenv("TAFL_THREADS", "two")
    with pytest.raises(ValueError, match="TAFL_THREADS"):
        Engine(rules)
    with pytest.raises(ValueError, match="threads"):
        Engine(rules, threads=0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_random_actions_are_legal_and_cover_every_legal_action(variant):
    eng = Engine(make_rules(variant))
    state = eng.initial_state(1)
    rng = np.random.default_rng(0)
    legal = set(np.flatnonzero(eng.legal_action_mask(state)[0]).tolist())
    drawn = {int(eng.random_actions(state, rng)[0]) for _ in range(40 * len(legal))}
    assert drawn == legal


def test_serial_kernels_run_without_reference_counting():
    """numba's ``_nrt=False`` target option (in effect, though not in numba's user documentation)
    keeps array reference counting out of the per-move path: if a numba release dropped or renamed
    it, the kernels would still work but count references again. Guard it: the kernels' options
    carry it, and a function built with them has no reference counting where the default build
    has some."""
    import numba

    from tafl_env.engine import _jit, batch

    assert batch.step.targetoptions.get("_nrt") is False

    def view_and_read(a):
        tail = a[1:]
        return tail[0]

    flags = {k: v for k, v in _jit.SERIAL_OPTIONS.items() if k != "cache"}
    arg = (numba.types.int64[::1],)
    plain = numba.njit(view_and_read)
    plain.compile(arg)
    built = numba.njit(**flags)(view_and_read)
    built.compile(arg)
    assert "NRT_" in "".join(plain.inspect_llvm().values())
    assert "NRT_" not in "".join(built.inspect_llvm().values())


def test_a_constant_argument_gets_no_build_of_its_own():
    """A call from compiled code with a constant argument (a search's row 0) is typed with the
    argument's plain type, so the callee is compiled once (numba would compile it for
    ``Literal[int](0)``, again for ``int64``, and each copy's callees likewise). The hook is numba's
    internal ``get_call_template``: if a release bypassed it, the kernels would still work and
    compile several times as long."""
    from tafl_env.engine import _jit, batch

    assert isinstance(batch.step, _jit._PlainArgumentsDispatcher)
    uncached = {k: v for k, v in _jit.SERIAL_OPTIONS.items() if k != "cache"}

    @_jit.njit(**uncached)
    def callee(row, x):
        return row * 10 + x

    @_jit.njit(**uncached)
    def caller(x):
        return callee(0, x) + callee(1, x) + callee(x, 2)

    assert caller(5) == 5 + 15 + 52
    assert [str(sig) for sig in callee.signatures] == ["(int64, int64)"]


def test_cached_kernels_are_stamped_with_the_sources_they_are_built_from():
    """A kernel inlines helpers from other files and bakes in their constants; numba's own stamp
    covers only the kernel's file, so an edit of a helper would leave stale kernels in the cache.
    The engine's locators add a hash of the kernel module's import closure (numba's internal
    locator hook: guard it), and only of that: an edit of core.py recompiles nothing."""
    from pathlib import Path

    from tafl_env.engine import _jit, batch

    locator = batch.step._cache._impl.locator
    assert type(locator).__name__.startswith("TaflEngine")
    assert locator.get_source_stamp()[1] == _jit.source_stamp(batch.__file__)

    engine_dir = Path(batch.__file__).resolve().parent
    closure = {p.name for p in _jit.import_closure(Path(batch.__file__).resolve())}
    assert {"batch.py", "captures.py", "movegen.py", "step.py", "tables.py", "turns.py", "_jit.py",
            "notation.py"} <= closure
    assert not closure & {"core.py", "audit.py", "compile_notice.py", "__init__.py", "aec.py", "vector.py"}
    assert _jit.source_stamp(engine_dir.parent / "aec.py") is not None      # in the package ...
    assert _jit.source_stamp(Path(pytest.__file__)) is None                  # ... pytest is not

    from agents.greedy import kernels as greedy, scoring as tables

    own = next(v for v in vars(greedy).values()            # a kernel: lean helpers are not cached
               if hasattr(v, "_cache") and v.py_func.__module__ == greedy.__name__
               and v.py_func.__qualname__ not in _jit._LEAN)
    stamp = own._cache._impl.locator.get_source_stamp()
    assert stamp[1] == _jit.source_stamp(greedy.__file__)
    agent_closure = _jit.import_closure(Path(greedy.__file__).resolve())
    assert Path(tables.__file__).resolve() in agent_closure                 # its own package's helpers
    assert (engine_dir / "step.py") in agent_closure and (engine_dir / "core.py") not in agent_closure


def test_a_cache_index_naming_a_moved_class_is_obsolete_not_an_error(tmp_path):
    """An index pickles its kernels' argument types; one that names a class since moved must
    be rebuilt, not raise ModuleNotFoundError at the next call (numba's internal hook: guard it)."""
    import pickle

    from numba.core import caching

    from tafl_env.engine import _jit

    index = caching.IndexDataCacheFile(str(tmp_path), "kernel-1.py311", ("stamp",))
    # a pickle of the global no_such_module_moved.Nope, as a moved class leaves in an index
    body = b"\x80\x05\x8c\x14no_such_module_moved\x94\x8c\x04Nope\x94\x93\x94."
    with open(index._index_path, "wb") as f:
        pickle.dump(index._version, f, protocol=-1)
        f.write(body)
    with pytest.raises(ImportError):
        _jit._numba_load_index(index)               # numba's own reader fails on it
    assert index._load_index() == {}
    index.save("key", b"data")                      # and it is rewritten on the next save
    assert index._load_index() == {"key": index._data_name(1)}


def test_a_stamp_follows_an_edit_of_an_imported_file(tmp_path, monkeypatch):
    """The stamp is a hash of the closure's bytes: editing one file of it changes the stamp."""
    from pathlib import Path

    from tafl_env.engine import _jit, batch

    path = Path(batch.__file__).resolve()
    before = _jit.source_stamp(path)
    captures = path.parent / "captures.py"
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes",
                        lambda self: real(self) + (b"# edited" if self == captures else b""))
    assert _jit.source_stamp(path) != before


def test_the_compile_notice_prints_once_and_reports_slow_builds():
    import io

    from tafl_env.engine.compile_notice import NOTICE, CompileNotice

    out = io.StringIO()
    notice = CompileNotice(out, is_ours=lambda d: True)
    notice.started("k1"); notice.started("helper"); notice.finished("helper", 0.5); notice.finished("k1", 3.0)
    notice.started("k2"); notice.finished("k2", 0.2)    # fast: no line of its own
    lines = out.getvalue().splitlines()
    assert lines == [NOTICE, "tafl-env: compiled k1 in 3.0 s"] and notice.built == 3 and notice.depth == 0


def test_the_compile_notice_hears_numba_builds():
    import io

    from numba.core import event

    from tafl_env.engine.compile_notice import NOTICE, CompileNotice

    def unique_function(x):
        return x + 1

    out = io.StringIO()
    with event.install_listener("numba:compile", CompileNotice(out, is_ours=lambda d: True)):
        assert numba.njit(unique_function)(1) == 2
    assert out.getvalue().splitlines()[0] == NOTICE


def test_the_compile_notice_is_registered_with_numba_unless_switched_off():
    code = "from tafl_env.engine import _jit; print(_jit.COMPILE_NOTICE is not None)"
    for value, expected in (("1", "True"), ("0", "False")):
        env = dict(os.environ, TAFL_COMPILE_NOTICE=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected


@pytest.mark.parametrize("call, error, words", [
    (lambda e, s: e.initial_state(True), TypeError, "batch_size must be an int"),
    (lambda e, s: e.initial_state(2.0), TypeError, "batch_size must be an int"),
    (lambda e, s: e.initial_state(10**20), ValueError, "batch_size must be from 1 to"),
    (lambda e, s: e.initial_state(0), ValueError, "batch_size must be from 1 to"),
    (lambda e, s: e.check_legal(s, [441.5]), tafl_env.errors.IllegalMoveError, "integers"),
    (lambda e, s: e.check_legal(s, [True]), tafl_env.errors.IllegalMoveError, "integers"),
    (lambda e, s: e.step(s, [1.0]), tafl_env.errors.IllegalMoveError, "integers"),
    (lambda e, s: e.decode(-1), IndexError, "action -1 is out of range"),
    (lambda e, s: e.decode(10**6), IndexError, "out of range"),
    (lambda e, s: e.legal_actions(s, game=5), ValueError, "game must be from 0 to 0, got 5"),
    (lambda e, s: e.legal_actions(s, game=True), TypeError, "game must be an int"),
    (lambda e, s: e.play_random(s, np.random.default_rng(0), max_steps=-1), ValueError, "max_steps"),
    (lambda e, s: e.perft(s, 2.5), TypeError, "depth must be an int"),
])
def test_engine_rejects_bad_input_by_name_and_changes_nothing(call, error, words):
    eng = Engine(make_rules("historical_tablut"))
    state = eng.initial_state(1)
    before = state.copy()
    with pytest.raises(error, match=words):
        call(eng, state)
    for name in ("board", "turn", "key", "moves", "history"):
        assert np.array_equal(getattr(state, name), getattr(before, name))


def test_an_illegal_action_in_a_batch_leaves_every_game_untouched():
    eng = Engine(make_rules("legacy_berserk"))
    state = eng.initial_state(3)
    actions = eng.random_actions(state, np.random.default_rng(0))
    actions[2] = 0                      # a1 north: no piece there
    before = state.copy()
    with pytest.raises(tafl_env.errors.IllegalMoveError, match="game 2: action 0"):
        eng.step(state, actions)
    assert np.array_equal(state.board, before.board) and np.array_equal(state.turn, before.turn)


def test_bit_intrinsics_count_and_find_bits_like_python():
    """popcount and lowest_bit compile to LLVM's ctpop/cttz (agents and move generation rely on
    them for every move): they agree with Python's bit arithmetic on random ints below 2**62."""
    import numba

    from tafl_env.engine.movegen import lowest_bit, popcount

    @numba.njit
    def both(xs, counts, lows):
        for i in range(len(xs)):
            counts[i] = popcount(xs[i])
            lows[i] = lowest_bit(xs[i])

    xs = np.random.default_rng(3).integers(1, 2**62, size=2000, dtype=np.int64)
    xs[:64] = 1 << np.arange(62).repeat(2)[:64]
    counts, lows = np.empty_like(xs), np.empty_like(xs)
    both(xs, counts, lows)
    assert counts.tolist() == [bin(int(x)).count("1") for x in xs]
    assert lows.tolist() == [(int(x) & -int(x)).bit_length() - 1 for x in xs]


def test_bits_through_highest_fills_below_the_last_bit():
    from tafl_env.engine.movegen import bits_through_highest

    xs = [0, 1, 2, 3, 0b1010000, (1 << 18) | 5, (1 << 31), (1 << 32) - 1]
    xs += np.random.default_rng(4).integers(0, 2**32, size=500).tolist()
    assert [bits_through_highest(np.int64(x)) for x in xs] == [(1 << int(x).bit_length()) - 1 for x in xs]


@pytest.mark.parametrize("variant", VARIANTS)
def test_masks_fill_reused_buffers_exactly(variant):
    """Masks are written whole (8-byte stores of unpacked bits): a reused ``out`` full of old
    masks, and a wider ``write_masks`` buffer full of ones, end up holding exactly the legal
    actions, with the buffer's extra columns and rows untouched."""
    eng = Engine(make_rules(variant))
    state = eng.initial_state(32)
    rng = np.random.default_rng(5)
    out = np.ones((32, eng.num_actions), dtype=np.int8)
    for _ in range(12):
        legal = np.zeros((32, eng.num_actions), dtype=np.int8)
        for g in range(32):
            acts = eng.legal_actions(state, g)
            legal[g, acts] = 1
        assert eng.legal_action_mask(state, out=out) is out
        assert np.array_equal(out, legal)
        wide = np.ones((70, eng.num_actions + 5), dtype=np.int8)
        eng.write_masks(state, wide, np.arange(32) * 2)
        assert np.array_equal(wide[::2][:32, : eng.num_actions], legal)
        assert (wide[1::2] == 1).all() and (wide[:, eng.num_actions:] == 1).all()
        eng.step(state, np.where(state.done, 0, eng.random_actions(state, rng)))


def test_mask_buffers_of_the_wrong_kind_are_refused_by_name():
    eng = Engine(make_rules("legacy_ard_ri"))
    state = eng.initial_state(2)
    for bad in (np.zeros((2, eng.num_actions)), np.zeros((2, eng.num_actions + 1), np.int8),
                np.zeros((eng.num_actions, 2), np.int8).T, [[0] * eng.num_actions] * 2):
        with pytest.raises(ValueError, match="out must be"):
            eng.legal_action_mask(state, out=bad)
    with pytest.raises(ValueError, match="C-contiguous"):
        eng.write_masks(state, np.zeros((eng.num_actions + 2, 4), np.int8).T, [0, 1])


# --- one buffer per State and per table set (engine/layout.py) ---------------------------------

_ENGINE_BUILD = numba.njit(_nrt=False, nogil=True, error_model="numpy")   # as engine kernels, uncached


@_ENGINE_BUILD
def _probe(views, out):
    """Size, rank, shape, first and last element of every array of ``views``, as the kernels see them."""
    i = 0
    for arr in literal_unroll(views):
        flat = arr.reshape(arr.size)
        out[i, 0], out[i, 1] = arr.size, arr.ndim
        for k in range(arr.ndim):
            out[i, 2 + k] = arr.shape[k]
        if arr.size:
            out[i, 6], out[i, 7] = np.int64(flat[0]), np.int64(flat[arr.size - 1])
        i += 1


@_ENGINE_BUILD
def _probe_state(buf, out):
    _probe(state_views(buf), out)


@_ENGINE_BUILD
def _probe_tables(buf, out):
    _probe(table_views(buf), out)


def _expected(arrays) -> np.ndarray:
    out = np.zeros((len(arrays), 8), dtype=np.int64)
    for i, arr in enumerate(arrays):
        out[i, :2] = arr.size, arr.ndim
        out[i, 2:2 + arr.ndim] = arr.shape
        if arr.size:
            flat = arr.reshape(-1).astype(np.int64)
            out[i, 6:] = flat[0], flat[-1]
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_compiled_views_are_the_python_views(variant):
    """The kernels' unpacking of a State buffer and of the table buffer (layout.state_views,
    table_views) sees exactly the arrays Python sees: every field's shape, and its first and last
    element over a buffer of random bytes."""
    eng = Engine(make_rules(variant))
    st = eng.initial_state(3)
    st.grow_history(300)   # sizes that differ per field
    body = st.buffer[8 * STATE_HEADER:]   # the fields, after the header
    body[:] = np.random.default_rng(0).integers(0, 256, body.size, dtype=np.uint8)
    out = np.zeros((18, 8), dtype=np.int64)
    _probe_state(st.buffer, out)
    assert np.array_equal(out, _expected(st.arrays()))
    out = np.zeros((10, 8), dtype=np.int64)
    _probe_tables(eng.packed_tables, out)
    assert np.array_equal(out, _expected(tuple(eng.kernel_tables)))
    original = eng.tables.kernel_tables()
    assert all(np.array_equal(a, b) for a, b in zip(eng.kernel_tables, original))


def test_state_arrays_share_one_buffer_through_copy_take_grow_and_pickle():
    eng = Engine(make_rules("legacy_berserk"))
    st = eng.initial_state(4, JUMPERS, "attacker")
    rng = np.random.default_rng(1)
    eng.step(st, eng.random_actions(st, rng))
    for other in (st.copy(), st.take(slice(0, 4)), st.take(np.arange(4)),
                  pickle.loads(pickle.dumps(st)), State.concatenate([st.take([0, 1]), st.take([2, 3])])):
        assert all(a.base is other.buffer or a.base is other.buffer.base for a in other.arrays())
        assert all(np.array_equal(a, b) for a, b in zip(other.arrays(), st.arrays()))
        assert not np.shares_memory(other.buffer, st.buffer)
        eng.step(other, eng.random_actions(other, rng))   # steps through the buffer ...
        assert eng.audit(other) == []                       # ... and its views agree
    before = st.board.copy()
    st.grow_history(1000)
    st.grow_slots(st.pieces.shape[2] + 3)
    assert np.array_equal(st.board, before) and eng.audit(st) == []
    assert (st.pieces[:, :, -3:] == eng.s).all()
    eng.play_random(st, rng, 50)
    assert eng.audit(st) == []
    with pytest.raises(AttributeError, match="views into one buffer"):
        st.board = before


# --- the step inlined, the encirclement shortcut ---------------------------------------------------

def test_the_step_is_inlined_by_llvm_into_its_callers():
    """``forceinline`` (numba's target option, marked ``alwaysinline`` for LLVM) keeps the step's
    ~250 words of arguments off the per-move path: a caller's machine code has no call to it. If a
    numba release dropped the option, the kernels would still work, a third slower."""
    from tafl_env.engine import step
    from tafl_env.engine.rows import step_row

    assert step.step_game.targetoptions.get("forceinline") is True

    @_ENGINE_BUILD
    def one_step(arrays, tables, a, info, scratch):
        step_row(arrays, tables, 0, a, info, scratch)

    eng = Engine(make_rules("historical_tablut"))
    st = eng.initial_state(1)
    work = np.zeros(64, dtype=np.int64)
    one_step(st.arrays(), eng.kernel_tables, int(eng.legal_actions(st)[0]), work[:9], work)
    assert st.turn[0] == 1
    (sig,) = one_step.signatures
    # A call would load the step's address (movabsq) and define its body; only the symbol of
    # its numba environment may remain.
    mentions = [line for line in one_step.inspect_asm(sig).splitlines()
                if "step_game" in line and "NumbaEnv" not in line]
    assert mentions == []


def test_lean_helpers_are_linked_once_into_the_kernel_that_calls_them():
    """A helper (``helper``, ``inlined``) is built lean: its library holds its own code only, not
    cached, and a kernel that calls it links the whole tree below it (numba's internal
    CPUCodeLibrary.finalize: guard it). The kernel's machine code then holds the inlined step and
    runs; the helper, called from Python, still works through its callees' own code."""
    from numba.core import codegen as numba_codegen

    from tafl_env.engine import _jit, rows, step

    assert numba_codegen.CPUCodeLibrary.finalize is _jit._finalize
    assert {"step_game", "copy_full"} <= _jit._LEAN and not _jit._LEAN & _jit._CALLED_FROM_PYTHON
    assert step.step_game._cache.__class__.__name__ == "NullCache"       # not cached on disk
    with pytest.raises(RuntimeError, match="share this name"):
        _jit.kernel(step.step_game.py_func)

    @_jit.helper
    def lean_steps(arrays, tables, a, info, scratch):
        rows.step_row(arrays, tables, 0, a, info, scratch)
        return a + 1

    @_jit.njit(_nrt=False, nogil=True)          # a kernel's build, not cached: it is a closure
    def calls_lean(arrays, tables, a, info, scratch):
        return lean_steps(arrays, tables, a, info, scratch)

    eng = Engine(make_rules("historical_tablut"))
    work = np.zeros(64, dtype=np.int64)
    for fn in (calls_lean, lean_steps):         # a kernel, then the lean helper from Python
        st = eng.initial_state(1)
        fn(st.arrays(), eng.kernel_tables, int(eng.legal_actions(st)[0]), work[:9], work)
        assert st.turn[0] == 1 and eng.audit(st) == []
    (sig,) = calls_lean.signatures
    lib = calls_lean.overloads[sig].library
    assert not getattr(lib, "_tafl_lean", False)
    assert getattr(lean_steps.overloads[lean_steps.signatures[0]].library, "_tafl_lean", False)
    defined = {f.name for f in lib._final_module.functions if not f.is_declaration}
    assert any("lean_steps" in name for name in defined)                   # linked in, once


def _encircled_by_flood(occ: np.ndarray, n: int) -> bool:
    """§3.7 by breadth-first search over squares: no defender reachable from an open edge square."""
    attacker = lambda r, f: (int(occ[0, r]) >> f) & 1
    defender = lambda r, f: (int(occ[1, r]) >> f) & 1
    todo = [(r, f) for r in range(n) for f in range(n)
            if (r in (0, n - 1) or f in (0, n - 1)) and not attacker(r, f)]
    seen = set(todo)
    while todo:
        r, f = todo.pop()
        if defender(r, f):
            return False
        for r2, f2 in ((r + 1, f), (r - 1, f), (r, f + 1), (r, f - 1)):
            if 0 <= r2 < n and 0 <= f2 < n and (r2, f2) not in seen and not attacker(r2, f2):
                seen.add((r2, f2))
                todo.append((r2, f2))
    return True


@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_tawlbwrdd", "legacy_alea_evangelii"])
def test_encirclement_shortcut_agrees_with_a_flood_fill(variant):
    """The rank shortcut (a defender with a clear rank to the edge) and the compiled flood fill
    judge random boards as a square-by-square search does, rings and open boards alike."""
    from tafl_env.engine.captures import encircled

    eng = Engine(make_rules(variant, encirclement=True))
    n = eng.n
    rng = np.random.default_rng(7)
    work = np.zeros((2, 64), dtype=np.int64)
    seen = {True: 0, False: 0}
    for trial in range(400):
        cells = rng.choice(3, size=(n, n), p=[0.55, 0.3, 0.15]) if trial % 2 else np.zeros((n, n), int)
        if trial % 2 == 0:   # a ring of attackers around defenders, sometimes with a gap
            lo, hi = sorted(rng.choice(np.arange(1, n - 1), size=2, replace=False))
            cells[lo:hi + 1, [lo, hi]] = 1
            cells[[lo, hi], lo:hi + 1] = 1
            cells[lo + 1:hi, lo + 1:hi] = np.where(rng.random((hi - lo - 1,) * 2) < 0.3, 2, 0)
            if rng.random() < 0.3:
                cells[lo, rng.integers(lo, hi + 1)] = 0
        occ = np.zeros((1, 2, n), dtype=np.uint32)
        for side, code in ((0, 1), (1, 2)):
            occ[0, side] = ((cells == code) * (1 << np.arange(n))).sum(axis=1)
        want = _encircled_by_flood(occ[0], n)
        seen[want] += 1
        assert encircled(occ, eng.kernel_tables, 0, work[0], work[1]) == want, (trial, cells)
    assert seen[True] > 20 and seen[False] > 20
