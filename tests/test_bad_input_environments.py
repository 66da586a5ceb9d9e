"""Bad input to the environments and to the rule commands: one clear line naming what was wrong,
and nothing half-applied (an env that refused a reset plays on exactly as before).

Covered: reset seeds and options of the AEC, single-agent and vector envs (the keys each reset
reads, and no other: an error in the Gymnasium envs, a warning naming the key in the PettingZoo
one, whose conformance test resets with a key of its own), the bound on ``num_envs`` (a count,
then the memory it would take) on every way a vector env is built, and long input quoted in
errors (moves, squares, positions) cut to a line by :func:`tafl_env.errors.preview`.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from tafl_env.errors import (PREVIEW_CHARS, IllegalMoveError, InvalidArgumentError, InvalidMoveError,
                             InvalidOptionError, InvalidPositionError, TaflError, preview)
from tafl_env.vector import MAX_NUM_ENVS

ARD_RI = "legacy_ard_ri"
LONG = "x" * 100_000
MAX_LINE = 400      # generous: a message quotes at most PREVIEW_CHARS of any input

BAD_SEEDS = [-1, -(10**30), "x", "7", True, False, np.bool_(True), 1.5, float("nan"), b"1", {}]
"""Refused by every reset; the single and AEC envs also refuse a list (the vector env's list form)."""


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) <= MAX_LINE, text[:500]
    return text


# --- preview --------------------------------------------------------------------------------------

def test_preview_cuts_long_input_to_a_line():
    assert preview("e2-c2") == repr("e2-c2")
    assert preview(5) == "5"
    cut = preview(LONG)
    assert cut.startswith(repr("x" * PREVIEW_CHARS)) and "…" in cut and "100000 characters" in cut
    assert len(cut) < 100
    assert "\n" not in preview("a\n" * 1000)               # repr escapes newlines
    assert len(preview(list(range(10_000)))) < 100          # non-strings are cut too
    assert "too long" in preview(10**5000)                  # past Python's digit limit: no error


# --- AEC env --------------------------------------------------------------------------------------

def aec_snapshot(e) -> tuple:
    st = e.engine_state
    return (e.agent_selection, list(e.played), dict(e.terminations), dict(e.infos),
            st.board.copy(), st.to_move.copy(), st.turn.copy())


def assert_same(a: tuple, b: tuple) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


@pytest.mark.parametrize("seed", [*BAD_SEEDS, [1]], ids=repr)
def test_aec_reset_refuses_a_bad_seed_and_changes_nothing(seed):
    from tafl_env.aec import raw_env

    e = raw_env(ARD_RI)
    e.reset(seed=3)
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))
    before = aec_snapshot(e)
    with pytest.raises(InvalidArgumentError, match="seed must be None or an int >= 0") as info:
        e.reset(seed=seed)
    one_line(info.value)
    assert_same(before, aec_snapshot(e))
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))   # still plays on
    assert len(e.played) == 2


def test_aec_reset_takes_every_valid_seed():
    from tafl_env.aec import raw_env

    e = raw_env(ARD_RI)
    for seed in (None, 0, 7, np.int64(5), 2**70):
        e.reset(seed=seed)
        assert e.agent_selection == "defender"


@pytest.mark.parametrize("options, named", [([("position", None)], "list"), ("position", "str"), (LONG, "str")])
def test_aec_reset_refuses_options_that_are_no_dict(options, named):
    from tafl_env.aec import raw_env

    e = raw_env(ARD_RI)
    e.reset()
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))
    before = aec_snapshot(e)
    with pytest.raises(InvalidOptionError, match="must be a dict or None") as info:
        e.reset(options=options)
    text = one_line(info.value)
    assert named in text and "'position', 'to_move'" in text
    assert_same(before, aec_snapshot(e))


