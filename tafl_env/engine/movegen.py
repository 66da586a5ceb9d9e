"""Move generation, compiled: slides and jumps of one piece, the side to move's packed moves,
legal-action masks, move counts and uniform random choice.

Slides in one paragraph: for every row and column the state keeps its empty squares as an N-bit
integer, in both orientations (``State.lines``). Shifting a square's line so that its first
neighbour in direction d is bit 0, the run of trailing ones (``x & ~(x + 1)``) is the set of squares
it can slide to; bit k-1 stands for distance k, which is already the action layout
``action = (sq*4 + d)*(N-1) + (k-1)``. One table lookup (``KernelTables.allowed``) removes what the
piece may not do (restricted squares, the throne where it blocks, one-square moves). A jump
(RULES.md §5) is bit 1, distance 2: over one adjacent enemy soldier onto an empty square.

``State.moves[b, i, d]`` holds these bits for the piece in slot i of the side to move, so the
legal mask of a game is a handful of small ints that the step keeps up to date.
"""

from __future__ import annotations

import numpy as np

from ..notation import EMPTY, KING
from ._bits import ctpop, cttz, store_bytes
from ._jit import ix, leaf
from .tables import F_RESTRICTED, IS_PLAIN_SOLDIER, P_K, P_NUM_ACTIONS, P_PASS, P_S, SIDE_OF

PASS_SLOT = -2   # the "slot" of a legal pass (berserk chains)

# _SPREAD8[v]: the eight bits of the byte v as eight 0/1 bytes of a little-endian uint64 (bit j
# in byte j), what one 8-byte store writes into a legal-action mask; _SPREAD4 the same for 4 bits.
_SPREAD8 = np.array([sum(((v >> j) & 1) << (8 * j) for j in range(8)) for v in range(256)],
                    dtype=np.uint64)
_SPREAD4 = _SPREAD8[:16].astype(np.uint32)


@leaf
def popcount(x):
    """Number of set bits of a non-negative int below 2**63 (one ``popcnt`` instruction)."""
    return ctpop(np.int64(x))


@leaf
def lowest_bit(x):
    """Index of the lowest set bit of a positive int (one ``tzcnt`` instruction)."""
    return cttz(np.int64(x))


@leaf
def bits_through_highest(x):
    """The bits of ``x`` (below 2**32) from bit 0 up to its highest set bit, all set (0 for 0):
    the files up to the last piece of a rank."""
    x |= x >> 1
    x |= x >> 2
    x |= x >> 4
    x |= x >> 8
    return x | (x >> 16)


@leaf
def piece_moves(board, lines, tb, g, side, sq, out):
    """Write the four packed move masks of the piece on ``sq`` (of ``side``) in game ``g`` into
    ``out[0:4]``; returns how many moves it has."""
    g, at = ix(g), ix(sq)
    code = board[g, at]
    line, allowed = tb.line, tb.allowed[ix(side), ix(code), at]
    count = 0
    for d in range(4):
        x = np.int64(lines[g, ix(line[at, d])]) >> line[at, 4 + d]
        x &= ~(x + 1)
        x &= allowed[d]
        out[d] = x
        count += popcount(x)
    if tb.jumper[ix(code)]:
        nbr = tb.nbr
        for d in range(4):
            over = board[g, ix(nbr[at, d])]
            land = ix(nbr[at, 4 + d])
            if (IS_PLAIN_SOLDIER[over] and SIDE_OF[over] != side and board[g, land] == EMPTY
                    and (code == KING or (tb.flags[land] & F_RESTRICTED) == 0)):
                out[d] |= 2   # the first square is taken: no slide in this direction
                count += 1
    return count


@leaf
def generate_moves(board, to_move, lines, pieces, moves, tb, g):
    """Fill ``moves[g]`` with the packed moves of the side to move; returns how many there are
    (what :func:`count_moves` would count, outside berserk chains)."""
    g = ix(g)
    side = to_move[g]
    s = tb.params[P_S]
    total = 0
    for i in range(pieces.shape[2]):
        sq = pieces[g, ix(side), i]
        if sq == s:
            for d in range(4):
                moves[g, i, d] = 0
        else:
            total += piece_moves(board, lines, tb, g, side, sq, moves[g, i])
    return total


