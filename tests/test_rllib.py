"""Scale-out on Ray: the RLlib env adapter, the masking module, ``tafl train`` with
``backend: rllib`` (2 iterations on a local Ray of 2 CPUs, a checkpoint, a resume, and the
checkpoint played through ``rllib:``), ``tafl eval --ray`` against the local run, and
the bad inputs that must stop a command before any work.

One local Ray serves the whole module (the ``ray_local`` fixture); the runs are tiny (batches of
a few hundred steps, a 4-channel network) so that the module stays well under a minute of CI.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow   # Ray and RLlib: the slow tier (pytest -m slow)

pytest.importorskip("ray.rllib")
yaml = pytest.importorskip("yaml")

from agents import make_agent  # noqa: E402
from agents.base import AgentSpecError  # noqa: E402
from agents.schema import ConfigError  # noqa: E402
from agents.evaluation.play import play_games  # noqa: E402
from agents.rllib.config import validate_rllib_config  # noqa: E402
from agents.rllib.env import TaflMultiAgentEnv  # noqa: E402
from agents.rllib.league import LeagueMapping  # noqa: E402
from agents.ppo.checkpoints import TrainSetupError  # noqa: E402
from agents.ray_session import RayAddressError, check_address  # noqa: E402
from tafl_env import make_rules  # noqa: E402
from tafl_env.game import engine_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

SMALL = {"backend": "rllib", "variant": "legacy_ard_ri", "total_timesteps": 400, "seed": 3,
         "train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1, "num_env_runners": 1,
         "num_envs_per_env_runner": 2, "num_cpus": 2, "channels": 4, "blocks": 1, "value_hidden": 8,
         "torch_threads": 1, "snapshot_every": 200, "pool_size": 2, "selfplay_weight": 1, "snapshot_weight": 1,
         "greedy_weight": 1, "random_weight": 1, "max_turns": 40, "eval_every": 200, "eval_games": 1,
         "final_eval_games": 2, "checkpoint_every": 0, "imitation_games": 2, "imitation_epochs": 1,
         "progress_bar": False}


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray (2 CPUs) for the module; the commands use it as it is and leave it running."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def trained(ray_local, tmp_path_factory):
    """Two iterations of RLlib PPO (200 env steps each) with the warm start, written to a folder."""
    from agents.rllib.trainer import train_rllib

    out = tmp_path_factory.mktemp("rllib") / "run"
    summary = train_rllib(validate_rllib_config({**SMALL, "output_dir": str(out)}), command="test")
    return {"out": out, "summary": summary}


def _tafl(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    e.pop("RAY_ADDRESS", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "tafl_env", *args], cwd=cwd, env=e, capture_output=True,
                          text=True, timeout=180)


# --- the env adapter -----------------------------------------------------------------------------------

def _random_episode(env, rng, seed=None):
    obs, infos = env.reset(seed=seed)
    movers = []
    while True:
        (agent, o), = obs.items()
        assert o["action_mask"].any()
        movers.append(agent)
        obs, rew, term, trunc, infos = env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
        if term["__all__"] or trunc["__all__"]:
            return movers, obs, rew, infos


@pytest.mark.parametrize("kind", ["selfplay", "snapshot", "greedy", "random"])
def test_env_plays_every_league_kind_to_the_end(kind):
    env = TaflMultiAgentEnv({"variant": "legacy_ard_ri", "options": {"max_turns": 40}, "league": {kind: 1}})
    rng = np.random.default_rng(0)
    for episode in range(3):
        movers, obs, rew, infos = _random_episode(env, rng, seed=episode)
        assert env.kind == kind
        expected = {"selfplay": {"attacker", "defender"}}.get(kind, set(movers) - {"snapshot"})
        assert set(movers) - {"snapshot"} == expected and len(expected) in (1, 2)
        assert ("snapshot" in movers) == (kind == "snapshot")
        assert set(rew) == set(obs) == set(movers) and all(not o["action_mask"].any() for o in obs.values())
        result = next(iter(infos.values()))["result"]
        for agent, r in rew.items():
            side = infos[agent]["side"]
            assert r == (0.0 if result == "draw" else 1.0 if result == side else -1.0)


def test_env_berserk_chain_gives_the_same_agent_the_next_move():
    env = TaflMultiAgentEnv({"variant": "legacy_berserk", "options": {"max_turns": 200}})
    rng = np.random.default_rng(1)
    repeats = 0
    for episode in range(12):
        movers, *_ = _random_episode(env, rng, seed=episode)
        repeats += sum(a == b for a, b in zip(movers, movers[1:]))
    assert repeats > 0      # chains happened, and the env handed the chain's mover its next move


def test_env_passes_rllibs_pre_check_and_an_illegal_action_loses():
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    env = TaflMultiAgentEnv({"variant": "legacy_ard_ri"})
    check_multiagent_environments(env)      # plays an unmasked random action
    obs, _ = env.reset(seed=0)
    (agent, o), = obs.items()
    illegal = int(np.flatnonzero(o["action_mask"] == 0)[0])
    obs, rew, term, trunc, infos = env.step({agent: illegal})
    assert term["__all__"] and rew[agent] == -1.0 and infos[agent]["reason"] == "illegal_action"
    assert env.agents == env.possible_agents == ["attacker", "defender", "snapshot"]


def test_league_mapping_is_consistent_per_episode():
    class Episode:
        def __init__(self, id_):
            self.id_ = id_

    m = LeagueMapping(["snapshot_0", "snapshot_1", "snapshot_2"])
    assert m("attacker", Episode("a")) == m("defender", Episode("a")) == "main"
    picks = {m("snapshot", Episode(f"e{k}")) for k in range(50)}
    assert picks == {"snapshot_0", "snapshot_1", "snapshot_2"}
    assert m("snapshot", Episode("x")) == m("snapshot", Episode("x"))


def test_module_masks_illegal_moves():
    from agents.rllib.module import TaflMaskedRLModule

    env = TaflMultiAgentEnv({"variant": "historical_tablut"})
    module = TaflMaskedRLModule(observation_space=env.observation_spaces["attacker"],
                                action_space=env.action_spaces["attacker"], model_config={"channels": 4, "blocks": 1})
    obs, _ = env.reset(seed=0)
    (_, o), = obs.items()
    logits = module.masked_logits(o["observation"][None], o["action_mask"][None])
    legal = o["action_mask"].astype(bool)
    assert np.isfinite(logits[0, legal]).all() and (logits[0, ~legal] < -1e30).all()


# --- training, checkpoints, the agent ---------------------------------------------------------------

def test_two_iterations_write_the_sb3_outputs(trained):
    out, summary = trained["out"], trained["summary"]
    assert summary["iterations"] == 2 and summary["timesteps"] >= 400 and summary["backend"] == "rllib"
    for name in ("eval.csv", "eval.json", "final_eval.json", "learning_curve.png", "command.txt",
                 "config.yaml", "summary.json"):
        assert (out / name).is_file(), name
    assert list((out / "tb").glob("events.out.tfevents.*"))
    assert yaml.safe_load((out / "config.yaml").read_text())["backend"] == "rllib"
    assert set(json.loads((out / "final_eval.json").read_text())["results"]) == {"random", "greedy"}
    ckpt = Path(summary["checkpoint"])
    assert (ckpt / "tafl_checkpoint.json").is_file() and (ckpt / "rllib_checkpoint.json").is_file()
    assert json.loads((ckpt / "tafl_checkpoint.json").read_text())["modules"][:2] == ["main", "snapshot_0"]


@pytest.mark.parametrize("spec", ["rllib:{out}/final", "rllib:{ckpt}", "rllib:{out}"])
def test_checkpoint_is_an_agent_that_plays_only_legal_moves(trained, spec):
    out, ckpt = trained["out"], trained["summary"]["checkpoint"]
    agent = make_agent(spec.format(out=out, ckpt=ckpt), seed=0)
    rules = make_rules("legacy_ard_ri", max_turns=30)
    assert agent.check_rules(rules) is None
    eng = engine_for(rules)
    state = eng.initial_state(4)
    for _ in range(20):
        actions = agent.act(eng, state)
        assert eng.check_legal(state, actions).all()
        eng.step(state, actions)
    results = play_games(rules, agent, make_agent("random", seed=1), 4, seed=2)
    assert len(results) == 4


def test_checkpoint_agent_from_a_relative_path(trained, monkeypatch):
    monkeypatch.chdir(trained["out"].parent)
    agent = make_agent(f"rllib:{trained['out'].name}/final", seed=0)
    assert agent.check_rules(make_rules("legacy_ard_ri")) is None


def test_policy_never_loads_an_rllib_checkpoint(trained):
    """policy: unpickles nothing, so it names rllib: for a checkpoint whose loading unpickles."""
    with pytest.raises(AgentSpecError, match="is an RLlib checkpoint.*play it as rllib:"):
        make_agent(f"policy:{trained['out']}/final")


def test_checkpoint_agent_refuses_another_variant(trained):
    agent = make_agent(f"rllib:{trained['out']}/final")
    with pytest.raises(AgentSpecError, match="7x7 board; historical_tablut is 9x9"):
        agent.check_rules(make_rules("historical_tablut"))
    with pytest.raises(AgentSpecError, match="was trained on legacy_ard_ri with repetition"):
        agent.check_rules(make_rules("legacy_ard_ri", repetition="draw"))


def test_resume_continues_from_the_checkpoint(trained, tmp_path):
    from agents.rllib.trainer import train_rllib

    ckpt = trained["summary"]["checkpoint"]
    out = tmp_path / "resumed"
    cfg = validate_rllib_config({**SMALL, "output_dir": str(out), "total_timesteps": 600, "eval_every": 0})
    summary = train_rllib(cfg, resume=ckpt, final_eval=False, command="test")
    assert summary["iterations"] == 1 and summary["timesteps"] >= 600
    assert not (out / "final_eval.json").exists() and (out / "final" / "tafl_checkpoint.json").is_file()


# --- tafl eval --ray ---------------------------------------------------------------------------------

def test_eval_on_ray_equals_the_local_run(ray_local, tmp_path):
    """``tafl eval --ray`` plays the same chunks through the chunk runner as Ray tasks: the same games."""
    import contextlib
    import io

    from agents.evaluation.tournament import run_tournament, validate_tournament_config
    from tafl_env.cli import main

    raw = {"variant": "legacy_ard_ri", "games_per_pair": 8, "seed": 4, "max_turns": 40, "batch_size": 2,
           "bootstrap": 0, "records": True, "agents": {"random": "random", "greedy": "greedy"}}
    local = run_tournament(validate_tournament_config(raw), out_dir=tmp_path / "local", progress=False)
    config = tmp_path / "t.yaml"
    config.write_text(json.dumps(raw))    # JSON is YAML
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["eval", "--config", str(config), "--ray", "--out", str(tmp_path / "ray"), "--no-progress"])
    assert code == 0 and "games played as Ray tasks" in out.getvalue()
    remote = json.loads((tmp_path / "ray" / "results.json").read_text())
    assert remote["ray"]["address"] and [leg["chunks"] for leg in remote["legs"]] == [2, 2]
    assert remote["games"] == local["games"]
    assert remote["pairings"] == local["pairings"] and remote["ratings"] == local["ratings"]
    assert (tmp_path / "ray" / "games.csv").read_text() == (tmp_path / "local" / "games.csv").read_text()
    records = lambda d: {p.name: [line for line in p.read_text().splitlines() if not line.startswith("# replay:")]
                         for p in (d / "records").iterdir()}      # all but the replay line, which names the file
    assert records(tmp_path / "ray") == records(tmp_path / "local")


# --- bad input, before any work ---------------------------------------------------------------------------

@pytest.mark.parametrize("change,words", [
    ({"minibatch_size": 500}, "field 'minibatch_size': 500 is larger than train_batch_size (200)"),
    ({"num_env_runners": -1}, "field 'num_env_runners': must be >= 0"),
    ({"selfplay_weight": 0, "snapshot_weight": 0, "greedy_weight": 0, "random_weight": 0}, "the league is empty"),
    ({"n_steps": 64}, "field 'n_steps': unknown field"),
    ({"backend": "tune"}, "must be 'rllib'"),
])
def test_config_errors_name_the_field(change, words):
    with pytest.raises(ConfigError) as info:
        validate_rllib_config({**SMALL, **change})
    assert words in str(info.value)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_address_checks():
    with pytest.raises(RayAddressError, match="expected HOST:PORT"):
        check_address("nohost")
    with pytest.raises(RayAddressError, match="nothing answers there"):
        check_address(f"127.0.0.1:{_closed_port()}")
    assert check_address("auto") == "auto"


@pytest.mark.parametrize("extra,words", [
    (["--address", "127.0.0.1:{port}"], "nothing answers there"),
    (["--resume", "{tmp}/nosuch"], "--resume {tmp}/nosuch: no such directory"),
    (["--resume", "{tmp}"], "is not an RLlib checkpoint of tafl train"),
])
def test_train_command_stops_before_any_work(tmp_path, extra, words):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**SMALL, "output_dir": str(tmp_path / "out")}))
    fill = {"port": _closed_port(), "tmp": tmp_path}
    proc = _tafl("train", "--config", str(cfg), *[a.format(**fill) for a in extra], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert words.format(**fill) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_eval_command_refuses_a_bad_ray_address(tmp_path):
    cfg = tmp_path / "t.yaml"
    cfg.write_text(yaml.safe_dump({"variant": "legacy_ard_ri", "games_per_pair": 2,
                                   "agents": {"a": "random", "b": "greedy"}}))
    proc = _tafl("eval", "--config", str(cfg), "--out", str(tmp_path / "out"), "--ray", "localhost:0x", cwd=tmp_path)
    assert proc.returncode == 2 and "the port must be a number" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_checkpoint_agent_errors(tmp_path):
    with pytest.raises(AgentSpecError, match="no such directory"):
        make_agent(f"rllib:{tmp_path}/nosuch")
    (tmp_path / "f").write_text("x")
    with pytest.raises(AgentSpecError, match="is a file"):
        make_agent(f"rllib:{tmp_path}/f")
    with pytest.raises(AgentSpecError, match="holds no RLlib module"):
        make_agent(f"rllib:{tmp_path}")


def test_resume_of_another_variant_is_refused(trained):
    from agents.rllib.trainer import check_rllib_resume

    with pytest.raises(TrainSetupError, match="was trained on legacy_ard_ri; this game is historical_tablut"):
        check_rllib_resume(trained["summary"]["checkpoint"], make_rules("historical_tablut"))


def test_shipped_configs_one_per_variant_validate():
    from agents.schema import read_yaml_config
    from tafl_env import VARIANTS

    paths = sorted((ROOT / "configs" / "rllib").glob("*.yaml"))
    configs = {p.stem: validate_rllib_config(read_yaml_config(p), source=str(p)) for p in paths}
    assert set(configs) == set(VARIANTS) and all(c["variant"] == k for k, c in configs.items())
    assert all(c["backend"] == "rllib" for c in configs.values())
