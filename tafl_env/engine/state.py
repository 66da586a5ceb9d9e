"""The batched game state: a record of numpy arrays, one row per game.

The engine's functions read and update these arrays; nothing else holds game state. A single game
is a batch of one.
"""

from __future__ import annotations

import numpy as np

from .layout import STATE_FIELD_NAMES, header_of, new_state_buffer, state_arrays, state_dims

# Result codes (``State.winner``).
NO_WINNER, ATTACKER_WINS, DEFENDER_WINS, DRAW = -1, 0, 1, 2
RESULT_NAMES = {NO_WINNER: None, ATTACKER_WINS: "attacker", DEFENDER_WINS: "defender", DRAW: "draw"}

# Reason codes (``State.reason``); 0 while the game runs.
RUNNING, KING_CAPTURED, ESCAPED, ENCIRCLED, NO_MOVES, REPETITION, TRUNCATED = range(7)
REASON_NAMES = {RUNNING: None, KING_CAPTURED: "king_captured", ESCAPED: "escaped",
                ENCIRCLED: "encircled", NO_MOVES: "no_moves", REPETITION: "repetition",
                TRUNCATED: "truncated"}


class State:
    """B games. Shapes: ``S = N*N`` squares, ``H`` turns of history capacity.

    Attributes:
        board:      (B, S+1) int8 piece codes; column S is the off-board sentinel.
        to_move:    (B,) int8, 0 attacker / 1 defender (after the end: the side the move passed to).
        start_side: (B,) int8, the side to move in ``Q0`` (decides who made turn s, RULES §3.9).
        king_sq:    (B,) intp, the king's square, S when there is none.
        chain:      (B,) intp, the square of the piece that must continue a berserk chain, or -1.
        turn:       (B,) int32, completed turns (a whole berserk chain is one turn).
        key:        (B,) uint64, Zobrist key of board + side to move.
        history:    (B, H) uint64, ``history[b, t]`` is the key of ``Qt`` for ``t <= turn[b]``.
                    ``H`` grows (doubling) as games get longer: memory follows what games use.
        last_irreversible: (B,) int32, the last turn whose position cannot recur (a capture).
        seen_keys, seen_counts: (B, 2H) uint64 and int32, an open-addressing hash table per game
                    of the keys recorded since ``last_irreversible`` and how often each occurred
                    (count 0: empty slot), so that counting a repetition costs O(1) at any game
                    length. At most H keys in 2H slots: the table is never more than half full.
        repeats:    (B,) int16, occurrences of the current (whole-turn) position since the last
                    capture, 1 the first time; a third occurrence ends the game (§3.9).
        lines:      (B, 4N+1) uint32 empty-square bit masks of every column and row, plain and reversed
                    (bit i of a column is rank i), kept in step with ``board`` by the engine;
                    the last column is always 0.
        occupancy:  (B, 2, N) uint32, each side's pieces as one N-bit int per rank (bit = file).
        pieces:     (B, 2, P) intp, the squares of each side's pieces in fixed slots (S: empty slot).
                    A piece keeps its slot while it lives; move generation runs over slots, not
                    over all S squares.
        moves:      (B, P, 4) uint32 packed legal moves of the side to move, aligned with
                    ``pieces[b, to_move[b]]``: bit k-1 of ``moves[b, i, d]`` is set when the piece in
                    slot i may move k squares in direction d. All zero when the game is over.
        winner:     (B,) int8, -1 running, 0 attacker, 1 defender, 2 draw.
        reason:     (B,) int8, 0 running, else a reason code.

    The arrays are views into one byte buffer (``State.buffer``, laid out by its header
    ``State.dims``: :mod:`.layout`), so a kernel call passes one argument instead of eighteen.
    Write into them (``state.board[g] = ...``); they cannot be replaced (that would cut them off
    the buffer). ``State(board=..., ...)`` copies the given arrays into a new buffer.
    """


    __slots__ = ("buffer", "dims", *STATE_FIELD_NAMES)

    def __init__(self, *, board, to_move, start_side, king_sq, chain, turn, key, history,
                 last_irreversible, seen_keys, seen_counts, repeats, lines, occupancy, pieces,
                 moves, winner, reason):
        given = dict(board=board, to_move=to_move, start_side=start_side, king_sq=king_sq,
                     chain=chain, turn=turn, key=key, history=history,
                     last_irreversible=last_irreversible, seen_keys=seen_keys,
                     seen_counts=seen_counts, repeats=repeats, lines=lines, occupancy=occupancy,
                     pieces=pieces, moves=moves, winner=winner, reason=reason)
        b, s1 = np.shape(board)
        dims = state_dims(int(b), int(s1), int(np.shape(history)[1]), int(np.shape(lines)[1]),
                          int(np.shape(occupancy)[2]), int(np.shape(pieces)[2]))
        self._adopt(new_state_buffer(dims))
        for name in STATE_FIELD_NAMES:
            view = getattr(self, name)
            value = np.asarray(given[name])
            if value.shape != view.shape:
                raise ValueError(f"State field {name} has shape {value.shape}, expected {view.shape}")
            view[...] = value

    def _adopt(self, buffer: np.ndarray) -> None:
        """Make ``buffer`` (laid out by its header) this State's storage and bind the views."""
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "dims", header_of(buffer))
        for name, view in zip(STATE_FIELD_NAMES, state_arrays(buffer)):
            object.__setattr__(self, name, view)

    def __setattr__(self, name, value):
        raise AttributeError(f"State.{name} cannot be replaced: the arrays are views into one "
                             f"buffer; write into them (state.{name}[...] = x) or build a new State")

    def __reduce__(self):
        return _rebuild, (self.buffer.copy(),)

    def __repr__(self) -> str:
        return (f"State(batch_size={len(self)}, turns={self.turn.tolist()[:8]}"
                f"{'…' if len(self) > 8 else ''}, history_capacity={self.history_capacity})")


    @property
    def batch_size(self) -> int:
        return self.board.shape[0]

    def __len__(self) -> int:
        return self.board.shape[0]

    @property
    def done(self) -> np.ndarray:
        """(B,) bool: the game is over (won, drawn or truncated)."""
        return self.reason != RUNNING

    def copy(self) -> "State":
        return _rebuild(self.buffer.copy())

    def fields(self) -> dict:
        """The arrays by name (views into the buffer), in ``State.arrays()`` order."""
        return {name: getattr(self, name) for name in STATE_FIELD_NAMES}

    def take(self, index) -> "State":
        """A new, independent batch made of the games at ``index`` (ints, a slice or a mask)."""
        if isinstance(index, slice):
            index = np.arange(len(self))[index]
        index = np.asarray(index)
        if index.dtype == np.bool_:
            if index.shape != (len(self),):
                raise IndexError(f"a mask of {len(self)} games is needed, got shape {index.shape}")
            index = np.flatnonzero(index)
        index = index.reshape(-1)
        if index.dtype.kind not in "iu":
            raise IndexError(f"games are chosen by ints, a slice or a mask, got {index.dtype}")
        d = self.dims.tolist()
        st = State.__new__(State)
        st._adopt(new_state_buffer(state_dims(len(index), *d[1:6])))
        for name in STATE_FIELD_NAMES:   # one gather per field, straight into the new buffer
            np.take(getattr(self, name), index, axis=0, out=getattr(st, name))
        return st

    def put(self, index, other: "State") -> None:
        """Write the games of ``other`` into rows ``index`` of this batch (e.g. to reset them)."""
        self.grow_history(other.history.shape[1])
        self.grow_slots(other.pieces.shape[2])
        if other.pieces.shape[2] < self.pieces.shape[2] or other.history.shape[1] < self.history.shape[1]:
            other = other.copy()
            other.grow_slots(self.pieces.shape[2])
            other.grow_history(self.history.shape[1])
        for name in STATE_FIELD_NAMES:
            getattr(self, name)[index] = getattr(other, name)

    @property
    def history_capacity(self) -> int:
        return self.history.shape[1]

    def _resized(self, history: int | None = None, slots: int | None = None) -> None:
        """Move into a new buffer with room for ``history`` positions and ``slots`` pieces per
        side: the arrays are copied (new piece slots empty, new history zero)."""
        b, s1, h, nl, n, p = (int(x) for x in self.dims[:6])
        h, p = history or h, slots or p
        old = self.fields()
        self._adopt(new_state_buffer(state_dims(b, s1, h, nl, n, p)))
        for name, arr in old.items():
            if name in ("seen_keys", "seen_counts"):
                continue   # rebuilt below when the history grew, else copied
            view = getattr(self, name)
            view[tuple(slice(0, d) for d in arr.shape)] = arr
        if slots is not None:
            self.pieces[:, :, old["pieces"].shape[2]:] = s1 - 1
        if history is None:
            self.seen_keys[...] = old["seen_keys"]
            self.seen_counts[...] = old["seen_counts"]
        else:
            # The hash tables are indexed modulo their size: rebuild them at the new size.
            from .turns import rebuild_seen  # noqa: PLC0415 (turns imports this module)
            rebuild_seen(self.history, self.turn, self.last_irreversible, self.seen_keys,
                         self.seen_counts)

    def grow_history(self, capacity: int) -> None:
        """Make room for at least ``capacity`` recorded positions per game (a power of two)."""
        old = self.history.shape[1]
        if capacity <= old:
            return
        new = old
        while new < capacity:
            new *= 2
        self._resized(history=new)

    def grow_slots(self, slots: int) -> None:
        """Make room for ``slots`` pieces per side (empty slots hold the sentinel square S)."""
        if slots > self.pieces.shape[2]:
            self._resized(slots=slots)

    def arrays(self) -> tuple:
        """The arrays (views into the buffer) in ``layout.STATE_FIELDS`` order, as the search
        kernels take them (one tuple)."""
        return tuple(getattr(self, name) for name in STATE_FIELD_NAMES)

    @staticmethod
    def concatenate(states: list["State"]) -> "State":
        width = max(s.history.shape[1] for s in states)
        slots = max(s.pieces.shape[2] for s in states)
        for s in states:
            s.grow_history(width)
            s.grow_slots(slots)
        return State(**{name: np.concatenate([getattr(s, name) for s in states])
                        for name in STATE_FIELD_NAMES})


def _rebuild(buffer: np.ndarray) -> State:
    st = State.__new__(State)
    st._adopt(buffer)
    return st
