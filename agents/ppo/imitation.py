"""The optional warm start: behaviour cloning of the greedy agent before PPO (``imitation_games > 0``).

:func:`imitation_data` plays greedy-vs-greedy games (a share of the moves at random for variety)
and records each position with the greedy move (or, with ``imitation_target: best``, the whole set
of moves the greedy agent scores best) and the discounted result; :func:`imitate` fits the policy
and value heads to them. The module docstring of :mod:`agents.ppo` explains the choice.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from tafl_env.engine import State

from ..progress import Throttle, progress_bar
from ..train_fields import rules_of

__all__ = ["greedy_best", "imitation_data", "imitate"]


def greedy_best(greedy, eng, sub: State) -> tuple[np.ndarray, np.ndarray]:
    """The greedy agent's choice and its whole set of best moves (ties), from one scoring pass:
    ``(actions (R,), packed best-move bits (R, ceil(A/8)) uint8)``. The choice is a uniform draw
    from the set, made by the agent's own tie-break (:meth:`GreedyAgent.pick`)."""
    scores, parent, action = greedy.score_moves(eng, sub)
    r = len(sub)
    top = np.full(r, -np.inf)
    np.maximum.at(top, parent, scores)
    best = scores >= top[parent]
    bits = np.zeros((r, eng.num_actions), dtype=bool)
    bits[parent[best], action[best]] = True
    return greedy.pick(r, scores, parent, action), np.packbits(bits, axis=1)


def imitation_data(cfg: Mapping[str, Any], games: int, seed: int, batch: int = 128, progress: bool = False):
    """Positions of greedy-vs-greedy games: ``(obs float16, mask bool, greedy action, value target)``,
    and with ``imitation_target: best`` a fifth array, the greedy agent's set of best moves in each
    position (packed bits, ``np.packbits(..., axis=1)`` of a (positions, A) bool array).

    With probability ``imitation_epsilon`` a move is played at random instead (the recorded target
    is still the greedy agent's choice), so the games vary. The value target is the final result
    from the mover's side, discounted by ``gamma`` per own move still to come. With ``progress``, a
    bar counts the finished games.
    """
    from tafl_env.game import engine_for
    from tafl_env.observation import observe

    from ..greedy import GreedyAgent

    rules = rules_of(cfg)
    eng = engine_for(rules)
    rng = np.random.default_rng(seed)
    greedy = GreedyAgent(seed=seed)
    best_mode = cfg.get("imitation_target", "move") == "best"
    obs_l, mask_l, act_l, val_l, best_l = [], [], [], [], []
    done_games = 0
    bar = progress_bar(games, "warm start: greedy games", "game", progress)
    tick = Throttle(1.0)
    while done_games < games:
        b = min(batch, games - done_games)
        st = eng.initial_state(b)
        rec = []   # (game idx, side, turn, obs, mask, action)
        finished = 0
        while not st.done.all():
            now = int(st.done.sum())
            if now > finished:
                bar.update(now - finished)
                finished = now
            if progress and tick():
                bar.set_postfix_str(f"turn {int(st.turn.max())}")
            live = np.flatnonzero(~st.done)
            sub = st.take(live)
            if best_mode:
                acts, best = greedy_best(greedy, eng, sub)
            else:
                acts, best = greedy.act(eng, sub), None
            obs = observe(eng, sub, sub.to_move.astype(np.intp)).astype(np.float16)
            mask = eng.legal_action_mask(sub).astype(bool)
            rec.append((live, sub.to_move.copy(), sub.turn.copy(), obs, mask, acts.copy(), best))
            play = acts.copy()
            rand = rng.random(len(live)) < cfg["imitation_epsilon"]
            if rand.any():
                play[rand] = eng.random_actions(sub, rng)[rand]
            full = np.full(b, -1, dtype=np.int64)
            full[live] = play
            eng.step(st, full)
        winner, final_turn = st.winner.copy(), st.turn.copy()
        for live, side, turn, obs, mask, acts, best in rec:
            w = winner[live]
            z = np.where(w == side, 1.0, np.where(w == 1 - side, -1.0, 0.0))
            remaining = np.maximum(final_turn[live] - turn, 0) / 2.0
            val_l.append((z * cfg["gamma"] ** remaining).astype(np.float32))
            obs_l.append(obs)
            mask_l.append(mask)
            act_l.append(acts)
            if best is not None:
                best_l.append(best)
        done_games += b
        bar.update(b - finished)
    bar.close()
    out = (np.concatenate(obs_l), np.concatenate(mask_l), np.concatenate(act_l).astype(np.int64),
           np.concatenate(val_l))
    if best_mode:
        out += (np.concatenate(best_l),)
    return out


