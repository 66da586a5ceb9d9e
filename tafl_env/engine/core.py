"""The engine: the rules of one ``RuleSet`` applied to batches of games by compiled kernels.

An :class:`Engine` holds the variant's tables; all game state lives in a
:class:`~tafl_env.engine.state.State` of B games (numpy arrays shaped ``(B, ...)``), which the
kernels read and update in place. A single game is a batch of one, and costs a few microseconds a
move; a batch of thousands runs in one kernel call, optionally on several threads.

Where each rule lives (RULES.md §3-§6):

- :mod:`.movegen` — slides, jumps, legal masks, counts and random choice;
- :mod:`.captures` — custodial capture, the king's capture, encirclement, berserk continuations;
- :mod:`.turns` — the turn's end: repetition, no legal move, the move cap;
- :mod:`.step` — one move from start to end; :mod:`.batch` — the kernels called from Python;
- :mod:`.search` — perft as a compiled depth-first search;
- :mod:`.positions` and :mod:`.audit` — boards in and out, and the consistency check;
- :mod:`.layout` — how a State and the tables each sit in one buffer (one kernel argument each).

The kernels read the rules only through :meth:`Tables.kernel_tables`; this class checks what
callers hand in, turns kernel answers into errors that name what was wrong, and never leaves a
half-applied step.
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import IllegalMoveError
from ..memory import fits
from ..notation import EMPTY, format_position, square_name
from ..rules import SIDES, RuleSet, side_index
from . import _jit, search
from . import batch as kernels
from .audit import audit as _audit
from .layout import pack_tables
from .positions import full_key, line_bits, occupancy, parse_board, piece_slots
from .state import NO_WINNER, RUNNING, State
from .step import (INFO_CONTINUATION, INFO_JUMP, INFO_TURN_ENDED, INFO_WIDTH, NEED_ROOM, OK,
                   SCRATCH)
from .tables import SIDE_OF, Tables

INITIAL_HISTORY = 64
"""Turns of history a new game has room for; the history doubles as a game gets longer."""

_NO_LIMIT = np.iinfo(np.int64).max

ROLLOUT_PREGROW_BYTES = 1 << 28
"""How much history (and repetition table) a rollout may allocate up front, in bytes for the
whole batch (256 MiB; 32 bytes per game and position). A rollout to the end of a big batch grows
the history to the move cap anyway (some game gets there); growing it once before the kernel
runs, instead of stopping every game that fills it and rebuilding the batch's repetition tables
at each doubling, made two-thread Tablut rollouts of 4096 games about 15% faster. Beyond the
bound (huge caps, huge batches) the history doubles as games need it."""

PREGROW_MIN_BATCH = 64
"""Smaller batches grow their history as they go: for them the rebuilds cost less than working
out the room up front (a few µs, against a one-game random step of about 4 µs)."""

MAX_BATCH = 1 << 24
"""Largest batch :meth:`Engine.initial_state` makes (about 16.8M games)."""

CHECKED_BATCH = 4096
"""Batches bigger than this are checked against the memory available before they are made."""

BATCH_MEMORY_FACTOR = 3
"""A batch in use takes about this many times its state: the state, a fresh copy to restart
games from, and a step's work arrays and masks."""


class StepInfo:
    """What a batched step did, per game of the batch.

    ``captured`` is (B, 6): the knight-jumped square, the custodial captures north, east, south,
    west of the landing square, then the king (RULES.md §6.7 order), ``S`` where nothing fell.
    ``jump`` marks jumps; ``continuation`` marks moves made while a chain was pending;
    ``turn_ended`` is False where a berserk chain is now pending. Finished games: nothing.
    """

    __slots__ = ("_info",)

    def __init__(self, info: np.ndarray):
        self._info = info

    @property
    def captured(self) -> np.ndarray:
        return self._info[:, :6]

    @property
    def jump(self) -> np.ndarray:
        return self._info[:, INFO_JUMP] != 0

    @property
    def continuation(self) -> np.ndarray:
        return self._info[:, INFO_CONTINUATION] != 0

    @property
    def turn_ended(self) -> np.ndarray:
        return self._info[:, INFO_TURN_ENDED] != 0


