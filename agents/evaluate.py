"""The evaluation harness, by concern (this module re-exports every name, old and new):

- :mod:`agents.play` — :func:`play_games`: G games of one attacker agent against one defender
  agent at once, in one batched engine state; optionally recorded in notation.
- :mod:`agents.stats` — scores (draws count ½), :func:`wilson_interval`, :func:`pairing_table`,
  :func:`side_table`.
- :mod:`agents.ratings` — Bradley–Terry (logistic Elo) with a side term: :func:`fit_bradley_terry`,
  :func:`elo_ratings` with intervals.
- :mod:`agents.config` — the config machinery that tournaments and training share:
  :class:`ConfigError`, :class:`FieldSpec`, :func:`check_schema`, :func:`read_yaml_config`.
- :mod:`agents.tournament` — :data:`TOURNAMENT_SCHEMA`, :func:`load_tournament_config`,
  :func:`round_robin` (every pair both ways round, a seed per leg), :func:`run_tournament`.
- :mod:`agents.report` — result files (``results.json``, ``games.csv``, ``ratings.csv``,
  ``ratings.png``, ``records/``), replayable game records, text reports.
- :mod:`agents.gif` — :func:`export_gif`.

    >>> round(elo_difference(0.75), 1)
    190.8
"""

from __future__ import annotations

from .base import AgentSpecError
from .config import ConfigError, FieldSpec, apply_overrides, check_schema, read_yaml_config
from .gif import export_gif
from .play import ATTACKER, DEFENDER, agent_seeds, move_texts, play_games
from .ratings import (DEFAULT_BOOTSTRAP, DEFAULT_PRIOR_SD, ELO_SCALE, elo_difference, elo_ratings,
                      expected_score, fit_bradley_terry)
from .report import (GAME_COLUMNS, format_record, format_report, plot_ratings, replay_command,
                     summary_line, write_results)
from .stats import attacker_score, pairing_table, side_table, wdl, wilson_interval
from .tournament import (TOURNAMENT_SCHEMA, build_agent, leg_seed, load_tournament_config, round_robin,
                         run_tournament, validate_tournament_config)

_wdl = wdl                  # old private names, for code written against the one-module harness
_build_agent = build_agent

__all__ = [
    "AgentSpecError", "ConfigError", "FieldSpec", "apply_overrides", "check_schema", "read_yaml_config",
    "export_gif", "ATTACKER", "DEFENDER", "agent_seeds", "move_texts", "play_games", "DEFAULT_BOOTSTRAP",
    "DEFAULT_PRIOR_SD", "ELO_SCALE", "elo_difference", "elo_ratings", "expected_score", "fit_bradley_terry",
    "GAME_COLUMNS", "format_record", "format_report", "plot_ratings", "replay_command", "summary_line",
    "write_results", "attacker_score", "pairing_table", "side_table", "wdl", "wilson_interval",
    "TOURNAMENT_SCHEMA", "build_agent", "leg_seed", "load_tournament_config", "round_robin",
    "run_tournament", "validate_tournament_config",
]
