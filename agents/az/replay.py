"""The replay window: the last ``capacity`` recorded positions of self-play, sampled uniformly by
the learner.

A position is stored compactly: its observation planes as ``uint8`` (every plane is 0/1 but the
move-cap progress, which keeps 1/255 steps: :func:`encode_planes`), the root's legal actions and
the policy target over them (``width`` columns, -1 padded; the width grows with the widest root
seen), and the value target. The loss needs nothing else: its softmax runs over the stored legal
actions, so no mask of all actions is kept.

A hand-off (:mod:`.handoff`) keeps the window in a compact form (:func:`compact_arrays`), about
ten times smaller, that a resume expands back (:func:`expand_compact`).

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

__all__ = ["ReplayWindow", "encode_planes", "decode_planes", "compact_arrays", "expand_compact",
           "COMPACT_ARRAYS", "BINARY_PLANES"]

BINARY_PLANES = 13
"""Observation planes 0-12 are 0/1; plane 13 (the move-cap progress) is one number everywhere
(tafl_env/observation.py), which the compact form keeps once per position."""

COMPACT_ARRAYS = {"bits": np.dtype(np.uint8), "progress": np.dtype(np.uint8), "counts": np.dtype(np.uint16),
                  "actions": np.dtype(np.uint16), "targets": np.dtype(np.float16), "values": np.dtype(np.float16),
                  "board": np.dtype(np.int64), "capacity": np.dtype(np.int64), "added": np.dtype(np.int64)}
"""The arrays of a compact window (:func:`compact_arrays`) and their dtypes."""


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


def compact_arrays(window: "ReplayWindow", positions: int | None = None) -> dict:
    """The newest ``positions`` of ``window`` (all by default) in a form about ten times smaller,
    for a hand-off that a resume reads back (:func:`expand_compact`): the 0/1 planes as bits, the
    progress plane as one byte a position, each position's legal actions (``uint16``: every
    board's action ids fit) with its policy target (``float16``, renormalised when read) laid end
    to end with their ``counts``, and the values as ``float16`` (results of ±1, 0 and search
    values; the rounding is below 0.001).

    >>> w = ReplayWindow(4, (7, 7, 14))
    >>> obs = np.zeros((2, 7, 7, 14), np.uint8); obs[:, 3, 3, 0] = 255; obs[..., 13] = 51
    >>> w.add(obs, np.array([[5, 9], [7, -1]]), np.array([[0.25, 0.75], [1.0, 0.0]]), np.array([1.0, -1.0]))
    >>> back = expand_compact(compact_arrays(w))
    >>> bool((back["obs"] == obs).all()), back["actions"].tolist(), back["targets"].tolist()
    (True, [[5, 9], [7, -1]], [[0.25, 0.75], [1.0, 0.0]])
    """
    d = window.state_dict()
    keep = len(d["values"]) if positions is None else min(int(positions), len(d["values"]))
    obs, acts, targets, values = (d[k][len(d["values"]) - keep:] for k in ("obs", "actions", "targets", "values"))
    p, n = len(values), obs.shape[1]
    binary = obs[..., :BINARY_PLANES]
    if not np.isin(binary, (0, 255)).all():
        raise ValueError("planes 0-12 of the window are not 0/1: the compact form would lose them")
    progress = obs[:, 0, 0, BINARY_PLANES]
    if (obs[..., BINARY_PLANES] != progress[:, None, None]).any():
        raise ValueError("the progress plane of the window is not uniform: the compact form would lose it")
    valid = acts >= 0
    counts = valid.sum(axis=1)
    if valid.any() and (~valid[:, :-1] & valid[:, 1:]).any():
        raise ValueError("the window's legal actions are not a prefix of each row")
    return {"bits": np.packbits(binary.reshape(p, -1) > 0, axis=1), "progress": progress.astype(np.uint8),
            "counts": counts.astype(np.uint16), "actions": acts[valid].astype(np.uint16),
            "targets": targets[valid].astype(np.float16), "values": values.astype(np.float16),
            "board": np.int64(n), "capacity": np.int64(d["capacity"]), "added": np.int64(d["added"])}


def expand_compact(c: dict) -> dict:
    """The :meth:`ReplayWindow.state_dict` arrays of a compact window (:func:`compact_arrays`);
    each policy target is renormalised to sum to 1 after its ``float16`` rounding."""
    n = int(c["board"])
    counts = c["counts"].astype(np.int64)
    p = len(counts)
    planes = np.unpackbits(c["bits"], axis=1, count=n * n * BINARY_PLANES).reshape(p, n, n, BINARY_PLANES)
    obs = np.empty((p, n, n, BINARY_PLANES + 1), dtype=np.uint8)
    obs[..., :BINARY_PLANES] = planes * np.uint8(255)
    obs[..., BINARY_PLANES] = c["progress"][:, None, None]
    width = max(1, int(counts.max()) if p else 1)
    rows = np.repeat(np.arange(p), counts)
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    actions = np.full((p, width), -1, dtype=np.int32)
    targets = np.zeros((p, width), dtype=np.float32)
    actions[rows, cols] = c["actions"]
    targets[rows, cols] = c["targets"].astype(np.float32)
    sums = targets.sum(axis=1, keepdims=True)
    np.divide(targets, sums, out=targets, where=sums > 0)
    return {"obs": obs, "actions": actions, "targets": targets, "values": c["values"].astype(np.float32),
            "capacity": np.int64(c["capacity"]), "added": np.int64(c["added"])}
