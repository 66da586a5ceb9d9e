"""Bad input (RULES.md §7): a clear error naming what was wrong, and nothing half-applied.

Covered: illegal action ids through ``Game.push(int)`` and ``Engine.step`` (the whole batch must be
unchanged even when only one game's action is bad), malformed and illegal move strings, malformed
or impossible position strings (RULES §6.6), unknown variants and options, bad ``to_move``, and
moves after the end of a game.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tafl_env import VARIANTS, Game, make_rules
from tafl_env.errors import (IllegalMoveError, InvalidMoveError, InvalidOptionError,
                             InvalidPositionError, TaflError, UnknownVariantError)
from tafl_env.game import engine_for
from tafl_env.notation import parse_square

from conftest import diagram_position as board  # ASCII board, rank N on top → position string

PUBLIC_FIELDS = ("board", "to_move", "chain", "turn", "winner", "reason", "done")


# --- helpers --------------------------------------------------------------------------------------

def test_board_helper():
    tablut = """
        . . . t t t . . .
        . . . . t . . . .
        . . . . T . . . .
        t . . . T . . . t
        t t T T K T T t t
        t . . . T . . . t
        . . . . T . . . .
        . . . . t . . . .
        . . . t t t . . .
    """
    assert board(tablut) == Game("historical_tablut").position


def snapshot(state) -> dict:
    return {f: np.array(getattr(state, f), copy=True) for f in PUBLIC_FIELDS}


def assert_unchanged(before: dict, state, what: str = "state") -> None:
    for f in PUBLIC_FIELDS:
        np.testing.assert_array_equal(before[f], getattr(state, f), err_msg=f"{what}: {f} changed")


def game_snapshot(game: Game) -> tuple:
    return (game.summary(), len(game.moves), game.action_mask().copy(), snapshot(game.state))


def assert_game_unchanged(before: tuple, game: Game) -> None:
    summary, n_moves, mask, state = before
    assert game.summary() == summary
    assert len(game.moves) == n_moves
    np.testing.assert_array_equal(game.action_mask(), mask)
    assert_unchanged(state, game.state, "game state")


# A Tablut scenario (attackers to move) with every kind of illegal action at hand:
#   e3 (attacker) faces the empty throne e5; c5 is a defender; h8 (attacker) is blocked by f8;
#   i1 (attacker), a9 (defender) and the king on b2 give moves that leave all of these in place.
TABLUT = "historical_tablut"
SCENARIO = board("""
    9 T . . . . . . . .
    8 . . . . . T . t .
    7 . . . . . . . . .
    6 . . . . . . . . .
    5 . . T . . . . . .
    4 . . . . . . . . .
    3 . . . . t . . . .
    2 . K . . . . . . .
    1 . . . . . . . . t
      a b c d e f g h i