def _check_int(value, name: str, low: int, high: int | None = None) -> int:
    """``value`` as an int in [low, high]; anything else (bools, floats, strings) is an error."""
    if type(value) is int and value >= low and (high is None or value <= high):
        return value   # the common case, checked first (the single-game path asks every move)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {span}, got {value}")
    return int(value)


def _describe_array(x) -> str:
    if isinstance(x, np.ndarray):
        layout = "C-contiguous" if x.flags.c_contiguous else "not C-contiguous"
        return f"shape {x.shape} {x.dtype}, {layout}{'' if x.flags.writeable else ', read-only'}"
    return type(x).__name__


def _actions_array(actions, b: int) -> np.ndarray:
    """One integer action per game as an intp array; bools and floats are refused."""
    if (type(actions) is np.ndarray and actions.dtype == np.intp and actions.shape == (b,)
            and actions.flags.c_contiguous):
        return actions   # what random_actions and the front ends pass: no conversion
    a = np.asarray(actions)
    if a.shape != (b,) or a.dtype.kind not in "iu":
        raise IllegalMoveError(
            f"actions must be {b} integers (one per game), got shape {a.shape} of {a.dtype}")
    # contiguous: a strided view (a column of a table) would compile the step kernel a second time
    return np.ascontiguousarray(a, dtype=np.intp)


