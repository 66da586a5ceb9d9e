"""Bad inputs to AlphaZero training (``backend: az``): config values beyond realistic bounds,
agent specs that cannot play, a run that diverges, and the files of a checkpoint being resumed.

Each stops with one line naming the field or the file, in a ``ValueError`` subclass (the
:class:`~agents.schema.ConfigError` that ``tafl train`` reports in one line), before the first
iteration and with nothing written or changed; a diverging run stops with its last good
checkpoint kept and nothing non-finite saved. A checkpoint written by the current code resumes.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tafl_env.cli import main  # noqa: E402

from agents.az.checkpoint import load_model  # noqa: E402
from agents.az.config import validate_az_config  # noqa: E402
from agents.az.network import AZNet  # noqa: E402
from agents.schema import ConfigError  # noqa: E402

from messages import words_length  # noqa: E402

TINY = {"backend": "az", "variant": "legacy_ard_ri", "iterations": 2, "games": 4, "positions_per_iteration": 8,
        "simulations": 4, "fast_simulations": 2, "considered_actions": 4, "min_replay": 8, "batch_size": 8,
        "replay_window": 256, "channels": 4, "blocks": 1, "value_hidden": 8, "eval_every": 0,
        "final_eval_games": 1, "eval_opponents": ["random"], "eval_simulations": 2, "pool_every": 1,
        "checkpoint_every": 1, "max_turns": 12, "progress_bar": False, "device": "cpu", "warm_start_games": 0}


def tiny(**more) -> dict:
    return validate_az_config({**TINY, **more})


def one_line(exc_info, *words: str) -> str:
    """The error is a ValueError subclass whose message is one line naming ``words``."""
    exc = exc_info.value
    assert isinstance(exc, ValueError), type(exc)
    text = str(exc)
    assert "\n" not in text and words_length(text) < 500, text
    for word in words:
        assert word in text, (word, text)
    return text


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes: to see that nothing changed."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# --- the config ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("channels", 22000), ("blocks", 10**7), ("value_hidden", 10**6), ("torch_threads", 10**12),
    ("games", 10**12), ("positions_per_iteration", 10**12), ("simulations", 10**12),
    ("fast_simulations", 10**12), ("eval_simulations", 10**7), ("eval_games", 10**12),
    ("final_eval_games", 10**12), ("replay_window", 10**12), ("batch_size", 10**9),
    ("considered_actions", 10**9), ("leaves_per_tree", 10**9), ("pool_size", 10**9), ("workers", 10**9),
    ("warm_start_games", 10**12), ("learning_rate", 1.0e30), ("sample_reuse", 1e300),
])
def test_config_size_beyond_its_bound_names_the_field(field, value):
    with pytest.raises(ConfigError) as info:
        validate_az_config({**TINY, field: value})
    one_line(info, f"'{field}'", str(value) if isinstance(value, int) else "")


def test_config_sizes_are_ints_not_floats():
    with pytest.raises(ConfigError) as info:
        validate_az_config({**TINY, "blocks": 1e7})
    one_line(info, "'blocks'", "int")


@pytest.mark.parametrize("more,field", [
    ({"variant": "legacy_alea_evangelii", "replay_window": 10_000_000}, "replay_window"),
    ({"games": 128, "simulations": 1_000_000, "fast_simulations": 2}, "games"),
    ({"final_eval_games": 60_000, "eval_simulations": 100_000}, "final_eval_games"),
])
def test_config_whose_arrays_would_pass_the_memory_bound_names_the_field(more, field):
    with pytest.raises(ConfigError) as info:
        validate_az_config({**TINY, "max_turns": None, **more})
    one_line(info, f"'{field}'", "GiB")


def test_config_of_a_network_too_big_for_a_model_file_names_channels():
    with pytest.raises(ConfigError) as info:
        validate_az_config({**TINY, "channels": 1024, "blocks": 64})
    one_line(info, "'channels'", "GiB")


def test_weights_size_of_the_config_check_is_the_networks():
    from agents.az.config import network_bytes

    for n, channels, blocks, hidden in ((7, 4, 1, 8), (19, 48, 3, 64), (9, 1, 0, 1)):
        with torch.device("meta"):
            net = AZNet(n, channels=channels, blocks=blocks, value_hidden=hidden)
        assert network_bytes(n, channels, blocks, hidden) == 4 * sum(p.numel() for p in net.parameters())


def test_shipped_az_configs_stay_within_the_bounds():
    from agents.schema import read_yaml_config

    root = Path(__file__).resolve().parents[1] / "configs" / "az"
    for path in sorted(root.glob("*.yaml")):
        validate_az_config(read_yaml_config(path), str(path))


def test_config_beyond_the_bounds_stops_tafl_train_in_one_line(tmp_path, capsys):
    config = tmp_path / "az.yaml"
    config.write_text(json.dumps({**TINY, "channels": 22000}))
    code = main(["train", "--config", str(config), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert len(err.splitlines()) == 1 and "'channels'" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("more,field,words", [
    ({"eval_opponents": ["random", "policy:/nope.zip"]}, "eval_opponents", ["policy:/nope.zip", "no such file"]),
    ({"eval_opponents": ["az:/nope/model.pt"]}, "eval_opponents", ["az:/nope/model.pt"]),
    ({"eval_opponents": ["policy:historical_tablut"]}, "eval_opponents", ["policy:historical_tablut", "9x9"]),
    ({"eval_opponents": ["az:legacy_ard_ri:infs"]}, "eval_opponents", ["inf"]),
    ({"sparring": "policy:/nope.zip"}, "sparring", ["policy:/nope.zip"]),
    ({"warm_start_agent": "policy:/nope.zip"}, "warm_start_agent", ["policy:/nope.zip"]),
])
def test_agent_specs_of_the_config_are_checked_before_the_first_iteration(tmp_path, more, field, words):
    from agents.az.train import train_az

    with pytest.raises(ConfigError) as info:
        train_az(tiny(**more), out_dir=tmp_path / "out", progress=False)
    one_line(info, f"'{field}'", *words)
    assert not (tmp_path / "out").exists()


def test_window_beyond_the_memory_available_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    import tafl_env.memory

    from agents.az.train import train_az

    monkeypatch.setattr(tafl_env.memory, "available_bytes", lambda: 1 << 16)
    with pytest.raises(ConfigError) as info:
        train_az(tiny(), out_dir=tmp_path / "out", progress=False)
    one_line(info, "'replay_window'", "GiB")
    assert not (tmp_path / "out").exists()


# --- divergence -----------------------------------------------------------------------------------------

def test_nan_loss_stops_the_learner_before_the_optimiser_moves():
    from agents.az.learner import DivergedError, Learner
    from agents.az.replay import ReplayWindow
    from agents.az.symmetry import board_symmetries
    from tafl_env.game import engine_for
    from tafl_env.rules import make_rules

    eng = engine_for(make_rules("legacy_ard_ri"))
    net = AZNet(7, channels=4, blocks=1)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    window = ReplayWindow(8, (7, 7, 14))
    window.add(np.zeros((8, 7, 7, 14), np.uint8), np.zeros((8, 1), np.int64), np.ones((8, 1), np.float32),
               np.full(8, np.nan, np.float32))
    learner = Learner(net, board_symmetries(eng, "none"))
    with pytest.raises(DivergedError) as info:
        learner.step(window, 4, np.random.default_rng(0))
    one_line(info, "loss", "nan")
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())


def test_diverging_run_stops_in_one_line_with_its_last_good_checkpoint_kept(tmp_path):
    from agents.az.learner import DivergedError
    from agents.az.train import train_az

    # no learning in iteration 1 (the window holds 8 of 16 positions): its checkpoint is good;
    # the absurd rate (beyond the schema's bound, so set after validation) diverges in iteration 2
    cfg = tiny(iterations=4, min_replay=16)
    cfg["learning_rate"] = 1.0e30
    with pytest.raises(DivergedError) as info:
        train_az(cfg, out_dir=tmp_path, progress=False)
    one_line(info, "nan", "iter_000001", "learning_rate")
    assert isinstance(info.value, ConfigError)
    checkpoints = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert checkpoints == ["iter_000001"]
    net, _ = load_model(tmp_path / "checkpoints" / "iter_000001")
    assert all(bool(torch.isfinite(v).all()) for v in net.state_dict().values())
    assert not (tmp_path / "final.pt").exists() and not (tmp_path / "summary.json").exists()
    assert not list(tmp_path.rglob("*.tmp"))


# --- resume ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """The output folder of a two-iteration run (checkpoints iter_000001, iter_000002)."""
    from agents.az.train import train_az

    out = tmp_path_factory.mktemp("az_run")
    train_az(tiny(), out_dir=out, progress=False, final_eval=False)
    return out


@pytest.fixture
def run(trained, tmp_path) -> Path:
    """A copy of the run to spoil (the checkpoint to resume: checkpoints/iter_000002)."""
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    return out


def resume_refused(run: Path, *words: str) -> str:
    """Resuming ``run``'s last checkpoint stops with one line naming ``words`` and changes nothing."""
    from agents.az.train import train_az

    before = snapshot(run)
    with pytest.raises(ConfigError) as info:
        train_az(tiny(iterations=3), resume=run / "checkpoints" / "iter_000002", progress=False, final_eval=False)
    text = one_line(info, "resume", *words)
    assert snapshot(run) == before
    return text


