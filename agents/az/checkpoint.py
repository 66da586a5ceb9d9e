"""Safe checkpoints: the network's weights as tensors plus a JSON record, and a training run's
state as tensors, JSON and plain arrays. Nothing is unpickled.

**A model** is two files side by side: ``NAME.pt``, the ``state_dict`` of
:class:`~agents.az.network.AZNet` (``torch.save`` of a dict of tensors), read back with
``torch.load(..., weights_only=True)`` — torch's restricted unpickler, which refuses any object
but tensors and plain containers, so a crafted file cannot run code — and ``NAME.json``, the
record: the format, the variant and its rule fields (:func:`agents.model_rules.model_info`, so the
agent refuses any other game), the network's shape (to rebuild it), the search settings it was
trained with that the agent keeps (``search``: :data:`~agents.az.config.SEARCH_FIELDS`; absent in
older records, which searched with the defaults) and free notes (positions trained on, the run).
Every tensor name and shape is checked against the rebuilt network.

**A training checkpoint** is a folder ``OUT/checkpoints/iter_XXXXXX/``: ``model.pt`` +
``model.json``, ``optimizer.pt`` (the optimiser's state, tensors and numbers, also loaded with
``weights_only=True``), ``trainer.json`` (the counters, the pool of past models, the random
generators' states) and ``replay.npz`` (the replay window, read with ``allow_pickle=False``).

**What a reader refuses**, each with one :class:`CheckpointError` line naming the file: a file
larger than a model can be (:data:`~agents.schema.MAX_WEIGHTS_BYTES`, checked before reading); a
recorded shape out of :data:`~agents.schema.NETWORK_BOUNDS` (checked before anything is built,
and the tensors are compared with a network built on torch's ``meta`` device, which allocates
nothing, before the real one is built); a tensor holding nan or inf (a diverged network would
otherwise load and play, or train on, silently); optimiser state that does not fit the network;
replay arrays of the wrong names, types or shapes (read from their headers before the data), or
holding non-finite targets. Nothing non-finite is ever written (:func:`save_model` refuses it).
The tensor checks and :class:`CheckpointError` are those of every model loader
(:mod:`agents.weights`).
"""

from __future__ import annotations

import json
import os
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from tafl_env.rules import RuleSet

from ..schema import MAX_WEIGHTS_BYTES, NETWORK_BOUNDS
from ..weights import CheckpointError, check_tensors, refusal_reason
from .config import HEADS, SEARCH_FIELDS
from .network import AZNet, shape_problem

__all__ = ["FORMAT", "CheckpointError", "save_model", "load_model", "read_record", "model_paths",
           "load_tensors", "load_optimizer_state", "read_replay", "read_compact_replay", "read_json"]

FORMAT = "tafl-az-1"
MAX_JSON_BYTES = 64 << 20
"""The largest JSON file (a model record, ``trainer.json``) read: real ones take a few kB."""


