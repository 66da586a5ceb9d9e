"""A network of another head fitted to a training checkpoint's replay window.

A run's window holds the positions of its latest games with the targets the network learned from
(the search's improved policy and the value target). A network of another shape can learn from
the same window without a game of its own; the use it is made for is a **sizeless** network
(``head="sizeless"``, :mod:`.network`) fitted to an 11×11 run, whose weights then start a run on
another board (``init_model`` of an AZ config: Alea Evangelii plays Tawlbwrdd's rules on 19×19,
RULES §4)::

    python -m agents.az.refit OUT/checkpoints/iter_XXXXXX MODEL.pt [--head sizeless] [--steps 3000]

The new network keeps the checkpoint's trunk (the stem, the residual blocks, the policy head's
first conv and the pass logit: :data:`~.network.TRUNK`, the same weights under either head) and
starts its heads afresh; for ``--head-steps`` steps only the heads learn (fresh heads' large
gradients would otherwise wreck the trunk they read), then every weight. The newest
``--holdout`` share of the window is held out: the report gives the policy's KL to the targets
and the value's squared error there for the checkpoint's own network, the new one before
fitting and the new one after, so what the refit kept is measured, not assumed. The model's
record keeps the checkpoint's search settings (``static_value_weight``) and where it came from.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["refit", "holdout_losses", "main"]


def holdout_losses(net, arrays: dict, batch: int = 512) -> dict:
    """The policy's KL to the targets and the value's squared error of ``net`` on ``arrays``
    (positions as the window stores them; no symmetry applied), means over the positions: the
    learner's own terms (:func:`~.learner.loss_terms`)."""
    import torch as th

    from .learner import loss_terms
    from .replay import decode_planes

    kl = sq = 0.0
    p = len(arrays["values"])
    was_training = net.training
    net.eval()
    with th.inference_mode():
        for lo in range(0, p, batch):
            hi = min(p, lo + batch)
            logits, v = net(th.from_numpy(decode_planes(arrays["obs"][lo:hi])))
            cross_entropy, entropy, squared = loss_terms(
                logits, v, th.from_numpy(arrays["actions"][lo:hi].astype(np.int64)),
                th.from_numpy(arrays["targets"][lo:hi]), th.from_numpy(arrays["values"][lo:hi]))
            kl += float((cross_entropy - entropy).sum())
            sq += float(squared.sum())
    net.train(was_training)
    return {"policy_kl": round(kl / p, 4), "value_mse": round(sq / p, 4)}


