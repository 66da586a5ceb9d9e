"""The run: :func:`train` (set up, warm start, PPO, final evaluation, outputs) and :func:`format_summary`."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from .callback import make_callback
from .config import validate_train_config
from .evaluation import plot_learning_curve
from .imitation import imitate, imitation_data
from .league import FrozenOpponent, make_train_env, state_dict_copy

__all__ = ["train", "format_summary"]


def _dump_config(cfg: Mapping[str, Any], path: Path) -> None:
    import yaml

    path.write_text(yaml.safe_dump(dict(cfg), sort_keys=False))


def train(config: Mapping[str, Any], *, out_dir: str | os.PathLike | None = None,
          total_timesteps: int | None = None, resume: str | os.PathLike | None = None,
          seed: int | None = None, progress: bool | None = None, final_eval: bool = True,
          command: str | None = None) -> dict[str, Any]:
    """Train from a validated config (:func:`load_train_config`); returns a summary dict.

    ``total_timesteps``, ``seed``, ``out_dir`` override the config; ``resume`` is a checkpoint
    zip written by an earlier run (its ``.pool.pt`` beside it is read when present).
    """
    import torch as th
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure

    from ..networks import TaflBoardPolicy, board_policy_kwargs, count_parameters

    cfg = dict(config)
    if total_timesteps is not None:
        cfg["total_timesteps"] = int(total_timesteps)
    if seed is not None:
        cfg["seed"] = int(seed)
    if out_dir is not None:
        cfg["output_dir"] = str(out_dir)
    cfg = validate_train_config(cfg)
    if progress is None:
        progress = cfg["progress_bar"]
    out = Path(cfg["output_dir"])
    out.mkdir(parents=True, exist_ok=True)
    _dump_config(cfg, out / "config.yaml")
    cmd = command or " ".join(shlex.quote(a) for a in sys.argv)
    with open(out / "command.txt", "a") as fh:
        fh.write(cmd + "\n")
    th.set_num_threads(cfg["torch_threads"])

    venv, groups = make_train_env(cfg, seed=cfg["seed"])
    lr0, frac = float(cfg["learning_rate"]), float(cfg["lr_final_fraction"])

    def lr_schedule(progress_remaining: float) -> float:
        return lr0 * (frac + (1.0 - frac) * progress_remaining)

    state: dict[str, Any] = {"evals": []}
    pool: list = []
    if resume is not None:
        resume = Path(resume)
        model = MaskablePPO.load(resume, env=venv, device="cpu")
        model.learning_rate = lr_schedule
        model.lr_schedule = lr_schedule
        side = resume.with_suffix(".pool.pt")
        if side.exists():
            saved = th.load(side, weights_only=False)
            pool.extend(saved["pool"])
            state.update(saved["trainer"])
        if (out / "eval.json").exists():
            state["evals"] = [e for e in json.loads((out / "eval.json").read_text())
                              if e["timesteps"] <= model.num_timesteps]
        reset = False
    else:
        model = MaskablePPO(
            TaflBoardPolicy, venv, learning_rate=lr_schedule, n_steps=cfg["n_steps"],
            batch_size=cfg["batch_size"], n_epochs=cfg["n_epochs"], gamma=cfg["gamma"],
            gae_lambda=cfg["gae_lambda"], clip_range=cfg["clip_range"], ent_coef=cfg["ent_coef"],
            vf_coef=cfg["vf_coef"], max_grad_norm=cfg["max_grad_norm"], target_kl=cfg["target_kl"],
            policy_kwargs=board_policy_kwargs(cfg["channels"], cfg["blocks"], cfg["value_hidden"]),
            seed=cfg["seed"], device="cpu", verbose=0)
        reset = True
    state.pop("stopped", None)
    if not pool:
        pool.append(state_dict_copy(model.policy))
    frozen = FrozenOpponent(model.policy, seed=cfg["seed"] + 31)
    if "snapshot" in groups:
        venv.parts[groups.index("snapshot")].set_opponent(frozen)
    try:
        import tensorboard  # noqa: F401  (SB3's TensorBoard writer needs it)
        formats = ["tensorboard", "csv"]
    except ImportError:  # pragma: no cover - tensorboard is in the train extra
        formats = ["csv"]
    model.set_logger(configure(str(out / "tb"), formats))
    imitation = None
    if reset and cfg["imitation_games"]:
        ti = time.time()
        data = imitation_data(cfg, cfg["imitation_games"], seed=cfg["seed"] + 101)
        imitation = imitate(model, data, cfg, seed=cfg["seed"] + 103, logger=model.logger)
        imitation.update(positions=int(len(data[2])), minutes=round((time.time() - ti) / 60, 2))
        state["minutes"] = (time.time() - ti) / 60     # counts towards max_minutes
        del data
        pool[:] = [state_dict_copy(model.policy)]
    callback = make_callback(cfg, out, venv, groups, pool, frozen, state, progress)
    t0 = time.time()
    remaining = cfg["total_timesteps"] - (0 if reset else model.num_timesteps)
    if remaining > 0:
        model.learn(total_timesteps=remaining, callback=callback, reset_num_timesteps=reset)
    else:  # nothing left to train: still let the callback set itself up for the final evaluation
        callback.init_callback(model)
        callback.on_training_start(locals(), globals())
        callback.on_training_end()
    seconds = time.time() - t0
    final_path = out / "final.zip"
    model.save(final_path)
    callback.checkpoint()
    summary: dict[str, Any] = {"variant": cfg["variant"], "seed": cfg["seed"], "timesteps": int(model.num_timesteps),
                               "minutes": round(state.get("minutes", seconds / 60), 2),
                               "stopped": state.get("stopped", "total_timesteps reached"),
                               "parameters": count_parameters(model.policy), "final": str(final_path),
                               "out": str(out), "num_envs": venv.num_envs, "groups": groups}
    if imitation is not None:
        summary["imitation"] = imitation
    if final_eval:
        rec = callback.evaluate(cfg["final_eval_games"], final=True)
        (out / "final_eval.json").write_text(json.dumps(rec, indent=1))
        summary["final_eval"] = {o: {s: {"win_rate": r["win_rate"], "low": r["win_low"], "high": r["win_high"]}
                                     for s, r in sides.items()} for o, sides in rec["results"].items()}
    if state["evals"]:
        plot_learning_curve(out / "eval.csv", out / "learning_curve.png",
                            title=f"{cfg['variant']}: MaskablePPO self-play league (seed {cfg['seed']})")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    venv.close()
    return summary


def format_summary(summary: Mapping[str, Any]) -> str:
    lines = [f"{summary['variant']}: {summary['timesteps']} steps in {summary['minutes']} min "
             f"({summary['stopped']}); {summary['parameters']} parameters; model {summary['final']}"]
    for opp, sides in summary.get("final_eval", {}).items():
        parts = [f"{s} {r['win_rate']:.3f} [{r['low']:.3f}, {r['high']:.3f}]" for s, r in sides.items()]
        lines.append(f"  vs {opp}: win rate " + "; ".join(parts))
    return "\n".join(lines)
