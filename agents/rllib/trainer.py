"""``tafl train`` with ``backend: rllib``: RLlib PPO self-play from a config, on a local Ray or a cluster.

:func:`train_rllib` checks every input first (:func:`preflight`: the config, the output directory,
the checkpoint to resume from, the evaluation opponents, the Ray address), then joins the cluster
at ``address`` (or ``RAY_ADDRESS``) or starts a local Ray (``num_cpus``) and shuts it down at the
end (:mod:`agents.ray_session`), and trains:

- RLlib's PPO on its new API stack, one shared module ``main``
  (:class:`~agents.rllib.module.TaflMaskedRLModule`, the project's board network with action
  masking) for both sides, over :class:`~agents.rllib.env.TaflMultiAgentEnv` (the PettingZoo
  env; the league of self-play, frozen snapshots, greedy and random games set by the config's
  weights) on ``num_env_runners`` env runners × ``num_envs_per_env_runner`` games;
- snapshots of ``main`` added from a callback (:mod:`agents.rllib.league`);
- optionally a warm start first: behaviour cloning of the greedy agent
  (:mod:`agents.ppo.imitation`, the same as the SB3 trainer's), copied into ``main`` and the
  first snapshot;
- evaluations of ``main`` against the config's opponents with the project's harness
  (:func:`agents.evaluation.learning_curve.evaluate_agent`), checkpoints and a time limit.

Outputs, as the SB3 path writes them: ``config.yaml``, ``command.txt``, ``eval.csv``/``eval.json``,
``final_eval.json``, ``learning_curve.png``, ``summary.json``, TensorBoard events in ``tb/``
(``league/*`` win rates per episode kind and side, ``learner/*`` PPO losses, ``sampling/*``
throughput, ``eval/*``), ``checkpoints/step_T/`` (RLlib algorithm checkpoints, for ``--resume``)
and ``final/`` (the learner's module: the agent ``rllib:OUT/final``, or ``policy:OUT/final``).
Every checkpoint holds ``tafl_checkpoint.json`` (the rules, the network options, the trainer's
counters), read with ``json`` before anything is unpickled.

``total_timesteps`` counts env steps (RLlib's ``num_env_steps_sampled_lifetime``: every move of a
learner-controlled or snapshot side; the moves of a greedy or random opponent happen inside a step).
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

from ..evaluation.learning_curve import evaluate_agent, plot_learning_curve, write_evals
from ..model_rules import TAFL_CHECKPOINT, model_info, rules_mismatch
from ..ppo.checkpoints import TrainSetupError
from ..ppo.run import _check_opponents, _check_output_dir, _dump_config
from ..ray_session import check_address, ray_session, resolve_address
from ..train_fields import rules_of
from .agent import ModuleAgent
from .config import validate_rllib_config

__all__ = ["train_rllib", "preflight", "build_config", "format_summary"]

RESULT_FILES = ("final_eval.json", "summary.json")
FRESH_RUN_FILES = ("eval.json", "eval.csv", "learning_curve.png")
_KINDS = ("selfplay", "snapshot", "greedy", "random")


# --- checks before anything runs ----------------------------------------------------------------------

def check_rllib_resume(path: str | os.PathLike, rules) -> dict[str, Any]:
    """Check an RLlib checkpoint of a run before resuming from it (plain JSON only is read): a
    directory with ``tafl_checkpoint.json`` of this variant and rule options, and an RLlib
    algorithm checkpoint beside it. Returns the record, with ``path``."""
    p = Path(path)
    what = f"--resume {path}"
    if not p.exists():
        raise TrainSetupError("resume", f"{what}: no such directory")
    if not p.is_dir():
        raise TrainSetupError("resume", f"{what} is a file; give a checkpoint directory (OUT/checkpoints/step_T)")
    if not (p / TAFL_CHECKPOINT).is_file() or not (p / "rllib_checkpoint.json").is_file():
        ck = sorted((p / "checkpoints").glob("step_*")) if (p / "checkpoints").is_dir() else []
        hint = f", e.g. {ck[-1]}" if ck else ""
        raise TrainSetupError("resume", f"{what} is not an RLlib checkpoint of tafl train (no {TAFL_CHECKPOINT} "
                                        f"and rllib_checkpoint.json; give OUT/checkpoints/step_T{hint})")
    try:
        record = json.loads((p / TAFL_CHECKPOINT).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TrainSetupError("resume", f"{what}: cannot read {TAFL_CHECKPOINT}: {exc}") from None
    if not isinstance(record, dict) or not isinstance(record.get("trainer"), dict) \
            or not isinstance(record.get("modules"), list):
        raise TrainSetupError("resume", f"{what}: {TAFL_CHECKPOINT} is not an algorithm checkpoint's record "
                                        "(a final/ module cannot be resumed from; use checkpoints/step_T)")
    info = record.get("tafl_rules")
    if isinstance(info, dict):
        problem = rules_mismatch(info, rules)
        if problem:
            raise TrainSetupError("resume", f"{what} was trained on {problem}")
    return {**record, "path": p}


def preflight(cfg: Mapping[str, Any], resume=None, address: str | None = None) -> tuple[dict | None, str | None]:
    """Everything a run needs, checked before anything is written, started or trained: the output
    directory, the checkpoint to resume from, the evaluation opponents and the Ray address.
    Returns ``(resume record or None, address or None)``."""
    _check_output_dir(Path(cfg["output_dir"]))
    record = check_rllib_resume(resume, rules_of(cfg)) if resume is not None else None
    _check_opponents(cfg)
    address = resolve_address(address)
    if address is not None:
        check_address(address)
    return record, address


# --- the RLlib config -------------------------------------------------------------------------------

def _spaces(cfg: Mapping[str, Any]):
    from .env import TaflMultiAgentEnv

    probe = TaflMultiAgentEnv(env_config(cfg))
    return probe.observation_spaces["attacker"], probe.action_spaces["attacker"]


def env_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    opts = dict(cfg["options"])
    if cfg["max_turns"] is not None:
        opts["max_turns"] = cfg["max_turns"]
    return {"variant": cfg["variant"], "options": opts,
            "league": {k: float(cfg[f"{k}_weight"]) for k in _KINDS}}


def model_config(cfg: Mapping[str, Any]) -> dict[str, int]:
    return {"channels": int(cfg["channels"]), "blocks": int(cfg["blocks"]), "value_hidden": int(cfg["value_hidden"])}


def build_config(cfg: Mapping[str, Any], snapshots=("snapshot_0",)):
    """The ``PPOConfig`` of a validated config, with the modules ``main`` and ``snapshots``."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.tune.registry import register_env

    from .env import TaflMultiAgentEnv
    from .league import MAIN, LeagueCallback, LeagueMapping
    from .module import TaflMaskedRLModule

    register_env("tafl_multi_agent", lambda c: TaflMultiAgentEnv(c))
    obs_space, act_space = _spaces(cfg)

    def spec():
        return RLModuleSpec(module_class=TaflMaskedRLModule, observation_space=obs_space,
                            action_space=act_space, model_config=model_config(cfg))

    lr0, frac = float(cfg["learning_rate"]), float(cfg["lr_final_fraction"])
    lr = lr0 if frac == 1.0 else [[0, lr0], [int(cfg["total_timesteps"]), lr0 * frac]]
    modules = [MAIN, *snapshots]
    return (
        PPOConfig()
        .environment("tafl_multi_agent", env_config=env_config(cfg))
        .env_runners(num_env_runners=cfg["num_env_runners"], num_envs_per_env_runner=cfg["num_envs_per_env_runner"],
                     num_cpus_per_env_runner=1, rollout_fragment_length="auto", sample_timeout_s=600)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=cfg["train_batch_size"], minibatch_size=cfg["minibatch_size"],
                  num_epochs=cfg["num_epochs"], lr=lr, gamma=cfg["gamma"], lambda_=cfg["gae_lambda"],
                  clip_param=cfg["clip_range"], entropy_coeff=cfg["ent_coef"], vf_loss_coeff=cfg["vf_coef"],
                  grad_clip=cfg["max_grad_norm"], grad_clip_by="global_norm",
                  use_kl_loss=cfg["kl_coeff"] > 0, kl_coeff=cfg["kl_coeff"])
        .multi_agent(policies=set(modules), policy_mapping_fn=LeagueMapping(list(snapshots)),
                     policies_to_train=[MAIN])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={m: spec() for m in modules}))
        .callbacks(functools.partial(LeagueCallback, pool_size=cfg["pool_size"],
                                     snapshot_every=cfg["snapshot_every"]))
        .debugging(seed=cfg["seed"], log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=200)
    )


