"""Scenario tests: every rule of RULES.md §3 and every column of the §4 table, for the four
non-Berserk variants (Berserk's own rules, §5, are tested elsewhere).

A scenario is a small diagram, the side to move, one move in notation and what must follow: the
captured squares, the result and the reason, or that the move is illegal. Diagrams are drawn as in
RULES.md §2: one line per rank, the rank number first, then the squares from file ``a``:
``A`` attacker, ``D`` defender, ``K`` king, ``.`` empty. Ranks that are not drawn are empty and a short
row is padded with empty squares, so a pattern drawn in files a-f, ranks 1-4 (away from every
throne: j10, f6, e5, d4) is the same position on all four boards and runs as one scenario per variant
(moves of one square, so that Ard Ri can play them too).

Every played scenario also checks what RULES §6.3 says about every turn: the piece moved, exactly the
captured squares were emptied (a captured king included), nothing else changed, one turn was
completed and the move passed to the other side (after ``king_captured`` too). Every illegal move must
raise ``IllegalMoveError`` and leave the game exactly as it was (§7).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tafl_env import Game, IllegalMoveError, InvalidPositionError

from conftest import diagram_pieces, pieces_position

ALEA, TAWL, TABLUT, ARD_RI = ("legacy_alea_evangelii", "legacy_tawlbwrdd", "historical_tablut",
                              "legacy_ard_ri")
ALL = (ALEA, TAWL, TABLUT, ARD_RI)
LEGACY = (ALEA, TAWL, ARD_RI)        # corner escape, hostile corners, 4-side king capture, edge hostile to king
SLIDING = (ALEA, TAWL, TABLUT)
UNARMED = (ALEA, TAWL)
ARMED = (TABLUT, ARD_RI)
SIZE = {ALEA: 19, TAWL: 11, TABLUT: 9, ARD_RI: 7}
SHORT = {ALEA: "alea", TAWL: "tawlbwrdd", TABLUT: "tablut", ARD_RI: "ardri"}
OTHER = {"attacker": "defender", "defender": "attacker"}

# --- diagrams and positions ---------------------------------------------------------------------

FILES = "abcdefghijklmnopqrs"
LETTER = {"A": "t", "D": "T", "K": "K"}  # RULES §2 diagram letters → position-string letters (§1)


def board(n: int, diagram: str) -> dict[str, str]:
    """``{square: letter}`` of a diagram (see the module docstring); letters as in position strings."""
    return diagram_pieces(diagram, n, partial=True)


def position(n: int, pieces: dict[str, str]) -> str:
    """The position string (RULES §1: rank 1 first, digits for runs of empty squares)."""
    return pieces_position(pieces, n)


def pieces_of(pos: str, n: int) -> dict[str, str]:
    """The inverse of :func:`position`, for reading a game's position back."""
    pieces: dict[str, str] = {}
    for rank, record in enumerate(pos.strip("/").split("/"), start=1):
        file, digits = 0, ""
        for ch in record + " ":
            if ch.isdigit():
                digits += ch
                continue
            file += int(digits or 0)
            digits = ""
            if ch != " ":
                pieces[f"{FILES[file]}{rank}"] = ch
                file += 1
    return pieces


def square(index: int, n: int) -> str:
    """RULES §1: index ``(rank-1)*N + file``."""
    return f"{FILES[index % n]}{index // n + 1}"


def new_game(variant: str, diagram: str, to_move: str, **options) -> Game:
    n = SIZE[variant]
    return Game(variant, position=position(n, board(n, diagram)), to_move=to_move, **options)


def snapshot(game: Game) -> tuple:
    return (game.position, game.to_move, game.turns, game.result, game.reason, len(game.moves))


def assert_rejected(game: Game, move: str) -> None:
    """``move`` raises IllegalMoveError and the game is exactly as before (RULES §7)."""
    before = snapshot(game)
    with pytest.raises(IllegalMoveError):
        game.push(move)
    assert snapshot(game) == before


def play(game: Game, moves) -> Game:
    for m in moves.split() if isinstance(moves, str) else moves:
        game.push(m)
    return game


# --- scenarios ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    diagram: str
    to_move: str
    move: str  # plain form 'b2-b4', written without a capture suffix


@dataclass(frozen=True)
class Out:
    """What a move must do: ``captures`` squares (any order), then result and reason (None: running)."""

    captures: str = ""
    result: str | None = None
    reason: str | None = None
    legal: bool = True


RUNS = Out()
ILLEGAL = Out(legal=False)


def won(by: str, reason: str, captures: str = "") -> Out:
    return Out(captures, by, reason)


def scenario(name: str, diagram: str, to_move: str, move: str, expect: dict) -> list:
    """One ``pytest.param(variant, Case, Out)`` per variant; ``expect`` maps variant tuples to Out."""
    case = Case(diagram, to_move, move)
    return [pytest.param(v, case, out, id=f"{name}-{SHORT[v]}")
            for variants, out in expect.items() for v in variants]


def check(variant: str, case: Case, out: Out) -> Game:
    n = SIZE[variant]
    before = board(n, case.diagram)
    game = Game(variant, position=position(n, before), to_move=case.to_move)
    assert game.position == position(n, before) and not game.is_over()
    if not out.legal:
        assert_rejected(game, case.move)
        return game
    played = game.push(case.move)
    captured = {square(s, n) for s in played.captures}
    assert captured == set(out.captures.split()), f"{case.move} captured {sorted(captured)}"
    origin, target = case.move.split("-")
    after = dict(before)
    after[target] = after.pop(origin)
    for sq in captured:
        del after[sq]
    assert game.position == position(n, after), "the board after the move"
    assert (game.result, game.reason) == (out.result, out.reason)
    assert game.turns == 1
    assert game.to_move == OTHER[case.to_move], "every finished turn hands the move over (§6.3)"
    return game


# === §3.1 Moves ==================================================================================

MOVES_DIAGRAM = """
    6 .K
    3 ...
    2 .AD
"""

MOVES = [
    *scenario("step", MOVES_DIAGRAM, "attacker", "b2-b3", {ALL: RUNS}),
    *scenario("slide-three-squares", MOVES_DIAGRAM, "attacker", "b2-b5", {SLIDING: RUNS, (ARD_RI,): ILLEGAL}),
    *scenario("slide-two-squares", MOVES_DIAGRAM, "attacker", "b2-b4", {SLIDING: RUNS, (ARD_RI,): ILLEGAL}),
    *scenario("onto-a-piece", MOVES_DIAGRAM, "attacker", "b2-c2", {ALL: ILLEGAL}),
    *scenario("over-a-piece", MOVES_DIAGRAM, "attacker", "b2-d2", {ALL: ILLEGAL}),
    *scenario("diagonal", MOVES_DIAGRAM, "attacker", "b2-c3", {ALL: ILLEGAL}),
    *scenario("the-other-sides-piece", MOVES_DIAGRAM, "attacker", "c2-c3", {ALL: ILLEGAL}),
    *scenario("from-an-empty-square", MOVES_DIAGRAM, "attacker", "e3-e4", {ALL: ILLEGAL}),
    *scenario("not-moving", MOVES_DIAGRAM, "attacker", "b2-b2", {ALL: ILLEGAL}),
    *scenario("pass-outside-a-berserk-chain", MOVES_DIAGRAM, "attacker", "pass", {ALL: ILLEGAL}),
    *scenario("king-step", MOVES_DIAGRAM, "defender", "b6-b7", {ALL: RUNS}),
    *scenario("king-slide", MOVES_DIAGRAM, "defender", "b6-e6", {SLIDING: RUNS, (ARD_RI,): ILLEGAL}),
]


@pytest.mark.parametrize("variant, case, out", MOVES)
def test_3_1_moves(variant, case, out):
    check(variant, case, out)


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_1_slide_any_distance_or_one_step(variant):
    """On an open board a soldier reaches its whole rank and file (Ard Ri: the four neighbours)."""
    n = SIZE[variant]
    game = new_game(variant, "5 ...K\n2 .A", "attacker")
    reach = {square(m.target, n) for m in game.legal_moves() if square(m.origin, n) == "b2"}
    if variant == ARD_RI:
        assert reach == {"b3", "c2", "b1", "a2"}
    else:
        assert reach == ({f"b{r}" for r in range(1, n + 1)} | {f"{f}2" for f in FILES[:n]}) - {"b2"}


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_1_slides_stop_before_pieces_of_either_side(variant):
    game = new_game(variant, "6 .D\n5 ...K\n2 .A...D", "attacker")
    reach = {square(m.target, SIZE[variant]) for m in game.legal_moves()
             if square(m.origin, SIZE[variant]) == "b2"}
    expected = {"b3", "c2", "b1", "a2"} if variant == ARD_RI else {"b3", "b4", "b5", "c2", "d2", "e2", "b1", "a2"}
    assert reach == expected


# === §3.2 Restricted squares =====================================================================

# The throne: soldiers may neither stop on it nor cross it while the king is on it, but may slide
# through it while it is empty; the king may stop on it (and come back to it).
THRONE = {
    ALEA: ("13 .........A\n10 ......D\n2 .K", "13 .........A\n10 ......D..K", "7 .........K\n1 .A",
           "j13-j10", "j13-j7", "g10-j10", "g10-m10", "j7-j10"),
    TAWL: ("9 .....A\n6 ..D\n2 .K", "9 .....A\n6 ..D..K", "3 .....K\n1 .A",
           "f9-f6", "f9-f3", "c6-f6", "c6-i6", "f3-f6"),
    TABLUT: ("8 ....A\n5 .D\n2 .K", "8 ....A\n5 .D..K", "2 ....K\n1 .A",
             "e8-e5", "e8-e2", "b5-e5", "b5-h5", "e2-e5"),
}
RESTRICTED = []
for _v, (_empty, _occupied, _king, _a_stop, _a_through, _d_stop, _d_through, _k_back) in THRONE.items():
    RESTRICTED += [
        *scenario("attacker-stops-on-the-throne", _empty, "attacker", _a_stop, {(_v,): ILLEGAL}),
        *scenario("attacker-slides-through-the-empty-throne", _empty, "attacker", _a_through, {(_v,): RUNS}),
        *scenario("defender-stops-on-the-throne", _empty, "defender", _d_stop, {(_v,): ILLEGAL}),
        *scenario("defender-slides-through-the-empty-throne", _empty, "defender", _d_through, {(_v,): RUNS}),
        *scenario("attacker-slides-over-the-occupied-throne", _occupied, "attacker", _a_through, {(_v,): ILLEGAL}),
        *scenario("defender-slides-over-the-occupied-throne", _occupied, "defender", _d_through, {(_v,): ILLEGAL}),
        *scenario("king-returns-to-the-throne", _king, "defender", _k_back, {(_v,): RUNS}),
    ]
RESTRICTED += [
    *scenario("attacker-steps-onto-the-throne", "5 ...A\n2 .K", "attacker", "d5-d4", {(ARD_RI,): ILLEGAL}),
    *scenario("defender-steps-onto-the-throne", "4 ..D\n2 .K", "defender", "c4-d4", {(ARD_RI,): ILLEGAL}),
    *scenario("king-steps-onto-the-throne", "3 ...K\n1 .A", "defender", "d3-d4", {(ARD_RI,): RUNS}),
    # Corners: only the king may enter one, except in Tablut, where they are ordinary squares.
    *scenario("attacker-enters-a-corner", "6 .K\n2 D\n1 .A", "attacker", "b1-a1",
              {LEGACY: ILLEGAL, (TABLUT,): RUNS}),
    *scenario("defender-enters-a-corner", "6 .K\n2 D\n1 .A", "defender", "a2-a1",
              {LEGACY: ILLEGAL, (TABLUT,): RUNS}),
    *scenario("attacker-slides-into-a-corner", "6 .K\n4 A", "attacker", "a4-a1",
              {(ALEA, TAWL): ILLEGAL, (TABLUT,): RUNS}),
    *scenario("attacker-slides-next-to-a-corner", "6 .K\n4 A", "attacker", "a4-a2", {SLIDING: RUNS}),
]


