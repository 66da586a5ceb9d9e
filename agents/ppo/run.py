"""The run: :func:`train` (checks, set up, warm start, PPO, final evaluation, outputs) and
:func:`format_summary`.

Everything a user can get wrong is checked before anything is written or trained
(:func:`preflight`): the output directory, the checkpoint to resume from (:mod:`.checkpoints`) and
every evaluation opponent; a mistake is a one-line :class:`~.checkpoints.TrainSetupError`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from ..evaluation.learning_curve import plot_learning_curve
from ..model_rules import model_info
from ..train_fields import rules_of
from .callback import make_callback
from .checkpoints import TrainSetupError, check_resume
from .config import validate_train_config
from .imitation import imitate, imitation_data
from .league import FrozenOpponent, make_train_env, state_dict_copy
from .policy import network_info

__all__ = ["train", "format_summary", "preflight", "TrainSetupError"]

RESULT_FILES = ("final_eval.json", "summary.json")
"""Results of a finished run: removed when a run starts in the directory, written again at its end."""
FRESH_RUN_FILES = ("eval.json", "eval.csv", "learning_curve.png")
"""Also removed when a run starts afresh (not resuming): they belong to the run being replaced."""
_TRAINER_KEYS = ("minutes", "next_snapshot", "next_eval", "next_ckpt")


def _dump_config(cfg: Mapping[str, Any], path: Path) -> None:
    import yaml

    path.write_text(yaml.safe_dump(dict(cfg), sort_keys=False))


def _check_output_dir(out: Path) -> None:
    field = "output_dir"
    if out.exists():
        if not out.is_dir():
            raise TrainSetupError(field, f"output directory {out} is an existing file (--out or output_dir)")
        if not os.access(out, os.W_OK | os.X_OK):
            raise TrainSetupError(field, f"output directory {out} is not writable")
        for sub in ("checkpoints", "tb"):
            if (out / sub).exists() and not (out / sub).is_dir():
                raise TrainSetupError(field, f"output directory {out}: {out / sub} is a file, not a directory")
        return
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise TrainSetupError(field, f"cannot create output directory {out}: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise TrainSetupError(field, f"cannot create output directory {out}: {parent} is not writable")


def _check_opponents(cfg: Mapping[str, Any]) -> None:
    """Every evaluation opponent is built and makes one move of the variant (a model is also checked
    against the variant's rules, :func:`~.checkpoints.check_model_rules`)."""
    from ..base import first_move_problem
    from ..model_rules import looks_like_rllib_checkpoint
    from ..spec import AgentSpec, AgentSpecError
    from .checkpoints import check_model_rules, model_data

    rules = rules_of(cfg)
    for spec in cfg["eval_opponents"]:
        what = f"eval_opponents: {spec!r}"
        try:
            parsed = AgentSpec.parse(spec)
        except AgentSpecError as exc:
            raise TrainSetupError("eval_opponents", str(exc)) from None
        if parsed.kind == "policy" and not looks_like_rllib_checkpoint(parsed.path):
            # an RLlib run's checkpoint checks its rules when built below
            check_model_rules(model_data(Path(parsed.path), what, "eval_opponents"), rules, what, "eval_opponents")
        problem = first_move_problem(parsed, rules)
        if problem:
            raise TrainSetupError("eval_opponents", f"{what} cannot play {rules.name}: {problem}")


def preflight(cfg: Mapping[str, Any], resume: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """Check what a run needs before anything is written or trained: the output directory (an
    existing or creatable, writable directory), the checkpoint to resume from
    (:func:`~.checkpoints.check_resume`: a genuine checkpoint of this variant and its rules, with a
    safe pool file) and the evaluation opponents (each builds and plays a move of the variant).
    Raises :class:`TrainSetupError`; returns what :func:`~.checkpoints.check_resume` read, or None.
    """
    _check_output_dir(Path(cfg["output_dir"]))
    info = check_resume(resume, rules_of(cfg)) if resume is not None else None
    _check_opponents(cfg)
    return info


def _kept_log(path: Path, step: int) -> tuple[list[str], str] | None:
    """The header keys and the lines of an SB3 ``progress.csv`` up to ``step``: the rows from the
    first one logged past ``step`` on came after the checkpoint being resumed, from a run that is
    being replaced. A row's step is its ``time/total_timesteps`` (PPO updates) or
    ``eval/timesteps`` (evaluations); rows without one (the warm start) stay."""
    if not path.is_file():
        return None
    lines = path.read_text().splitlines(keepends=True)
    if not lines:
        return None
    header = next(csv.reader(io.StringIO(lines[0])))
    cols = [header.index(k) for k in ("time/total_timesteps", "eval/timesteps") if k in header]
    kept = [lines[0]]
    for line in lines[1:]:
        row = next(csv.reader(io.StringIO(line)), [])
        try:
            steps = [float(row[c]) for c in cols if c < len(row) and row[c]]
        except ValueError:
            steps = []
        if any(v > step for v in steps):
            break
        kept.append(line if line.endswith("\n") else line + "\n")
    return header, "".join(kept)


def _make_logger(tb: Path, resume_step: int | None):
    """SB3's logger writing TensorBoard events and ``progress.csv`` to ``tb``; when resuming, the
    CSV continues the earlier run's (its rows up to the checkpoint are kept) instead of starting over."""
    from stable_baselines3.common.logger import CSVOutputFormat, Logger, make_output_format

    tb.mkdir(parents=True, exist_ok=True)
    csv_path = tb / "progress.csv"
    kept = _kept_log(csv_path, resume_step) if resume_step is not None else None
    formats = []
    try:
        import tensorboard  # noqa: F401  (SB3's TensorBoard writer needs it)
        formats.append(make_output_format("tensorboard", str(tb)))
    except ImportError:  # pragma: no cover - tensorboard is in the train extra
        pass
    csv_format = CSVOutputFormat(str(csv_path))     # opens the file afresh ("w+") ...
    if kept is not None:                            # ... so write the earlier rows back first
        csv_format.keys = list(kept[0])
        csv_format.file.write(kept[1])
        csv_format.file.flush()
    formats.append(csv_format)
    return Logger(folder=str(tb), output_formats=formats)


def _clear_stale(out: Path, fresh: bool) -> None:
    """Remove the results of an earlier run in ``out`` that this run will not rewrite for sure, so
    that none is mistaken for this run's (``final_eval.json`` after ``--no-eval``, say)."""
    names = RESULT_FILES + (FRESH_RUN_FILES if fresh else ())
    for name in names:
        (out / name).unlink(missing_ok=True)
    if fresh:
        for events in (out / "tb").glob("events.out.tfevents.*"):
            events.unlink()


def train(config: Mapping[str, Any], *, out_dir: str | os.PathLike | None = None,
          total_timesteps: int | None = None, resume: str | os.PathLike | None = None,
          seed: int | None = None, progress: bool | None = None, final_eval: bool = True,
          command: str | None = None) -> dict[str, Any]:
    """Train from a validated config (:func:`load_train_config`); returns a summary dict.

    ``total_timesteps``, ``seed``, ``out_dir`` override the config; ``resume`` is a checkpoint
    zip written by an earlier run (its ``.pool.pt`` beside it is read when present, with
    ``torch.load(weights_only=True)``). Mistakes in the inputs (:func:`preflight`) raise
    :class:`TrainSetupError` before anything is written. Without ``final_eval`` no
    ``final_eval.json`` is left in the output directory (an earlier run's is removed) and the
    summary has no ``final_eval``.
    """
    import torch as th
    from sb3_contrib import MaskablePPO

    from .network import TaflBoardPolicy, board_policy_kwargs, count_parameters

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
    resumed = preflight(cfg, resume)       # nothing written before this passes
    th.set_num_threads(cfg["torch_threads"])

    venv, groups = make_train_env(cfg, seed=cfg["seed"])
    lr0, frac = float(cfg["learning_rate"]), float(cfg["lr_final_fraction"])

    def lr_schedule(progress_remaining: float) -> float:
        return lr0 * (frac + (1.0 - frac) * progress_remaining)

    state: dict[str, Any] = {"evals": []}
    pool: list = []
    if resumed is not None:
        try:
            model = MaskablePPO.load(resumed["path"], env=venv, device="cpu")
        except Exception as exc:  # a damaged zip that passed the checks: still a bad input
            venv.close()
            text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise TrainSetupError("resume", f"--resume {resumed['path']}: cannot load the model: {text}") from None
        model.learning_rate = lr_schedule
        model.lr_schedule = lr_schedule
        pool.extend(resumed["pool"])
        state.update({k: v for k, v in resumed["trainer"].items() if k in _TRAINER_KEYS})
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
    model.tafl_rules = model_info(rules_of(cfg))   # saved in every zip's data (.checkpoints)
    model.tafl_network = network_info(model.policy)  # so policy:PATH loads it without unpickling

    # from here on the output directory is written
    out.mkdir(parents=True, exist_ok=True)
    _clear_stale(out, fresh=reset)
    _dump_config(cfg, out / "config.yaml")
    cmd = command or " ".join(shlex.quote(a) for a in sys.argv)
    with open(out / "command.txt", "a") as fh:
        fh.write(cmd + "\n")
    if not reset and (out / "eval.json").exists():
        state["evals"] = [e for e in json.loads((out / "eval.json").read_text())
                          if e["timesteps"] <= model.num_timesteps]
    if not pool:
        pool.append(state_dict_copy(model.policy))
    frozen = FrozenOpponent(model.policy, seed=cfg["seed"] + 31)
    if "snapshot" in groups:
        venv.parts[groups.index("snapshot")].set_opponent(frozen)
    model.set_logger(_make_logger(out / "tb", None if reset else int(model.num_timesteps)))
    imitation = None
    if reset and cfg["imitation_games"]:
        ti = time.time()
        data = imitation_data(cfg, cfg["imitation_games"], seed=cfg["seed"] + 101, progress=progress)
        imitation = imitate(model, data, cfg, seed=cfg["seed"] + 103, logger=model.logger, progress=progress)
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
    model.logger.close()    # progress.csv and the event file: closed, not left to the garbage collector
    venv.close()
    return summary


def format_summary(summary: Mapping[str, Any]) -> str:
    """The summary of :func:`train` in a few lines (the ``tafl train`` report)."""
    lines = [f"{summary['variant']}: {summary['timesteps']} steps in {summary['minutes']} min "
             f"({summary['stopped']}); {summary['parameters']} parameters; model {summary['final']}"]
    if "final_eval" not in summary:
        lines.append("  no final evaluation (skipped)")
    for opp, sides in summary.get("final_eval", {}).items():
        parts = [f"{s} {r['win_rate']:.3f} [{r['low']:.3f}, {r['high']:.3f}]" for s, r in sides.items()]
        lines.append(f"  vs {opp}: win rate " + "; ".join(parts))
    return "\n".join(lines)
