"""The AZ search's mixed leaf value (agents/az/search.py, "The leaf value"): the network's value and
the greedy evaluation's static value, weighted by ``static_value_weight``; the model records the
weight it was trained with and the az agent searches with it."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tafl_env.game import engine_for  # noqa: E402
from tafl_env.rules import make_rules  # noqa: E402

from agents import make_agent  # noqa: E402
from agents.az.agent import AZAgent  # noqa: E402
from agents.az.checkpoint import CheckpointError, load_model, save_model  # noqa: E402
from agents.az.network import AZNet  # noqa: E402
from agents.az.search import BatchedSearch, SearchSettings  # noqa: E402
from agents.base import AgentSpecError  # noqa: E402
from agents.greedy.agent import GreedyAgent  # noqa: E402
from agents.schema import ConfigError  # noqa: E402
from conftest import load_script  # noqa: E402
from test_agents import random_positions  # noqa: E402

NETWORK_VALUE = 0.3


def _constant_network(engine, state):
    """Uniform logits and the same value everywhere: whatever the leaf values hold beyond it is the
    static value's."""
    return np.zeros((len(state), engine.num_actions), dtype=np.float32), np.full(len(state), NETWORK_VALUE)


@pytest.mark.parametrize("variant", ["legacy_tawlbwrdd", "legacy_berserk"])
@pytest.mark.parametrize("weight", [0.0, 0.25, 1.0])
def test_leaf_values_mix_the_network_and_the_static_value_for_the_side_to_move(variant, weight):
    engine = engine_for(make_rules(variant))
    search = BatchedSearch(engine, _constant_network, SearchSettings(static_value_weight=weight))
    judge = GreedyAgent(seed=0)
    seen = set()
    for seed in (0, 1):
        leaves = random_positions(engine, 16, 80, seed)
        leaves = leaves.take(np.flatnonzero(leaves.reason == 0))
        _, values = search._evaluate_leaves(engine, leaves)
        defenders = judge.defender_value(engine, leaves)
        static = np.where(leaves.to_move == 1, defenders, -defenders)
        np.testing.assert_allclose(values, (1 - weight) * NETWORK_VALUE + weight * static)
        seen |= {int(side) for side, d in zip(leaves.to_move, defenders) if abs(d) > 0.05}
    # static values far from 0 with either side to move, so a wrong sign or weight shows
    assert seen == {0, 1}


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_a_weight_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match="static_value_weight"):
        SearchSettings(static_value_weight=bad)
    from agents.az.config import validate_az_config

    with pytest.raises(ConfigError, match="'static_value_weight'"):
        validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "static_value_weight": bad})


def test_the_config_weight_reaches_the_search_and_the_model_record():
    from agents.az.config import search_record, search_settings, validate_az_config

    cfg = validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1,
                              "static_value_weight": 0.4})
    assert search_settings(cfg).static_value_weight == 0.4
    assert search_record(cfg) == {"static_value_weight": 0.4}
    default = validate_az_config({"backend": "az", "variant": "legacy_ard_ri", "iterations": 1})
    assert search_settings(default).static_value_weight == 0.0


def test_the_agent_searches_with_the_weight_its_model_records(tmp_path):
    rules = make_rules("legacy_ard_ri")
    net = AZNet(7, channels=4, blocks=1)
    mixed = save_model(tmp_path / "mixed.pt", net, rules, search={"static_value_weight": 0.5})
    plain = save_model(tmp_path / "plain.pt", net, rules)
    assert load_model(mixed)[1]["search"] == {"static_value_weight": 0.5}
    assert "search" not in load_model(plain)[1]          # as every model written before the field
    assert make_agent(f"az:{mixed}:8").settings.static_value_weight == 0.5
    assert make_agent(f"az:{plain}:8").settings.static_value_weight == 0.0
    assert AZAgent(mixed, simulations=8, static_value_weight=0.0).settings.static_value_weight == 0.0
    # and it plays: a short game each way
    from agents.evaluation.play import play_games

    res = play_games("legacy_ard_ri", make_agent(f"az:{mixed}:8", seed=0), make_agent("random", seed=1), 2,
                     seed=3, max_turns=10)
    assert len(res) == 2


def test_each_shipped_model_searches_as_its_record_says():
    """``az:<variant>`` searches with the weight its shipped record holds: the Tawlbwrdd and Berserk
    networks were trained (and rated) with the mixed leaf, the Ard Ri and Tablut networks without it."""
    from agents.az.agent import shipped_model

    expected = {"legacy_ard_ri": 0.0, "historical_tablut": 0.0, "legacy_tawlbwrdd": 0.5, "legacy_berserk": 0.5}
    for variant, weight in expected.items():
        path = shipped_model(variant)
        assert path is not None, variant
        recorded = load_model(path)[1].get("search", {}).get("static_value_weight", 0.0)
        assert recorded == weight, variant
        assert make_agent(f"az:{variant}:4", seed=0).settings.static_value_weight == weight


@pytest.mark.parametrize("search, message", [
    ({"static_value_weight": 2.0}, "static_value_weight must be a number in"),
    ({"static_value_weight": "half"}, "static_value_weight must be a number in"),
    ({"leaf_noise": 0.1}, "unknown field 'leaf_noise'"),
    ([0.5], "a mapping expected"),
])
def test_a_bad_recorded_search_is_refused_naming_the_record(tmp_path, search, message):
    path = save_model(tmp_path / "m.pt", AZNet(7, channels=4, blocks=1), make_rules("legacy_ard_ri"))
    record = json.loads((tmp_path / "m.json").read_text())
    record["search"] = search
    (tmp_path / "m.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointError, match=f"bad search settings in .*m.json: {message}"):
        load_model(path)
    with pytest.raises(AgentSpecError, match=message):
        make_agent(f"az:{path}:8")
    with pytest.raises(CheckpointError, match="bad search settings for"):
        save_model(tmp_path / "n.pt", AZNet(7, channels=4, blocks=1), make_rules("legacy_ard_ri"), search=search)
    assert not (tmp_path / "n.pt").exists()


def test_the_probe_tool_plays_each_weight_from_both_sides(tmp_path, capsys):
    tool = load_script("tools/az_static_probe.py")
    model = save_model(tmp_path / "m.pt", AZNet(7, channels=4, blocks=1), make_rules("legacy_ard_ri"))
    out = tmp_path / "probe.json"
    assert tool.main(["--model", str(model), "--variant", "legacy_ard_ri", "--weights", "0", "1",
                      "--opponent", "random", "--openings", "2", "--simulations", "4", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["static_value_weight"] for r in rows] == [0.0, 1.0]
    for r in rows:
        assert r["games"] == 4 and r["wins_as_attacker"] + r["draws_as_attacker"] <= 2
        points = r["wins_as_attacker"] + r["wins_as_defender"] + 0.5 * (r["draws_as_attacker"] + r["draws_as_defender"])
        assert r["score"] == points / 4 and r["interval"][0] <= r["score"] <= r["interval"][1]
    assert "| 1 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        tool.main(["--model", str(model), "--variant", "legacy_ard_ri", "--weights", "1.5"])