@pytest.mark.parametrize("options, named", [
    ({"bogus": 1}, "'bogus'"),
    ({"positon": "/7/7/7/7/7/7/7/"}, "'positon'"),          # misspelt: starts the usual game
    ({"position": None, "seed": 3}, "'seed'"),
    ({1: 2}, "1"),
    ({LONG: 1}, "100000 characters"),
])
def test_aec_reset_names_unknown_options_in_a_warning(options, named):
    # Not an error: PettingZoo's api_test resets with options={"options": 1} and expects it to work.
    from tafl_env.aec import raw_env
    from tafl_env.game import Game

    e = raw_env(ARD_RI)
    with pytest.warns(UserWarning, match="ignoring unknown reset option") as caught:
        e.reset(options=options)
    text = str(caught[0].message)
    assert named in text and "'position', 'to_move'" in text and "\n" not in text and len(text) <= MAX_LINE
    assert e.game.position == Game(ARD_RI).position and e.agent_selection == "defender"


def test_aec_reset_still_reads_its_options():
    from tafl_env.aec import raw_env
    from tafl_env.game import Game

    g = Game(ARD_RI)
    g.push(g.legal_moves()[0].notation)
    e = raw_env(ARD_RI)
    e.reset(options={"position": g.position, "to_move": "attacker"})
    assert e.agent_selection == "attacker" and e.game.position == g.position
    e.reset(options={})
    e.reset(options=None)
    assert e.game.position == Game(ARD_RI).position


def test_aec_refusals_through_the_wrapped_and_registered_env():
    import pettingzoo

    from tafl_env.aec import env, registry_id

    for e in (env(ARD_RI), pettingzoo.make("aec", registry_id(ARD_RI))):
        e.reset(seed=1)
        with pytest.raises(InvalidArgumentError, match="-1"):
            e.reset(seed=-1)
        with pytest.raises(InvalidOptionError, match="must be a dict"):
            e.reset(options=["bogus"])
        obs, *_ = e.last()                       # the game of the last good reset goes on
        e.step(int(np.flatnonzero(obs["action_mask"])[0]))


# --- single-agent env -----------------------------------------------------------------------------

def single_episode_start(env) -> np.ndarray:
    """The first observation of an unseeded reset: the random opponent's opening depends on the
    env's generator, so equal observations mean equal generators."""
    obs, _ = env.reset()
    return obs


@pytest.mark.parametrize("seed", [*BAD_SEEDS, [1]], ids=repr)
def test_single_reset_refuses_a_bad_seed_and_keeps_its_generator(seed):
    from tafl_env.single import TaflSingleEnv

    # Ard Ri: the defenders open, so a learner playing the attackers first sees a random reply
    ref, env = (TaflSingleEnv(ARD_RI, learner_side="alternate") for _ in range(2))
    for e in (ref, env):
        e.reset(seed=11)
    with pytest.raises(InvalidArgumentError, match="seed must be None or an int >= 0") as info:
        env.reset(seed=seed)
    one_line(info.value)
    assert env.learner_side == ref.learner_side
    for _ in range(4):
        np.testing.assert_array_equal(single_episode_start(env), single_episode_start(ref))
        assert env.learner_side == ref.learner_side


@pytest.mark.parametrize("options", [{"position": None}, {"to_move": "attacker"}, {"bogus": 1}, [1], "x"])
def test_single_reset_reads_no_option_and_refuses_any(options):
    from tafl_env.single import TaflSingleEnv

    env = TaflSingleEnv(ARD_RI)
    env.reset(seed=0)
    with pytest.raises(InvalidOptionError) as info:
        env.reset(options=options)
    text = one_line(info.value)
    assert "TaflSingleEnv.reset" in text and "it reads none" in text
    env.step(int(np.flatnonzero(env.action_masks())[0]))    # the episode goes on
    env.reset(options={})
    env.reset(options=None)


def test_single_reset_takes_every_valid_seed():
    from tafl_env.single import TaflSingleEnv

    a, b = TaflSingleEnv(ARD_RI, learner_side="attacker"), TaflSingleEnv(ARD_RI, learner_side="attacker")
    for seed in (None, 0, 2**70):
        a.reset(seed=seed)
    np.testing.assert_array_equal(a.reset(seed=np.int64(9))[0], b.reset(seed=9)[0])


