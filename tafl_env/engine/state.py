"""The batched game state: a record of numpy arrays, one row per game.

The engine's functions read and update these arrays; nothing else holds game state. A single game
is a batch of one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

# Result codes (``State.winner``).
NO_WINNER, ATTACKER_WINS, DEFENDER_WINS, DRAW = -1, 0, 1, 2
RESULT_NAMES = {NO_WINNER: None, ATTACKER_WINS: "attacker", DEFENDER_WINS: "defender", DRAW: "draw"}

# Reason codes (``State.reason``); 0 while the game runs.
RUNNING, KING_CAPTURED, ESCAPED, ENCIRCLED, NO_MOVES, REPETITION, TRUNCATED = range(7)
REASON_NAMES = {RUNNING: None, KING_CAPTURED: "king_captured", ESCAPED: "escaped",
                ENCIRCLED: "encircled", NO_MOVES: "no_moves", REPETITION: "repetition",
                TRUNCATED: "truncated"}


@dataclass
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
    """

    board: np.ndarray
    to_move: np.ndarray
    start_side: np.ndarray
    king_sq: np.ndarray
    chain: np.ndarray
    turn: np.ndarray
    key: np.ndarray
    history: np.ndarray
    last_irreversible: np.ndarray
    seen_keys: np.ndarray
    seen_counts: np.ndarray
    repeats: np.ndarray
    lines: np.ndarray
    occupancy: np.ndarray
    pieces: np.ndarray
    moves: np.ndarray
    winner: np.ndarray
    reason: np.ndarray

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
        return State(**{f.name: getattr(self, f.name).copy() for f in fields(self)})

    def take(self, index) -> "State":
        """A new, independent batch made of the games at ``index`` (ints, a slice or a mask)."""
        if isinstance(index, slice):  # basic slicing would return views into this batch
            return State(**{f.name: getattr(self, f.name)[index].copy() for f in fields(self)})
        return State(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def put(self, index, other: "State") -> None:
        """Write the games of ``other`` into rows ``index`` of this batch (e.g. to reset them)."""
        self.grow_history(other.history.shape[1])
        self.grow_slots(other.pieces.shape[2])
        if other.pieces.shape[2] < self.pieces.shape[2] or other.history.shape[1] < self.history.shape[1]:
            other = other.copy()
            other.grow_slots(self.pieces.shape[2])
            other.grow_history(self.history.shape[1])
        for f in fields(self):
            getattr(self, f.name)[index] = getattr(other, f.name)

    @property
    def history_capacity(self) -> int:
        return self.history.shape[1]

    def grow_history(self, capacity: int) -> None:
        """Make room for at least ``capacity`` recorded positions per game (a power of two)."""
        old = self.history.shape[1]
        if capacity <= old:
            return
        new = old
        while new < capacity:
            new *= 2
        history = np.zeros((len(self), new), dtype=self.history.dtype)
        history[:, :old] = self.history
        self.history = history
        # The hash tables are indexed modulo their size: rebuild them at the new size.
        from .turns import rebuild_seen  # noqa: PLC0415 (turns imports this module)
        self.seen_keys = np.zeros((len(self), 2 * new), dtype=np.uint64)
        self.seen_counts = np.zeros((len(self), 2 * new), dtype=np.int32)
        rebuild_seen(self.history, self.turn, self.last_irreversible, self.seen_keys, self.seen_counts)

    def grow_slots(self, slots: int) -> None:
        """Make room for ``slots`` pieces per side (empty slots hold the sentinel square S)."""
        p = self.pieces.shape[2]
        if slots <= p:
            return
        sentinel = self.board.shape[1] - 1
        pieces = np.full(self.pieces.shape[:2] + (slots,), sentinel, dtype=self.pieces.dtype)
        pieces[:, :, :p] = self.pieces
        moves = np.zeros((self.moves.shape[0], slots, 4), dtype=self.moves.dtype)
        moves[:, :p] = self.moves
        self.pieces, self.moves = pieces, moves

    def arrays(self) -> tuple:
        """The arrays in the order the compiled kernels take them (see ``engine.kernels``)."""
        return (self.board, self.to_move, self.start_side, self.king_sq, self.chain, self.turn,
                self.key, self.history, self.last_irreversible, self.seen_keys, self.seen_counts,
                self.repeats, self.lines, self.occupancy, self.pieces, self.moves, self.winner,
                self.reason)

    @staticmethod
    def concatenate(states: list["State"]) -> "State":
        width = max(s.history.shape[1] for s in states)
        slots = max(s.pieces.shape[2] for s in states)
        for s in states:
            s.grow_history(width)
            s.grow_slots(slots)
        return State(**{f.name: np.concatenate([getattr(s, f.name) for s in states])
                        for f in fields(State)})