def refit(checkpoint: str | Path, out: str | Path, head: str = "sizeless", steps: int = 3000,
          head_steps: int | None = None, batch: int = 256, lr: float = 1e-3, weight_decay: float = 1e-4,
          holdout: float = 0.05, seed: int = 0, symmetries: str = "rules", log_every: int = 0) -> dict:
    """Fit a ``head`` network to the window of ``checkpoint`` and save it at ``out`` (module
    docstring); returns the report (also the model record's ``notes``). ``head_steps``: the
    steps that train the heads alone (default: a quarter of ``steps``)."""
    import torch as th

    from tafl_env.game import engine_for
    from tafl_env.rules import make_rules

    from ..model_rules import rules_mismatch
    from .checkpoint import CheckpointError, load_model, read_window, save_model
    from .learner import Learner
    from .network import HEADS, TRUNK, AZNet
    from .replay import ReplayWindow
    from .symmetry import board_symmetries

    for name, value, low in (("steps", steps, 1), ("batch", batch, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    head_steps = steps // 4 if head_steps is None else head_steps
    if isinstance(head_steps, bool) or not isinstance(head_steps, int) or not 0 <= head_steps <= steps:
        raise ValueError(f"head_steps must be an int from 0 to steps ({steps}), got {head_steps!r}")
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    if not 0.0 < holdout < 0.5:
        raise ValueError(f"holdout must be a share between 0 and 0.5, got {holdout!r}")
    if not (lr > 0 and weight_decay >= 0):
        raise ValueError(f"lr must be > 0 and weight_decay >= 0, got {lr!r} and {weight_decay!r}")
    ck = Path(checkpoint)
    if not (ck / "model.pt").is_file():
        raise CheckpointError(f"{ck} is not an AZ training checkpoint (a folder OUT/checkpoints/iter_XXXXXX "
                              "with model.pt and its window)")
    teacher, record = load_model(ck, "cpu")
    rules = make_rules(record["variant"])
    problem = rules_mismatch(record, rules)
    if problem:
        raise CheckpointError(f"{ck} holds a network of {problem}: refit reads networks of a variant's own rules")
    engine = engine_for(rules)
    arrays = read_window(ck, engine.n, engine.num_actions)
    if arrays is None:
        raise CheckpointError(f"{ck} holds no replay window (replay.npz, or a hand-off's window.npz): "
                              "only a run's newest checkpoint keeps one")
    p = len(arrays["values"])
    held = max(1, int(round(p * holdout)))
    if p - held < batch:
        raise CheckpointError(f"{ck}'s window holds {p} positions: too few to hold out {held} and fit on "
                              f"minibatches of {batch}")
    train_part = {k: (v[:p - held] if getattr(v, "ndim", 0) else v) for k, v in arrays.items()}
    test_part = {k: v[p - held:] for k, v in arrays.items() if getattr(v, "ndim", 0)}
    window = ReplayWindow.from_state_dict(train_part, p - held)

    th.manual_seed(seed)
    shape = record["network"]
    student = AZNet(shape["board_size"], planes=shape["planes"], channels=shape["channels"],
                    blocks=shape["blocks"], value_hidden=shape["value_hidden"], head=head)
    kept = {k: v for k, v in teacher.state_dict().items() if k.split(".")[0] in TRUNK}
    student.load_state_dict(kept, strict=False)
    report = {"refit_from": str(ck), "variant": rules.name, "teacher": dict(shape),
              "teacher_iteration": record.get("notes", {}).get("iteration"), "head": head,
              "positions": p - held, "holdout_positions": held, "steps": steps, "head_steps": head_steps,
              "batch": batch, "lr": lr, "seed": seed, "kept_tensors": len(kept),
              "holdout": {"teacher": holdout_losses(teacher, test_part),
                          "before": holdout_losses(student, test_part)}}

    learner = Learner(student, board_symmetries(engine, symmetries), lr=lr, weight_decay=weight_decay)
    rng = np.random.default_rng(seed)
    trunk = [prm for name, prm in student.named_parameters() if name.split(".")[0] in TRUNK]
    start = time.perf_counter()
    for step in range(steps):
        frozen = step < head_steps
        for prm in trunk:
            prm.requires_grad_(not frozen)
        m = learner.step(window, batch, rng)
        if log_every and (step + 1) % log_every == 0:
            print(f"step {step + 1}/{steps}{' (heads)' if frozen else ''}: policy KL {m['policy_kl']:.3f}, "
                  f"value loss {m['value_loss']:.3f}", file=sys.stderr, flush=True)
    for prm in trunk:
        prm.requires_grad_(True)
    report["seconds"] = round(time.perf_counter() - start, 1)
    report["holdout"]["after"] = holdout_losses(student, test_part)
    save_model(out, student, rules, search=record.get("search"), **report)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m agents.az.refit",
                                description="Fit a network of another head (sizeless: one that plays every board "
                                            "size) to an AZ training checkpoint's replay window, keeping its trunk "
                                            "(agents/az/refit.py).")
    p.add_argument("checkpoint", help="OUT/checkpoints/iter_XXXXXX with its window (a run's newest, or a hand-off's)")
    p.add_argument("out", help="the new model's .pt (its .json record beside it)")
    p.add_argument("--head", default="sizeless", help="board or sizeless (default)")
    p.add_argument("--steps", type=int, default=3000, help="learner steps in all (3000)")
    p.add_argument("--head-steps", type=int, default=None, help="first steps that train the heads alone (steps/4)")
    p.add_argument("--batch", type=int, default=256, help="positions a step (256)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW's learning rate (1e-3)")
    p.add_argument("--holdout", type=float, default=0.05, help="newest share of the window held out (0.05)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=0, help="print the losses every N steps (0: never)")
    args = p.parse_args(argv)
    try:
        report = refit(args.checkpoint, args.out, head=args.head, steps=args.steps, head_steps=args.head_steps,
                       batch=args.batch, lr=args.lr, holdout=args.holdout, seed=args.seed,
                       log_every=args.log_every)
    except (ValueError, OSError) as exc:
        print(f"error: {' '.join(str(exc).split())[:400]}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