def model_paths(path: str | os.PathLike) -> tuple[Path, Path]:
    """``(weights .pt, record .json)`` of a model given by either file, by its stem, or by a
    training checkpoint folder (its ``model.pt``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "model.pt"
    if p.suffix in (".pt", ".json"):
        p = p.with_suffix("")
    return p.with_suffix(".pt"), p.with_suffix(".json")


def save_model(path: str | os.PathLike, net: AZNet, rules: RuleSet, search: dict | None = None,
               **notes: Any) -> Path:
    """Write ``path`` (.pt, the weights) and its .json record; returns the .pt path. ``search``:
    the search settings the network was trained with that the agent plays with too
    (:data:`~agents.az.config.SEARCH_FIELDS`; the record keeps them). Weights holding nan or inf are refused
    (:class:`CheckpointError`) and nothing is written: a diverged network must never replace a
    good model."""
    from ..model_rules import model_info

    pt, js = model_paths(path)
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    check_tensors(state, pt)
    pt.parent.mkdir(parents=True, exist_ok=True)
    record = {"format": FORMAT, **model_info(rules), "network": net.shape(), "notes": notes}
    if search:
        problem = search_problem(search)
        if problem:
            raise CheckpointError(f"bad search settings for {pt}: {problem}")
        record["search"] = dict(search)
    tmp = pt.with_suffix(".pt.tmp")
    th.save(state, tmp)
    os.replace(tmp, pt)
    js.write_text(json.dumps(record, indent=1, default=str) + "\n")
    return pt


def read_json(path: str | os.PathLike, what: str) -> Any:
    """The parsed JSON of ``path`` (at most :data:`MAX_JSON_BYTES`), or :class:`CheckpointError`
    naming it as ``what``."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise CheckpointError(f"cannot read the {what} {path}: {_first_line(exc)}") from None
    if size > MAX_JSON_BYTES:
        raise CheckpointError(f"{what} {path} is {size} bytes, more than such a file can be "
                              f"({MAX_JSON_BYTES >> 20} MiB)")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:          # unreadable, not UTF-8, not JSON
        raise CheckpointError(f"cannot read the {what} {path}: {_first_line(exc)}") from None


def read_record(path: str | os.PathLike) -> dict:
    """The JSON record of a model (checked: the format and the network's shape, each size an int
    within :data:`~agents.schema.NETWORK_BOUNDS`)."""
    pt, js = model_paths(path)
    if not js.is_file():
        raise CheckpointError(f"no model record {js} (an AZ model is NAME.pt with NAME.json beside it)")
    record = read_json(js, "model record")
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise CheckpointError(f"{js} is not an AZ model record (format {FORMAT!r} expected)")
    shape = record.get("network")
    if not isinstance(shape, dict):
        raise CheckpointError(f"{js} records no network shape")
    unknown = sorted(str(k) for k in shape if k not in NETWORK_BOUNDS and k != "head")
    problem = f"unknown field {unknown[0]!r}" if unknown else shape_problem(shape)
    if not problem and shape.get("head", "board") not in HEADS:
        problem = f"head must be one of {HEADS}, got {str(shape['head'])[:40]!r}"
    if problem:
        raise CheckpointError(f"bad network shape in {js}: {problem}")
    if "search" in record:
        problem = search_problem(record["search"])
        if problem:
            raise CheckpointError(f"bad search settings in {js}: {problem}")
    return record


def search_problem(search: object) -> str | None:
    """What is wrong with a record's ``search`` (a mapping of :data:`SEARCH_FIELDS` to numbers in
    [0, 1]), or None."""
    if not isinstance(search, dict):
        return f"a mapping expected, got {type(search).__name__}"
    for key, value in search.items():
        if key not in SEARCH_FIELDS:
            return f"unknown field {str(key)[:40]!r} (known: {', '.join(SEARCH_FIELDS)})"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            return f"{key} must be a number in [0, 1], got {str(value)[:40]!r}"
    return None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


def load_tensors(path: str | os.PathLike, device: str = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``: tensors in plain containers, or
    :class:`CheckpointError` in one line (a pickled object other than tensors and plain containers
    is refused, not run; a file larger than :data:`~agents.schema.MAX_WEIGHTS_BYTES` is refused
    before it is read). torch's warnings while it reads are not passed on: the error says it all."""
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        raise CheckpointError(f"no such file: {path}") from None
    except OSError as exc:
        raise CheckpointError(f"cannot read {path}: {_first_line(exc)}") from None
    if size > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"{path} is {size} bytes, more than a model's weights can be "
                              f"({MAX_WEIGHTS_BYTES >> 20} MiB); refusing to read it")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = th.load(path, map_location=device, weights_only=True)
    except Exception as exc:      # the unpickler's refusal, a truncated file, not a torch file
        raise CheckpointError(f"{path} is not a plain tensor file (refused by weights_only "
                              f"loading: {refusal_reason(exc)})") from None
    return data


