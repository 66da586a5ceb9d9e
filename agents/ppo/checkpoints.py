"""Checkpoints of a training run: what is saved beside the model, and the checks made before resuming.

A checkpoint is ``checkpoints/step_<T>.zip`` (an ordinary ``MaskablePPO`` zip) and, beside it,
``step_<T>.pool.pt``: the snapshot pool and the trainer's counters. The pool file holds only
tensors and plain values (dicts, lists, str, int, float, bool, None), so it is read with
``torch.load(..., weights_only=True)``, which refuses anything else: a crafted pool file cannot run
code. The model zip itself, like every SB3 checkpoint, unpickles Python objects when it is loaded
(``MaskablePPO.load``): load only zips from a trusted source.

Every model saved by a run carries ``tafl_rules`` (:func:`agents.model_rules.model_info`): the variant and every rule
field it was trained under. SB3 saves it with the model's other attributes in the zip's ``data``
entry (plain JSON) and restores it as ``model.tafl_rules`` on load. :func:`check_resume` reads that
JSON without unpickling anything and refuses a checkpoint of another variant or other rules; for
zips without it (older runs) it compares the observation shape and the number of actions.

:class:`TrainSetupError` is a mistake in the inputs of a run (a checkpoint, the output directory,
an opponent) found before the run starts; it is a :class:`agents.schema.ConfigError`, so the
``tafl`` command reports it in one line and exits with status 2.
"""

from __future__ import annotations

import json
import numbers
import pickle
import zipfile
from pathlib import Path
from typing import Any, Mapping

from ..model_rules import MODEL_INFO, rules_mismatch
from ..schema import ConfigError
from .policy import NETWORK_MODULES

__all__ = ["TrainSetupError", "save_pool", "load_pool", "model_data", "check_model_rules",
           "check_resume", "POOL_SUFFIX"]

POOL_SUFFIX = ".pool.pt"


class TrainSetupError(ConfigError):
    """A mistake in the inputs of a training run found before it starts; ``field`` names the input
    (``"resume"``, ``"output_dir"``, ``"eval_opponents"``) and the message is one line."""

    def __init__(self, field: str, message: str):
        self.field = field
        ValueError.__init__(self, message)


# --- the pool file ------------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    """``value`` as plain Python (numbers, str, bool, None, lists and str-keyed dicts of them)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):      # also numpy integers
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    raise TypeError(f"not a plain value: {type(value).__name__}")


def save_pool(path: str | Path, pool: list, trainer: Mapping[str, Any]) -> Path:
    """Write the snapshot pool (a list of ``{name: tensor}``) and the trainer's counters to ``path``,
    as tensors and plain values only (readable with ``weights_only=True``)."""
    import torch as th

    entries = [{str(k): v.detach().cpu() for k, v in sd.items()} for sd in pool]
    th.save({"pool": entries, "trainer": _plain(trainer)}, path)
    return Path(path)


def load_pool(path: str | Path) -> tuple[list, dict[str, Any]]:
    """``(pool, trainer)`` from a pool file written by :func:`save_pool`, read with
    ``torch.load(..., weights_only=True)``: a file holding anything but tensors and plain values
    (code to run on unpickling, say) is refused with a :class:`TrainSetupError` and nothing of it
    is executed."""
    import torch as th

    path = Path(path)
    try:
        saved = th.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        why = next((ln for ln in lines if "GLOBAL" in ln or "WeightsUnpickler" in ln), lines[-1] if lines else "")
        raise TrainSetupError("resume", f"refused to load {path}: it holds more than tensors and plain values, "
                                        f"so tafl train did not write it ({why[:200].rstrip('.')}); "
                                        "nothing in it was run") from None
    except (OSError, RuntimeError, EOFError, ValueError, AttributeError, KeyError, IndexError) as exc:
        raise TrainSetupError("resume", f"cannot read {path} as a snapshot pool: {_first_line(exc)}") from None
    ok = (isinstance(saved, dict) and isinstance(saved.get("pool"), list) and isinstance(saved.get("trainer"), dict)
          and all(isinstance(sd, dict) and all(isinstance(v, th.Tensor) for v in sd.values()) for sd in saved["pool"]))
    if not ok:
        raise TrainSetupError("resume", f"{path} is not a snapshot pool written by tafl train "
                                        "(expected {'pool': [state dicts], 'trainer': {...}})")
    return saved["pool"], saved["trainer"]


# --- before resuming (and before using a model as an opponent) --------------------------------------