""")
N9 = 9


def sq(name: str, n: int = N9) -> int:
    return parse_square(name, n)


def act(origin: str, target: str, variant: str = TABLUT) -> int:
    rules = make_rules(variant)
    n = rules.board_size
    return engine_for(rules).encode(sq(origin, n), sq(target, n))


def scenario_game() -> Game:
    return Game(TABLUT, SCENARIO, "attacker")


def _illegal_actions():
    eng = engine_for(make_rules(TABLUT))
    return [
        pytest.param(eng.num_actions, "out of range", id="just-out-of-range"),
        pytest.param(eng.num_actions + 1000, "out of range", id="far-out-of-range"),
        pytest.param(-1, "out of range", id="negative"),
        pytest.param(-(eng.num_actions + 5), "out of range", id="very-negative"),
        pytest.param(eng.pass_action, "pass", id="pass-without-chain"),
        pytest.param(act("c5", "c6"), "c5", id="opponents-piece"),
        pytest.param(act("a1", "a2"), "a1", id="empty-origin"),
        pytest.param(act("h8", "e8"), "h8", id="through-a-piece"),
        pytest.param(act("h8", "f8"), "h8", id="onto-a-piece"),
        pytest.param(act("e3", "e5"), "e3", id="soldier-onto-throne"),
        pytest.param((sq("h8") * 4 + 0) * (N9 - 1) + 1, "h8", id="off-the-board"),  # h8 north by 2
    ]


def test_scenario_controls():
    """The legal neighbours of the illegal actions are legal (so the tests below test what they say)."""
    g = scenario_game()
    legal = set(g.legal_actions().tolist())
    for origin, target in [("e3", "e4"), ("e3", "e6"), ("e3", "e9"), ("h8", "g8"), ("h8", "h9"),
                           ("e3", "a3")]:
        assert act(origin, target) in legal, f"{origin}-{target} should be legal"
    # sliding through the empty throne is allowed, stopping on it is not (RULES §3.2)
    assert act("e3", "e6") in legal and act("e3", "e5") not in legal
    assert (sq("h8") * 4 + 0) * (N9 - 1) + 1 not in legal  # h8 north by 2 leaves the board


@pytest.mark.parametrize("action,named", _illegal_actions())
def test_push_illegal_action(action, named):
    g = scenario_game()
    before = game_snapshot(g)
    with pytest.raises(IllegalMoveError, match=re.escape(str(action))) as exc:
        g.push(action)
    assert named in str(exc.value), str(exc.value)
    assert_game_unchanged(before, g)
    # and the game still plays normally afterwards
    g.push(act("e3", "e4"))
    assert g.turns == 1


@pytest.mark.parametrize("action,named", _illegal_actions())
@pytest.mark.parametrize("bad_row", [0, 1, 2])
def test_step_illegal_action_leaves_whole_batch_unchanged(action, named, bad_row):
    eng = engine_for(make_rules(TABLUT))
    state = eng.initial_state(3, SCENARIO, "attacker")
    # make the three games differ first (leaving e3, h8, c5 and f8 where they are)
    eng.step(state, np.array([act("i1", "i2"), act("i1", "g1"), act("i1", "i4")]))
    eng.step(state, np.array([act("a9", "a8"), act("a9", "b9"), act("b2", "b3")]))
    assert len({Game(TABLUT).engine.position(state, i) for i in range(3)}) == 3
    pristine = state.copy()
    before = snapshot(state)
    mask_before = eng.legal_action_mask(state).copy()
    good = eng.random_actions(state, np.random.default_rng(0))
    actions = good.copy()
    actions[bad_row] = action
    with pytest.raises(IllegalMoveError, match=re.escape(str(action))) as exc:
        eng.step(state, actions)
    assert f"game {bad_row}" in str(exc.value), str(exc.value)
    assert_unchanged(before, state, "batch")
    np.testing.assert_array_equal(eng.legal_action_mask(state), mask_before)
    # Nothing hidden was half-applied either: the batch continues exactly like its pristine copy.
    rng = np.random.default_rng(1)
    for _ in range(6):
        acts = eng.random_actions(state, rng)
        eng.step(state, acts)
        eng.step(pristine, acts)
        assert_unchanged(snapshot(pristine), state, "batch vs pristine copy")


def test_step_with_several_bad_games_names_them():
    eng = engine_for(make_rules(TABLUT))
    state = eng.initial_state(4, SCENARIO, "attacker")
    before = snapshot(state)
    actions = np.array([act("e3", "e4"), act("e3", "e5"), eng.num_actions + 7, act("c5", "c6")])
    with pytest.raises(IllegalMoveError) as exc:
        eng.step(state, actions)
    msg = str(exc.value)
    assert "game 1" in msg and "game 2" in msg and "game 3" in msg, msg
    assert "game 0" not in msg, msg
    assert_unchanged(before, state, "batch")


@pytest.mark.parametrize("actions", [
    pytest.param(lambda e: np.array([0, 1]), id="too-few"),
    pytest.param(lambda e: np.array([0, 1, 2, 3]), id="too-many"),
    pytest.param(lambda e: np.zeros((3, 1), dtype=np.int64), id="2d"),
    pytest.param(lambda e: np.array([0.0, 1.0, 2.0]), id="floats"),
])
def test_step_with_malformed_actions_array(actions):
    eng = engine_for(make_rules(TABLUT))
    state = eng.initial_state(3, SCENARIO, "attacker")
    before = snapshot(state)
    with pytest.raises(ValueError):
        eng.step(state, actions(eng))
    assert_unchanged(before, state, "batch")


# --- berserk chains -------------------------------------------------------------------------------

BERSERK = "legacy_berserk"
# a5-c5 captures c6 (against c7) and may go on with c5-c3 capturing d3 (against e3).
CHAIN_POSITION = board("""
    . . . . . . . . . . .
    . . . . . . . . . . .
    . . . . . . . K . . .
    . . . . . . . . . . .
    . . t . . . . . . . .
    . . T . . . . . . . .
    t . . . . . . . . . .
    . . . . . . . . . . .
    . . . T t . . . . . .
    . . . . . . . . . . .
    . . . . . . . . . . .
