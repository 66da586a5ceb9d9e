"""The MCTS agent: PUCT or UCT over an injected evaluator, a solver, trees kept between moves.

- :mod:`.agent` — :class:`~.agent.MCTSAgent` (``mcts:N``, ``mcts:Ts``): budgets, tree reuse,
  the move played;
- :mod:`.evaluators` — what a new leaf's priors and value are: the greedy scoring, playouts, or a
  trained network (the OpenSpiel design: ``MCTSAgent(simulations, evaluator=...)``);
- :mod:`.kernels` — the compiled search: trees as records of arrays (:class:`~.kernels.Nodes`,
  :class:`~.kernels.Edges`), selection, expansion, backup, proofs, tree reuse;
- :mod:`.netsearch` — the batched search of a whole forest with one network forward pass per
  round, PUCT or a Gumbel root (the network evaluator's, and the AlphaZero search's);
- :mod:`.gumbel` — the Gumbel root: Sequential Halving's schedule, completed Q-values, the
  improved policy (Danihelka et al. 2022, as mctx implements it);
- :mod:`.forest` — a batch's trees as one forest of arrays that grow together.
"""

from tafl_env.engine._jit import register_kernel_package

# These kernels inline the engine's helpers: their cache must follow edits of either.
register_kernel_package(__name__)

from .agent import MCTSAgent  # noqa: E402  (after the registration: it defines kernels)

__all__ = ["MCTSAgent"]