def test_checkpoint_written_by_this_code_resumes(run):
    from agents.az.train import train_az

    summary = train_az(tiny(iterations=3), resume=run / "checkpoints" / "iter_000002", progress=False,
                       final_eval=False)
    assert summary["counters"]["iteration"] == 3


@pytest.mark.parametrize("content,words", [
    ("{not json", ["trainer.json"]),
    ("[1, 2]", ["trainer.json", "counters"]),
    ({"counters": "lots"}, ["trainer.json", "counters"]),
    ({"counters": {"iteration": -1}}, ["trainer.json", "'iteration'"]),
    ({"counters": {"positions": "many"}}, ["trainer.json", "'positions'"]),
    ({"counters": {"minutes": float("nan")}}, ["trainer.json", "'minutes'"]),
    ({"counters": {"results": {"attacker": 1}}}, ["trainer.json", "'results'"]),
    ({"pool": "checkpoints"}, ["trainer.json", "pool"]),
    ({"pool": ["/etc/passwd"]}, ["trainer.json", "pool"]),
    ({"pool": ["../../elsewhere.pt"]}, ["trainer.json", "pool"]),
    ({"rng": {"bit_generator": "MT19937"}}, ["trainer.json", "rng"]),
    ({"rng": None}, ["trainer.json", "rng"]),
])
def test_resume_refuses_a_bad_trainer_state(run, content, words):
    path = run / "checkpoints" / "iter_000002" / "trainer.json"
    if isinstance(content, str):
        path.write_text(content)
    else:
        state = json.loads(path.read_text())
        for key, value in content.items():
            if isinstance(value, dict) and isinstance(state.get(key), dict):
                state[key].update(value)
            else:
                state[key] = value
        path.write_text(json.dumps(state))
    resume_refused(run, *words)


