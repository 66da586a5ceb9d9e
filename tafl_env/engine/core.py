"""The vectorised rules engine: move generation, move application, captures and game end.

One :class:`Engine` per ``RuleSet`` holds the static tables; all game state lives in a
:class:`~tafl_env.engine.state.State` of B games that the engine's methods read and update with
array operations over the whole batch (no Python loop over games, squares or pieces).

Move generation in one paragraph: for every row and column the engine packs the empty squares into
an N-bit integer, in both orientations. Shifting a square's line so that its first neighbour in
direction d is bit 0, the run of trailing ones (``x & ~(x + 1)``) is the set of squares it can
slide to; bit k-1 stands for distance k, which is already the action layout
``action = (sq*4 + d)*(N-1) + (k-1)``. One table lookup then removes what the piece may not do
(restricted squares, one-square moves). Moves are generated per piece slot, only for the side to
move (``State.pieces``), and jumps only for the slots of the pieces that can jump. The result,
``State.moves``, is a (B, P, 4) array of small ints: the full legal mask in packed form, cached for
the side to move and expanded to the (B, num_actions) int8 mask on request.

Everything the step changes incrementally (line masks, occupancy, piece slots, Zobrist keys,
repetition counts) is recomputed from the boards by :meth:`Engine.audit`, which the tests run along
random games.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import IllegalMoveError, InvalidPositionError
from ..notation import (COMMANDER, EMPTY, KING, KNIGHT, NUM_CODES, OFFBOARD, format_position,
                        parse_position, square_name)
from ..rules import RuleSet, SIDES, side_index
from .state import (ATTACKER_WINS, DEFENDER_WINS, DRAW, ENCIRCLED, ESCAPED, KING_CAPTURED,
                    NO_MOVES, NO_WINNER, REPETITION, RUNNING, TRUNCATED, State)
from .tables import (IS_ATTACKER, IS_PLAIN_SOLDIER, OPPOSITE,
                     SIDE_OF, Tables)

# Hot paths test "any" with np.count_nonzero: a third of the cost of ndarray.any() on the small
# arrays of a single game (the method goes through a Python wrapper).


@dataclass
class StepInfo:
    """What a batched step did, per game of the batch.

    ``captured`` is (B, 6): the knight-jumped square, the custodial captures north, east, south,
    west of the landing square, then the king (RULES §6.7 order), ``S`` where nothing fell.
    ``jump`` marks jumps; ``continuation`` marks moves made while a chain was pending;
    ``turn_ended`` is False where a berserk chain is now pending.
    """

    captured: np.ndarray
    jump: np.ndarray
    continuation: np.ndarray
    turn_ended: np.ndarray


class Engine:
    """The rules of one ``RuleSet``, applied to batches of games.

    >>> from tafl_env.rules import make_rules
    >>> eng = Engine(make_rules("historical_tablut"))
    >>> st = eng.initial_state(batch_size=3)
    >>> eng.count_legal(st).tolist()
    [80, 80, 80]
    """

    def __init__(self, rules: RuleSet):
        self.rules = rules
        self.tables = t = Tables(rules)
        self.n, self.s = t.n, t.s
        self.num_actions = t.num_actions
        self.pass_action = t.pass_action
        self._slots = 0
        self._jump_slots = 0  # jumpers stand in the first slots of each side (see _piece_slots)
        self._start_board, self._start_king = self.parse_board(rules.layout)
        self._slots = self._piece_slots(self._start_board).shape[1]
        self._cache: dict = {}  # lazily built helper tables
        self._offsets: dict = {}  # (rows, width) -> row offsets, for small batches
        self._bit_positions = np.arange(t.k, dtype=t.bits_dtype)

    # --- positions ---------------------------------------------------------------------------

    def parse_board(self, position: str) -> tuple[np.ndarray, int]:
        """Position string → (board with sentinel, king square); RULES §6.6 checks included."""
        t = self.tables
        cells = parse_position(position, self.n)
        kings = (cells == KING).nonzero()[0]
        if len(kings) > 1:
            raise InvalidPositionError(
                f"position {position!r} has {len(kings)} kings ({', '.join(square_name(int(k), self.n) for k in kings)}); at most one is allowed"
            )
        bad = np.flatnonzero((cells != EMPTY) & (cells != KING) & t.restricted[: self.s])
        if len(bad):
            raise InvalidPositionError(
                f"position {position!r} has a non-king piece on the restricted square "
                f"{square_name(int(bad[0]), self.n)}"
            )
        board = np.empty(self.s + 1, dtype=np.int8)
        board[: self.s] = cells
        board[self.s] = OFFBOARD
        return board, (int(kings[0]) if len(kings) else self.s)

    def initial_state(self, batch_size: int = 1, position: str | None = None,
                      to_move: str | int | None = None) -> State:
        """B fresh games from the variant's start, or from ``position`` (a fresh ``Q0``)."""
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        b = int(batch_size)
        if position is None:
            board, king = self._start_board, self._start_king
        else:
            board, king = self.parse_board(position)
        side = self.rules.first_side if to_move is None else side_index(to_move)
        t = self.tables
        cap = (self.rules.max_turns or 256) + 1
        pieces = self._piece_slots(board)
        st = State(
            board=np.tile(board, (b, 1)),
            to_move=np.full(b, side, dtype=np.int8),
            start_side=np.full(b, side, dtype=np.int8),
            king_sq=np.full(b, king, dtype=np.intp),
            chain=np.full(b, -1, dtype=np.intp),
            turn=np.zeros(b, dtype=np.int32),
            key=np.zeros(b, dtype=np.uint64),
            history=np.zeros((b, cap), dtype=np.uint64),
            last_irreversible=np.zeros(b, dtype=np.int32),
            seen=np.zeros((b, 256), dtype=bool),
            repeats=np.ones(b, dtype=np.int16),
            lines=np.tile(self._line_bits(board[None]), (b, 1)),
            occupancy=np.tile(self._occupancy(board), (b, 1, 1)),
            pieces=np.tile(pieces, (b, 1, 1)),
            moves=np.zeros((b, pieces.shape[1], 4), dtype=t.bits_dtype),
            winner=np.full(b, NO_WINNER, dtype=np.int8),
            reason=np.zeros(b, dtype=np.int8),
        )
        st.key[:] = self.full_key(st.board, st.to_move)
        st.history[:, 0] = st.key
        rows = np.arange(b)
        self._bloom_check_and_add(st, rows, st.key)
        st.moves[:] = self._packed_moves(st.board, st.lines, st.to_move, st.pieces[rows, st.to_move])
        self._judge_no_moves(st, rows)
        return st

    def _occupancy(self, board: np.ndarray) -> np.ndarray:
        """(2, N) each side's pieces as N-bit ints per rank."""
        sides = SIDE_OF[board[: self.s]].reshape(self.n, self.n)
        weights = self.tables.row_weights
        return np.stack([(sides == side) @ weights for side in (0, 1)]).astype(np.uint32)

    def _piece_slots(self, board: np.ndarray) -> np.ndarray:
        """(2, P) squares of each side's pieces; P fits the variant's start and this board.

        Pieces that can jump (king, knight, commanders) take the first slots, so jumps are
        generated over the first ``_jump_slots`` slots only; a piece keeps its slot for life.
        """
        cells = board[: self.s]
        sides = SIDE_OF[cells]
        jumper = self.tables.jumper[cells]
        lists = [np.concatenate([((sides == side) & jumper).nonzero()[0],
                                 ((sides == side) & ~jumper).nonzero()[0]]) for side in (0, 1)]
        self._jump_slots = max(self._jump_slots,
                               *(int(((sides == side) & jumper).sum()) for side in (0, 1)))
        slots = max(self._slots, len(lists[0]), len(lists[1]))
        out = np.full((2, slots), self.s, dtype=np.intp)
        for side, squares in enumerate(lists):
            out[side, : len(squares)] = squares
        return out

    def full_key(self, board: np.ndarray, to_move: np.ndarray) -> np.ndarray:
        """Zobrist key of board + side to move, computed from scratch (the step updates it)."""
        t = self.tables
        keys = t.zobrist[board.astype(np.intp), np.arange(self.s + 1)]
        k = np.bitwise_xor.reduce(keys, axis=1)
        return k ^ np.where(to_move == 1, t.side_key, np.uint64(0))

    def audit(self, state: State) -> list[str]:
        """Recompute everything the engine keeps incrementally and list any disagreement.

        Checks keys, line masks, occupancy, piece slots, king squares and the cached legal moves
        (outside chains) against values derived from the boards alone. Empty means consistent;
        the tests run it along random games.
        """
        problems = []
        rows = np.arange(len(state))
        if not np.array_equal(state.key, self.full_key(state.board, state.to_move)):
            problems.append(f"key differs in games {(state.key != self.full_key(state.board, state.to_move)).nonzero()[0].tolist()}")
        if not np.array_equal(state.lines, self._line_bits(state.board)):
            problems.append("line masks differ from the board")
        for g in rows:
            occ = self._occupancy(state.board[g])
            if not np.array_equal(state.occupancy[g], occ):
                problems.append(f"game {g}: occupancy differs from the board")
            slots = self._piece_slots(state.board[g])
            for side in (0, 1):
                have = sorted(int(x) for x in state.pieces[g, side] if x < self.s)
                want = sorted(int(x) for x in slots[side] if x < self.s)
                if have != want:
                    problems.append(f"game {g}: side {side} piece slots {have} != board {want}")
            kings = (state.board[g, : self.s] == KING).nonzero()[0]
            king = int(kings[0]) if len(kings) else self.s
            if king != state.king_sq[g]:
                problems.append(f"game {g}: king_sq {state.king_sq[g]} != board {king}")
        quiet = rows[(state.chain < 0) & (state.reason == RUNNING)]
        if len(quiet):
            fresh = self._packed_moves(state.board[quiet], state.lines[quiet], state.to_move[quiet],
                                       self._mover_slots(state, quiet))
            bad = quiet[(fresh != state.moves[quiet]).reshape(len(quiet), -1).any(axis=1)]
            if len(bad):
                problems.append(f"cached moves differ from a fresh generation in games {bad.tolist()}")
        running = rows[state.reason == RUNNING]
        if len(running):
            sub = state.take(running)
            last = sub.history[np.arange(len(running)), sub.turn]
            cols = np.arange(sub.history.shape[1])
            # Inside a chain after a capture, last_irreversible already names the coming turn.
            start = np.minimum(sub.last_irreversible, sub.turn)
            live = (cols >= start[:, None]) & (cols <= sub.turn[:, None])
            counts = ((sub.history == last[:, None]) & live).sum(axis=1)
            if not np.array_equal(counts, sub.repeats):
                problems.append(f"repetition counts {sub.repeats.tolist()} != history {counts.tolist()}")
        over = rows[state.reason != RUNNING]
        if state.moves[over].any():
            problems.append("finished games have moves")
        return problems

    def repetition_count(self, state: State) -> np.ndarray:
        """(B,) how often the current position has occurred so far (1 = first time).

        Counts recorded whole-turn positions equal to the current one since the last capture;
        inside a berserk chain the position of the chain's start is counted. The engine keeps
        this count up to date at every turn's end (``State.repeats``).
        """
        return state.repeats.astype(np.int64)

    def position(self, state: State, game: int = 0) -> str:
        return format_position(state.board[game], self.n)

    # --- move generation ---------------------------------------------------------------------

    def _line_bits(self, board: np.ndarray) -> np.ndarray:
        """(R, 4N+1) bit masks of empty squares per column/row, plain and reversed, then a zero."""
        t = self.tables
        r, n = board.shape[0], self.n
        empty = (board[:, : self.s] == EMPTY).reshape(r, n, n).astype(np.float32)
        out = np.zeros((r, t.num_lines), dtype=t.bits_dtype)
        out[:, : 2 * n] = np.matmul(t.line_weights_t, empty).reshape(r, 2 * n)   # columns
        out[:, 2 * n: 4 * n] = np.matmul(empty, t.line_weights).transpose(0, 2, 1).reshape(r, 2 * n)
        return out

    def _row_offsets(self, r: int, width: int) -> np.ndarray:
        """(r, 1, 1) offsets of each row in a flattened (r, width) array (read-only: shared)."""
        key = (r, width)
        offsets = self._offsets.get(key)
        if offsets is None:
            offsets = (np.arange(r, dtype=np.intp) * width)[:, None, None]
            offsets.flags.writeable = False
            if r <= 64:   # small batches (the single-game path, search) are where the calls show
                self._offsets[key] = offsets
        return offsets

    def _packed_moves(self, board: np.ndarray, lines: np.ndarray, to_move: np.ndarray,
                      squares: np.ndarray) -> np.ndarray:
        """(R, P, 4) packed legal moves (slides and jumps) of the pieces on ``squares`` (R, P).

        All pieces must belong to the side to move of their row; slot S (empty) gets no moves.
        ``lines`` are the rows' empty-square line masks (``State.lines``).
        """
        t = self.tables
        r = board.shape[0]
        x = lines.take(self._row_offsets(r, t.num_lines) + t.line_index.take(squares, axis=0))
        x >>= t.line_shift.take(squares, axis=0)
        x &= ~(x + 1)
        codes = board.take(self._row_offsets(r, self.s + 1)[:, :, 0] + squares)
        sel = (to_move.astype(np.intp)[:, None] * NUM_CODES + codes) * (self.s + 1) + squares
        x &= t.allowed_flat.take(sel, axis=0)
        if self.rules.jumps:
            j = min(self._jump_slots, squares.shape[1])
            if j:
                x[:, :j] |= self._jump_bits(board, to_move, squares[:, :j], codes[:, :j])
        return x

    def _jump_bits(self, board, to_move, squares, codes) -> np.ndarray:
        """Jumps (RULES §5) as bit 1 (distance 2): over one adjacent enemy soldier onto an empty square."""
        t = self.tables
        off = self._row_offsets(board.shape[0], self.s + 1)
        n2 = t.nbr2.take(squares, axis=0)
        p1 = board.take(off + t.nbr1.take(squares, axis=0))
        p2 = board.take(off + n2)
        ok = (t.jumper.take(codes)[:, :, None] & IS_PLAIN_SOLDIER.take(p1)
              & (SIDE_OF.take(p1) != to_move[:, None, None]) & (p2 == EMPTY)
              & t.jump_land_ok.take(codes[:, :, None].astype(np.intp) * (self.s + 1) + n2))
        return ok.astype(t.bits_dtype) << 1

    def _mover_slots(self, state: State, rows=None) -> np.ndarray:
        """(R, P) squares of the side to move's pieces (the rows of ``moves``)."""
        if rows is None:
            rows = np.arange(len(state))
        return state.pieces[rows, state.to_move[rows]]

    def legal_action_mask(self, state: State) -> np.ndarray:
        """(B, num_actions) int8 0/1: exactly the legal actions (all 0 for finished games).

        For B > 1 the rows are views into a slightly wider buffer (not C-contiguous); use
        ``np.ascontiguousarray`` where a library needs contiguous memory."""
        b = len(state)
        buffer = np.zeros((b, self.mask_width), dtype=np.int8)
        self.write_masks(state, buffer, np.arange(b))
        return buffer[:, : self.num_actions]

    @property
    def mask_width(self) -> int:
        """Row width of a buffer for :meth:`write_masks`: ``(S + 1) * 4 * (N - 1)`` ≥ num_actions."""
        return (self.s + 1) * 4 * (self.n - 1)

    def write_masks(self, state: State, buffer: np.ndarray, rows: np.ndarray) -> None:
        """Write each game's legal mask into row ``rows[g]`` of ``buffer`` (R, mask_width) int8,
        whose first ``num_actions`` columns are the mask; those rows must be zero beforehand.

        The legal moves are scattered by square (S+1 blocks of 4(N-1)): empty piece slots land on
        the sentinel square S, whose first entry is then the pass flag. Vector envs write straight
        into the buffers they hand out, without an intermediate (B, num_actions) array.
        """
        b = len(state)
        k = self.n - 1
        p = state.moves.shape[1]
        if self.tables.unpack is not None:   # one table gather (boards up to 13x13)
            bits = self.tables.unpack.take(state.moves, axis=0).reshape(b, p, 4 * k)
        else:
            raw = np.ascontiguousarray(state.moves).view(np.uint8).reshape(b, p, 4, -1)
            bits = np.unpackbits(raw, axis=-1, bitorder="little")[..., :k].reshape(b, p, 4 * k)
        blocks = buffer.reshape(len(buffer), self.s + 1, 4 * k)
        blocks[rows[:, None], self._mover_slots(state)] = bits
        buffer[rows, self.pass_action] = state.chain >= 0

    def count_legal(self, state: State) -> np.ndarray:
        """(B,) number of legal actions (pass included)."""
        b = len(state)
        return (np.bitwise_count(state.moves).reshape(b, -1).sum(axis=1, dtype=np.int64)
                + (state.chain >= 0))

    def legal_actions(self, state: State, game: int = 0) -> np.ndarray:
        """The legal action ids of one game, ascending."""
        return np.flatnonzero(self.legal_action_mask(state.take(slice(game, game + 1)))[0])

    def _select_table(self) -> np.ndarray:
        """``table[mask, r]``: the position of the r-th set bit of an (N-1)-bit mask."""
        table = self._cache.get("select")
        if table is None:
            k = self.n - 1
            values = np.arange(1 << k, dtype=np.int64)
            bits = (values[:, None] >> np.arange(k)) & 1
            rank = np.cumsum(bits, axis=1) - 1                       # rank of each set bit
            table = np.zeros((1 << k, k), dtype=np.int8)
            v, pos = np.nonzero(bits)
            table[v, rank[v, pos]] = pos
            self._cache["select"] = table
        return table

    def random_actions(self, state: State, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal action per game (−1 for finished games), from the packed mask.

        Picks a slot with probability proportional to its number of moves, then a direction, then
        a distance — uniform over all legal actions, without unpacking the mask. Prefix sums run
        in float32 (exact for these counts; numpy's integer cumsum is several times slower, and a
        BLAS product would depend on the machine's thread pool).
        """
        b = len(state)
        k = self.n - 1
        counts = np.bitwise_count(state.moves)                        # (B, P, 4)
        # A slot's 4 masks side by side are 64 (uint16) or 128 (uint32) bits: count them at once.
        per_slot = np.bitwise_count(np.ascontiguousarray(state.moves).view(np.uint64))
        if per_slot.shape[2] > 1:
            per_slot = per_slot.sum(axis=2, dtype=np.uint8)
        per_slot = per_slot.reshape(b, -1).astype(np.float32)        # (B, P)
        cum = per_slot.cumsum(axis=1)                                  # inclusive prefix sums
        moves_total = cum[:, -1]
        total = moves_total + (state.chain >= 0)
        r0 = np.floor(rng.random(b) * total)
        r = r0.astype(np.float32)
        rows = np.arange(b)
        slot = np.minimum((cum <= r[:, None]).sum(axis=1), per_slot.shape[1] - 1)
        r -= cum[rows, slot] - per_slot[rows, slot]
        c4 = counts[rows, slot].astype(np.float32)                    # (B, 4)
        cum4 = c4.cumsum(axis=1)
        d = np.minimum((cum4 <= r[:, None]).sum(axis=1), 3)
        r -= cum4[rows, d] - c4[rows, d]
        kth = self._select_table()[state.moves[rows, slot, d], r.astype(np.intp)]
        origin = state.pieces[rows, state.to_move, slot]
        actions = (origin * 4 + d) * k + kth
        actions[r0 >= moves_total] = self.pass_action
        actions[total == 0] = -1
        return actions

    # --- decoding ----------------------------------------------------------------------------

    def decode(self, actions: np.ndarray):
        """actions → (origin, direction, distance, target) arrays; pass decodes as action 0, and
        out-of-range ids raise ``IndexError``."""
        info = self.tables.action_info.take(np.asarray(actions, dtype=np.intp), axis=0)
        return info[..., 0], info[..., 1], info[..., 2], info[..., 3]

    def encode(self, origin: int, target: int) -> int:
        """The action moving the piece on ``origin`` to ``target`` (a straight line)."""
        n = self.n
        dr, df = target // n - origin // n, target % n - origin % n
        if (dr == 0) == (df == 0):
            raise IllegalMoveError(
                f"{square_name(origin, n)}-{square_name(target, n)} is not a straight orthogonal move"
            )
        d = (0 if dr > 0 else 2) if dr else (1 if df > 0 else 3)
        return (origin * 4 + d) * (n - 1) + abs(dr or df) - 1

    def _legality(self, state: State, a: np.ndarray, running: np.ndarray | None = None):
        """(B,) legal flags, the slot of the moving piece, the decoded action (origin, direction,
        distance, target) and the pass flags (None when no game passes); all but the legal and
        pass flags are meaningless where not legal. ``running`` is ``state.reason == RUNNING``
        when the caller has it already."""
        rows = np.arange(len(a))
        in_range = (a >= 0) & (a < self.num_actions)
        safe = a if np.count_nonzero(in_range) == len(a) else np.where(in_range, a, 0)
        info = self.tables.action_info.take(safe, axis=0)
        origin, d, bit = info[:, 0], info[:, 1], info[:, 4]
        own = state.pieces[rows, state.to_move]
        slot = (own == origin[:, None]).argmax(axis=1)
        legal = (own[rows, slot] == origin) & (state.moves[rows, slot, d] & bit != 0)
        is_pass = a == self.pass_action
        if np.count_nonzero(is_pass):
            legal = np.where(is_pass, state.chain >= 0, legal)
        else:
            is_pass = None
        if running is None:
            running = state.reason == RUNNING
        return in_range & legal & running, slot, (origin, d, info[:, 2], info[:, 3]), is_pass

    def check_legal(self, state: State, actions: np.ndarray) -> np.ndarray:
        """(B,) bool: the action is legal (finished games: never)."""
        return self._legality(state, np.asarray(actions, dtype=np.intp))[0]

    def _toggle(self, state: State, rows: np.ndarray, squares: np.ndarray, sides: np.ndarray,
                more: np.ndarray | None = None) -> None:
        """Flip the line and occupancy bits of ``squares`` (one per row; with ``more``, a second
        square per row of the same side) that just emptied or filled with a piece of ``sides``.

        Unbuffered xor (``ufunc.at``): a row may come twice, and two squares may share a line.
        """
        t = self.tables
        if more is not None:
            pair = np.empty((len(rows), 2), dtype=np.intp)
            pair[:, 0] = squares
            pair[:, 1] = more
            rows, squares, sides = rows.repeat(2), pair.ravel(), sides.repeat(2)
        np.bitwise_xor.at(state.lines, (rows[:, None], t.square_lines.take(squares, axis=0)),
                          t.square_bits.take(squares, axis=0))
        np.bitwise_xor.at(state.occupancy, (rows, sides.astype(np.intp), t.square_rank.take(squares)),
                          t.square_file_bit.take(squares))

    def _remove(self, state: State, rows: np.ndarray, sides: np.ndarray, squares: np.ndarray) -> None:
        """Empty the slots of the captured pieces on ``squares`` (one per row)."""
        lists = state.pieces[rows, sides]
        slot = (lists == squares[:, None]).argmax(axis=1)
        state.pieces[rows, sides, slot] = self.s

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
        t = self.tables
        s = self.s
        b = len(state)
        a = np.asarray(actions)
        if a.shape != (b,) or a.dtype.kind not in "iu":
            raise IllegalMoveError(f"actions must be {b} integers (one per game), got shape {a.shape} of {a.dtype}")
        a = a.astype(np.intp, copy=False)
        running = state.reason == RUNNING
        legal, slots, decoded, is_pass = self._legality(state, a, running)
        bad = (running & ~legal).nonzero()[0]
        if len(bad):
            shown = "; ".join(f"game {g}: action {int(a[g])}: {self.explain_illegal(state, g, int(a[g]))}"
                              for g in bad[:3])
            raise IllegalMoveError(f"illegal action(s): {shown}" + (" …" if len(bad) > 3 else ""))

        captured = np.empty((b, 6), dtype=np.intp)
        captured.fill(s)   # np.full costs a few µs more, which shows at B = 1
        is_jump = np.zeros(b, dtype=bool)
        continuation = state.chain >= 0
        mv = (running if is_pass is None else running & ~is_pass).nonzero()[0]
        turn_ends = running.copy()
        decided = False   # some game of the batch ended with this move

        if len(mv):
            everyone = len(mv) == b   # every game moves (always at B = 1): no gathers needed
            origin, d, dist, to = decoded if everyone else (part[mv] for part in decoded)
            board = state.board
            piece = board[mv, origin]
            side = state.to_move.copy() if everyone else state.to_move[mv]
            slot = slots if everyone else slots[mv]
            board[mv, origin] = EMPTY
            board[mv, to] = piece
            state.pieces[mv, side, slot] = to
            self._toggle(state, mv, origin, side, to)
            key = state.key[mv] ^ t.zobrist[piece, origin] ^ t.zobrist[piece, to]
            any_capture = np.zeros(len(mv), dtype=bool)

            if self.rules.jumps:
                mid = t.nbr1[origin, d]
                jump = (dist == 2) & (board[mv, mid] != EMPTY)
                is_jump[mv] = jump
                knight = (jump & (piece == KNIGHT)).nonzero()[0]
                if len(knight):  # the knight's jump always captures the jumped soldier
                    g, sq = mv[knight], mid[knight]
                    key[knight] ^= t.zobrist[board[g, sq], sq]
                    board[g, sq] = EMPTY
                    self._remove(state, g, 1 - side[knight], sq)
                    self._toggle(state, g, sq, 1 - side[knight])
                    captured[g, 0] = sq
                    any_capture[knight] = True

            def look(squares: np.ndarray, rows=None) -> np.ndarray:
                g = mv if rows is None else mv[rows]
                return board[g[:, None], squares]

            cap, n1, p1 = self._custodial(look, piece, to)
            if np.count_nonzero(cap):
                g, dirs = np.nonzero(cap)
                key ^= np.bitwise_xor.reduce(np.where(cap, t.zobrist[p1, n1], np.uint64(0)), axis=1)
                board[mv[g], n1[g, dirs]] = EMPTY
                self._remove(state, mv[g], 1 - side[g], n1[g, dirs])
                self._toggle(state, mv[g], n1[g, dirs], 1 - side[g])
                captured[mv, 1:5] = np.where(cap, n1, s)
                any_capture |= cap.any(axis=1)

            # The king: his own move updates his square and may escape; an attackers' move next
            # to him may capture him.
            king_moved = piece == KING
            esc = None
            if np.count_nonzero(king_moved):
                state.king_sq[mv[king_moved]] = to[king_moved]
                esc = king_moved & t.escape[to]
            ks = state.king_sq[mv]
            kc = self._king_captured(look, piece, to, side, ks)
            if np.count_nonzero(kc):
                decided = True
                g = mv[kc]
                key[kc] ^= t.zobrist[KING, ks[kc]]
                board[g, ks[kc]] = EMPTY
                self._remove(state, g, np.ones(len(g), dtype=np.int8), ks[kc])
                self._toggle(state, g, ks[kc], np.ones(len(g), dtype=np.int8))
                captured[g, 5] = ks[kc]
                state.king_sq[g] = s
                any_capture |= kc
                self._finish(state, g, ATTACKER_WINS, KING_CAPTURED)
            state.key[mv] = key
            if esc is not None and np.count_nonzero(esc):
                self._finish(state, mv[esc], DEFENDER_WINS, ESCAPED)
                decided = True

            if self.rules.encirclement:
                by_attackers = side == 0
                att = mv[by_attackers & (state.reason[mv] == RUNNING) if decided else by_attackers]
                if len(att):
                    enclosed = att[self._encircled(state.occupancy[att])]
                    if len(enclosed):
                        self._finish(state, enclosed, ATTACKER_WINS, ENCIRCLED)
                        decided = True

            if np.count_nonzero(any_capture):
                state.last_irreversible[mv[any_capture]] = state.turn[mv[any_capture]] + 1
                if self.rules.berserk:
                    sel = any_capture & (state.reason[mv] == RUNNING)
                    if np.count_nonzero(sel):
                        chained = self._start_chains(state, mv[sel], to[sel], piece[sel], side[sel],
                                                     slot[sel])
                        turn_ends[chained] = False

        self._end_turn(state, turn_ends.nonzero()[0], maybe_finished=decided)
        return StepInfo(captured=captured, jump=is_jump, continuation=continuation & running,
                        turn_ended=turn_ends)

    # --- captures: one definition for played and for hypothetical moves ----------------------
    #
    # ``look(squares)`` returns the piece codes on ``squares`` (shape (M, …)) of the board as it
    # stands after the move, so the same functions judge a move that was made (a plain lookup)
    # and a berserk continuation that is only being considered (a lookup with the move overlaid).

    def _custodial(self, look, piece, to):
        """(M, 4) custodial captures next to ``to`` by the pieces ``piece`` that landed there
        (RULES §3.3-3.5), with the neighbouring squares and their codes."""
        t = self.tables
        near = t.nbr12.take(to, axis=0)                      # (M, 8): both rings of neighbours
        codes = look(near)
        n1, n2, p1, p2 = near[:, :4], near[:, 4:], codes[:, :4], codes[:, 4:]
        mover = piece.astype(np.intp)[:, None]
        cap = t.victim[mover, p1] & (t.anvil[mover, p2] | t.square_anvil[n2, (p2 == EMPTY).view(np.int8)])
        return cap, n1, p1

    def _king_captured(self, look, piece, to, side, ks) -> np.ndarray:
        """(M,) bool: this attackers' move to ``to`` captures the king on ``ks`` (§3.6, §5)."""
        t = self.tables
        adjacent = t.king_adjacent[ks, to] & (side == 0)
        if not np.count_nonzero(adjacent):
            return adjacent
        result = np.zeros(len(to), dtype=bool)
        r = adjacent.nonzero()[0]
        k = ks[r]
        knr = t.nbr1[k]
        pk = look(knr, r)
        hostile = IS_ATTACKER[pk] | t.king_hostile[knr]
        if self.rules.throne_hostile:
            hostile |= t.is_throne[knr] & (pk == EMPTY)
        captured = hostile.all(axis=1)
        # The square beyond the king, seen from the moved piece.
        d_mover = (knr == to[r, None]).argmax(axis=1)
        opp = t.nbr1[k, OPPOSITE[d_mover]]
        p_opp = look(opp[:, None], r)[:, 0]
        if self.rules.king_capture == "tablut":
            near_throne = (k == t.throne) | t.is_throne[knr].any(axis=1)
            opp_hostile = IS_ATTACKER[p_opp] | t.always_hostile[opp]
            if self.rules.throne_hostile:
                opp_hostile |= t.is_throne[opp] & (p_opp == EMPTY)
            captured = np.where(near_throne, captured, opp_hostile)
        if self.rules.commander_sandwich:
            sandwich = (piece[r] == COMMANDER) & ((p_opp == COMMANDER) | t.is_corner[opp])
            if not self.rules.commander_capture_on_throne:
                sandwich &= k != t.throne
            captured |= sandwich
        result[r] = captured
        return result

    def _encircled(self, occupancy: np.ndarray) -> np.ndarray:
        """(R,) bool: no defender can reach the edge through squares free of attackers (§3.7).

        A flood fill over rows as N-bit ints, from the open edge squares, stopping for each game as
        soon as it touches a defender (not encircled) or stops growing (encircled).
        """
        t = self.tables
        r = occupancy.shape[0]
        open_rows = ~occupancy[:, 0] & np.uint32(t.full_row)
        def_rows = occupancy[:, 1]
        reach = open_rows & t.edge_rows
        found = (reach & def_rows).any(axis=1)
        if np.count_nonzero(found) == r:   # the usual case: a defender stands on an open edge square
            return ~found
        live = (~found).nonzero()[0]
        encircled = np.zeros(r, dtype=bool)
        x, o, dr = reach[live], open_rows[live], def_rows[live]
        while len(live):
            # Two growth steps per check: the checks cost more numpy calls than a step, and
            # growing past the first contact changes nothing (the fill only ever grows).
            for _ in range(2):
                before = x
                x = x | (x << 1) | (x >> 1)
                x[:, 1:] |= before[:, :-1]
                x[:, :-1] |= before[:, 1:]
                x &= o
            hit = (x & dr).any(axis=1)
            stuck = (x == before).all(axis=1)
            done = hit | stuck
            if np.count_nonzero(done):
                encircled[live[stuck & ~hit]] = True
                keep = ~done
                live, x, o, dr = live[keep], x[keep], o[keep], dr[keep]
        return encircled

    def _start_chains(self, state: State, rows: np.ndarray, square: np.ndarray, piece: np.ndarray,
                      side: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """Open berserk chains where the piece that just captured can capture again (§5, §6.2).

        The continuation mask holds only that piece's moves that capture (a custodial capture,
        the knight's jump, the king) or, for the king, reach an escape square. Returns the rows
        where a chain is now pending; their ``moves`` and ``chain`` are set.
        """
        t = self.tables
        board = state.board
        r = len(rows)
        x = self._packed_moves(board[rows], state.lines[rows], side, square[:, None])[:, 0]  # (R, 4)
        ri, di, ki = np.nonzero((x[:, :, None] >> self._bit_positions) & 1)
        if not len(ri):
            return rows[:0]
        # One hypothetical move per candidate: the piece leaves `org` and lands on `land`.
        g, pc, sd, org = rows[ri], piece[ri], side[ri], square[ri]
        land = t.dest[org, di, ki]
        mid = t.nbr1[org, di]
        knight_cap = (ki == 1) & (board[g, mid] != EMPTY) & (pc == KNIGHT)

        def look(squares: np.ndarray, sub=None) -> np.ndarray:
            sel = slice(None) if sub is None else sub
            v = board[g[sel][:, None], squares]
            v = np.where(squares == org[sel][:, None], EMPTY, v)
            v = np.where(squares == land[sel][:, None], pc[sel][:, None], v)
            return np.where(knight_cap[sel][:, None] & (squares == mid[sel][:, None]), EMPTY, v)

        cap, _, _ = self._custodial(look, pc, land)
        good = knight_cap | cap.any(axis=1) | ((pc == KING) & t.escape[land])
        good |= self._king_captured(look, pc, land, sd, state.king_sq[g])
        cont = np.zeros((r, 4), dtype=x.dtype)
        np.bitwise_or.at(cont, (ri[good], di[good]), (1 << ki[good]).astype(x.dtype))
        pending = cont.any(axis=1).nonzero()[0]
        chained = rows[pending]
        state.moves[chained] = 0
        state.moves[chained, slot[pending]] = cont[pending]
        state.chain[chained] = square[pending]
        return chained

    def _finish(self, state: State, rows: np.ndarray, winner: int, reason: int) -> None:
        """End the running games among ``rows`` with this winner and reason."""
        if len(rows):
            rows = rows[state.reason[rows] == RUNNING]
            state.winner[rows] = winner
            state.reason[rows] = reason
            state.moves[rows] = 0

    def _end_turn(self, state: State, rows: np.ndarray, maybe_finished: bool = True) -> None:
        """Hand the move over and judge repetition, no legal move and the move cap (§6.1).

        ``maybe_finished=False`` promises that every game of ``rows`` is still running (no move
        of this step ended one), which saves the check at B = 1."""
        if not len(rows):
            return
        t = self.tables
        # When every game of the batch ends its turn (always at B = 1), whole-batch slices
        # replace the fancy indexing, which copies and costs more per call.
        ix = slice(None) if len(rows) == len(state) else rows
        state.chain[ix] = -1
        state.turn[ix] += 1
        state.to_move[ix] ^= 1
        state.key[ix] ^= t.side_key
        turn = state.turn[rows]
        top = int(turn.max())
        if top >= state.history.shape[1]:
            state.grow_history(2 * state.history.shape[1])
        key = state.key[rows]
        state.history[rows, turn] = key
        fresh = state.last_irreversible[ix] == turn
        if np.count_nonzero(fresh):
            state.seen[rows[fresh]] = False
        maybe_seen = self._bloom_check_and_add(state, rows, key)
        state.repeats[ix] = 1
        if np.count_nonzero(maybe_seen):
            candidates = rows[maybe_seen & (state.reason[ix] == RUNNING)]
            if len(candidates):
                self._count_repeats(state, candidates)
                if self.rules.repetition != "ignore":
                    self._judge_repetition(state, candidates[state.repeats[candidates] >= 3])
                    maybe_finished = True
        if maybe_finished:
            running = state.reason[ix] == RUNNING   # games won by this move, or drawn just now
            if np.count_nonzero(running) < len(rows):
                state.moves[rows[~running]] = 0
                rows = rows[running]
                ix = rows
        if len(rows):
            state.moves[ix] = self._packed_moves(state.board[ix], state.lines[ix], state.to_move[ix],
                                                 self._mover_slots(state, rows))
            self._judge_no_moves(state, rows, ix)
            max_turns = self.rules.max_turns
            if max_turns is not None and top >= max_turns:
                self._finish(state, rows[state.turn[rows] >= max_turns], DRAW, TRUNCATED)

    def _bloom_check_and_add(self, state: State, rows: np.ndarray, key: np.ndarray) -> np.ndarray:
        """Record the current keys (``state.key[rows]``) in the Bloom filter; (R,) whether each
        may have been seen before (False: certainly not, so no repetition is possible)."""
        slot = (key >> np.uint64(56)).astype(np.intp)   # the key's top byte picks the flag
        before = state.seen[rows, slot]
        state.seen[rows, slot] = True
        return before

    def _judge_no_moves(self, state: State, rows: np.ndarray, ix=None) -> None:
        """End the games of ``rows`` whose side to move has no legal move (§6.1). The games must
        be running with no chain pending (a fresh start, or a turn just handed over); ``ix`` is
        ``rows`` or, for the whole batch, ``slice(None)``."""
        if ix is None:
            ix = slice(None) if len(rows) == len(state) else rows
        has_moves = np.logical_or.reduce(state.moves[ix].reshape(len(rows), -1), axis=1)
        if np.count_nonzero(has_moves) < len(rows):
            stuck = rows[~has_moves]
            state.winner[stuck] = 1 - state.to_move[stuck]
            state.reason[stuck] = NO_MOVES
            state.moves[stuck] = 0

    def _count_repeats(self, state: State, rows: np.ndarray) -> None:
        """Set ``repeats`` of ``rows``: occurrences of the current position since the last capture."""
        turn = state.turn[rows]
        lo = int(state.last_irreversible[rows].min())
        hi = int(turn.max()) + 1
        window = state.history[rows, lo:hi]
        cols = np.arange(lo, hi)
        same = (window == state.key[rows, None]) & (cols >= state.last_irreversible[rows, None]) \
            & (cols <= turn[:, None])
        state.repeats[rows] = same.sum(axis=1)

    def _judge_repetition(self, state: State, g: np.ndarray) -> None:
        """Third occurrence of ``Qk`` ends the game; who began the repetition loses (§3.9, §6.4)."""
        if not len(g):
            return
        k = state.turn[g].astype(np.intp)
        hi = int(k.max()) + 1
        hist = state.history[g, :hi]
        ar = np.arange(hi)
        occ = (hist == state.key[g, None]) & (ar <= k[:, None])
        j = np.argmax(np.cumsum(occ, axis=1) == 2, axis=1)          # second occurrence
        p = k - j
        # eq[i] = Q(i-1) == Q(i-1+p), for 1 <= i <= j
        i = ar[1:]
        prev = hist[:, i - 1]
        later = np.take_along_axis(hist, np.minimum(i[None, :] - 1 + p[:, None], hi - 1), axis=1)
        broken = (prev != later) & (i[None, :] <= j[:, None])
        last_broken = np.where(broken.any(axis=1), hi - 1 - np.argmax(broken[:, ::-1], axis=1), 0)
        s_turn = last_broken + 1
        starter = state.start_side[g] ^ ((s_turn - 1) & 1).astype(np.int8)
        if self.rules.repetition == "draw":
            winner = np.full(len(g), DRAW, dtype=np.int8)
        else:
            winner = (1 - starter).astype(np.int8)
        state.winner[g] = winner
        state.reason[g] = REPETITION
        state.moves[g] = 0
