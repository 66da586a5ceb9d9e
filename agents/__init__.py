"""Agents for tafl-env: each acts for the side to move in every game of a batch at once.

See :class:`agents.base.Agent` for the interface; :func:`agents.make_agent` builds one from a short
spec such as ``"random"``, ``"greedy"``, ``"mcts:64"`` or ``"mcts:64:random:uniform"``.

The names below load on first use (PEP 562), so ``import agents.spec`` or an add-on command such as
``tafl otep`` does not pull in the engine and its compiled kernels before it needs them.
"""

from __future__ import annotations

from .lazy import lazy_exports

_EXPORTS = {"Agent": ".base", "make_agent": ".base", "register_agent": ".base",
            "AgentSpecError": ".spec", "AgentsError": ".errors", "RandomAgent": ".random_agent"}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
