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

__all__ = ["Learner", "DivergedError", "network_problem", "loss_terms"]


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


def loss_terms(logits: th.Tensor, value: th.Tensor, actions: th.Tensor, targets: th.Tensor,
               values: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
    """Per position: the cross-entropy of the policy ``targets`` (over the stored legal
    ``actions``, -1 padded) against the softmax of ``logits`` over those actions, the targets'
    own entropy (cross-entropy minus entropy is the policy's KL to them) and the value's squared
    error against ``values``: the loss of the module docstring, before its means."""
    legal = actions >= 0
    picked = logits.gather(1, actions.clamp(min=0)).masked_fill(~legal, -1e9)
    logp = th.log_softmax(picked, dim=1).masked_fill(~legal, 0.0)
    cross_entropy = -(targets * logp).sum(1)
    entropy = -(targets * th.log(targets.clamp(min=1e-12))).sum(1)
    return cross_entropy, entropy, (value - values) ** 2


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
        cross_entropy, entropy, squared = loss_terms(logits, v, acts, tgt, z)
        policy_loss = cross_entropy.mean()
        value_loss = squared.mean()
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
        return {"loss": loss.item(), "policy_loss": policy_loss.item(), "value_loss": value_loss.item(),
                "policy_kl": (policy_loss - entropy.mean()).item()}
