"""The OpenTafl Engine Protocol (OTEP) both ways: this project's agents as OpenTafl engines, and
OpenTafl engines as this project's agents.

- ``tafl otep --agent SPEC`` (:mod:`.command`, :mod:`.engine`): any agent answers an OTEP host
  (OpenTafl, or the ``otep:`` agent) on stdin and stdout.
- ``otep:COMMAND`` / ``otep:FILE.ini`` (:mod:`.host`): any OTEP engine plays as an
  :class:`~agents.base.Agent` (``tafl play``, ``tafl eval``, ``tafl rate``). It runs the program
  the spec names, so a data file may not name it, only a command line or a call's own argument.

Rules travel as OpenTafl rules strings (:mod:`tafl_env.opentafl`); docs/opentafl.md has the whole
story.
"""

from __future__ import annotations

from ..lazy import lazy_exports

# lazy: ``tafl otep`` imports this package and must say hello before the engine loads
_EXPORTS = {"OtepAgent": ".host", "OtepError": ".host", "engine_command": ".host"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
