"""API edges of the front ends: bad calls, the outcome types, PettingZoo and Gymnasium conventions.

Each bad input must be rejected with an error naming what was wrong, leaving nothing half-applied;
the conventions of PettingZoo and Gymnasium (``state_space``, ``rgb_array``) must hold.
"""

from __future__ import annotations

import numpy as np
import pytest

from tafl_env import Game, make_rules
from tafl_env.errors import IllegalMoveError, InvalidMoveError, InvalidOptionError, TaflError
from tafl_env.notation import parse_position, parse_square

TABLUT = "historical_tablut"


# --- notation: ASCII digits only ---------------------------------------------------------------

@pytest.mark.parametrize("text", ["e\uff12-c2", "e2-c\uff12", "e\u0662-c2", "e2-c2xd\uff12", "e\uff12"])
def test_moves_with_non_ascii_digits_are_malformed(text):
    g = Game(TABLUT)
    with pytest.raises(InvalidMoveError, match="malformed"):
        g.push(text)
    assert g.turns == 0 and not g.moves


def test_squares_and_positions_with_non_ascii_digits_are_malformed():
    with pytest.raises(InvalidMoveError, match="malformed square"):
        parse_square("e\uff15", 9)
    start = Game(TABLUT).position
    with pytest.raises(TaflError, match="\uff13"):
        parse_position(start.replace("3", "\uff13", 1), 9)
    assert parse_square("e5", 9) == 40


# --- rules: sides and the layout option ---------------------------------------------------------

@pytest.mark.parametrize("to_move", [1.0, 0.0, True, np.float64(1), np.bool_(False)])
def test_to_move_must_be_a_side_not_a_float_or_bool(to_move):
    with pytest.raises(InvalidOptionError, match="side"):
        Game(TABLUT, to_move=to_move)


@pytest.mark.parametrize("to_move,side", [(1, "defender"), (np.int8(0), "attacker"), ("defender", "defender")])
def test_to_move_as_a_side_name_or_index(to_move, side):
    assert Game(TABLUT, to_move=to_move).to_move == side


@pytest.mark.parametrize("layout,named", [
    ("garbage", "must start and end with '/'"),
    ("/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/", "8 rank records"),
    ("/3ttt3/4t4/4T4/t3T3t/ttTTtTTtt/t3T3t/4T4/4t4/3ttt3/", "restricted square e5"),
    ("/3ttt3/4t4/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3tKt3/", "2 kings"),
    (12345, "must be a str"),
])
def test_bad_layout_is_an_error_of_make_rules(layout, named):
    with pytest.raises(InvalidOptionError, match="layout") as exc:
        make_rules(TABLUT, layout=layout)
    assert named in str(exc.value)


def test_layout_checks_follow_the_rules_and_board_size():
    corner = "/t3ttt4/4t1t4/5t5/5T5/tt2TTT2tt/t1tTTKTTt1t/tt2TTT2tt/5T5/5t5/4t1t4/4ttt4/"
    with pytest.raises(InvalidOptionError, match="a1"):
        make_rules("legacy_tawlbwrdd", layout=corner)            # restricted corners
    plain = make_rules(TABLUT).layout.replace("/3ttt3/", "/t2ttt3/", 1)
    assert make_rules(TABLUT, layout=plain).layout == plain      # plain corners in Historisches Tablut
    with pytest.raises(InvalidOptionError, match="11x11"):
        make_rules(TABLUT, board_size=11)                         # the 9x9 layout no longer fits
    assert Game(TABLUT, layout=plain).position == plain


# --- Game: what describe and push accept --------------------------------------------------------

@pytest.mark.parametrize("action", [1e3, 441.0, True, np.float32(441), None, [441]])
def test_describe_takes_an_action_id_only(action):
    g = Game(TABLUT)
    with pytest.raises(InvalidMoveError, match="action id"):
        g.describe(action)


def test_describe_of_a_move_string_says_what_to_use():
    g = Game(TABLUT)
    with pytest.raises(InvalidMoveError, match=r"not the move string 'e2-c2'.*push\(\)"):
        g.describe("e2-c2")
    move = g.describe(np.int64(441))
    assert move.notation == "e2-c2" and g.describe(move).notation == "e2-c2" and g.turns == 0


# --- outcomes as types ----------------------------------------------------------------------------

def test_termination_values_are_the_engine_reason_codes():
    from tafl_env import Termination
    from tafl_env.engine.state import REASON_NAMES

    engine_made = {int(t): t.reason for t in Termination if t is not Termination.ILLEGAL_ACTION}
    assert engine_made == {k: v for k, v in REASON_NAMES.items() if k}
    # the front ends' ruling on an illegal action is no engine code
    assert int(Termination.ILLEGAL_ACTION) not in REASON_NAMES
    assert Termination.ILLEGAL_ACTION.reason == "illegal_action"
    assert Termination(6) is Termination.TRUNCATED and Termination.ESCAPED.reason == "escaped"


