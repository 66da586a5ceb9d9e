"""The board symmetries a variant keeps, as maps of squares, actions and observation planes
(for the learner's augmentation).

A square board has 8 symmetries (the dihedral group: 4 rotations, each with or without a
reflection). A variant keeps one when its rules cannot tell a position from its image: the
engine's square roles (``KernelTables.flags``: corners, throne, escape squares, hostile and
restricted squares) and its move tables (``allowed``: where each piece may stop, per square and
direction) must map onto themselves. Nothing here restates a rule: every map is tried on the
engine's own tables, and those that fail are dropped, so a variant whose layout broke a symmetry
would keep fewer than 8. :func:`board_symmetries` may also ask that the start position map onto
itself (``"layout"``): a stricter set, for variants whose openings are lopsided.

A symmetry is a :class:`Symmetry`: ``squares[sq]`` is the image of square ``sq``,
``directions[d]`` that of direction ``d`` (0 north, 1 east, 2 south, 3 west), ``actions[a]``
that of action ``a`` (a move of ``k`` squares from ``sq`` in ``d`` becomes a move of ``k``
squares from ``squares[sq]`` in ``directions[d]``; pass stays pass), and :meth:`Symmetry.planes`
maps a batch of observation planes.

    >>> from tafl_env.rules import make_rules
    >>> from tafl_env.game import engine_for
    >>> syms = board_symmetries(engine_for(make_rules("legacy_ard_ri")))
    >>> len(syms), syms[0].name
    (8, 'identity')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tafl_env.engine import Engine
from tafl_env.engine.tables import D_FILE, D_RANK

__all__ = ["Symmetry", "board_symmetries", "SYMMETRY_SETS"]

SYMMETRY_SETS = ("rules", "layout", "none")

# (name, (rank, file) -> (rank', file') on centred coordinates), the dihedral group of the square
_MAPS = (
    ("identity", lambda r, f: (r, f)),
    ("rotate90", lambda r, f: (f, -r)),
    ("rotate180", lambda r, f: (-r, -f)),
    ("rotate270", lambda r, f: (-f, r)),
    ("flip_ranks", lambda r, f: (-r, f)),
    ("flip_files", lambda r, f: (r, -f)),
    ("transpose", lambda r, f: (f, r)),
    ("antitranspose", lambda r, f: (-f, -r)),
)


@dataclass(frozen=True)
class Symmetry:
    """One board symmetry (module docstring)."""

    name: str
    squares: np.ndarray
    directions: np.ndarray
    actions: np.ndarray

    def planes(self, obs: np.ndarray) -> np.ndarray:
        """``(B, N, N, C)`` planes of the image positions: square ``sq`` of the image holds what
        square ``inverse(sq)`` held."""
        b, n, _, c = obs.shape
        flat = obs.reshape(b, n * n, c)
        out = np.empty_like(flat)
        out[:, self.squares] = flat
        return out.reshape(obs.shape)

    def inverse(self) -> "Symmetry":
        inv_sq = np.empty_like(self.squares)
        inv_sq[self.squares] = np.arange(len(self.squares))
        inv_d = np.empty_like(self.directions)
        inv_d[self.directions] = np.arange(4)
        inv_a = np.empty_like(self.actions)
        inv_a[self.actions] = np.arange(len(self.actions))
        return Symmetry(self.name + "^-1", inv_sq, inv_d, inv_a)


def _candidate(engine: Engine, name: str, fmap) -> Symmetry:
    n = engine.n
    s = n * n
    sq = np.arange(s)
    # doubled coordinates centred on the board's middle: integer for odd and even N alike
    r2, f2 = 2 * (sq // n) - (n - 1), 2 * (sq % n) - (n - 1)
    rr, ff = fmap(r2, f2)
    squares = ((rr + n - 1) // 2) * n + (ff + n - 1) // 2
    directions = np.empty(4, dtype=np.intp)
    for d in range(4):
        dr, df = fmap(D_RANK[d], D_FILE[d])
        directions[d] = int(np.flatnonzero((D_RANK == dr) & (D_FILE == df))[0])
    k = n - 1
    a = np.arange(s * 4 * k)
    origin, rest = np.divmod(a, 4 * k)
    d, dist = np.divmod(rest, k)
    actions = np.empty(s * 4 * k + 1, dtype=np.intp)
    actions[:-1] = (squares[origin] * 4 + directions[d]) * k + dist
    actions[-1] = s * 4 * k      # pass
    return Symmetry(name, squares.astype(np.intp), directions, actions)


def _keeps_rules(engine: Engine, sym: Symmetry) -> bool:
    tb = engine.kernel_tables
    s = engine.s
    flags = tb.flags[:s]
    if not np.array_equal(flags[sym.squares], flags):
        return False
    allowed = tb.allowed[:, :, :s, :]                 # (side, code, sq, d) distance bits
    image = np.empty_like(allowed)
    image[:, :, sym.squares[:, None], sym.directions[None, :]] = allowed
    if not np.array_equal(image, allowed):
        return False
    # the geometry: moving k squares from the image square in the image direction lands on the
    # image of the target (off the board stays off)
    dest = tb.dest[:s]                                 # (sq, d, k-1) target square (S: off)
    lifted = np.append(sym.squares, s)                 # the off-board sentinel maps to itself
    return np.array_equal(tb.dest[sym.squares[:, None], sym.directions[None, :], :], lifted[dest])


def board_symmetries(engine: Engine, which: str = "rules") -> list[Symmetry]:
    """The symmetries of ``engine``'s variant, identity first: ``"rules"`` — every dihedral map
    under which the engine's square roles and move tables are unchanged; ``"layout"`` — those
    that also map the start position onto itself; ``"none"`` — the identity alone."""
    if which not in SYMMETRY_SETS:
        raise ValueError(f"symmetries must be one of {SYMMETRY_SETS}, got {which!r}")
    out = []
    start = engine.initial_state(1).board[0, :engine.s]
    for name, fmap in _MAPS:
        sym = _candidate(engine, name, fmap)
        if name != "identity" and (which == "none" or not _keeps_rules(engine, sym)):
            continue
        if which == "layout":
            image = np.empty_like(start)
            image[sym.squares] = start                 # square squares[sq] holds start[sq]
            if not np.array_equal(image, start):
                continue
        out.append(sym)
    return out
