"""Bad inputs to the model loaders: ``az:``/``azpolicy:`` models (a .pt of tensors with its JSON
record), ``policy:`` zips and the ``az:`` search budget.

Each is refused with one line naming the file (and the tensor, the entry or the value) in a
``ValueError`` subclass (:class:`~agents.base.AgentSpecError`, :class:`~agents.az.checkpoint.
CheckpointError`), before a network is built from a record that its weights do not bear out,
before a zip member is inflated past its cap, and without torch's warnings or its advice to
unpickle. The models shipped with the package, and the checkpoints of the recorded runs, still
load.
"""

from __future__ import annotations

import io
import json
import os
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tafl_env.cli import main  # noqa: E402

from agents import make_agent  # noqa: E402
from agents.az.checkpoint import CheckpointError, load_model, save_model  # noqa: E402
from agents.az.network import AZNet  # noqa: E402
from agents.base import AgentSpecError  # noqa: E402
from tafl_env.rules import make_rules  # noqa: E402

from messages import words_length  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PRETRAINED = ROOT / "agents" / "pretrained"
SHIPPED_ZIP = PRETRAINED / "legacy_ard_ri.zip"


def one_line(exc_info, *words: str) -> str:
    """The error is a ValueError subclass whose message is one line naming ``words``."""
    exc = exc_info.value
    assert isinstance(exc, ValueError), type(exc)
    text = str(exc)
    assert "\n" not in text and words_length(text) < 400, text
    assert "In PyTorch" not in text and "weights_only=False" not in text, text
    for word in words:
        assert word in text, (word, text)
    return text


# --- az: models ----------------------------------------------------------------------------------

def az_model(folder: Path, name: str = "m", record=None, weights=None) -> Path:
    """A small Ard Ri model (NAME.pt + NAME.json); ``record``/``weights`` edit either in place."""
    pt = save_model(folder / f"{name}.pt", AZNet(7, channels=4, blocks=1), make_rules("legacy_ard_ri"))
    if record is not None:
        rec = json.loads(pt.with_suffix(".json").read_text())
        record(rec)
        pt.with_suffix(".json").write_text(json.dumps(rec))
    if weights is not None:
        state = torch.load(pt, weights_only=True)
        state = weights(state) or state
        torch.save(state, pt)
    return pt


@pytest.mark.parametrize("field,value,words", [
    ("channels", 22000, ["channels", "22000"]),
    ("blocks", 1e7, ["blocks", "10000000.0", "int"]),
    ("channels", 32.9, ["channels", "32.9", "int"]),
    ("value_hidden", 10**9, ["value_hidden"]),
    ("board_size", 10**6, ["board_size"]),
])
def test_az_record_of_an_oversized_or_fractional_network_is_refused_before_building(tmp_path, field, value, words):
    pt = az_model(tmp_path, record=lambda r: r["network"].update({field: value}))
    t0 = time.perf_counter()
    for spec in (f"az:{pt}", f"azpolicy:{pt}"):
        with pytest.raises(AgentSpecError) as info:
            make_agent(spec)
        one_line(info, "m.json", *words)
    assert time.perf_counter() - t0 < 10


def test_az_record_that_its_weights_do_not_bear_out_builds_nothing(tmp_path):
    # within the bounds, but the real network would take gigabytes: the shapes are compared on
    # torch's meta device first, so the refusal is immediate
    pt = az_model(tmp_path, record=lambda r: r["network"].update(channels=1024, blocks=64))
    t0 = time.perf_counter()
    with pytest.raises(CheckpointError) as info:
        load_model(pt)
    one_line(info, "m.pt", "recorded network")
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_az_weights_holding_nan_or_inf_are_refused_naming_the_tensor(tmp_path, bad):
    def spoil(state):
        state["value_out.bias"][0] = bad

    pt = az_model(tmp_path, weights=spoil)
    with pytest.raises(CheckpointError) as info:
        load_model(pt)
    one_line(info, "m.pt", "value_out.bias", "nan or inf")
    for spec in (f"az:{pt}:4", f"azpolicy:{pt}"):
        with pytest.raises(AgentSpecError) as info:
            make_agent(spec)
        one_line(info, "m.pt", "value_out.bias")


