"""Compiled search for the agents: greedy scoring and MCTS as numba kernels on top of the engine's
kernels and tables (:mod:`tafl_env.engine`). Nothing here keeps a second copy of the rules: board
geometry, side membership and action decoding are read from ``Engine.kernel_tables``; the few
extra tables the evaluation needs (:mod:`.tables`) are derived from those.

- :mod:`.tables` — the evaluation's tables (escape masks per ray, distance to escape, the ring
  table of the encirclement filter), built from the engine's kernel tables;
- :mod:`tafl_env.engine.rows` (the engine's) — copying games between rows of a work State and stepping them;
- :mod:`.greedy` — one node's scoring (win now, the exact opponent check, captures, E);
- :mod:`.mcts` — trees as arrays, selection, expansion, backup, tree reuse.
"""

from tafl_env.engine._jit import register_kernel_package

# These kernels inline the engine's helpers: their cache must follow edits of either.
register_kernel_package(__name__)
