"""The league of an RLlib run: who plays whom, frozen snapshots of the learner, and win rates.

- :class:`LeagueMapping` is the agent-to-module mapping: the agents ``attacker`` and ``defender``
  are the learner (module ``main``, the one policy of both sides); the agent ``snapshot``
  (:mod:`agents.rllib.env`) is one of the frozen snapshot modules, drawn per episode from its id.
- :class:`LeagueCallback` (an ``RLlibCallback``) logs, at each episode's end, the learner's return
  and win per episode kind and side (``league/<kind>/<side>_win``, ``.../<side>_return``):
  ``episode_return_mean`` sums both agents and is always 0 in a zero-sum game. After each training
  iteration it adds a snapshot of ``main`` every ``snapshot_every`` env steps, as RLlib's self-play
  examples do: a new module ``snapshot_<k>`` (``Algorithm.add_module`` with a new mapping) while
  the pool holds fewer than ``pool_size``, afterwards the oldest snapshot's weights are replaced.
  A new mapping applies to episodes that start after it; running ones keep theirs.

The pool starts with one snapshot, the initial network (``snapshot_0``), so the ``snapshot``
games are playable from the first iteration.
"""

from __future__ import annotations

import zlib
from typing import Sequence

from ray.rllib.callbacks.callbacks import RLlibCallback

from tafl_env.outcome import Termination

__all__ = ["MAIN", "LeagueMapping", "LeagueCallback", "snapshot_id", "snapshot_ids_of"]

MAIN = "main"
"""The module id of the learner."""


def snapshot_id(k: int) -> str:
    return f"snapshot_{k}"


def snapshot_ids_of(module_ids) -> list[str]:
    """The snapshot module ids among ``module_ids``, in pool order (``snapshot_0``, ``snapshot_1`` …)."""
    ids = [m for m in module_ids if m.startswith("snapshot_") and m[9:].isdigit()]
    return sorted(ids, key=lambda m: int(m[9:]))


class LeagueMapping:
    """``(agent_id, episode) -> module id``: ``main`` for the sides, a snapshot for ``snapshot``.

    The snapshot is picked from the episode's id (a CRC, the same in every process), so both
    calls of one episode agree and the draws are spread evenly over the pool.
    """

    def __init__(self, snapshots: Sequence[str]):
        self.snapshots = tuple(snapshots)

    def __call__(self, agent_id, episode=None, **kwargs) -> str:
        if agent_id != "snapshot" or not self.snapshots:
            return MAIN
        key = str(getattr(episode, "id_", "")).encode()
        return self.snapshots[zlib.crc32(key) % len(self.snapshots)]


class LeagueCallback(RLlibCallback):
    """Win rates per episode kind and side, and snapshots of the learner (module docstring).

    Build it with ``functools.partial(LeagueCallback, pool_size=..., snapshot_every=...)``.
    """

    def __init__(self, pool_size: int = 8, snapshot_every: int = 50_000):
        super().__init__()
        self.pool_size = int(pool_size)
        self.snapshot_every = int(snapshot_every)
        self.snapshots_taken: int | None = None     # set from the step count at the first iteration

    def on_episode_end(self, *, episode, metrics_logger=None, **kwargs) -> None:
        if metrics_logger is None:
            return
        infos = episode.get_infos(-1) if hasattr(episode, "get_infos") else {}
        for agent, info in (infos or {}).items():
            if agent == "snapshot" or not isinstance(info, dict) or "result" not in info:
                continue
            kind, side = info["kind"], info["side"]
            win = 1.0 if info["result"] == side else 0.0
            draw = 1.0 if info["result"] == "draw" else 0.0
            metrics_logger.log_value(f"league/{kind}/{side}_win", win, reduce="mean", window=200)
            metrics_logger.log_value(f"league/{kind}/{side}_draw", draw, reduce="mean", window=200)
            ret = win - (1.0 - win - draw)
            metrics_logger.log_value(f"league/{kind}/{side}_return", ret, reduce="mean", window=200)
            if info.get("reason") == Termination.ILLEGAL_ACTION.reason:
                metrics_logger.log_value("league/illegal_moves", 1, reduce="sum")

    def on_train_result(self, *, algorithm, result, **kwargs) -> None:
        steps = env_steps(result)
        due = steps // self.snapshot_every
        if self.snapshots_taken is None:
            self.snapshots_taken = int(getattr(algorithm, "_tafl_snapshots_taken", due))
        while self.snapshots_taken < due:
            self.snapshots_taken += 1
            add_snapshot(algorithm, self.snapshots_taken, self.pool_size)
        algorithm._tafl_snapshots_taken = self.snapshots_taken
        result.setdefault("league", {})["pool"] = len(snapshot_ids_of(module_ids(algorithm)))


def env_steps(result: dict) -> int:
    """Env steps sampled so far (RLlib's ``num_env_steps_sampled_lifetime``) from a train result."""
    from ray.rllib.utils.metrics import (
        ENV_RUNNER_RESULTS,
        NUM_ENV_STEPS_SAMPLED_LIFETIME,
    )

    return int(result.get(ENV_RUNNER_RESULTS, {}).get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))


def module_ids(algorithm) -> list[str]:
    return list(algorithm.config.policies)


def add_snapshot(algorithm, number: int, pool_size: int) -> str:
    """Snapshot ``number`` (1, 2, …) of ``main``: a new module while the pool is not full, else
    into the slot ``number % pool_size`` (the oldest). Returns the snapshot's module id."""
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    main_state = algorithm.learner_group.get_state(
        components="learner/rl_module/" + MAIN)["learner"]["rl_module"][MAIN]
    ids = snapshot_ids_of(module_ids(algorithm))
    if len(ids) < pool_size:
        new = snapshot_id(len(ids))
        spec = algorithm.config.rl_module_spec.rl_module_specs[MAIN]
        algorithm.add_module(module_id=new, module_spec=RLModuleSpec(
            module_class=spec.module_class, observation_space=spec.observation_space,
            action_space=spec.action_space, model_config=spec.model_config),
            new_agent_to_module_mapping_fn=LeagueMapping([*ids, new]),
            new_should_module_be_updated=[MAIN])
    else:
        new = snapshot_id(number % pool_size)
    algorithm.set_state({"learner_group": {"learner": {"rl_module": {new: main_state}}}})
    return new
