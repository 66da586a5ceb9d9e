"""Scenario tests for Legacy Berserk Hnefatafl (RULES.md §5, with the conventions of §6).

Every scenario is set up from an ASCII diagram (rank 11 on top, as ``str(game)`` prints it) that
:func:`pos` turns into a position string (RULES §1, rank 1 first), a side to move, moves in
notation, and the expected captures / chain state / result.

Board facts used throughout: 11x11, throne f6, corners a1, k1, a11, k11.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tafl_env import Game
from tafl_env.errors import IllegalMoveError, InvalidPositionError
from tafl_env.game import engine_for
from tafl_env.notation import parse_square
from tafl_env.perft import perft
from tafl_env.rules import make_rules

from conftest import CASES_DIR as CASES
from conftest import diagram_position as pos  # ASCII board, rank 11 on top → position string

V = "legacy_berserk"
N = 11
DIRS = {"n": 0, "e": 1, "s": 2, "w": 3}


# --- helpers -------------------------------------------------------------------------------------

def game(diagram: str, to_move: str = "attacker", **options) -> Game:
    p = pos(diagram)
    g = Game(V, position=p, to_move=to_move, max_turns=None, **options)
    assert g.position == p and g.to_move == to_move and not g.is_over()
    return g


def sq(name: str) -> int:
    return parse_square(name, N)


def action(origin: str, direction: str, distance: int) -> int:
    """DESIGN.md action id of the move of the piece on ``origin``."""
    return (sq(origin) * 4 + DIRS[direction]) * (N - 1) + (distance - 1)


PASS_ACTION = N * N * 4 * (N - 1)


def legal(g: Game) -> set[str]:
    return {m.notation for m in g.legal_moves()}


def is_legal(g: Game, a: int) -> bool:
    return bool(g.action_mask()[a])


def names(squares) -> tuple[str, ...]:
    return tuple(f"{'abcdefghijk'[s % N]}{s // N + 1}" for s in squares)


def pos_letter(g: Game, square: str) -> str:
    """The piece letter on ``square`` (``.`` if empty)."""
    return ".tcTNK"[int(g.state.board[0, sq(square)])]


def snapshot(g: Game):
    return (g.position, g.to_move, g.chain, g.turns, g.result, g.reason, len(g.moves))


def test_pos_helper_matches_start_layout():
    start = """
11 . . . t t t t t . . .
10 . . . . . c . . . . .
 9 . . . . . . . . . . .
 8 t . . . . T . . . . t
 7 t . . . T N T . . . t
 6 t c . T T K T T . c t
 5 t . . . T T T . . . t
 4 t . . . . T . . . . t
 3 . . . . . . . . . . .
 2 . . . . . c . . . . .
 1 . . . t t t t t . . .
   a b c d e f g h i j k
"""
    assert pos(start) == make_rules(V).layout == Game(V).position
    assert str(Game(V)).split() == start.split()


# --- jumps: who may jump over what ------------------------------------------------------------------

JUMPER = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . . J V . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . . .
"""


def jumper(j: str, v: str, to_move: str, extra: dict[str, str] | None = None, **options) -> Game:
    """Jumper J on d4, victim V on e4, f4 empty; a king (and a spare piece of each side) far away."""
    d = JUMPER.replace("J", j).replace("V", v)
    rows = d.strip("\n").splitlines()
    pieces = dict(extra or {})
    if "K" not in (j, v) and "K" not in pieces.values():
        pieces["i10"] = "K"
    pieces.setdefault("b10", "t")
    pieces.setdefault("j2", "T")
    for square, letter in pieces.items():
        file, rank = "abcdefghijk".index(square[0]), int(square[1:])
        i = N - rank
        tokens = rows[i].split()
        tokens[1 + file] = letter
        rows[i] = " ".join(tokens)
    return game("\n".join(rows), to_move, **options)


@pytest.mark.parametrize("j,v,side", [("K", "t", "defender"), ("N", "t", "defender"),
                                      ("c", "T", "attacker")])
def test_jump_over_adjacent_enemy_soldier_is_the_distance_two_action(j, v, side):
    g = jumper(j, v, side)
    a = action("d4", "e", 2)
    assert is_legal(g, a)
    m = g.describe(a)
    assert m.jump and m.origin == sq("d4") and m.target == sq("f4") and not m.continuation
    played = g.push("d4^f4")
    assert played.action == a and played.jump and played.notation.startswith("d4^f4")
    # The jumper now stands on f4, d4 is empty.
    assert pos_letter(g, "f4") == j and pos_letter(g, "d4") == "."
    # only the knight's jump removes the jumped soldier by itself
    assert pos_letter(g, "e4") == ("." if j == "N" else v)


@pytest.mark.parametrize("direction,origin,over,target", [
    ("n", "d4", "d5", "d6"), ("e", "d4", "e4", "f4"), ("s", "d4", "d3", "d2"), ("w", "d4", "c4", "b4"),
])
def test_king_jumps_in_every_direction(direction, origin, over, target):
    g = jumper("K", ".", "defender", extra={over: "t"})
    a = action(origin, direction, 2)
    assert is_legal(g, a)
    m = g.push(a)
    assert m.jump and m.notation == f"{origin}^{target}" and m.captures == ()
    assert pos_letter(g, target) == "K" and pos_letter(g, over) == "t"


