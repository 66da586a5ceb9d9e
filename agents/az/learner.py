"""The learner: minibatches from the replay window, augmented by the board's symmetries, and the
AlphaZero loss

``loss = CE(pi_target, softmax over the stored legal actions of the logits)
         + value_weight * (v - z)^2``

(the weight decay is the optimiser's: AdamW). Each sample gets a symmetry drawn uniformly from
the variant's set (:mod:`.symmetry`): its planes and its actions are mapped together, so the
network sees every position in all the orientations the rules cannot tell apart.

A step whose loss or gradient is not finite raises :class:`DivergedError` before the optimiser
moves: once a network holds nan, every later step, checkpoint and evaluation would be nan too
(and still look like a run), so training stops there instead.
"""

from __future__ import annotations

import numpy as np
import torch as th

from ..schema import ConfigError
from .network import AZNet
from .replay import ReplayWindow, decode_planes
from .symmetry import Symmetry

__all__ = ["Learner", "DivergedError", "network_problem"]


class DivergedError(ConfigError):
    """Training diverged: the loss, a gradient or the network's output is nan or inf (one line;
    a :class:`~agents.schema.ConfigError`, as the usual cause is a setting, such as the
    learning rate, and the command line reports it as one)."""

    def __init__(self, message: str):
        self.detail = message
        super().__init__("<loss>", message, "az training")


def network_problem(net: AZNet, probe: th.Tensor) -> str | None:
    """Why ``net`` cannot be kept, or None: a weight that is nan or inf, or nan or inf outputs
    on ``probe`` (observation planes). Finite weights may still overflow: an absurd step leaves
    weights near 1e30, whose products are inf."""
    for name, tensor in net.state_dict().items():
        if tensor.is_floating_point() and not bool(th.isfinite(tensor).all()):
            return f"its weight {name} holds nan or inf"
    with th.no_grad():
        logits, value = net(probe)
    if not (bool(th.isfinite(logits).all()) and bool(th.isfinite(value).all())):
        return "its outputs are nan or inf"
    return None


class Learner:
    """Optimiser steps on ``net`` (AdamW; ``lr``, ``weight_decay``; global gradient norm clipped
    at ``max_grad_norm``)."""

    def __init__(self, net: AZNet, symmetries: list[Symmetry], lr: float = 1e-3,
                 weight_decay: float = 1e-4, value_weight: float = 1.0, max_grad_norm: float = 5.0,
                 device: str = "cpu"):
        self.net = net
        self.symmetries = symmetries
        self.device = th.device(device)
        self.value_weight = float(value_weight)
        self.max_grad_norm = float(max_grad_norm)
        self.optimizer = th.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
        self.steps = 0

    def augmented(self, window: ReplayWindow, idx: np.ndarray, rng: np.random.Generator) -> tuple:
        """Planes (float32), actions, targets and values of rows ``idx``, each under a random
        symmetry of the set."""
        planes = decode_planes(window.obs[idx])
        actions = window.actions[idx].astype(np.int64)
        which = rng.integers(0, len(self.symmetries), size=len(idx))
        for j, sym in enumerate(self.symmetries):
            rows = np.flatnonzero(which == j)
            if sym.name == "identity" or not len(rows):
                continue
            planes[rows] = sym.planes(planes[rows])
            a = actions[rows]
            actions[rows] = np.where(a >= 0, sym.actions[np.maximum(a, 0)], -1)
        return planes, actions, window.targets[idx], window.values[idx]

    def step(self, window: ReplayWindow, batch: int, rng: np.random.Generator) -> dict:
        """One optimiser step on a minibatch of ``batch`` positions; returns the losses."""
        planes, actions, targets, values = self.augmented(window, window.sample(batch, rng), rng)
        dev = self.device
        obs = th.from_numpy(planes).to(dev)
        acts = th.from_numpy(actions).to(dev)
        tgt = th.from_numpy(targets).to(dev)
        z = th.from_numpy(values).to(dev)
        self.net.train()
        logits, v = self.net(obs)
        legal = acts >= 0
        picked = logits.gather(1, acts.clamp(min=0)).masked_fill(~legal, -1e9)
        logp = th.log_softmax(picked, dim=1).masked_fill(~legal, 0.0)
        policy_loss = -(tgt * logp).sum(1).mean()
        value_loss = ((v - z) ** 2).mean()
        loss = policy_loss + self.value_weight * value_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = th.nn.utils.clip_grad_norm_(self.net.parameters(), self.max_grad_norm)
        if not bool(th.isfinite(loss) & th.isfinite(norm)):   # one device sync for both
            self.optimizer.zero_grad(set_to_none=True)       # the weights were not touched
            if not bool(th.isfinite(loss)):
                raise DivergedError(f"the loss is {loss.item()} at learner step {self.steps + 1} (policy "
                                    f"{policy_loss.item():.4g}, value {value_loss.item():.4g})")
            raise DivergedError(f"the gradient norm is {norm.item()} at learner step {self.steps + 1}")
        self.optimizer.step()
        self.steps += 1
        with th.no_grad():
            target_entropy = -(tgt * th.log(tgt.clamp(min=1e-12))).sum(1).mean()
        return {"loss": loss.item(), "policy_loss": policy_loss.item(), "value_loss": value_loss.item(),
                "policy_kl": (policy_loss - target_entropy).item()}