def model_data(path: Path, what: str, field: str = "resume") -> dict[str, Any]:
    """The ``data`` entry of an SB3 zip, read as JSON (nothing unpickled). ``what`` names the input
    in messages (``"--resume PATH"``)."""
    if not path.exists():
        raise TrainSetupError(field, f"{what}: no such file")
    if path.is_dir():
        hint = ""
        ck = sorted((path / "checkpoints").glob("step_*.zip"), key=_step) if (path / "checkpoints").is_dir() else []
        if ck:
            hint = f", e.g. {ck[-1]}"
        elif (path / "final.zip").is_file():
            hint = f", e.g. {path / 'final.zip'}"
        raise TrainSetupError(field, f"{what} is a directory; give a model zip (OUT/checkpoints/step_T.zip{hint})")
    if not zipfile.is_zipfile(path):
        raise TrainSetupError(field, f"{what} is not a model checkpoint (not a zip file)")
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if "data" not in names or "policy.pth" not in names:
                raise TrainSetupError(field, f"{what} is not an SB3 model checkpoint "
                                             "(the zip has no 'data' and 'policy.pth' entries)")
            data = json.loads(zf.read("data"))
    except TrainSetupError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, UnicodeDecodeError) as exc:
        raise TrainSetupError(field, f"{what}: cannot read the checkpoint: {_first_line(exc)}") from None
    if not isinstance(data, dict):
        raise TrainSetupError(field, f"{what}: the checkpoint's 'data' entry is not a mapping")
    return data


def _step(path: Path) -> int:
    digits = path.stem.rpartition("_")[2]
    return int(digits) if digits.isdigit() else -1


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _space_facts(data: Mapping[str, Any]) -> tuple[tuple | None, int | None]:
    shape = n = None
    obs = data.get("observation_space")
    if isinstance(obs, dict) and isinstance(obs.get("_shape"), list):
        shape = tuple(obs["_shape"])
    act = data.get("action_space")
    if isinstance(act, dict):
        try:
            n = int(act.get("n"))
        except (TypeError, ValueError):
            n = None
    return shape, n


def check_model_rules(data: Mapping[str, Any], rules, what: str, field: str = "resume",
                      saved: Mapping[str, Any] | None = None) -> None:
    """Refuse a model (its zip's ``data``, :func:`model_data`) trained on another variant or other rule
    options than ``rules`` (``max_turns`` may differ), from its ``tafl_rules`` record (or ``saved``,
    the record of its pool file); without a record, one for another board (observation shape,
    number of actions)."""
    record = data.get(MODEL_INFO) if isinstance(data.get(MODEL_INFO), dict) else saved
    if isinstance(record, Mapping) and "variant" in record:
        mismatch = rules_mismatch(dict(record), rules)
        if mismatch:
            raise TrainSetupError(field, f"{what} was trained on {mismatch}")
    want_shape, want_n = (rules.board_size, rules.board_size, 14), rules.num_actions
    shape, n = _space_facts(data)
    if (shape is not None and shape != want_shape) or (n is not None and n != want_n):
        raise TrainSetupError(field, f"{what} is a model for another board (observations {shape}, {n} actions); "
                                     f"{rules.name} has {want_shape} and {want_n} actions")


def check_resume(path: str | Path, rules) -> dict[str, Any]:
    """Check a checkpoint before resuming from it with ``rules``; nothing is unpickled but the pool
    file (tensors and plain values only, :func:`load_pool`).

    Refuses, with a one-line :class:`TrainSetupError`: a missing path, a directory, a file that is
    not an SB3 zip, a model whose policy is not :class:`agents.ppo.network.TaflBoardPolicy`, a
    checkpoint of another variant or other rule options (:func:`check_model_rules`), and a pool
    file that is not a genuine one. Returns ``{"path", "data", "pool", "trainer"}`` (``pool``
    empty and ``trainer`` ``{}`` when there is no pool file beside it).
    """
    path = Path(path)
    what = f"--resume {path}"
    data = model_data(path, what)
    pc = data.get("policy_class")
    if not (isinstance(pc, dict) and pc.get("__module__") in NETWORK_MODULES and "action_logits" in pc):
        module = pc.get("__module__") if isinstance(pc, dict) else None
        raise TrainSetupError("resume", f"{what}: its policy (from {module or 'an unknown module'}) is not "
                                        "agents.ppo.network.TaflBoardPolicy, the network tafl train trains")
    pool_path = path.with_suffix(POOL_SUFFIX)
    pool, trainer = load_pool(pool_path) if pool_path.is_file() else ([], {})
    check_model_rules(data, rules, what, saved=trainer.get("rules"))
    return {"path": path, "data": data, "pool": pool, "trainer": trainer}
