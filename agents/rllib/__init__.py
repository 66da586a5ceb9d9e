"""Scale-out on Ray: RLlib self-play training from the project's configs, RLlib modules as agents,
and the Ray session in which games run as Ray tasks (``tafl eval --ray``, ``tafl rate --ray``:
:class:`agents.evaluation.matches.ChunkRunner`). Needs the ``rllib`` extra (``ray[rllib]``).

One job per module:

- :mod:`agents.rllib.env`: the PettingZoo env as an RLlib ``MultiAgentEnv``, with the league's
  fixed opponents (greedy, random) inside it;
- :mod:`agents.rllib.module`: :class:`~agents.rllib.module.TaflMaskedRLModule`, the board network
  with action masking;
- :mod:`agents.rllib.league`: the agent-to-module mapping, snapshots added from a callback, win
  rates per episode kind and side;
- :mod:`agents.rllib.config`: the ``backend: rllib`` config schema (``configs/rllib/*.yaml``);
- :mod:`agents.rllib.trainer`: ``tafl train`` with such a config;
- :mod:`agents.rllib.agent`: the agent ``rllib:DIR`` of a checkpoint.

The Ray session the commands share (joining a cluster or starting a local Ray) is
:mod:`agents.ray_session`; the network and the warm start are the PPO stack's
(:mod:`agents.ppo.network`, :mod:`agents.ppo.imitation`).

Importing this package imports nothing of Ray; the modules that need it import it.
"""
