"""Network weights read without unpickling, as the model loaders of the PPO stack
(:func:`agents.ppo.policy.load_network`, a zip's ``policy.pth``) and of the AZ stack
(:mod:`agents.az.checkpoint`) read them: ``torch.load(..., weights_only=True)``, whose refusal is
told in one line (:func:`refusal_reason`), then :func:`check_tensors` on what it returned.
Both raise :class:`CheckpointError`.

    >>> import torch
    >>> check_tensors({"w": torch.zeros(2)}, "demo.pt", want={"w": torch.zeros(2)})
    >>> try:
    ...     check_tensors({"w": torch.tensor([float("nan")])}, "demo.pt")
    ... except CheckpointError as exc:
    ...     print(exc)
    demo.pt: tensor w holds nan or inf (a diverged network); refusing it
"""

from __future__ import annotations

from typing import Any

__all__ = ["CheckpointError", "check_tensors", "refusal_reason"]


class CheckpointError(ValueError):
    """A model or checkpoint that cannot be read, or is not what its record says."""


def refusal_reason(exc: BaseException) -> str:
    """The line of torch's refusal of a file (``weights_only`` loading, a damaged archive) that
    says what was wrong, without torch's paragraphs of advice: the advice is to load the file
    with ``weights_only=False``, which runs any code a crafted file holds."""
    boiler = ("weights only load failed", "please file an issue", "check the documentation",
              "in pytorch 2.6", "re-running", "you can use", "to do so you", "(1)", "(2)")
    for line in str(exc).splitlines():
        line = line.strip()
        low = line.lower()
        if not line or any(low.startswith(b) for b in boiler):
            continue
        line = line.removeprefix("WeightsUnpickler error:").strip()
        if not line:
            continue
        line = line.split(". ")[0].rstrip(".")   # the first sentence: what, not what to do
        return line[:200]
    return type(exc).__name__


def check_tensors(state: Any, where, want: dict | None = None) -> None:
    """Refuse (:class:`CheckpointError`, naming ``where`` and the tensor) anything but a dict of
    dense floating-point tensors holding finite numbers; with ``want`` (a state dict, e.g. of a
    network on the ``meta`` device), the names and shapes must be its own."""
    import torch as th

    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise CheckpointError(f"{where} does not hold a dict of named tensors")
    for k, v in state.items():
        if not isinstance(v, th.Tensor) or v.layout != th.strided or not v.is_floating_point():
            what = type(v).__name__ if not isinstance(v, th.Tensor) else f"a {v.dtype} {v.layout} tensor"
            raise CheckpointError(f"{where}: {k} is {what}, not a dense floating-point tensor")
    if want is not None:
        if set(state) != set(want):
            missing = sorted(set(want) - set(state))[:3]
            extra = sorted(set(state) - set(want))[:3]
            raise CheckpointError(f"{where} does not match its recorded network (missing {missing}, "
                                  f"unexpected {extra})")
        for k, v in state.items():
            if tuple(v.shape) != tuple(want[k].shape):
                raise CheckpointError(f"{where}: tensor {k} has shape {tuple(v.shape)}, the recorded "
                                      f"network needs {tuple(want[k].shape)}")
    for k, v in state.items():
        if not bool(th.isfinite(v).all()):
            raise CheckpointError(f"{where}: tensor {k} holds nan or inf (a diverged network); refusing it")