@pytest.mark.parametrize("j,v,side", [
    # never over a king, a knight or a commander
    ("c", "K", "attacker"), ("c", "N", "attacker"), ("K", "c", "defender"), ("N", "c", "defender"),
    # never over a friend
    ("K", "T", "defender"), ("N", "T", "defender"), ("K", "N", "defender"), ("N", "K", "defender"),
    ("c", "t", "attacker"), ("c", "c", "attacker"),
    # a plain soldier cannot jump
    ("T", "t", "defender"), ("t", "T", "attacker"), ("t", "N", "attacker"),
])
def test_jump_forbidden(j, v, side):
    g = jumper(j, v, side)
    assert not is_legal(g, action("d4", "e", 2))
    assert all(m.target != sq("f4") or m.origin != sq("d4") for m in g.legal_moves())
    before = snapshot(g)
    with pytest.raises(IllegalMoveError):
        g.push("d4-f4")
    with pytest.raises(IllegalMoveError):
        g.push(action("d4", "e", 2))
    assert snapshot(g) == before


@pytest.mark.parametrize("j,v,side", [("K", "t", "defender"), ("N", "t", "defender"),
                                      ("c", "T", "attacker")])
@pytest.mark.parametrize("blocker", ["t", "T"])
def test_jump_not_onto_an_occupied_square(j, v, side, blocker):
    g = jumper(j, v, side, extra={"f4": blocker})
    assert not is_legal(g, action("d4", "e", 2))
    with pytest.raises(IllegalMoveError):
        g.push("d4^f4")


def test_jump_only_over_an_adjacent_piece_and_only_one():
    # e4 empty, f4 attacker: d4-f4 is a plain slide of 2, d4 to g4 (over f4) is no move at all.
    g = jumper("K", ".", "defender", extra={"f4": "t"})
    m = g.describe(action("d4", "e", 1))
    assert not m.jump and m.notation == "d4-e4"
    assert not is_legal(g, action("d4", "e", 2)) and not is_legal(g, action("d4", "e", 3))
    # Two soldiers in a row: no jump over both, and no jump onto the second.
    g = jumper("K", "t", "defender", extra={"f4": "t"})
    assert not is_legal(g, action("d4", "e", 2)) and not is_legal(g, action("d4", "e", 3))


@pytest.mark.parametrize("j,v,side", [("K", "t", "defender"), ("N", "t", "defender"),
                                      ("c", "T", "attacker")])
def test_jump_not_off_the_board(j, v, side):
    # j4 over k4 would land off the board (the index two to the east is a5: keep it empty);
    # d10 over d11 likewise (two north is off the board).
    pieces = {"j4": j, "k4": v, "d10": "N" if j == "K" else j, "d11": v}
    g = jumper(".", ".", side, extra=pieces)
    assert pos_letter(g, "a5") == "."
    mask = g.action_mask()
    assert not mask[action("j4", "e", 2)]
    assert not mask[action("d10", "n", 2)]
    assert all(m.origin not in (sq("j4"), sq("d10")) or m.target not in (sq("a5"),)
               for m in g.legal_moves())


# --- jumps onto the throne and the corners ----------------------------------------------------------

THRONE_JUMP = """
11 . . . . . . . . . . .
10 . t . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . X . . . . .
 7 . . . . . V . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
"""


def test_king_may_land_on_the_empty_throne_by_a_jump():
    g = game(THRONE_JUMP.replace("X", "K").replace("V", "t"), "defender")
    m = g.push("f8^f6")
    assert m.jump and m.captures == () and pos_letter(g, "f6") == "K" and pos_letter(g, "f7") == "t"
    assert g.result is None and g.to_move == "attacker"


@pytest.mark.parametrize("j,v,side", [("N", "t", "defender"), ("c", "T", "attacker")])
def test_knight_and_commander_may_not_land_on_the_throne(j, v, side):
    d = THRONE_JUMP.replace("X", j).replace("V", v)
    d = d.replace(" 4 . . . . . . . . . . .", " 4 . . . . . . . . K . .")
    g = game(d, side)
    assert not is_legal(g, action("f8", "s", 2))
    with pytest.raises(IllegalMoveError):
        g.push("f8^f6")


CORNER_JUMP = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 X . . . . . . . . . .
 2 V . . . . . . . . . .
 1 . Y Z . . . . . . . .
