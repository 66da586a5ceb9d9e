"""Agent specs as values (:mod:`agents.spec`): read once, written back canonically, walked by the
data-file check, handed to factories; the grammar's table of examples is the module's doctest."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from agents import base, make_agent, register_agent
from agents import spec as spec_module
from agents.evaluation.adapters import agent_source, with_time_budget
from agents.spec import MAX_SECONDS, AgentSpec, AgentSpecError

ROOT = Path(__file__).resolve().parents[1]

SPECS = ["random", "greedy", "mcts", "mcts:8", "mcts: 8", "mcts:0.25s", "mcts:1e-3s", "mcts:8:random",
         "mcts:8:greedy:uniform", "mcts:policy:m.zip", "mcts:8:policy:runs/a:b.zip", "mcts:2s:unpickle-policy:m.zip",
         "az:legacy_ard_ri", "az:runs/a:b/final.pt:128", "az:x:5:0.2s", "azpolicy:legacy_ard_ri", "policy:m.zip",
         "unpickle-policy:m.zip", "rllib:runs/x"]


@pytest.fixture
def own_registry(monkeypatch):
    """Kinds registered by a test are forgotten after it."""
    base.known_kinds()   # the built-in kinds first: one whose module loaded under the copy would stay unregistered
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(spec_module, "_OTHER_KINDS", dict(spec_module._OTHER_KINDS))


@pytest.mark.parametrize("text", SPECS)
def test_the_canonical_text_reads_back_as_the_same_spec(text):
    spec = AgentSpec.parse(text)
    again = AgentSpec.parse(str(spec))
    assert again == spec and hash(again) == hash(spec) and str(again) == str(spec)
    assert spec.text == text and pickle.loads(pickle.dumps(spec)) == spec


def test_fields():
    spec = AgentSpec.parse("mcts:0.5s:policy:runs/a:b.zip")
    assert (spec.kind, spec.simulations, spec.seconds, spec.rollout, spec.prior) == ("mcts", None, 0.5, None, None)
    assert spec.inner == AgentSpec.parse("policy:runs/a:b.zip") and spec.inner.path == "runs/a:b.zip"
    assert [s.kind for s in spec.walk()] == ["mcts", "policy"]
    assert AgentSpec.parse("mcts") == AgentSpec.parse("mcts:64:none:greedy")
    assert AgentSpec.parse("az:runs/a:b/final.pt").path == "runs/a:b/final.pt"
    assert AgentSpec.parse("random").argument is None and AgentSpec.parse("mcts: 8").argument == " 8"


def test_a_time_budget_replaces_the_budget_of_a_search_only():
    assert str(AgentSpec.parse("mcts:1000:random").with_seconds(0.5)) == "mcts:0.5s:random"
    assert str(AgentSpec.parse("az:legacy_ard_ri:64").with_seconds(2)) == "az:legacy_ard_ri:2s"
    assert AgentSpec.parse("mcts:8").with_seconds(0.123456789).seconds == 0.123456789   # not rounded
    assert with_time_budget("policy:m.zip", 1) == "policy:m.zip"
    for bad in (0, -1, float("inf"), float("nan"), MAX_SECONDS * 2):
        with pytest.raises(AgentSpecError, match="'mcts:8': seconds per move must be finite"):
            AgentSpec.parse("mcts:8").with_seconds(bad)


def test_rating_reads_a_spec_once_and_hands_the_value_on():
    src, label = agent_source("mcts: 100", time_per_move=None)
    assert src == AgentSpec.parse("mcts:100") and label == "mcts: 100"      # the label as typed
    src, label = agent_source(AgentSpec.parse("mcts:100"), time_per_move=1)
    assert label == "mcts:1s" and src.seconds == 1.0


def test_make_agent_takes_a_parsed_spec():
    agent = make_agent(AgentSpec.parse("mcts:8:random"), seed=0)
    assert agent.name == "mcts:8:random" and agent.simulations == 8


def test_a_registered_kind_gets_its_raw_argument(own_registry):
    seen = []
    register_agent("echo_test", lambda arg, seed=None, **kw: seen.append(arg) or make_agent("random"))
    register_agent("plain_test", lambda arg, seed=None, **kw: make_agent("random"), takes_argument=False)
    register_agent("parsed_test", lambda spec, seed=None, **kw: seen.append(spec) or make_agent("random"),
                   reads_spec=True)
    make_agent("echo_test")
    make_agent("echo_test:a: b:c")
    make_agent("parsed_test:x")
    assert seen == [None, "a: b:c", AgentSpec.parse("parsed_test:x")]
    assert str(AgentSpec.parse("echo_test:a: b:c")) == "echo_test:a: b:c"
    with pytest.raises(AgentSpecError, match="agent 'plain_test' takes no argument, got 'plain_test:1'"):
        make_agent("plain_test:1")


@pytest.mark.parametrize("text, unpickling", [
    ("rllib:d", "rllib"), ("unpickle-policy:m.zip", "unpickle-policy"),
    ("mcts:8:unpickle-policy:m.zip", "unpickle-policy"), ("mcts:policy:a:unpickle-policy:b", None),
    ("policy:runs/unpickle-policy:x.zip", None),
])
def test_the_data_file_check_walks_the_parsed_spec(text, unpickling):
    if unpickling is None:
        assert base.check_data_spec(text, "f.json") == text       # a path that merely holds the word
    else:
        with pytest.raises(AgentSpecError, match=f"^f.json: agent spec .* names '{unpickling}', which unpickles"):
            base.check_data_spec(text, "f.json")


def test_the_data_file_check_reads_a_registered_kinds_argument_conservatively(own_registry):
    register_agent("wrap_test", lambda arg, seed=None, **kw: make_agent(arg))
    with pytest.raises(AgentSpecError, match="names 'rllib'"):
        base.check_data_spec("wrap_test:rllib:d", "f.json")
    with pytest.raises(AgentSpecError, match="^f.json: 'mcts:0': simulations must be from 1"):
        base.check_data_spec("mcts:0", "f.json")


def test_a_tournament_config_is_checked_without_building_an_agent(monkeypatch):
    from agents.evaluation.tournament import validate_tournament_config

    built = []
    monkeypatch.setattr(base, "_REGISTRY", {kind: (lambda *a, **kw: built.append(a)) for kind in base.known_kinds()})
    cfg = validate_tournament_config({"variant": "legacy_ard_ri", "games_per_pair": 2,
                                      "agents": {"a": "mcts:8:policy:nowhere.zip", "b": "az:nowhere.pt:1s"}})
    assert built == [] and cfg["agents"]["a"] == "mcts:8:policy:nowhere.zip"


def test_mcts_searches_with_an_unpickled_model_on_request():
    pytest.importorskip("sb3_contrib")
    path = ROOT / "agents" / "pretrained" / "legacy_ard_ri.zip"
    agent = make_agent(f"mcts:4:unpickle-policy:{path}", seed=0)
    assert agent.name == f"mcts:4:unpickle-policy:{path}"
