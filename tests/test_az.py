"""AlphaZero parts (agents/az): the Gumbel root against hand-worked trees, the symmetry maps of
every variant, the replay window, safe loading, resume, the agents, a two-iteration run of every
variant's config at tiny sizes, and (slow) a run with Ray self-play workers on a local cluster."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tafl_env import VARIANTS  # noqa: E402
from tafl_env.game import engine_for  # noqa: E402
from tafl_env.observation import observe  # noqa: E402
from tafl_env.notation import format_position  # noqa: E402
from tafl_env.rules import make_rules  # noqa: E402

from agents import make_agent  # noqa: E402
from agents.az.checkpoint import CheckpointError, load_model, save_model  # noqa: E402
from agents.mcts.gumbel import considered_visits, halving_table  # noqa: E402
from agents.mcts import gumbel as kg  # noqa: E402
from agents.az.network import AZNet  # noqa: E402
from agents.az.replay import ReplayWindow, decode_planes, encode_planes  # noqa: E402
from agents.az.symmetry import board_symmetries  # noqa: E402
from agents.base import AgentSpecError  # noqa: E402
from agents.schema import ConfigError, read_yaml_config  # noqa: E402
from agents.evaluation.play import play_games  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


# --- the Gumbel root ------------------------------------------------------------------------------

def test_halving_schedule_hand_worked():
    # m = 4, n = 10: log2(4) = 2; 4 actions x max(1, 10 // 8) = 1 visit, then 2 actions x
    # 10 // 4 = 2 visits, then 2 x 2 again (cut at 10)
    assert considered_visits(4, 10) == (0, 0, 0, 0, 1, 1, 2, 2, 3, 3)
    # m = 16, n = 32: log2(16) = 4; 16 actions x max(1, 32 // 64) = 1 visit, 8 x 32 // 32 = 1,
    # then 4 actions x 32 // 16 = 2 visits: the budget is spent
    assert considered_visits(16, 32) == (0,) * 16 + (1,) * 8 + (2,) * 4 + (3,) * 4
    assert considered_visits(2, 5) == (0, 0, 1, 1, 2)
    assert considered_visits(1, 3) == (0, 1, 2)             # one action: every simulation on it
    table = halving_table(4, 10)
    assert table.shape == (5, 10) and tuple(table[4]) == considered_visits(4, 10)
    assert tuple(table[3]) == considered_visits(3, 10)


def _tree(priors, visits, values_sum, raw_value, lost=None):
    """One root (node 0) with the given edges, laid out as the MCTS trees are (Nodes, Edges)."""
    from agents.mcts.kernels import Edges, Nodes

    k = len(priors)
    nodes = Nodes(first=np.array([0]), count=np.array([k]), visits=np.array([sum(visits)]),
                  value=np.array([raw_value]), proven=np.zeros(1, np.int64), side=np.zeros(1, np.int64),
                  key=np.zeros(1, np.uint64), turn=np.zeros(1, np.int64), terminal=np.zeros(1, np.int64))
    edges = Edges(action=np.arange(k, dtype=np.int64), prior=np.array(priors, float),
                  child=np.full(k, -1, np.int64), visits=np.array(visits, np.int64),
                  value_sum=np.array(values_sum, float),
                  lost=np.array(lost if lost is not None else [0] * k, np.int64))
    return nodes, edges


# priors 0.5 / 0.3 / 0.2, visits 2 / 1 / 0, value sums 1.0 / -0.5 (q = 0.5, -0.5), raw value 0.1
HAND = dict(priors=[0.5, 0.3, 0.2], visits=[2, 1, 0], values_sum=[1.0, -0.5, 0.0], raw_value=0.1)
# mixed value: (0.1 + 3 * (0.5*0.5 + 0.3*(-0.5)) / 0.8) / 4 = (0.1 + 0.375) / 4
MIXED = 0.11875


def test_completed_q_and_improved_policy_hand_worked():
    nodes, edges = _tree(**HAND)
    sig, out = np.zeros(3), np.zeros(3)
    mixed = kg.node_improved_policy(0, nodes, edges, 50.0, 0.1, False, sig, out)
    assert mixed == pytest.approx(MIXED)
    # sigma = (50 + max N = 2) * 0.1 * completed q, completed q = (0.5, -0.5, mixed)
    assert sig == pytest.approx([5.2 * 0.5, 5.2 * -0.5, 5.2 * MIXED])
    w = [0.5 * math.exp(2.6), 0.3 * math.exp(-2.6), 0.2 * math.exp(5.2 * MIXED)]
    assert out == pytest.approx([x / sum(w) for x in w])
    # rescaled to [0, 1] by the min and max over the edges: (1, 0, (mixed + 0.5) / 1)
    kg.node_improved_policy(0, nodes, edges, 50.0, 0.1, True, sig, out)
    assert sig == pytest.approx([5.2, 0.0, 5.2 * (MIXED + 0.5)])
    w = [0.5 * math.exp(5.2), 0.3, 0.2 * math.exp(5.2 * (MIXED + 0.5))]
    assert out == pytest.approx([x / sum(w) for x in w])


def test_lost_edge_is_left_out():
    nodes, edges = _tree(**HAND, lost=[0, 1, 0])
    sig, out = np.zeros(3), np.zeros(3)
    mixed = kg.node_improved_policy(0, nodes, edges, 50.0, 0.1, False, sig, out)
    assert mixed == pytest.approx((0.1 + 2 * 0.5) / 3)          # only edge 0 is visited and alive
    assert out[1] == 0.0 and out.sum() == pytest.approx(1.0)


def test_root_interior_and_final_choices_hand_worked():
    nodes, edges = _tree(**HAND)
    sig, probs = np.zeros(3), np.zeros(3)
    gumbel = np.array([0.0, 0.0, 3.0])
    # the root takes the edge whose visits equal the schedule's count: 0 -> edge 2, 1 -> edge 1
    for cv, want in ((0, 2), (1, 1), (2, 0)):
        root, _, _ = kg.node_choices(0, nodes, edges, gumbel, cv, 50.0, 0.1, False, sig, probs)
        assert root == want
    # interior: argmax pi' - n / (1 + N): (0.945 - 0.5, 0.003 - 0.25, 0.052 - 0) -> edge 0
    _, inner, final = kg.node_choices(0, nodes, edges, gumbel, 0, 50.0, 0.1, False, sig, probs)
    assert inner == 0
    assert final == 0                                   # the only edge with the most visits
    # two edges tied on visits: the final choice is the higher g + logit + sigma
    nodes, edges = _tree([0.5, 0.5], [1, 1], [0.2, 0.2], 0.0)
    _, _, final = kg.node_choices(0, nodes, edges, np.array([0.0, 1.0]), 0, 50.0, 0.1, False,
                                  np.zeros(2), np.zeros(2))
    assert final == 1


def test_search_targets_are_distributions_over_legal_moves():
    from agents.az.network import Evaluator
    from agents.az.search import BatchedSearch, SearchSettings

    eng = engine_for(make_rules("legacy_ard_ri"))
    torch.manual_seed(0)
    ev = Evaluator(AZNet(7, channels=4, blocks=0))
    state = eng.initial_state(3)
    for root in ("gumbel", "puct"):
        res = BatchedSearch(eng, ev, SearchSettings(root=root, interior=root, considered=4),
                            np.random.default_rng(0)).run(state, 16)
        assert eng.check_legal(state, res.action).all()
        assert (res.simulations == 16).all()
        for g in range(3):
            legal = set(eng.legal_actions(state, g).tolist())
            acts = res.actions[g][res.actions[g] >= 0]
            assert set(acts.tolist()) == legal
            assert res.target[g].sum() == pytest.approx(1.0)
        if root == "gumbel":      # Sequential Halving: 4 considered, 16 simulations
            visits = np.sort(res.visits[0])[::-1]
            assert visits[:4].sum() == 16 and (visits[4:] == 0).all()


# --- symmetries -----------------------------------------------------------------------------------

def _random_positions(eng, count, seed):
    rng = np.random.default_rng(seed)
    state = eng.initial_state(count)
    for _ in range(int(rng.integers(4, 30))):
        live = ~state.done
        acts = np.full(count, -1)
        if live.any():
            acts[live] = eng.random_actions(state.take(np.flatnonzero(live)), rng)
        eng.step(state, acts)
    keep = np.flatnonzero(~state.done & (state.chain < 0))
    return state.take(keep)


@pytest.mark.parametrize("variant", VARIANTS)
def test_symmetric_positions_have_symmetric_legal_moves(variant):
    eng = engine_for(make_rules(variant))
    syms = board_symmetries(eng)
    assert syms[0].name == "identity" and 1 <= len(syms) <= 8
    state = _random_positions(eng, 6, seed=len(variant))
    obs = observe(eng, state, state.to_move.astype(np.intp))
    for sym in syms:
        # the image of the image under the inverse is the identity; involutions are their own inverse
        inv = sym.inverse()
        assert np.array_equal(inv.squares[sym.squares], np.arange(eng.s))
        assert np.array_equal(inv.actions[sym.actions], np.arange(eng.num_actions))
        if sym.name in ("rotate180", "flip_ranks", "flip_files", "transpose", "antitranspose"):
            assert np.array_equal(sym.actions[sym.actions], np.arange(eng.num_actions))
        image_obs = sym.planes(obs)
        for g in range(len(state)):
            board = np.empty(eng.s, dtype=state.board.dtype)
            board[sym.squares] = state.board[g, :eng.s]
            image = eng.initial_state(1, position=format_position(board, eng.n), to_move=int(state.to_move[g]))
            legal = np.sort(sym.actions[eng.legal_actions(state, g)])
            assert np.array_equal(legal, np.sort(eng.legal_actions(image, 0))), (variant, sym.name)
            mine = observe(eng, image, image.to_move.astype(np.intp))[0]
            assert np.array_equal(image_obs[g, :, :, :12], mine[:, :, :12]), (variant, sym.name)
    # the set is closed under composition
    names = {tuple(s.actions) for s in syms}
    for a in syms:
        for b in syms:
            assert tuple(a.actions[b.actions]) in names


def test_layout_symmetries_keep_the_start():
    eng = engine_for(make_rules("legacy_berserk"))
    start = eng.initial_state(1).board[0, :eng.s]
    layout = board_symmetries(eng, "layout")
    assert len(layout) < len(board_symmetries(eng))
    for sym in layout:
        image = np.empty_like(start)
        image[sym.squares] = start
        assert np.array_equal(image, start)
    assert [s.name for s in board_symmetries(eng, "none")] == ["identity"]


# --- replay window --------------------------------------------------------------------------------

def test_replay_window_ring_and_round_trip(tmp_path):
    w = ReplayWindow(5, (3, 3, 2), width=2)
    for i in range(7):
        k = 1 + i % 3
        w.add(np.full((1, 3, 3, 2), i, np.uint8), np.arange(k)[None], np.full((1, k), 1 / k), np.array([i / 10]))
    assert len(w) == 5 and w.added == 7 and w.width == 3
    assert sorted(w.obs[:, 0, 0, 0].tolist()) == [2, 3, 4, 5, 6]          # the oldest two are gone
    row = int(np.flatnonzero(w.obs[:, 0, 0, 0] == 6)[0])                  # 6 % 3 = 0: one action
    assert w.actions[row].tolist() == [0, -1, -1] and w.targets[row].tolist() == [1.0, 0.0, 0.0]
    w.save(tmp_path / "r.npz")
    back = ReplayWindow.load(tmp_path / "r.npz")
    assert back.added == 7 and len(back) == 5
    assert sorted(back.values.tolist()) == pytest.approx(sorted(w.values.tolist()))
    smaller = ReplayWindow.load(tmp_path / "r.npz", capacity=2)           # the newest stay
    assert sorted(smaller.obs[:, 0, 0, 0].tolist()) == [5, 6]
    planes = np.array([0.0, 1.0, 0.5], np.float32)
    assert decode_planes(encode_planes(planes)) == pytest.approx(planes, abs=1 / 255)


# --- safe checkpoints ------------------------------------------------------------------------------

class _Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_model_round_trip_and_crafted_pickle_refused(tmp_path):
    rules = make_rules("legacy_ard_ri")
    net = AZNet(7, channels=4, blocks=1)
    save_model(tmp_path / "m.pt", net, rules, note="test")
    back, record = load_model(tmp_path / "m.pt")
    assert record["variant"] == "legacy_ard_ri" and record["network"] == net.shape()
    for k, v in net.state_dict().items():
        assert torch.equal(v, back.state_dict()[k])
    # a pickle that would run code: refused by weights_only loading, never executed
    torch.save({"stem.weight": _Payload()}, tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match="weights_only"):
        load_model(tmp_path / "m.pt")
    # weights of another shape than the record says
    torch.save(AZNet(7, channels=8, blocks=1).state_dict(), tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match="shape"):
        load_model(tmp_path / "m.pt")
    (tmp_path / "m.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(CheckpointError, match="not an AZ model record"):
        load_model(tmp_path / "m.pt")


# --- the agents -------------------------------------------------------------------------------------

def test_az_agents_play_legal_games_and_refuse_other_rules(tmp_path):
    path = save_model(tmp_path / "m.pt", AZNet(7, channels=4, blocks=1), make_rules("legacy_ard_ri"))
    az = make_agent(f"az:{path}:8", seed=0)
    raw = make_agent(f"azpolicy:{path}", seed=0)
    timed = make_agent(f"az:{path}:0.01s", seed=0)
    res = play_games("legacy_ard_ri", az, raw, 2, seed=1, max_turns=12)
    res += play_games("legacy_ard_ri", timed, az, 2, seed=2, max_turns=6)
    assert all(r["turns"] >= 6 or r["reason"] != "truncated" for r in res)
    with pytest.raises(AgentSpecError, match="7x7"):
        az.check_rules(make_rules("historical_tablut"))
    with pytest.raises(AgentSpecError, match="repetition"):
        az.check_rules(make_rules("legacy_ard_ri", repetition="draw"))
    with pytest.raises(AgentSpecError, match="no model"):
        make_agent(f"az:{tmp_path}/missing.pt")
    with pytest.raises(AgentSpecError, match="simulations"):
        make_agent(f"az:{path}:0")


# --- training: every config at tiny sizes, resume, Ray ------------------------------------------------

TINY = {"iterations": 2, "games": 4, "positions_per_iteration": 8, "simulations": 4, "fast_simulations": 2,
        "considered_actions": 4, "min_replay": 8, "batch_size": 8, "replay_window": 256, "channels": 4,
        "blocks": 1, "value_hidden": 8, "eval_every": 0, "final_eval_games": 1, "eval_opponents": ["random"],
        "eval_simulations": 2, "pool_every": 1, "checkpoint_every": 1, "max_turns": 12, "progress_bar": False,
        "device": "cpu", "warm_start_games": 0}


def _tiny(variant, **more):
    from agents.az.config import validate_az_config

    raw = read_yaml_config(ROOT / "configs" / "az" / f"{variant}.yaml")
    raw.update(TINY, **more)
    return validate_az_config(raw, f"configs/az/{variant}.yaml")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_config_trains_two_iterations(variant, tmp_path):
    from agents.az.train import train_az

    summary = train_az(_tiny(variant), out_dir=tmp_path, progress=False)
    assert summary["counters"]["iteration"] == 2 and summary["counters"]["learner_steps"] > 0
    for name in ("final.pt", "final.json", "final_eval.json", "eval.json", "learning_curve.png",
                 "config.yaml", "summary.json"):
        assert (tmp_path / name).is_file(), name
    assert list((tmp_path / "tb").iterdir())
    assert make_agent(f"az:{tmp_path / 'final.pt'}:2").check_rules(make_rules(variant, max_turns=12)) is None


def test_the_sizeless_alea_config_starts_from_its_committed_network(tmp_path):
    """configs/az/legacy_alea_evangelii_sizeless.yaml starts from a sizeless network fitted to
    Tawlbwrdd's run (agents/az/refit.py): the committed model loads into its 19x19 network; at tiny
    sizes, started from a tiny sizeless network of Tawlbwrdd's board, it trains (self-play with the
    sizeless head under inference mode, then the learner)."""
    from agents.az.config import validate_az_config
    from agents.az.train import _Run, train_az

    path = ROOT / "configs" / "az" / "legacy_alea_evangelii_sizeless.yaml"
    raw = read_yaml_config(path)
    cfg = validate_az_config({**raw, "init_model": str(ROOT / raw["init_model"])}, str(path))
    start, record = load_model(ROOT / raw["init_model"])
    assert record["variant"] == "legacy_tawlbwrdd" and record["network"]["head"] == "sizeless"
    assert record["notes"]["refit_from"] and record["search"] == {"static_value_weight": 0.5}
    run = _Run(cfg, tmp_path / "full", "cpu", None)
    assert run.net.n == 19 and all(torch.equal(run.net.state_dict()[k], v) for k, v in start.state_dict().items())
    tiny = AZNet(11, channels=4, blocks=1, value_hidden=8, head="sizeless")
    init = save_model(tmp_path / "tawlbwrdd.pt", tiny, make_rules("legacy_tawlbwrdd"))
    summary = train_az(validate_az_config({**raw, **TINY, "init_model": str(init)}, str(path)),
                       out_dir=tmp_path / "tiny", progress=False, final_eval=False)
    assert summary["counters"]["iteration"] == 2 and summary["counters"]["learner_steps"] > 0


@pytest.mark.slow   # two training runs
def test_resume_continues_counters_and_window(tmp_path):
    from agents.az.train import train_az

    first = train_az(_tiny("legacy_ard_ri"), out_dir=tmp_path, progress=False, final_eval=False)
    ck = tmp_path / "checkpoints" / "iter_000002"
    trainer = json.loads((ck / "trainer.json").read_text())
    window = ReplayWindow.load(ck / "replay.npz")
    assert window.added == first["counters"]["positions"] == trainer["counters"]["positions"]
    second = train_az(_tiny("legacy_ard_ri", iterations=3), resume=ck, progress=False, final_eval=False)
    c1, c2 = first["counters"], second["counters"]
    assert c2["iteration"] == 3 and second["out"] == str(tmp_path)
    assert c2["positions"] > c1["positions"] and c2["learner_steps"] > c1["learner_steps"]
    assert c2["games"] >= c1["games"]
    after = ReplayWindow.load(tmp_path / "checkpoints" / "iter_000003" / "replay.npz")
    assert after.added == c2["positions"]                               # the same window, grown
    assert not (ck / "replay.npz").exists()                             # only the newest keeps one
    assert len(json.loads((tmp_path / "checkpoints" / "iter_000003" / "trainer.json").read_text())["pool"]) == 3
    with pytest.raises(ConfigError, match="not an AZ training checkpoint"):
        train_az(_tiny("legacy_ard_ri"), resume=tmp_path, progress=False)


def test_every_az_config_validates_and_writes_to_its_own_folder():
    """Beside one config per variant, a run's variant (a larger network, say) has its own file."""
    from agents.az.config import validate_az_config

    paths = sorted((ROOT / "configs" / "az").glob("*.yaml"))
    configs = {p.name: validate_az_config(read_yaml_config(p), str(p)) for p in paths}
    assert {c["variant"] for c in configs.values()} == set(VARIANTS)
    assert all(name.startswith(c["variant"]) for name, c in configs.items())
    outs = [c["output_dir"] for c in configs.values()]
    assert len(set(outs)) == len(outs)