"""


def corner_game(x, v, y, z, side, extra_king=True):
    d = CORNER_JUMP.replace("X", x).replace("V", v).replace("Y", y).replace("Z", z)
    if extra_king:
        d = d.replace(" 8 . . . . . . . . . . .", " 8 . . . . . . . . K . .")
    d = d.replace("10 . . . . . . . . . . .", "10 . . . . . . . t . T .")
    return game(d, side)


def test_king_jumping_onto_a_corner_escapes():
    g = corner_game("K", "t", ".", ".", "defender", extra_king=False)
    m = g.push("a3^a1")
    assert m.jump and m.notation == "a3^a1"
    assert (g.result, g.reason) == ("defender", "escaped")
    assert g.to_move == "attacker" and g.turns == 1 and g.chain is None
    # the same along the first rank
    g = corner_game(".", ".", "t", "K", "defender", extra_king=False)
    assert g.push("c1-a1").jump and g.reason == "escaped"


@pytest.mark.parametrize("j,v,side", [("N", "t", "defender"), ("c", "T", "attacker")])
def test_knight_and_commander_may_not_land_on_a_corner(j, v, side):
    g = corner_game(j, v, v, j, side)
    assert not is_legal(g, action("a3", "s", 2)) and not is_legal(g, action("c1", "w", 2))
    with pytest.raises(IllegalMoveError):
        g.push("a3^a1")


@pytest.mark.parametrize("origin,over,target,direction", [
    ("f6", "f7", "f8", "n"),     # from the throne
    ("a5", "a6", "a7", "n"),     # from the edge
    ("b2", "c2", "d2", "e"),     # from diagonally next to a corner
    ("a2", "a3", "a4", "n"),     # from the edge square next to a corner
    ("d4", "d3", "d2", "s"),     # from an ordinary square
])
def test_king_may_jump_from_any_square(origin, over, target, direction):
    g = jumper(".", ".", "defender", extra={origin: "K", over: "t"})
    assert is_legal(g, action(origin, direction, 2))
    m = g.push(f"{origin}-{target}")      # readers accept '-' for a jump
    assert m.jump and m.notation.startswith(f"{origin}^{target}")


# --- what a jump captures -------------------------------------------------------------------------

def test_knight_jump_captures_the_jumped_soldier_first_then_custodial_in_order():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . K . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . T . . . . . .
 4 . . . . t . . . . . .
 3 . . N t . t T . . . .
 2 . . . . . . . . . . .
 1 . t . . . . . . . . .
"""
    g = game(d, "defender")
    m = g.push("c3-e3")
    assert m.jump
    # RULES §6.7: the knight-jumped piece first, then custodial north (e4), east (f3).
    assert names(m.captures) == ("d3", "e4", "f3")
    assert m.notation == "c3^e3xd3/e4/f3"
    for s in ("d3", "e4", "f3"):
        assert pos_letter(g, s) == "."


def test_knight_jump_alone_captures_and_capture_suffix_is_checked():
    g = jumper("N", "t", "defender")
    with pytest.raises(IllegalMoveError):
        g.push("d4^f4xe5")                 # wrong capture set
    m = g.push("d4^f4xe4")
    assert names(m.captures) == ("e4",) and pos_letter(g, "e4") == "."


def test_king_jump_does_not_capture_the_jumped_piece_but_landing_captures_count():
    g = jumper("K", "t", "defender", extra={"g4": "t", "h4": "T"})
    m = g.push("d4^f4")
    assert m.jump and names(m.captures) == ("g4",)
    assert pos_letter(g, "e4") == "t" and pos_letter(g, "g4") == "."


def test_commander_jump_does_not_capture_the_jumped_piece_but_landing_captures_count():
    g = jumper("c", "T", "attacker", extra={"g4": "T", "h4": "t"})
    m = g.push("d4^f4")
    assert m.jump and names(m.captures) == ("g4",)
    assert pos_letter(g, "e4") == "T" and pos_letter(g, "g4") == "."


def test_king_jumping_off_the_throne_captures_the_jumped_soldier_against_the_empty_throne():
    # The king leaves f6 by jumping over f7 to f8: f7 lies between the king (f8) and the now empty,
    # hostile throne (f6), so it falls by the ordinary custodial check from the landing square.
    d = """
11 . . . . . . . . . . .
10 . t . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . t . . . . .
 6 . . . . . K . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
"""
    g = game(d, "defender")
    m = g.push("f6^f8")
    assert m.jump and names(m.captures) == ("f7",)
    assert m.notation == "f6^f8xf7"
    assert pos_letter(g, "f7") == "." and pos_letter(g, "f6") == "." and pos_letter(g, "f8") == "K"
    # nothing more to capture: the turn is over
    assert g.chain is None and g.to_move == "attacker" and g.turns == 1


def test_king_jump_elsewhere_leaves_the_jumped_soldier_standing():
    # Same shape one file over, not on the throne: the origin e6 is an ordinary square.
    d = """
11 . . . . . . . . . . .
10 . t . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . t . . . . . .
 6 . . . . K . . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
"""
    g = game(d, "defender")
    m = g.push("e6^e8")
    assert m.jump and m.captures == () and pos_letter(g, "e7") == "t"


# --- knight and commander otherwise like soldiers ---------------------------------------------------

LIKE_SOLDIERS = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . t .
 4 . . . . . N . . . . .
 3 . X Y . . . . . . Z .
 2 . . . . . . . . . . .
 1 . . . . . . t K . . .