@pytest.mark.parametrize("variant, case, out", RESTRICTED)
def test_3_2_restricted_squares(variant, case, out):
    check(variant, case, out)


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
@pytest.mark.parametrize("letter", ["A", "D"])
def test_3_2_loaded_soldier_on_the_throne_is_rejected(variant, letter):
    throne = {ALEA: "10 .........", TAWL: "6 .....", TABLUT: "5 ....", ARD_RI: "4 ..."}[variant]
    with pytest.raises(InvalidPositionError):
        new_game(variant, f"{throne}{letter}\n2 .K", "attacker")


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
@pytest.mark.parametrize("letter", ["A", "D"])
def test_3_2_loaded_soldier_on_a_corner(variant, letter):
    """Rejected where corners are restricted (RULES §6.6), an ordinary square in Tablut."""
    if variant == TABLUT:
        assert new_game(variant, f"2 .K\n1 {letter}", "attacker").position.startswith(f"/{LETTER[letter]}")
    else:
        with pytest.raises(InvalidPositionError):
            new_game(variant, f"2 .K\n1 {letter}", "attacker")


# === §3.3 Custodial capture ======================================================================

CUSTODIAL = [
    *scenario("attackers-capture-a-defender", "6 .K\n3 ....A\n2 ..AD", "attacker", "e3-e2", {ALL: Out("d2")}),
    *scenario("defenders-capture-an-attacker", "6 .K..A\n3 ....D\n2 ..DA", "defender", "e3-e2", {ALL: Out("d2")}),
    *scenario("vertical-capture", "6 .K\n3 .A\n2 ..D\n1 ..A", "attacker", "b3-c3", {ALL: Out("c2")}),
    *scenario("three-captures-in-one-move", """
        6 .K
        4 ..A
        3 ..D
        2 AD.DA
        1 ..A
    """, "attacker", "c1-c2", {ALL: Out("c3 d2 b2")}),
    *scenario("defenders-make-three-captures", """
        6 A...K
        4 ..D
        3 DA.AD
        2 ..A
        1 ..D
    """, "defender", "c4-c3", {ALL: Out("d3 c2 b3")}),
    *scenario("defender-moves-into-a-sandwich-safely", "6 .K\n3 ...D\n2 ..A.A", "defender", "d3-d2", {ALL: RUNS}),
    *scenario("attacker-moves-into-a-sandwich-safely", "6 .K\n3 ...A\n2 ..D.D", "attacker", "d3-d2", {ALL: RUNS}),
    *scenario("a-standing-sandwich-is-not-a-capture", "6 .K\n3 ....A\n2 ..ADA", "attacker", "e3-d3", {ALL: RUNS}),
    *scenario("two-in-a-row-are-not-captured", "6 .K\n2 .ADD.A", "attacker", "f2-e2", {ALL: RUNS}),
    *scenario("a-diagonal-anvil-does-not-capture", "6 .K\n3 ..A\n2 ...D.A", "attacker", "f2-e2", {ALL: RUNS}),
    *scenario("the-edge-is-not-hostile-to-a-defender", "6 .K\n3 .A\n2 D", "attacker", "b3-b2", {ALL: RUNS}),
    *scenario("the-edge-is-not-hostile-to-an-attacker", "6 .K\n3 .D\n2 A\n1 ...A", "defender", "b3-b2", {ALL: RUNS}),
    *scenario("the-bottom-edge-is-not-hostile", "6 .K\n3 ..A\n1 ..D", "attacker", "c3-c2", {ALL: RUNS}),
]


@pytest.mark.parametrize("variant, case, out", CUSTODIAL)
def test_3_3_custodial_capture(variant, case, out):
    check(variant, case, out)


# === §3.4 Hostile squares ========================================================================

# The empty throne is hostile to both sides; with the king on it, it is not hostile, but an armed
# king is an anvil all the same (§3.5). Per variant: the same move with the throne empty and occupied.
HOSTILE = [
    *scenario("attackers-capture-against-the-empty-throne", "12 ..A\n11 .........D\n2 .K", "attacker",
              "c12-j12", {(ALEA,): Out("j11")}),
    *scenario("no-capture-against-the-occupied-throne", "12 ..A\n11 .........D\n10 .........K", "attacker",
              "c12-j12", {(ALEA,): RUNS}),
    *scenario("defenders-capture-against-the-empty-throne", "10 ..........A\n3 ...........D\n2 .K\n1 ...A",
              "defender", "l3-l10", {(ALEA,): Out("k10")}),
    *scenario("defenders-against-the-king-on-the-throne", "10 .........KA\n3 ...........D\n1 ...A",
              "defender", "l3-l10", {(ALEA,): RUNS}),

    *scenario("attackers-capture-against-the-empty-throne", "5 .....D\n4 ..A\n2 .K", "attacker", "c4-f4",
              {(TAWL,): Out("f5")}),
    *scenario("no-capture-against-the-occupied-throne", "6 .....K\n5 .....D\n4 ..A", "attacker", "c4-f4",
              {(TAWL,): RUNS}),
    *scenario("defenders-capture-against-the-empty-throne", "8 ..D\n7 .....A\n2 .K\n1 ...A", "defender",
              "c8-f8", {(TAWL,): Out("f7")}),
    *scenario("defenders-against-the-king-on-the-throne", "8 ..D\n7 .....A\n6 .....K\n1 ...A", "defender",
              "c8-f8", {(TAWL,): RUNS}),

    *scenario("attackers-capture-against-the-empty-throne", "7 A\n6 ....D\n2 .K", "attacker", "a7-e7",
              {(TABLUT,): Out("e6")}),
    *scenario("no-capture-against-the-occupied-throne", "7 A\n6 ....D\n5 ....K", "attacker", "a7-e7",
              {(TABLUT,): RUNS}),
    *scenario("defenders-capture-against-the-empty-throne", "8 A\n5 ...A\n2 ......K\n1 ..D", "defender",
              "c1-c5", {(TABLUT,): Out("d5")}),
    *scenario("defenders-against-the-king-on-the-throne", "8 A\n5 ...AK\n1 ..D", "defender", "c1-c5",
              {(TABLUT,): Out("d5")}),

    *scenario("attackers-capture-against-the-empty-throne", "6 ..A\n5 ...D\n2 .K", "attacker", "c6-d6",
              {(ARD_RI,): Out("d5")}),
    *scenario("no-capture-against-the-occupied-throne", "6 ..A\n5 ...D\n4 ...K", "attacker", "c6-d6",
              {(ARD_RI,): RUNS}),
    *scenario("defenders-capture-against-the-empty-throne", "7 ...A\n4 ..A\n3 .D\n2 .....K", "defender",
              "b3-b4", {(ARD_RI,): Out("c4")}),
    *scenario("defenders-against-the-king-on-the-throne", "7 ...A\n4 ..AK\n3 .D", "defender", "b3-b4",
              {(ARD_RI,): Out("c4")}),
]