def local_module(cfg: Mapping[str, Any]):
    """A :class:`~agents.rllib.module.TaflMaskedRLModule` of the config, in this process."""
    from .module import TaflMaskedRLModule

    obs_space, act_space = _spaces(cfg)
    return TaflMaskedRLModule(observation_space=obs_space, action_space=act_space, model_config=model_config(cfg))


def _main_state(algo) -> dict:
    return algo.learner_group.get_state(components="learner/rl_module/main")["learner"]["rl_module"]["main"]


# --- the warm start -----------------------------------------------------------------------------------

class _ImitationPolicy:
    """The part of an SB3 policy that :func:`agents.ppo.imitation.imitate` uses, over the module."""

    pi_features_extractor = None

    def __init__(self, module, lr: float):
        import torch

        self.module = module
        self.mlp_extractor = module.heads
        self.optimizer = torch.optim.Adam(module.parameters(), lr=lr)

    def extract_features(self, obs, _extractor=None):
        return self.module.trunk(obs)

    def value_net(self, latent):
        return self.module.value_out(latent)

    def set_training_mode(self, mode: bool) -> None:
        self.module.train(mode)

    def parameters(self):
        return self.module.parameters()


def warm_start(cfg: Mapping[str, Any], module, progress: bool) -> dict[str, Any]:
    """Behaviour cloning of the greedy agent into ``module`` (the SB3 trainer's warm start)."""
    from ..ppo.imitation import imitate, imitation_data

    t0 = time.time()
    data = imitation_data(cfg, cfg["imitation_games"], seed=cfg["seed"] + 101, progress=progress)
    fit_cfg = {**cfg, "batch_size": cfg["minibatch_size"]}
    policy = _ImitationPolicy(module, float(cfg["imitation_lr"] or cfg["learning_rate"]))
    stats = imitate(SimpleNamespace(policy=policy), data, fit_cfg, seed=cfg["seed"] + 103, progress=progress)
    stats.update(positions=int(len(data[2])), minutes=round((time.time() - t0) / 60, 2))
    return stats