"""


def test_defender_soldier_captures_a_commander_like_a_soldier():
    g = game(LIKE_SOLDIERS.replace("X", "T").replace("Y", "c").replace("Z", "T"), "defender")
    m = g.push("j3-d3")
    assert names(m.captures) == ("c3",) and pos_letter(g, "c3") == "."


def test_attacker_captures_the_knight_with_a_commander_as_anvil():
    g = game(LIKE_SOLDIERS.replace("X", "c").replace("Y", "N").replace("Z", "t"), "attacker")
    m = g.push("j3-d3")
    assert names(m.captures) == ("c3",) and pos_letter(g, "c3") == "."


def test_knight_captures_with_the_armed_king_as_anvil():
    g = game(LIKE_SOLDIERS.replace("X", ".").replace("Y", ".").replace("Z", "."), "defender")
    m = g.push("f4-f1")
    assert not m.jump and names(m.captures) == ("g1",) and pos_letter(g, "g1") == "."


def test_knight_and_commander_may_pass_through_but_not_stop_on_the_throne_or_corner():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . N . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . . .
 1 . . c . . . . K . t .
"""
    g = game(d, "defender")
    assert not is_legal(g, action("f8", "s", 2))          # f6, the throne
    assert is_legal(g, action("f8", "s", 3))              # f5, through the empty throne
    g = game(d, "attacker")
    assert not is_legal(g, action("c1", "w", 2))          # a1, a corner
    assert is_legal(g, action("c1", "w", 1))
    # RULES §6.6: a knight on the throne or a commander on a corner is rejected
    with pytest.raises(InvalidPositionError):
        Game(V, position=pos(d.replace(" 6 . . . . . . . . . . .", " 6 . . . . . N . . . . .")
                               .replace(" 8 . . . . . N . . . . .", " 8 . . . . . . . . . . .")))
    with pytest.raises(InvalidPositionError):
        Game(V, position=pos(d.replace(" 1 . . c . . . . K . t .", " 1 c . . . . . . K . t .")))


# --- king capture ----------------------------------------------------------------------------------

def capture_game(diagram: str, **options) -> Game:
    """A king-capture scenario: the attackers to move; a defender soldier on k5 so both sides can move."""
    return game(diagram, "attacker", **options)


def assert_king_captured(g: Game, m, king: str):
    assert (g.result, g.reason) == ("attacker", "king_captured")
    assert names(m.captures)[-1] == king                 # the king is listed last (§6.7)
    assert pos_letter(g, king) == "."                    # a captured king is removed (§6.3)
    assert "K" not in g.position
    assert g.to_move == "defender" and g.turns == 1 and g.chain is None
    assert g.legal_moves() == [] and not g.action_mask().any()


def assert_not_captured(g: Game, m, king: str):
    assert g.result is None and g.reason is None
    assert sq(king) not in m.captures and pos_letter(g, king) == "K"
    assert g.to_move == "defender" and g.turns == 1


FOUR_SIDE = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . t . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . t . . . . . . .
 4 . . . K t . . . . . .
 3 . . . c . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . T .
"""


def test_king_captured_on_four_sides_by_attackers():
    g = capture_game(FOUR_SIDE)
    m = g.push("c8-c4")
    assert m.notation == "c8-c4xd4"
    assert_king_captured(g, m, "d4")


def test_king_not_captured_on_three_sides():
    g = capture_game(FOUR_SIDE.replace(" 5 . . . t", " 5 . . . ."))
    m = g.push("c8-c4")
    assert_not_captured(g, m, "d4")


def test_king_captured_against_the_empty_throne():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . t . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . t . . . . . .
 6 . . . . K . . . . . .
 5 . . . . c . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . T .
"""
    g = capture_game(d)
    m = g.push("d9-d6")                 # e7, e5, d6 and the empty throne f6
    assert_king_captured(g, m, "e6")


def test_king_captured_on_the_throne_by_four_attackers_commanders_included():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . c . . . .
 8 . . . . . . . . . . .
 7 . . . . . t . . . . .
 6 . . . . c K . . . . .
 5 . . . . . t . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . T .
"""
    g = capture_game(d)
    m = g.push("g9-g6")
    assert_king_captured(g, m, "f6")


EDGE = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . t . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . t K t . . . . .
"""


def test_edge_is_not_hostile_to_the_king():
    g = capture_game(EDGE)
    m = g.push("e5-e2")
    assert_not_captured(g, m, "e1")


def test_edge_hostile_option_makes_the_same_move_capture():
    # The same scenario with the edge made hostile: proves the test above can fail.
    g = capture_game(EDGE, edge_hostile_to_king=True)
    m = g.push("e5-e2")
    assert_king_captured(g, m, "e1")


def test_edge_king_with_commanders_on_three_sides_is_captured_only_by_the_sandwich():
    # Commanders on d1 and the mover on f1: a commander sandwich along the edge.
    g = capture_game(EDGE.replace(" 1 . . . t K t", " 1 . . . c K .")
                     .replace(" 4 . . . . . . .", " 4 . . . . . c ."))
    m = g.push("f4-f1")
    assert_king_captured(g, m, "e1")