HOSTILE += [
    # Corners, bottom-left: hostile to both sides in the corner variants, plain squares in Tablut.
    *scenario("attackers-capture-against-a-corner-along-the-rank", "6 .K\n2 ..A\n1 .D", "attacker", "c2-c1",
              {LEGACY: Out("b1"), (TABLUT,): RUNS}),
    *scenario("attackers-capture-against-a-corner-along-the-file", "6 .K\n3 .A\n2 D", "attacker", "b3-a3",
              {LEGACY: Out("a2"), (TABLUT,): RUNS}),
    *scenario("defenders-capture-against-a-corner-along-the-rank", "6 .K\n3 .....A\n2 ..D\n1 .A", "defender", "c2-c1",
              {LEGACY: Out("b1"), (TABLUT,): RUNS}),
    *scenario("defenders-capture-against-a-corner-along-the-file", "6 .K\n3 .D...A\n2 A", "defender", "b3-a3",
              {LEGACY: Out("a2"), (TABLUT,): RUNS}),
    # §6.5: a corner is hostile whether or not it is occupied (here by the defenders' own king).
    *scenario("a-corner-holding-the-king-is-still-hostile", "2 ..A\n1 KD", "attacker", "c2-c1",
              {LEGACY: Out("b1"), (TABLUT,): RUNS}),
    # Tablut: an attacker may stand on a corner, and there it is an ordinary anvil.
    *scenario("attacker-on-a-tablut-corner-is-an-anvil", "6 .K\n2 ..A\n1 AD", "attacker", "c2-c1",
              {(TABLUT,): Out("b1")}),
    # Corners, top-right.
    *scenario("attackers-capture-against-the-far-corner",
              "19 .................D\n18 ................A\n2 .K", "attacker", "q18-q19", {(ALEA,): Out("r19")}),
    *scenario("defenders-capture-against-the-far-corner",
              "18 ..................A\n17 .................D\n2 .K\n1 ...A", "defender", "r17-s17",
              {(ALEA,): Out("s18")}),
    *scenario("attackers-capture-against-the-far-corner", "11 .........D\n10 ........A\n2 .K", "attacker",
              "i10-i11", {(TAWL,): Out("j11")}),
    *scenario("defenders-capture-against-the-far-corner", "10 ..........A\n9 .........D\n2 .K\n1 ...A", "defender",
              "j9-k9", {(TAWL,): Out("k10")}),
    *scenario("no-capture-against-the-far-corner", "9 .......D\n8 ......A\n2 .K", "attacker", "g8-g9",
              {(TABLUT,): RUNS}),
    *scenario("no-capture-against-the-far-corner-by-defenders", "8 ........A\n7 .......D\n2 .K", "defender",
              "h7-i7", {(TABLUT,): RUNS}),
    *scenario("attackers-capture-against-the-far-corner", "7 .....D\n6 ....A\n2 .K", "attacker", "e6-e7",
              {(ARD_RI,): Out("f7")}),
    *scenario("defenders-capture-against-the-far-corner", "6 ......A\n5 .....D\n2 .K\n1 ...A", "defender", "f5-g5",
              {(ARD_RI,): Out("g6")}),
]


@pytest.mark.parametrize("variant, case, out", HOSTILE)
def test_3_4_hostile_squares(variant, case, out):
    check(variant, case, out)


# === §3.5 Armed or unarmed king ==================================================================

ARMED_KING = [
    *scenario("king-captures-as-the-moving-piece", "5 A\n3 ....K\n2 ..DA", "defender", "e3-e2",
              {ARMED: Out("d2"), UNARMED: RUNS}),
    *scenario("king-is-the-anvil", "5 A\n3 ....D\n2 ..KA", "defender", "e3-e2",
              {ARMED: Out("d2"), UNARMED: RUNS}),
    # The unarmed king does not capture against a hostile square either; Tablut's corner is not
    # hostile and its edge is an escape square.
    *scenario("king-moves-next-to-an-attacker-at-a-corner", "6 ...D\n5 A\n2 ..K\n1 .A", "defender", "c2-c1",
              {(ARD_RI,): Out("b1"), UNARMED: RUNS, (TABLUT,): won("defender", "escaped")}),
]


@pytest.mark.parametrize("variant, case, out", ARMED_KING)
def test_3_5_armed_or_unarmed_king(variant, case, out):
    check(variant, case, out)