def test_bad_config_names_the_field():
    from agents.az.config import validate_az_config

    with pytest.raises(ConfigError, match="'root'"):
        validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "root": "uct"})
    with pytest.raises(ConfigError, match="'min_replay'"):
        validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "replay_window": 1000})


def test_capped_value_is_a_number_or_evaluation():
    from agents.az.config import capped_setting, validate_az_config

    base = {"backend": "az", "variant": "legacy_ard_ri", "iterations": 1}
    assert capped_setting(validate_az_config({**base, "capped_value": "evaluation"})) == "evaluation"
    assert capped_setting(validate_az_config({**base, "capped_value": -0.5})) == -0.5
    for bad in ("eval", 1.5):
        with pytest.raises(ConfigError, match="'capped_value'"):
            validate_az_config({**base, "capped_value": bad})


def test_capped_values_score_the_last_position_by_the_greedy_evaluation():
    from agents.az.selfplay import capped_values
    from agents.greedy.agent import VALUE_SCALE, GreedyAgent

    engine = engine_for(make_rules("legacy_tawlbwrdd"))
    state = engine.initial_state(1)
    assert capped_values(engine, state, 0.25) == (0.25, 0.25)
    assert capped_values(engine, state, "evaluation") == (0.0, 0.0)     # the start is worth E0
    rng = np.random.default_rng(3)
    for _ in range(30):                                                   # a random walk from the start
        engine.step(state, np.array([rng.choice(np.flatnonzero(engine.legal_action_mask(state)[0]))]))
    greedy = GreedyAgent(seed=0)
    e, e0 = greedy.evaluate(engine, state)[0], greedy.evaluate(engine, engine.initial_state(1))[0]
    attackers, defenders = capped_values(engine, state, "evaluation", greedy)
    assert defenders == pytest.approx(math.tanh((e - e0) / VALUE_SCALE)) and attackers == -defenders != 0