def test_single_refusals_through_gymnasium_make():
    import gymnasium

    from tafl_env.registration import ENV_IDS

    env = gymnasium.make(ENV_IDS[ARD_RI])
    env.reset(seed=0)
    with pytest.raises(InvalidArgumentError):
        env.reset(seed="x")
    with pytest.raises(InvalidOptionError, match="'bogus'"):
        env.reset(options={"bogus": 1})
    obs, info = env.reset()
    env.step(int(np.flatnonzero(info["action_mask"])[0]))


# --- vector env -----------------------------------------------------------------------------------

def random_opponent_venv():
    from tafl_env.vector import TaflVectorEnv

    # the random opponent (Ard Ri's defenders) opens every game: the observations show the generator
    return TaflVectorEnv(ARD_RI, 4, opponent="random", learner_side="attacker")


@pytest.mark.parametrize("seed", [*BAD_SEEDS, [], [1, -2], [1, "x"], [True], (0, None), np.array([3, -1])],
                         ids=repr)
def test_vector_reset_refuses_a_bad_seed_and_keeps_its_generator(seed):
    ref, env = random_opponent_venv(), random_opponent_venv()
    for e in (ref, env):
        e.reset(seed=5)
    with pytest.raises(InvalidArgumentError, match="seed") as info:
        env.reset(seed=seed)
    one_line(info.value)
    for _ in range(3):
        np.testing.assert_array_equal(env.reset()[0], ref.reset()[0])


@pytest.mark.parametrize("options, named", [
    ({"bogus": 1}, "'bogus'"),
    ({"reset_mask": [True] * 4, "resetmask": 1}, "'resetmask'"),
    ({"position": None}, "'position'"),
    ([1, 2], "list"),
])
def test_vector_reset_refuses_bad_options_before_seeding(options, named):
    ref, env = random_opponent_venv(), random_opponent_venv()
    for e in (ref, env):
        e.reset(seed=5)
    before = env.state.copy()
    with pytest.raises(InvalidOptionError) as info:
        env.reset(seed=99, options=options)     # the seed must not be taken when the options fail
    text = one_line(info.value)
    assert named in text and "'reset_mask'" in text
    np.testing.assert_array_equal(env.state.board, before.board)
    np.testing.assert_array_equal(env.reset()[0], ref.reset()[0])


@pytest.mark.parametrize("mask", [[True, False], [[True] * 4], object()])
def test_vector_reset_mask_of_the_wrong_shape_is_an_option_error(mask):
    ref, env = random_opponent_venv(), random_opponent_venv()
    for e in (ref, env):
        e.reset(seed=5)
    with pytest.raises(InvalidOptionError, match="reset_mask") as info:
        env.reset(seed=99, options={"reset_mask": mask})
    one_line(info.value)
    np.testing.assert_array_equal(env.reset()[0], ref.reset()[0])


def test_vector_reset_takes_every_valid_seed():
    env = random_opponent_venv()
    for seed in (None, 0, np.int64(4), [1, 2, 3], (7,), np.array([1, 2])):
        obs, infos = env.reset(seed=seed)
        assert obs.shape[0] == 4
    a, b = random_opponent_venv(), random_opponent_venv()
    np.testing.assert_array_equal(a.reset(seed=[1, 2])[0], b.reset(seed=np.array([1, 2]))[0])


# --- num_envs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_envs", [10**9, 10**5000, MAX_NUM_ENVS + 2], ids=["1e9", "1e5000", "max+2"])
def test_vector_env_refuses_an_absurd_num_envs_before_allocating(num_envs):
    from tafl_env.vector import TaflVectorEnv

    with pytest.raises(InvalidArgumentError, match=f"num_envs must be at most {MAX_NUM_ENVS}") as info:
        TaflVectorEnv("historical_tablut", num_envs=num_envs)
    one_line(info.value)


@pytest.mark.parametrize("num_envs", [0, -4, True, 2.0, "4", None])
def test_vector_env_refuses_a_num_envs_that_is_no_count(num_envs):
    from tafl_env.vector import TaflVectorEnv

    with pytest.raises(InvalidArgumentError, match="num_envs must be a positive int") as info:
        TaflVectorEnv(ARD_RI, num_envs=num_envs)
    one_line(info.value)