# === §3.6 King capture ===========================================================================

def king_taken(square_: str, also: str = "") -> Out:
    return won("attacker", "king_captured", f"{also} {square_}".strip())


KING_CAPTURE = [
    *scenario("four-attackers", "3 ..A\n2 .AKA\n1 ...A", "attacker", "d1-c1", {ALL: king_taken("c2")}),
    # Two in a line: not enough for the 4-side capture; Tablut's king away from the throne falls
    # like a soldier.
    *scenario("two-attackers-in-a-line", "6 .D\n3 ..A\n2 ..K\n1 ...A", "attacker", "d1-c1",
              {LEGACY: RUNS, (TABLUT,): king_taken("c2")}),
    *scenario("two-attackers-in-a-row", "6 .D\n2 .AK\n1 ...A", "attacker", "d1-d2",
              {LEGACY: RUNS, (TABLUT,): king_taken("c2")}),
    *scenario("three-attackers-and-a-defender", "6 .D\n3 ..A\n2 .AKD\n1 ...A", "attacker", "d1-c1",
              {LEGACY: RUNS, (TABLUT,): king_taken("c2")}),
    # The edge is hostile to the Legacy king, not to Tablut's.
    *scenario("three-attackers-and-the-edge", "6 .D\n3 ..A\n1 .AKA", "attacker", "c3-c2",
              {LEGACY: king_taken("c1"), (TABLUT,): RUNS}),
    *scenario("sandwiched-along-the-edge", "6 .D\n1 .AK.A", "attacker", "e1-d1",
              {LEGACY: RUNS, (TABLUT,): king_taken("c1")}),
    *scenario("one-attacker-and-the-edge", "6 .D\n3 ..A\n1 ..K", "attacker", "c3-c2", {ALL: RUNS}),
    # Next to a corner: corner, edge and two attackers take the Legacy king; in Tablut the corner
    # is plain and the edge not hostile.
    *scenario("next-to-a-corner", "6 .D\n2 .A\n1 .K.A", "attacker", "d1-c1",
              {LEGACY: king_taken("b1"), (TABLUT,): RUNS}),
    # Only on the attackers' move, and only with the moved piece next to the king.
    *scenario("surrounded-king-survives-a-defenders-move", "3 ..A..A\n2 .AKA\n1 ..A..D", "defender", "f1-f2",
              {ALL: RUNS}),
    *scenario("surrounded-king-survives-an-attackers-move-elsewhere", "3 ..A..A\n2 .AKA\n1 ..A..D",
              "attacker", "f3-f4", {ALL: RUNS}),
    *scenario("king-moves-between-two-attackers", "6 .D\n3 .A.A\n2 ..K", "defender", "c2-c3", {ALL: RUNS}),
    # The king steps off the throne into three attackers: the throne he left is empty and hostile,
    # so all four sides are closed, but it was the defenders' move.
    *scenario("king-steps-off-the-throne-into-three-attackers", "12 .........A\n11 ........A.A\n10 .........K",
              "defender", "j10-j11", {(ALEA,): RUNS}),
    *scenario("king-steps-off-the-throne-into-three-attackers", "8 .....A\n7 ....A.A\n6 .....K", "defender",
              "f6-f7", {(TAWL,): RUNS}),
    *scenario("king-steps-off-the-throne-into-three-attackers", "7 ....A\n6 ...A.A\n5 ....K", "defender",
              "e5-e6", {(TABLUT,): RUNS}),
    *scenario("king-steps-off-the-throne-into-three-attackers", "6 ...A\n5 ..A.A\n4 ...K", "defender",
              "d4-d5", {(ARD_RI,): RUNS}),
    # A soldier and the king in one move: the custodial captures and then the king.
    *scenario("soldiers-and-king-in-one-move", """
        4 ....A
        3 ...AKA
        2 ..AD.DA
        1 ....A
    """, "attacker", "e1-e2", {ALL: king_taken("e3", also="f2 d2")}),
]

# The throne: per variant (diagram, move, expected).
KING_CAPTURE += [
    # Legacy 4-side: the empty throne is hostile to the king; on the throne he needs four attackers.
    *scenario("next-to-the-empty-throne", "12 ..A\n11 ........AKA", "attacker", "c12-j12",
              {(ALEA,): king_taken("j11")}),
    *scenario("on-the-throne-four-attackers", "11 .........A\n10 ........AKA\n9 ..A", "attacker", "c9-j9",
              {(ALEA,): king_taken("j10")}),
    *scenario("on-the-throne-three-attackers", "11 .........A\n10 ........AK\n9 ..A", "attacker", "c9-j9",
              {(ALEA,): RUNS}),
    *scenario("next-to-the-empty-throne", "8 ..A\n7 ....AKA", "attacker", "c8-f8", {(TAWL,): king_taken("f7")}),
    *scenario("next-to-the-empty-throne-two-attackers", "8 ..A\n7 ....AK", "attacker", "c8-f8", {(TAWL,): RUNS}),
    *scenario("on-the-throne-four-attackers", "7 .....A\n6 ....AKA\n5 ..A", "attacker", "c5-f5",
              {(TAWL,): king_taken("f6")}),
    *scenario("on-the-throne-three-attackers", "7 .....A\n6 ....AK\n5 ..A", "attacker", "c5-f5", {(TAWL,): RUNS}),
    *scenario("next-to-the-empty-throne", "7 ...A\n5 ..AKA", "attacker", "d7-d6", {(ARD_RI,): king_taken("d5")}),
    *scenario("on-the-throne-four-attackers", "5 ...A\n4 ..AKA\n2 ...A", "attacker", "d2-d3",
              {(ARD_RI,): king_taken("d4")}),
    *scenario("on-the-throne-three-attackers", "5 ...A\n4 ..AK\n2 ...A", "attacker", "d2-d3", {(ARD_RI,): RUNS}),
    # Historisches Tablut: four on the throne, three next to it, like a soldier anywhere else.
    *scenario("on-the-throne-four-attackers", "6 ....A\n5 ...AKA\n4 A", "attacker", "a4-e4",
              {(TABLUT,): king_taken("e5")}),
    *scenario("on-the-throne-two-attackers-in-a-line", "6 ....A\n5 ....K\n4 A", "attacker", "a4-e4",
              {(TABLUT,): RUNS}),
    *scenario("on-the-throne-three-attackers-and-a-defender", "6 ....A\n5 ...AKD\n4 A", "attacker", "a4-e4",
              {(TABLUT,): RUNS}),
    *scenario("next-to-the-throne-three-attackers", "7 A\n6 ...AKA", "attacker", "a7-e7",
              {(TABLUT,): king_taken("e6")}),
    *scenario("next-to-the-throne-three-attackers-side-mover", "9 .....A\n7 ....A\n6 ...AK", "attacker", "f9-f6",
              {(TABLUT,): king_taken("e6")}),
    *scenario("next-to-the-throne-two-attackers-in-a-line", "9 .....A\n6 ...AK", "attacker", "f9-f6",
              {(TABLUT,): RUNS}),
    *scenario("diagonal-to-the-throne-is-away-from-it", "9 ....A\n6 ..AK", "attacker", "e9-e6",
              {(TABLUT,): king_taken("d6")}),
]


