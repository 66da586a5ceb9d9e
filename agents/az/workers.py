"""Self-play on a Ray cluster: ``workers`` actors, each with its own batch of games and its own
copy of the network, send their finished games to the learner (the training process).

Each iteration the learner hands every actor the current weights (as numpy arrays, put once in
the object store) and asks it for its share of the iteration's positions; the pool of past
networks is sent only when it changed (a version number). An actor keeps its games running from
one call to the next, as in-process self-play does. Actors take one CPU each and run the network
on the CPU with one torch thread.
"""

from __future__ import annotations

import math

import numpy as np

from .selfplay import GameBatch

__all__ = ["RaySelfPlay"]


def _numpy_state(net) -> dict:
    return {k: v.detach().cpu().numpy() for k, v in net.state_dict().items()}


def _worker_class():
    import ray

    @ray.remote(num_cpus=1)
    class SelfPlayWorker:
        def __init__(self, cfg: dict, seed: int):
            import torch as th

            from tafl_env.game import engine_for

            from .config import rules_of, sparring_agents, search_settings, selfplay_settings
            from .network import AZNet, Evaluator
            from .selfplay import SelfPlay

            th.set_num_threads(1)
            self.th, self.AZNet, self.Evaluator = th, AZNet, Evaluator
            self.cfg = cfg
            engine = engine_for(rules_of(cfg))
            self.shape = dict(board_size=engine.n, channels=cfg["channels"], blocks=cfg["blocks"],
                              value_hidden=cfg["value_hidden"])
            self.net = AZNet(**self.shape)
            self.selfplay = SelfPlay(engine, Evaluator(self.net), search_settings(cfg),
                                     selfplay_settings(cfg), np.random.default_rng(seed),
                                     **sparring_agents(cfg, seed + 31))
            self.pool_version = -1

        def _net(self, weights: dict):
            net = self.AZNet(**self.shape)
            net.load_state_dict({k: self.th.from_numpy(np.array(v)) for k, v in weights.items()})
            return net.eval()

        def play(self, weights: dict, positions: int, pool_version: int, pool: list | None):
            self.net.load_state_dict({k: self.th.from_numpy(np.array(v)) for k, v in weights.items()})
            self.net.eval()
            if pool is not None and pool_version != self.pool_version:
                self.selfplay.set_pool([self.Evaluator(self._net(w)) for w in pool])
                self.pool_version = pool_version
            return self.selfplay.play(positions)

    return SelfPlayWorker


class RaySelfPlay:
    """``count`` self-play actors on the Ray cluster this process is connected to."""

    def __init__(self, cfg: dict, count: int, seed: int):
        self.actors = [_worker_class().remote(cfg, seed * 1000 + 7919 * (i + 1)) for i in range(count)]
        self.pool_version = 0
        self.pool: list = []

    def set_pool(self, nets: list) -> None:
        self.pool = [_numpy_state(n) for n in nets]
        self.pool_version += 1

    def play(self, net, positions: int) -> GameBatch:
        import ray

        weights = ray.put(_numpy_state(net))
        pool = ray.put(self.pool)
        share = math.ceil(positions / len(self.actors))
        batches = ray.get([a.play.remote(weights, share, self.pool_version, pool) for a in self.actors])
        out = GameBatch()
        for b in batches:
            out.merge(b)
        return out