SANDWICH = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . X . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . . Y K . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
"""


def sandwich(mover: str, anvil: str, **options) -> Game:
    """King on e4, ``anvil`` on d4; ``mover`` on f8 moves f8-f4, next to the king."""
    return capture_game(SANDWICH.replace("X", mover).replace("Y", anvil), **options)


def test_commander_sandwich_with_another_commander_captures_the_king():
    g = sandwich("c", "c")
    m = g.push("f8-f4")
    assert_king_captured(g, m, "e4")


@pytest.mark.parametrize("mover,anvil", [("c", "t"), ("t", "c"), ("t", "t"), ("c", ".")])
def test_no_sandwich_without_a_moving_commander_and_a_commander_beyond(mover, anvil):
    g = sandwich(mover, anvil)
    m = g.push("f8-f4")
    assert_not_captured(g, m, "e4")


def test_commander_sandwich_must_be_in_one_line():
    # A commander north of the king and one moving in from the east: not in one line.
    g = capture_game(SANDWICH.replace("X", "c").replace("Y", ".")
                     .replace(" 5 . . . . . . .", " 5 . . . . c . ."))
    assert pos_letter(g, "e5") == "c"
    m = g.push("f8-f4")
    assert_not_captured(g, m, "e4")


@pytest.mark.parametrize("king,mover,move", [
    ("a2", "a5", "a5-a3"),       # the corner a1 beyond the king, on the edge
    ("k10", "k5", "k5-k9"),      # the corner k11 beyond the king
    ("b1", "e1", "e1-c1"),       # the corner a1 beyond, along the first rank
])
def test_commander_sandwich_against_a_corner(king, mover, move):
    g = jumper(".", ".", "attacker", extra={king: "K", mover: "c"})
    m = g.push(move)
    assert_king_captured(g, m, king)
    # an ordinary attacker in the commander's place does not capture
    g = jumper(".", ".", "attacker", extra={king: "K", mover: "t"})
    m = g.push(move)
    assert_not_captured(g, m, king)


def test_commander_sandwich_next_to_the_throne():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . c . . . . . .
 6 . . . . K . . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . c . . . . . .
"""
    g = capture_game(d)
    m = g.push("e1-e5")
    assert_king_captured(g, m, "e6")


def test_commander_with_the_empty_throne_beyond_does_not_capture():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . c . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . K . . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
"""
    g = capture_game(d)
    m = g.push("d9-d6")
    assert_not_captured(g, m, "e6")


ON_THRONE = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . c . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . c K . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
"""


def test_two_commanders_around_the_king_on_the_throne_do_not_capture():
    g = capture_game(ON_THRONE)
    assert g.rules.commander_capture_on_throne is False
    m = g.push("g9-g6")
    assert_not_captured(g, m, "f6")


def test_commander_capture_on_throne_option():
    g = capture_game(ON_THRONE, commander_capture_on_throne=True)
    m = g.push("g9-g6")
    assert_king_captured(g, m, "f6")


def test_commander_jumping_next_to_the_king_makes_a_sandwich():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . c . . . . . . .
 5 . . . K . . . . . . .
 4 . . . . . . . . . . .
 3 . . . T . . . . . . .
 2 . . . c . . . . . . .
 1 . . . . . . . . . . .
"""
    g = capture_game(d)
    m = g.push("d2^d4")
    assert m.jump and pos_letter(g, "d3") == "T"     # the jumped soldier stays
    assert_king_captured(g, m, "d5")


def test_king_moving_between_two_commanders_is_safe():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . K . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . c . c . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . . .
"""
    g = game(d, "defender")
    m = g.push("d8-d4")
    assert m.captures == () and g.result is None and pos_letter(g, "d4") == "K"


# --- berserk chains --------------------------------------------------------------------------------

CHAIN = """
11 . . . . . . . . . . .
10 . . . . . . . . K . .
 9 . B t . Z . . . . . .
 8 . A T . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . T t . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . t . . . . . . . .
"""
# c1-c5 takes d5 (against e5); c5-c7 takes c8 (against c9); c7-b7 takes b8 (against b9).


def chain_game(length: int, shuffler: bool = False) -> Game:
    d = CHAIN.replace("Z", "t" if shuffler else ".")
    if length < 3:
        d = d.replace("A", ".").replace("B", ".")
    else:
        d = d.replace("A", "T").replace("B", "t")
    if length < 2:
        d = d.replace(" 8 . . T", " 8 . . .").replace(" 9 . . t", " 9 . . .")
    return game(d, "attacker")


def assert_chain(g: Game, square: str, side: str, turns: int, expected: set[str]):
    assert g.chain == square and g.to_move == side and g.turns == turns and not g.is_over()
    assert legal(g) == expected | {"pass"}
    mask = g.action_mask()
    assert mask[PASS_ACTION] == 1 and int(mask.sum()) == len(expected) + 1
    assert all(m.continuation for m in g.legal_moves() if not m.is_pass)
    assert all(m.origin == sq(square) for m in g.legal_moves() if not m.is_pass)


