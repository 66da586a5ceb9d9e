"""Rules as data: one frozen :class:`RuleSet` per variant plus its start layout.

A variant is nothing but a ``RuleSet`` value; the engine reads every rule from it and has no
variant-specific branches. Every field is a keyword option of :func:`make_rules` (and therefore of
``tafl_env.env(variant, **options)``, :class:`tafl_env.Game` and the ``tafl`` command), so a rule of
``RULES.md`` marked **(option)** is switched without touching code::

    >>> from tafl_env.rules import make_rules
    >>> make_rules("historical_tablut", repetition="draw").repetition
    'draw'
    >>> make_rules("historical_tablut", max_turns=0)
    Traceback (most recent call last):
    ...
    tafl_env.errors.InvalidOptionError: option max_turns=0 is out of range: an int from 1 to 9223372036854775807 or None (no cap)

The options and their defaults (RULES.md §3-§5; every variant's values in RULES.md §8):

==============================  =========================================================================
field                           meaning
==============================  =========================================================================
``board_size``                  N of the N×N board (odd, 5…19)
``layout``                      start position string (RULES.md §1)
``first_to_move``               ``"attacker"`` or ``"defender"``
``move_range``                  ``None``: slide any distance; ``1``: one square (Ard Ri)
``king_armed``                  the king captures and serves as an anvil (§3.5)
``king_capture``                ``"four_sided"`` or ``"tablut"`` (§3.6)
``edge_hostile_to_king``        the off-board edge counts as a hostile side in 4-side king capture
``escape``                      ``"corners"`` or ``"edge"`` (§3.7)
``hostile_corners``             corners are hostile to every piece, occupied or not (§6.5)
``restricted_corners``          only the king may enter a corner (§3.2)
``throne_hostile``              the *empty* throne is hostile to every piece (§3.4)
``throne_passable``             every piece may slide through the empty throne (§3.2)
``encirclement``                attackers win by encirclement (§3.7)
``jumps``                       king, knight and commanders jump over an enemy soldier (§5)
``berserk``                     after a capture the same piece may capture again (§5)
``commander_sandwich``          a moving commander plus a commander or corner beyond captures the king
``commander_capture_on_throne`` the commander sandwich also works on the throne (§5 **option**, off)
``repetition``                  ``"starter_loses"`` | ``"draw"`` | ``"ignore"`` (§3.9 **option**)
``max_turns``                   turns before the episode is truncated, ``None`` for no cap (§3.10)
==============================  =========================================================================
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidOptionError, InvalidPositionError, UnknownVariantError
from .notation import EMPTY, KING, parse_position, square_name

ATTACKER = 0
DEFENDER = 1
SIDES = ("attacker", "defender")

REPETITION_MODES = ("starter_loses", "draw", "ignore")
KING_CAPTURE_MODES = ("four_sided", "tablut")
ESCAPE_MODES = ("corners", "edge")
MAX_TURNS_CAP = 2**63 - 1
"""The largest move cap: the engine's tables hold it as a 64-bit int (``None`` is no cap)."""


def side_index(side: str | int) -> int:
    """``"attacker"``/``0`` → 0, ``"defender"``/``1`` → 1; anything else is an error naming it."""
    if isinstance(side, str):
        if side in SIDES:
            return SIDES.index(side)
        raise InvalidOptionError(f"unknown side {side!r}: expected 'attacker' or 'defender'")
    # Only true integers: ``1.0 in (0, 1)`` holds, and a bool is an int, but neither names a side.
    if isinstance(side, (int, np.integer)) and not isinstance(side, (bool, np.bool_)) and side in (0, 1):
        return int(side)
    raise InvalidOptionError(f"unknown side {side!r}: expected 'attacker' or 'defender'")


