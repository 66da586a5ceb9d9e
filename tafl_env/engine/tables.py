"""Static lookup tables derived once from a :class:`~tafl_env.rules.RuleSet`.

Everything the hot path needs that does not depend on the position: neighbour squares, action
decoding, which destination squares a piece type may stop on, which squares are hostile, the
bit-line layout of the move generator, and the Zobrist keys of the repetition rule. The engine
reads the rules only through these tables, so a new variant is new data, not new code.

Squares are ``0 … S-1`` (``S = N*N``); index ``S`` is an off-board sentinel cell that every batched
board carries, so that "the neighbour beyond the edge" is an ordinary array lookup.
"""

from __future__ import annotations

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


class Tables:
    """Precomputed geometry and rule tables for one ``RuleSet``."""

    def __init__(self, rules: RuleSet):
        self.rules = rules
        n = self.n = rules.board_size
        s = self.s = n * n
        self.k = n - 1  # distances 1 … N-1
        self.num_actions = s * 4 * (n - 1) + 1
        self.pass_action = s * 4 * (n - 1)
        # Line masks fit uint16 up to N = 15 (x + 1 must not overflow), uint32 beyond.
        self.bits_dtype = np.uint16 if n <= 15 else np.uint32

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
        # closes the sandwich); square_anvil[sq, empty] adds the hostile squares, the throne only
        # while empty. With nbr12 (both rings of neighbours) one gather reads the whole pattern.
        mover_side = SIDE_OF[:, None]
        self.victim = (capturer[:, None] & IS_CUSTODIAL_VICTIM[None, :]
                       & (SIDE_OF[None, :] == 1 - mover_side) & (mover_side >= 0))
        self.anvil = capturer[None, :] & (SIDE_OF[None, :] == mover_side) & (mover_side >= 0)
        self.square_anvil = np.stack([self.always_hostile,
                                      self.always_hostile | (self.is_throne & rules.throne_hostile)], axis=1)
        self.nbr12 = np.concatenate([self.nbr1, self.nbr2], axis=1)
        # king_adjacent[k, sq]: sq is next to a king on k (the sentinel row: no king, never).
        self.king_adjacent = np.zeros((s + 1, s + 1), dtype=bool)
        self.king_adjacent[np.repeat(np.arange(s), 4), self.nbr1[:s].ravel()] = True
        self.king_adjacent[:, s] = False
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
        self.line_shift = np.zeros((s + 1, 4), dtype=self.bits_dtype)
        self.line_shift[:s] = np.stack([rank + 1, file + 1, n - rank, n - file], axis=1)
        # The 4 lines a square lies on and its bit in each: toggling them keeps the line masks
        # in step with the board as squares empty and fill (the sentinel toggles nothing).
        self.square_lines = np.full((s + 1, 4), 4 * n, dtype=np.intp)
        self.square_lines[:s] = np.stack([file, n + file, 2 * n + rank, 3 * n + rank], axis=1)
        self.square_bits = np.zeros((s + 1, 4), dtype=self.bits_dtype)
        self.square_bits[:s] = np.stack([1 << rank, 1 << (n - 1 - rank), 1 << file, 1 << (n - 1 - file)],
                                        axis=1)
        pow2 = (1 << np.arange(n)).astype(np.float32)  # exact: N <= 19 < 24 mantissa bits
        self.line_weights = np.stack([pow2, pow2[::-1]], axis=1)  # (N, 2): plain and reversed
        self.line_weights_t = np.ascontiguousarray(self.line_weights.T)
        self.row_weights = (1 << np.arange(n)).astype(np.uint32)

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
        # Per side to move: pieces of the other side get no moves. Flattened so that one gather
        # with index (side*NUM_CODES + code)*S + sq fetches a (B, S, 4) block.
        # Index (side*NUM_CODES + code)*(S+1) + sq; the sentinel square S allows nothing.
        per_side = np.zeros((2, NUM_CODES, s + 1, 4), dtype=np.int64)
        for side in (0, 1):
            for code in range(NUM_CODES):
                if SIDE_OF[code] == side:
                    per_side[side, code, :s] = allowed[code]
        self.allowed_flat = per_side.reshape(2 * NUM_CODES * (s + 1), 4).astype(self.bits_dtype)

        # Jump landing permissions: jumpers other than the king may not land on restricted squares.
        self.jump_land_ok = np.zeros((NUM_CODES, s + 1), dtype=bool)
        for code in (COMMANDER, KNIGHT):
            self.jump_land_ok[code, :s] = ~self.restricted[:s]
        self.jump_land_ok[KING, :s] = True

        # Each side's occupancy as one N-bit int per rank (bit = file): row and bit of a square.
        self.square_rank = np.zeros(s + 1, dtype=np.intp)
        self.square_rank[:s] = rank
        self.square_file_bit = np.zeros(s + 1, dtype=np.uint32)
        self.square_file_bit[:s] = 1 << file
        # unpack[v] = the k bits of a packed move mask v as int8 (boards up to 13x13: 4096 rows).
        self.unpack = (((np.arange(1 << self.k)[:, None] >> np.arange(self.k)) & 1).astype(np.int8)
                       if self.k <= 12 else None)
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

