"""Compiled parts of the AlphaZero search (numba kernels over the forest of
:mod:`agents.mcts.kernels`'s array layout):

- :mod:`.gumbel` — the Gumbel root's arithmetic: completed Q-values with the mixed value,
  ``sigma``, the improved policy, the root's Sequential-Halving choice and the deterministic
  interior choice (Danihelka et al. 2022, as mctx implements them);
- :mod:`.forest` — a round of the batched search (walk every tree to its leaves, then expand the
  leaves from one forward pass and back the values up), and the root's outputs (the move, the
  policy target, the search value).
"""

from tafl_env.engine._jit import register_kernel_package

# These kernels inline the engine's helpers: their cache must follow edits of either.
register_kernel_package(__name__)
