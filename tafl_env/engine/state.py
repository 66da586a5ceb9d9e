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
        last_irreversible: (B,) int32, the last turn whose position cannot recur (a capture).
        seen:       (B, 256) bool, a Bloom filter of the keys recorded since ``last_irreversible``
                    (one flag per value of a key's top byte): a key whose flag is clear cannot be
                    a repetition, so the history is scanned only for the few games whose flag is set.
        repeats:    (B,) int16, occurrences of the current (whole-turn) position since the last
                    capture, 1 the first time; a third occurrence ends the game (§3.9).
        lines:      (B, 4N+1) empty-square bit masks of every column and row, plain and reversed
                    (bit i of a column is rank i), kept in step with ``board`` by the engine;
                    the last column is always 0.
        occupancy:  (B, 2, N) uint32, each side's pieces as one N-bit int per rank (bit = file).
        pieces:     (B, 2, P) intp, the squares of each side's pieces in fixed slots (S: empty slot).
                    A piece keeps its slot while it lives; move generation runs over slots, not
                    over all S squares.
        moves:      (B, P, 4) packed legal moves of the side to move, aligned with
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
    seen: np.ndarray
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
        if other.pieces.shape[2] < self.pieces.shape[2]:
            other = other.copy()
            other.grow_slots(self.pieces.shape[2])
        for f in fields(self):
            if f.name == "history":
                self.history[index] = 0
                self.history[index, : other.history.shape[1]] = other.history
            else:
                getattr(self, f.name)[index] = getattr(other, f.name)

    def grow_history(self, capacity: int) -> None:
        """Make room for at least ``capacity`` recorded positions per game."""
        old = self.history
        if capacity <= old.shape[1]:
            return
        new = np.zeros((old.shape[0], capacity), dtype=old.dtype)
        new[:, : old.shape[1]] = old
        self.history = new

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

    @staticmethod
    def concatenate(states: list["State"]) -> "State":
        width = max(s.history.shape[1] for s in states)
        slots = max(s.pieces.shape[2] for s in states)
        for s in states:
            s.grow_history(width)
            s.grow_slots(slots)
        return State(**{f.name: np.concatenate([getattr(s, f.name) for s in states])
                        for f in fields(State)})