def test_capped_games_by_evaluation_give_each_side_its_own_value():
    from agents.az.config import search_settings, selfplay_settings, validate_az_config
    from agents.az.network import AZNet, Evaluator
    from agents.az.selfplay import GameBatch, SelfPlay

    batch = GameBatch()          # a pair is (attackers', defenders') value of a capped game
    records = [(np.zeros((1, 1, 1), np.uint8), np.array([0]), np.array([1.0]), side, 0.0) for side in (0, 1, 0)]
    batch.add_game(records, -1, True, 3, 0.0, (-0.4, 0.4))
    assert batch.values[0].tolist() == pytest.approx([-0.4, 0.4, -0.4])

    engine = engine_for(make_rules("legacy_ard_ri", max_turns=12))
    cfg = validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "games": 8,
                              "simulations": 4, "fast_simulations": 4, "full_search_fraction": 1.0,
                              "opening_moves": 12, "considered_actions": 4, "capped_value": "evaluation"})
    play = SelfPlay(engine, Evaluator(AZNet(engine.n, channels=4, blocks=0, value_hidden=8)), search_settings(cfg),
                    selfplay_settings(cfg), np.random.default_rng(0), sparring=None)
    out = play.play(40)
    assert out.results["capped"] > 0
    judged = [np.unique(np.abs(v)) for v in out.values]
    assert all(len(j) == 1 and j[0] < 1 for j in judged if j.max() < 1)   # one size for both sides of a capped game
    assert any(0 < j[0] < 1 for j in judged)