def test_game_outcome_is_typed_and_keeps_the_old_pair():
    from tafl_env import Outcome, Termination

    g = Game(TABLUT, "/t8/9/9/9/9/9/9/4K4/9/", "defender")
    assert g.outcome() is None and g.result is None and g.reason is None
    g.push("e8-e9")
    out = g.outcome()
    assert out == Outcome(Termination.ESCAPED, "defender") and out.winner == "defender"
    assert (out.result, out.reason) == (g.result, g.reason) == ("defender", "escaped")
    assert out == ("defender", "escaped") and tuple(out) == ("defender", "escaped")
    assert hash(out) == hash(("defender", "escaped")) and out != ("attacker", "escaped")
    with pytest.raises(AttributeError):
        out.winner = "attacker"                                   # frozen


def test_truncated_and_drawn_outcomes_have_no_winner():
    from tafl_env import Outcome, Termination

    g = Game("legacy_ard_ri", max_turns=1)
    g.push(g.legal_moves()[0])
    assert g.outcome() == Outcome(Termination.TRUNCATED, None) and g.outcome().result == "draw"
    assert Outcome.from_codes(2, 5) == Outcome(Termination.REPETITION, None) == ("draw", "repetition")
    with pytest.raises(ValueError, match="winner"):
        Outcome(Termination.ESCAPED, "draw")


# --- Game.push plays in place; a failed push and pop rebuild the state ------------------------------

def _same_game(a: Game, b: Game) -> None:
    assert a.summary() == b.summary() and [m.notation for m in a.moves] == [m.notation for m in b.moves]
    for f in ("board", "to_move", "chain", "turn", "key", "winner", "reason", "repeats"):
        np.testing.assert_array_equal(getattr(a.state, f), getattr(b.state, f), err_msg=f)
    np.testing.assert_array_equal(a.state.history[:, : a.turns + 1], b.state.history[:, : b.turns + 1])
    np.testing.assert_array_equal(a.action_mask(), b.action_mask())


def test_push_does_not_copy_the_game_per_move(monkeypatch):
    from tafl_env.engine import State

    g = Game("legacy_ard_ri", max_turns=None)
    copies = []
    real_copy = State.copy
    monkeypatch.setattr(State, "copy", lambda self: copies.append(1) or real_copy(self))
    rng = np.random.default_rng(0)
    for i in range(40):
        if g.is_over():
            break
        a = int(rng.choice(g.legal_actions()))
        g.push(a) if i % 2 else g.push(g.describe(a).notation)
    assert g.turns > 10 and len(copies) <= 1 + g.turns // 2      # one base copy, and describe()'s


# A berserk chain: a5-c5 captures c6 and may go on (c5-c3 captures d3); a defender move implies the pass.
CHAIN_POSITION = "/11/11/3Tt6/11/t10/2T8/2t8/11/7K3/11/11/"


@pytest.mark.parametrize("text", [
    "d3-e3",          # the implied pass is played, then the defender's move is illegal
    "h9-h10xa1",      # the implied pass and the move are played, then the capture suffix is wrong
    "c5-c3xd4",       # the continuation is played, then the capture suffix is wrong
    "c5^c3",          # written as a jump, but a slide
])
def test_failed_push_after_a_change_leaves_the_game_as_it_was(text):
    g = Game("legacy_berserk", CHAIN_POSITION, "attacker")
    g.push("a5-c5xc6")
    assert g.chain == "c5"
    before = g.copy()
    with pytest.raises(IllegalMoveError):
        g.push(text)
    _same_game(g, before)
    g.push("h9-h10")                                             # the implied pass still works
    assert [m.notation for m in g.moves[-2:]] == ["pass", "h9-h10"]


def test_pop_takes_moves_back():
    g = Game("legacy_berserk", CHAIN_POSITION, "attacker")
    fresh = g.copy()
    with pytest.raises(IllegalMoveError, match="no move to take back"):
        g.pop()
    g.push("a5-c5xc6")
    after_one = g.copy()
    g.push("h9-h10")
    assert g.pop().notation == "h9-h10" and g.pop().is_pass
    _same_game(g, after_one)
    assert g.pop().notation == "a5-c5xc6"
    _same_game(g, fresh)
    g.push("a5-c5xc6")
    copied = g.copy()
    with pytest.raises(IllegalMoveError, match="came with the position"):
        copied.pop()
    copied.push("c5=c3xd3")
    assert copied.pop().notation == "c5=c3xd3" and copied.chain == "c5"


# --- the PettingZoo AEC env -----------------------------------------------------------------------

def _raw(variant=TABLUT, **kw):
    from tafl_env.aec import raw_env

    e = raw_env(variant, **kw)
    e.reset()
    return e