class Engine:
    """The rules of one ``RuleSet``, applied to batches of games.

    ``threads`` (default: ``$TAFL_THREADS``, else 1) is how many threads batched kernels may use
    for batches of 2048 games or more.

    >>> from tafl_env.rules import make_rules
    >>> eng = Engine(make_rules("historical_tablut"))
    >>> st = eng.initial_state(batch_size=3)
    >>> eng.count_legal(st).tolist()
    [80, 80, 80]
    """

    def __init__(self, rules: RuleSet, threads: int | None = None):
        self.rules = rules
        self.tables = t = Tables(rules)
        # One buffer for all tables (what kernels called from Python take: ``packed_tables``)
        # and a KernelTables of views into it (what the search agents pass on).
        self.packed_tables, self.kernel_tables = pack_tables(t.kernel_tables())
        self.n, self.s = t.n, t.s
        self.num_actions = t.num_actions
        self.pass_action = t.pass_action
        self.threads = threads
        board, king = self.parse_board(rules.layout)
        start_slots = piece_slots(t, board)
        self._slots = start_slots.shape[1]
        # The start position's derived arrays, built once: a reset only copies them.
        self._start = (board, king, line_bits(t, board[None])[0], occupancy(t, board), start_slots,
                       full_key(t, np.stack([board, board]), np.array([0, 1])))
        self._cache: dict = {}  # helper tables built on first use (observation encoders)
        self._fresh: dict = {}  # (batch size, side) -> a fresh start State to copy
        # The serial step's work array. Kernels release the GIL, so two threads stepping with
        # one engine would share it: each thread gets its own.
        self._local = threading.local()
        self._aranges: dict[int, np.ndarray] = {}

    def _step_work(self, b: int) -> tuple:
        """This thread's work of a serial step of ``b`` games: ``(work, packed_tables)``, work
        holding the action slots and the step's scratch (kept between calls: at B = 1 allocating
        it took a tenth of a step; per thread, since kernels release the GIL)."""
        work = getattr(self._local, "step", None)
        if work is None or len(work[0]) != b + SCRATCH:
            work = self._local.step = (np.empty(b + SCRATCH, dtype=np.int64), self.packed_tables)
        return work

    def _rollout_work(self) -> np.ndarray:
        """This thread's work array of a serial rollout: a step's info, then its scratch."""
        work = getattr(self._local, "rollout", None)
        if work is None:
            work = self._local.rollout = np.empty(INFO_WIDTH + SCRATCH, dtype=np.int64)
        return work

    def _one_game_rollout(self) -> tuple:
        """This thread's ``(seed, work)`` of a one-game rollout: a (1,) array for the seed and a
        rollout's work array, fetched in one lookup."""
        one = getattr(self._local, "one_game", None)
        if one is None:
            one = self._local.one_game = (np.zeros(1, dtype=np.uint64), self._rollout_work())
        return one

    @property
    def threads(self) -> int:
        """Threads that batched kernels may use (batches of 2048 games or more)."""
        return self._threads

    @threads.setter
    def threads(self, value: int | None) -> None:
        self._threads = _jit.threads_setting(value)

    def __getstate__(self):
        # Tables are rebuilt from the rules: a pickled engine carries only its rules.
        return {"rules": self.rules, "threads": self._threads}

    def __setstate__(self, state):
        self.__init__(state["rules"], state["threads"])

    # --- positions ---------------------------------------------------------------------------

    def parse_board(self, position: str) -> tuple[np.ndarray, int]:
        """Position string → (board with sentinel, king square); RULES.md §6.6 checks included."""
        return parse_board(self.tables, position)

    def initial_state(self, batch_size: int = 1, position: str | None = None,
                      to_move: str | int | None = None) -> State:
        """B fresh games from the variant's start, or from ``position`` (a fresh ``Q0``)."""
        b = _check_int(batch_size, "batch_size", 1, MAX_BATCH)
        if b > CHECKED_BATCH:    # refused before it is allocated, not a MemoryError halfway
            fits(b * BATCH_MEMORY_FACTOR * self.initial_state(1, position, to_move).buffer.nbytes,
                 f"a batch of {b} {self.rules.name} games")
        side = self.rules.first_side if to_move is None else side_index(to_move)
        fresh_key = (b, side) if position is None and b <= 64 else None
        if fresh_key in self._fresh:   # small fresh batches are copied (a reset every game at B = 1)
            return self._fresh[fresh_key].copy()
        if position is None:
            board, king, lines, occ, pieces, keys = self._start
            key = keys[side]
        else:
            board, king = self.parse_board(position)
            lines, occ = line_bits(self.tables, board[None])[0], occupancy(self.tables, board)
            pieces = piece_slots(self.tables, board, self._slots)
            key = full_key(self.tables, board[None], np.array([side]))[0]
        st = State(
            board=np.tile(board, (b, 1)),
            to_move=np.full(b, side, dtype=np.int8),
            start_side=np.full(b, side, dtype=np.int8),
            king_sq=np.full(b, king, dtype=np.intp),
            chain=np.full(b, -1, dtype=np.intp),
            turn=np.zeros(b, dtype=np.int32),
            key=np.zeros(b, dtype=np.uint64),
            history=np.zeros((b, INITIAL_HISTORY), dtype=np.uint64),
            last_irreversible=np.zeros(b, dtype=np.int32),
            seen_keys=np.zeros((b, 2 * INITIAL_HISTORY), dtype=np.uint64),
            seen_counts=np.zeros((b, 2 * INITIAL_HISTORY), dtype=np.int32),
            repeats=np.ones(b, dtype=np.int16),
            lines=np.tile(lines, (b, 1)),
            occupancy=np.tile(occ, (b, 1, 1)),
            pieces=np.tile(pieces, (b, 1, 1)),
            moves=np.zeros((b, pieces.shape[1], 4), dtype=np.uint32),
            winner=np.full(b, NO_WINNER, dtype=np.int8),
            reason=np.zeros(b, dtype=np.int8),
        )
        st.key[:] = key
        st.history[:, 0] = st.key
        kernels.start_games(st.buffer, self.packed_tables)
        if fresh_key is not None:
            self._fresh[fresh_key] = st.copy()
        return st

    def full_key(self, board: np.ndarray, to_move: np.ndarray) -> np.ndarray:
        """Zobrist key of board + side to move, computed from scratch (the step updates it)."""
        return full_key(self.tables, board, to_move)

    def audit(self, state: State) -> list[str]:
        """Recompute everything the engine keeps incrementally and list any disagreement
        (empty: consistent); see :func:`tafl_env.engine.audit.audit`."""
        return _audit(self, state)

    def repetition_count(self, state: State) -> np.ndarray:
        """(B,) how often the current position has occurred so far (1 = first time).

        Counts recorded whole-turn positions equal to the current one since the last capture;
        inside a berserk chain the position of the chain's start is counted."""
        return state.repeats.astype(np.int64)

    def position(self, state: State, game: int = 0) -> str:
        return format_position(state.board[self._game_index(state, game)], self.n)

    def _game_index(self, state: State, game) -> int:
        return _check_int(game, "game", 0, len(state) - 1) if len(state) else _check_int(game, "game", 0, -1)

    # --- legal moves -------------------------------------------------------------------------

    @property
    def mask_width(self) -> int:
        """Row width a buffer for :meth:`write_masks` needs: ``num_actions``."""
        return self.num_actions

    def legal_action_mask(self, state: State, out: np.ndarray | None = None) -> np.ndarray:
        """(B, num_actions) int8 0/1: exactly the legal actions (all 0 for finished games).

        ``out``, a C-contiguous (B, num_actions) int8 array, receives the masks instead of a new
        array (a loop that asks every step saves allocating, and first touching, its pages)."""
        b = len(state)
        if out is None:
            out = np.empty((b, self.num_actions), dtype=np.int8)
        elif not (isinstance(out, np.ndarray) and out.dtype == np.int8 and out.flags.c_contiguous
                  and out.flags.writeable and out.shape == (b, self.num_actions)):
            raise ValueError(f"out must be a writeable C-contiguous ({b}, {self.num_actions}) int8 "
                             f"array, got {_describe_array(out)}")
        self._masks(state, out, self._rows(b))
        return out

    def write_masks(self, state: State, buffer: np.ndarray, rows: np.ndarray) -> None:
        """Write game g's legal mask into row ``rows[g]`` of ``buffer``, a C-contiguous
        (R, >= num_actions) int8 array: its columns ``0 .. num_actions-1`` are overwritten, the
        rest are left alone (vector envs write straight into their buffers)."""
        rows = np.asarray(rows, dtype=np.intp)
        if not (isinstance(buffer, np.ndarray) and buffer.dtype == np.int8 and buffer.ndim == 2
                and buffer.flags.c_contiguous and buffer.flags.writeable):
            raise ValueError(f"write_masks needs a writeable C-contiguous 2-d int8 buffer, got "
                             f"{_describe_array(buffer)}")
        if rows.shape != (len(state),) or buffer.shape[1] < self.num_actions:
            raise ValueError(f"write_masks needs {len(state)} rows and a (R, >= {self.num_actions}) buffer")
        if len(rows) and (rows.min() < 0 or rows.max() >= len(buffer)):
            raise IndexError(f"write_masks rows must lie in 0..{len(buffer) - 1}")
        self._masks(state, buffer, rows)

    def _rows(self, b: int) -> np.ndarray:
        rows = self._aranges.get(b)
        if rows is None:
            rows = np.arange(b)
            if b <= 64:   # the single-game path and small searches call this every move
                self._aranges[b] = rows
        return rows

    def _parallel(self, b: int) -> bool:
        """Whether a batch of ``b`` games is spread over threads."""
        return self._threads > 1 and b >= _jit.PARALLEL_MIN_BATCH

    def _masks(self, state: State, out: np.ndarray, rows: np.ndarray) -> None:
        b, buf, tables = len(state), state.buffer, self.packed_tables
        if self._parallel(b):
            _jit.run_threaded(lambda lo, hi: kernels.masks(buf, out, rows, tables, lo, hi),
                              self._threads, b)
        else:
            kernels.masks(buf, out, rows, tables, 0, b)

    def count_legal(self, state: State) -> np.ndarray:
        """(B,) number of legal actions (pass included)."""
        out = np.empty(len(state), dtype=np.int64)
        kernels.counts(state.buffer, out)
        return out

    def legal_actions(self, state: State, game: int = 0) -> np.ndarray:
        """The legal action ids of one game, ascending."""
        g = self._game_index(state, game)
        return np.flatnonzero(self.legal_action_mask(state.take(slice(g, g + 1)))[0])

    def random_actions(self, state: State, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal action per game (−1 for finished games)."""
        out = np.empty(len(state), dtype=np.intp)
        kernels.random_actions(state.buffer, rng.random(len(state)), out, self.packed_tables)
        return out

    def check_legal(self, state: State, actions) -> np.ndarray:
        """(B,) bool: the action is legal (finished games: never)."""
        a = _actions_array(actions, len(state))
        out = np.empty(len(state), dtype=np.bool_)
        kernels.legal(state.buffer, a, out, self.packed_tables)
        return out

    # --- decoding ----------------------------------------------------------------------------

    def decode(self, actions):
        """actions → (origin, direction, distance, target) arrays; pass decodes as action 0.
        Ids outside ``0 .. num_actions-1`` raise ``IndexError``."""
        a = np.asarray(actions)
        if a.dtype.kind not in "iu":
            raise TypeError(f"actions must be integers, got {a.dtype}")
        if a.size and (a.min() < 0 or a.max() >= self.num_actions):
            bad = a[(a < 0) | (a >= self.num_actions)].ravel()[0]
            raise IndexError(f"action {int(bad)} is out of range 0..{self.num_actions - 1}")
        info = self.tables.action_info.take(a.astype(np.intp), axis=0)
        return info[..., 0], info[..., 1], info[..., 2], info[..., 3]

    def encode(self, origin: int, target: int) -> int:
        """The action moving the piece on ``origin`` to ``target`` (a straight line)."""
        n = self.n
        origin = _check_int(origin, "origin", 0, self.s - 1)
        target = _check_int(target, "target", 0, self.s - 1)
        dr, df = target // n - origin // n, target % n - origin % n
        if (dr == 0) == (df == 0):
            raise IllegalMoveError(
                f"{square_name(origin, n)}-{square_name(target, n)} is not a straight orthogonal move")
        d = (0 if dr > 0 else 2) if dr else (1 if df > 0 else 3)
        return (origin * 4 + d) * (n - 1) + abs(dr or df) - 1

    def explain_illegal(self, state: State, game: int, action: int) -> str:
        """Why ``action`` is not legal in game ``game`` (for error messages)."""
        n = self.n
        if state.reason[game] != RUNNING:
            return "the game is over"
        if not 0 <= action < self.num_actions:
            return f"action {action} is out of range 0..{self.num_actions - 1}"
        if action == self.pass_action:
            return "pass is legal only to end a berserk chain"
        origin, _, _, target = (int(v[0]) for v in self.decode(np.array([action])))
        piece = int(state.board[game, origin])
        side = SIDES[state.to_move[game]]
        where = f"{square_name(origin, n)}"
        if target >= self.s:
            return f"the move leaves the board from {where}"
        what = f"{where}-{square_name(target, n)}"
        if state.chain[game] >= 0 and origin != state.chain[game]:
            return (f"{what}: a berserk chain is pending; only the piece on "
                    f"{square_name(int(state.chain[game]), n)} may move (or pass)")
        if piece == EMPTY:
            return f"{what}: there is no piece on {where}"
        if SIDE_OF[piece] != state.to_move[game]:
            return f"{what}: the piece on {where} is not the {side}'s"
        if state.chain[game] >= 0:
            return f"{what}: a berserk continuation must capture (or bring the king to a corner)"
        return f"{what}: the path is blocked, the target is restricted, or the move is too long"

    # --- applying actions --------------------------------------------------------------------

    def step(self, state: State, actions) -> StepInfo:
        """Apply one action per game, in place. Finished games are left as they are.

        Every action is checked before anything changes: if any running game's action is illegal,
        :class:`IllegalMoveError` names the first ones and the state is untouched.
        """
        b = len(state)
        a = _actions_array(actions, b)
        info = np.empty((b, INFO_WIDTH), dtype=np.int64)
        threaded = self._parallel(b)
        while True:
            work, tables = self._step_work(b)
            # Threaded: the whole batch is checked first (nothing applied), then each thread
            # plays its range (its own check there cannot fail).
            code = kernels.step(state.buffer, a, info, work, tables, 0, b, not threaded)
            if code == OK and threaded:
                buf = state.buffer
                _jit.run_threaded(
                    lambda lo, hi: kernels.step(buf, a, info, np.empty(hi - lo + SCRATCH, np.int64),
                                                tables, lo, hi, True), self._threads, b)
            if code == OK:
                return StepInfo(info)
            if code != NEED_ROOM:
                self._raise_illegal(state, a)
            state.grow_history(2 * state.history.shape[1])

    def _raise_illegal(self, state: State, a: np.ndarray):
        bad = ((state.reason == RUNNING) & ~self.check_legal(state, a)).nonzero()[0]
        shown = "; ".join(f"game {g}: action {int(a[g])}: {self.explain_illegal(state, g, int(a[g]))}"
                          for g in bad[:3])
        raise IllegalMoveError(f"illegal action(s): {shown}" + (" …" if len(bad) > 3 else ""))

    def play_random(self, state: State, rng: np.random.Generator, max_steps: int | None = None) -> np.ndarray:
        """Play uniformly random legal actions in every game, in place, until it ends (or for at
        most ``max_steps`` actions each); returns the (B,) number of actions played.

        The whole rollout runs inside the compiled kernel (no Python per move), with a generator
        per game seeded from ``rng`` (64 raw bits of its bit generator per game), so it is
        reproducible for a given ``rng``. ``max_steps=1`` plays one random move per game in one
        call (the cheapest single-game random step from Python)."""
        limit = _NO_LIMIT if max_steps is None else _check_int(max_steps, "max_steps", 0, _NO_LIMIT)
        b = len(state)
        if b == 1:
            return self._play_random_one(state, rng, limit)
        # random_raw: a tenth of the cost of rng.integers (a zero seed is fixed in the kernel)
        seeds = rng.bit_generator.random_raw(b)
        played = np.zeros(b, dtype=np.int64)
        if b >= PREGROW_MIN_BATCH:
            self._pregrow(state, limit)
        while True:
            buf, tables = state.buffer, self.packed_tables
            if self._parallel(b):
                full = any(_jit.run_threaded(
                    lambda lo, hi: kernels.play_random(
                        buf, seeds, limit, played, np.empty(INFO_WIDTH + SCRATCH, np.int64),
                        tables, lo, hi), self._threads, b, _jit.ROLLOUT_CHUNKS_PER_THREAD))
            else:
                full = kernels.play_random(buf, seeds, limit, played, self._rollout_work(),
                                           tables, 0, b)
            if not full:
                return played
            state.grow_history(2 * state.history.shape[1])

    def _play_random_one(self, state: State, rng: np.random.Generator, limit: int) -> np.ndarray:
        """:meth:`play_random` of one game, with as little Python around the kernel as it can (one
        random step from Python is a few µs: this thread's seed and work arrays are fetched in one
        lookup, the seed drawn as a scalar into its array, no batch bookkeeping)."""
        seeds, work = self._one_game_rollout()
        seeds[0] = rng.bit_generator.random_raw()
        played = np.zeros(1, dtype=np.int64)
        while kernels.play_random(state.buffer, seeds, limit, played, work, self.packed_tables, 0, 1):
            state.grow_history(2 * state.history.shape[1])
        return played

    def _pregrow(self, state: State, limit: int) -> None:
        """Room for every position a rollout of at most ``limit`` actions per game can record,
        when that fits :data:`ROLLOUT_PREGROW_BYTES` (turns end the game at the move cap, and a
        berserk chain's continuations take no turn)."""
        running = np.flatnonzero(state.reason == RUNNING)
        if not len(running):
            return
        last = int(state.turn[running].max()) + min(limit, 1 << 40)
        if self.rules.max_turns:
            last = min(last, self.rules.max_turns)
        per_position = state.history.itemsize + state.seen_keys.itemsize * 2 \
            + state.seen_counts.itemsize * 2
        if (last + 1) * per_position * len(state) <= ROLLOUT_PREGROW_BYTES:
            state.grow_history(last + 1)

    def perft(self, state: State, depth: int, game: int = 0) -> int:
        """The number of action sequences of length ``depth`` from game ``game`` (DESIGN.md
        ``tafl perft``: pass counts as an action, a finished game has none)."""
        g = self._game_index(state, game)
        depth = _check_int(depth, "depth", 0)
        return search.perft(self, state.take(slice(g, g + 1)), depth)
