"""Sequential Halving's schedule at the Gumbel root (mctx's ``seq_halving.py``).

With ``m`` considered actions and ``n`` simulations, the root visits the ``m`` actions of the
highest ``g + logits`` once each, then keeps the better half (by ``g + logits + sigma(q)``) and
visits each of them again, and so on down to two actions; each phase gets
``max(1, floor(n / (ceil(log2 m) * considered)))`` visits per action. The schedule is written as
the visit count that the action chosen at each simulation must have
(:func:`considered_visits`): the compiled root (:func:`agents.az.kernels.gumbel.pick_root`)
takes, among the actions with exactly that many visits, the best by
``g + logits + sigma(completed Q)``, which is the halving.

    >>> considered_visits(4, 10)
    (0, 0, 0, 0, 1, 1, 2, 2, 3, 3)
    >>> considered_visits(1, 3)
    (0, 1, 2)
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["considered_visits", "halving_table"]


def considered_visits(max_considered: int, simulations: int) -> tuple[int, ...]:
    """The visit count of the action chosen at each of ``simulations`` simulations with
    ``max_considered`` actions considered (mctx's ``get_sequence_of_considered_visits``)."""
    if max_considered <= 1:
        return tuple(range(simulations))
    log2max = int(math.ceil(math.log2(max_considered)))
    sequence: list[int] = []
    visits = [0] * max_considered
    considered = max_considered
    while len(sequence) < simulations:
        extra = max(1, int(simulations / (log2max * considered)))
        for _ in range(extra):
            sequence.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return tuple(sequence[:simulations])


@lru_cache(maxsize=64)
def halving_table(max_considered: int, simulations: int) -> np.ndarray:
    """``(max_considered + 1, simulations)`` int64: row ``k`` is :func:`considered_visits` of
    ``k`` actions (a root with fewer legal moves than ``max_considered`` uses its own row)."""
    table = np.array([considered_visits(k, simulations) for k in range(max_considered + 1)],
                     dtype=np.int64).reshape(max_considered + 1, simulations)
    table.setflags(write=False)
    return table
