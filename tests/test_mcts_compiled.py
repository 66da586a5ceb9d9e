"""The compiled MCTS with every evaluator: legal moves, wins and blocks in one, the time budget,
tree reuse; the network evaluator's batching, determinism, specs and shipped models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.greedy import GreedyAgent
from agents.mcts import MCTSAgent
from tafl_env import make_rules
from tafl_env.engine import Engine


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


def test_tree_reuse_keeps_the_subtree_counts():
    eng = Engine(make_rules("historical_tablut"))
    mcts = MCTSAgent(simulations=300, seed=0)
    st = eng.initial_state(1)
    a = mcts.act(eng, st)
    tree = mcts.trees()[0]
    root = tree.hdr[2]
    first, count = tree.nodes.first[root], tree.nodes.count[root]
    edge = first + int(np.flatnonzero(tree.edges.action[first:first + count] == a[0])[0])
    child = tree.edges.child[edge]
    reply_edges = slice(tree.nodes.first[child], tree.nodes.first[child] + tree.nodes.count[child])
    visited = np.flatnonzero(tree.edges.child[reply_edges] >= 0)
    assert len(visited)
    reply = int(tree.edges.action[reply_edges][visited[np.argmax(tree.edges.visits[reply_edges][visited])]])
    grandchild = int(tree.edges.child[reply_edges][visited[np.argmax(tree.edges.visits[reply_edges][visited])]])
    kept = int(tree.nodes.visits[grandchild])
    eng.step(st, a)
    eng.step(st, np.array([reply]))
    mcts.simulations = 1
    mcts.act(eng, st)
    tree = mcts.trees()[0]
    assert tree.hdr[2] == grandchild
    assert int(tree.nodes.visits[grandchild]) == kept + 1


# --- every evaluator ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A freshly built (untrained) MaskablePPO board network for Tablut, saved with its rules."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.ppo.network import TaflBoardPolicy, board_policy_kwargs
    from agents.ppo.policy import save_policy
    from tafl_env.sb3 import TaflSB3VecEnv

    venv = TaflSB3VecEnv("historical_tablut", num_envs=2, seed=0)
    model = MaskablePPO(TaflBoardPolicy, venv, n_steps=8, batch_size=8, seed=0, device="cpu",
                        policy_kwargs=board_policy_kwargs(channels=4, blocks=1, value_hidden=8))
    return save_policy(model, tmp_path_factory.mktemp("net") / "tiny", make_rules("historical_tablut"))


EVALUATORS = ["greedy", "random_uniform", "random_greedy", "greedy_playout", "network"]


def _agent(kind, sims, tiny_model=None, seed=0, **kw):
    from agents.mcts.evaluators import GreedyEvaluator, NetworkEvaluator, RolloutEvaluator

    ev = {"greedy": lambda: GreedyEvaluator(),
          "random_uniform": lambda: RolloutEvaluator("random", "uniform", max_turns=20),
          "random_greedy": lambda: RolloutEvaluator("random", "greedy", max_turns=20),
          "greedy_playout": lambda: RolloutEvaluator("greedy", "greedy", max_turns=4),
          "network": lambda: NetworkEvaluator(tiny_model, threads=1)}[kind]()
    return MCTSAgent(simulations=sims, evaluator=ev, seed=seed, **kw)


def _needs(kind, request):
    return request.getfixturevalue("tiny_model") if kind == "network" else None


@pytest.mark.parametrize("kind", EVALUATORS)
def test_every_evaluator_plays_legal_moves_and_takes_wins_in_one(kind, request):
    eng = Engine(make_rules("historical_tablut"))
    rng = np.random.default_rng(3)
    mcts = _agent(kind, 16, _needs(kind, request))
    moves = 0
    for _ in range(2):
        st = eng.initial_state(1)
        for _ in range(int(rng.integers(0, 40))):
            eng.step(st, eng.random_actions(st, rng))
        while not st.done[0] and st.turn[0] < 80:
            a = mcts.act(eng, st)
            assert eng.check_legal(st, a)[0]
            wins = _brute_wins_in_one(eng, st)
            if wins:
                assert int(a[0]) in wins
            eng.step(st, a)
            moves += 1
            if not st.done[0]:
                eng.step(st, eng.random_actions(st, rng))
    assert moves >= 4


@pytest.mark.parametrize("kind", EVALUATORS)
def test_every_evaluator_in_berserk_chains(kind, request):
    """Legal moves inside berserk chains (the network only plays Tablut: uniform playouts there)."""
    from test_agents import chain_states

    if kind == "network":
        pytest.skip("the tiny network plays Tablut")
    eng = Engine(make_rules("legacy_berserk"))
    st = chain_states(eng, want=3)
    a = _agent(kind, 12).act(eng, st)
    assert eng.check_legal(st, a).all()


@pytest.mark.parametrize("kind", EVALUATORS)
def test_every_evaluator_blocks_a_loss_in_one(kind, request):
    eng = Engine(make_rules("historical_tablut"))
    rng = np.random.default_rng(5)
    greedy, mcts = GreedyAgent(seed=0), _agent(kind, 24, _needs(kind, request), seed=1)
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


class _FakeClock:
    """A clock that moves ``step`` seconds each time it is read: time budgets without timing."""

    def __init__(self, step):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


@pytest.mark.parametrize("kind", EVALUATORS)
def test_every_evaluator_keeps_its_time_budget(kind, request):
    """The search stops at the first check past the deadline, which is ``seconds`` per move of
    each game (a fake clock: no timing here)."""
    eng = Engine(make_rules("historical_tablut"))
    agent = _agent(kind, 1, _needs(kind, request), seconds=0.1)
    agent._clock = clock = _FakeClock(0.01)
    st = eng.initial_state(2)
    agent.act(eng, st)
    assert (agent.last_simulations > 0).all()
    assert 2 * 0.1 <= clock.t <= 2 * (0.1 + 3 * 0.01) + 1e-9   # each game its 0.1 s, no more
    per_check = 8 if kind == "network" else 32    # leaves per tree and round / chunk size
    assert agent.last_simulations.max() <= 2 * 12 * per_check   # network: both games in every round


@pytest.mark.parametrize("kind", EVALUATORS)
def test_every_evaluator_reuses_its_tree(kind, request):
    eng = Engine(make_rules("historical_tablut"))
    sims = {"random_uniform": 3000, "greedy_playout": 200}.get(kind, 300)
    mcts = _agent(kind, sims, _needs(kind, request))
    st = eng.initial_state(1)
    a = mcts.act(eng, st)
    tree = mcts.trees()[0]
    root = tree.hdr[2]
    first, count = tree.nodes.first[root], tree.nodes.count[root]
    edge = first + int(np.flatnonzero(tree.edges.action[first:first + count] == a[0])[0])
    child = tree.edges.child[edge]
    reply_edges = slice(tree.nodes.first[child], tree.nodes.first[child] + tree.nodes.count[child])
    visited = np.flatnonzero(tree.edges.child[reply_edges] >= 0)
    assert len(visited)
    best = visited[np.argmax(tree.edges.visits[reply_edges][visited])]
    reply = int(tree.edges.action[reply_edges][best])
    grandchild = int(tree.edges.child[reply_edges][best])
    kept = int(tree.nodes.visits[grandchild])
    eng.step(st, a)
    eng.step(st, np.array([reply]))
    mcts.simulations = 1
    mcts.act(eng, st)
    tree = mcts.trees()[0]
    assert tree.hdr[2] == grandchild
    assert int(tree.nodes.visits[grandchild]) == kept + 1


# --- the network evaluator ----------------------------------------------------------------------

def _positions(eng, count, seed):
    from tafl_env.engine import State

    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        st = eng.initial_state(1)
        for _ in range(3 * i + int(rng.integers(0, 20))):
            if st.done[0]:
                break
            eng.step(st, eng.random_actions(st, rng))
        if not st.done[0]:
            out.append(st)
    return State.concatenate(out)


def test_network_batched_evaluation_equals_one_at_a_time(tiny_model):
    from agents.mcts.evaluators import NetworkEvaluator

    eng = Engine(make_rules("historical_tablut"))
    ev = NetworkEvaluator(tiny_model, threads=1)
    st = _positions(eng, 12, seed=2)
    priors, values = ev.evaluate(eng, st)
    mask = eng.legal_action_mask(st).astype(bool)
    assert np.allclose(priors.sum(axis=1), 1.0) and (priors[~mask] == 0).all()
    assert (np.abs(values) <= 1).all()
    for i in range(len(st)):
        p1, v1 = ev.evaluate(eng, st.take([i]))
        np.testing.assert_allclose(priors[i], p1[0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(values[i], v1[0], rtol=1e-5, atol=1e-6)


def test_network_search_expands_with_each_positions_own_priors(tiny_model):
    """The batched search gives every tree's root the priors of its own position (as one
    evaluation of that position alone would), whatever else shares the forward pass."""
    from agents.mcts.evaluators import NetworkEvaluator

    eng = Engine(make_rules("historical_tablut"))
    st = _positions(eng, 5, seed=4)
    agent = MCTSAgent(simulations=16, evaluator=NetworkEvaluator(tiny_model, threads=1), seed=0)
    agent.act(eng, st.copy())
    for g, tree in agent.trees().items():
        root = tree.hdr[2]
        if tree.nodes.proven[root] == 1:
            continue                        # a win in one: the priors went to the winning moves
        first, count = tree.nodes.first[root], tree.nodes.count[root]
        p1, v1 = agent.evaluator.evaluate(eng, st.take([g]))
        acts = tree.edges.action[first:first + count]
        np.testing.assert_allclose(tree.edges.prior[first:first + count], p1[0, acts], rtol=1e-5, atol=1e-7)
        assert sorted(acts.tolist()) == np.flatnonzero(p1[0] > 0).tolist()
        assert tree.nodes.value[root] == pytest.approx(v1[0], rel=1e-5, abs=1e-6)


def test_network_search_is_deterministic(tiny_model):
    eng = Engine(make_rules("historical_tablut"))
    st = _positions(eng, 4, seed=6)
    runs = []
    for _ in range(2):
        agent = make_agent(f"mcts:40:policy:{tiny_model}", seed=3)
        a = agent.act(eng, st.copy())
        visits = [t.edges.visits[t.nodes.first[t.hdr[2]]:t.nodes.first[t.hdr[2]] + t.nodes.count[t.hdr[2]]].tolist()
                  for t in agent.trees().values()]
        runs.append((a.tolist(), visits))
    assert runs[0] == runs[1]


def test_network_spec_and_bad_specs(tiny_model, tmp_path):
    from agents.base import AgentSpecError
    from agents.mcts.evaluators import NetworkEvaluator, RolloutEvaluator

    m = make_agent(f"mcts:8:policy:{tiny_model}")
    assert isinstance(m.evaluator, NetworkEvaluator) and m.name == f"mcts:8:policy:{tiny_model}"
    assert make_agent(f"mcts:0.5s:policy:{tiny_model}").seconds == 0.5
    u = make_agent("mcts:8:random:uniform")
    assert isinstance(u.evaluator, RolloutEvaluator) and u.selection == "uct"
    with pytest.raises(AgentSpecError, match="needs a model path"):
        make_agent("mcts:8:policy:")
    with pytest.raises(AgentSpecError, match="no such file"):
        make_agent(f"mcts:8:policy:{tmp_path / 'missing.zip'}")
    with pytest.raises(AgentSpecError, match="no rollout"):
        make_agent(f"mcts:8:random:policy:{tiny_model}")
    eng = Engine(make_rules("legacy_ard_ri"))
    with pytest.raises(AgentSpecError, match="9x9"):
        m.act(eng, eng.initial_state(1))          # a Tablut model refuses another game at once


SHIPPED = sorted(p.stem for p in (Path(__file__).parents[1] / "agents" / "pretrained").glob("*.zip"))


@pytest.mark.parametrize("variant", SHIPPED)
def test_shipped_models_load_as_evaluators(variant):
    pytest.importorskip("sb3_contrib")
    agent = make_agent(f"mcts:8:policy:{variant}", seed=0)   # the shipped model of the variant
    assert agent.evaluator.agent.info["variant"] == variant
    eng = Engine(make_rules(variant))
    st = eng.initial_state(2)
    assert eng.check_legal(st, agent.act(eng, st)).all()


def test_a_kept_tree_is_dropped_once_it_outgrows_its_bound(monkeypatch):
    """Kept subtrees are not compacted: without a bound a tree grew by a whole search every move
    (10 Tablut games of mcts:10000 reached 15 GB). With ``REUSE_MOVES`` = 1 every tree is searched
    afresh once it holds more than one search's nodes, so it never holds much more than one."""
    import agents.mcts.agent as mcts_module

    monkeypatch.setattr(mcts_module, "REUSE_MOVES", 1)
    eng = Engine(make_rules("historical_tablut"))
    agent = MCTSAgent(simulations=300, seed=0)
    st = eng.initial_state(1)
    sizes = []
    for _ in range(6):
        a = agent.act(eng, st)
        sizes.append(int(agent.trees()[0].hdr[0]))   # H_NODES: nodes in use
        eng.step(st, a)
        if st.done[0]:
            break
    assert len(sizes) == 6 and max(sizes) <= 2 * 300 + 64, sizes
