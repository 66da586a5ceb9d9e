"""AlphaZero-style learned search: self-play with the compiled batched search, a replay window, a
learner, safe checkpoints, and the ``az:`` / ``azpolicy:`` agents.

One job per module:

- :mod:`.network` — the policy-value network (action-layout logits, tanh value) and its evaluator;
- :mod:`.search` — the search driver (:class:`~.search.BatchedSearch`) over the batched network
  search of :mod:`agents.mcts.netsearch` with the Gumbel root of :mod:`agents.mcts.gumbel`;
- :mod:`.symmetry` — the board symmetries a variant keeps, on squares, actions and observations;
- :mod:`.selfplay` — batched self-play games that record positions and targets;
- :mod:`.replay` — the replay window;
- :mod:`.learner` — the loss and the optimiser steps;
- :mod:`.checkpoint` — weights as tensors plus a JSON record, loaded with ``weights_only=True``;
- :mod:`.config` — the ``backend: az`` config schema (``configs/az/*.yaml``);
- :mod:`.train` — the training loop behind ``tafl train``; :mod:`.workers` — Ray self-play actors;
- :mod:`.agent` — ``az:PATH[:SIMS]``, ``az:<variant>``, ``azpolicy:PATH``.
"""