def test_az_saver_refuses_a_network_holding_nan_and_writes_nothing(tmp_path):
    net = AZNet(7, channels=4, blocks=1)
    with torch.no_grad():
        net.stem.weight[0, 0, 0, 0] = float("nan")
    with pytest.raises(CheckpointError) as info:
        save_model(tmp_path / "m.pt", net, make_rules("legacy_ard_ri"))
    one_line(info, "stem.weight")
    assert list(tmp_path.iterdir()) == []


class _Payload:
    def __reduce__(self):
        return (os.system, ("echo ran > /dev/null",))


@pytest.mark.parametrize("content", ["pickle", "garbage", "truncated"])
def test_az_weights_refused_by_weights_only_loading_in_one_line_without_warnings(tmp_path, content):
    pt = az_model(tmp_path)
    if content == "pickle":
        torch.save({"stem.weight": _Payload()}, pt)
    elif content == "garbage":
        pt.write_bytes(b"not a torch file at all")
    else:
        pt.write_bytes(pt.read_bytes()[:300])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(CheckpointError) as info:
            load_model(pt)
    text = one_line(info, "m.pt", "weights_only")
    assert "trusted source" not in text
    assert [str(w.message) for w in caught] == []


def test_az_weights_file_larger_than_a_model_is_refused_before_reading(tmp_path, monkeypatch):
    import agents.az.checkpoint as ck

    pt = az_model(tmp_path)
    monkeypatch.setattr(ck, "MAX_WEIGHTS_BYTES", 1024)
    read = []
    monkeypatch.setattr(ck.th, "load", lambda *a, **k: read.append(a) or {})
    with pytest.raises(CheckpointError) as info:
        load_model(pt)
    one_line(info, "m.pt", "bytes")
    assert read == []


def test_shipped_and_recorded_az_models_still_load():
    paths = sorted(PRETRAINED.glob("*_az.pt"))
    paths += sorted((ROOT / "results" / "training").glob("*/run*_handoff/checkpoints/*/model.pt"))[:4]
    assert len(paths) >= 3
    for path in paths:
        net, record = load_model(path)
        assert record["network"] == net.shape()
        assert all(bool(torch.isfinite(t).all()) for t in net.state_dict().values())


# --- az: budgets ------------------------------------------------------------------------------------

@pytest.mark.parametrize("budget,words", [
    ("10000000", ["10000000", "1000000"]), ("99999999999999999999", ["99999999999999999999"]),
    ("0", ["0"]), ("1e9s", ["1000000000", "3600"]), ("infs", ["inf"]), ("nans", ["nan"]),
    ("0s", ["0"]), ("-1s", ["-1"]),
])
def test_az_budget_beyond_the_mcts_bounds_is_refused_when_the_spec_is_read(budget, words):
    from agents.az.agent import parse_az_spec

    with pytest.raises(AgentSpecError) as info:
        parse_az_spec(f"legacy_ard_ri:{budget}")
    one_line(info, f"az:legacy_ard_ri:{budget}", *words)


def test_az_budget_bounds_are_the_mcts_agents():
    from agents.az import agent as az_agent
    from agents.mcts import agent as mcts_agent

    assert az_agent.MAX_SIMULATIONS is mcts_agent.MAX_SIMULATIONS
    assert az_agent.MAX_SECONDS is mcts_agent.MAX_SECONDS
    assert az_agent.parse_az_spec(f"legacy_ard_ri:{mcts_agent.MAX_SIMULATIONS}")[1] == mcts_agent.MAX_SIMULATIONS
    assert az_agent.parse_az_spec(f"legacy_ard_ri:{mcts_agent.MAX_SECONDS:g}s")[2] == mcts_agent.MAX_SECONDS