""")


def chain_game() -> Game:
    g = Game(BERSERK, CHAIN_POSITION, "attacker")
    g.push("a5-c5xc6")
    assert g.chain == "c5" and g.to_move == "attacker"
    return g


@pytest.mark.parametrize("text,named", [
    ("c7-c8", "c7-c8"),          # another piece of the chain's side
    ("c5-c4", "c5-c4"),          # the chain piece, but without a capture
    ("c5=c4", "c5=c4"),
    ("c5-c3xd4", "c5-c3xd4"),    # the right continuation with the wrong capture suffix
])
def test_illegal_moves_during_a_chain(text, named):
    g = chain_game()
    before = game_snapshot(g)
    with pytest.raises(IllegalMoveError, match=re.escape(named)):
        g.push(text)
    assert_game_unchanged(before, g)
    g.push("c5=c3xd3")  # the legal continuation still works
    assert g.moves[-1].captures == (sq("d3", 11),)


def test_illegal_actions_during_a_chain():
    g = chain_game()
    n = 11
    eng = g.engine
    bad = [eng.encode(sq("c7", n), sq("c8", n)),      # another attacker piece
           eng.encode(sq("c5", n), sq("c4", n)),      # no capture
           eng.encode(sq("h9", n), sq("h10", n))]     # a defender action id (only notation implies the pass)
    for a in bad:
        before = game_snapshot(g)
        with pytest.raises(IllegalMoveError, match=re.escape(str(a))):
            g.push(a)
        assert_game_unchanged(before, g)
    # the pass and the capturing continuation are legal actions
    legal = set(g.legal_actions().tolist())
    assert eng.pass_action in legal and eng.encode(sq("c5", n), sq("c3", n)) in legal
    # in notation, the defender's move implies the pass
    g.push("h9-h10")
    assert g.moves[-2].is_pass and g.to_move == "attacker" and g.chain is None


def test_step_illegal_during_chain_leaves_batch_unchanged():
    rules = make_rules(BERSERK)
    eng = engine_for(rules)
    n = 11
    state = eng.initial_state(3, CHAIN_POSITION, "attacker")
    a5c5 = eng.encode(sq("a5", n), sq("c5", n))
    eng.step(state, np.array([a5c5, a5c5, a5c5]))
    assert (state.chain == sq("c5", n)).all()
    before = snapshot(state)
    actions = np.array([eng.encode(sq("c5", n), sq("c3", n)), eng.encode(sq("c7", n), sq("c8", n)),
                        eng.pass_action])
    with pytest.raises(IllegalMoveError, match="game 1"):
        eng.step(state, actions)
    assert_unchanged(before, state, "batch in a chain")


# --- malformed move strings -----------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "e2e4", "z1-z2", "e0-e3", "e2-e22", "e10-e3", "j1-j2", "xx", "e2-", "-e4", "e2-e4xx", "e2-e4 junk",
    "e2--e4", "e2:e4", "2e-4e", "e2-e4x", "pas",
])
def test_malformed_move_strings(text):
    g = Game(TABLUT)
    before = game_snapshot(g)
    with pytest.raises((InvalidMoveError, IllegalMoveError), match=re.escape(repr(text))):
        g.push(text)
    assert_game_unchanged(before, g)


def test_empty_move_string():
    g = Game(TABLUT)
    before = game_snapshot(g)
    with pytest.raises((InvalidMoveError, IllegalMoveError), match=r"''|\"\"|(?i:empty)"):
        g.push("")
    assert_game_unchanged(before, g)


@pytest.mark.parametrize("bad", [None, 2.5, [1, 2], b"e2-c2"])
def test_push_of_a_non_move(bad):
    g = Game(TABLUT)
    before = game_snapshot(g)
    with pytest.raises((TaflError, TypeError)):
        g.push(bad)
    assert_game_unchanged(before, g)


# A Tablut position where a5-d5 captures d6 (against d7); attackers to move.
CAPTURE_POSITION = board("""
    . . . . . . . . .
    . . . . . . . . .
    . . . t . . . . .
    . . . T . . . . .
    t . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . K .
    . . . . . . . . .