@leaf
def count_moves(moves, chain, g):
    """Legal actions of game ``g``: the packed moves plus pass inside a berserk chain."""
    total = 0
    for i in range(moves.shape[1]):
        for d in range(4):
            total += popcount(np.int64(moves[g, i, d]))
    return total + (1 if chain[g] >= 0 else 0)


@leaf
def write_mask(to_move, chain, pieces, moves, tb, g, out, row):
    """Write the legal-action mask of game ``g`` into ``out[row, :num_actions]`` (zeroing it
    first); ``out`` is a C-contiguous int8 array.

    Each piece's four move masks are unpacked eight bits at a time into eight bytes by a table
    lookup and stored with one unaligned 8-byte store (four and four on boards whose direction
    blocks are narrower than 8), in overlapping chunks so that every store stays inside the
    piece's block: no per-move stores and no data-dependent branches (a loop over the set bits
    mispredicted about once per direction and ran at half the speed of byte stores, which ran at
    a third of this)."""
    k = tb.params[P_K]
    side = to_move[g]
    s = tb.params[P_S]
    width = out.shape[1]
    start = row * width
    for j in range(tb.params[P_NUM_ACTIONS]):
        out[row, j] = 0
    wide = k >= 8
    last = k - 8 if wide else k - 4   # the last chunk ends exactly at the block's end
    for i in range(pieces.shape[2]):
        sq = pieces[g, side, i]
        if sq == s:
            continue
        base = start + sq * 4 * k
        for d in range(4):
            x = np.int64(moves[g, i, d])
            at = base + d * k
            if wide:
                c = 0
                while c < last:
                    store_bytes(out, at + c, _SPREAD8[(x >> c) & 255])
                    c += 8
                store_bytes(out, at + last, _SPREAD8[(x >> last) & 255])
            else:
                store_bytes(out, at, _SPREAD4[x & 15])
                store_bytes(out, at + last, _SPREAD4[(x >> last) & 15])
    if chain[g] >= 0:
        out[row, tb.params[P_PASS]] = 1


@leaf
def nth_move(to_move, chain, pieces, moves, tb, g, r):
    """The r-th legal action of game ``g`` (0-based, in slot, direction, distance order; pass
    last) and the slot of the piece it moves (``PASS_SLOT`` for pass); ``(-1, -1)`` when there
    are at most r."""
    k = tb.params[P_K]
    side = to_move[g]
    for i in range(moves.shape[1]):
        for d in range(4):
            x = np.int64(moves[g, i, d])
            c = popcount(x)
            if r < c:
                for _ in range(r):
                    x &= x - 1
                return (pieces[g, side, i] * 4 + d) * k + lowest_bit(x), np.int64(i)
            r -= c
    if r == 0 and chain[g] >= 0:
        return tb.params[P_PASS], np.int64(PASS_SLOT)
    return np.int64(-1), np.int64(-1)


@leaf
def random_move(to_move, chain, pieces, moves, tb, g, u):
    """A uniformly random legal action of game ``g`` for ``u`` uniform in [0, 1) and its slot
    (as :func:`nth_move`); ``(-1, -1)`` if there is none."""
    return random_move_of(to_move, chain, pieces, moves, tb, g, u, count_moves(moves, chain, g))


@leaf
def random_move_of(to_move, chain, pieces, moves, tb, g, u, total):
    """:func:`random_move` where the number of legal actions, ``total``, is known."""
    if total == 0:
        return np.int64(-1), np.int64(-1)
    r = min(np.int64(u * total), total - 1)
    return nth_move(to_move, chain, pieces, moves, tb, g, r)


@leaf
def find_slot(pieces, g, side, sq):
    """The slot of the piece of ``side`` on ``sq`` in game ``g``, or -1."""
    for i in range(pieces.shape[2]):
        if pieces[g, side, i] == sq:
            return i
    return -1
