"""The replay window: the last ``capacity`` recorded positions of self-play, sampled uniformly by
the learner.

A position is stored compactly: its observation planes as ``uint8`` (every plane is 0/1 but the
move-cap progress, which keeps 1/255 steps: :func:`encode_planes`), the root's legal actions and
the policy target over them (``width`` columns, -1 padded; the width grows with the widest root
seen), and the value target. The loss needs nothing else: its softmax runs over the stored legal
actions, so no mask of all actions is kept.

The window is a ring: new positions overwrite the oldest. ``added`` counts every position ever
added, so a resumed run (:meth:`state_dict` / :meth:`from_state_dict`, plain arrays saved with
``numpy.savez`` and read back without pickle) continues with the same window and counters.

    >>> import numpy as np
    >>> w = ReplayWindow(3, (7, 7, 14))
    >>> for v in (0.1, 0.2, 0.3, 0.4):
    ...     w.add(np.zeros((1, 7, 7, 14), np.uint8), np.array([[5, 9]]), np.array([[0.5, 0.5]]),
    ...           np.array([v]))
    >>> len(w), w.added, sorted(round(float(x), 1) for x in w.values)
    (3, 4, [0.2, 0.3, 0.4])
"""

from __future__ import annotations

import numpy as np

__all__ = ["ReplayWindow", "encode_planes", "decode_planes"]


def encode_planes(obs: np.ndarray) -> np.ndarray:
    """float32 planes in [0, 1] as uint8 (x 255, rounded)."""
    return np.rint(np.clip(obs, 0.0, 1.0) * 255.0).astype(np.uint8)


def decode_planes(planes: np.ndarray) -> np.ndarray:
    return planes.astype(np.float32) * np.float32(1.0 / 255.0)


class ReplayWindow:
    """A ring of ``capacity`` positions (module docstring)."""

    def __init__(self, capacity: int, obs_shape: tuple, width: int = 32):
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ValueError(f"capacity must be an int >= 1, got {capacity!r}")
        self.capacity = int(capacity)
        self.obs = np.zeros((self.capacity, *obs_shape), dtype=np.uint8)
        self.actions = np.full((self.capacity, width), -1, dtype=np.int32)
        self.targets = np.zeros((self.capacity, width), dtype=np.float32)
        self.values = np.zeros(self.capacity, dtype=np.float32)
        self.size = 0
        self.next = 0
        self.added = 0

    def __len__(self) -> int:
        return self.size

    @property
    def width(self) -> int:
        return self.actions.shape[1]

    def _widen(self, width: int) -> None:
        extra = width - self.width
        self.actions = np.concatenate([self.actions, np.full((self.capacity, extra), -1, np.int32)], 1)
        self.targets = np.concatenate([self.targets, np.zeros((self.capacity, extra), np.float32)], 1)

    def add(self, planes: np.ndarray, actions: np.ndarray, targets: np.ndarray,
            values: np.ndarray) -> None:
        """Append positions: ``planes`` (P, N, N, C) uint8, ``actions``/``targets`` (P, K) (-1
        padded), ``values`` (P,)."""
        p = len(values)
        if not (len(planes) == len(actions) == len(targets) == p):
            raise ValueError(f"add() needs as many planes, actions and targets as values ({p})")
        if p == 0:
            return
        k = actions.shape[1]
        if k > self.width:
            self._widen(k)
        if p > self.capacity:          # only the last capacity positions can stay
            planes, actions, targets, values = (x[-self.capacity:] for x in (planes, actions, targets, values))
            self.added += p - self.capacity
            p = self.capacity
        idx = (self.next + np.arange(p)) % self.capacity
        self.obs[idx] = planes
        self.actions[idx] = -1
        self.targets[idx] = 0.0
        self.actions[idx, :k] = actions
        self.targets[idx, :k] = targets
        self.values[idx] = values
        self.next = int((self.next + p) % self.capacity)
        self.size = min(self.capacity, self.size + p)
        self.added += p

    def sample(self, batch: int, rng: np.random.Generator) -> np.ndarray:
        """Indices of ``batch`` positions drawn uniformly (with replacement) from the window."""
        if self.size == 0:
            raise ValueError("the replay window is empty")
        return rng.integers(0, self.size, size=batch)

    def state_dict(self) -> dict:
        """The window as plain arrays (only the filled rows)."""
        order = np.arange(self.size) if self.size < self.capacity else \
            (self.next + np.arange(self.capacity)) % self.capacity      # oldest first
        return {"obs": self.obs[order], "actions": self.actions[order], "targets": self.targets[order],
                "values": self.values[order], "capacity": np.int64(self.capacity),
                "added": np.int64(self.added)}

    @classmethod
    def from_state_dict(cls, d, capacity: int | None = None) -> "ReplayWindow":
        """The window of :meth:`state_dict` (``capacity``: a new size; the newest positions stay)."""
        cap = int(d["capacity"]) if capacity is None else int(capacity)
        w = cls(cap, d["obs"].shape[1:], width=max(1, d["actions"].shape[1]))
        w.add(d["obs"], d["actions"], d["targets"], d["values"])
        w.added = int(d["added"])
        return w

    def save(self, path) -> None:
        np.savez(path, **self.state_dict())

    @classmethod
    def load(cls, path, capacity: int | None = None) -> "ReplayWindow":
        with np.load(path, allow_pickle=False) as d:
            return cls.from_state_dict({k: d[k] for k in d.files}, capacity)