# --- outputs -----------------------------------------------------------------------------------------

def _record(cfg, trainer: Mapping[str, Any], modules=None) -> dict[str, Any]:
    rec = {"format": "tafl rllib checkpoint v0", "tafl_rules": model_info(rules_of(cfg)),
           "variant": cfg["variant"], "model_config": model_config(cfg), "trainer": dict(trainer)}
    if modules is not None:
        rec["modules"] = list(modules)
    return rec


def _scalars(prefix: str, d: Mapping[str, Any], out: dict[str, float]) -> None:
    import numbers

    for k, v in d.items():
        if isinstance(v, Mapping):
            _scalars(f"{prefix}{k}/", v, out)
        elif isinstance(v, numbers.Real) and not isinstance(v, bool):
            out[f"{prefix}{k}"] = float(v)


def _log_iteration(writer, result: Mapping[str, Any], step: int) -> dict[str, float]:
    """TensorBoard scalars of one training iteration; returns the league win rates."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS

    env = result.get(ENV_RUNNER_RESULTS, {})
    league = {k: float(v) for k, v in env.items() if k.startswith("league/") and not isinstance(v, Mapping)}
    for k, v in league.items():
        writer.add_scalar(k, v, step)
    learner: dict[str, float] = {}
    _scalars("learner/", result.get(LEARNER_RESULTS, {}).get("main", {}), learner)
    for k in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss", "vf_explained_var", "total_loss",
              "default_optimizer_learning_rate"):
        if f"learner/{k}" in learner:
            writer.add_scalar(f"learner/{k}", learner[f"learner/{k}"], step)
    for k in ("num_env_steps_sampled_lifetime_throughput", "episode_len_mean", "num_episodes_lifetime"):
        v = env.get(k)
        if isinstance(v, (int, float)):
            writer.add_scalar(f"sampling/{k}", float(v), step)
    pool = result.get("league", {}).get("pool")
    if pool is not None:
        writer.add_scalar("league/pool", pool, step)
    return league


# --- the run -----------------------------------------------------------------------------------------

def train_rllib(config: Mapping[str, Any], *, out_dir=None, total_timesteps: int | None = None,
                resume=None, seed: int | None = None, progress: bool | None = None, final_eval: bool = True,
                command: str | None = None, address: str | None = None,
                max_minutes: float | None = None) -> dict[str, Any]:
    """Train from a validated ``backend: rllib`` config; returns a summary dict (module docstring).

    ``out_dir``, ``total_timesteps``, ``seed``, ``max_minutes`` override the config; ``resume`` is
    a checkpoint directory ``OUT/checkpoints/step_T``; ``address`` a Ray cluster to join (else
    ``RAY_ADDRESS``, else a local Ray of ``num_cpus`` CPUs). Bad inputs raise a one-line
    :class:`~agents.ppo.checkpoints.TrainSetupError` (or
    :class:`~agents.ray_session.RayAddressError`) before anything is written or started.
    """
    cfg = dict(config)
    for key, value in (("total_timesteps", total_timesteps), ("seed", seed), ("output_dir", out_dir),
                       ("max_minutes", max_minutes)):
        if value is not None:
            cfg[key] = str(value) if key == "output_dir" else value
    cfg = validate_rllib_config(cfg)
    if progress is None:
        progress = cfg["progress_bar"]
    out = Path(cfg["output_dir"])
    record, address = preflight(cfg, resume, address)    # nothing written or started before this passes

    import torch

    torch.set_num_threads(cfg["torch_threads"])
    t_start = time.time()
    fresh = record is None
    trainer: dict[str, Any] = dict(record["trainer"]) if record else {}
    # the warm start runs before Ray starts (its time counts towards max_minutes)
    imitation = None
    warm = None
    if fresh and cfg["imitation_games"]:
        warm = local_module(cfg)
        imitation = warm_start(cfg, warm, progress)

    with ray_session(address, cfg["num_cpus"]) as session:
        from torch.utils.tensorboard import SummaryWriter
        from tqdm.auto import tqdm

        from .league import MAIN, env_steps, snapshot_ids_of

        snapshots = snapshot_ids_of(record["modules"]) if record else ["snapshot_0"]
        algo = build_config(cfg, snapshots=snapshots or ["snapshot_0"]).build_algo()
        try:
            if record is not None:
                try:
                    algo.restore_from_path(str(record["path"].resolve()))
                except Exception as exc:
                    text = " ".join(str(exc).split())[:300] or type(exc).__name__
                    raise TrainSetupError("resume", f"--resume {record['path']}: cannot restore: {text}") from None
                algo._tafl_snapshots_taken = int(trainer.get("snapshots_taken", 0))
            elif warm is not None:
                state = warm.get_state()
                algo.set_state({"learner_group": {"learner": {"rl_module": {MAIN: state, "snapshot_0": state}}}})
            else:   # the pool starts with the initial network
                algo.set_state({"learner_group": {"learner": {"rl_module": {"snapshot_0": _main_state(algo)}}}})

            # from here on the output directory is written
            out.mkdir(parents=True, exist_ok=True)
            for name in RESULT_FILES + (FRESH_RUN_FILES if fresh else ()):
                (out / name).unlink(missing_ok=True)
            if fresh:
                for events in (out / "tb").glob("events.out.tfevents.*"):
                    events.unlink()
            _dump_config(cfg, out / "config.yaml")
            cmd = command or " ".join(shlex.quote(a) for a in sys.argv)
            with open(out / "command.txt", "a") as fh:
                fh.write(cmd + "\n")
            writer = SummaryWriter(str(out / "tb"))
            if imitation is not None:
                for k, v in imitation.items():
                    writer.add_scalar(f"imitation/{k}", float(v), 0)

            steps = int(trainer.get("timesteps", 0))
            offset = 0        # env steps of the resumed run when RLlib's counter starts again at 0
            minutes0 = float(trainer.get("minutes", (time.time() - t_start) / 60))
            t0 = time.time()
            evals = []
            if not fresh and (out / "eval.json").exists():
                evals = [e for e in json.loads((out / "eval.json").read_text()) if e["timesteps"] <= steps]
            next_eval = int(trainer.get("next_eval", cfg["eval_every"] or 0))
            next_ckpt = int(trainer.get("next_ckpt", cfg["checkpoint_every"] or 0))
            evaluator = local_module(cfg)
            agent = ModuleAgent(evaluator, deterministic=cfg["eval_deterministic"], seed=cfg["seed"] + 17)
            stopped = "total_timesteps reached"
            league: dict[str, float] = {}
            iterations = 0
            throughput = []

            def minutes() -> float:
                return minutes0 + (time.time() - t0) / 60

            def evaluate(games: int, final: bool = False) -> dict:
                evaluator.set_state(_main_state(algo))
                evaluator.eval()
                ev = evaluate_agent(agent, cfg, games, seed=cfg["seed"] + 7919 * (len(evals) + 1),
                                    progress=progress, desc="final evaluation" if final else "evaluation",
                                    leave=final)
                rec = {"timesteps": steps, "minutes": round(minutes(), 2), "final": final, "results": ev}
                for opp, sides in ev.items():
                    for side, r in sides.items():
                        writer.add_scalar(f"eval/{opp}_{side}_win_rate", r["win_rate"], steps)
                if not final:
                    evals.append(rec)
                    write_evals(out, evals)
                return rec

            def checkpoint() -> Path:
                path = out / "checkpoints" / f"step_{steps}"
                if path.exists():
                    shutil.rmtree(path)
                algo.save_to_path(str(path.resolve()))
                state = {"timesteps": steps, "minutes": round(minutes(), 3), "next_eval": next_eval,
                         "next_ckpt": next_ckpt,
                         "snapshots_taken": int(getattr(algo, "_tafl_snapshots_taken", 0))}
                mods = [MAIN, *snapshot_ids_of(algo.config.policies)]
                (path / TAFL_CHECKPOINT).write_text(json.dumps(_record(cfg, state, mods), indent=1))
                return path

            bar = tqdm(total=cfg["total_timesteps"], initial=min(steps, cfg["total_timesteps"]), desc="RLlib PPO",
                       unit="step", disable=not progress, dynamic_ncols=True, mininterval=1.0)
            try:
                while steps < cfg["total_timesteps"]:
                    if cfg["max_minutes"] is not None and minutes() >= cfg["max_minutes"]:
                        stopped = f"max_minutes ({cfg['max_minutes']}) reached"
                        break
                    ti = time.time()
                    result = algo.train()
                    iterations += 1
                    now = env_steps(result)
                    if iterations == 1 and not fresh and now < steps:
                        offset = steps            # a restored algorithm that counts afresh
                    new = now + offset
                    throughput.append((new - steps) / max(time.time() - ti, 1e-9))
                    bar.update(max(0, min(new, cfg["total_timesteps"]) - min(steps, cfg["total_timesteps"])))
                    steps = new
                    league = _log_iteration(writer, result, steps)
                    writer.add_scalar("time/minutes", minutes(), steps)
                    bar.set_postfix_str(", ".join(f"{k[7:]} {v:.2f}" for k, v in league.items()
                                                  if k.endswith("_win") and "selfplay" not in k)[:120])
                    if cfg["eval_every"] and steps >= next_eval and steps < cfg["total_timesteps"]:
                        evaluate(cfg["eval_games"])
                        while next_eval <= steps:
                            next_eval += cfg["eval_every"]
                    if cfg["checkpoint_every"] and steps >= next_ckpt:
                        while next_ckpt <= steps:
                            next_ckpt += cfg["checkpoint_every"]
                        checkpoint()
            finally:
                bar.close()
            last_ckpt = checkpoint()
            # the final module: the agent rllib:OUT/final (policy:OUT/final)
            final_dir = out / "final"
            if final_dir.exists():
                shutil.rmtree(final_dir)
            evaluator.set_state(_main_state(algo))
            evaluator.save_to_path(str(final_dir.resolve()))
            (final_dir / TAFL_CHECKPOINT).write_text(json.dumps(
                _record(cfg, {"timesteps": steps, "minutes": round(minutes(), 3)}), indent=1))
            summary: dict[str, Any] = {
                "variant": cfg["variant"], "backend": "rllib", "seed": cfg["seed"], "timesteps": steps,
                "minutes": round(minutes(), 2), "stopped": stopped, "iterations": iterations,
                "parameters": int(sum(p.numel() for p in evaluator.parameters())),
                "final": str(final_dir), "checkpoint": str(last_ckpt), "out": str(out),
                "ray": {"address": session["address"], "cpus": session["cpus"],
                        "num_env_runners": cfg["num_env_runners"],
                        "num_envs_per_env_runner": cfg["num_envs_per_env_runner"]},
                "steps_per_second": round(sum(throughput[1:]) / max(len(throughput) - 1, 1), 1)
                if len(throughput) > 1 else (round(throughput[0], 1) if throughput else None),
                "league": {k: round(v, 3) for k, v in league.items()}}
            if imitation is not None:
                summary["imitation"] = imitation
            if final_eval:
                rec = evaluate(cfg["final_eval_games"], final=True)
                (out / "final_eval.json").write_text(json.dumps(rec, indent=1))
                summary["final_eval"] = {o: {s: {"win_rate": r["win_rate"], "low": r["win_low"], "high": r["win_high"]}
                                             for s, r in sides.items()} for o, sides in rec["results"].items()}
            if evals:
                plot_learning_curve(out / "eval.csv", out / "learning_curve.png",
                                    title=f"{cfg['variant']}: RLlib PPO self-play league (seed {cfg['seed']})")
            (out / "summary.json").write_text(json.dumps(summary, indent=1))
            writer.close()
        finally:
            algo.stop()
    return summary


def format_summary(summary: Mapping[str, Any]) -> str:
    """The summary of :func:`train_rllib` in a few lines (the ``tafl train`` report)."""
    from ..ppo.run import format_summary as sb3_summary

    text = sb3_summary(summary)
    return text + (f"\n  sampling + learning: {summary['steps_per_second']} env steps/s on "
                   f"{summary['ray']['num_env_runners']} env runner(s)" if summary.get("steps_per_second") else "")