@pytest.mark.slow
def test_ray_workers_on_a_local_cluster(tmp_path):
    pytest.importorskip("ray")
    from agents.az.train import train_az

    summary = train_az(_tiny("legacy_ard_ri", workers=2), out_dir=tmp_path, progress=False, final_eval=False)
    assert summary["ray"] == "local"
    assert summary["counters"]["iteration"] == 2 and summary["counters"]["positions"] >= 16


def test_warm_start_fills_the_window_before_self_play(tmp_path, monkeypatch):
    from agents.az.train import train_az

    monkeypatch.chdir(tmp_path)          # the warm-start cache is runs/cache/ of the working directory

    summary = train_az(_tiny("legacy_ard_ri", warm_start_games=3, warm_start_agent="greedy", iterations=1),
                       out_dir=tmp_path, progress=False, final_eval=False)
    c = summary["counters"]
    assert c["warm_start_games"] == 3 and c["warm_start_positions"] > 0
    window = ReplayWindow.load(tmp_path / "checkpoints" / "iter_000001" / "replay.npz")
    assert window.added == c["positions"] + c["warm_start_positions"]
    # the greedy teacher searches no tree: one-hot targets on a legal move
    rows = window.targets[:c["warm_start_positions"]]
    assert np.allclose(rows.sum(1), 1.0) and (rows.max(1) == 1.0).all()