def test_resume_refuses_an_optimiser_state_of_another_network(run):
    other = AZNet(7, channels=8, blocks=1)
    opt = torch.optim.AdamW(other.parameters())
    other(torch.zeros(2, 7, 7, 14))[1].sum().backward()
    opt.step()
    torch.save(opt.state_dict(), run / "checkpoints" / "iter_000002" / "optimizer.pt")
    resume_refused(run, "optimizer.pt", "shape")


def test_resume_refuses_an_optimiser_state_that_needs_unpickling(run):
    class Payload:
        def __reduce__(self):
            return (print, ("ran",))

    torch.save({"state": Payload(), "param_groups": []}, run / "checkpoints" / "iter_000002" / "optimizer.pt")
    text = resume_refused(run, "optimizer.pt", "weights_only")
    assert "In PyTorch" not in text


def test_resume_refuses_an_optimiser_state_holding_nan(run):
    path = run / "checkpoints" / "iter_000002" / "optimizer.pt"
    state = torch.load(path, weights_only=True)
    state["state"][0]["exp_avg"].fill_(float("nan"))
    torch.save(state, path)
    resume_refused(run, "optimizer.pt", "nan")


def _rewrite_replay(path: Path, **arrays) -> None:
    with np.load(path) as d:
        data = {k: d[k] for k in d.files}
    data.update(arrays)
    np.savez(path, **data)