def assert_turn_over(g: Game, side: str, turns: int):
    assert g.chain is None and g.to_move == side and g.turns == turns
    assert not g.action_mask()[PASS_ACTION]
    assert "pass" not in legal(g)


def test_capture_without_a_capturing_continuation_ends_the_turn_at_once():
    # RULES §6.2: chain length 1, no continuation, no pass needed.
    g = chain_game(1)
    m = g.push("c1-c5")
    assert m.notation == "c1-c5xd5" and not m.continuation
    assert_turn_over(g, "defender", 1)
    with pytest.raises(IllegalMoveError):
        g.push("pass")


def test_chain_of_length_one_ended_by_pass():
    g = chain_game(2)
    m = g.push("c1-c5")
    assert m.notation == "c1-c5xd5" and not m.continuation
    assert_chain(g, "c5", "attacker", 0, {"c5=c7xc8"})
    p = g.push("pass")
    assert p.is_pass and p.notation == "pass" and p.action == PASS_ACTION
    assert_turn_over(g, "defender", 1)
    assert pos_letter(g, "c5") == "t" and pos_letter(g, "c8") == "T"


def test_chain_of_length_two_ends_when_no_capture_is_left():
    g = chain_game(2)
    g.push("c1-c5")
    m = g.push("c5-c7")                       # readers accept '-' for a continuation
    assert m.continuation and m.notation == "c5=c7xc8" and names(m.captures) == ("c8",)
    assert_turn_over(g, "defender", 1)
    assert [x.notation for x in g.moves] == ["c1-c5xd5", "c5=c7xc8"]


def test_chain_of_length_three():
    g = chain_game(3)
    g.push("c1-c5xd5")
    assert_chain(g, "c5", "attacker", 0, {"c5=c7xc8"})
    g.push("c5=c7xc8")
    assert_chain(g, "c7", "attacker", 0, {"c7=b7xb8"})
    m = g.push(action("c7", "w", 1))
    assert m.notation == "c7=b7xb8" and m.continuation
    assert_turn_over(g, "defender", 1)
    assert g.position == pos("""
11 . . . . . . . . . . .
10 . . . . . . . . K . .
 9 . t t . . . . . . . .
 8 . . . . . . . . . . .
 7 . t . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . t . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
""")


def test_pass_during_a_chain_by_action_id():
    g = chain_game(3)
    g.push("c1-c5")
    g.push(PASS_ACTION)
    assert_turn_over(g, "defender", 1)


def test_opponents_move_during_a_chain_implies_the_pass():
    g = chain_game(2)
    g.push("c1-c5")
    m = g.push("i10-i9")
    assert m.notation == "i10-i9" and not m.continuation
    assert [x.notation for x in g.moves] == ["c1-c5xd5", "pass", "i10-i9"]
    assert g.moves[-2].is_pass
    assert g.chain is None and g.to_move == "attacker" and g.turns == 2


def test_illegal_opponent_move_during_a_chain_does_not_apply_the_pass():
    g = chain_game(2)
    g.push("c1-c5")
    before = snapshot(g)
    with pytest.raises(IllegalMoveError):
        g.push("i10-i11xh11")                 # a legal king step, but a wrong capture suffix
    assert snapshot(g) == before
    with pytest.raises(IllegalMoveError):
        g.push("j2^j4")                       # written as a jump, but it is no jump
    assert snapshot(g) == before


@pytest.mark.parametrize("move", ["c9-d9", "e5-e4", "c9-c10"])
def test_move_by_another_piece_of_the_chain_side_is_illegal(move):
    g = chain_game(2)
    g.push("c1-c5")
    before = snapshot(g)
    with pytest.raises(IllegalMoveError):
        g.push(move)
    assert snapshot(g) == before
    origin, target = move.split("-")
    with pytest.raises(IllegalMoveError):
        g.push(g.engine.encode(sq(origin), sq(target)))
    assert snapshot(g) == before
    # the chain piece's own non-capturing move is illegal as well
    with pytest.raises(IllegalMoveError):
        g.push("c5-c6")
    assert snapshot(g) == before


def test_batched_engine_rejects_a_non_chain_action_and_changes_nothing():
    g = chain_game(2)
    g.push("c1-c5")
    eng, st = g.engine, g.state.copy()
    board = st.board.copy()
    with pytest.raises(IllegalMoveError):
        eng.step(st, np.array([g.engine.encode(sq("c9"), sq("d9"))]))
    assert (st.board == board).all() and int(st.chain[0]) == sq("c5") and int(st.turn[0]) == 0


def test_captured_pieces_are_gone_before_the_continuation_is_generated():
    # a4-f4 takes f5 against the empty throne; the continuation then slides through f5 and the
    # empty throne to f7, taking f8 against f9.
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . K . .
 9 . . . . . t . . . . .
 8 . . . . . T . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . T . . . . .
 4 t . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . . . . . . . . . .
