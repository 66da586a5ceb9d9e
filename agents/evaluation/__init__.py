"""Evaluation: playing agents against each other and measuring them, by concern.

- :mod:`.play` — :func:`~.play.play_games`: G games of one attacker agent against one defender
  agent at once, in one batched engine state; optionally recorded in notation.
- :mod:`.stats` — scores (draws count ½), Wilson intervals, pairing and side tables.
- :mod:`.ratings` — Bradley–Terry (logistic Elo) with a side term, with profile-likelihood intervals.
- :mod:`.tournament` — round-robin tournaments from a YAML config (``tafl eval``): paired openings,
  seeded chunks of games played by :class:`~.matches.ChunkRunner` (here, ``jobs`` processes or Ray).
- :mod:`.report` — result files (``results.json``, ``games.csv``, ``ratings.csv``, ``ratings.png``,
  ``records/``), replayable game records, text reports.
- :mod:`.gif` — :func:`~.gif.export_gif`, an animated game.

The config machinery that tournaments share with training is :mod:`agents.schema`; the evaluations
of a training run and its learning curve are :mod:`.learning_curve`.
"""