""")


@pytest.mark.parametrize("text", [
    "e2-f3",         # diagonal
    "e2-e2",         # no move
    "e2-e3",         # onto a piece (e3 is a defender)
    "e1-e3",         # through a piece
    "e4-e3",         # from an empty square
    "e3-f3",         # the defenders' piece, attackers to move
    "e2-c2xd2",      # a capture suffix on a move that captures nothing
    "e2-c2xc3/d2",
    "e2^c2",         # written as a jump, but a slide
    "e2=c2",         # written as a continuation, but no chain is pending
    "pass",          # no chain to end
])
def test_illegal_move_strings_from_the_start(text):
    g = Game(TABLUT)
    before = game_snapshot(g)
    with pytest.raises((IllegalMoveError, InvalidMoveError), match=re.escape(text)):
        g.push(text)
    assert_game_unchanged(before, g)


@pytest.mark.parametrize("text", ["a5-d5xd4", "a5-d5xd7", "a5-d5xd6/c5", "a5-d5xd6/d7", "a5-d5xe5"])
def test_wrong_capture_suffix(text):
    g = Game(TABLUT, CAPTURE_POSITION, "attacker")
    before = game_snapshot(g)
    with pytest.raises(IllegalMoveError, match=re.escape(text)):
        g.push(text)
    assert_game_unchanged(before, g)


@pytest.mark.parametrize("text", ["a5-d5xd6", "a5-d5", "ta5-td5xTd6", "a5-d5xd6+"])
def test_right_capture_suffix_is_accepted(text):
    """Control for the test above: the same move with the right (or no) suffix is read."""
    g = Game(TABLUT, CAPTURE_POSITION, "attacker")
    move = g.push(text)
    assert move.captures == (sq("d6"),)
    assert move.notation == "a5-d5xd6"


# --- malformed positions --------------------------------------------------------------------------

START = Game(TABLUT).position                  # '/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/'
RECORDS = START.strip("/").split("/")


def _with_record(i: int, record: str) -> str:
    recs = list(RECORDS)
    recs[i] = record
    return "/" + "/".join(recs) + "/"


def _make_both(variant: str, position: str, to_move: str | None = None):
    """Load ``position`` through Game and through Engine.initial_state; both must fail alike."""
    yield lambda: Game(variant, position, to_move)
    yield lambda: engine_for(make_rules(variant)).initial_state(2, position, to_move)


@pytest.mark.parametrize("position,patterns", [
    pytest.param("/" + "/".join(RECORDS[:8]) + "/", [r"\b8\b"], id="eight-ranks"),
    pytest.param("/" + "/".join(RECORDS + ["9"]) + "/", [r"\b10\b"], id="ten-ranks"),
    pytest.param(_with_record(2, "4T3"), [r"4T3", r"(?i)rank\s*3\b|\b3(rd)? rank"], id="short-rank-3"),
    pytest.param(_with_record(6, "4T5"), [r"4T5", r"(?i)rank\s*7\b|\b7(th)? rank"], id="long-rank-7"),
    pytest.param(_with_record(1, "4Q4"), [r"Q"], id="unknown-letter"),
    pytest.param(_with_record(1, "4k4"), [r"k"], id="lowercase-king"),
    pytest.param(START[1:], [r"(?i)'/'|slash|start|begin"], id="no-leading-slash"),
    pytest.param(START[:-1], [r"(?i)'/'|slash|end|clos"], id="no-closing-slash"),
    pytest.param(START.replace("/", "", 3).replace("//", "/"), [r"(?i)rank|record|'/'|slash"],
                 id="missing-inner-slashes"),
    pytest.param(_with_record(7, "4K4"), [r"(?i)king", r"e8"], id="two-kings"),
    pytest.param(START.replace("ttTTKTTtt", "ttTTtTTtt"), [r"e5", r"(?i)throne|restricted"],
                 id="attacker-on-throne"),
    pytest.param(START.replace("ttTTKTTtt", "ttTTTTTtt"), [r"e5", r"(?i)throne|restricted"],
                 id="defender-on-throne"),
    pytest.param("", [r"''|(?i:empty)"], id="empty"),
    pytest.param("/", [r"(?i)rank|record|'/'"], id="just-a-slash"),
])
def test_malformed_positions(position, patterns):
    for load in _make_both(TABLUT, position, "attacker"):
        with pytest.raises(InvalidPositionError) as exc:
            load()
        for p in patterns:
            assert re.search(p, str(exc.value)), f"{p!r} not in {str(exc.value)!r}"


def test_non_string_position():
    with pytest.raises((InvalidPositionError, TypeError)):
        Game(TABLUT, 12345)


TAWL = "legacy_tawlbwrdd"
TAWL_START = Game(TAWL).position
TAWL_RECS = TAWL_START.strip("/").split("/")   # rank 1: '4ttt4', rank 11: '4ttt4'


@pytest.mark.parametrize("variant,position,square", [
    (TAWL, "/t3ttt4/" + "/".join(TAWL_RECS[1:]) + "/", "a1"),
    (TAWL, "/" + "/".join(TAWL_RECS[:10]) + "/4ttt3t/", "k11"),
    (TAWL, "/4ttt3T/" + "/".join(TAWL_RECS[1:]) + "/", "k1"),
    (BERSERK, "/c2ttttt3/" + "/".join(Game(BERSERK).position.strip("/").split("/")[1:]) + "/", "a1"),
])
def test_soldier_on_a_corner_in_a_corner_variant(variant, position, square):
    for load in _make_both(variant, position):
        with pytest.raises(InvalidPositionError, match=square):
            load()


def test_knight_on_the_throne_in_berserk():
    pos = board("""
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        t . . . . N . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . K . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
    """)
    with pytest.raises(InvalidPositionError, match="f6"):
        Game(BERSERK, pos, "attacker")


def test_corners_are_plain_in_historical_tablut():
    """A soldier on a corner is allowed in Historisches Tablut (RULES §3.2, §6.5)."""
    pos = "/t2ttt3/" + "/".join(RECORDS[1:8]) + "/3ttt2T/"
    g = Game(TABLUT, pos, "attacker")
    assert g.position == pos
    assert not g.is_over()
    assert act("a1", "b1") in set(g.legal_actions().tolist())


def test_king_may_stand_on_a_corner_or_the_throne_when_loaded():
    """Only non-king pieces are rejected there (RULES §6.6); escape is judged only after moves."""
    pos = "/K3ttt4/" + "/".join(TAWL_RECS[1:5]) + "/t1tTT1TTt1t/" + "/".join(TAWL_RECS[6:]) + "/"
    g = Game(TAWL, pos, "attacker")
    assert g.position == pos and not g.is_over()


# --- variants, options, sides ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tablut", "Historical_Tablut", "", "legacy-berserk"])
def test_unknown_variant(name):
    for make in (lambda: Game(name), lambda: make_rules(name)):
        with pytest.raises(UnknownVariantError, match=re.escape(repr(name))) as exc:
            make()
        for v in VARIANTS:
            assert v in str(exc.value), f"{v} not listed in {exc.value}"


def test_unknown_variant_of_the_wrong_type():
    with pytest.raises((UnknownVariantError, TypeError)):
        make_rules(None)


@pytest.mark.parametrize("options,name", [
    ({"kingarmed": True}, "kingarmed"),
    ({"max_turn": 10}, "max_turn"),
    ({"encirclement": True, "colour": "red"}, "colour"),
])
def test_unknown_option(options, name):
    for make in (lambda: Game(TABLUT, **options), lambda: make_rules(TABLUT, **options)):
        with pytest.raises(InvalidOptionError, match=re.escape(name)):
            make()


@pytest.mark.parametrize("option,value", [
    ("max_turns", 0), ("max_turns", -3), ("max_turns", "10"), ("max_turns", 2.5),
    ("repetition", "sometimes"), ("repetition", None),
    ("king_capture", "three_sided"), ("escape", "sky"),
    ("move_range", 0), ("move_range", 9), ("move_range", -1),
    ("king_armed", "yes"), ("encirclement", 1), ("berserk", None),
    ("first_to_move", "white"), ("board_size", 8), ("board_size", 21), ("board_size", 3),
])
def test_out_of_range_option(option, value):
    for make in (lambda: Game(TABLUT, **{option: value}), lambda: make_rules(TABLUT, **{option: value})):
        with pytest.raises(InvalidOptionError, match=re.escape(option)):
            make()


def test_options_in_range_are_accepted():
    """Controls for the two tests above."""
    assert make_rules(TABLUT, max_turns=None).max_turns is None
    assert make_rules(TABLUT, max_turns=1).max_turns == 1
    assert make_rules(TABLUT, move_range=8).move_range == 8
    assert make_rules(TABLUT, repetition="draw").repetition == "draw"


@pytest.mark.parametrize("to_move", ["white", "black", "Attacker", "", 2, -1])
def test_bad_to_move(to_move):
    for make in (lambda: Game(TABLUT, None, to_move),
                 lambda: engine_for(make_rules(TABLUT)).initial_state(1, None, to_move)):
        with pytest.raises(TaflError, match=re.escape(repr(to_move))):
            make()


def test_bad_batch_size():
    eng = engine_for(make_rules(TABLUT))
    for b in (0, -2):
        with pytest.raises(ValueError, match="batch"):
            eng.initial_state(b)


# --- after the end --------------------------------------------------------------------------------

ESCAPE_POSITION = board("""
    . . . . . . . . .
    . . . . K . . . .
    . . . . . . . . .
    . . . . . . . . .
    t . . . . . . . .
    . . . . . . . . .
    . . . . T . . . .
    . . . . . . . . .
    . . . t . . . . .
