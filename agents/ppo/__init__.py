"""The PPO stack: Stable-Baselines3 / sb3-contrib's MaskablePPO, its board network, the agent that
plays a trained model (``policy:PATH``, ``policy:<variant>``, ``unpickle-policy:PATH``) and
self-play training, one network for both sides, against a league of opponents.

Run it with ``tafl train --config configs/train/<variant>.yaml`` (or :func:`agents.ppo.run.train`
from Python).

**One network for both sides.** The attackers and the defenders share one policy/value network.
The observation is always from the point of view of the side to act (own/enemy piece planes) and
plane 10 says whether that side is the defenders (:mod:`tafl_env.observation`), so the network can
still play two different games; sharing means every game trains it twice (once per side), the
features that both sides need (where the king can run, which pieces hang) are learnt once, and
a single checkpoint plays either side (``tafl play ... --vs policy:PATH`` for both).

**The league.** Each rollout mixes four groups of games, sizes set in the config:

- ``selfplay_games``: the learner plays both sides (two VecEnv slots per game, the waiting slot can
  only pass; :class:`tafl_env.sb3.TaflSB3VecEnv` self-play mode);
- ``snapshot_games``: the learner against a *frozen past version of itself*, drawn at the start of
  every rollout from a pool of the last ``pool_size`` snapshots (one taken every
  ``snapshot_every`` steps; the pool starts with the initial network). The snapshot samples from
  its masked policy. Playing only its latest self lets a policy chase its own tail (forgetting how
  to beat older strategies); the pool keeps old strategies in the mix;
- ``greedy_games`` and ``random_games``: the learner against the greedy agent
  (:mod:`agents.greedy`, acting on the engine state through
  :class:`tafl_env.vector.EngineOpponent`) and against uniform random play: fixed, non-learning
  opponents that anchor the learner to an absolute standard.
- ``greedy_attacker_games`` (optional, 0 by default): more games against the greedy agent in which
  the learner always plays the attackers (group ``greedy_attacker``), for a variant where the
  attackers' side is the harder one to learn (Tablut) and would otherwise get only half of the
  greedy games.

In every other opponent game the learner's side alternates from episode to episode. All groups are
sides of one :class:`tafl_env.sb3.ConcatTaflVecEnv`; PPO sees only the learner's moves.

**Rewards.** +1 win, −1 loss, 0 draw and truncation (DESIGN.md); no shaping.

**Optional warm start** (``imitation_games > 0``; off by default). Before PPO, the network is fitted
to the moves of the greedy agent in ``imitation_games`` greedy-vs-greedy games (a quarter of the
moves played at random for variety, ``imitation_epsilon``): cross-entropy over the legal moves for
the policy, and the discounted game results for the value head (:mod:`agents.ppo.imitation`).
With ``imitation_target: best`` the policy target is instead the whole set of moves that the greedy
agent scores best (it often has several equal moves and picks one at random; fitting its random pick
caps the accuracy and blurs the policy), with the loss ``-log`` of the probability of that set.
``imitation_lr`` and ``imitation_batch_size`` set the warm start's own learning rate and minibatch
(default: PPO's). It is behaviour cloning, not self-play, and only a starting point: on a 2-core CPU
it replaces the first minutes in which PPO from scratch learns what a move is worth. The tuned
configs of legacy_ard_ri and historical_tablut use it (the recorded results say so); its time counts
towards ``max_minutes``.

**Outputs** (``output_dir``): ``config.yaml`` (the resolved config), ``command.txt``, ``tb/``
(TensorBoard and ``progress.csv``: SB3's ``train/*`` losses, ``league/*`` win rates of finished
training games per group and side, ``eval/*`` win rates of the periodic evaluations,
``imitation/*`` per warm-start epoch at steps 1, 2, ...), ``checkpoints/step_<T>.zip`` (with
``step_<T>.pool.pt``, the snapshot pool, for resuming), ``final.zip``, ``eval.csv`` and
``eval.json`` (every evaluation: win/draw/loss counts per opponent and side with Wilson 95%
intervals), ``final_eval.json``, ``learning_curve.png`` and ``summary.json``. A run removes the
results of an earlier run in the same directory that it might not write again (``final_eval.json``
after ``--no-eval``; when starting afresh also the evaluations, the curve and the TensorBoard
events), so nothing stale is left. Every model zip records the variant and rules it was trained
under (``tafl_rules``, :mod:`agents.model_rules`; :mod:`agents.ppo.checkpoints`).

**Checks first.** Before anything is written or trained, :func:`agents.ppo.run.preflight`
checks the output directory, the checkpoint to resume from (a genuine checkpoint of this variant
and these rule options) and every evaluation opponent (it must build and play a move): a mistake
stops the run with one line (``tafl train`` exits with status 2).

**Progress.** With ``progress_bar`` (the default), bars on stderr for every stage: the warm start's
games and fitting, PPO, each evaluation and the final one.

**Evaluation.** Every ``eval_every`` steps and at the end, the current policy (greedy argmax over
legal moves unless ``eval_deterministic: false``) plays ``eval_games`` games per side against each
of ``eval_opponents`` through :func:`agents.evaluation.play.play_games`
(:mod:`agents.evaluation.learning_curve`, which the other trainers use too).

**Resuming.** ``tafl train --config C --resume OUT/checkpoints/step_T.zip`` reloads the model, the
optimiser and the snapshot pool and continues to ``total_timesteps``; ``tb/progress.csv`` and
``eval.json`` keep the rows up to step T and go on from there. The pool file holds only tensors and
plain values and is read with ``torch.load(weights_only=True)``, so a crafted one cannot run code;
the model zip, like every SB3 checkpoint, unpickles objects on load: resume only from your own runs
or a trusted source.

**Modules**, one per concern:

- :mod:`.policy`: the ``policy:`` / ``unpickle-policy:`` agents (a saved model, loaded without
  unpickling), :class:`~.policy.NetAgent` (a network held in memory), saving and stamping zips;
- :mod:`.network`: the board network (:class:`~.network.TaflBoardPolicy`);
- :mod:`.config`: the config schema (:data:`~.config.TRAIN_SCHEMA`) and its validation;
- :mod:`.league`: the league VecEnv and the frozen snapshot opponent;
- :mod:`.imitation`: the optional behaviour-cloning warm start on the greedy agent;
- :mod:`.callback`: what happens during PPO (snapshots, evaluations, checkpoints, time limit, progress);
- :mod:`.checkpoints`: the pool file (safe to load), a model's rules and a checkpoint checked before resuming;
- :mod:`.run`: :func:`~.run.train`, the checks before a run, the whole run and its output directory.

What the other stacks share with this one is below them: the evaluations and the learning curve
(:mod:`agents.evaluation.learning_curve`), the progress bars (:mod:`agents.progress`), the shared
config fields (:mod:`agents.train_fields`), the rules record (:mod:`agents.model_rules`), the
network blocks (:mod:`agents.nn`).

Importing this package imports nothing (as :mod:`agents.az` and :mod:`agents.rllib`): the
``policy:`` agent loads :mod:`.policy` alone, and torch and SB3 come only with a network.
"""
