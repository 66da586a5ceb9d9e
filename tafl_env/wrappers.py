"""The wrappers of ``env()``: PettingZoo's three standard AEC wrappers, with the attributes that
every ``last()`` and ``step()`` reads forwarded by properties.

PettingZoo's wrappers reach the wrapped env's attributes (``agent_selection``, ``terminations``,
``rewards``, ...) through ``__getattr__``, which Python calls only after the normal lookup has
failed, an ``AttributeError`` raised and caught at every level of the stack. One ``last()`` and
``step()`` of ``env()`` read such attributes about 33 times: on a 2-core VM that was two thirds
of the wrapped env's time (Tablut, 95-110 µs a step and last against 29 µs for ``raw_env``;
``benchmarks/bench_compiled.py``, rows ``raw_env`` and ``env()``). Each class here is the
PettingZoo wrapper (a subclass: same checks, same errors, same order) with those attributes as
properties that read (and write) the wrapped env's, so a lookup costs a function call a level.

``AssertOutOfBounds`` also answers the common case, a Python ``int`` in range, without building
numpy scalars in ``Discrete.contains``; any other action goes through PettingZoo's check.
"""

from __future__ import annotations

from pettingzoo.utils import wrappers

from .outcome import illegal_action

FORWARDED = ("agents", "agent_selection", "rewards", "_cumulative_rewards", "terminations",
             "truncations", "infos")
"""The wrapped env's attributes that ``AECEnv.last`` and the wrappers' ``step`` read every turn."""


def _forward(name: str, before_reset_error: bool = False) -> property:
    # OrderEnforcingWrapper.__getattr__ refuses these names before reset(), not _cumulative_rewards
    guarded = before_reset_error and name != "_cumulative_rewards"

    def get(self):
        if guarded and not self._has_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self._owner, name)

    def set_(self, value):
        setattr(self._owner, name, value)

    return property(get, set_, doc=f"The wrapped env's ``{name}``.")


class _Forwarding:
    """The properties of :data:`FORWARDED`, reading and writing the attributes of ``_owner``: the
    env under the whole stack of these wrappers (forwarding level by level would cost a function
    call a level)."""

    def __init__(self, env, *args, **kwargs):
        super().__init__(env, *args, **kwargs)
        self._owner = env._owner if isinstance(env, _Forwarding) else env


for _name in FORWARDED:
    setattr(_Forwarding, _name, _forward(_name))


class TerminateIllegal(_Forwarding, wrappers.TerminateIllegalWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` (an illegal action loses) that first rejects what is
    not an action id (``True``, ``1.0``) with the raw env's error: the wrapper would index the
    action mask with it (``mask[True]`` is an array). A game it ends gets the infos of every end,
    ``{"turn", "reason", "result"}``, from :func:`tafl_env.outcome.illegal_action`."""

    def step(self, action) -> None:
        agent = self.agent_selection
        live = action is not None and not (self.terminations[agent] or self.truncations[agent])
        if live:
            raw = self.env.unwrapped
            a = raw._as_action(action, agent)
            st = raw.engine_state
            if not raw.engine.check_legal(st, [a])[0]:
                outcome = illegal_action("lose", agent, f"{agent} played the illegal action {a}")
                super().step(action)
                end = {"turn": int(st.turn[0]), "reason": outcome.reason, "result": outcome.result}
                raw.infos = {name: dict(end) for name in raw.infos}
                return
        super().step(action)


class AssertOutOfBounds(_Forwarding, wrappers.AssertOutOfBoundsWrapper):
    """PettingZoo's ``AssertOutOfBoundsWrapper`` (an action outside the action space is an
    ``AssertionError``)."""

    def __init__(self, env):
        super().__init__(env)
        spaces = {a: env.action_space(a) for a in env.possible_agents}
        self._in_bounds = {a: range(int(s.start), int(s.start + s.n)) for a, s in spaces.items()}

    def step(self, action) -> None:
        if type(action) is int and action in self._in_bounds[self.agent_selection]:
            self.env.step(action)   # what Discrete.contains accepts, decided without numpy
        else:
            super().step(action)


class OrderEnforcing(_Forwarding, wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` (errors for calls before ``reset()``)."""

    def __str__(self) -> str:
        return str(self.env)   # as PettingZoo's own class prints: the env's name


for _name in FORWARDED:
    setattr(OrderEnforcing, _name, _forward(_name, before_reset_error=True))


def wrap(raw, illegal_reward: float = -1) -> OrderEnforcing:
    """``raw`` wrapped as PettingZoo's classic games are: an illegal action ends the game with
    ``illegal_reward`` for the agent that made it, an action outside the action space is an
    ``AssertionError``, calls before ``reset()`` are errors."""
    return OrderEnforcing(AssertOutOfBounds(TerminateIllegal(raw, illegal_reward=illegal_reward)))