def test_mcts_root_policy_and_teacher_targets():
    from agents.az.warmstart import _target, teacher_games

    engine = engine_for(make_rules("legacy_ard_ri"))
    agent = make_agent("mcts:24", seed=3)
    state = engine.initial_state(2)
    moves = agent.act(engine, state)
    mask = engine.legal_action_mask(state).astype(bool)
    for i in range(2):
        actions, visits = agent.root_policy(i)
        legal = np.flatnonzero(mask[i])
        assert np.isin(actions, legal).all() and visits.sum() > 0
        assert visits[list(actions).index(moves[i])] == visits.max()        # the move played: most visited
        target = _target(agent, i, legal, int(moves[i]))
        assert target.sum() == pytest.approx(1.0)
        assert np.allclose(target[np.searchsorted(legal, actions)], visits / visits.sum())
    batch = teacher_games(engine, make_agent("mcts:8", seed=1), 3, 0.0, np.random.default_rng(0),
                          opening_moves=2)
    planes, acts, tgts, vals = batch.arrays()
    assert batch.games == 3 and len(vals) == batch.moves == batch.turns
    assert np.allclose(tgts.sum(1), 1.0) and (tgts[acts < 0] == 0).all()
    assert (tgts.max(1) < 1.0).any()                                      # visit counts, not one-hot
    assert set(np.unique(vals)) <= {-1.0, 0.0, 1.0}