def imitate(model, data, cfg: Mapping[str, Any], seed: int, logger=None, progress: bool = False) -> dict[str, float]:
    """Fit the policy to the greedy moves and the value head to the results (MSE),
    ``imitation_epochs`` passes of minibatches of ``imitation_batch_size`` (default ``batch_size``)
    at the learning rate ``imitation_lr`` (default ``learning_rate``; PPO's rate is restored after).

    The policy loss is the cross-entropy of the greedy agent's move over the legal moves, or, when
    ``data`` holds the best-move sets (``imitation_target: best``), ``-log`` of the probability the
    policy gives to the whole set of moves that the greedy agent scores best: where several moves
    tie, the network is free to prefer any of them (the agent picks one at random), so it is not
    pushed towards a coin flip. ``accuracy`` is the share of positions whose most probable legal
    move is the recorded greedy move; ``best_accuracy`` (with the sets) the share where it is one
    of the best moves.

    Each epoch's figures go to ``logger`` (an SB3 logger) as ``imitation/*``, dumped at step = the
    epoch number (1, 2, ...), before PPO's first dump. With ``progress``, a bar counts the minibatches."""
    import torch as th

    obs, mask, acts, val = data[:4]
    best_bits = data[4] if len(data) > 4 else None
    policy = model.policy
    policy.set_training_mode(True)
    opt = policy.optimizer
    lr = cfg.get("imitation_lr")
    saved_lr = [g["lr"] for g in opt.param_groups]
    if lr is not None:
        for g in opt.param_groups:
            g["lr"] = float(lr)
    rng = np.random.default_rng(seed)
    n = len(acts)
    bs = cfg.get("imitation_batch_size") or cfg["batch_size"]
    n_actions = mask.shape[1]
    stats = {}
    per_epoch = -(-n // bs)
    bar = progress_bar(cfg["imitation_epochs"] * per_epoch, "warm start: fitting", "batch", progress)
    for epoch in range(cfg["imitation_epochs"]):
        order = rng.permutation(n)
        tot = {"policy_loss": 0.0, "value_loss": 0.0, "accuracy": 0.0}
        if best_bits is not None:
            tot["best_accuracy"] = 0.0
        for i in range(0, n, bs):
            idx = order[i:i + bs]
            o = th.as_tensor(obs[idx].astype(np.float32))
            m = th.as_tensor(mask[idx])
            a = th.as_tensor(acts[idx])
            features = policy.extract_features(o, policy.pi_features_extractor)
            logits = policy.mlp_extractor.forward_actor(features).masked_fill(~m, -1e9)
            v = policy.value_net(policy.mlp_extractor.forward_critic(features)).flatten()
            if best_bits is None:
                pl = th.nn.functional.cross_entropy(logits, a)
            else:
                b = th.as_tensor(np.unpackbits(best_bits[idx], axis=1, count=n_actions).astype(bool))
                logp = th.log_softmax(logits, dim=1)
                pl = -th.logsumexp(logp.masked_fill(~b, -1e9), dim=1).mean()
                tot["best_accuracy"] += float(b[th.arange(len(idx)), logits.argmax(1)].sum())
            vl = th.nn.functional.mse_loss(v, th.as_tensor(val[idx]))
            loss = pl + cfg["vf_coef"] * vl
            opt.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), cfg["max_grad_norm"])
            opt.step()
            k = len(idx)
            tot["policy_loss"] += pl.item() * k
            tot["value_loss"] += vl.item() * k
            tot["accuracy"] += float((logits.argmax(1) == a).float().sum())
            bar.update(1)
        stats = {key: val_ / n for key, val_ in tot.items()}
        bar.set_postfix_str(f"epoch {epoch + 1}: loss {stats['policy_loss']:.3f}, accuracy {stats['accuracy']:.3f}")
        if logger is not None:
            for key, value in stats.items():
                logger.record(f"imitation/{key}", value)
            logger.record("imitation/epoch", epoch + 1)
            logger.dump(epoch + 1)       # one step per epoch: TensorBoard keeps every epoch's point
    bar.close()
    for g, saved in zip(opt.param_groups, saved_lr):
        g["lr"] = saved
    policy.set_training_mode(False)
    return stats


