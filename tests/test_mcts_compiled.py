"""The compiled MCTS: legal moves, wins and blocks in one, the time budget, tree reuse."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tafl_env import make_rules
from tafl_env.engine import Engine

from agents import make_agent
from agents.greedy import GreedyAgent
from agents.mcts import MCTSAgent


def _brute_wins_in_one(eng, st):
    out = []
    for a in eng.legal_actions(st):
        ch = st.copy()
        eng.step(ch, np.array([a]))
        if ch.winner[0] == st.to_move[0]:
            out.append(int(a))
    return out


@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_tawlbwrdd", "legacy_berserk"])
def test_mcts_plays_legal_moves_and_takes_wins_in_one(variant):
    eng = Engine(make_rules(variant))
    rng = np.random.default_rng(11)
    mcts = MCTSAgent(simulations=40, seed=0)
    for _ in range(6):
        st = eng.initial_state(1)
        for _ in range(int(rng.integers(0, 60))):
            if st.done[0]:
                break
            eng.step(st, eng.random_actions(st, rng))
        while not st.done[0] and st.turn[0] < 200:
            a = mcts.act(eng, st)
            assert eng.check_legal(st, a)[0]
            wins = _brute_wins_in_one(eng, st)
            if wins and st.chain[0] < 0:
                assert int(a[0]) in wins
            eng.step(st, a)
            if not st.done[0]:
                eng.step(st, eng.random_actions(st, rng))


def test_mcts_blocks_a_loss_in_one():
    """Wherever greedy finds a safe move (one after which the opponent cannot win at once), MCTS
    plays a safe move too."""
    eng = Engine(make_rules("historical_tablut"))
    rng = np.random.default_rng(5)
    greedy, mcts = GreedyAgent(seed=0), MCTSAgent(simulations=64, seed=1)
    checked = 0
    for _ in range(40):
        st = eng.initial_state(1)
        for _ in range(int(rng.integers(10, 80))):
            if st.done[0]:
                break
            eng.step(st, eng.random_actions(st, rng))
        if st.done[0]:
            continue
        scores, _, action = greedy.score_moves(eng, st)
        if not (scores > -5e5).any() or not (scores < -5e5).any():
            continue
        safe = set(action[scores > -5e5].tolist())
        assert int(mcts.act(eng, st)[0]) in safe
        checked += 1
    assert checked >= 3


def test_mcts_keeps_its_time_budget():
    eng = Engine(make_rules("historical_tablut"))
    agent = make_agent("mcts:0.2s", seed=0)
    st = eng.initial_state(1)
    agent.act(eng, st)   # compile
    t0 = time.perf_counter()
    agent.act(eng, st)
    dt = time.perf_counter() - t0
    assert 0.15 < dt < 0.35
    assert agent.last_simulations[0] > 50


def test_tree_reuse_keeps_the_subtree_counts():
    eng = Engine(make_rules("historical_tablut"))
    mcts = MCTSAgent(simulations=300, seed=0)
    st = eng.initial_state(1)
    a = mcts.act(eng, st)
    tree = mcts.trees()[0]
    root = tree.hdr[2]
    first, count = tree.nodes[0][root], tree.nodes[1][root]
    edge = first + int(np.flatnonzero(tree.edges[0][first:first + count] == a[0])[0])
    child = tree.edges[2][edge]
    reply_edges = slice(tree.nodes[0][child], tree.nodes[0][child] + tree.nodes[1][child])
    visited = np.flatnonzero(tree.edges[2][reply_edges] >= 0)
    assert len(visited)
    reply = int(tree.edges[0][reply_edges][visited[np.argmax(tree.edges[3][reply_edges][visited])]])
    grandchild = int(tree.edges[2][reply_edges][visited[np.argmax(tree.edges[3][reply_edges][visited])]])
    kept = int(tree.nodes[2][grandchild])
    eng.step(st, a)
    eng.step(st, np.array([reply]))
    mcts.simulations = 1
    mcts.act(eng, st)
    tree = mcts.trees()[0]
    assert tree.hdr[2] == grandchild
    assert int(tree.nodes[2][grandchild]) == kept + 1