@pytest.mark.parametrize("action", [True, False, np.True_, 441.0, "441"])
def test_raw_env_step_takes_action_ids_only(action):
    e = _raw()
    with pytest.raises(IllegalMoveError, match="action id"):
        e.step(action)
    assert e.played == [] and e.agent_selection == "attacker" and e.game.turns == 0


def test_wrapped_env_step_rejects_a_bool_clearly():
    from tafl_env.aec import env

    e = env(TABLUT)
    e.reset()
    with pytest.raises(IllegalMoveError, match="action id"):
        e.step(True)
    assert e.unwrapped.played == [] and not any(e.terminations.values())
    e.step(441)
    assert e.unwrapped.played == [441]


@pytest.mark.parametrize("call", ["step", "observe", "state"])
def test_raw_env_before_reset_says_reset_first(call):
    from tafl_env.aec import raw_env

    e = raw_env(TABLUT)
    args = {"step": (441,), "observe": ("attacker",), "state": ()}[call]
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        getattr(e, call)(*args)


def test_observe_an_unknown_agent_names_the_agents():
    e = _raw()
    with pytest.raises(TaflError, match=r"'king'.*'attacker' and 'defender'"):
        e.observe("king")


@pytest.mark.parametrize("options,named", [
    ([1, 2], "must be a dict"), ("position", "must be a dict"), ({"to_move": 1.0}, "1.0"),
    ({"to_move": True}, "True"), ({"position": "/K/"}, "rank records"),
])
def test_bad_reset_options_are_named_and_change_nothing(options, named):
    e = _raw()
    e.step(441)
    with pytest.raises(TaflError, match=named):
        e.reset(options=options)
    assert e.played == [441] and e.agent_selection == "defender" and e.game.turns == 1


def test_to_move_option_of_the_env_must_be_a_side():
    from tafl_env.aec import raw_env

    with pytest.raises(InvalidOptionError, match="1.0"):
        raw_env(TABLUT, to_move=1.0)
    assert _raw(to_move=1).agent_selection == "defender"


def test_end_infos_agree_with_the_outcome():
    from tafl_env import Outcome, Termination

    e = _raw(position="/t8/9/9/9/9/9/9/4K4/9/", to_move="defender")
    e.step(e.engine.encode(7 * 9 + 4, 8 * 9 + 4))                    # e8-e9: the king escapes
    info = e.infos["attacker"]
    assert e.game.outcome() == Outcome(Termination.ESCAPED, "defender")
    assert (info["result"], info["reason"]) == tuple(e.game.outcome()) == ("defender", "escaped")


def test_state_space_and_pettingzoo_state_test():
    """PettingZoo's ``state_test`` runs an AEC part and a parallel part; a turn-based game has no
    parallel env, so its two AEC checks run here, on the wrapped env (random actions may be illegal)."""
    import warnings

    from pettingzoo.test.state_test import test_state, test_state_space

    from tafl_env.aec import env

    for variant in (TABLUT, "legacy_berserk"):
        e = env(variant)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            test_state_space(e)
            test_state(e, 50)
        e.reset()
        assert e.state_space.contains(e.state()) and e.state().shape == e.state_space.shape



# --- vector and single-agent envs -------------------------------------------------------------------

def _pick(mask, rng):
    return np.array([rng.choice(np.flatnonzero(m)) for m in mask])


@pytest.mark.parametrize("waiting", [np.nan, None, 1e30, -7.5])
def test_self_play_waiting_slots_are_truly_ignored(waiting):
    from tafl_env.vector import TaflVectorEnv

    a, b = TaflVectorEnv(TABLUT, 4), TaflVectorEnv(TABLUT, 4)
    _, infos = a.reset(seed=0)
    b.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(6):
        acts = _pick(infos["action_mask"], rng)
        sent = acts.astype(object)
        sent[~infos["active"]] = waiting
        ra, rb = a.step(acts), b.step(sent)
        infos = ra[4]
        for x, y in zip(ra[:4], rb[:4]):
            np.testing.assert_array_equal(x, y)


def test_a_non_integer_from_an_acting_slot_is_named_and_changes_nothing():
    from tafl_env.vector import TaflVectorEnv

    env = TaflVectorEnv(TABLUT, 4)
    env.reset(seed=0)
    board = env.state.board.copy()
    with pytest.raises(IllegalMoveError, match=r"env\(s\) \[2\] sent \[nan\]"):
        env.step(np.array([441, 0, np.nan, 0]))
    np.testing.assert_array_equal(env.state.board, board)
    env.step(np.array([441.0, np.nan, 441.0, np.nan]))              # whole floats still count
    assert env.state.turn.tolist() == [1, 1]