@pytest.mark.parametrize("variant, case, out", KING_CAPTURE)
def test_3_6_king_capture(variant, case, out):
    check(variant, case, out)


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_6_3_after_king_captured(variant):
    """The defenders are to move, the king is off the board, and the game takes no more moves."""
    game = new_game(variant, "6 .D\n3 ..A\n2 .AKA\n1 ...A", "attacker")
    game.push("d1-c1")
    assert game.outcome() == ("attacker", "king_captured")
    assert game.to_move == "defender"
    assert "K" not in game.position and "c2" not in pieces_of(game.position, SIZE[variant])
    assert game.legal_moves() == [] and not game.action_mask().any()
    assert_rejected(game, "b6-b7")


# === §3.7 Winning: escape and encirclement =======================================================

ESCAPE = [
    *scenario("king-reaches-a-corner", "6 ...D\n5 A\n1 .K", "defender", "b1-a1", {ALL: won("defender", "escaped")}),
    *scenario("king-reaches-an-edge-square", "6 ...D\n5 A\n2 .K", "defender", "b2-b1",
              {LEGACY: RUNS, (TABLUT,): won("defender", "escaped")}),
    *scenario("a-defender-reaches-the-edge", "6 ...K\n5 A\n2 .D", "defender", "b2-b1", {ALL: RUNS}),
    *scenario("king-slides-to-the-far-corner", "10 K\n2 .DA", "defender", "a10-a19",
              {(ALEA,): won("defender", "escaped")}),
    *scenario("king-slides-to-the-far-corner", "5 ..........K\n2 .DA", "defender", "k5-k11",
              {(TAWL,): won("defender", "escaped")}),
    *scenario("king-slides-to-the-edge-from-the-throne", "5 ....K\n2 .DA", "defender", "e5-a5",
              {(TABLUT,): won("defender", "escaped")}),
    *scenario("king-steps-to-the-far-corner", "6 ......K\n2 .DA", "defender", "g6-g7",
              {(ARD_RI,): won("defender", "escaped")}),
]


@pytest.mark.parametrize("variant, case, out", ESCAPE)
def test_3_7_escape(variant, case, out):
    check(variant, case, out)


# A ring of attackers round the king and a defender (b2-b4), closed by b6-b5. Flood fill from the
# edge through every square without an attacker (RULES §3.7).
RING_OPEN = """
    6 .A
    4 ADA
    3 A.A
    2 AKA
    1 .A...A
"""
RING_WITH_A_DEFENDER_OUTSIDE = """
    6 .A..D
    4 ADA
    3 A.A
    2 AKA
    1 .A
"""
RING_CLOSED = """
    5 .A
    4 ADA
    3 A.A
    2 AKA
    1 .A...A
"""
WALLED_AGAINST_THE_EDGE = """
    3 .A
    2 AKA
    1 ...A
"""
ENCIRCLEMENT = [
    *scenario("attackers-close-the-ring", RING_OPEN, "attacker", "b6-b5", {ALL: won("attacker", "encircled")}),
    *scenario("a-gap-is-left", RING_OPEN, "attacker", "f1-f2", {ALL: RUNS}),
    *scenario("a-defender-outside-the-ring", RING_WITH_A_DEFENDER_OUTSIDE, "attacker", "b6-b5", {ALL: RUNS}),
    # b1 is an edge square inside the walls: the king is not encircled.
    *scenario("walled-against-the-edge", WALLED_AGAINST_THE_EDGE, "attacker", "d1-c1", {ALL: RUNS}),
    # Judged only after an attackers' move (a loaded position is judged only after moves).
    *scenario("encircled-defenders-move", RING_CLOSED, "defender", "b4-b3", {ALL: RUNS}),
    *scenario("encircled-attackers-move-elsewhere", RING_CLOSED, "attacker", "f1-f2",
              {ALL: won("attacker", "encircled")}),
]


@pytest.mark.parametrize("variant, case, out", ENCIRCLEMENT)
def test_3_7_encirclement(variant, case, out):
    check(variant, case, out)


# === §3.8 No legal move ==========================================================================

