"""Agents for tafl-env: each acts for the side to move in every game of a batch at once.

See :class:`agents.base.Agent` for the interface; :func:`agents.make_agent` builds one from a short
spec such as ``"random"``, ``"greedy"``, ``"mcts:64"`` or ``"mcts:64:random:uniform"``.
"""

from .base import Agent, AgentSpecError, make_agent, register_agent
from .errors import AgentsError
from .random_agent import RandomAgent

__all__ = ["Agent", "AgentSpecError", "AgentsError", "RandomAgent", "make_agent", "register_agent"]
