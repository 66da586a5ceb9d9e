"""The AlphaZero training loop behind ``tafl train --config configs/az/<variant>.yaml``.

Each **iteration** alternates, in one process, the two halves that share the CPU:

1. **self-play** (:mod:`.selfplay`): the batched games go on until ``positions_per_iteration``
   positions of finished games are recorded (on Ray actors with ``workers`` > 0 or ``--address``:
   :mod:`.workers`); they enter the **replay window** (:mod:`.replay`);
2. **learning** (:mod:`.learner`): ``sample_reuse * new positions / batch_size`` minibatch steps
   on the window (none until it holds ``min_replay``), each sample under a random board symmetry.

Every ``pool_every`` iterations the network joins the pool of past networks that ``past_share``
of the games are played against; every ``checkpoint_every`` iterations a checkpoint is written
(:mod:`.checkpoint`); every ``eval_every`` iterations the agent (``eval_simulations`` per move)
and the network alone play ``eval_games`` games per side against each of ``eval_opponents`` at
the rules' move cap (``eval.json``, ``eval.csv``, ``learning_curve.png``). At the end:
``final.pt`` + ``final.json``, ``final_eval.json`` (``final_eval_games`` per side),
``summary.json``.

Torch and numba do not fight for the cores: one process does one thing at a time; torch uses
``torch_threads`` threads (1 by default: the network is small, and the engine's kernels run in
the same thread between forward passes).

**Resume**: ``--resume OUT/checkpoints/iter_XXXXXX`` loads the network, the optimiser, the
counters, the pool, the random generator and the replay window of that checkpoint and goes on
to ``iterations`` in all (from a hand-off, :mod:`.handoff`: its compact window, and fresh
optimiser moments), writing to the same folder (games that were running are not saved:
self-play starts new ones). Every file is checked as it is read (:mod:`.checkpoint`) and a bad
one is refused in one line naming it, before anything is written.

**Before the first iteration** every agent the config names (``eval_opponents``, ``sparring``,
``warm_start_agent``) is built and plays one move of the variant, and the replay window must fit
the memory available: a mistake there would otherwise surface after the whole training budget.

**Divergence**: a loss, gradient or network output that is nan or inf stops the run with one
line (:class:`~.learner.DivergedError`); nothing is saved from the diverged network (no
checkpoint, no ``final.pt``), so the last checkpoint written stays the run's last good one.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from .config import (agent_specs, capped_setting, config_agent, rules_of, search_record, search_settings,
                     selfplay_settings, sparring_agents)

__all__ = ["train_az", "resolve_device", "format_summary"]

COUNTERS = ("iteration", "positions", "moves", "games", "learner_steps", "leaf_evaluations",
            "selfplay_seconds", "learner_seconds", "minutes")


def check_config_agents(cfg: dict) -> None:
    """Build every agent the config names (``warm_start_agent``, ``sparring``, ``sparring_defender``,
    each of ``eval_opponents``), check it against the rules and let it play one move of the opening, as
    the PPO trainer checks its opponents: a missing model or one of another game is a
    :class:`~agents.schema.ConfigError` naming the field now, not a traceback at the first
    evaluation after the whole training budget. The agents are thrown away (each use builds its
    own)."""
    from ..base import first_move_problem
    from ..schema import ConfigError

    rules = rules_of(cfg)
    for field, spec in agent_specs(cfg):
        problem = first_move_problem(spec, rules)
        if problem:
            raise ConfigError(field, f"{spec!r} cannot play {rules.name}: {problem}", "az config")


def init_weights(cfg: dict, net) -> dict:
    """The weights of the config's ``init_model`` for ``net``: an AZ model whose tensors have the
    shapes of ``net``'s (a sizeless network's have them on every board), or a
    :class:`~agents.schema.ConfigError` naming the field."""
    from ..schema import ConfigError
    from .checkpoint import CheckpointError, load_model

    try:
        model, record = load_model(cfg["init_model"], "cpu")
    except CheckpointError as exc:
        raise ConfigError("init_model", str(exc), "az config") from None
    want, have = net.state_dict(), model.state_dict()
    if set(want) != set(have) or any(tuple(want[k].shape) != tuple(v.shape) for k, v in have.items()):
        raise ConfigError("init_model", f"{cfg['init_model']} is a {record['network']} network; this config "
                                        f"trains {net.shape()} (a network of another board size must be sizeless, "
                                        "and so must this one)", "az config")
    return have


def resolve_device(device: str) -> str:
    """``auto``: ``cuda`` when torch sees a GPU, else ``cpu``."""
    import torch as th

    if device == "auto":
        return "cuda" if th.cuda.is_available() else "cpu"
    if device == "cuda" and not th.cuda.is_available():
        from ..schema import ConfigError

        raise ConfigError("device", "is 'cuda' but torch sees no GPU (use auto or cpu)", "az config")
    return device


def _ckpt_name(iteration: int) -> str:
    return f"iter_{iteration:06d}"


_SECONDS = ("selfplay_seconds", "learner_seconds", "minutes")
_RESULTS = ("attacker", "defender", "draw", "capped")
_WARM_START = ("warm_start_positions", "warm_start_games")


def _read_trainer(path: Path) -> dict:
    """``trainer.json`` of a checkpoint, checked: the counters (:data:`COUNTERS`, ints but the
    times, all finite and >= 0; the results by kind), the pool (relative model paths inside the
    run's folder) and a state of numpy's PCG64 generator. Anything else is a
    :class:`~.checkpoint.CheckpointError` naming the file and the key."""
    from .checkpoint import CheckpointError, read_json

    trainer = read_json(path, "trainer state")
    if not isinstance(trainer, dict) or not {"counters", "pool", "rng"} <= set(trainer):
        raise CheckpointError(f"{path} is not a trainer state (keys counters, pool and rng expected)")
    counters = trainer["counters"]
    if not isinstance(counters, dict):
        raise CheckpointError(f"{path}: counters must be a mapping, got {type(counters).__name__}")
    kept: dict[str, Any] = {}
    for key in (*COUNTERS, *_WARM_START):
        if key not in counters:
            if key in COUNTERS:
                raise CheckpointError(f"{path}: counter {key!r} is missing")
            continue
        v = counters[key]
        kinds = (int, float) if key in _SECONDS else (int,)
        if isinstance(v, bool) or not isinstance(v, kinds) or not math.isfinite(v) or v < 0:
            raise CheckpointError(f"{path}: counter {key!r} must be {'a number' if key in _SECONDS else 'an int'} "
                                  f">= 0, got {v!r}")
        kept[key] = v
    results = counters.get("results")
    if not isinstance(results, dict) or set(results) != set(_RESULTS) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in results.values()):
        raise CheckpointError(f"{path}: counter 'results' must map {', '.join(_RESULTS)} to ints >= 0, "
                              f"got {results!r}"[:300])
    kept["results"] = dict(results)
    pool = trainer["pool"]
    if not isinstance(pool, list) or not all(
            isinstance(p, str) and p and not Path(p).is_absolute() and ".." not in Path(p).parts for p in pool):
        raise CheckpointError(f"{path}: pool must be a list of model paths inside the run's folder, "
                              f"got {pool!r}"[:300])
    try:
        np.random.PCG64().state = trainer["rng"]
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise CheckpointError(f"{path}: rng is not a state of numpy's PCG64 generator "
                              f"({' '.join(str(exc).split())[:120]})") from None
    return {"counters": kept, "pool": list(pool), "rng": trainer["rng"]}


class _Run:
    """The state of one training run: network, learner, window, pool, counters, outputs."""

    def __init__(self, cfg: dict, out: Path, device: str, resume: Path | None):
        import torch as th

        from tafl_env.game import engine_for

        from .learner import Learner
        from .network import AZNet
        from .replay import ReplayWindow
        from .symmetry import board_symmetries

        self.cfg, self.out, self.device = cfg, out, device
        self.rules = rules_of(cfg)
        self.engine = engine_for(self.rules)
        self.symmetries = board_symmetries(self.engine, cfg["symmetries"])
        th.manual_seed(cfg["seed"])
        self.net = AZNet(self.engine.n, channels=cfg["channels"], blocks=cfg["blocks"],
                         value_hidden=cfg["value_hidden"], head=cfg["head"]).to(device)
        if cfg["init_model"] is not None and resume is None:
            self.net.load_state_dict(init_weights(cfg, self.net))
        self.learner = Learner(self.net, self.symmetries, lr=float(cfg["learning_rate"]),
                               weight_decay=float(cfg["weight_decay"]), value_weight=float(cfg["value_weight"]),
                               max_grad_norm=float(cfg["max_grad_norm"]), device=device)
        self.counters: dict[str, Any] = {k: 0 for k in COUNTERS}
        self.counters["results"] = {"attacker": 0, "defender": 0, "draw": 0, "capped": 0}
        self.pool: list[str] = []           # model paths, relative to out
        self.rng = np.random.default_rng(cfg["seed"])
        self.window = ReplayWindow(cfg["replay_window"], (self.engine.n, self.engine.n, 14))
        self.evals: list = []
        if resume is not None:
            self._resume(resume)

    def _resume(self, resume: Path) -> None:
        """Load the checkpoint ``resume``; each file is checked as it is read and a bad one is a
        :class:`~.checkpoint.CheckpointError` naming it (module docstring of :mod:`.checkpoint`)."""
        from .checkpoint import CheckpointError, load_model, load_optimizer_state, read_json, read_window
        from .replay import ReplayWindow

        net, record = load_model(resume, self.device)
        if record.get("variant") != self.rules.name or record["network"] != self.net.shape():
            raise CheckpointError(f"{resume} holds a {record.get('variant')} network of shape "
                                  f"{record['network']}; this config trains {self.rules.name} with "
                                  f"{self.net.shape()}")
        trainer = _read_trainer(resume / "trainer.json")
        self._check_pool(trainer["pool"], resume / "trainer.json")
        window = None
        arrays = read_window(resume, self.engine.n, self.engine.num_actions)   # a run's, or a hand-off's
        if arrays is not None:
            window = ReplayWindow.from_state_dict(arrays, self.cfg["replay_window"])
        else:     # an older checkpoint: only the newest keeps its window
            import warnings

            warnings.warn(f"{resume} holds no replay window (only a run's newest checkpoint "
                          "keeps one): the window starts empty", stacklevel=3)
        ev = self.out / "eval.json"
        evals = read_json(ev, "evaluation log") if ev.is_file() else []
        if not isinstance(evals, list) or not all(
                isinstance(e, dict) and isinstance(e.get("iteration"), int) for e in evals):
            raise CheckpointError(f"{ev} is not an evaluation log (a list of evaluations with their iteration)")
        self.net.load_state_dict(net.state_dict())
        if (resume / "optimizer.pt").is_file():
            load_optimizer_state(resume / "optimizer.pt", self.learner.optimizer, self.device)
        else:       # a hand-off keeps no optimiser state: AdamW's moments start afresh
            import warnings

            warnings.warn(f"{resume} holds no optimizer.pt (a hand-off): the optimiser's moments start "
                          "afresh", stacklevel=3)
        self.counters.update(trainer["counters"])
        self.pool = list(trainer["pool"])
        self.rng.bit_generator.state = trainer["rng"]
        self.learner.steps = int(self.counters["learner_steps"])
        if window is not None:
            self.window = window
        self.evals = [e for e in evals if e["iteration"] <= self.counters["iteration"]]

    def _check_pool(self, pool: list, where: Path) -> None:
        """Each pool entry that exists must be a model of this variant's board (a missing one is
        skipped, as :meth:`pool_nets` skips it)."""
        from .checkpoint import CheckpointError, load_model

        for entry in pool:
            path = self.out / entry
            if not path.is_file():
                continue
            try:
                _, record = load_model(path, "cpu")
            except CheckpointError as exc:
                raise CheckpointError(f"pool entry {entry!r} of {where}: {exc}") from None
            if record.get("variant") != self.rules.name:
                raise CheckpointError(f"pool entry {entry!r} of {where} is a {record.get('variant')} "
                                      f"model; this run trains {self.rules.name}")

    # --- divergence ----------------------------------------------------------------------------
    def check_network(self) -> None:
        """Raise :class:`~.learner.DivergedError` when the network holds nan or inf or answers
        nan or inf on the opening and a few positions of the window."""
        import torch as th

        from tafl_env.observation import observe

        from .learner import DivergedError, network_problem
        from .replay import decode_planes

        st = self.engine.initial_state(1)
        obs = observe(self.engine, st, st.to_move.astype(np.intp))
        if len(self.window):
            obs = np.concatenate([obs, decode_planes(self.window.obs[:min(16, len(self.window))])])
        problem = network_problem(self.net, th.from_numpy(np.ascontiguousarray(obs)).to(self.device))
        if problem:
            raise DivergedError(f"the network diverged: {problem}")

    # --- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self) -> Path:
        import torch as th

        from .checkpoint import save_model

        self.check_network()           # nothing diverged is ever written
        it = int(self.counters["iteration"])
        ck = self.out / "checkpoints" / _ckpt_name(it)
        tmp = ck.with_name(ck.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        save_model(tmp / "model.pt", self.net, self.rules, search=search_record(self.cfg), iteration=it,
                   positions=self.counters["positions"])
        th.save(self.learner.optimizer.state_dict(), tmp / "optimizer.pt")
        self.window.save(tmp / "replay.npz")
        (tmp / "trainer.json").write_text(json.dumps(
            {"counters": self.counters, "pool": self.pool, "rng": self.rng.bit_generator.state,
             "config": self.cfg}, indent=1, default=str) + "\n")
        if ck.exists():
            shutil.rmtree(ck)
        os.replace(tmp, ck)
        # only the newest checkpoint keeps its replay window (tens of MB each)
        for old in (self.out / "checkpoints").glob("iter_*"):
            if old != ck and (old / "replay.npz").exists():
                (old / "replay.npz").unlink()
        return ck

    def add_to_pool(self) -> None:
        it = int(self.counters["iteration"])
        self.pool.append(f"checkpoints/{_ckpt_name(it)}/model.pt")
        self.pool = self.pool[-self.cfg["pool_size"]:]

    def pool_nets(self) -> list:
        from .checkpoint import load_model

        return [load_model(self.out / p, self.device)[0] for p in self.pool if (self.out / p).is_file()]

    # --- evaluation -------------------------------------------------------------------------
    def evaluate(self, games: int, seed: int, progress: bool, desc: str) -> dict:
        from ..evaluation.learning_curve import evaluate_agent
        from .agent import AZAgent, AZPolicyAgent

        record = {"variant": self.rules.name, **_rules_record(self.rules), "network": self.net.shape(),
                  "search": search_record(self.cfg)}
        az = AZAgent(self.net, simulations=self.cfg["eval_simulations"], device=self.device, record=record,
                     seed=seed)
        raw = AZPolicyAgent(self.net, device=self.device, record=record, seed=seed)
        res = evaluate_agent(az, self.cfg, games, seed, progress=progress, desc=f"{desc}: az:{self.cfg['eval_simulations']}")
        alone = evaluate_agent(raw, self.cfg, games, seed + 1, progress=progress, desc=f"{desc}: network alone")
        res.update({f"{k} [network alone]": v for k, v in alone.items()})
        self.net.train()
        return res


def _rules_record(rules) -> dict:
    from ..model_rules import model_info

    return {"rules": model_info(rules)["rules"]}


def _write_config(cfg: dict, out: Path) -> None:
    import yaml

    (out / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _results_table(res: dict) -> str:
    lines = []
    for opp, sides in res.items():
        b = sides["both"]
        lines.append(f"  vs {opp:32s} score {b['score']:.3f} [{b['score_low']:.3f}, {b['score_high']:.3f}]"
                     f"  (W/D/L {b['wins']}/{b['draws']}/{b['losses']}; as attacker "
                     f"{sides['attacker']['score']:.2f}, as defender {sides['defender']['score']:.2f})")
    return "\n".join(lines)


def format_summary(summary: dict) -> str:
    c = summary["counters"]
    text = (f"{summary['variant']}: {c['iteration']} iterations, {c['positions']} positions recorded, "
            f"{c['games']} games, {c['learner_steps']} learner steps in {c['minutes']:.1f} minutes "
            f"({summary['stop']})")
    if summary.get("final_eval"):
        text += "\nfinal evaluation (score, Wilson 95%):\n" + _results_table(summary["final_eval"])
    return text


def _check_window_memory(cfg: dict) -> None:
    """The replay window must fit the memory available now (it fills up over the run: without
    this a window too big for the machine fails hours in)."""
    from tafl_env.errors import InvalidOptionError
    from tafl_env.memory import fits

    from ..schema import ConfigError
    from .config import window_bytes

    try:
        fits(window_bytes(rules_of(cfg), cfg["replay_window"]), f"a replay window of {cfg['replay_window']} positions")
    except InvalidOptionError as exc:
        raise ConfigError("replay_window", str(exc), "az config") from None


def _warm_start(run: "_Run", cfg: dict, teacher, show: bool, writer, deadline: float | None) -> None:
    """The teacher's games into the window (read from the cache when a run with the same inputs
    played them: :mod:`.warmstart`), then ``sample_reuse`` passes of learning over them; both stop
    at ``deadline``."""
    from ..progress import progress_bar
    from .warmstart import CACHE_DIR, cache_key, load_cached, save_cached, teacher_games

    args = (run.rules, cfg["warm_start_agent"], cfg["warm_start_games"], float(cfg["warm_start_epsilon"]),
            cfg["seed"], float(cfg["draw_value"]), capped_setting(cfg), cfg["opening_moves"])
    cached = CACHE_DIR / f"{cache_key(*args)}.npz"
    gb = load_cached(cached, run.engine.n)
    if gb is None:
        bar = progress_bar(cfg["warm_start_games"], f"warm start: {cfg['warm_start_agent']} games", "game", show)
        # its own generator, so that a cached warm start leaves the run's draws as a played one does
        gb = teacher_games(run.engine, teacher, cfg["warm_start_games"], float(cfg["warm_start_epsilon"]),
                           np.random.default_rng([cfg["seed"], 17]), float(cfg["draw_value"]),
                           capped_setting(cfg), cfg["opening_moves"], progress=bar.update, deadline=deadline)
        bar.close()
        if gb.complete:
            save_cached(cached, gb)
    run.counters["warm_start_positions"] = gb.positions
    run.counters["warm_start_games"] = gb.games
    if not gb.positions:
        return
    run.window.add(*gb.arrays())
    steps = max(1, math.ceil(float(cfg["sample_reuse"]) * gb.positions / cfg["batch_size"]))
    bar = progress_bar(steps, "warm start: learning", "step", show)
    done = 0
    m = {}
    while done < steps and not (deadline is not None and time.monotonic() >= deadline and done):
        m = run.learner.step(run.window, cfg["batch_size"], run.rng)
        done += 1
        bar.update(1)
    bar.close()
    for k, v in m.items():
        writer.add_scalar(f"warm_start/{k}", v, 0)
    run.counters["learner_steps"] += done


def train_az(config: dict, out_dir: str | os.PathLike | None = None, resume: str | os.PathLike | None = None,
             seed: int | None = None, max_minutes: float | None = None, progress: bool | None = None,
             final_eval: bool = True, address: str | None = None, command: str | None = None) -> dict:
    """Train as the config says (module docstring); returns the run's summary (also written to
    ``summary.json``)."""
    import torch as th

    from ..schema import ConfigError
    from ..evaluation.learning_curve import plot_learning_curve, write_evals
    from ..progress import progress_bar
    from .checkpoint import CheckpointError, save_model
    from .learner import DivergedError

    cfg = dict(config)
    if seed is not None:
        cfg["seed"] = int(seed)
    if max_minutes is not None:
        if not max_minutes > 0:
            raise ConfigError("max_minutes", f"must be > 0, got {max_minutes}", "--max-minutes (command line)")
        cfg["max_minutes"] = max_minutes
    if address is None:
        address = os.environ.get("RAY_ADDRESS", "").strip() or None
    resume_dir = None
    if resume is not None:
        resume_dir = Path(resume)
        if resume_dir.is_file():
            resume_dir = resume_dir.parent
        if not (resume_dir / "trainer.json").is_file():
            raise ConfigError("resume", f"{resume} is not an AZ training checkpoint (a folder "
                                        "OUT/checkpoints/iter_XXXXXX with trainer.json)", "--resume (command line)")
    if out_dir is not None:
        out = Path(out_dir)
    elif resume_dir is not None:
        out = resume_dir.parent.parent
    else:
        out = Path(cfg["output_dir"] or f"runs/az/{cfg['variant']}")
    if out.exists() and not out.is_dir():
        raise ConfigError("output_dir", f"{out} exists and is not a folder", "az config")
    show = cfg["progress_bar"] if progress is None else progress
    check_config_agents(cfg)
    teacher = config_agent(cfg, "warm_start_agent", cfg["seed"] + 17) if cfg["warm_start_games"] else None
    if cfg["init_model"] is not None and resume_dir is None:
        from tafl_env.game import engine_for

        from .network import AZNet

        with th.device("meta"):     # the shapes alone: nothing allocated
            shapes = AZNet(engine_for(rules_of(cfg)).n, channels=cfg["channels"], blocks=cfg["blocks"],
                           value_hidden=cfg["value_hidden"], head=cfg["head"])
        init_weights(cfg, shapes)      # outside: the model it reads is a real one
    _check_window_memory(cfg)
    device = resolve_device(cfg["device"])
    th.set_num_threads(cfg["torch_threads"])
    out.mkdir(parents=True, exist_ok=True)
    try:
        run = _Run(cfg, out, device, resume_dir)
    except CheckpointError as exc:
        raise ConfigError("resume", str(exc), "--resume (command line)") from None
    _write_config(cfg, out)
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(out / "tb"))
    address_used = None
    workers = None
    session = None
    if cfg["workers"] > 0 or address is not None:
        from ..ray_session import check_address, ray_session

        if address is not None:
            check_address(address)
        session = ray_session(address, num_cpus=None if address else max(cfg["workers"], 1) + 1)
        info = session.__enter__()
        address_used = info["address"]
        from .workers import RaySelfPlay

        workers = RaySelfPlay(cfg, max(cfg["workers"], 1), cfg["seed"] + run.counters["iteration"])
        workers.set_pool(run.pool_nets())
        selfplay = None
    else:
        from .network import Evaluator
        from .selfplay import SelfPlay

        sp_rng = np.random.default_rng([cfg["seed"], run.counters["iteration"]])
        selfplay = SelfPlay(run.engine, Evaluator(run.net, device), search_settings(cfg), selfplay_settings(cfg), sp_rng,
                            **sparring_agents(cfg, cfg["seed"] + 31 * (run.counters["iteration"] + 1)))
        selfplay.set_pool([Evaluator(n, device) for n in run.pool_nets()])
    c = run.counters
    t0 = time.monotonic()
    minutes0 = float(c["minutes"])
    stop = "iterations"
    bar = None
    last_ckpt = None
    diverged = None
    try:
        if cfg["warm_start_games"] and c["iteration"] == 0 and not c.get("warm_start_positions"):
            deadline = None if cfg["max_minutes"] is None else t0 + 60 * cfg["max_minutes"]
            _warm_start(run, cfg, teacher, show, writer, deadline)
            run.check_network()
        bar = progress_bar(cfg["iterations"], f"az {cfg['variant']}", "it", show)
        bar.update(int(c["iteration"]))
        while c["iteration"] < cfg["iterations"]:
            if cfg["max_minutes"] is not None and (time.monotonic() - t0) / 60 >= cfg["max_minutes"]:
                stop = "max_minutes"
                break
            ts = time.monotonic()
            bar.set_postfix_str("self-play", refresh=True)
            if workers is not None:
                gb = workers.play(run.net, cfg["positions_per_iteration"])
            else:
                gb = selfplay.play(cfg["positions_per_iteration"])
            arrays = gb.arrays()
            if arrays is not None:
                run.window.add(*arrays)
            sp_time = time.monotonic() - ts
            tl = time.monotonic()
            metrics: dict = {}
            if len(run.window) >= cfg["min_replay"]:
                steps = max(1, math.ceil(float(cfg["sample_reuse"]) * gb.positions / cfg["batch_size"]))
                bar.set_postfix_str(f"learning ({steps} steps)", refresh=True)
                sums: dict = {}
                for _ in range(steps):
                    m = run.learner.step(run.window, cfg["batch_size"], run.rng)
                    for k, v in m.items():
                        sums[k] = sums.get(k, 0.0) + v
                metrics = {k: v / steps for k, v in sums.items()}
                c["learner_steps"] += steps
                run.check_network()          # before self-play searches with it
            l_time = time.monotonic() - tl
            c["iteration"] += 1
            c["positions"] += gb.positions
            c["moves"] += gb.moves
            c["games"] += gb.games
            c["leaf_evaluations"] += gb.leaf_evaluations
            c["selfplay_seconds"] += sp_time
            c["learner_seconds"] += l_time
            for k, v in gb.results.items():
                c["results"][k] += v
            c["minutes"] = minutes0 + (time.monotonic() - t0) / 60
            it = int(c["iteration"])
            for k, v in metrics.items():
                writer.add_scalar(f"loss/{k}", v, it)
            writer.add_scalar("selfplay/positions_per_s", gb.positions / max(sp_time, 1e-9), it)
            writer.add_scalar("selfplay/moves_per_s", gb.moves / max(sp_time, 1e-9), it)
            writer.add_scalar("selfplay/leaf_evaluations_per_s", gb.leaf_evaluations / max(sp_time, 1e-9), it)
            if gb.games:
                writer.add_scalar("selfplay/game_turns", gb.turns / gb.games, it)
                for k, v in gb.results.items():
                    writer.add_scalar(f"selfplay/share_{k}", v / gb.games, it)
            for side, (score, games) in gb.sparring.items():
                if games:
                    writer.add_scalar(f"selfplay/sparring_score_{side}", score / games, it)
            writer.add_scalar("replay/size", len(run.window), it)
            bar.update(1)
            bar.set_postfix_str(f"pos {c['positions']}, games {c['games']}, "
                                f"loss {metrics.get('loss', float('nan')):.3f}, "
                                f"{gb.leaf_evaluations / max(sp_time, 1e-9):.0f} evals/s", refresh=False)
            if it % cfg["pool_every"] == 0:
                run.add_to_pool()                    # the checkpoint written next holds it
                last_ckpt = run.save_checkpoint()
                if workers is not None:
                    workers.set_pool(run.pool_nets())
                else:
                    from .network import Evaluator

                    selfplay.set_pool([Evaluator(n, device) for n in run.pool_nets()])
            if it % cfg["checkpoint_every"] == 0 and last_ckpt != run.out / "checkpoints" / _ckpt_name(it):
                last_ckpt = run.save_checkpoint()
            if cfg["eval_every"] and it % cfg["eval_every"] == 0:
                res = run.evaluate(cfg["eval_games"], cfg["seed"] + it, show, f"evaluation {it}")
                run.evals.append({"iteration": it, "timesteps": int(c["positions"]),
                                  "minutes": float(c["minutes"]), "results": res})
                write_evals(out, run.evals)
                plot_learning_curve(out / "eval.csv", out / "learning_curve.png",
                                    title=f"{cfg['variant']} AZ (x: self-play positions recorded)")
                for opp, sides in res.items():
                    writer.add_scalar(f"eval/{opp}", sides["both"]["score"], it)
    except DivergedError as exc:
        diverged = exc
    finally:
        if bar is not None:
            bar.close()
        c["minutes"] = minutes0 + (time.monotonic() - t0) / 60
        if diverged is None:
            try:
                run.check_network()
            except DivergedError as exc:
                diverged = exc
        if diverged is None:            # a diverged network is never saved (module docstring)
            if last_ckpt != run.out / "checkpoints" / _ckpt_name(int(c["iteration"])):
                run.save_checkpoint()
            save_model(out / "final.pt", run.net, run.rules, search=search_record(cfg), iteration=int(c["iteration"]),
                       positions=int(c["positions"]), minutes=round(float(c["minutes"]), 2))
        writer.flush()
        writer.close()
        if session is not None:
            session.__exit__(None, None, None)
    if diverged is not None:
        kept = last_ckpt or resume_dir
        raise DivergedError(f"{diverged.detail}: training stopped and nothing was saved from the diverged "
                            f"network; " + (f"the last checkpoint, {kept}, is kept" if kept else
                                           "no checkpoint had been written yet")
                            + " (a lower learning_rate or max_grad_norm may help)")
    summary: dict[str, Any] = {"variant": cfg["variant"], "out": str(out), "stop": stop, "device": device,
                               "counters": c, "ray": address_used, "command": command,
                               "symmetries": [s.name for s in run.symmetries]}
    if final_eval:
        res = run.evaluate(cfg["final_eval_games"], cfg["seed"] + 10_000, show, "final evaluation")
        (out / "final_eval.json").write_text(json.dumps(
            {"iteration": int(c["iteration"]), "positions": int(c["positions"]),
             "eval_simulations": cfg["eval_simulations"], "games_per_side": cfg["final_eval_games"],
             "seed": cfg["seed"] + 10_000, "results": res}, indent=1) + "\n")
        summary["final_eval"] = res
        if not run.evals or run.evals[-1]["iteration"] != int(c["iteration"]):
            run.evals.append({"iteration": int(c["iteration"]), "timesteps": int(c["positions"]),
                              "minutes": float(c["minutes"]), "results": res})
            write_evals(out, run.evals)
        plot_learning_curve(out / "eval.csv", out / "learning_curve.png",
                            title=f"{cfg['variant']} AZ (x: self-play positions recorded)")
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary
