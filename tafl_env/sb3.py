"""Stable-Baselines3 ``VecEnv`` over one batched engine state (imports stable_baselines3).

:class:`TaflSB3VecEnv` is the SB3 face of the same core as :class:`tafl_env.vector.TaflVectorEnv`:
the same two modes (self-play with two slots per game, or a fixed opponent), rewards, observations
and masks; see :mod:`tafl_env.vector` for them. SB3 conventions:

- ``step_wait`` returns ``(obs, rewards, dones, infos)`` with ``dones = terminated | truncated``;
  a finished environment is reset at once (SB3's autoreset): ``obs`` is the new game's, the last
  observation of the episode is ``infos[i]["terminal_observation"]`` and
  ``infos[i]["TimeLimit.truncated"]`` is True when the move cap ended it. End infos also carry
  ``winner`` / ``reason`` codes, ``turns`` and ``side``.
- Action masks for sb3-contrib's ``MaskablePPO``: ``env_method("action_masks")`` returns the
  ``(num_envs, A)`` int8 masks (a 2-D array: one row per env, which is what
  ``sb3_contrib.common.maskable.utils.get_action_masks`` stacks), and ``has_attr("action_masks")``
  is True, so ``is_masking_supported`` holds. ``action_masks()`` is also a method of the VecEnv.
- There are no sub-env objects: ``get_attr``/``set_attr`` read and write attributes of this VecEnv
  (the same value for every index), ``env_method(name)`` calls ``name`` once on it and repeats the
  result per index (``"action_masks"`` instead returns each env's own mask row),
  ``env_is_wrapped`` is False for all.
- ``seed(s)`` seeds the next ``reset()`` (the random opponent's generator), as SB3 does.

    >>> from tafl_env.sb3 import TaflSB3VecEnv
    >>> venv = TaflSB3VecEnv("legacy_ard_ri", num_envs=4, opponent="random")
    >>> venv.reset().shape, venv.env_method("action_masks").shape
    ((4, 7, 7, 14), (4, 1177))
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from .rules import RuleSet
from .vector import BatchCore, _spaces

__all__ = ["TaflSB3VecEnv", "ConcatTaflVecEnv"]


class TaflSB3VecEnv(VecEnv):
    """SB3 VecEnv of ``num_envs`` Tafl environments (arguments as :class:`tafl_env.vector.TaflVectorEnv`).

    Args:
        variant: a variant id or a ``RuleSet``.
        num_envs: the number of environments (even in self-play).
        opponent: ``None`` (self-play unless ``self_play=False``), ``"random"``, a callable
            ``opponent(obs, mask) -> actions`` or an object with ``.act(obs, mask)``.
        learner_side: ``"attacker"``, ``"defender"`` or ``"alternate"``.
        self_play: both sides played by the learner (default: ``opponent is None``).
        seed: seed of the first ``reset()`` (else use ``seed()``).
        **options: rule options (``tafl_env.make_rules``).
    """

    render_mode = None

    def __init__(self, variant: str | RuleSet = "historical_tablut", num_envs: int = 2, opponent=None,
                 learner_side: str = "attacker", self_play: bool | None = None,
                 seed: int | None = None, **options):
        self._core = BatchCore(variant, num_envs, opponent, learner_side, self_play, **options)
        self.variant = self._core.rules.name
        obs_space, act_space = _spaces(self._core)
        super().__init__(self._core.num_envs, obs_space, act_space)
        if seed is not None:
            self.seed(seed)
        self._actions: np.ndarray | None = None

    @property
    def engine(self):
        return self._core.engine

    @property
    def state(self):
        return self._core.state

    def set_opponent(self, opponent) -> None:
        """Replace the fixed opponent (``"random"``, ``opponent(obs, mask)``, an object with
        ``.act(obs, mask)`` or an engine agent, see :class:`tafl_env.vector.EngineOpponent`)."""
        self._core.set_opponent(opponent)

    # --- the VecEnv interface ------------------------------------------------------------------

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        if seed is not None or self._core.state is None:
            self._core.rng = np.random.default_rng(seed)
        obs, _ = self._core.reset()
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_async() must be called before step_wait()")
        out = self._core.step(self._actions)
        self._actions = None
        dones = out["terminated"] | out["truncated"]
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if "ended" in out:
            final, fobs, trunc = out["final"], out["final_obs"], out["truncated"]
            for j, i in enumerate(out["ended"].tolist()):   # only the envs whose episode ended
                infos[i] = {"terminal_observation": fobs[j], "TimeLimit.truncated": bool(trunc[i]),
                            "winner": int(final["winner"][j]), "reason": int(final["reason"][j]),
                            "turns": int(final["turns"][j]), "side": int(final["side"][j])}
        return out["obs"], out["reward"], dones, infos

    def close(self) -> None:
        self._core.state = None

    def _indices(self, indices) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        if len(self._indices(indices)) != self.num_envs:
            raise ValueError("the environments share one object: set_attr applies to all of them")
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> Sequence[Any]:
        if method_name == "action_masks":
            masks = self.action_masks()
            return masks if indices is None else masks[self._indices(indices)]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def action_masks(self) -> np.ndarray:
        """(num_envs, A) int8: the legal actions of every env now."""
        if self._core.mask is None:
            raise RuntimeError("call reset() first")
        return self._core.mask

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


class ConcatTaflVecEnv(VecEnv):
    """Several :class:`TaflSB3VecEnv` of one variant side by side, as one SB3 ``VecEnv``.

    This is how a training run mixes its games: e.g. self-play slots, games against a frozen
    snapshot of the learner and games against the greedy agent, each group its own batched core
    (with its own opponent), stepped one after the other. Environment indices run through the parts
    in order; ``parts[i]`` keeps its own opponent (:meth:`TaflSB3VecEnv.set_opponent`).
    ``action_masks()`` stacks the parts' masks; ``seed(s)`` seeds part ``i`` with ``s + i``.

        >>> venv = ConcatTaflVecEnv([TaflSB3VecEnv("legacy_ard_ri", 4),
        ...                          TaflSB3VecEnv("legacy_ard_ri", 3, opponent="random")])
        >>> venv.num_envs, venv.reset().shape, venv.action_masks().shape
        (7, (7, 7, 7, 14), (7, 1177))
    """

    render_mode = None

    def __init__(self, parts: Sequence[TaflSB3VecEnv]):
        parts = list(parts)
        if not parts:
            raise ValueError("ConcatTaflVecEnv needs at least one part")
        if len({p.variant for p in parts}) != 1:
            raise ValueError("all parts must play the same variant")
        self.parts = parts
        self.variant = parts[0].variant
        self._bounds = np.cumsum([0] + [p.num_envs for p in parts])
        super().__init__(int(self._bounds[-1]), parts[0].observation_space, parts[0].action_space)

    @property
    def engine(self):
        return self.parts[0].engine

    def slices(self) -> list[slice]:
        """The env index range of every part."""
        return [slice(int(a), int(b)) for a, b in zip(self._bounds[:-1], self._bounds[1:])]

    def reset(self) -> np.ndarray:
        for i, (part, seed) in enumerate(zip(self.parts, self._seeds_per_part())):
            if seed is not None:
                part.seed(seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return np.concatenate([p.reset() for p in self.parts])

    def _seeds_per_part(self) -> list[int | None]:
        s = self._seeds[0]
        return [None if s is None else int(s) + i for i in range(len(self.parts))]

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, rew, done, infos = [], [], [], []
        for part, sl in zip(self.parts, self.slices()):
            part.step_async(self._actions[sl])
            o, r, d, i = part.step_wait()
            obs.append(o)
            rew.append(r)
            done.append(d)
            infos.extend(i)
        return np.concatenate(obs), np.concatenate(rew), np.concatenate(done), infos

    def close(self) -> None:
        for p in self.parts:
            p.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> Sequence[Any]:
        if method_name == "action_masks":
            masks = self.action_masks()
            return masks if indices is None else masks[list(self._get_indices(indices))]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def action_masks(self) -> np.ndarray:
        return np.concatenate([p.action_masks() for p in self.parts])

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]
