"""The evaluators of the MCTS agent (:class:`agents.mcts.MCTSAgent`): what a new leaf's priors
and value are. They are injected, as in OpenSpiel's ``MCTSBot(game, ..., evaluator, solve=True)``:

- :class:`GreedyEvaluator` (the default): priors from the greedy agent's scoring of every move
  (a softmax of captures and evaluation over the safe moves), the leaf value from its best safe
  move; moves that lose at once or let the opponent win at once are marked lost.
- :class:`RolloutEvaluator`: the leaf value is the mean result of playouts (random moves, or the
  greedy agent's) from the leaf, run inside the compiled search; priors uniform (plain UCT with
  ``MCTSAgent``'s default selection for them) or the greedy ones.
- :class:`NetworkEvaluator`: a trained ``policy:PATH`` model (MaskablePPO): its policy logits,
  masked to the legal moves and softmaxed, are the priors, its value head the leaf value for the
  side to move. The search batches the leaves of every tree of a batch into one forward pass.

The first two run inside the compiled search (:mod:`agents.mcts.kernels`); they are descriptions
the search reads (``kernel_config``). The network evaluator is called from Python once per round
of the batched search (:mod:`agents.mcts.netsearch`) through :meth:`NetworkEvaluator.evaluate`.
"""

from __future__ import annotations

import os

import numpy as np

from tafl_env.engine import Engine, State

from . import kernels as _m

__all__ = ["Evaluator", "GreedyEvaluator", "NetworkEvaluator", "RolloutEvaluator"]

_PLAYOUTS = {"random": _m.PLAYOUT_RANDOM, "greedy": _m.PLAYOUT_GREEDY}
_PRIORS = {"greedy": _m.PRIOR_GREEDY, "uniform": _m.PRIOR_UNIFORM}


class Evaluator:
    """Base class: ``prior`` names the priors (``"greedy"``, ``"uniform"``, ``"policy"``) and
    ``playout`` the leaf values' playouts (``"none"``, ``"random"``, ``"greedy"``)."""

    prior = "greedy"
    playout = "none"
    compiled = True    # evaluated inside the compiled search (False: the batched network search)

    def kernel_config(self, selection: str) -> np.ndarray:
        cfg = np.zeros(_m.CFG_SIZE, dtype=np.int64)
        cfg[_m.C_PRIOR] = _PRIORS.get(self.prior, -1)
        cfg[_m.C_SELECT] = _m.SELECT_UCT if selection == "uct" else _m.SELECT_PUCT
        cfg[_m.C_LEAF] = _m.LEAF_GREEDY
        cfg[_m.C_ROLLOUTS] = 1
        return cfg

    def check_rules(self, rules) -> str | None:
        return None


class GreedyEvaluator(Evaluator):
    """Greedy priors and heuristic leaf values (agents/mcts/agent.py, "Expansion" and "Leaf values")."""

    def __repr__(self) -> str:
        return "GreedyEvaluator()"


class RolloutEvaluator(Evaluator):
    """Leaf values from playouts, run in the compiled search on a work row.

    Args:
        playout: ``"random"`` (uniformly random legal moves, the engine's own random action) or
            ``"greedy"`` (the greedy agent's choice at every ply, exact ties at random).
        prior: ``"uniform"`` (every legal move alike, nothing scored below the root) or
            ``"greedy"`` (the greedy scoring, with its lost and unsafe moves).
        rollouts: playouts per leaf (their results averaged).
        max_turns: actions (plies, berserk continuations included) per playout; a playout cut
            there is worth the static value ``tanh((E - E0) / value_scale)`` of its last position,
            a finished one +1 / -1 (a draw 0), for the side to move at the leaf.
    """

    def __init__(self, playout: str = "random", prior: str = "uniform", rollouts: int = 1,
                 max_turns: int = 40):
        if playout not in _PLAYOUTS:
            raise ValueError(f"playout must be one of {tuple(_PLAYOUTS)}, got {playout!r}")
        if prior not in _PRIORS:
            raise ValueError(f"prior must be one of {tuple(_PRIORS)}, got {prior!r}")
        for key, val in (("rollouts", rollouts), ("max_turns", max_turns)):
            if isinstance(val, bool) or int(val) != val or int(val) < 1:
                raise ValueError(f"{key} must be an integer >= 1, got {val!r}")
        self.playout, self.prior = playout, prior
        self.rollouts, self.max_turns = int(rollouts), int(max_turns)

    def kernel_config(self, selection: str) -> np.ndarray:
        cfg = super().kernel_config(selection)
        cfg[_m.C_LEAF] = _m.LEAF_PLAYOUT
        cfg[_m.C_PLAYOUT] = _PLAYOUTS[self.playout]
        cfg[_m.C_ROLLOUTS] = self.rollouts
        cfg[_m.C_MAX_TURNS] = self.max_turns
        return cfg

    def __repr__(self) -> str:
        return (f"RolloutEvaluator(playout={self.playout!r}, prior={self.prior!r}, "
                f"rollouts={self.rollouts}, max_turns={self.max_turns})")


