"""A network of another head fitted to a checkpoint's replay window (agents/az/refit.py): the trunk
kept, the heads learned from the window's targets, the fit measured on held-out positions, and the
result a sizeless model that starts a run on another board."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.az.checkpoint import load_model, save_model  # noqa: E402
from agents.az.network import TRUNK, AZNet  # noqa: E402
from agents.az.refit import main, refit  # noqa: E402
from agents.az.replay import ReplayWindow, compact_arrays, encode_planes  # noqa: E402
from tafl_env.game import engine_for  # noqa: E402
from tafl_env.observation import observe  # noqa: E402
from tafl_env.rules import make_rules  # noqa: E402

VARIANT = "historical_tablut"


def _checkpoint(tmp_path, positions=600, value=0.8, seed=0, window_file="replay.npz"):
    """A checkpoint folder of a small board-head network whose window holds ``positions`` positions
    of random Tablut games, each with a policy target spread evenly over its one-square moves and
    the value target ``value``: signals the fit can learn (and that every board symmetry keeps)."""
    rules = make_rules(VARIANT)
    eng = engine_for(rules)
    rng = np.random.default_rng(seed)
    state = eng.initial_state(positions)
    for _ in range(int(rng.integers(0, 4))):
        mask = eng.legal_action_mask(state).astype(bool)
        eng.step(state, np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
    assert not state.done.any()                     # three random plies end no game of Tablut
    live = state
    mask = eng.legal_action_mask(live).astype(bool)
    width = int(mask.sum(1).max())
    actions = np.full((len(mask), width), -1, dtype=np.int32)
    targets = np.zeros((len(mask), width), dtype=np.float32)
    for i, m in enumerate(mask):
        legal = np.flatnonzero(m)
        actions[i, :len(legal)] = legal
        short = np.asarray(eng.decode(legal)[2]) == 1
        targets[i, :len(legal)] = short / short.sum()
    window = ReplayWindow(len(mask), (eng.n, eng.n, 14))
    window.add(encode_planes(observe(eng, live, live.to_move.astype(np.intp))), actions, targets,
               np.full(len(mask), value, dtype=np.float32))
    ck = tmp_path / "run" / "checkpoints" / "iter_000007"
    torch.manual_seed(seed)
    teacher = AZNet(eng.n, channels=8, blocks=1, value_hidden=16)
    save_model(ck / "model.pt", teacher, rules, search={"static_value_weight": 0.5}, iteration=7)
    if window_file == "replay.npz":
        window.save(ck / "replay.npz")
    elif window_file == "window.npz":                # as a hand-off keeps it (agents/az/handoff.py)
        np.savez_compressed(ck / "window.npz", **compact_arrays(window))
    return ck, teacher


def test_the_refit_keeps_the_trunk_fits_the_heads_and_says_how_well(tmp_path):
    ck, teacher = _checkpoint(tmp_path)
    out = tmp_path / "sizeless.pt"
    report = refit(ck, out, steps=60, head_steps=60, batch=64, lr=3e-3, holdout=0.1)
    net, record = load_model(out)
    assert record["network"]["head"] == "sizeless" and record["variant"] == VARIANT
    assert record["search"] == {"static_value_weight": 0.5}          # the teacher's search settings
    assert record["notes"]["refit_from"] == str(ck) and record["notes"]["teacher_iteration"] == 7
    kept = [k for k in net.state_dict() if k.split(".")[0] in TRUNK]
    assert kept and report["kept_tensors"] == len(kept)
    for k in kept:                                   # only the heads learned: the trunk is the teacher's
        assert torch.equal(net.state_dict()[k], teacher.state_dict()[k]), k
    assert not torch.equal(net.value_out.weight, AZNet(9, channels=8, blocks=1, value_hidden=16,
                                                        head="sizeless").value_out.weight)
    held = report["holdout"]
    assert report["holdout_positions"] == 60 and report["positions"] == 540     # the newest tenth held out
    # a value target of 0.8 everywhere: the fresh head (about 0) misses by 0.64, the fitted one much less
    assert held["before"]["value_mse"] > 0.5 and held["after"]["value_mse"] < 0.5 * held["before"]["value_mse"]
    assert held["after"]["policy_kl"] < held["before"]["policy_kl"]


def test_after_the_head_steps_the_trunk_learns_too(tmp_path):
    ck, teacher = _checkpoint(tmp_path)
    refit(ck, tmp_path / "s.pt", steps=12, head_steps=4, batch=64)
    net, _ = load_model(tmp_path / "s.pt")
    assert not torch.equal(net.stem.weight, teacher.stem.weight)


def test_the_refitted_model_starts_a_run_on_another_board(tmp_path):
    from agents.az.config import validate_az_config
    from agents.az.train import _Run

    ck, _ = _checkpoint(tmp_path)
    refit(ck, tmp_path / "s.pt", steps=4, head_steps=2, batch=64)
    small, _ = load_model(tmp_path / "s.pt")
    cfg = {"backend": "az", "variant": "legacy_ard_ri", "iterations": 1, "channels": 8, "blocks": 1,
           "value_hidden": 16, "head": "sizeless", "init_model": str(tmp_path / "s.pt")}
    run = _Run(validate_az_config(cfg), tmp_path / "ardri", "cpu", None)
    assert all(torch.equal(run.net.state_dict()[k], v) for k, v in small.state_dict().items())


def test_a_hand_off_window_is_read_too(tmp_path):
    ck, _ = _checkpoint(tmp_path / "a")
    handoff, _ = _checkpoint(tmp_path / "b", window_file="window.npz")
    full = refit(ck, tmp_path / "a.pt", steps=2, head_steps=1, batch=64)
    compact = refit(handoff, tmp_path / "b.pt", steps=2, head_steps=1, batch=64)
    assert (compact["positions"], compact["holdout_positions"]) == (full["positions"], full["holdout_positions"]) == (570, 30)
    assert compact["holdout"]["before"]["policy_kl"] == pytest.approx(full["holdout"]["before"]["policy_kl"], abs=1e-3)


def test_bad_input_is_refused_before_anything_is_written(tmp_path, capsys):
    ck, _ = _checkpoint(tmp_path, window_file=None)
    out = tmp_path / "s.pt"
    with pytest.raises(ValueError, match="holds no replay window"):
        refit(ck, out, steps=2)
    ck2, _ = _checkpoint(tmp_path / "b")
    for kwargs, words in (({"steps": 0}, "steps must be"), ({"head_steps": 5, "steps": 2}, "head_steps must be"),
                          ({"head": "round"}, "head must be"), ({"holdout": 0.9}, "holdout must be"),
                          ({"batch": 10_000}, "too few")):
        with pytest.raises(ValueError, match=words):
            refit(ck2, out, **kwargs)
    assert not out.exists()
    assert main([str(tmp_path / "nowhere"), str(out)]) == 2
    assert "is not an AZ training checkpoint" in capsys.readouterr().err
    assert main([str(ck2), str(out), "--steps", "2", "--head-steps", "1", "--batch", "64"]) == 0
    assert json.loads(capsys.readouterr().out)["head"] == "sizeless" and out.exists()


def test_a_sizeless_network_learns_after_self_play_evaluated_it():
    """Self-play's evaluator runs the network under inference mode; the learner's next step must
    still train it (a tensor the sizeless head caches there once broke autograd)."""
    from agents.az.learner import Learner
    from agents.az.network import Evaluator
    from agents.az.symmetry import board_symmetries

    ck_eng = engine_for(make_rules(VARIANT))
    net = AZNet(ck_eng.n, channels=4, blocks=1, value_hidden=8, head="sizeless")
    Evaluator(net)(ck_eng, ck_eng.initial_state(2))
    state = ck_eng.initial_state(4)
    mask = ck_eng.legal_action_mask(state).astype(bool)
    legal = np.flatnonzero(mask[0])
    window = ReplayWindow(4, (ck_eng.n, ck_eng.n, 14))
    window.add(encode_planes(observe(ck_eng, state, state.to_move.astype(np.intp))),
               np.tile(legal.astype(np.int32), (4, 1)), np.full((4, len(legal)), 1 / len(legal), np.float32),
               np.zeros(4, np.float32))
    m = Learner(net, board_symmetries(ck_eng)).step(window, 4, np.random.default_rng(0))
    assert np.isfinite(m["loss"])
