"""Self-play training, one module per concern (the overview is :mod:`agents.train_selfplay`):

- :mod:`.config`: the config schema (:data:`~.config.TRAIN_SCHEMA`) and its validation;
- :mod:`.league`: the league VecEnv and the frozen snapshot opponent;
- :mod:`.imitation`: the optional behaviour-cloning warm start on the greedy agent;
- :mod:`.evaluation`: the policy against fixed opponents, ``eval.csv``/``eval.json``, the learning curve;
- :mod:`.callback`: what happens during PPO (snapshots, evaluations, checkpoints, time limit, progress);
- :mod:`.checkpoints`: the pool file (safe to load), the rules record of a model, checks before resuming;
- :mod:`.progress`: the progress bars;
- :mod:`.run`: :func:`~.run.train`, the checks before a run, the whole run and its output directory.

Import the public names from :mod:`agents.train_selfplay`.
"""