class NetworkEvaluator(Evaluator):
    """A trained MaskablePPO model as prior and value (AlphaZero-style leaf evaluation).

    ``policy`` is a model path (as in the ``policy:PATH`` agent: checked and loaded by
    :class:`agents.ppo.policy.PolicyAgent`, which also refuses a model of another game) or a
    ``PolicyAgent``. :meth:`evaluate` runs the policy network once on a batch of positions:
    the observations are :func:`tafl_env.observation.observe` from the side to move, as in
    training, so the value head predicts the side to move's return (+1 win, -1 loss, 0 draw; it
    is clipped to [-1, 1]).
    """

    prior = "policy"
    compiled = False

    def __init__(self, policy, device: str = "cpu", threads: int | None = None):
        from ..ppo.policy import PolicyAgent

        if threads is not None and (isinstance(threads, bool) or int(threads) != threads or threads < 1):
            raise ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
        self.threads = threads
        self.agent = policy if isinstance(policy, PolicyAgent) else PolicyAgent(policy, device=device)
        self.path = self.agent.path
        self.policy = self.agent.policy
        self.policy.set_training_mode(False)

    def check_rules(self, rules) -> str | None:
        return self.agent.check_rules(rules)

    def forward(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw ``(logits (B, A), values (B,))`` of a batch of observations: one pass of the
        policy's feature extractor and heads (what ``ActorCriticPolicy.forward`` computes)."""
        import torch as th

        pol = self.policy
        old = th.get_num_threads()
        if self.threads is not None:
            th.set_num_threads(self.threads)
        try:
            return self._forward(th, pol, obs)
        finally:
            if self.threads is not None:
                th.set_num_threads(old)

    @staticmethod
    def _forward(th, pol, obs):
        with th.no_grad():
            obs_t = th.as_tensor(obs, device=pol.device)
            if pol.share_features_extractor:
                latent_pi, latent_vf = pol.mlp_extractor(pol.extract_features(obs_t, pol.features_extractor))
            else:
                latent_pi = pol.mlp_extractor.forward_actor(
                    pol.extract_features(obs_t, pol.pi_features_extractor))
                latent_vf = pol.mlp_extractor.forward_critic(
                    pol.extract_features(obs_t, pol.vf_features_extractor))
            logits = pol.action_net(latent_pi)
            values = pol.value_net(latent_vf)
        return (logits.cpu().numpy().astype(np.float64),
                values.cpu().numpy().astype(np.float64).reshape(len(obs)))

    def evaluate(self, engine: Engine, state: State) -> tuple[np.ndarray, np.ndarray]:
        """``(priors (B, A), values (B,))`` for running positions: the softmax of the logits over
        each position's legal moves (0 elsewhere) and the value for its side to move."""
        from tafl_env.observation import observe

        obs = observe(engine, state, state.to_move.astype(np.intp))
        mask = engine.legal_action_mask(state).astype(bool)
        logits, values = self.forward(obs)
        z = np.where(mask, logits, -np.inf)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        return p, np.clip(values, -1.0, 1.0)

    def __repr__(self) -> str:
        return f"NetworkEvaluator({os.fspath(self.path)!r})"
