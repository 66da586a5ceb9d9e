"""Agents and OpenSpiel bots both ways (agents/openspiel_bots.py): our agents as ``pyspiel.Bot``s in
OpenSpiel's ``evaluate_bots``, and OpenSpiel's MCTS as the ``openspiel-mcts:N`` agent on engine
batches and in ``tafl play``."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import pickle
import sys

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms import mcts  # noqa: E402
from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402

import agents.openspiel_bots  # noqa: E402,F401  (registers openspiel-mcts)
from agents import make_agent  # noqa: E402
from agents import base  # noqa: E402
from agents.base import known_kinds  # noqa: E402
from agents.openspiel_bots import AgentBot, OpenSpielMCTSAgent  # noqa: E402
from agents.spec import AgentSpecError  # noqa: E402
from tafl_env import make_rules  # noqa: E402
from tafl_env.cli import main  # noqa: E402
from tafl_env.extras import MissingExtraError  # noqa: E402
from tafl_env.game import Game, engine_for  # noqa: E402
from tafl_env.openspiel import load_game  # noqa: E402


def openspiel_mcts(game, simulations=20, seed=0):
    random_state = np.random.RandomState(seed)
    return mcts.MCTSBot(game, 2.0, simulations, mcts.RandomRolloutEvaluator(1, random_state),
                        random_state=random_state)


def test_our_greedy_bot_against_openspiels_mcts():
    game = load_game("legacy_ard_ri")
    for order in ("greedy first", "mcts first"):
        bots = [AgentBot("greedy", seed=0), openspiel_mcts(game)]
        if order == "mcts first":
            bots.reverse()
        state = game.new_initial_state()
        returns = evaluate_bots(state, bots, np.random.RandomState(0))
        assert state.is_terminal() and sum(returns) == 0 and set(returns) <= {-1.0, 0.0, 1.0}
        assert returns == state.returns()


def test_an_agent_bot_follows_a_berserk_chain():
    game = load_game("legacy_berserk", max_turns=60)
    bots = [AgentBot("random", seed=1), AgentBot("greedy", seed=2)]
    state = game.new_initial_state()
    evaluate_bots(state, bots, np.random.RandomState(0))
    assert state.is_terminal()
    replay = Game("legacy_berserk", max_turns=60)
    for action in state.history():       # every ply was legal in the game itself
        replay.push(action)
    assert replay.outcome() == state.outcome()


def test_an_agent_bot_plays_only_tafl_games():
    with pytest.raises(TypeError, match="tafl_"):
        AgentBot("random").step(pyspiel.load_game("tic_tac_toe").new_initial_state())


def test_openspiel_mcts_plays_legal_moves_in_a_batch():
    eng = engine_for(make_rules("legacy_ard_ri"))
    agent = make_agent("openspiel-mcts:10", seed=0)
    assert isinstance(agent, OpenSpielMCTSAgent) and agent.name == "openspiel-mcts:10"
    assert agent.check_rules(eng.rules) is None
    state = eng.initial_state(4)
    rng = np.random.default_rng(0)
    for ply in range(6):
        if ply == 3:                               # the batch's games part ways
            eng.step(state, eng.random_actions(state, rng))
        actions = agent.act(eng, state)
        assert actions.shape == (4,) and bool(eng.check_legal(state, actions).all())
        eng.step(state, actions)
    assert pickle.loads(pickle.dumps(agent)).simulations == 10


def test_openspiel_mcts_continues_or_ends_a_berserk_chain():
    game = load_game("legacy_berserk")
    rng = np.random.default_rng(4)
    agent = make_agent("openspiel-mcts:8", seed=0)
    for _ in range(100):
        state = game.new_initial_state()
        while not state.is_terminal() and state.engine_state.chain[0] < 0:
            state.apply_action(int(rng.choice(state.legal_actions())))
        if not state.is_terminal():
            action = int(agent.act(game.engine, state.engine_state)[0])
            assert action in state.legal_actions()
            return
    pytest.fail("no berserk chain opened in 100 random games")


def test_openspiel_mcts_specs_and_rules():
    assert "openspiel-mcts" in known_kinds()
    assert make_agent("openspiel-mcts").simulations == 64
    for spec, message in [("openspiel-mcts:0", "simulations must be from 1"),
                          ("openspiel-mcts:many", "must be an integer"),
                          ("openspiel-mcts:", "nothing after its colon")]:
        with pytest.raises(AgentSpecError, match=message):
            make_agent(spec)
    with pytest.raises(AgentSpecError, match="move cap"):
        make_agent("openspiel-mcts:4").check_rules(make_rules("legacy_ard_ri", max_turns=None))


def test_tafl_play_against_openspiel_mcts(monkeypatch):
    # Ard Ri: the defenders move first; the person plays the attackers, so the agent moves unasked.
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["play", "legacy_ard_ri", "--vs", "openspiel-mcts:4", "--json"])
    assert code == 0, err.getvalue()
    moves = json.loads(out.getvalue().strip().splitlines()[-1])["moves"]
    assert len(moves) == 1 and moves[0] in {m.notation for m in Game("legacy_ard_ri").legal_moves()}


def test_without_open_spiel_the_kind_is_known_and_building_it_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)
    monkeypatch.delitem(sys.modules, "tafl_env.openspiel")
    monkeypatch.delitem(sys.modules, "agents.openspiel_bots")
    monkeypatch.setitem(base._REGISTRY, "openspiel-mcts", base._REGISTRY["openspiel-mcts"])
    module = importlib.import_module("agents.openspiel_bots")        # registers without OpenSpiel
    with pytest.raises(MissingExtraError, match="'openspiel' extra"):
        make_agent("openspiel-mcts:4").check_rules(make_rules("legacy_ard_ri"))
    with pytest.raises(MissingExtraError, match="'openspiel' extra"):
        module.AgentBot