def test_az_time_budget_stops_at_the_simulation_bound():
    from agents.mcts.agent import MAX_SIMULATIONS

    agent = make_agent("az:legacy_ard_ri:3600s")
    agent._per_sim = 1e-15                 # an absurdly fast measured move
    assert agent._budget() == MAX_SIMULATIONS


def test_az_budget_beyond_the_bounds_stops_the_command_in_one_line(capsys):
    code = main(["play", "legacy_ard_ri", "--vs", "az:legacy_ard_ri:infs"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "inf" in err, err


def test_az_search_tree_beyond_memory_is_refused(monkeypatch):
    import tafl_env.memory

    monkeypatch.setattr(tafl_env.memory, "available_bytes", lambda: 1 << 20)
    with pytest.raises(AgentSpecError) as info:
        make_agent("az:legacy_ard_ri:100000")
    one_line(info, "100000", "GiB")


# --- policy: zips -----------------------------------------------------------------------------------

def policy_zip(folder: Path, name: str, data=None, members: dict | None = None, sizes: dict | None = None) -> Path:
    """A copy of the shipped Ard Ri model zip: ``data`` edits its JSON, ``members`` replaces entries,
    ``sizes`` makes the central directory declare other (inflated) sizes than the entries have."""
    out = folder / f"{name}.zip"
    with zipfile.ZipFile(SHIPPED_ZIP) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename == "data" and data is not None:
                raw = json.loads(content)
                data(raw)
                content = json.dumps(raw).encode()
            if members and item.filename in members:
                content = members[item.filename]
            dst.writestr(item, content)
        for item in dst.filelist:
            if sizes and item.filename in sizes:
                item.file_size = sizes[item.filename]
    return out


def shipped_weights() -> dict:
    with zipfile.ZipFile(SHIPPED_ZIP) as zf:
        return torch.load(io.BytesIO(zf.read("policy.pth")), weights_only=True)


def tensor_bytes(weights: dict) -> bytes:
    buf = io.BytesIO()
    torch.save(weights, buf)
    return buf.getvalue()


@pytest.mark.parametrize("field,value,words", [
    ("channels", 32.9, ["channels", "32.9", "int"]),
    ("channels", 22000, ["channels", "22000"]),
    ("blocks", 1e7, ["blocks", "int"]),
    ("value_hidden", "64", ["value_hidden"]),
    ("observation_shape", [7.0, 7, 14], ["observation_shape"]),
    ("observation_shape", [10**6, 10**6, 14], ["observation_shape", "board_size"]),
    ("num_actions", 10**9, ["num_actions", "1177"]),
])
def test_policy_network_record_sizes_must_be_ints_within_bounds(tmp_path, field, value, words):
    path = policy_zip(tmp_path, "m", data=lambda d: d["tafl_network"].update({field: value}))
    t0 = time.perf_counter()
    with pytest.raises(AgentSpecError) as info:
        make_agent(f"policy:{path}")
    text = one_line(info, "m.zip", "tafl_network", *words)
    assert "unpickle-policy" not in text
    assert time.perf_counter() - t0 < 10


def test_policy_network_record_that_its_weights_do_not_bear_out_builds_nothing(tmp_path):
    path = policy_zip(tmp_path, "m", data=lambda d: d["tafl_network"].update(channels=1024, blocks=64))
    t0 = time.perf_counter()
    with pytest.raises(AgentSpecError) as info:
        make_agent(f"policy:{path}")
    text = one_line(info, "m.zip", "recorded network")
    assert "unpickle-policy" not in text
    assert time.perf_counter() - t0 < 10


def test_policy_zip_member_inflating_past_its_cap_is_refused_before_reading(tmp_path, monkeypatch):
    path = policy_zip(tmp_path, "bomb", sizes={"policy.pth": 3 << 30})
    read = []
    real_open = zipfile.ZipFile.open

    def watched(self, name, *args, **kwargs):
        read.append(getattr(name, "filename", name))
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", watched)
    with pytest.raises(AgentSpecError) as info:
        make_agent(f"policy:{path}")
    text = one_line(info, "bomb.zip", "policy.pth", str(3 << 30))
    assert "unpickle-policy" not in text
    assert "policy.pth" not in read


def test_policy_data_entry_inflating_past_its_cap_is_refused(tmp_path):
    path = policy_zip(tmp_path, "bomb", sizes={"data": 1 << 40})
    with pytest.raises(AgentSpecError) as info:
        make_agent(f"policy:{path}")
    one_line(info, "bomb.zip", "'data'")


def test_policy_weights_holding_nan_are_refused_naming_the_tensor(tmp_path):
    weights = shipped_weights()
    weights["features_extractor.stem.weight"][0, 0, 0, 0] = float("nan")
    path = policy_zip(tmp_path, "m", members={"policy.pth": tensor_bytes(weights)})
    with pytest.raises(AgentSpecError) as info:
        make_agent(f"policy:{path}")
    one_line(info, "m.zip", "features_extractor.stem.weight", "nan or inf")


def _without_record(d):
    del d["tafl_network"]


@pytest.mark.parametrize("case", ["garbage weights", "data not json", "no weights", "weights of another shape",
                                  "foreign tensor names", "not a zip"])
def test_malformed_policy_zip_is_refused_without_pointing_to_unpickling(tmp_path, case):
    if case == "garbage weights":
        path = policy_zip(tmp_path, "m", members={"policy.pth": b"\x80\x02garbage"})
    elif case == "data not json":
        path = policy_zip(tmp_path, "m", members={"data": b"{not json"})
    elif case == "no weights":
        path = tmp_path / "m.zip"
        with zipfile.ZipFile(SHIPPED_ZIP) as src, zipfile.ZipFile(path, "w") as dst:
            for item in src.infolist():
                if item.filename != "policy.pth":
                    dst.writestr(item, src.read(item.filename))
    elif case == "weights of another shape":
        weights = shipped_weights()
        weights["features_extractor.stem.weight"] = torch.zeros(8, 14, 3, 3)
        path = policy_zip(tmp_path, "m", members={"policy.pth": tensor_bytes(weights)})
    elif case == "foreign tensor names":
        path = policy_zip(tmp_path, "m", data=_without_record,
                          members={"policy.pth": tensor_bytes({"w": torch.zeros(3)})})
    else:
        path = tmp_path / "m.zip"
        path.write_bytes(b"PK\x05\x06" + b"\x00" * 18)       # an end record and nothing else
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(AgentSpecError) as info:
            make_agent(f"policy:{path}")
    text = one_line(info, "m.zip")
    assert "unpickle-policy" not in text and "In PyTorch" not in text
    assert [str(w.message) for w in caught if "policy" in str(w.message).lower()] == []


def test_genuine_sb3_zip_of_another_network_names_the_opt_in_and_that_it_runs_code(tmp_path):
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    class Tiny(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (7, 7, 14), np.float32)
        action_space = gym.spaces.Discrete(1177)

        def reset(self, seed=None, options=None):
            return np.zeros((7, 7, 14), np.float32), {}

        def step(self, action):
            return np.zeros((7, 7, 14), np.float32), 0.0, True, False, {}

        def action_masks(self):
            return np.ones(1177, dtype=bool)

    model = MaskablePPO("MlpPolicy", Tiny(), n_steps=8, batch_size=8, seed=0,
                        policy_kwargs=dict(net_arch=[8]), device="cpu")
    model.save(tmp_path / "mlp.zip")
    with pytest.raises(AgentSpecError) as info:
        make_agent(f"policy:{tmp_path / 'mlp.zip'}")
    one_line(info, "mlp.zip", "unpickle-policy:", "runs any code")


def test_shipped_policy_zips_still_load():
    from agents.pretrained import shipped_policies

    names = sorted(shipped_policies())
    assert names
    for variant in names:
        agent = make_agent(f"policy:{variant}")
        assert agent.model is None              # rebuilt from the JSON record, nothing unpickled