class _CountingSparring:
    """A sparring partner that plays a random legal move and counts the positions it was given."""

    def __init__(self):
        self.calls, self.rng, self.sides = 0, np.random.default_rng(0), set()

    def act(self, engine, state):
        self.calls += len(state)
        self.sides.update(state.to_move.tolist())
        mask = engine.legal_action_mask(state).astype(bool)
        return np.array([self.rng.choice(np.flatnonzero(m)) for m in mask])


def test_sparring_games_record_only_the_learners_side():
    from agents.az.network import AZNet, Evaluator
    from agents.az.selfplay import SelfPlay, SelfPlaySettings
    from agents.az.config import search_settings
    from agents.az.config import validate_az_config

    engine = engine_for(make_rules("legacy_ard_ri", max_turns=20))
    cfg = validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1})
    sparring = _CountingSparring()
    play = SelfPlay(engine, Evaluator(AZNet(engine.n, channels=4, blocks=0, value_hidden=8)),
                    search_settings({**cfg, "considered_actions": 4}),
                    SelfPlaySettings(games=4, simulations=4, fast_simulations=4, full_search_fraction=1.0,
                                     opening_moves=0, past_share=0.0, sparring_share=1.0),
                    np.random.default_rng(0), sparring=sparring)
    batch = play.play(30)
    assert (play.opponent == -2).all() and sparring.calls > 0
    # the sparring partner plays every other move: the learner's half of the turns is recorded (less
    # the moves played without search: a root proven won, a single legal move)
    assert batch.games > 0 and batch.positions <= (batch.turns + batch.games) // 2
    assert batch.positions >= (batch.turns - 3 * batch.games) // 2


@pytest.mark.parametrize("attacks, side", [(1.0, 0), (0.0, 1)])
def test_sparring_attacks_sets_the_learners_side_in_sparring_games(attacks, side):
    from agents.az.config import search_settings, selfplay_settings, validate_az_config
    from agents.az.network import AZNet, Evaluator
    from agents.az.selfplay import SelfPlay

    engine = engine_for(make_rules("legacy_ard_ri", max_turns=20))
    cfg = validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "sparring": "greedy",
                              "sparring_share": 0.75, "past_share": 0.0, "sparring_attacks": attacks, "games": 16,
                              "simulations": 4, "fast_simulations": 4, "full_search_fraction": 1.0,
                              "opening_moves": 0, "considered_actions": 4})
    play = SelfPlay(engine, Evaluator(AZNet(engine.n, channels=4, blocks=0, value_hidden=8)), search_settings(cfg),
                    selfplay_settings(cfg), np.random.default_rng(0), sparring=_CountingSparring())
    batch = play.play(1)
    for _ in range(3):
        sparring = play.opponent == -2
        assert sparring.any() and (~sparring).any()             # both kinds of game among the 16
        assert (play.learner_side[sparring] == side).all()
        batch.merge(play.play(10))
    assert play.sparring.sides == {1 - side}                    # the partner only ever moved the other side
    # the learner's score against it is kept by side: only ``side`` has games, each scored 0, 1/2 or 1
    name, other = ("attacker", "defender")[side], ("attacker", "defender")[1 - side]
    score, games = batch.sparring[name]
    assert batch.sparring[other] == [0.0, 0] and 0 < games < batch.games and 0 <= score <= games
    won, drawn = batch.results[name], batch.results["draw"] + batch.results["capped"]
    assert score <= won + drawn / 2