STUCK_DEFENDERS = "2 ..AA\n1 .AKD.A"          # f1-e1 leaves the king and d1 without a move
NO_MOVES = [
    *scenario("defenders-left-without-a-move", STUCK_DEFENDERS, "attacker", "f1-e1",
              {ALL: won("attacker", "no_moves")}),
    # The corner is closed to the attacker on a2 in the corner variants; in Tablut it is a way out.
    *scenario("attackers-left-without-a-move", "6 .K\n3 D\n2 A.D", "defender", "c2-b2",
              {LEGACY: won("defender", "no_moves"), (TABLUT,): RUNS}),
    *scenario("attacker-stuck-on-a-tablut-corner", "6 .K\n2 D\n1 A.D", "defender", "c1-b1",
              {(TABLUT,): won("defender", "no_moves")}),
]


@pytest.mark.parametrize("variant, case, out", NO_MOVES)
def test_3_8_no_legal_move(variant, case, out):
    check(variant, case, out)


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_8_loaded_position_without_a_move_is_finished_at_once(variant):
    game = new_game(variant, "2 ..AA\n1 .AKDA", "defender")
    assert game.outcome() == ("attacker", "no_moves")
    assert (game.turns, game.to_move) == (0, "defender")
    assert game.legal_moves() == []
    assert_rejected(game, "c1-c2")
    # The same board with the attackers to move is an ordinary game.
    assert not new_game(variant, "2 ..AA\n1 .AKDA", "attacker").is_over()


# === §3.9 Repetition =============================================================================

# From each start: a there-and-back of the first mover (x-y, y-x), one of the second mover (u-v,
# v-u), and an unrelated first move. Ard Ri's first mover is the defenders.
SHUFFLE = {
    ALEA: (("c1-c2", "c2-c1"), ("i5-i4", "i4-i5"), "n1-n2"),
    TAWL: (("a5-a4", "a4-a5"), ("f4-e4", "e4-f4"), "k5-k4"),
    TABLUT: (("a4-b4", "b4-a4"), ("e3-d3", "d3-e3"), "i4-h4"),
    ARD_RI: (("c3-b3", "b3-c3"), ("d2-c2", "c2-d2"), "e3-f3"),
}
FIRST = {ALEA: "attacker", TAWL: "attacker", TABLUT: "attacker", ARD_RI: "defender"}


def shuffle(variant: str) -> list[str]:
    """RULES §3.9's example: x-y, u-v, y-x, v-u, twice; Q8 = Q4 = Q0."""
    (xy, yx), (uv, vu), _ = SHUFFLE[variant]
    return [xy, uv, yx, vu] * 2


def shuffle_after_unrelated_move(variant: str) -> list[str]:
    """An unrelated first move, then the second mover starts the shuffle; Q9 = Q5 = Q1."""
    (xy, yx), (uv, vu), unrelated = SHUFFLE[variant]
    return [unrelated] + [uv, xy, vu, yx] * 2


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_9_the_shuffle_example(variant):
    game = Game(variant)
    moves = shuffle(variant)
    play(game, moves[:4])
    assert game.position == Game(variant).position and not game.is_over()  # Q4 = Q0: second time
    play(game, moves[4:7])
    assert not game.is_over()
    game.push(moves[7])
    starter = FIRST[variant]  # made turn 1, began the repetition, loses
    assert game.outcome() == (OTHER[starter], "repetition")
    assert game.turns == 8 and game.to_move == starter
    assert_rejected(game, moves[0])


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_9_the_second_mover_began_the_shuffle(variant):
    game = Game(variant)
    moves = shuffle_after_unrelated_move(variant)
    play(game, moves[:8])
    assert not game.is_over()
    game.push(moves[8])
    starter = OTHER[FIRST[variant]]  # made turn 2 (s = 2), the first turn of the repeating run
    assert game.outcome() == (OTHER[starter], "repetition")
    assert game.turns == 9


def test_6_4_the_run_starts_after_the_second_occurrence():
    """Q9 = Q5 = Q1 but Q8 != Q4: the condition fails for i = j = 5, so s = 6 (a defenders' turn)."""
    game = play(Game(TABLUT), "a4-b4 e3-d3 b4-a4 d3-e3 a4-b4 e3-f3 b4-c4 f3-e3")
    assert not game.is_over()
    game.push("c4-b4")
    assert game.outcome() == ("attacker", "repetition")


def test_3_9_the_run_is_measured_from_the_second_occurrence():
    """Q1 occurs after turns 1, 9 and 13: an eight-turn detour, then a four-turn loop. j = 9 and p = 4;
    Q(i-1) = Q(i+3) holds for i = 9, 8, 7 but not for i = 6 (Q5, the defender on c3, != Q9), so s = 7,
    an attackers' turn. (Measuring from the first occurrence, j = 1 and p = 12, would give s = 2.)"""
    game = play(Game(TABLUT), "i4-h4 e3-b3 a4-b4 b3-c3 b4-a4 c3-d3 a4-b4 d3-e3 b4-a4 e3-d3 a4-b4 d3-e3")
    assert not game.is_over()
    game.push("b4-a4")
    assert game.outcome() == ("defender", "repetition") and game.turns == 13


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_9_repetition_option_draw(variant):
    game = play(Game(variant, repetition="draw"), shuffle(variant))
    assert game.outcome() == ("draw", "repetition") and game.turns == 8


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_9_repetition_option_ignore(variant):
    game = play(Game(variant, repetition="ignore"), shuffle(variant) + shuffle(variant)[:4])
    assert not game.is_over() and game.turns == 12
    assert game.position == Game(variant).position  # Q12 = Q0, a fourth time


# === §3.10 Move cap ==============================================================================

