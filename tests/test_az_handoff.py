"""A training run's hand-off: small, no optimiser state, and a resume from it goes on with the
same network, counters, pool, generator and window as the run it was made from."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.az.checkpoint import CheckpointError, read_compact_replay  # noqa: E402
from agents.az.handoff import main as handoff_main  # noqa: E402
from agents.az.handoff import make_handoff  # noqa: E402
from agents.az.replay import ReplayWindow  # noqa: E402
from agents.schema import read_yaml_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = {"iterations": 2, "games": 4, "positions_per_iteration": 24, "simulations": 4, "fast_simulations": 2,
        "considered_actions": 4, "min_replay": 8, "batch_size": 8, "replay_window": 256, "channels": 4,
        "blocks": 1, "value_hidden": 8, "eval_every": 0, "final_eval_games": 1, "eval_opponents": ["random"],
        "eval_simulations": 2, "pool_every": 1, "checkpoint_every": 1, "max_turns": 16, "progress_bar": False,
        "device": "cpu", "warm_start_games": 0}


def _config(**more):
    from agents.az.config import validate_az_config

    raw = read_yaml_config(ROOT / "configs" / "az" / "legacy_ard_ri.yaml")
    raw.update(TINY, **more)
    return validate_az_config(raw)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from agents.az.train import train_az

    out = tmp_path_factory.mktemp("run")
    train_az(_config(), out_dir=out, progress=False, final_eval=False)
    return out


def _state(run_obj):
    return {"counters": json.loads(json.dumps(run_obj.counters)), "pool": list(run_obj.pool),
            "rng": run_obj.rng.bit_generator.state, "window": run_obj.window.state_dict(),
            "weights": {k: v.clone() for k, v in run_obj.net.state_dict().items()}}


def test_a_resume_from_the_handoff_has_the_runs_state(run, tmp_path):
    from agents.az.train import _Run

    ck = run / "checkpoints" / "iter_000002"
    info = make_handoff(ck, tmp_path / "handoff")
    assert info["positions"] == info["window_positions"] > 0
    files = info["files"]
    assert "checkpoints/iter_000002/window.npz" in files and "checkpoints/iter_000002/optimizer.pt" not in files
    assert not any(name.endswith("replay.npz") or name.endswith("optimizer.pt") for name in files)
    assert "checkpoints/iter_000001/model.pt" in files          # the pool's networks come along
    cfg = _config()
    direct = _state(_Run(cfg, run, "cpu", ck))
    copy = tmp_path / "resumed"
    shutil.copytree(tmp_path / "handoff", copy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = _state(_Run(cfg, copy, "cpu", copy / "checkpoints" / "iter_000002"))
    assert any("optimiser" in str(w.message) for w in caught)
    assert resumed["counters"] == direct["counters"] and resumed["pool"] == direct["pool"]
    assert resumed["rng"] == direct["rng"]
    assert all(torch.equal(resumed["weights"][k], v) for k, v in direct["weights"].items())
    a, b = direct["window"], resumed["window"]
    assert int(a["added"]) == int(b["added"]) and int(a["capacity"]) == int(b["capacity"])
    w = max(a["actions"].shape[1], b["actions"].shape[1])     # the -1 padding may differ in width
    pad = lambda x, fill: np.pad(x, ((0, 0), (0, w - x.shape[1])), constant_values=fill)
    assert np.array_equal(a["obs"], b["obs"]) and np.array_equal(pad(a["actions"], -1), pad(b["actions"], -1))
    assert np.allclose(pad(a["targets"], 0), pad(b["targets"], 0), atol=2e-3)
    assert np.allclose(a["values"], b["values"], atol=1e-3)


def test_a_handoff_keeps_the_newest_positions_when_asked(run, tmp_path):
    ck = run / "checkpoints" / "iter_000002"
    info = make_handoff(ck, tmp_path / "h", positions=5)
    assert info["positions"] == 5
    window = ReplayWindow.load(ck / "replay.npz")
    n = window.obs.shape[1]
    back = read_compact_replay(tmp_path / "h" / "checkpoints" / "iter_000002" / "window.npz", n, n * n * 4 * (n - 1) + 1,
                               1 << 30)
    assert np.array_equal(back["obs"], window.state_dict()["obs"][-5:])


def test_handoff_refusals_are_one_line(run, tmp_path, capsys):
    assert handoff_main([str(run), str(tmp_path / "x")]) == 2
    assert "not an AZ training checkpoint" in capsys.readouterr().err
    old = run / "checkpoints" / "iter_000001"            # only the newest keeps its window
    assert handoff_main([str(old), str(tmp_path / "y")]) == 2
    assert "no replay window" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    assert handoff_main([str(run / "checkpoints" / "iter_000002"), str(tmp_path / "full")]) == 2
    assert "not empty" in capsys.readouterr().err


def test_a_tampered_compact_window_is_refused(run, tmp_path):
    ck = run / "checkpoints" / "iter_000002"
    make_handoff(ck, tmp_path / "h")
    path = tmp_path / "h" / "checkpoints" / "iter_000002" / "window.npz"
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["targets"] = arrays["targets"].copy()
    arrays["targets"][0] = np.float16("nan")
    np.savez_compressed(path, **arrays)
    with pytest.raises(CheckpointError, match="nan or inf"):
        read_compact_replay(path, 7, 1177, 1 << 30)
    arrays["counts"] = arrays["counts"] + 1
    np.savez_compressed(path, **arrays)
    with pytest.raises(CheckpointError, match="counts"):
        read_compact_replay(path, 7, 1177, 1 << 30)