def test_sparring_defender_defends_where_the_learner_attacks():
    from agents.az.config import search_settings, selfplay_settings, validate_az_config
    from agents.az.network import AZNet, Evaluator
    from agents.az.selfplay import SelfPlay

    engine = engine_for(make_rules("legacy_ard_ri", max_turns=20))
    cfg = validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "sparring": "mcts:10",
                              "sparring_defender": "greedy", "sparring_share": 1.0, "past_share": 0.0,
                              "games": 16, "simulations": 4, "fast_simulations": 4, "full_search_fraction": 1.0,
                              "opening_moves": 0, "considered_actions": 4})
    partner, defender = _CountingSparring(), _CountingSparring()
    play = SelfPlay(engine, Evaluator(AZNet(engine.n, channels=4, blocks=0, value_hidden=8)), search_settings(cfg),
                    selfplay_settings(cfg), np.random.default_rng(0), sparring=partner, sparring_defender=defender)
    batch = play.play(1)
    assert set(play.learner_side.tolist()) == {0, 1}            # the learner on both sides among the 16
    batch.merge(play.play(20))
    # the sparring agent only ever moved the attackers (the learner defending), the defender only the defenders
    assert partner.sides == {0} and defender.sides == {1}
    assert batch.sparring["attacker"][1] > 0 and batch.sparring["defender"][1] > 0


def test_sparring_defender_needs_a_sparring_agent_and_a_valid_spec(tmp_path):
    from agents.az.config import validate_az_config
    from agents.az.train import train_az

    with pytest.raises(ConfigError, match="'sparring_defender'.*needs a sparring agent"):
        validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1,
                            "sparring_defender": "greedy"})
    with pytest.raises(ConfigError, match="'sparring_defender'"):
        train_az(_tiny("legacy_ard_ri", sparring="greedy", sparring_defender="nonsense:3"), out_dir=tmp_path / "a",
                 progress=False)
    assert not (tmp_path / "a").exists()


def test_warm_start_and_sparring_specs_are_checked_before_anything_is_written(tmp_path):
    from agents.az.config import validate_az_config
    from agents.az.train import train_az

    with pytest.raises(ConfigError, match="'sparring_share'"):
        validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "sparring": "greedy",
                            "sparring_share": 0.9, "past_share": 0.25})
    with pytest.raises(ConfigError, match="'sparring'"):
        train_az(_tiny("legacy_ard_ri", sparring="nonsense:3"), out_dir=tmp_path / "a", progress=False)
    with pytest.raises(ConfigError, match="'warm_start_agent'"):
        train_az(_tiny("legacy_ard_ri", warm_start_games=2, warm_start_agent="mcts:0"), out_dir=tmp_path / "b",
                 progress=False)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("variant", VARIANTS)
def test_shipped_model_by_variant_id(variant):
    """Every variant ships an AZ model; ``az:<variant>`` and ``azpolicy:<variant>`` play it on its
    own board, and it refuses another variant's rules."""
    from agents.az.agent import shipped_model

    assert shipped_model(variant) is not None
    az = make_agent(f"az:{variant}:4", seed=0)
    raw = make_agent(f"azpolicy:{variant}", seed=0)
    assert az.check_rules(make_rules(variant)) is None
    other = next(v for v in VARIANTS if v != variant)
    with pytest.raises(AgentSpecError):
        az.check_rules(make_rules(other))
    res = play_games(variant, az, raw, 2, seed=0, max_turns=6)
    assert len(res) == 2


def test_a_variant_without_a_shipped_model_says_which_have_one(tmp_path, monkeypatch):
    """A package folder holding only Ard Ri's model stands in for a variant not shipped yet."""
    from agents.az import agent as az_agent

    (tmp_path / "legacy_ard_ri_az.pt").write_bytes(b"")
    monkeypatch.setattr(az_agent, "PRETRAINED", tmp_path)
    with pytest.raises(AgentSpecError, match=r"no AZ model is shipped for legacy_berserk \(shipped: legacy_ard_ri\)"):
        make_agent("az:legacy_berserk")