@pytest.mark.parametrize("side", ["attacker", "alternate"])   # Ard Ri: the defenders open
def test_vector_env_with_max_turns_1_and_the_learner_second_truncates(side):
    from tafl_env.vector import TaflVectorEnv

    env = TaflVectorEnv("legacy_ard_ri", 4, opponent="random", learner_side=side, max_turns=1)
    _, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(4):
        second = infos["side"] != env.engine.rules.first_side
        mask = infos["action_mask"]
        assert (mask[second].sum(1) == 1).all() and (mask[second, env.engine.pass_action] == 1).all()
        assert not infos["active"][second].any() and infos["active"][~second].all()
        acts = _pick(mask, rng).astype(float)
        acts[second] = np.nan                                        # ignored: nothing to play
        _, rew, term, trunc, infos = env.step(acts)
        assert trunc.all() and not term.any() and (rew == 0).all()   # every episode is cut at turn 1
        assert (infos["final_info"]["reason"] == 6).all()


def test_single_env_with_max_turns_1_and_the_learner_second_truncates():
    from tafl_env.single import TaflSingleEnv

    env = TaflSingleEnv("legacy_ard_ri", learner_side="attacker", max_turns=1)   # defenders open
    obs, info = env.reset(seed=0)
    assert np.flatnonzero(info["action_mask"]).tolist() == [env.num_actions - 1]
    assert env.action_masks().tolist() == info["action_mask"].tolist()
    obs, rew, term, trunc, info = env.step(0)                       # any action: it is ignored
    assert (rew, term, trunc, info["reason"], info["turns"]) == (0.0, False, True, "truncated", 1)
    assert not info["illegal_action"] and info["action_mask"].sum() == 0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    assert env.reset(seed=1)[1]["action_mask"].sum() == 1


def test_sb3_vecenv_with_max_turns_1_and_the_learner_second():
    pytest.importorskip("stable_baselines3")
    from tafl_env.sb3 import TaflSB3VecEnv

    venv = TaflSB3VecEnv("legacy_ard_ri", 2, opponent="random", learner_side="attacker", max_turns=1)
    venv.reset()
    masks = venv.action_masks()
    assert (masks.sum(1) == 1).all()
    _, rew, done, infos = venv.step(np.flatnonzero(masks[0]).repeat(2))
    assert done.all() and (rew == 0).all()


def test_reset_options_must_be_a_dict():
    from tafl_env.single import TaflSingleEnv
    from tafl_env.vector import TaflVectorEnv

    for env in (TaflVectorEnv(TABLUT, 2), TaflSingleEnv(TABLUT)):
        with pytest.raises(InvalidOptionError, match="must be a dict"):
            env.reset(options=[1, 2])
        env.reset(options={})


# --- rgb_array rendering --------------------------------------------------------------------------

def test_single_env_renders_rgb_array():
    from tafl_env.single import TaflSingleEnv

    env = TaflSingleEnv("legacy_ard_ri", render_mode="rgb_array", square_px=16)
    assert env.render() is None                                     # nothing to draw before reset
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (7 * 16, 7 * 16, 3) and frame.dtype == np.uint8
    with pytest.raises(ValueError, match="render_mode"):
        TaflSingleEnv(TABLUT, render_mode="human")


@pytest.mark.parametrize("opponent", [None, "random"])
def test_vector_env_renders_one_frame_per_env(opponent):
    from tafl_env.vector import TaflVectorEnv

    env = TaflVectorEnv(TABLUT, 4, opponent=opponent, render_mode="rgb_array")
    env.reset(seed=0)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == env.num_envs
    assert all(f.shape == (9 * 32, 9 * 32, 3) and f.dtype == np.uint8 for f in frames)
    assert env.metadata["render_fps"] > 0


def test_record_video_of_the_single_and_vector_envs(tmp_path):
    pytest.importorskip("moviepy")
    from gymnasium.wrappers import RecordVideo
    from gymnasium.wrappers.vector import RecordVideo as RecordVectorVideo

    from tafl_env.single import TaflSingleEnv
    from tafl_env.vector import TaflVectorEnv

    env = RecordVideo(TaflSingleEnv("legacy_ard_ri", render_mode="rgb_array", max_turns=6),
                      str(tmp_path / "single"), episode_trigger=lambda i: True)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        done = term or trunc
    env.close()
    venv = RecordVectorVideo(TaflVectorEnv("legacy_ard_ri", 2, render_mode="rgb_array", max_turns=4),
                             str(tmp_path / "vector"), episode_trigger=lambda i: True)
    _, infos = venv.reset(seed=0)
    for _ in range(5):
        _, _, _, _, infos = venv.step(_pick(infos["action_mask"], rng))
    venv.close()
    assert list((tmp_path / "single").glob("*.mp4")) and list((tmp_path / "vector").glob("*.mp4"))
