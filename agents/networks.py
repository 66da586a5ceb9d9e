"""Kept for unpickling older model zips; the network is :mod:`agents.ppo.network`.

A Stable-Baselines3 zip names its policy class and its features extractor by module in its
``data`` entry (cloudpickled): the zips saved before the PPO stack moved to :mod:`agents.ppo`,
the shipped ``agents/pretrained/*.zip`` among them, name ``agents.networks.TaflBoardPolicy`` and
``agents.networks.BoardTrunk``. SB3's own loader (``MaskablePPO.load``: the
``unpickle-policy:PATH`` agent, ``tafl train --resume`` of an older run) imports them by those
names, so this module must stay importable and hold both classes. The safe ``policy:PATH`` loader
unpickles nothing and does not need it. Nothing else imports this module.
"""

from .ppo.network import BoardTrunk, TaflBoardPolicy

__all__ = ["TaflBoardPolicy", "BoardTrunk"]
