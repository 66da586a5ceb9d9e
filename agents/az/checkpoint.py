"""Safe checkpoints: the network's weights as tensors plus a JSON record, and a training run's
state as tensors, JSON and plain arrays. Nothing is unpickled.

**A model** is two files side by side: ``NAME.pt``, the ``state_dict`` of
:class:`~agents.az.network.AZNet` (``torch.save`` of a dict of tensors), read back with
``torch.load(..., weights_only=True)`` — torch's restricted unpickler, which refuses any object
but tensors and plain containers, so a crafted file cannot run code — and ``NAME.json``, the
record: the format, the variant and its rule fields (:func:`agents.policy.model_info`, so the
agent refuses any other game), the network's shape (to rebuild it) and free notes (positions
trained on, the run). Every tensor name and shape is checked against the rebuilt network.

**A training checkpoint** is a folder ``OUT/checkpoints/iter_XXXXXX/``: ``model.pt`` +
``model.json``, ``optimizer.pt`` (the optimiser's state, tensors and numbers, also loaded with
``weights_only=True``), ``trainer.json`` (the counters, the pool of past models, the random
generators' states) and ``replay.npz`` (the replay window, read with ``allow_pickle=False``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch as th

from tafl_env.rules import RuleSet

from .network import AZNet

__all__ = ["FORMAT", "CheckpointError", "save_model", "load_model", "read_record", "model_paths"]

FORMAT = "tafl-az-1"


class CheckpointError(ValueError):
    """A model or checkpoint that cannot be read, or is not what its record says."""


def model_paths(path: str | os.PathLike) -> tuple[Path, Path]:
    """``(weights .pt, record .json)`` of a model given by either file, by its stem, or by a
    training checkpoint folder (its ``model.pt``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "model.pt"
    if p.suffix in (".pt", ".json"):
        p = p.with_suffix("")
    return p.with_suffix(".pt"), p.with_suffix(".json")


def save_model(path: str | os.PathLike, net: AZNet, rules: RuleSet, **notes: Any) -> Path:
    """Write ``path`` (.pt, the weights) and its .json record; returns the .pt path."""
    from ..policy import model_info

    pt, js = model_paths(path)
    pt.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    record = {"format": FORMAT, **model_info(rules), "network": net.shape(), "notes": notes}
    tmp = pt.with_suffix(".pt.tmp")
    th.save(state, tmp)
    os.replace(tmp, pt)
    js.write_text(json.dumps(record, indent=1, default=str) + "\n")
    return pt


def read_record(path: str | os.PathLike) -> dict:
    """The JSON record of a model (checked: the format and the network's shape)."""
    pt, js = model_paths(path)
    if not js.is_file():
        raise CheckpointError(f"no model record {js} (an AZ model is NAME.pt with NAME.json beside it)")
    try:
        record = json.loads(js.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read the model record {js}: {exc}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise CheckpointError(f"{js} is not an AZ model record (format {FORMAT!r} expected)")
    if not isinstance(record.get("network"), dict):
        raise CheckpointError(f"{js} records no network shape")
    return record


def load_tensors(path: str | os.PathLike, device: str = "cpu") -> dict:
    """``torch.load(path, weights_only=True)``: a dict of tensors, or :class:`CheckpointError`
    (a pickled object other than tensors and plain containers is refused, not run)."""
    try:
        data = th.load(path, map_location=device, weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"no such file: {path}") from None
    except Exception as exc:      # the unpickler's refusal, a truncated file, not a torch file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(f"{path} is not a plain tensor file (refused by weights_only "
                              f"loading: {first})") from None
    return data


def load_model(path: str | os.PathLike, device: str = "cpu") -> tuple[AZNet, dict]:
    """The network saved at ``path`` and its record; the weights must match the recorded shape
    name for name and size for size."""
    pt, _ = model_paths(path)
    record = read_record(path)
    try:
        net = AZNet(**record["network"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"bad network shape in the record of {pt}: {exc}") from None
    state = load_tensors(pt, device)
    if not isinstance(state, dict) or not all(isinstance(v, th.Tensor) for v in state.values()):
        raise CheckpointError(f"{pt} does not hold a dict of tensors")
    want = net.state_dict()
    if set(state) != set(want):
        missing = sorted(set(want) - set(state))[:3]
        extra = sorted(set(state) - set(want))[:3]
        raise CheckpointError(f"{pt} does not match its recorded network (missing {missing}, "
                              f"unexpected {extra})")
    for k, v in state.items():
        if tuple(v.shape) != tuple(want[k].shape):
            raise CheckpointError(f"{pt}: tensor {k} has shape {tuple(v.shape)}, the recorded "
                                  f"network needs {tuple(want[k].shape)}")
    net.load_state_dict(state)
    net.to(device)
    net.eval()
    return net, record
