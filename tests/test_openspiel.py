"""Every variant as an OpenSpiel game (tafl_env/openspiel.py): OpenSpiel's own conformance test,
observations, parameters, copies, and agreement with the AEC environment over random games
(benchmarks/openspiel_agreement.py plays the long run of the same check)."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import tafl_env  # noqa: E402
from tafl_env import Game, make_rules  # noqa: E402
from tafl_env.extras import MissingExtraError  # noqa: E402
from tafl_env.notation import parse_square  # noqa: E402
from tafl_env.openspiel import (REGISTERED, TaflState, default_parameters, game_name,  # noqa: E402
                                load_game, max_game_length)

AGREEMENT_GAMES = 20
"""Random games per variant played through both front ends in the fast tier."""


@pytest.mark.parametrize("variant", tafl_env.VARIANTS)
def test_openspiels_conformance_test(variant):
    game = pyspiel.load_game(game_name(variant))
    sims = 1 if make_rules(variant).board_size > 11 else 2      # a 19x19 game takes seconds
    pyspiel.random_sim_test(game, num_sims=sims, serialize=True, verbose=False)


@pytest.mark.parametrize("variant", tafl_env.EXTRA_VARIANTS)
def test_the_extra_variants_are_games_too(variant):
    pyspiel.random_sim_test(pyspiel.load_game(game_name(variant)), num_sims=1, serialize=True, verbose=False)


def test_every_variant_is_registered():
    assert set(REGISTERED) == {f"tafl_{v}" for v in tafl_env.VARIANTS + tafl_env.EXTRA_VARIANTS}
    assert set(REGISTERED) <= set(pyspiel.registered_names())


@pytest.mark.parametrize("variant", tafl_env.VARIANTS)
def test_the_game_facts(variant):
    game = pyspiel.load_game(game_name(variant))
    rules = make_rules(variant)
    n = rules.board_size
    gt = game.get_type()
    assert gt.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert gt.chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC
    assert gt.information == pyspiel.GameType.Information.PERFECT_INFORMATION
    assert gt.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert gt.reward_model == pyspiel.GameType.RewardModel.TERMINAL
    assert game.num_players() == 2
    assert game.num_distinct_actions() == n * n * 4 * (n - 1) + 1
    assert (game.min_utility(), game.max_utility(), game.utility_sum()) == (-1.0, 1.0, 0.0)
    pieces = sum(c.isalpha() for c in rules.layout)
    assert game.max_game_length() == rules.max_turns + (pieces if rules.berserk else 0)
    state = game.new_initial_state()
    assert state.current_player() == rules.first_side    # player 0 = attackers, whoever moves first
    assert state.legal_actions() == Game(variant).legal_actions().tolist()


@pytest.mark.parametrize("variant", tafl_env.VARIANTS)
def test_observations_are_the_planes_of_the_player_asked(variant):
    game = pyspiel.load_game(game_name(variant))
    n = make_rules(variant).board_size
    assert game.observation_tensor_shape() == [n, n, 14]
    env = tafl_env.raw_env(variant)
    env.reset()
    state = game.new_initial_state()
    rng = np.random.default_rng(1)
    for _ in range(6):
        for player, agent in enumerate(("attacker", "defender")):
            planes = np.asarray(state.observation_tensor(player), dtype=np.float32).reshape(n, n, 14)
            np.testing.assert_array_equal(planes, env.observe(agent)["observation"])
        assert state.observation_tensor() == state.observation_tensor(state.current_player())
        assert state.observation_string(0) == str(state)
        action = int(rng.choice(state.legal_actions()))
        state.apply_action(action)
        env.step(action)


def _play_both(variant: str, rng: np.random.Generator, **options) -> int:
    """One random game through the OpenSpiel state and the AEC env side by side; returns its plies."""
    env = tafl_env.raw_env(variant, **options)
    env.reset()
    game = load_game(variant, **options)
    state = game.new_initial_state()
    plies = 0
    while not state.is_terminal():
        agent = env.agent_selection
        assert not (env.terminations[agent] or env.truncations[agent])
        assert state.current_player() == ("attacker", "defender").index(agent)
        legal = state.legal_actions()
        assert legal == np.flatnonzero(env.observe(agent)["action_mask"]).tolist()
        action = int(rng.choice(legal))
        state.apply_action(action)
        env.step(action)
        plies += 1
    agent = env.agent_selection
    assert env.terminations[agent] or env.truncations[agent]
    info, outcome = env.infos["attacker"], state.outcome()
    assert (outcome.result, outcome.reason) == (info["result"], info["reason"])
    assert state.returns() == [env._cumulative_rewards["attacker"], env._cumulative_rewards["defender"]]
    assert plies == len(state.history()) <= game.max_game_length()
    return plies


@pytest.mark.parametrize("variant", tafl_env.VARIANTS)
def test_random_games_agree_with_the_aec_env(variant):
    rng = np.random.default_rng(2024)
    for _ in range(AGREEMENT_GAMES):
        _play_both(variant, rng)


def test_short_caps_and_options_agree_with_the_aec_env():
    rng = np.random.default_rng(7)
    for _ in range(10):
        _play_both("historical_tablut", rng, max_turns=12, repetition="draw")
        _play_both("legacy_berserk", rng, max_turns=30)
        _play_both("legacy_tawlbwrdd", rng, move_range=1, max_turns=40)


def test_a_berserk_chain_is_consecutive_plies_of_one_player():
    # Random play until a chain opens: the same player moves again, and may pass.
    rng = np.random.default_rng(3)
    for _ in range(200):
        state = load_game("legacy_berserk").new_initial_state()
        while not state.is_terminal():
            player = state.current_player()
            action = int(rng.choice(state.legal_actions()))
            text = state.action_to_string(player, action)
            state.apply_action(action)
            if state.engine_state.chain[0] >= 0:
                assert state.current_player() == player and "x" in text
                pass_action = state.get_game().num_distinct_actions() - 1
                assert pass_action in state.legal_actions()
                assert state.action_to_string(player, pass_action) == "pass"
                state.apply_action(pass_action)
                assert state.is_terminal() or state.current_player() == 1 - player
                return
    pytest.fail("no berserk chain opened in 200 random games")


def test_action_strings_are_the_notation():
    state = load_game("historical_tablut").new_initial_state()
    assert state.action_to_string(0, 441) == "e2-c2"
    game = Game("historical_tablut")
    rng = np.random.default_rng(5)
    for _ in range(40):
        moves = game.legal_moves()
        assert [state.action_to_string(state.current_player(), m.action) for m in moves] == \
            [m.notation for m in moves]
        move = moves[rng.integers(len(moves))]
        state.apply_action(move.action)
        game.push(move.action)
        if game.is_over():
            break
    assert state.action_to_string(0, 0) == "a1-a2"      # not legal now: the squares alone


def test_parameters_are_the_rule_options():
    params = default_parameters("legacy_ard_ri")
    assert params["move_range"] == 1 and params["max_turns"] == 150 and params["position"] == ""
    assert default_parameters("historical_tablut")["move_range"] == 0     # None: any distance
    game = pyspiel.load_game("tafl_legacy_ard_ri(max_turns=4,repetition=draw)")
    assert game.rules == make_rules("legacy_ard_ri", max_turns=4, repetition="draw")
    assert game.max_game_length() == 4
    state = game.new_initial_state()
    for _ in range(4):
        state.apply_action(state.legal_actions()[0])
    assert state.is_terminal() and state.returns() == [0.0, 0.0]
    assert state.outcome().reason == "truncated"
    assert load_game("historical_tablut", move_range=1).rules.move_range == 1
    assert load_game("legacy_ard_ri", move_range=0).rules.move_range is None
    with pytest.raises(tafl_env.InvalidOptionError, match="finite length"):
        pyspiel.load_game("tafl_historical_tablut(max_turns=0)")
    with pytest.raises(tafl_env.InvalidOptionError, match="escape"):
        load_game("historical_tablut", escape="middle")


def test_the_start_can_be_a_position():
    position = "/t8/9/9/9/9/9/9/4K4/9/"
    game = load_game("historical_tablut", position=position, to_move="defender")
    state = game.new_initial_state()
    assert state.current_player() == 1
    assert game.max_game_length() == max_game_length(make_rules("historical_tablut"), position)
    state.apply_action(game.engine.encode(parse_square("e8", 9), parse_square("e9", 9)))
    assert state.returns() == [-1.0, 1.0] and state.outcome().reason == "escaped"
    with pytest.raises(tafl_env.InvalidPositionError):
        load_game("historical_tablut", position="/9/")


def test_serialize_clone_and_pickle_keep_the_game():
    import pickle

    game = load_game("legacy_berserk")
    state = game.new_initial_state()
    rng = np.random.default_rng(11)
    for _ in range(30):
        state.apply_action(int(rng.choice(state.legal_actions())))
    text = pyspiel.serialize_game_and_state(game, state)
    game2, state2 = pyspiel.deserialize_game_and_state(text)
    clone = state.clone()
    unpickled = pickle.loads(pickle.dumps(state))
    for copy in (state2, clone, unpickled):
        assert isinstance(copy, TaflState)
        assert str(copy) == str(state) and copy.history() == state.history()
        assert copy.legal_actions() == state.legal_actions()
    action = state.legal_actions()[0]
    clone.apply_action(action)                    # a clone is independent
    assert clone.history() != state.history()
    state2.apply_action(action)
    assert str(state2) == str(clone)
    assert str(game2) == str(game)
    fresh = game.new_initial_state().clone()      # a state that never built its position
    assert fresh.legal_actions() == game.new_initial_state().legal_actions()
    # the pickled attributes hold no position: deserializing replays the history from the start
    assert len(state.serialize()) < len(pickle.dumps(state.engine_state)) / 4
    # a position set from outside (as the openspiel-mcts agent does) is pickled whole
    outside = game.new_initial_state()
    outside.engine_state = state.engine_state.copy()
    assert outside.history() == [] and str(game.deserialize_state(outside.serialize())) == str(state)


def test_an_illegal_action_is_refused_and_changes_nothing():
    state = load_game("historical_tablut").new_initial_state()
    before = str(state)
    with pytest.raises(tafl_env.IllegalMoveError, match="e5"):
        state.apply_action(40 * 4 * 8)     # the king (e5) north: blocked
    assert str(state) == before


def test_without_open_spiel_the_module_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)
    monkeypatch.delitem(sys.modules, "tafl_env.openspiel")
    with pytest.raises(MissingExtraError, match=r"install the 'openspiel' extra: pip install 'tafl-env\[openspiel\]'"):
        importlib.import_module("tafl_env.openspiel")
