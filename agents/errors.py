"""The user errors of the agents package, under one base class.

:class:`AgentsError` is a ``ValueError`` (as each of its subclasses always was), so callers that
catch ``ValueError`` are unaffected, and code that wants every mistake of its user in one clause
(the ``tafl`` add-on commands, which report it as one line) catches it once:

- :class:`~agents.spec.AgentSpecError`: an agent spec that cannot be read or built;
- :class:`~agents.schema.ConfigError`: a bad tournament or training config (names the field);
- :class:`~agents.evaluation.report.OutputDirError`: an output folder that cannot take the results.
- :class:`~agents.evaluation.adapters.AgentError`: an agent being rated failed (it raised, played an
  illegal move or cannot play the variant).

The command line's own :class:`tafl_env.cli.CommandError` stays in ``tafl_env`` (which never
imports ``agents``); the add-on commands turn an ``AgentsError`` into it.

    >>> from agents.base import AgentSpecError
    >>> from agents.schema import ConfigError
    >>> issubclass(AgentSpecError, AgentsError) and issubclass(ConfigError, AgentsError)
    True
    >>> issubclass(AgentsError, ValueError)
    True
"""

from __future__ import annotations

__all__ = ["AgentsError"]


class AgentsError(ValueError):
    """Base class of the agents package's user errors: the message names what to fix."""
