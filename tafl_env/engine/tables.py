"""Static lookup tables derived once from a :class:`~tafl_env.rules.RuleSet`.

Everything the hot path needs that does not depend on the position: neighbour squares, action
decoding, which destination squares a piece type may stop on, which squares are hostile, the
bit-line layout of the move generator, and the Zobrist keys of the repetition rule. The compiled
kernels read the rules only through :meth:`Tables.kernel_tables` (arrays plus a vector of rule
parameters), so a new variant is new data, not new code, and one compiled kernel serves every
variant.

Squares are ``0 … S-1`` (``S = N*N``); index ``S`` is an off-board sentinel cell that every batched
board carries, so that "the neighbour beyond the edge" is an ordinary array lookup.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..notation import (ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, EMPTY, KING, KNIGHT,
                        NUM_CODES, OFFBOARD)
from ..rules import RuleSet

# Direction d: 0 north (towards higher ranks), 1 east, 2 south, 3 west.
D_RANK = np.array([1, 0, -1, 0])
D_FILE = np.array([0, 1, 0, -1])
OPPOSITE = np.array([2, 3, 0, 1])

# Per piece code (EMPTY, t, c, T, N, K, OFFBOARD).
SIDE_OF = np.array([-1, 0, 0, 1, 1, 1, -1], dtype=np.int8)
IS_PLAIN_SOLDIER = np.array([0, 1, 0, 1, 0, 0, 0], dtype=bool)
IS_CUSTODIAL_VICTIM = np.array([0, 1, 1, 1, 1, 0, 0], dtype=bool)  # the king falls by §3.6 only
IS_ATTACKER = SIDE_OF == 0
IS_DEFENDER = SIDE_OF == 1
# Role of each piece code within its side: 0 soldier, 1 special piece (knight, commander), 2 king,
# -1 no piece. The observation planes are laid out by (own/enemy, role).
PIECE_ROLE = np.array([-1, 0, 1, 0, 1, 2, -1], dtype=np.int8)

# Indices into KernelTables.params (one int64 vector of rule parameters for the kernels).
(P_N, P_S, P_K, P_THRONE, P_JUMPS, P_BERSERK, P_TABLUT_KING, P_THRONE_HOSTILE,
 P_COMMANDER_SANDWICH, P_COMMANDER_ON_THRONE, P_ENCIRCLEMENT, P_REPETITION, P_MAX_TURNS,
 P_FULL_ROW, P_SIDE_KEY, P_PASS, P_NUM_ACTIONS, NUM_PARAMS) = range(18)
REPETITION_CODES = {"starter_loses": 0, "draw": 1, "ignore": 2}

# Bits of KernelTables.flags, one byte per square (the sentinel square S has only F_OFFBOARD).
F_CORNER, F_THRONE, F_ESCAPE, F_ALWAYS_HOSTILE, F_KING_HOSTILE, F_RESTRICTED, F_OFFBOARD = (
    1, 2, 4, 8, 16, 32, 64)


class KernelTables(NamedTuple):
    """The tables the compiled kernels read, as plain arrays (one numba type for all variants).

    params:  (NUM_PARAMS,) int64 rule parameters, indexed by the ``P_*`` constants.
    flags:   (S+1,) uint8 square roles, ``F_*`` bits.
    nbr:     (S+1, 8) int64 neighbours one step (columns 0-3) and two steps (4-7) away per
             direction; S off the board.
    dest:    (S+1, 4, N-1) int64 target square of moving k squares in direction d (S off the board).
    line:    (S+1, 16) int64 move-generator bit lines: per direction the line a square's moves run
             along and the shift that puts its first neighbour at bit 0 (columns 0-7), then the
             four lines the square lies on and its bit in each (columns 8-15).
    allowed: (2, NUM_CODES, S+1, 4) int64 distance bits a piece may stop at, per side to move.
    capture: (2, NUM_CODES, NUM_CODES) uint8: [0, mover, code] the mover can take a piece of
             ``code`` by custodial capture; [1, mover, code] a piece of ``code`` closes its
             sandwich.
    zobrist: (NUM_CODES, S+1) uint64 keys of (piece, square); the side key is ``params[P_SIDE_KEY]``.
    edge_rows: (N,) int64 the edge squares of each rank as an N-bit int (encirclement).
    jumper:  (NUM_CODES,) uint8, the pieces that jump (RULES.md §5; none where jumps are off).
    """

    params: np.ndarray
    flags: np.ndarray
    nbr: np.ndarray
    dest: np.ndarray
    line: np.ndarray
    allowed: np.ndarray
    capture: np.ndarray
    zobrist: np.ndarray
    edge_rows: np.ndarray
    jumper: np.ndarray


class Tables:
    """Precomputed geometry and rule tables for one ``RuleSet``."""

    def __init__(self, rules: RuleSet):
        self.rules = rules
        n = self.n = rules.board_size
        s = self.s = n * n
        self.k = n - 1  # distances 1 … N-1
        self.num_actions = s * 4 * (n - 1) + 1
        self.pass_action = s * 4 * (n - 1)

        sq = np.arange(s)
        rank, file = sq // n, sq % n
        self.rank, self.file = rank, file
        self.throne = (n // 2) * n + n // 2
        corners = np.array([0, n - 1, s - n, s - 1])
        self.corners = corners

        # dest[sq, d, k-1]: target square of moving k squares from sq in direction d (S when off).
        ks = np.arange(1, n)
        r2 = rank[:, None, None] + D_RANK[None, :, None] * ks[None, None, :]
        f2 = file[:, None, None] + D_FILE[None, :, None] * ks[None, None, :]
        on = (r2 >= 0) & (r2 < n) & (f2 >= 0) & (f2 < n)
        self.dest = np.where(on, r2 * n + f2, s).astype(np.intp)
        # Every action decoded once: action_info[a] = (origin, direction, distance, target, bit),
        # bit = 1 << (distance-1), its bit in the packed move mask. The pass row decodes like
        # action 0; callers test for pass themselves. One gather decodes a batch of actions.
        a = np.arange(self.pass_action)
        sd, dist = np.divmod(a, n - 1)
        origin, d = np.divmod(sd, 4)
        info = np.stack([origin, d, dist + 1, self.dest[origin, d, dist], 1 << dist], axis=1)
        self.action_info = np.concatenate([info, info[:1]]).astype(np.intp)
        # Neighbours one and two steps away, with a row for the sentinel square (all sentinel).
        self.nbr1 = np.full((s + 1, 4), s, dtype=np.intp)
        self.nbr2 = np.full((s + 1, 4), s, dtype=np.intp)
        self.nbr1[:s] = self.dest[:, :, 0]
        self.nbr2[:s] = self.dest[:, :, 1] if n > 2 else s

        # Squares by role.
        self.is_corner = np.zeros(s + 1, dtype=bool)
        self.is_corner[corners] = True
        self.is_edge = np.zeros(s + 1, dtype=bool)
        self.is_edge[:s] = (rank == 0) | (rank == n - 1) | (file == 0) | (file == n - 1)
        self.is_throne = np.zeros(s + 1, dtype=bool)
        self.is_throne[self.throne] = True
        self.is_offboard = np.zeros(s + 1, dtype=bool)
        self.is_offboard[s] = True
        restricted = self.is_throne.copy()
        if rules.restricted_corners:
            restricted |= self.is_corner
        self.restricted = restricted  # only the king may stop here
        self.escape = self.is_corner.copy() if rules.escape == "corners" else self.is_edge.copy()
        # Squares hostile to every piece whether occupied or not (corners, §6.5). The throne is
        # hostile only while empty, which the engine checks against the board.
        self.always_hostile = self.is_corner & rules.hostile_corners
        # Hostile to the king in 4-side capture (the empty throne is added at run time).
        self.king_hostile = self.always_hostile | (self.is_offboard & rules.edge_hostile_to_king)

        # Which pieces take part in captures (as mover or as anvil): all but an unarmed king.
        capturer = np.array([0, 1, 1, 1, 1, 1, 0], dtype=bool)
        capturer[KING] = rules.king_armed
        self.capturer = capturer
        # Custodial capture (§3.3-3.5) as lookups by the moving piece's code: victim[mover, code]
        # (an enemy piece that this mover can take), anvil[mover, code] (a friendly piece that
        # closes the sandwich); hostile squares close it too (captures.custodial_captures).
        mover_side = SIDE_OF[:, None]
        self.victim = (capturer[:, None] & IS_CUSTODIAL_VICTIM[None, :]
                       & (SIDE_OF[None, :] == 1 - mover_side) & (mover_side >= 0))
        self.anvil = capturer[None, :] & (SIDE_OF[None, :] == mover_side) & (mover_side >= 0)
        self.nbr12 = np.concatenate([self.nbr1, self.nbr2], axis=1)
        jumper = np.zeros(NUM_CODES, dtype=bool)
        if rules.jumps:
            jumper[[KING, KNIGHT, COMMANDER]] = True
        self.jumper = jumper

        # --- move generator bit lines -------------------------------------------------------
        # For each line (column or row, in both orientations) the engine builds an N-bit mask of
        # empty squares. Shifting a square's line so that its first neighbour in direction d is
        # bit 0 makes "bit k-1 set" mean "the k-th square is empty"; the run of trailing ones,
        # x & ~(x+1), is then exactly the set of reachable distances, already in action layout.
        # Line layout: [columns (bit = rank), columns reversed, rows (bit = file), rows reversed].
        # Row S (an empty piece slot) points at an always-zero column 4N, so it has no moves.
        self.num_lines = 4 * n + 1
        self.line_index = np.full((s + 1, 4), 4 * n, dtype=np.intp)
        self.line_index[:s] = np.stack([file, 2 * n + rank, n + file, 3 * n + rank], axis=1)
        self.line_shift = np.zeros((s + 1, 4), dtype=np.int64)
        self.line_shift[:s] = np.stack([rank + 1, file + 1, n - rank, n - file], axis=1)
        # The 4 lines a square lies on and its bit in each: toggling them keeps the line masks
        # in step with the board as squares empty and fill (the sentinel toggles nothing).
        self.square_lines = np.full((s + 1, 4), 4 * n, dtype=np.intp)
        self.square_lines[:s] = np.stack([file, n + file, 2 * n + rank, 3 * n + rank], axis=1)
        self.square_bits = np.zeros((s + 1, 4), dtype=np.int64)
        self.square_bits[:s] = np.stack([1 << rank, 1 << (n - 1 - rank), 1 << file, 1 << (n - 1 - file)],
                                        axis=1)

        full = (1 << (n - 1)) - 1
        reach = full if rules.move_range is None else (1 << rules.move_range) - 1
        # allowed[code, sq, d]: distance bits a piece of type code on sq may stop at (before
        # occupancy). Non-kings may not stop on restricted squares, nor pass the throne where the
        # rules say it blocks.
        blocked = np.zeros((s, 4), dtype=np.int64)
        beyond = np.zeros((s, 4), dtype=np.int64)
        for k in range(1, n):
            t = self.dest[:, :, k - 1]
            tr = np.where(t < s, t, s)
            blocked |= np.where(self.restricted[tr] & (t < s), 1 << (k - 1), 0)
            if not rules.throne_passable:
                # every distance after the throne is cut off
                hit = (t == self.throne)
                beyond |= np.where(hit, full & ~((1 << k) - 1), 0)
        allowed = np.zeros((NUM_CODES, s, 4), dtype=np.int64)
        for code in (ATTACKER_SOLDIER, COMMANDER, DEFENDER_SOLDIER, KNIGHT):
            allowed[code] = reach & ~blocked & ~beyond
        allowed[KING] = reach
        # Per side to move: pieces of the other side get no moves; the sentinel square S allows
        # nothing.
        per_side = np.zeros((2, NUM_CODES, s + 1, 4), dtype=np.int64)
        for side in (0, 1):
            for code in range(NUM_CODES):
                if SIDE_OF[code] == side:
                    per_side[side, code, :s] = allowed[code]
        self.allowed = per_side

        # Bit masks of the encirclement flood fill (rows as N-bit ints).
        self.full_row = (1 << n) - 1
        edge_rows = np.full(n, 1 | (1 << (n - 1)), dtype=np.int64)
        edge_rows[0] = edge_rows[-1] = self.full_row
        self.edge_rows = edge_rows.astype(np.uint32)

        # --- Zobrist keys: position = board + side to move (RULES §3.9) ----------------------
        rng = np.random.default_rng(0x7AF1)  # fixed: keys must agree across processes
        zob = rng.integers(1, 2**63, size=(NUM_CODES, s + 1), dtype=np.int64).astype(np.uint64)
        zob[EMPTY] = 0
        zob[OFFBOARD] = 0
        zob[:, s] = 0
        self.zobrist = zob
        self.side_key = np.uint64(rng.integers(1, 2**63, dtype=np.int64))


    def kernel_tables(self) -> KernelTables:
        """The tables of this rule set in the form the compiled kernels take (built once)."""
        cached = getattr(self, "_kernel_tables", None)
        if cached is not None:
            return cached
        rules, n, s = self.rules, self.n, self.s
        params = np.zeros(NUM_PARAMS, dtype=np.int64)
        params[P_N], params[P_S], params[P_K], params[P_THRONE] = n, s, n - 1, self.throne
        params[P_JUMPS] = rules.jumps
        params[P_BERSERK] = rules.berserk
        params[P_TABLUT_KING] = rules.king_capture == "tablut"
        params[P_THRONE_HOSTILE] = rules.throne_hostile
        params[P_COMMANDER_SANDWICH] = rules.commander_sandwich
        params[P_COMMANDER_ON_THRONE] = rules.commander_capture_on_throne
        params[P_ENCIRCLEMENT] = rules.encirclement
        params[P_REPETITION] = REPETITION_CODES[rules.repetition]
        params[P_MAX_TURNS] = rules.max_turns or 0
        params[P_FULL_ROW] = self.full_row
        params[P_SIDE_KEY] = np.int64(self.side_key)  # < 2**63: exact
        params[P_PASS], params[P_NUM_ACTIONS] = self.pass_action, self.num_actions
        flags = np.zeros(s + 1, dtype=np.uint8)
        for bit, table in ((F_CORNER, self.is_corner), (F_THRONE, self.is_throne),
                           (F_ESCAPE, self.escape), (F_ALWAYS_HOSTILE, self.always_hostile),
                           (F_KING_HOSTILE, self.king_hostile), (F_RESTRICTED, self.restricted),
                           (F_OFFBOARD, self.is_offboard)):
            flags[np.asarray(table, dtype=bool)] |= bit
        dest = np.full((s + 1, 4, n - 1), s, dtype=np.int64)
        dest[:s] = self.dest
        line = np.concatenate([self.line_index, self.line_shift, self.square_lines, self.square_bits],
                              axis=1).astype(np.int64)
        capture = np.stack([self.victim, self.anvil]).astype(np.uint8)
        self._kernel_tables = KernelTables(
            params=params, flags=flags, nbr=self.nbr12.astype(np.int64), dest=dest, line=line,
            allowed=self.allowed, capture=capture, zobrist=self.zobrist,
            edge_rows=self.edge_rows.astype(np.int64), jumper=self.jumper.astype(np.uint8))
        return self._kernel_tables