@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_10_move_cap_truncates(variant):
    game = play(Game(variant, max_turns=4), shuffle(variant)[:3])
    assert not game.is_over()
    game.push(shuffle(variant)[3])
    assert game.reason == "truncated" and game.result not in ("attacker", "defender")
    assert game.turns == 4
    assert_rejected(game, shuffle(variant)[4])


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_3_10_default_cap_and_no_cap(variant):
    cap = Game(variant).rules.max_turns
    assert isinstance(cap, int) and cap > 0  # a documented default per variant
    game = play(Game(variant, max_turns=None, repetition="ignore"), shuffle(variant) * 2)
    assert not game.is_over() and game.turns == 16


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_6_1_the_game_end_comes_before_the_cap(variant):
    """Repetition, a win and "no legal move" on the last turn beat the cap (RULES §6.1)."""
    assert play(Game(variant, max_turns=8), shuffle(variant)).reason == "repetition"
    king = new_game(variant, "6 .D\n3 ..A\n2 .AKA\n1 ...A", "attacker", max_turns=1)
    king.push("d1-c1")
    assert king.outcome() == ("attacker", "king_captured")
    stuck = new_game(variant, STUCK_DEFENDERS, "attacker", max_turns=1)
    stuck.push("f1-e1")
    assert stuck.outcome() == ("attacker", "no_moves")


# === §4 The variant table ========================================================================

TABLE = {  # board, first to move, counts (king + defenders, attackers) from RULES §2
    ALEA: (19, "attacker", 24, 48),
    TAWL: (11, "attacker", 12, 24),
    TABLUT: (9, "attacker", 8, 16),
    ARD_RI: (7, "defender", 8, 16),
}


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_4_board_and_first_to_move(variant):
    n, first, defenders, attackers = TABLE[variant]
    game = Game(variant)
    assert game.n == n
    men = list(pieces_of(game.position, n).values())
    assert (men.count("K"), men.count("T"), men.count("t")) == (1, defenders, attackers)
    assert game.to_move == first
    own = {"attacker": "t", "defender": "TK"}[first]
    pieces = pieces_of(game.position, n)
    assert all(pieces[square(m.origin, n)] in own for m in game.legal_moves())
    # A move of the other side is illegal at the start.
    theirs = Game(variant, position=game.position, to_move=OTHER[first]).legal_moves()[0]
    assert_rejected(game, theirs.notation)


def distance(a: int, b: int, n: int) -> int:
    return abs(a % n - b % n) + abs(a // n - b // n)


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_4_movement_from_the_start(variant):
    """Ard Ri moves exactly one square; the others slide (some start moves cover more than one)."""
    n = SIZE[variant]
    lengths = {distance(m.origin, m.target, n) for m in Game(variant).legal_moves()}
    if variant == ARD_RI:
        assert lengths == {1}
    else:
        assert 1 in lengths and max(lengths) > 1


# The other columns of §4 have their scenarios above:
#   king armed/unarmed  → test_3_5_armed_or_unarmed_king, occupied-throne cases of test_3_4
#   king capture        → test_3_6_king_capture (4-side with the edge; the Tablut rule)
#   escape              → test_3_7_escape (corner vs any edge square)
#   hostile corners     → test_3_4_hostile_squares (corners; Tablut's plain corners)
#   encirclement win    → test_3_7_encirclement (all four variants)


# === §6.7 Move records ===========================================================================

TRIPLE = """
    6 .K
    4 ..A
    3 ..D
    2 AD.DA
    1 ..A
"""


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
@pytest.mark.parametrize("move", ["c1-c2xc3/d2/b2", "c1-c2xb2/c3/d2", "c1-c2xd2/b2/c3", "c1-c2"])
def test_6_7_capture_suffix_is_read_as_a_set(variant, move):
    game = new_game(variant, TRIPLE, "attacker")
    played = game.push(move)
    assert {square(s, SIZE[variant]) for s in played.captures} == {"c3", "d2", "b2"}


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
@pytest.mark.parametrize("move", ["c1-c2xc3/d2", "c1-c2xc3/d2/b2/e2", "c1-c2xc4/d2/b2", "c1-c2xc3"])
def test_6_7_a_wrong_capture_set_is_rejected(variant, move):
    assert_rejected(new_game(variant, TRIPLE, "attacker"), move)


@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_6_7_a_capture_suffix_on_a_quiet_move_is_rejected(variant):
    assert_rejected(new_game(variant, "6 .K\n3 ....A\n2 ...D", "attacker"), "e3-e2xd2")


WRITER = [
    # N, E, W (the mover came from the south).
    *scenario("north-east-west", TRIPLE, "attacker", "c1-c2", {ALL: Out("c1-c2xc3/d2/b2")}),
    # E, S, W (the mover came from the north), defenders capturing.
    *scenario("east-south-west", "6 A...K\n4 ..D\n3 DA.AD\n2 ..A\n1 ..D", "defender", "c4-c3",
              {ALL: Out("c4-c3xd3/c2/b3")}),
    # The king after the custodial captures, though he stands north of the landing square.
    *scenario("king-last", "4 ....A\n3 ...AKA\n2 ..AD.DA\n1 ....A", "attacker", "e1-e2",
              {ALL: Out("e1-e2xf2/d2/e3")}),
]


@pytest.mark.parametrize("variant, case, out", WRITER)
def test_6_7_writer_lists_captures_north_east_south_west_then_the_king(variant, case, out):
    game = new_game(variant, case.diagram, case.to_move)
    assert game.push(case.move).notation == out.captures
    assert game.moves[-1].notation == out.captures


# === §7 Illegal moves change nothing =============================================================

@pytest.mark.parametrize("variant", ALL, ids=SHORT.get)
def test_7_illegal_moves_mid_game_change_nothing(variant):
    """Rejected moves in the middle of the shuffle leave the state, history included, as it was:
    the repetition still ends the game on turn 8."""
    moves = shuffle(variant)
    game = play(Game(variant), moves[:2])
    n = SIZE[variant]
    pieces = pieces_of(game.position, n)
    enemy = next(sq for sq, p in pieces.items() if (p == "t") != (game.to_move == "attacker"))
    for bad in [moves[1], moves[3], f"{enemy}-{enemy}", "a1-b2", "pass", moves[2] + "xa2"]:
        assert_rejected(game, bad)
    play(game, moves[2:])
    assert game.reason == "repetition" and game.turns == 8
