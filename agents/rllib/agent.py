"""A trained RLlib module as a project agent: ``rllib:DIR``.

``DIR`` is what an RLlib run of ``tafl train`` writes (:mod:`agents.rllib.trainer`): its
``final/`` module checkpoint, one of its ``checkpoints/step_T/`` algorithm checkpoints, or the
run's output directory itself (its ``final/`` is used). The module is loaded with RLlib's
``RLModule.from_checkpoint`` (no Ray cluster needed) and acts like :class:`agents.ppo.policy.PolicyAgent`:
observations from :func:`tafl_env.observation.observe` for the side to move, the engine's legal
action mask, the most probable legal move (or a sample of the masked policy with
``deterministic=False``).

Each checkpoint written by a run holds ``tafl_checkpoint.json`` (plain JSON: the rules it was
trained on, :func:`agents.model_rules.model_info`, and the network's options), read before anything is
loaded: a module trained on another variant or other rule options is refused with one line, as a
model zip is. **Loading is code execution**: RLlib checkpoints, like SB3 zips, unpickle parts of
their files; load only checkpoints from your own runs or a source you trust.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from tafl_env.extras import require
from tafl_env.observation import observe
from tafl_env.rules import RuleSet

from ..base import Agent, AgentSpecError, register_agent
from ..model_rules import TAFL_CHECKPOINT, rules_mismatch

__all__ = ["ModuleAgent", "RLlibAgent", "find_module_dir"]

_MODULE_IN_ALGO = Path("learner_group") / "learner" / "rl_module" / "main"


def find_module_dir(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """``(module checkpoint dir, tafl_checkpoint record)`` of ``path``; one-line
    :class:`~agents.base.AgentSpecError` when it is not a checkpoint of an RLlib run."""
    raw = str(path)
    p = Path(raw).expanduser()
    if not p.exists():
        raise AgentSpecError(f"RLlib checkpoint {raw}: no such directory")
    if not p.is_dir():
        raise AgentSpecError(f"RLlib checkpoint {raw} is a file; give a checkpoint directory "
                             "(OUT/final or OUT/checkpoints/step_T)")
    if not (p / TAFL_CHECKPOINT).is_file() and (p / "final" / TAFL_CHECKPOINT).is_file():
        p = p / "final"
    record: dict[str, Any] = {}
    if (p / TAFL_CHECKPOINT).is_file():
        try:
            record = json.loads((p / TAFL_CHECKPOINT).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise AgentSpecError(f"RLlib checkpoint {raw}: cannot read {TAFL_CHECKPOINT}: {exc}") from None
        if not isinstance(record, dict):
            raise AgentSpecError(f"RLlib checkpoint {raw}: {TAFL_CHECKPOINT} is not a mapping")
    for candidate in (p / _MODULE_IN_ALGO, p):
        if (candidate / "class_and_ctor_args.pkl").is_file() and any(candidate.glob("*state.*")):
            return candidate, record
    raise AgentSpecError(f"RLlib checkpoint {raw} holds no RLlib module of the learner (expected "
                         f"OUT/final or OUT/checkpoints/step_T written by tafl train with backend: rllib)")


@contextlib.contextmanager
def _quiet_ray():
    """Ray's own warnings (deprecations of its module API) silenced while a module loads: the user
    sees one line, the module's or the error's, not Ray's notes about its internals."""
    ray_logger = logging.getLogger("ray")
    level = ray_logger.level
    ray_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        ray_logger.setLevel(level)


class ModuleAgent(Agent):
    """An agent acting with a :class:`~agents.rllib.module.TaflMaskedRLModule` held in memory."""

    name = "rllib-module"

    def __init__(self, module, deterministic: bool = True, seed: int | None = None):
        super().__init__(seed)
        self.module = module
        self.deterministic = bool(deterministic)

    def choose(self, engine, state) -> np.ndarray:
        from ..nn import masked_sample

        obs = observe(engine, state, state.to_move.astype(np.intp))
        mask = engine.legal_action_mask(state)
        import torch

        logits = torch.as_tensor(self.module.masked_logits(obs, mask))
        return masked_sample(logits, mask, self.rng, self.deterministic)


class RLlibAgent(ModuleAgent):
    """``rllib:DIR``: the learner module of an RLlib run's checkpoint (module docstring)."""

    def __init__(self, path, deterministic: bool = True, seed: int | None = None):
        module_dir, record = find_module_dir(path)
        require("rllib", "an RLlib agent (rllib:DIR)")
        from ray.rllib.core.rl_module.rl_module import RLModule

        try:
            with _quiet_ray():
                module = RLModule.from_checkpoint(str(module_dir.resolve()))   # pyarrow wants an absolute path
        except Exception as exc:
            raise AgentSpecError(f"RLlib checkpoint {path}: cannot load the module: "
                                 f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None
        if not hasattr(module, "masked_logits"):
            raise AgentSpecError(f"RLlib checkpoint {path}: its module ({type(module).__name__}) is not "
                                 "agents.rllib.module.TaflMaskedRLModule")
        module.eval()
        super().__init__(module, deterministic=deterministic, seed=seed)
        self.path = str(path)
        self.info = record.get("tafl_rules") if isinstance(record.get("tafl_rules"), dict) else None
        self.name = f"rllib:{self.path}"
        self._checked: set[RuleSet] = set()

    def check_rules(self, rules: RuleSet) -> str | None:
        """Refuse a game other than the module's (one line); a note when no rules are recorded."""
        n = rules.board_size
        shape = tuple(self.module.observation_space["observation"].shape)
        if shape != (n, n, 14):
            raise AgentSpecError(f"{self.name} plays a {shape[0]}x{shape[1]} board; {rules.name} is {n}x{n}")
        if self.info is None:
            self._checked.add(rules)
            return f"{self.name} records no variant; only its board size ({n}x{n}) was checked against {rules.name}"
        problem = rules_mismatch(self.info, rules)
        if problem:
            raise AgentSpecError(f"{self.name} was trained on {problem} (recorded in {TAFL_CHECKPOINT})")
        self._checked.add(rules)
        return None

    def choose(self, engine, state) -> np.ndarray:
        if engine.rules not in self._checked:
            self.check_rules(engine.rules)
        return super().choose(engine, state)


def _factory(spec, seed=None, **kw):
    return RLlibAgent(spec.path, seed=seed, **kw)


register_agent("rllib", _factory, reads_spec=True)