""")


def test_move_after_the_game_is_over():
    g = Game(TABLUT, ESCAPE_POSITION, "defender")
    g.push("e8-e9")
    assert (g.result, g.reason) == ("defender", "escaped")
    assert g.to_move == "attacker"
    before = game_snapshot(g)
    for move in ("a5-a6", "d1-d2", "pass"):
        with pytest.raises(IllegalMoveError, match=re.escape(move)) as exc:
            g.push(move)
        assert re.search(r"(?i)over|finished|ended", str(exc.value)), str(exc.value)
        assert_game_unchanged(before, g)


@pytest.mark.parametrize("action", [act("a5", "a6"), act("d1", "d2"), 5],
                         ids=["legal-before-the-end", "another", "nonsense"])
def test_action_after_the_game_is_over(action):
    """``Game.push(int)`` after the end is an error too (the batched step ignores finished games, but
    a single game asked to play a move must refuse it), and nothing is recorded."""
    g = Game(TABLUT, ESCAPE_POSITION, "defender")
    g.push("e8-e9")
    before = game_snapshot(g)
    with pytest.raises(IllegalMoveError, match=r"(?i)over|finished|ended"):
        g.push(action)
    assert_game_unchanged(before, g)


def test_finished_game_in_a_batch_ignores_its_action():
    eng = engine_for(make_rules(TABLUT))
    state = eng.initial_state(2, ESCAPE_POSITION, "defender")
    e8e9 = act("e8", "e9")
    eng.step(state, np.array([e8e9, act("e3", "f3")]))
    assert state.done[0] and not state.done[1]
    row0 = {f: np.array(getattr(state, f)[0], copy=True) for f in PUBLIC_FIELDS}
    eng.step(state, np.array([e8e9, act("a5", "a6")]))  # game 0's action is ignored
    for f in PUBLIC_FIELDS:
        np.testing.assert_array_equal(row0[f], getattr(state, f)[0])


def test_loaded_position_without_moves_is_over():
    """RULES §6.6: a loaded position whose side to move has no legal move is finished at once."""
    pos = board("""
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . K . . . . . .
        T . . . . . . . .
        t T . . . . . . .
    """)
    g = Game(TABLUT, pos, "attacker")
    assert (g.result, g.reason) == ("defender", "no_moves")
    before = game_snapshot(g)
    with pytest.raises(IllegalMoveError, match=re.escape("a1-a2")):
        g.push("a1-a2")
    assert_game_unchanged(before, g)
    with pytest.raises(IllegalMoveError):
        g.push(act("a1", "a2"))
    assert_game_unchanged(before, g)