def test_a_time_budget_gives_each_searching_game_its_seconds(monkeypatch):
    """Under ``az:...:Ts`` a game whose root is proven (or has one legal move) runs no simulation
    and takes no time, as under the MCTS agent's time budget: the cost per simulation is measured
    over the simulations actually run, so a game that searches gets T seconds, not more."""
    from agents.az import agent as az_agent
    from agents.az.search import SearchResult

    class FakeSearch:
        engine = None
        calls: list = []

        def run(self, state, sims, noise):
            FakeSearch.calls.append(sims)
            b = len(state)
            done = np.zeros(b, dtype=np.int64)
            done[: b // 2] = sims                      # half the games search, half are proven
            clock[0] += 0.001 * int(done.sum())        # 1 ms per simulation run
            return SearchResult(np.zeros(b, dtype=np.int64), None, None, None, None, done)

    clock = [0.0]
    monkeypatch.setattr(az_agent.time, "perf_counter", lambda: clock[0])
    agent = make_agent("az:legacy_ard_ri:0.05s", seed=0)
    agent.wins = None                                  # the fake search's move is no legal move: no root guard
    engine = engine_for(make_rules("legacy_ard_ri"))
    search = FakeSearch()
    search.engine = engine
    agent._searches[id(engine)] = search
    state = engine.initial_state(8)
    for _ in range(3):
        agent.choose(engine, state)
    assert FakeSearch.calls[0] == az_agent.PROBE_SIMULATIONS
    assert FakeSearch.calls[-1] == 50                   # 0.05 s / 1 ms: each searching game gets 0.05 s


def test_a_warm_start_is_read_from_the_cache_by_a_run_with_the_same_inputs(tmp_path, monkeypatch):
    from agents.az import warmstart
    from agents.az.train import train_az

    monkeypatch.chdir(tmp_path)
    cfg = _tiny("legacy_ard_ri", warm_start_games=3, warm_start_agent="greedy", iterations=1)
    first = train_az(cfg, out_dir=tmp_path / "a", progress=False, final_eval=False)
    assert len(list((tmp_path / "runs" / "cache" / "warm_start").glob("legacy_ard_ri-*.npz"))) == 1
    monkeypatch.setattr(warmstart, "teacher_games", lambda *a, **k: pytest.fail("played again"))
    second = train_az(cfg, out_dir=tmp_path / "b", progress=False, final_eval=False)
    for key in ("warm_start_games", "warm_start_positions", "positions", "games", "learner_steps"):
        assert second["counters"][key] == first["counters"][key], key
    a, b = (ReplayWindow.load(tmp_path / d / "checkpoints" / "iter_000001" / "replay.npz") for d in "ab")
    assert np.array_equal(a.obs, b.obs) and np.array_equal(a.targets, b.targets)
    # another seed is another warm start
    third = _tiny("legacy_ard_ri", warm_start_games=3, warm_start_agent="greedy", iterations=1, seed=5)
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    train_az(third, out_dir=tmp_path / "c", progress=False, final_eval=False)
    assert len(list((tmp_path / "runs" / "cache" / "warm_start").glob("legacy_ard_ri-*.npz"))) == 2


def test_a_warm_start_stops_at_the_deadline_with_the_games_finished_by_then():
    import time

    from agents.az.warmstart import teacher_games
    from tafl_env.game import engine_for

    eng = engine_for(make_rules("legacy_ard_ri", max_turns=12))
    gb = teacher_games(eng, make_agent("greedy", seed=0), 6, 0.0, np.random.default_rng(0), batch=3,
                       deadline=time.monotonic() - 1)
    assert gb.games == 0 and not gb.complete
    gb = teacher_games(eng, make_agent("greedy", seed=0), 6, 0.0, np.random.default_rng(0), batch=3)
    assert gb.games == 6 and gb.complete and gb.positions == gb.moves


@pytest.mark.slow   # the shipped config's warm start, stopped by the time limit
def test_a_time_limit_bounds_the_warm_start_and_the_run_still_writes_a_model(tmp_path, monkeypatch):
    from agents.az.config import validate_az_config
    from agents.az.train import train_az

    monkeypatch.chdir(tmp_path)
    cfg = validate_az_config(read_yaml_config(ROOT / "configs" / "az" / "legacy_ard_ri.yaml"))
    summary = train_az(cfg, out_dir=tmp_path / "run", max_minutes=0.1, progress=False, final_eval=False)
    c = summary["counters"]
    assert summary["stop"] == "max_minutes" and c["iteration"] == 0
    assert c["warm_start_games"] < cfg["warm_start_games"]               # cut short (finished games are kept)
    assert (tmp_path / "run" / "final.pt").is_file() and (tmp_path / "run" / "final.json").is_file()
    assert not list((tmp_path / "runs" / "cache" / "warm_start").glob("*.npz"))   # a partial one is not cached