@dataclass(frozen=True)
class RuleSet:
    """Every rule parameter of a variant. See the module docstring for the meaning of each field."""

    name: str
    title: str
    board_size: int
    layout: str
    summary: str = ""
    first_to_move: str = "attacker"
    move_range: int | None = None
    king_armed: bool = False
    king_capture: str = "four_sided"
    edge_hostile_to_king: bool = True
    escape: str = "corners"
    hostile_corners: bool = True
    restricted_corners: bool = True
    throne_hostile: bool = True
    throne_passable: bool = True
    encirclement: bool = True
    jumps: bool = False
    berserk: bool = False
    commander_sandwich: bool = False
    commander_capture_on_throne: bool = False
    repetition: str = "starter_loses"
    max_turns: int | None = 200

    def __post_init__(self) -> None:
        def bad(field: str, expected: str) -> InvalidOptionError:
            return InvalidOptionError(
                f"option {field}={getattr(self, field)!r} is out of range: {expected}"
            )

        n = self.board_size
        if not isinstance(n, int) or isinstance(n, bool) or n < 5 or n > 19 or n % 2 == 0:
            raise bad("board_size", "an odd int from 5 to 19")
        if self.first_to_move not in SIDES:
            raise bad("first_to_move", "'attacker' or 'defender'")
        if self.move_range is not None and (
            not isinstance(self.move_range, int) or isinstance(self.move_range, bool)
            or not 1 <= self.move_range <= n - 1
        ):
            raise bad("move_range", f"None (any distance) or an int from 1 to {n - 1}")
        if self.king_capture not in KING_CAPTURE_MODES:
            raise bad("king_capture", " or ".join(map(repr, KING_CAPTURE_MODES)))
        if self.escape not in ESCAPE_MODES:
            raise bad("escape", " or ".join(map(repr, ESCAPE_MODES)))
        if self.repetition not in REPETITION_MODES:
            raise bad("repetition", " | ".join(map(repr, REPETITION_MODES)))
        if self.max_turns is not None and (
            not isinstance(self.max_turns, int) or isinstance(self.max_turns, bool)
            or not 1 <= self.max_turns <= MAX_TURNS_CAP
        ):
            raise bad("max_turns", f"an int from 1 to {MAX_TURNS_CAP} or None (no cap)")
        for f in dataclasses.fields(self):
            if f.type in ("bool", bool) and not isinstance(getattr(self, f.name), bool):
                raise bad(f.name, "True or False")
        if self.berserk and not self.jumps:
            # Not a rule conflict as such, but berserk chains are only defined for RULES §5.
            pass
        self._check_layout()

    def _check_layout(self) -> None:
        """The start layout must be a position of this board (RULES §1) that the rules allow
        (§6.6: at most one king, only the king on the throne or a restricted corner), so that a bad
        ``layout`` option is an error of :func:`make_rules`, not of the first game built from it."""
        n = self.board_size
        try:
            cells = parse_position(self.layout, n)
        except InvalidPositionError as exc:
            raise InvalidOptionError(
                f"option layout={self.layout!r} is not a position of a {n}x{n} board: {exc}") from None
        kings = np.flatnonzero(cells == KING)
        if len(kings) > 1:
            raise InvalidOptionError(
                f"option layout={self.layout!r} has {len(kings)} kings "
                f"({', '.join(square_name(int(k), n) for k in kings)}); at most one is allowed")
        s = n * n
        restricted = {(n // 2) * n + n // 2}                 # the throne
        if self.restricted_corners:
            restricted |= {0, n - 1, s - n, s - 1}
        for sq in sorted(restricted):
            if cells[sq] not in (EMPTY, KING):
                raise InvalidOptionError(
                    f"option layout={self.layout!r} has a non-king piece on the restricted square "
                    f"{square_name(sq, n)}")

    @property
    def num_squares(self) -> int:
        return self.board_size * self.board_size

    @property
    def num_actions(self) -> int:
        """``N*N*4*(N-1) + 1``: every (square, direction, distance) and the final pass action."""
        n = self.board_size
        return n * n * 4 * (n - 1) + 1

    @property
    def first_side(self) -> int:
        return SIDES.index(self.first_to_move)

    def replace(self, **options: Any) -> "RuleSet":
        """A copy with some fields changed; unknown names are an error naming them."""
        return _apply_options(self, options)


def _apply_options(base: RuleSet, options: dict[str, Any]) -> RuleSet:
    names = {f.name for f in dataclasses.fields(RuleSet)} - {"name", "title", "summary"}
    unknown = sorted(set(options) - names)
    if unknown:
        raise InvalidOptionError(
            f"unknown rule option(s) {', '.join(unknown)} for {base.name}; "
            f"valid options: {', '.join(sorted(names))}"
        )
    return dataclasses.replace(base, **options)


# --- the variants -------------------------------------------------------------------------------

_LEGACY = dict(
    king_armed=False, king_capture="four_sided", edge_hostile_to_king=True, escape="corners",
    hostile_corners=True, restricted_corners=True, encirclement=True,
)

_VARIANTS: dict[str, RuleSet] = {}


def _register(rules: RuleSet, *, extra: bool = False) -> None:
    _VARIANTS[rules.name] = rules
    if not extra:
        VARIANTS.append(rules.name)
    else:
        EXTRA_VARIANTS.append(rules.name)


VARIANTS: list[str] = []
"""The five variant ids of RULES.md, in its order."""
EXTRA_VARIANTS: list[str] = []
"""Further variants the same data gives at no cost (Legacy Tablut, Brandubh, Hnefatafl)."""

_register(RuleSet(
    name="legacy_alea_evangelii", title="Legacy Alea Evangelii", board_size=19,
    layout="/2t2t7t2t2/19/t4t7t4t/7t1t1t7/6t1T1T1t6/t1t2t7t2t1t/4t4T4t4/3t4T1T4t3/"
           "4T2T1T1T2T4/3t2T1TKT1T2t3/4T2T1T1T2T4/3t4T1T4t3/4t4T4t4/t1t2t7t2t1t/"
           "6t1T1T1t6/7t1t1t7/t4t7t4t/19/2t2t7t2t2/",
    summary="19x19, 48 attackers vs king + 24, unarmed king, 4-side capture (edge hostile), corner escape",
    max_turns=500, **_LEGACY,
))
_register(RuleSet(
    name="legacy_tawlbwrdd", title="Legacy Tawlbwrdd", board_size=11,
    layout="/4ttt4/4t1t4/5t5/5T5/tt2TTT2tt/t1tTTKTTt1t/tt2TTT2tt/5T5/5t5/4t1t4/4ttt4/",
    summary="11x11, 24 attackers vs king + 12, unarmed king, 4-side capture (edge hostile), corner escape",
    max_turns=300, **_LEGACY,
))
_register(RuleSet(
    name="historical_tablut", title="Historisches Tablut", board_size=9,
    layout="/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/",
    summary="9x9, 16 attackers vs king + 8, armed king, Tablut king capture, edge escape, plain corners",
    king_armed=True, king_capture="tablut", edge_hostile_to_king=False, escape="edge",
    hostile_corners=False, restricted_corners=False, encirclement=True, max_turns=200,
))
_register(RuleSet(
    name="legacy_ard_ri", title="Legacy Ard Ri", board_size=7,
    layout="/2ttt2/3t3/t1TTT1t/ttTKTtt/t1TTT1t/3t3/2ttt2/",
    summary="7x7, 16 attackers vs king + 8, one-square moves, defenders first, armed king, corner escape",
    first_to_move="defender", move_range=1, max_turns=150,
    **{**_LEGACY, "king_armed": True},
))
_register(RuleSet(
    name="legacy_berserk", title="Legacy Berserk Hnefatafl", board_size=11,
    layout="/3ttttt3/5c5/11/t4T4t/t3TTT3t/tc1TTKTT1ct/t3TNT3t/t4T4t/11/5c5/3ttttt3/",
    summary="11x11, 20 + 4 commanders vs king + 11 + knight, jumps, berserk capture chains, corner escape",
    king_armed=True, king_capture="four_sided", edge_hostile_to_king=False, escape="corners",
    hostile_corners=True, restricted_corners=True, encirclement=False, jumps=True, berserk=True,
    commander_sandwich=True, max_turns=300,
))
_register(RuleSet(
    name="legacy_tablut", title="Legacy Tablut", board_size=9,
    layout="/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/",
    summary="9x9 Tablut layout under the Legacy rules (unarmed king, 4-side capture, corner escape)",
    max_turns=200, **_LEGACY,
), extra=True)
_register(RuleSet(
    name="legacy_brandubh", title="Legacy Brandubh", board_size=7,
    layout="/3t3/3t3/3T3/ttTKTtt/3T3/3t3/3t3/",
    summary="7x7, 8 attackers vs king + 4 under the Legacy rules",
    max_turns=150, **_LEGACY,
), extra=True)
_register(RuleSet(
    name="legacy_hnefatafl", title="Legacy Hnefatafl", board_size=11,
    layout="/3ttttt3/5t5/11/t4T4t/t3TTT3t/tt1TTKTT1tt/t3TTT3t/t4T4t/11/5t5/3ttttt3/",
    summary="11x11, 24 attackers vs king + 12 under the Legacy rules",
    max_turns=300, **_LEGACY,
), extra=True)


def all_variant_ids() -> list[str]:
    """The five variants of RULES.md followed by the extra ones."""
    return VARIANTS + EXTRA_VARIANTS


def base_rules(variant: str) -> RuleSet:
    """The default :class:`RuleSet` of ``variant``."""
    try:
        return _VARIANTS[variant]
    except (KeyError, TypeError):
        raise UnknownVariantError(
            f"unknown variant {variant!r}; known variants: {', '.join(all_variant_ids())}"
        ) from None


def make_rules(variant: str | RuleSet, **options: Any) -> RuleSet:
    """The rules of ``variant`` (an id or a ``RuleSet``) with ``options`` applied and validated."""
    base = variant if isinstance(variant, RuleSet) else base_rules(variant)
    return _apply_options(base, options) if options else base