def load_model(path: str | os.PathLike, device: str = "cpu") -> tuple[AZNet, dict]:
    """The network saved at ``path`` and its record; the weights must match the recorded shape
    name for name and size for size, and hold finite numbers.

    The recorded shape is checked against the bounds, then built on torch's ``meta`` device
    (nothing allocated) to compare its tensor shapes with the file's; only a record that agrees
    with its weights gets a real network, so a record of a few bytes cannot ask for gigabytes.
    """
    pt, _ = model_paths(path)
    record = read_record(path)
    try:
        with th.device("meta"):
            want = AZNet(**record["network"]).state_dict()
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"bad network shape in the record of {pt}: {exc}") from None
    state = load_tensors(pt, "cpu")
    check_tensors(state, pt, want)
    net = AZNet(**record["network"])
    net.load_state_dict(state)
    net.to(device)
    net.eval()
    return net, record


def load_optimizer_state(path: str | os.PathLike, optimizer: th.optim.Optimizer, device: str = "cpu") -> None:
    """Load ``optimizer.pt`` into ``optimizer`` once it is known to be this optimiser's state: the
    same parameter groups and indices, per-parameter tensors of their parameters' shapes, finite
    numbers throughout (else :class:`CheckpointError` naming the file; the optimiser is left as
    it was). torch would load state of other shapes without a word and fail at the next step."""
    state = load_tensors(path, device)
    own = optimizer.state_dict()
    if not isinstance(state, dict) or not isinstance(state.get("state"), dict) \
            or not isinstance(state.get("param_groups"), list):
        raise CheckpointError(f"{path} is not an optimiser's state (no 'state' and 'param_groups')")
    groups = state["param_groups"]
    if len(groups) != len(own["param_groups"]):
        raise CheckpointError(f"{path} has {len(groups)} parameter groups, this optimiser "
                              f"{len(own['param_groups'])}")
    shapes: dict[int, tuple] = {}
    for mine, theirs, params in zip(own["param_groups"], groups, optimizer.param_groups):
        if not isinstance(theirs, dict) or theirs.get("params") != mine["params"]:
            raise CheckpointError(f"{path} is the optimiser state of another network (its parameters "
                                  f"are not this network's {len(mine['params'])})")
        for key, value in theirs.items():
            numbers = value if isinstance(value, (tuple, list)) and key != "params" else (value,)
            for x in numbers:
                if isinstance(x, float) and not np.isfinite(x):
                    raise CheckpointError(f"{path}: the optimiser's {key} is {x}")
        shapes.update({i: tuple(p.shape) for i, p in zip(mine["params"], params["params"])})
    for i, entry in state["state"].items():
        if i not in shapes or not isinstance(entry, dict):
            raise CheckpointError(f"{path} holds optimiser state for parameter {i!r}, which this network lacks")
        for key, value in entry.items():
            if not isinstance(value, th.Tensor):
                raise CheckpointError(f"{path}: the optimiser state {key} of parameter {i} is "
                                      f"{type(value).__name__}, not a tensor")
            if value.dim() and tuple(value.shape) != shapes[i]:
                raise CheckpointError(f"{path}: the optimiser state {key} of parameter {i} has shape "
                                      f"{tuple(value.shape)}, the network's parameter {shapes[i]}")
            if value.is_floating_point() and not bool(th.isfinite(value).all()):
                raise CheckpointError(f"{path}: the optimiser state {key} of parameter {i} holds nan or inf")
    try:
        optimizer.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        optimizer.load_state_dict(own)
        raise CheckpointError(f"{path} does not fit this optimiser: {_first_line(exc)}") from None


REPLAY_ARRAYS = {"obs": np.dtype(np.uint8), "actions": np.dtype(np.int32), "targets": np.dtype(np.float32),
                 "values": np.dtype(np.float32), "capacity": np.dtype(np.int64), "added": np.dtype(np.int64)}
"""The arrays of ``replay.npz`` and their dtypes (as :meth:`~agents.az.replay.ReplayWindow.save`
writes them)."""


