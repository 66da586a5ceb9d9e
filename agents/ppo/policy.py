"""A trained policy: an sb3-contrib ``MaskablePPO`` checkpoint acting on the engine's observations.

``policy:PATH`` loads a model zip; ``policy:<variant>`` (e.g. ``policy:historical_tablut``) the
model shipped with the package for that variant (:mod:`agents.pretrained`).

Observations are ``observe(engine, state, state.to_move)`` — (B, N, N, 14) float32 planes seen by the
side to move (see :mod:`tafl_env.observation`) — and masks are ``engine.legal_action_mask(state)``,
exactly what the training environments produce; the model is asked with
``model.predict(obs, action_masks=mask, deterministic=...)`` for the running games only (finished
games get −1). torch and SB3 (the ``train`` extra) are imported when the agent is built.

**Which game a model plays.** A model zip may carry the rules it was trained on: the model
attribute ``tafl_rules`` (:data:`~agents.model_rules.MODEL_INFO`) = ``{"variant": id, "rules":
{field: value}}``, which SB3 saves as plain JSON in the zip's ``data`` entry and restores on load.
Training runs set it before saving; :func:`save_policy` does the same for any model, and
:func:`stamp_model` adds it to a saved zip. Before any game the agent's
:meth:`PolicyAgent.check_rules` compares it with the game's rules (read from the JSON, nothing
unpickled; :func:`agents.model_rules.rules_mismatch`) and refuses another variant or other rule
options (the move cap aside). A zip without it (an older model) is judged by the resolved
``config.yaml`` a training run writes beside its output (``OUT/final.zip``,
``OUT/checkpoints/step_T.zip``) and, failing that, by its board size alone, and says so.

**Loading without unpickling.** ``policy:PATH`` unpickles nothing: it reads the network's weights
(the zip's ``policy.pth``, a plain state dict) with ``torch.load(weights_only=True)``, which refuses
anything but tensors and plain values, and rebuilds :class:`agents.ppo.network.TaflBoardPolicy` from
the zip's JSON: the record :data:`NETWORK_INFO` of the network's shape (channels, blocks, value
units, observation shape, action count), which training runs and :func:`save_policy` write and
:func:`stamp_model` adds; for a zip without it, the same shape read off the weights' tensor shapes.
A model of another network class cannot be rebuilt that way and is refused with one line.

**What loading refuses**, each with one :class:`~agents.base.AgentSpecError` line naming the file:
a zip member that would inflate past a cap (checked by its declared size before it is read); a
recorded shape whose sizes are not ints within :data:`agents.schema.NETWORK_BOUNDS` (a float
such as 32.9 is refused, not truncated); weights whose names and shapes differ from the recorded
network's, compared with a network built on torch's ``meta`` device (nothing allocated) before
the real one is built; weights holding nan or inf. Only a well-formed Stable-Baselines3 zip of
another network class is pointed to ``unpickle-policy:`` (and told that it runs code); a damaged
or crafted zip is just refused.

``unpickle-policy:PATH`` is the opt-in to SB3's own ``MaskablePPO.load``, which **unpickles**
parts of the zip (its policy class, spaces, schedules) and so **runs any code a crafted zip
holds**: for models of other network classes, from a source you trust. The shipped models always
load the safe way.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.extras import require
from tafl_env.observation import observe
from tafl_env.rules import VARIANTS, RuleSet, make_rules

from ..base import Agent, AgentSpecError, register_agent
from ..model_rules import MODEL_INFO, looks_like_rllib_checkpoint, model_info, rules_mismatch
from ..pretrained import shipped_policies, shipped_policy

__all__ = ["PolicyAgent", "NetAgent", "NETWORK_INFO", "NETWORK_MODULES", "network_info", "stamp_model",
           "save_policy", "read_model_info", "resolve_model_path", "load_network"]

NETWORK_INFO = "tafl_network"
"""The model attribute (and key of the zip's ``data`` JSON) that records the network's shape, from
which :func:`load_network` rebuilds it without unpickling anything."""

NETWORK_MODULES = ("agents.ppo.network", "agents.networks")
"""The modules a zip of this package's network names as its policy class's: where the class is,
and where it was when older zips (the shipped ones among them) were saved (``agents/networks.py``
is kept for them, :mod:`agents.networks`)."""

_NETWORK_FIELDS = ("channels", "blocks", "value_hidden")

MAX_DATA_BYTES = 64 << 20
"""The largest ``data`` entry (the zip's JSON) read: the shipped 19x19 model's is under 1 MB."""

def network_info(policy) -> dict[str, Any]:
    """The ``tafl_network`` record of a :class:`~agents.ppo.network.TaflBoardPolicy`: its sizes, the
    observation shape and the action count (plain JSON)."""
    trunk = policy.features_extractor
    return {"channels": int(trunk.channels), "blocks": len(trunk.blocks),
            "value_hidden": int(policy.value_hidden),
            "observation_shape": [int(v) for v in policy.observation_space.shape],
            "num_actions": int(policy.action_space.n)}


def _network_info_of_weights(weights: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tafl_network`` record read off the tensor shapes of a TaflBoardPolicy's state dict
    (for zips saved before the record was written). Raises ``KeyError`` for another network."""
    stem = weights["features_extractor.stem.weight"]            # (channels, planes, 3, 3)
    blocks = {key.split(".")[2] for key in weights if key.startswith("features_extractor.blocks.")}
    value_in = weights["mlp_extractor.value_mlp.0.weight"]      # (value_hidden, 2 * N * N)
    per_square = weights["mlp_extractor.policy_out.weight"]     # (4 * (N - 1), channels, 1, 1)
    n = int(per_square.shape[0]) // 4 + 1
    return {"channels": int(stem.shape[0]), "blocks": len(blocks), "value_hidden": int(value_in.shape[0]),
            "observation_shape": [n, n, int(stem.shape[1])], "num_actions": n * n * 4 * (n - 1) + 1}


def save_policy(model, path: str | os.PathLike, rules: RuleSet) -> Path:
    """``model.save(path)`` with ``model.tafl_rules`` and ``model.tafl_network`` set: a zip that
    knows which game it plays and can be loaded without unpickling (:func:`load_network`)."""
    setattr(model, MODEL_INFO, model_info(rules))
    setattr(model, NETWORK_INFO, network_info(model.policy))
    path = Path(path)
    model.save(path)
    return path if path.suffix == ".zip" else path.with_name(path.name + ".zip")   # SB3 appends .zip


def stamp_model(path: str | os.PathLike, rules: RuleSet) -> Path:
    """Record ``rules`` in an already saved model zip (its ``data`` JSON), replacing any record,
    and the network's shape (:data:`NETWORK_INFO`, read off its weights) where it is missing."""
    from ..schema import MAX_WEIGHTS_BYTES

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w") as dst:
        for item in src.infolist():
            content = _read_member(src, item.filename, path,
                                   MAX_DATA_BYTES if item.filename == "data" else MAX_WEIGHTS_BYTES)
            if item.filename == "data":
                data = json.loads(content.decode("utf-8"))
                data[MODEL_INFO] = model_info(rules)
                if NETWORK_INFO not in data:
                    data[NETWORK_INFO] = _network_info_of_weights(_read_weights(src, path, "cpu"))
                content = json.dumps(data, indent=4).encode("utf-8")
            dst.writestr(item, content)
    os.replace(tmp, path)
    return path


def resolve_model_path(text: str | os.PathLike) -> Path:
    """The model zip that ``policy:TEXT`` names, checked before anything is loaded.

    A variant id (``policy:historical_tablut``) names the model shipped with the package
    (:mod:`agents.pretrained`), unless a file of that name exists in the working directory.

    As with SB3, ``.zip`` may be left off. A missing file, a directory or a file that is not a
    Stable-Baselines3 zip is an :class:`~agents.base.AgentSpecError` saying which.
    """
    raw = str(text)
    if not raw.strip():
        raise AgentSpecError("policy agent needs a checkpoint path: 'policy:PATH'")
    path = Path(raw).expanduser()
    if raw in VARIANTS and not path.exists():   # policy:<variant>: the model shipped with the package
        shipped = shipped_policy(raw)
        if shipped is None:
            have = ", ".join(sorted(shipped_policies())) or "none"
            raise AgentSpecError(f"no trained policy is shipped for {raw} (shipped: {have}); train one "
                                 f"with: tafl train --config configs/train/{raw}.yaml")
        return shipped
    if not path.exists() and path.suffix != ".zip" and path.with_name(path.name + ".zip").is_file():
        path = path.with_name(path.name + ".zip")
    if path.is_dir():
        zips = sorted(p.name for p in path.glob("*.zip"))
        hint = f" (it holds {', '.join(zips[:3])})" if zips else ""
        raise AgentSpecError(f"policy path {raw} is a directory, not a model zip{hint}")
    if not path.exists():
        raise AgentSpecError(f"policy path {raw}: no such file")
    if not zipfile.is_zipfile(path):
        raise AgentSpecError(f"policy path {raw} is not a model zip (not a zip file)")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise AgentSpecError(f"policy path {raw} is not a readable zip ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:120]})") from None
    if "data" not in names:
        raise AgentSpecError(f"policy path {raw} is a zip but not a Stable-Baselines3 model (no 'data')")
    return path


def _training_config_beside(path: Path) -> tuple[dict, Path] | None:
    """The resolved config a training run wrote beside its output, if any (no PyYAML: none)."""
    for folder in (path.parent, path.parent.parent):
        cfg = folder / "config.yaml"
        if not cfg.is_file():
            continue
        try:
            import yaml

            raw = yaml.safe_load(cfg.read_text(encoding="utf-8"))
        except Exception:   # not ours to judge: an unreadable side file is just no information
            continue
        if isinstance(raw, dict) and isinstance(raw.get("variant"), str) and "total_timesteps" in raw:
            return raw, cfg
    return None


def read_model_info(path: str | os.PathLike) -> tuple[dict[str, Any] | None, str]:
    """``(info, source)``: the rules a model was trained on, and where they were found.

    ``info`` is :func:`~agents.model_rules.model_info`'s dict, from the zip's ``data`` JSON
    (:data:`~agents.model_rules.MODEL_INFO`), else from a training ``config.yaml`` beside it;
    ``(None, why)`` when neither tells.
    """
    path = Path(path)
    info = _zip_data(path).get(MODEL_INFO)
    if isinstance(info, dict) and isinstance(info.get("variant"), str) and isinstance(info.get("rules"), dict):
        return info, f"the model's {MODEL_INFO}"
    found = _training_config_beside(path)
    if found is not None:
        raw, cfg = found
        options = dict(raw.get("options") or {})
        if raw.get("max_turns") is not None:
            options["max_turns"] = raw["max_turns"]
        try:
            return model_info(make_rules(raw["variant"], **options)), str(cfg)
        except (ValueError, TypeError):
            pass
    return None, f"{path} records no rules (an older model)"


def _read_member(zf: zipfile.ZipFile, name: str, path, cap: int) -> bytes:
    """The bytes of zip member ``name``, refused (one line) when its declared size passes ``cap``
    before anything is inflated: a member of a few MB can inflate to gigabytes. zipfile never
    returns more than the declared size (and checks the CRC), so the cap holds."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise AgentSpecError(f"policy path {path} has no {name!r} entry") from None
    if info.file_size > cap:
        raise AgentSpecError(f"policy path {path}: its {name!r} entry would inflate to {info.file_size} "
                             f"bytes, more than such an entry can be ({cap >> 20} MiB); refusing to read it")
    try:
        return zf.read(name)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError) as exc:
        raise AgentSpecError(f"policy path {path}: its {name!r} entry cannot be read "
                             f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None


def _read_data(path: Path) -> dict[str, Any]:
    """The ``data`` entry of an SB3 zip as a JSON object (nothing unpickled), or
    :class:`~agents.base.AgentSpecError` naming the file."""
    try:
        with zipfile.ZipFile(path) as zf:
            raw = _read_member(zf, "data", path, MAX_DATA_BYTES)
    except (zipfile.BadZipFile, OSError) as exc:
        raise AgentSpecError(f"policy path {path} is not a readable zip ({type(exc).__name__})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AgentSpecError(f"policy path {path}: its 'data' entry is not JSON") from None
    if not isinstance(data, dict):
        raise AgentSpecError(f"policy path {path}: its 'data' entry is not a JSON object")
    return data


def _zip_data(path: Path) -> dict[str, Any]:
    """The ``data`` entry of an SB3 zip as JSON (nothing unpickled); ``{}`` when unreadable
    (loading the network, :func:`load_network`, says why)."""
    try:
        return _read_data(path)
    except AgentSpecError:
        return {}


def _observation_shape(path: Path) -> tuple[int, ...] | None:
    """The observation shape an SB3 zip declares, read from its JSON (nothing unpickled)."""
    try:
        return tuple(int(v) for v in _zip_data(path)["observation_space"]["_shape"])
    except Exception:
        return None


def _read_weights(zf: zipfile.ZipFile, path, device: str) -> dict:
    """The state dict in an SB3 zip's ``policy.pth``, read with ``weights_only=True`` (at most
    :data:`agents.schema.MAX_WEIGHTS_BYTES`; torch's warnings while it reads are not passed on)."""
    import warnings

    import torch as th

    from ..schema import MAX_WEIGHTS_BYTES
    from ..weights import refusal_reason

    if "policy.pth" not in zf.namelist():
        raise AgentSpecError(f"policy path {path} holds no network weights (no 'policy.pth')")
    raw = _read_member(zf, "policy.pth", path, MAX_WEIGHTS_BYTES)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            weights = th.load(io.BytesIO(raw), map_location=device, weights_only=True)
    except Exception as exc:
        raise AgentSpecError(f"policy path {path}: its weights (policy.pth) are not a plain tensor file "
                             f"(refused by weights_only loading: {refusal_reason(exc)}); refusing to "
                             f"unpickle them") from None
    if not isinstance(weights, dict):
        raise AgentSpecError(f"policy path {path}: policy.pth is not a state dict")
    return weights


def _other_network_class(data: Mapping[str, Any]) -> str | None:
    """The module of the policy class a genuine SB3 zip names, when it is not this package's
    network (:data:`NETWORK_MODULES`); None otherwise (read from the JSON, nothing unpickled)."""
    policy_class = data.get("policy_class")
    if isinstance(policy_class, dict) and isinstance(policy_class.get(":serialized:"), str):
        module = policy_class.get("__module__")
        if isinstance(module, str) and module not in NETWORK_MODULES:
            return module
    return None


def _checked_shape(shape: Any, path) -> tuple[dict[str, int], tuple[int, int, int], int]:
    """``(sizes, observation shape, action count)`` of a ``tafl_network`` record, each size an
    int within :data:`agents.schema.NETWORK_BOUNDS` (a float is refused, not truncated), the
    observation ``(N, N, planes)`` and the action count that of an N x N board."""
    from ..schema import NETWORK_BOUNDS, int_problem

    where = f"policy path {path}: its {NETWORK_INFO} record"
    if not isinstance(shape, dict):
        raise AgentSpecError(f"{where} is not a JSON object")
    for key in (*_NETWORK_FIELDS, "observation_shape", "num_actions"):
        if key not in shape:
            raise AgentSpecError(f"{where} has no {key!r}")
    sizes = {}
    for key in _NETWORK_FIELDS:
        problem = int_problem(shape[key], *NETWORK_BOUNDS[key])
        if problem:
            raise AgentSpecError(f"{where}: {key} {problem}")
        sizes[key] = shape[key]
    obs = shape["observation_shape"]
    if not isinstance(obs, list) or len(obs) != 3:
        raise AgentSpecError(f"{where}: observation_shape must be [N, N, planes], got {obs!r}")
    for key, value in zip(("board_size", "board_size", "planes"), obs):
        problem = int_problem(value, *NETWORK_BOUNDS[key])
        if problem:
            raise AgentSpecError(f"{where}: observation_shape {key} {problem}")
    n = obs[0]
    if obs[1] != n:
        raise AgentSpecError(f"{where}: observation_shape {obs} is not square")
    actions = n * n * 4 * (n - 1) + 1
    if isinstance(shape["num_actions"], bool) or shape["num_actions"] != actions \
            or not isinstance(shape["num_actions"], int):
        raise AgentSpecError(f"{where}: num_actions must be {actions} for a {n}x{n} board, "
                             f"got {shape['num_actions']!r}")
    return sizes, (n, n, obs[2]), actions


def load_network(path: str | os.PathLike, device: str = "cpu"):
    """The :class:`~agents.ppo.network.TaflBoardPolicy` of a model zip, rebuilt from the zip's JSON
    record of its shape (:data:`NETWORK_INFO`, or the weights' shapes) and its ``policy.pth``
    weights read with ``torch.load(weights_only=True)``: nothing in the zip is unpickled.

    A genuine SB3 zip of another network class is an :class:`~agents.base.AgentSpecError` that
    names the opt-in ``unpickle-policy:PATH`` (and says that it runs the file's code); any other
    zip that cannot be rebuilt (damaged, crafted, a record that does not match its weights) is
    refused without that advice (module docstring).
    """
    require("train", "a policy agent (policy:PATH)")
    import torch as th
    from gymnasium import spaces

    from ..weights import CheckpointError, check_tensors
    from .network import TaflBoardPolicy, board_policy_kwargs

    path = Path(path)
    data = _read_data(path)
    try:
        with zipfile.ZipFile(path) as zf:
            weights = _read_weights(zf, path, "cpu")
    except (zipfile.BadZipFile, OSError) as exc:
        raise AgentSpecError(f"policy path {path} is not a readable zip ({type(exc).__name__})") from None
    other = _other_network_class(data)
    if other is not None and NETWORK_INFO not in data:
        raise AgentSpecError(f"policy path {path}: a Stable-Baselines3 model of another network class "
                             f"({other}), which this package cannot rebuild without unpickling; "
                             f"'unpickle-policy:{path}' loads it with SB3, which runs any code the file "
                             f"holds: only for a file you trust")
    shape = data.get(NETWORK_INFO)
    if shape is None:                # a zip saved before the record was written: read the weights
        try:
            shape = _network_info_of_weights(weights)
        except (KeyError, IndexError, TypeError, AttributeError):
            raise AgentSpecError(f"policy path {path}: its weights are not those of this package's "
                                 f"network (agents.ppo.network.TaflBoardPolicy) and it records no "
                                 f"{NETWORK_INFO}") from None
    sizes, obs_shape, num_actions = _checked_shape(shape, path)

    def build(ortho_init: bool = True):
        return TaflBoardPolicy(spaces.Box(0.0, 1.0, obs_shape, np.float32), spaces.Discrete(num_actions),
                               lambda _: 0.0, **board_policy_kwargs(**sizes), ortho_init=ortho_init)

    try:
        with th.device("meta"):      # shapes only, nothing allocated (no numbers to initialise)
            want = build(ortho_init=False).state_dict()
        check_tensors(weights, f"policy path {path} (policy.pth)", want)
    except CheckpointError as exc:
        raise AgentSpecError(str(exc)) from None
    except (RuntimeError, ValueError, TypeError) as exc:
        raise AgentSpecError(f"policy path {path}: its {NETWORK_INFO} record cannot be built "
                             f"({' '.join(str(exc).split())[:200]})") from None
    policy = build()
    policy.load_state_dict(weights)
    policy.to(device)
    policy.set_training_mode(False)
    return policy


def _seed_torch(seed: int) -> None:
    """Seed what a policy's sampling draws from (torch's, numpy's and Python's global generators),
    as ``MaskablePPO.set_random_seed`` does."""
    from stable_baselines3.common.utils import set_random_seed

    set_random_seed(seed)


class PolicyAgent(Agent):
    """Acts with the network of a saved ``MaskablePPO`` model zip, loaded without unpickling
    (:func:`load_network`); ``unpickle=True`` loads it with ``MaskablePPO.load`` instead, which
    runs any code the zip holds (the ``unpickle-policy:PATH`` spec)."""

    name = "policy"

    def __init__(self, path, deterministic: bool = True, device: str = "cpu", seed: int | None = None,
                 unpickle: bool = False):
        super().__init__(seed)
        zip_path = resolve_model_path(path)
        self.info, self.info_source = read_model_info(zip_path)
        self.obs_shape = _observation_shape(zip_path)
        require("train", "a policy agent (policy:PATH)")
        self.path = str(path)
        self.deterministic = bool(deterministic)
        self.model = None
        if unpickle:
            from sb3_contrib import MaskablePPO  # lazy: torch only when a policy is used

            try:
                self.model = MaskablePPO.load(str(zip_path), device=device)
            except Exception as exc:
                raise AgentSpecError(f"policy path {path}: cannot load the model: "
                                     f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None
            self.policy = self.model.policy
        else:
            self.policy = load_network(zip_path, device)
        self.obs_shape = tuple(self.policy.observation_space.shape)
        if seed is not None:
            _seed_torch(seed)
        self.name = f"{'unpickle-policy' if unpickle else 'policy'}:{self.path}"
        self._checked: set[RuleSet] = set()

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if seed is not None:
            _seed_torch(seed)

    def check_rules(self, rules: RuleSet) -> str | None:
        """Refuse a game other than the model's (:class:`~agents.base.AgentSpecError`, one line).

        Returns a note when the check could only compare board sizes (an older model).
        """
        n = rules.board_size
        if self.obs_shape is not None and tuple(self.obs_shape) != (n, n, 14):
            size = f"{self.obs_shape[0]}x{self.obs_shape[1]}" if len(self.obs_shape) == 3 else str(self.obs_shape)
            raise AgentSpecError(f"{self.name} plays a {size} board; {rules.name} is {n}x{n}")
        if self.info is None:
            self._checked.add(rules)
            return (f"{self.name} records no variant (an older model); only its board size "
                    f"({n}x{n}) was checked against {rules.name}")
        problem = rules_mismatch(self.info, rules)
        if problem:
            raise AgentSpecError(f"{self.name} was trained on {problem} (recorded in {self.info_source})")
        self._checked.add(rules)
        return None

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        if engine.rules not in self._checked:
            self.check_rules(engine.rules)
        sub = state
        obs = observe(engine, sub, sub.to_move)
        mask = engine.legal_action_mask(sub).astype(bool)
        actions, _ = self.policy.predict(obs, action_masks=mask, deterministic=self.deterministic)
        actions = np.asarray(actions, dtype=np.int64).reshape(len(sub))
        # guard: a masked distribution never samples an illegal action, but never trust it blindly
        bad = ~mask[np.arange(len(sub)), actions]
        if bad.any():
            actions[bad] = engine.random_actions(sub.take(np.flatnonzero(bad)), self.rng)
        return actions


def _factory(spec, seed=None, **kw):
    if looks_like_rllib_checkpoint(spec.path):
        # loading an RLlib checkpoint unpickles it: policy: never does, so a data file naming
        # policy:DIR cannot run code; the user asks for it by name
        raise AgentSpecError(f"policy:{spec.path} is an RLlib checkpoint, whose loading unpickles it (runs any "
                             f"code in it): play it as rllib:{spec.path}")
    return PolicyAgent(spec.path, seed=seed, **kw)


register_agent("policy", _factory, reads_spec=True)


def _unpickling_factory(spec, seed=None, **kw):
    return PolicyAgent(spec.path, seed=seed, unpickle=True, **kw)


register_agent("unpickle-policy", _unpickling_factory, reads_spec=True)


class NetAgent(Agent):
    """An engine agent (:class:`agents.base.Agent`) from a :class:`agents.ppo.network.TaflBoardPolicy`.

    Observations with :func:`tafl_env.observation.observe` from the side to move, masks from the
    engine; argmax over the legal moves (``deterministic``) or a sample of the masked policy.
    """

    name = "net"

    def __init__(self, policy, deterministic: bool = True, seed: int | None = None):
        super().__init__(seed)
        self.policy = policy
        self.deterministic = deterministic

    def choose(self, engine, state: State) -> np.ndarray:
        import torch as th

        from tafl_env.observation import observe

        from ..nn import masked_sample

        obs = observe(engine, state, state.to_move.astype(np.intp))
        mask = engine.legal_action_mask(state)
        with th.no_grad():
            logits = self.policy.action_logits(th.as_tensor(obs))
        return masked_sample(logits, mask, self.rng, self.deterministic)