@pytest.mark.parametrize("case,words", [
    ("truncated", ["replay.npz"]),
    ("object array", ["replay.npz"]),
    ("missing array", ["replay.npz", "targets"]),
    ("another board", ["replay.npz", "'obs'", "9, 9, 14"]),
    ("wrong dtype", ["replay.npz", "'values'", "float64"]),
    ("nan targets", ["replay.npz", "'targets'", "nan"]),
    ("inf values", ["replay.npz", "'values'", "nan or inf"]),
    ("illegal action ids", ["replay.npz", "actions"]),
])
def test_resume_refuses_a_bad_replay_window(run, case, words):
    path = run / "checkpoints" / "iter_000002" / "replay.npz"
    with np.load(path) as d:
        data = {k: d[k] for k in d.files}
    if case == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif case == "object array":
        data["values"] = np.array([{"x": 1}] * len(data["values"]), dtype=object)
        np.savez(path, **data)
    elif case == "missing array":
        del data["targets"]
        np.savez(path, **data)
    elif case == "another board":
        _rewrite_replay(path, obs=np.zeros((len(data["values"]), 9, 9, 14), np.uint8))
    elif case == "wrong dtype":
        _rewrite_replay(path, values=data["values"].astype(np.float64))
    elif case == "nan targets":
        data["targets"][0, 0] = np.nan
        _rewrite_replay(path, targets=data["targets"])
    elif case == "inf values":
        data["values"][-1] = np.inf
        _rewrite_replay(path, values=data["values"])
    else:
        data["actions"][0, 0] = 10**6
        _rewrite_replay(path, actions=data["actions"])
    resume_refused(run, *words)


def test_resume_refuses_a_replay_member_declaring_a_huge_array(run):
    # the header of obs.npy declares a window far beyond the bound: refused from the header alone
    path = run / "checkpoints" / "iter_000002" / "replay.npz"
    with np.load(path) as d:
        data = {k: d[k] for k in d.files}
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "|u1", "fortran_order": False,
                                               "shape": (10**9, 7, 7, 14)})
    with zipfile.ZipFile(path, "w") as zf:
        for key, array in data.items():
            if key == "obs":
                zf.writestr("obs.npy", buf.getvalue())
            else:
                member = io.BytesIO()
                np.save(member, array)
                zf.writestr(f"{key}.npy", member.getvalue())
    resume_refused(run, "replay.npz", "'obs'")


def test_resume_refuses_a_pool_entry_that_is_not_a_model(run):
    trainer = json.loads((run / "checkpoints" / "iter_000002" / "trainer.json").read_text())
    entry = trainer["pool"][0]
    (run / entry).write_bytes(b"not a model")
    resume_refused(run, "pool entry", entry)


def test_resume_refuses_a_pool_entry_of_another_variant(run, tmp_path):
    from agents.az.checkpoint import save_model
    from tafl_env.rules import make_rules

    trainer = json.loads((run / "checkpoints" / "iter_000002" / "trainer.json").read_text())
    entry = trainer["pool"][0]
    save_model(run / entry, AZNet(9, channels=4, blocks=1), make_rules("historical_tablut"))
    resume_refused(run, "pool entry", entry, "historical_tablut")


def test_resume_refuses_a_model_holding_nan(run):
    path = run / "checkpoints" / "iter_000002" / "model.pt"
    state = torch.load(path, weights_only=True)
    state["stem.weight"][0, 0, 0, 0] = float("inf")
    torch.save(state, path)
    resume_refused(run, "model.pt", "stem.weight")


def test_resume_refuses_a_bad_evaluation_log(run):
    (run / "eval.json").write_text('[{"iteration": "two"}]')
    resume_refused(run, "eval.json")


def test_resume_refusal_through_tafl_train_is_one_line(run, capsys):
    (run / "checkpoints" / "iter_000002" / "trainer.json").write_text("{not json")
    config = run.parent / "az.yaml"
    config.write_text(json.dumps({**TINY, "iterations": 3}))
    before = snapshot(run)
    code = main(["train", "--config", str(config), "--resume", str(run / "checkpoints" / "iter_000002"),
                 "--no-progress", "--no-eval"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert len(err.splitlines()) == 1 and "trainer.json" in err and "Traceback" not in err, err
    assert snapshot(run) == before
