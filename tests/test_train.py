"""Self-play training: the network's action layout, the league env, config validation, and a smoke
run (train a few hundred steps on legacy_ard_ri, save, reload, resume, evaluate)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
yaml = pytest.importorskip("yaml")

from agents.schema import ConfigError  # noqa: E402
from agents.evaluation.play import play_games  # noqa: E402
from agents.evaluation.learning_curve import evaluate_agent  # noqa: E402
from agents.nn import BoardHeads  # noqa: E402
from agents.ppo.config import TRAIN_SCHEMA, load_train_config, validate_train_config  # noqa: E402
from agents.ppo.league import make_train_env  # noqa: E402
from agents.ppo.network import TaflBoardPolicy, board_policy_kwargs  # noqa: E402
from agents.ppo.policy import NetAgent  # noqa: E402
from agents.ppo.run import train  # noqa: E402
from tafl_env import make_rules  # noqa: E402
from tafl_env.game import engine_for  # noqa: E402
from tafl_env.sb3 import ConcatTaflVecEnv, TaflSB3VecEnv  # noqa: E402
from tafl_env.vector import EngineOpponent  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs" / "train").glob("*.yaml"))
BASE = {"variant": "legacy_ard_ri", "total_timesteps": 1000}


# --- the network ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [7, 9])
def test_policy_head_follows_the_action_layout(n):
    """A logit placed at (channel d*(N-1)+k-1, square sq) must come out at action (sq*4+d)*(N-1)+k-1."""
    heads = BoardHeads(n, channels=4)
    with torch.no_grad():
        for p in heads.parameters():
            p.zero_()
        # policy_conv: identity on channel 0 (relu keeps positives); policy_out: channel c reads channel 0 * (c+1)
        heads.policy_conv.weight[0, 0, 0, 0] = 1.0
        mpc = 4 * (n - 1)
        heads.policy_out.weight[:, 0, 0, 0] = torch.arange(1, mpc + 1, dtype=torch.float32)
        feat = torch.zeros(1, 4, n, n)
        sq = 2 * n + 3          # rank 3, file d
        feat[0, 0, sq // n, sq % n] = 1.0
        logits = heads.forward_actor(feat.flatten(1))[0]
    assert logits.shape == (n * n * mpc + 1,)
    nz = torch.nonzero(logits).flatten().tolist()
    assert nz == [sq * mpc + c for c in range(mpc)]
    for d in range(4):
        for k in range(1, n):
            action = (sq * 4 + d) * (n - 1) + (k - 1)
            assert logits[action].item() == d * (n - 1) + k   # channel index + 1


def test_policy_initial_distribution_is_near_uniform_and_masked():
    venv = TaflSB3VecEnv("legacy_ard_ri", num_envs=2, seed=0)
    from sb3_contrib import MaskablePPO

    model = MaskablePPO(TaflBoardPolicy, venv, n_steps=8, batch_size=8, seed=0,
                        policy_kwargs=board_policy_kwargs(channels=8, blocks=1))
    obs = venv.reset()
    mask = venv.action_masks()
    dist = model.policy.get_distribution(torch.as_tensor(obs), action_masks=mask)
    probs = dist.distribution.probs.detach().numpy()
    assert np.all(probs[mask == 0] == 0)
    legal = probs[0][mask[0] == 1]
    assert legal.max() / legal.min() < 1.2       # small-gain init: close to uniform
    assert model.policy.action_net.__class__.__name__ == "Identity"


def test_alea_masked_distribution_keeps_argument_validation():
    """Alea's 25,993 actions: the masked categorical re-masks a distribution whose float32 probs are
    cached (deterministic play reads them) with torch's argument checks on. sb3-contrib before 2.9.2
    re-validated the stale probs against the Simplex constraint and failed on large action spaces
    (reported to sb3-contrib as its #322); the pin asks for the fixed release instead of switching the checks off."""
    from torch.distributions import Distribution

    from sb3_contrib import MaskablePPO

    venv = TaflSB3VecEnv("legacy_alea_evangelii", num_envs=2, seed=0)
    model = MaskablePPO(TaflBoardPolicy, venv, n_steps=8, batch_size=8, seed=0,
                        policy_kwargs=board_policy_kwargs(channels=4, blocks=1))
    assert venv.action_space.n == 25_993
    # no dense (A x A) action layer: SB3's default one would hold
    # 675M weights here (agents/ppo/network.py, TaflBoardPolicy._build)
    assert sum(p.numel() for p in model.policy.parameters()) < 1_000_000
    was = Distribution._validate_args
    Distribution.set_default_validate_args(True)
    try:
        obs = venv.reset()
        for _ in range(3):
            mask = venv.action_masks()
            dist = model.policy.get_distribution(torch.as_tensor(obs), action_masks=mask)
            probs = dist.distribution.probs.detach().numpy()        # cached on the distribution
            assert np.all(probs[mask == 0] == 0) and np.allclose(probs.sum(axis=1), 1, atol=1e-4)
            other = np.roll(mask, 1, axis=0)      # the other game's mask: re-masking the cached distribution
            dist.distribution.apply_masking(other)
            assert np.all(dist.distribution.probs.detach().numpy()[other == 0] == 0)
            actions = dist.get_actions(deterministic=True).numpy()
            assert all(other[np.arange(2), actions] == 1)
            obs, _, _, _ = venv.step(model.policy.predict(obs, action_masks=mask, deterministic=False)[0])
    finally:
        Distribution.set_default_validate_args(was)


# --- the league env ------------------------------------------------------------------------------

def test_engine_opponent_gets_the_state_and_plays_its_side():
    calls = []

    class Opp:
        def act(self, engine, state):
            calls.append(len(state))
            assert not state.done.any()
            return engine.random_actions(state, np.random.default_rng(0))

    env = TaflSB3VecEnv("legacy_ard_ri", num_envs=3, opponent=Opp(), learner_side="attacker", seed=0)
    assert isinstance(env._core.opponent, EngineOpponent)
    env.reset()   # Ard Ri: the defenders move first, so the opponent has already moved
    assert calls and (env.state.to_move == 0).all()
    for _ in range(5):
        masks = env.action_masks()
        env.step_async(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
        env.step_wait()
        assert (env.state.to_move[env.state.winner < 0] == 0).all()


def test_concat_env_steps_every_part_and_stacks_masks():
    parts = [TaflSB3VecEnv("legacy_ard_ri", 4), TaflSB3VecEnv("legacy_ard_ri", 3, opponent="random",
                                                                 learner_side="alternate")]
    venv = ConcatTaflVecEnv(parts)
    venv.seed(3)
    obs = venv.reset()
    assert obs.shape == (7, 7, 7, 14) and venv.action_masks().shape == (7, 1177)
    rng = np.random.default_rng(0)
    for _ in range(30):
        masks = venv.action_masks()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rew, done, infos = venv.step(acts)
        assert obs.shape[0] == len(rew) == len(done) == len(infos) == 7
    with pytest.raises(ValueError):
        ConcatTaflVecEnv([TaflSB3VecEnv("legacy_ard_ri", 2), TaflSB3VecEnv("historical_tablut", 2)])


def test_make_train_env_groups():
    cfg = validate_train_config({**BASE, "selfplay_games": 2, "snapshot_games": 1, "greedy_games": 3,
                                 "random_games": 0, "batch_size": 8, "n_steps": 8})
    venv, groups = make_train_env(cfg, seed=0)
    assert groups == ["selfplay", "snapshot", "greedy"]
    assert venv.num_envs == 2 * 2 + 1 + 3


# --- configs --------------------------------------------------------------------------------------

def test_shipped_configs_load():
    from tafl_env import VARIANTS

    assert sorted(p.stem for p in CONFIGS) == sorted(VARIANTS)
    for path in CONFIGS:
        cfg = load_train_config(path)
        assert cfg["variant"] == path.stem
        text = path.read_text()
        for key in yaml.safe_load(text):          # every field is documented by a comment above it
            before = text.split(f"\n{key}:")[0].rstrip().splitlines()[-1]
            assert before.startswith("#"), (path.name, key)


@pytest.mark.parametrize("change, field", [
    ({"bogus": 1}, "bogus"),
    ({"gamma": 1.5}, "gamma"),
    ({"gamma": "high"}, "gamma"),
    ({"n_steps": 0}, "n_steps"),
    ({"channels": True}, "channels"),
    ({"variant": "chess"}, "variant"),
    ({"eval_opponents": ["stockfish"]}, "eval_opponents"),
    ({"max_minutes": -1}, "max_minutes"),
    ({"options": {"no_such_rule": 1}}, "options"),
    ({"batch_size": 10**7}, "batch_size"),
    ({"selfplay_games": 0, "snapshot_games": 0, "greedy_games": 0, "random_games": 0}, "selfplay_games"),
])
def test_config_errors_name_the_field(change, field):
    with pytest.raises(ConfigError) as err:
        validate_train_config({**BASE, **change})
    assert err.value.field == field
    assert repr(field) in str(err.value)


def test_config_missing_required_and_defaults():
    with pytest.raises(ConfigError) as err:
        validate_train_config({"variant": "legacy_ard_ri"})
    assert err.value.field == "total_timesteps"
    cfg = validate_train_config(dict(BASE))
    assert set(cfg) == set(TRAIN_SCHEMA)
    assert cfg["output_dir"] == "runs/legacy_ard_ri"


def test_load_config_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("variant: legacy_ard_ri\ntotal_timesteps: 100\nlearning_rate: -1\n")
    with pytest.raises(ConfigError, match="learning_rate"):
        load_train_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_train_config(tmp_path / "missing.yaml")


# --- the smoke run --------------------------------------------------------------------------------

SMOKE = {"variant": "legacy_ard_ri", "total_timesteps": 384, "seed": 3, "selfplay_games": 2,
         "snapshot_games": 2, "greedy_games": 2, "random_games": 2, "n_steps": 32, "batch_size": 128,
         "n_epochs": 1, "channels": 8, "blocks": 1, "value_hidden": 16, "torch_threads": 1,
         "snapshot_every": 128, "eval_every": 256, "eval_games": 2, "final_eval_games": 4,
         "checkpoint_every": 256, "progress_bar": False, "max_turns": 40}


@pytest.mark.slow   # a training run
def test_smoke_train_save_reload_resume_evaluate(tmp_path):
    from sb3_contrib import MaskablePPO

    out = tmp_path / "run"
    summary = train(validate_train_config({**SMOKE, "output_dir": str(out)}), command="test")
    assert summary["timesteps"] >= 384
    for name in ("final.zip", "config.yaml", "command.txt", "eval.csv", "eval.json", "final_eval.json",
                 "learning_curve.png", "summary.json"):
        assert (out / name).exists(), name
    assert list((out / "tb").glob("events.out.tfevents.*"))
    ckpts = sorted((out / "checkpoints").glob("step_*.zip"))
    assert ckpts and all(c.with_suffix(".pool.pt").exists() for c in ckpts)
    final = json.loads((out / "final_eval.json").read_text())
    for opp in ("random", "greedy"):
        for side in ("attacker", "defender", "both"):
            r = final["results"][opp][side]
            assert r["games"] == (8 if side == "both" else 4)
            assert r["wins"] + r["draws"] + r["losses"] == r["games"]
            assert 0 <= r["win_low"] <= r["win_rate"] <= r["win_high"] <= 1

    # reload: the saved model acts legally through play_games, as an engine agent
    model = MaskablePPO.load(out / "final.zip", device="cpu")
    agent = NetAgent(model.policy, deterministic=True)
    res = play_games("legacy_ard_ri", agent, agent, 3, seed=0, max_turns=30)
    assert len(res) == 3
    # the project's policy agent loads it too, and picks the same moves as NetAgent
    pytest.importorskip("agents.ppo.policy")
    from agents import make_agent

    pol = make_agent(f"policy:{out / 'final.zip'}", seed=0)
    eng = engine_for(make_rules("legacy_ard_ri"))
    st = eng.initial_state(4)
    for _ in range(6):
        a = pol.act(eng, st)
        assert np.array_equal(a, agent.act(eng, st))
        eng.step(st, a)
    # the same weights as the trained policy
    ref = torch.load(ckpts[-1].with_suffix(".pool.pt"), weights_only=True)   # tensors and plain values only
    assert ref["pool"], "the snapshot pool is saved for resuming"

    # resume from the first checkpoint up to 640 steps
    summary2 = train(validate_train_config({**SMOKE, "output_dir": str(out), "total_timesteps": 640}),
                     resume=ckpts[0], command="test resume", final_eval=False)
    assert summary2["timesteps"] >= 640
    assert summary2["timesteps"] <= 640 + 10 * 32        # continued (one rollout = 10 envs x 32), not from 0
    again = MaskablePPO.load(out / "final.zip", device="cpu")
    assert again.num_timesteps == summary2["timesteps"]

    # evaluate (the function the training run uses)
    ev = evaluate_agent(NetAgent(again.policy), validate_train_config(dict(SMOKE)), games=2, seed=1,
                        opponents=["random"])
    assert ev["random"]["both"]["games"] == 4


@pytest.mark.slow   # a training run
def test_training_is_seeded(tmp_path):
    cfg = {**SMOKE, "total_timesteps": 128, "eval_every": 0, "checkpoint_every": 0, "snapshot_games": 0,
           "greedy_games": 0}
    a = train(validate_train_config({**cfg, "output_dir": str(tmp_path / "a")}), final_eval=False, command="t")
    b = train(validate_train_config({**cfg, "output_dir": str(tmp_path / "b")}), final_eval=False, command="t")
    from sb3_contrib import MaskablePPO

    pa = MaskablePPO.load(a["final"], device="cpu").policy.state_dict()
    pb = MaskablePPO.load(b["final"], device="cpu").policy.state_dict()
    assert all(torch.equal(pa[k], pb[k]) for k in pa)


def test_cli_train_reports_config_errors(tmp_path, capsys):
    from tafl_env.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("variant: legacy_ard_ri\ntotal_timesteps: 0\n")
    assert main(["train", "--config", str(bad)]) == 2
    assert "total_timesteps" in capsys.readouterr().err


@pytest.mark.slow   # a training run
def test_imitation_warm_start_learns_the_greedy_moves():
    from agents.ppo.imitation import imitate, imitation_data
    from sb3_contrib import MaskablePPO

    cfg = validate_train_config({**SMOKE, "imitation_games": 6, "imitation_epochs": 6, "batch_size": 64,
                                 "learning_rate": 3e-3})
    obs, mask, acts, val = data = imitation_data(cfg, 6, seed=0, batch=3)
    assert obs.shape[1:] == (7, 7, 14) and mask.shape == (len(acts), 1177)
    assert mask[np.arange(len(acts)), acts].all()          # every target is a legal move
    assert set(np.unique(np.sign(val))) <= {-1.0, 0.0, 1.0}
    venv = TaflSB3VecEnv("legacy_ard_ri", num_envs=2, seed=0)
    model = MaskablePPO(TaflBoardPolicy, venv, learning_rate=3e-3, n_steps=8, batch_size=8, seed=0,
                        policy_kwargs=board_policy_kwargs(channels=8, blocks=1))
    first = imitate(model, data, {**cfg, "imitation_epochs": 1}, seed=0)

    class Log:   # an SB3 logger's two methods: each epoch must land at its own step
        def __init__(self):
            self.rows, self.row = [], {}

        def record(self, key, value):
            self.row[key] = value

        def dump(self, step=0):
            self.rows.append((step, self.row))
            self.row = {}

    log = Log()
    later = imitate(model, data, cfg, seed=0, logger=log)
    assert later["policy_loss"] < first["policy_loss"]
    assert later["accuracy"] > first["accuracy"]
    assert [step for step, _ in log.rows] == [1, 2, 3, 4, 5, 6]
    assert [row["imitation/epoch"] for _, row in log.rows] == [1, 2, 3, 4, 5, 6]


def test_imitation_best_move_sets():
    """``imitation_target: best``: each position carries the greedy agent's whole set of best moves
    (its played move among them, all legal), and fitting the sets raises best-move accuracy."""
    from agents.greedy import GreedyAgent
    from agents.ppo.imitation import greedy_best, imitate, imitation_data
    from sb3_contrib import MaskablePPO
    from tafl_env import Game

    cfg = validate_train_config({**SMOKE, "imitation_games": 4, "imitation_epochs": 6, "batch_size": 64,
                                 "imitation_target": "best", "imitation_lr": 3e-3, "imitation_batch_size": 32})
    obs, mask, acts, val, best = data = imitation_data(cfg, 4, seed=0, batch=2)
    sets = np.unpackbits(best, axis=1, count=mask.shape[1]).astype(bool)
    assert sets[np.arange(len(acts)), acts].all()            # the played target is one of the best
    assert not (sets & ~mask).any()                           # and every best move is legal
    # the set is exactly the argmax of greedy's scores
    g = Game("legacy_ard_ri")
    greedy = GreedyAgent(seed=1)
    chosen, bits = greedy_best(greedy, g.engine, g.state)
    scores, _, action = greedy.score_moves(g.engine, g.state)
    expect = set(action[scores == scores.max()].tolist())
    got = set(np.flatnonzero(np.unpackbits(bits, axis=1, count=g.engine.num_actions)[0]).tolist())
    assert got == expect and int(chosen[0]) in expect
    venv = TaflSB3VecEnv("legacy_ard_ri", num_envs=2, seed=0)
    model = MaskablePPO(TaflBoardPolicy, venv, learning_rate=1e-4, n_steps=8, batch_size=8, seed=0,
                        policy_kwargs=board_policy_kwargs(channels=8, blocks=1))
    first = imitate(model, data, {**cfg, "imitation_epochs": 1}, seed=0)
    later = imitate(model, data, cfg, seed=0)
    assert later["best_accuracy"] > first["best_accuracy"] and later["policy_loss"] < first["policy_loss"]
    assert model.policy.optimizer.param_groups[0]["lr"] == pytest.approx(1e-4)   # PPO's rate restored


def test_greedy_attacker_group():
    cfg = validate_train_config({**BASE, "selfplay_games": 0, "snapshot_games": 1, "greedy_games": 0,
                                 "random_games": 0, "greedy_attacker_games": 2, "batch_size": 8, "n_steps": 8})
    venv, groups = make_train_env(cfg, seed=0)
    assert groups == ["snapshot", "greedy_attacker"] and venv.num_envs == 3
    with pytest.raises(ConfigError) as err:
        validate_train_config({**BASE, "imitation_target": "all"})
    assert err.value.field == "imitation_target"


def test_evaluations_start_from_paired_openings_of_the_shipped_suite():
    from agents import make_agent
    from agents.evaluation.openings import load_openings
    from agents.evaluation.learning_curve import evaluate_agent, paired_openings

    suite = load_openings("legacy_ard_ri")
    cfg = validate_train_config(dict(BASE))
    openings = paired_openings(cfg, len(suite) + 2)
    assert openings[:len(suite)] == suite and openings[-2:] == suite[:2]      # game i: opening i, cycled
    assert paired_openings(validate_train_config({**BASE, "options": {"king_armed": False}}), 4) is None
    assert paired_openings(validate_train_config({**BASE, "max_turns": 4}), 4) is None
    ev = evaluate_agent(make_agent("greedy", seed=0), cfg, 3, seed=1, opponents=["greedy"])
    assert ev["greedy"]["both"]["games"] == 6
    # what evaluate_agent plays: the same openings give two deterministic agents different games
    rules = make_rules("legacy_ard_ri")
    games = play_games(rules, make_agent("greedy", seed=0), make_agent("greedy", seed=0), 3, seed=1,
                       record=True, openings=openings[:3])
    assert len({tuple(g["moves"]) for g in games}) == 3
    assert [g["moves"][:len(o)] for g, o in zip(games, openings)] == openings[:3]
