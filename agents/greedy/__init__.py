"""The greedy agent: one ply, with captures, the opponent's immediate wins and a small evaluation.

- :mod:`.agent` — :class:`~.agent.GreedyAgent` (``greedy``): its documented preference order and
  evaluation, and the work rows it searches on;
- :mod:`.kernels` — the compiled scoring of one node (win now, the exact opponent check, captures,
  the evaluation ``E``), which the MCTS agent's priors and leaf values use too;
- :mod:`.scoring` — the scores and weights, and the evaluation's tables (escape masks per ray,
  distance to escape, the ring table of the encirclement filter) derived from the engine's tables.

Nothing here keeps a second copy of the rules: board geometry, side membership and action
decoding are read from ``Engine.kernel_tables``.
"""

from tafl_env.engine._jit import register_kernel_package

# These kernels inline the engine's helpers: their cache must follow edits of either.
register_kernel_package(__name__)

from .agent import GreedyAgent  # noqa: E402  (after the registration: it defines kernels)

__all__ = ["GreedyAgent"]