def _npz_headers(path: Path, arrays: dict, what: str) -> dict[str, tuple]:
    """``(shape, fortran_order, dtype)`` of each array of the ``.npz`` at ``path``, read from the
    headers before any data; the file must hold exactly the arrays named in ``arrays`` (no pickled
    object can be among them: the dtypes are checked against ``arrays`` too)."""
    headers: dict[str, tuple] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            names = {n.removesuffix(".npy") for n in zf.namelist()}
            if names != set(arrays):
                raise CheckpointError(f"{path} is not a {what} (arrays {sorted(names)}; expected "
                                      f"{sorted(arrays)})")
            for key in arrays:
                with zf.open(f"{key}.npy") as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        headers[key] = np.lib.format.read_array_header_1_0(fh)
                    elif version == (2, 0):
                        headers[key] = np.lib.format.read_array_header_2_0(fh)
                    else:
                        raise ValueError(f"array {key} has .npy format {version}")
    except CheckpointError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise CheckpointError(f"{path} is not a readable {what}: {_first_line(exc)}") from None
    for key, dtype in arrays.items():
        if headers[key][2] != dtype:
            raise CheckpointError(f"{path}: {what} array {key!r} has dtype {headers[key][2]}, expected {dtype}")
    return headers


def read_compact_replay(path: str | os.PathLike, board: int, num_actions: int, max_bytes: int) -> dict:
    """The window of a hand-off's ``window.npz`` (:func:`agents.az.replay.compact_arrays`),
    checked as :func:`read_replay` checks a full one (the arrays and dtypes of
    :data:`~agents.az.replay.COMPACT_ARRAYS` from their headers, sizes that fit ``board`` and
    ``max_bytes`` once expanded, action ids, finite targets and values) and expanded to
    :meth:`~agents.az.replay.ReplayWindow.state_dict` arrays; else a :class:`CheckpointError`
    naming the file."""
    from .replay import BINARY_PLANES, COMPACT_ARRAYS, expand_compact

    path = Path(path)
    headers = _npz_headers(path, COMPACT_ARRAYS, "compact replay window")
    shape = {k: tuple(h[0]) for k, h in headers.items()}
    p = shape["counts"][0] if len(shape["counts"]) == 1 else -1
    row_bytes = -(-board * board * BINARY_PLANES // 8)
    flat = shape["actions"]
    if p < 0 or shape["bits"] != (p, row_bytes) or shape["progress"] != (p,) or shape["values"] != (p,) \
            or len(flat) != 1 or shape["targets"] != flat or any(shape[k] != () for k in ("board", "capacity", "added")):
        raise CheckpointError(f"{path}: compact replay arrays of shapes {shape} do not fit a {board}x{board} board")
    if p * board * board * (BINARY_PLANES + 1) + flat[0] * 8 > max_bytes:
        raise CheckpointError(f"{path}: its window would take more than {max_bytes / 2**30:.1f} GiB expanded")
    try:
        with np.load(path, allow_pickle=False) as npz:
            c = {k: npz[k] for k in COMPACT_ARRAYS}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise CheckpointError(f"{path} is not a readable compact replay window: {_first_line(exc)}") from None
    if int(c["board"]) != board or int(c["counts"].astype(np.int64).sum()) != flat[0]:
        raise CheckpointError(f"{path}: a window of a {int(c['board'])}x{int(c['board'])} board, or counts that do "
                              f"not add up to its {flat[0]} actions")
    if int(c["capacity"]) < 1 or int(c["added"]) < p:
        raise CheckpointError(f"{path}: capacity {int(c['capacity'])} and added {int(c['added'])} do not fit "
                              f"its {p} positions")
    if flat[0] and int(c["actions"].max()) >= num_actions:
        raise CheckpointError(f"{path}: replay actions outside 0..{num_actions - 1}")
    for key in ("targets", "values"):
        x = c[key].astype(np.float32)
        if not np.isfinite(x).all():
            raise CheckpointError(f"{path}: replay array {key!r} holds nan or inf; refusing to train on it")
    if p and (np.abs(c["values"].astype(np.float32)).max() > 1 or c["targets"].astype(np.float32).min() < 0):
        raise CheckpointError(f"{path}: replay values outside [-1, 1] or negative policy targets")
    return expand_compact(c)


def read_replay(path: str | os.PathLike, obs_shape: tuple, num_actions: int, max_bytes: int) -> dict:
    """The arrays of a saved replay window (:meth:`~agents.az.replay.ReplayWindow.state_dict`),
    checked before use: the names of :data:`REPLAY_ARRAYS` and no pickled object
    (``allow_pickle=False``); dtypes and shapes that fit the board (``obs_shape`` per position,
    at most ``max_bytes`` in all, both read from the arrays' headers before their data); legal
    action ids; finite targets and values. Anything else is a :class:`CheckpointError` naming
    the file."""
    path = Path(path)
    headers = _npz_headers(path, REPLAY_ARRAYS, "replay window")
    rows = headers["values"][0]
    width = headers["actions"][0][1:]
    want = {"obs": (*rows, *obs_shape), "values": rows, "capacity": (), "added": ()}
    if len(rows) != 1 or len(width) != 1 or not 1 <= width[0] <= num_actions:
        raise CheckpointError(f"{path}: replay arrays of shapes values {rows}, actions "
                              f"{headers['actions'][0]} (expected (P,) and (P, K), K <= {num_actions})")
    want["actions"] = want["targets"] = (*rows, *width)
    for key, shape in want.items():
        if tuple(headers[key][0]) != tuple(shape):
            raise CheckpointError(f"{path}: replay array {key!r} has shape {tuple(headers[key][0])}, "
                                  f"this board needs {tuple(shape)}")
    nbytes = sum(int(np.prod(headers[k][0])) * headers[k][2].itemsize for k in REPLAY_ARRAYS)
    if nbytes > max_bytes:
        raise CheckpointError(f"{path}: its replay arrays take {nbytes / 2**30:.1f} GiB, more than "
                              f"the window may ({max_bytes / 2**30:.1f} GiB)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            d = {k: npz[k] for k in REPLAY_ARRAYS}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise CheckpointError(f"{path} is not a readable replay window: {_first_line(exc)}") from None
    p = rows[0]
    if int(d["capacity"]) < 1 or int(d["added"]) < p:
        raise CheckpointError(f"{path}: capacity {int(d['capacity'])} and added {int(d['added'])} "
                              f"do not fit its {p} positions")
    acts = d["actions"]
    if p and (acts.min() < -1 or acts.max() >= num_actions):
        raise CheckpointError(f"{path}: replay actions outside -1..{num_actions - 1}")
    for key in ("targets", "values"):
        if not np.isfinite(d[key]).all():
            raise CheckpointError(f"{path}: replay array {key!r} holds nan or inf; refusing to train on it")
    if p and (np.abs(d["values"]).max() > 1 or d["targets"].min() < 0):
        raise CheckpointError(f"{path}: replay values outside [-1, 1] or negative policy targets")
    return d


def read_window(checkpoint: str | os.PathLike, board: int, num_actions: int) -> dict | None:
    """The replay window a training checkpoint folder keeps, as
    :meth:`~agents.az.replay.ReplayWindow.state_dict` arrays, checked (:func:`read_replay` for a
    run's ``replay.npz``, :func:`read_compact_replay` for a hand-off's ``window.npz``); None when
    it keeps neither (only a run's newest checkpoint keeps its window)."""
    from .config import MAX_MEMORY_BYTES

    ck = Path(checkpoint)
    if (ck / "replay.npz").is_file():
        return read_replay(ck / "replay.npz", (board, board, 14), num_actions, MAX_MEMORY_BYTES)
    if (ck / "window.npz").is_file():
        return read_compact_replay(ck / "window.npz", board, num_actions, MAX_MEMORY_BYTES)
    return None