def test_num_envs_over_the_memory_available_is_refused(monkeypatch):
    import tafl_env.memory
    from tafl_env.vector import TaflVectorEnv

    monkeypatch.setattr(tafl_env.memory, "available_bytes", lambda: 2**30)
    with pytest.raises(InvalidOptionError, match=r"num_envs=200000 \(legacy_alea_evangelii\) needs about") as info:
        TaflVectorEnv("legacy_alea_evangelii", num_envs=200_000)
    one_line(info.value)
    TaflVectorEnv(ARD_RI, num_envs=64)          # small batches are not even checked


def test_num_envs_bound_on_every_way_to_build_a_vector_env():
    import gymnasium

    from tafl_env.registration import ENV_IDS
    from tafl_env.vector import BatchCore

    with pytest.raises(InvalidArgumentError, match="num_envs"):
        gymnasium.make_vec(ENV_IDS[ARD_RI], num_envs=10**9)     # the vector entry point
    with pytest.raises(InvalidArgumentError, match="num_envs"):
        gymnasium.make_vec(ENV_IDS[ARD_RI], num_envs=10**9, vectorization_mode="vector_entry_point")
    with pytest.raises(InvalidArgumentError, match="num_envs"):
        BatchCore(ARD_RI, 10**9, "random", "attacker", self_play=False)   # what the SB3 VecEnv builds on
    env = gymnasium.make_vec(ENV_IDS[ARD_RI], num_envs=2)
    assert env.reset(seed=0)[0].shape[0] == 2


# --- long input in errors: moves, squares, positions, the rule commands ---------------------------

@pytest.mark.parametrize("text", [LONG, "c5-c6x" + "/".join(["a1"] * 30_000), "d4" + "-" * 100_000 + "d5"],
                         ids=["letters", "captures", "dashes"])
def test_game_errors_quote_a_long_move_cut_to_a_line(text):
    from tafl_env.game import Game

    g = Game(ARD_RI)
    before = g.summary()
    with pytest.raises((InvalidMoveError, IllegalMoveError)) as info:
        g.push(text)
    assert "characters)" in one_line(info.value)
    assert g.summary() == before and not g.moves


def test_notation_errors_quote_long_squares_and_positions_cut_to_a_line():
    from tafl_env.game import Game
    from tafl_env.notation import parse_move, parse_square

    with pytest.raises(InvalidMoveError) as info:
        parse_square(LONG, 7)
    one_line(info.value)
    with pytest.raises(InvalidMoveError) as info:
        parse_move(LONG, 7)
    one_line(info.value)
    for position in ("/" + LONG + "/", LONG, "/" + "/".join(["7"] * 6) + "/" + "9" * 100_000 + "/",
                     "/" + "/".join(["7"] * 6) + "/" + "0" * 100_000 + "/"):
        with pytest.raises(InvalidPositionError) as info:
            Game(ARD_RI, position=position)
        one_line(info.value)
    with pytest.raises(InvalidMoveError) as info:
        Game(ARD_RI).push(type("Big", (), {"__repr__": lambda self: LONG})())
    one_line(info.value)


def run_tafl(argv: list[str]) -> tuple[int, str, str]:
    from tafl_env.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", [
    ["replay", ARD_RI, "c5-c6", LONG],
    ["replay", ARD_RI, "c5-c6x" + "/".join(["a1"] * 30_000)],
    ["moves", ARD_RI, "--position", "/" + LONG + "/"],
    ["replay", ARD_RI, "--option", LONG],
    ["replay", ARD_RI, "--max-turns", "9" * 100_000],
])
def test_rule_commands_quote_long_input_cut_to_a_line(argv):
    code, out, err = run_tafl(argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= MAX_LINE + 100, err[:500]
    assert "…" in lines[0]


def test_errors_are_value_errors():
    # every class raised above is caught by `except ValueError` (and by TaflError)
    assert issubclass(InvalidArgumentError, TaflError) and issubclass(InvalidArgumentError, ValueError)
