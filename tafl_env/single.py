"""Single-agent Gymnasium env: the learner plays one side of one Tafl game against an opponent.

Registered as ``tafl/<Name>-v0`` (``gymnasium.make("tafl/HistorischesTablut-v0")``); the same ids
have the batched :class:`tafl_env.vector.TaflVectorEnv` as their ``vector_entry_point``.

===================  ===========================================================================
Observation          ``Box(0, 1, (N, N, 14), float32)`` from the learner's side (planes:
                     :mod:`tafl_env.observation`)
Action               ``Discrete(N*N*4*(N-1) + 1)`` (DESIGN.md; the last action is pass)
Action mask          ``info["action_mask"]`` ``(A,)`` int8 and :meth:`TaflSingleEnv.action_masks`
Opponent             ``"random"`` (uniform over legal actions, seeded by ``reset(seed=...)``), a
                     callable ``opponent(obs, mask) -> actions`` on batches (K=1 here), or an
                     object with ``.act(obs, mask)``
Learner side         ``"attacker"``, ``"defender"`` or ``"alternate"`` (switches every episode;
                     attacker first, and again after each seeded reset)
Reward               +1 win, −1 loss, 0 draw, 0 on truncation (the variant's move cap)
===================  ===========================================================================

The opponent's replies (a whole berserk chain included) are played inside ``step`` and inside
``reset`` when the opponent moves first, so every observation has the learner to move, except one:
when the opponent's opening already reaches the move cap (``max_turns=1``, the learner moving
second), the mask allows only the pass action, as a placeholder whose value is ignored, and the next
step ends the episode as truncated.

**Illegal actions.** An action that is not legal (not in the mask) ends the episode as a loss for
the learner: reward −1, ``terminated=True``, ``info["illegal_action"] = True``, the board unchanged
and the mask in ``info`` all zero. This keeps the env total over its action space (so
``gymnasium.utils.env_checker.check_env`` and unmasked agents can drive it); masked agents never
trigger it.

End-of-episode info: ``winner`` (``"attacker"``, ``"defender"``, ``"draw"``; on an illegal action
the opponent's side), ``reason`` (a :class:`~tafl_env.Termination`'s ``reason``: on an illegal action
``"illegal_action"``, decided by :func:`tafl_env.outcome.illegal_action`), ``turns``.

    >>> env = TaflSingleEnv("legacy_ard_ri", learner_side="defender")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, int(info["action_mask"].sum()) > 0
    ((7, 7, 14), True)
    >>> obs, reward, terminated, truncated, info = env.step(env.num_actions - 1)  # pass: illegal
    >>> reward, terminated, info["illegal_action"]
    (-1.0, True, True)
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from .engine.state import REASON_NAMES, RESULT_NAMES, TRUNCATED
from .errors import check_reset_options, check_seed
from .outcome import illegal_action
from .rules import SIDES, RuleSet
from .vector import BatchCore, _spaces

__all__ = ["TaflSingleEnv"]


class TaflSingleEnv(gymnasium.Env):
    """One Tafl game against an opponent (see the module docstring for the full description).

    Args:
        variant: a variant id (``tafl_env.VARIANTS``) or a ``RuleSet``.
        opponent: ``"random"``, a callable ``opponent(obs, mask) -> actions`` or an object with
            ``.act(obs, mask)``.
        learner_side: ``"attacker"``, ``"defender"`` or ``"alternate"``.
        render_mode: ``None``, ``"ansi"`` or ``"rgb_array"`` (an ``(H, W, 3)`` uint8 image, e.g.
            for ``gymnasium.wrappers.RecordVideo``).
        square_px: the size of a square in ``rgb_array`` images.
        **options: rule options (``tafl_env.make_rules``).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, variant: str | RuleSet = "historical_tablut", opponent="random",
                 learner_side: str = "attacker", render_mode: str | None = None, square_px: int = 32,
                 **options):
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}")
        if opponent is None:
            raise ValueError("the single-agent env needs an opponent ('random', a callable or an agent)")
        self._core = BatchCore(variant, 1, opponent, learner_side, self_play=False, autoreset=False,
                               **options)
        self.variant = self._core.rules.name
        self.render_mode = render_mode
        self.square_px = int(square_px)
        self.observation_space, self.action_space = _spaces(self._core)
        self.num_actions = self._core.num_actions
        self._over = True
        self._episodes = 0

    @property
    def engine(self):
        return self._core.engine

    @property
    def state(self):
        """The engine state (a batch of one; read it, do not change it)."""
        return self._core.state

    @property
    def learner_side(self) -> str:
        return SIDES[int(self._core.side[0])]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        # Checked before anything changes: a refused reset keeps the generator and the alternation.
        # No option is read (the position is the variant's start), so any key is a mistake.
        seed = check_seed(seed, "TaflSingleEnv.reset")   # a numpy int as Gymnasium's seeding wants it
        check_reset_options(options, (), "TaflSingleEnv.reset")
        super().reset(seed=seed)
        core = self._core
        core.rng = self.np_random
        if seed is not None:  # a seeded reset starts the alternation again: same seed, same episode
            self._episodes = 0
        if core.alternate:
            core.base_side = np.full(1, self._episodes % 2, dtype=np.int8)
        self._episodes += 1
        obs, mask = core.reset()
        self._over = False
        return obs[0], {"action_mask": mask[0].copy()}

    def step(self, action):
        if self._over:
            raise RuntimeError("the episode is over: call reset() before step()")
        core = self._core
        a = np.asarray(action).reshape(1)
        if core.state.done[0]:    # the opponent's opening reached the move cap: the action is ignored
            a = np.array([core.pass_action])
        elif not (np.issubdtype(a.dtype, np.integer) and core.engine.check_legal(core.state, a)[0]):
            outcome = illegal_action("lose", self.learner_side, f"action {action!r} is not legal")
            self._over = True
            obs = core._observe()
            info = {"action_mask": np.zeros(core.num_actions, dtype=np.int8), "illegal_action": True,
                    "winner": outcome.result, "reason": outcome.reason, "turns": int(core.state.turn[0])}
            return obs[0], -1.0, True, False, info
        out = core.step(a.astype(np.intp))
        info: dict[str, Any] = {"action_mask": out["mask"][0].copy(), "illegal_action": False}
        terminated, truncated = bool(out["terminated"][0]), bool(out["truncated"][0])
        if terminated or truncated:
            self._over = True
            info["action_mask"][:] = 0        # no move is left (not even the placeholder pass)
            st = core.state
            info.update(winner=RESULT_NAMES[int(st.winner[0])], reason=REASON_NAMES[int(st.reason[0])],
                        turns=int(st.turn[0]))
            assert truncated == (int(st.reason[0]) == TRUNCATED)
        return out["obs"][0], float(out["reward"][0]), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """(A,) int8: the learner's legal actions now (all zero once the episode is over)."""
        if self._core.mask is None:
            raise RuntimeError("call reset() first")
        if self._over:
            return np.zeros(self._core.num_actions, dtype=np.int8)
        return self._core.mask[0].copy()

    def render(self):
        if self._core.state is None:
            return None
        if self.render_mode == "ansi":
            return self._core.render_text(0)
        if self.render_mode == "rgb_array":
            from .render import render_rgb

            return render_rgb(self.engine, self._core.state, 0, self.square_px)
        return None

    def close(self):
        pass