"""
    g = game(d, "attacker")
    m = g.push("a4-f4")
    assert m.notation == "a4-f4xf5"
    assert_chain(g, "f4", "attacker", 0, {"f4=f7xf8"})
    m = g.push("f4=f7xf8")
    assert names(m.captures) == ("f8",)
    assert_turn_over(g, "defender", 1)


def test_king_chain_ends_by_escaping_to_a_corner():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . t . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 T . . . . . . . . . .
 5 t . . . . . . . . . .
 4 . . . K . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . . .
"""
    g = game(d, "defender")
    m = g.push("d4-a4")
    assert names(m.captures) == ("a5",)
    # the king may continue only to the corner (no capture is left); plus pass
    assert_chain(g, "a4", "defender", 0, {"a4=a1"})
    m = g.push("a4-a1")
    assert m.notation == "a4=a1" and m.continuation and m.captures == ()
    assert (g.result, g.reason) == ("defender", "escaped")
    assert g.to_move == "attacker" and g.turns == 1 and g.chain is None


def test_non_king_chain_piece_may_not_continue_without_capture():
    # Same shape with a knight: a4-a1 is a corner (restricted) and captures nothing -> no chain.
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . K . .
 9 . . . . . . . t . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 T . . . . . . . . . .
 5 t . . . . . . . . . .
 4 . . . N . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . . .
"""
    g = game(d, "defender")
    m = g.push("d4-a4")
    assert names(m.captures) == ("a5",)
    assert_turn_over(g, "attacker", 1)


def test_knight_jump_starts_a_chain_and_jumping_continuation_is_written_caret_equals():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 t . . . . . . . K . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . . . t . . . . . .
 3 . . N t . . . . . . .
 2 . . . . . . . . . . .
 1 . . . . . . . . . . .
"""
    g = game(d, "defender")
    m = g.push("c3^e3")
    assert m.jump and not m.continuation and m.notation == "c3^e3xd3"
    assert_chain(g, "e3", "defender", 0, {"e3^=e5xe4"})
    m = g.push("e3-e5")                     # readers accept '-' for a jumping continuation
    assert m.jump and m.continuation and m.notation == "e3^=e5xe4"
    assert_turn_over(g, "attacker", 1)
    assert [x.notation for x in g.moves] == ["c3^e3xd3", "e3^=e5xe4"]


def test_chain_continuation_capturing_only_the_king_wins():
    d = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . t . . . . . . .
 4 . . . T . . . . . . .
 3 . . . . . . . K c . .
 2 . . . . . . . . . . .
 1 . . . c . . . . . . .
"""
    g = game(d, "attacker")
    m = g.push("d1-d3")
    assert names(m.captures) == ("d4",)
    assert_chain(g, "d3", "attacker", 0, {"d3=g3xh3"})
    m = g.push("d3=g3xh3")
    assert m.continuation and names(m.captures) == ("h3",)
    assert_king_captured(g, m, "h3")


def test_turn_ending_chain_written_notation_and_moves_list():
    g = chain_game(3)
    for text in ("c1-c5", "c5-c7", "c7-b7"):
        g.push(text)
    assert [m.notation for m in g.moves] == ["c1-c5xd5", "c5=c7xc8", "c7=b7xb8"]
    assert [m.continuation for m in g.moves] == [False, True, True]


def test_repetition_counts_whole_turns_only():
    # Q1 (after the chain's pass) has the same board as the position inside the chain, with the other
    # side to move; Q6, Q10 and Q14 have that board with the attackers to move, exactly like the
    # position inside the chain. Were it recorded, Q10 would be a third occurrence. Correctly the
    # third occurrence is Q14: Qj = Q10, p = 4, s = 7 (Q5 != Q9), made by the attackers, who lose.
    g = chain_game(2, shuffler=True)
    g.push("c1-c5")
    assert g.chain == "c5"
    inside = (g.position, g.to_move)
    g.push("pass")
    shuffle = ["j2-j4", "e9-e10", "j4-j3", "e10-e9", "j3-j2",                       # turns 2..6
               "e9-e10", "j2-j4", "e10-e9", "j4-j2",                                # turns 7..10
               "e9-e10", "j2-j4", "e10-e9"]                                         # turns 11..13
    for i, mv in enumerate(shuffle, start=2):
        g.push(mv)
        assert g.turns == i and not g.is_over(), (i, mv, g.summary())
        if i in (6, 10):
            assert (g.position, g.to_move) == inside
    g.push("j4-j2")
    assert g.turns == 14 and (g.position, g.to_move) == inside
    assert (g.result, g.reason) == ("defender", "repetition")


# --- no encirclement win ---------------------------------------------------------------------------

ENCIRCLE = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . t . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . t . t . . . . . . .
 3 . t K t . . . . . . .
 2 . . t . . . . . . . .
 1 . . . . . . . . . . .
"""


def test_berserk_has_no_encirclement_win():
    g = game(ENCIRCLE, "attacker")
    assert g.rules.encirclement is False
    g.push("c8-c5")                  # the king (the only defender) is now shut in c3/c4
    assert not g.is_over() and g.result is None
    # the king is shut in by the flood-fill test of §3.7, though he could still jump out
    assert legal(g) == {"c3-c4", "c3^a3", "c3^e3", "c3^c1"}


def test_encirclement_option_would_end_the_same_game():
    g = game(ENCIRCLE, "attacker", encirclement=True)
    g.push("c8-c5")
    assert (g.result, g.reason) == ("attacker", "encircled")


# --- the public cases ------------------------------------------------------------------------------

def _berserk_games():
    with open(CASES / "games.jsonl") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if r["variant"] == V]


def _berserk_perft():
    cases = json.loads((CASES / "perft.json").read_text())["cases"]
    out = []
    for c in cases:
        if c["variant"] != V:
            continue
        for depth, count in sorted(c["perft"].items(), key=lambda kv: int(kv[0])):
            if count <= 1_000_000:
                out.append(pytest.param(c, int(depth), count, id=f"{c['name']}-d{depth}"))
    return out


GAMES = _berserk_games()


def test_public_cases_present():
    assert len(GAMES) >= 1 and len(_berserk_perft()) >= 5


@pytest.mark.parametrize("case", GAMES, ids=[f"seed{g['seed']}" for g in GAMES])
def test_public_berserk_game(case):
    g = Game(V, max_turns=None)
    for mv in case["moves"]:
        g.push(mv)
    got = {k: getattr(g, k) for k in ("position", "to_move", "result", "reason", "turns")}
    want = {k: case[k] for k in ("position", "to_move", "result", "reason", "turns")}
    assert got == want


@pytest.mark.parametrize("case,depth,count", _berserk_perft())
def test_public_berserk_perft(case, depth, count):
    if case["moves"]:
        g = Game(V, max_turns=None)
        for mv in case["moves"]:
            g.push(mv)
        assert g.position == case["position"] and g.to_move == case["to_move"]
        assert g.chain == case["pending"]
        eng, st = g.engine, g.state
    else:
        assert case["pending"] is None
        eng = engine_for(make_rules(V, max_turns=None))
        st = eng.initial_state(1, case["position"], case["to_move"])
    assert perft(eng, st, depth) == count


# --- §5.5: a continuation that captures nothing is allowed only for the king, only into a corner ----
# Under edge escape (Tablut with the berserk option) every edge square is an escape square, but the
# rule names corners: a king's move to the edge that captures nothing does not continue a chain.

def test_breakers_position_tablut_king_opens_no_chain_to_the_edge():
    g = Game("historical_tablut", position="/9/9/9/4Tt3/9/9/6K2/9/t8/", to_move="defender",
             berserk=True)
    m = g.push("g7-g4")
    assert m.notation == "g7-g4xf4"
    assert g.chain is None and g.to_move == "attacker" and not g.is_over()
    assert not any(mv.notation.startswith("g4=") or mv.notation == "pass" for mv in g.legal_moves())


def test_tablut_king_chain_goes_on_to_the_edge_only_with_a_capture():
    # After g7-g4xf4 the king's g4=g2 sandwiches f2 against e2, so the chain opens; g4=g9, g4=g1
    # and g4=i4 reach the edge without a capture and are not continuations.
    g = Game("historical_tablut", position="/9/4Tt3/9/4Tt3/9/9/6K2/9/t8/", to_move="defender",
             berserk=True)
    g.push("g7-g4")
    assert g.chain == "g4"
    assert {mv.notation for mv in g.legal_moves()} == {"g4=g2xf2", "pass"}


def test_tablut_attacker_opens_no_chain_without_a_capture():
    g = Game("historical_tablut", position="/9/9/9/4tT3/9/9/6t2/1K7/9/", to_move="attacker",
             berserk=True)
    assert g.push("g7-g4").notation == "g7-g4xf4"
    assert g.chain is None and g.to_move == "defender"


def test_corner_board_king_continues_into_a_corner_without_a_capture():
    # RULES §5.5's example: c3-c1xd1 (against e1), then c1=a1 captures nothing and escapes.
    g = game(_CORNER_CONTINUATION, "defender")
    g.push("c3-c1")
    assert g.chain == "c1"
    assert {mv.notation for mv in g.legal_moves()} == {"c1=a1", "pass"}
    g.push("c1=a1")
    assert (g.result, g.reason) == ("defender", "escaped")


def test_corner_board_attacker_has_no_continuation_into_a_corner():
    # Corners open to every piece: the soldier's c3-c1xd1 (against e1) could slide on to the
    # corner a1, which captures nothing; so the turn ends.
    g = game(_CORNER_CONTINUATION.replace("K", "A").replace(" 1 . . . A D", " 1 . . . D A")
             .replace(" 8 . . . . . . . . A", " 8 . . . . . . . . K"), "attacker",
             restricted_corners=False)
    assert g.push("c3-c1").notation == "c3-c1xd1"
    assert g.chain is None and g.to_move == "defender"


_CORNER_CONTINUATION = """
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . . . . . . . . .
 8 . . . . . . . . A . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . .
 4 . . . . . . . . . . .
 3 . . K . . . . . . . .
 2 . . . . . . . . . . .
 1 . . . A D . . . . . .
   a b c d e f g h i j k
"""
