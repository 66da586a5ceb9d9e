"""Agent specs as values: ``kind[:ARG]`` read once into an :class:`AgentSpec`.

A spec names an agent in one line of text (a command line, a config, an anchor table, the
leaderboard). :meth:`AgentSpec.parse` reads it once, checks it and gives the fields every consumer
uses (:func:`agents.make_agent`, :func:`agents.base.check_data_spec`, the time budget of
``tafl rate``, the ladder's order); ``str(spec)`` is its canonical text. The grammar, its bounds and
its errors (one :class:`AgentSpecError` line each, naming the spec) live here only.

========================================================  ==============================================
spec                                                      fields
========================================================  ==============================================
``random``, ``greedy``                                    no argument
``mcts[:BUDGET][:ROLLOUT[:PRIOR]]``                       ``simulations`` or ``seconds``, ``rollout``
                                                          (none, random, greedy), ``prior`` (greedy,
                                                          uniform: needs a rollout)
``mcts[:BUDGET]:policy:PATH``                             ``inner``: the network evaluator's model
                                                          (``unpickle-policy:PATH`` too); the path is
                                                          the rest of the spec
``az:MODEL[:BUDGET]``                                     ``path`` (a model path or a variant id) and
                                                          the budget: the last part when it reads as one
``azpolicy:MODEL``, ``policy:PATH``,                      ``path``
``unpickle-policy:PATH``, ``rllib:DIR``,
``otep:COMMAND`` (the rest of the spec, colons and all)
a kind registered by another module: ``kind[:ARG]``       ``argument`` only
========================================================  ==============================================

``BUDGET`` is ``N`` simulations a move (1 to :data:`MAX_SIMULATIONS`; 64 when left out) or ``Ts``
seconds a move (finite, > 0, at most :data:`MAX_SECONDS`). ``argument`` is always the raw text after
the kind's colon (``None`` without one), what a factory registered for a kind of its own is given.

Valid specs and their canonical text:

>>> for text in ["random", "mcts", "mcts: 100:random:uniform", "mcts:0.25s:greedy", "mcts:policy:m.zip",
...              "mcts:8:policy:runs/a:b.zip", "az:legacy_ard_ri", "az:runs/a:b/final.pt:0.5s", "rllib:runs/x"]:
...     print(f"{text:28} -> {AgentSpec.parse(text)}")
random                       -> random
mcts                         -> mcts:64
mcts: 100:random:uniform     -> mcts:100:random:uniform
mcts:0.25s:greedy            -> mcts:0.25s:greedy
mcts:policy:m.zip            -> mcts:64:policy:m.zip
mcts:8:policy:runs/a:b.zip   -> mcts:8:policy:runs/a:b.zip
az:legacy_ard_ri             -> az:legacy_ard_ri:64
az:runs/a:b/final.pt:0.5s    -> az:runs/a:b/final.pt:0.5s
rllib:runs/x                 -> rllib:runs/x

Invalid specs, each refused with one line:

>>> for text in ["", "chess", "random:5", "mcts:", "mcts::random", "mcts:64::uniform", "mcts:1:2:3:4",
...              "mcts:lots", "mcts:0", "mcts:infs", "mcts:16:fast", "mcts:16:none:uniform",
...              "mcts:8:random:policy:m.zip", "mcts:8:policy:", "az", "az:m.pt:0", "policy"]:
...     try:
...         AgentSpec.parse(text)
...     except AgentSpecError as exc:
...         print(exc)
an agent spec must be a non-empty string such as 'random', 'greedy', 'mcts:64' or 'policy:PATH', got ''
unknown agent 'chess'; known kinds: ...
agent 'random' takes no argument, got 'random:5'
agent spec 'mcts:' has nothing after its colon; write mcts[:N|:Ts][:ROLLOUT[:PRIOR]] or mcts[:N|:Ts]:policy:PATH
'mcts::random' needs a budget after the colon: simulations (mcts:64) or seconds per move (mcts:1s); plain 'mcts' means mcts:64
'mcts:64::uniform' has an empty part after a colon; write mcts:N, mcts:N:ROLLOUT or mcts:N:ROLLOUT:PRIOR
'mcts:1:2:3:4': an mcts spec takes at most N:ROLLOUT:PRIOR (or N:policy:PATH)
'mcts:lots': mcts simulations must be an integer (or a time such as 1s), got 'lots'
'mcts:0': simulations must be from 1 to 1000000, got '0'
'mcts:infs': seconds per move must be finite, > 0 and <= 3600, got inf
'mcts:16:fast': the rollout must be one of none, random, greedy, got 'fast'
'mcts:16:none:uniform': a uniform prior needs rollouts: mcts:N:random:uniform or mcts:N:greedy:uniform
mcts:N:policy:PATH takes no rollout or prior, got 'mcts:8:random:policy:m.zip'
mcts:N:policy:PATH needs a model path, got 'mcts:8:policy:'
agent spec 'az' needs a model: az:PATH[:N|:Ts] or az:VARIANT[:N|:Ts]
'az:m.pt:0': simulations must be from 1 to 1000000, got '0'
agent spec 'policy' needs a checkpoint path: policy:PATH

A search's budget becomes a time budget; other specs stay as they are:

>>> AgentSpec.parse("mcts:1000:policy:x.zip").with_seconds(0.5), AgentSpec.parse("greedy").with_seconds(1)
(AgentSpec('mcts:0.5s:policy:x.zip'), AgentSpec('greedy'))
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Iterator

from tafl_env.errors import preview

from .errors import AgentsError

__all__ = ["AgentSpec", "AgentSpecError", "MAX_SIMULATIONS", "MAX_SECONDS", "DEFAULT_SIMULATIONS", "ROLLOUTS",
           "PRIORS", "BUILTIN_KINDS", "known_kinds", "declare_kind", "format_seconds", "budget_problem"]

MAX_SIMULATIONS = 1_000_000
"""The most simulations a move may take, whatever the budget (a time budget stops there too): a
tree of this many nodes holds about 2.4 GB per game; more is refused before any game starts."""

MAX_SECONDS = 3600.0
"""The longest time budget per move of a game."""

DEFAULT_SIMULATIONS = 64
"""Simulations a move when an ``mcts`` or ``az`` spec gives no budget."""

ROLLOUTS = ("none", "random", "greedy")
"""An ``mcts`` spec's ``ROLLOUT``: none (the greedy evaluator) or the playouts' mover."""

PRIORS = ("greedy", "uniform")
"""An ``mcts`` spec's ``PRIOR``."""

SEARCH_KINDS = ("mcts", "az")
"""Kinds with a budget (:meth:`AgentSpec.with_seconds` puts them on a clock)."""

NETWORK_KINDS = ("policy", "unpickle-policy")
"""Kinds an ``mcts`` spec may nest as its network evaluator's model (``mcts:N:policy:PATH``)."""

_USAGE = {
    "random": "random",
    "greedy": "greedy",
    "mcts": "mcts[:N|:Ts][:ROLLOUT[:PRIOR]] or mcts[:N|:Ts]:policy:PATH",
    "az": "az:PATH[:N|:Ts] or az:VARIANT[:N|:Ts]",
    "azpolicy": "azpolicy:PATH or azpolicy:VARIANT",
    "policy": "policy:PATH",
    "unpickle-policy": "unpickle-policy:PATH",
    "rllib": "rllib:DIR",
    "otep": "otep:COMMAND or otep:ENGINE.ini",
    "openspiel-mcts": "openspiel-mcts[:N]",
}
"""Each built-in kind's spec, as its errors show it."""

BUILTIN_KINDS = tuple(_USAGE)
"""The kinds whose grammar this module reads (their agents are built by :mod:`agents`' modules)."""

_NO_ARGUMENT = ("random", "greedy")
"""Built-in kinds that take no ``:ARG`` (``random:5`` is an error, not a silently ignored 5)."""

_MODEL_KINDS = {"az": "a model", "azpolicy": "a model", "policy": "a checkpoint path",
                "unpickle-policy": "a checkpoint path", "rllib": "a checkpoint directory",
                "otep": "an engine's command line or .ini file"}
"""Kinds whose argument names a model, and what a spec without one is missing."""

_OTHER_KINDS: dict[str, bool] = {}
"""Kinds registered by other modules (:func:`agents.register_agent`): whether ``kind:ARG`` is allowed."""


class AgentSpecError(AgentsError):
    """An agent cannot be built from its spec: not a string, an unknown kind, an argument the kind
    does not take or cannot read, a missing file."""


def declare_kind(kind: str, takes_argument: bool | None = None) -> None:
    """Let :meth:`AgentSpec.parse` read ``kind[:ARG]`` (``kind`` alone when ``takes_argument`` is
    False; ``None`` keeps what an earlier call said, else allows an argument). The built-in kinds
    keep their grammar."""
    if not isinstance(kind, str) or not kind or ":" in kind:
        raise ValueError(f"an agent kind is a non-empty name without ':', got {kind!r}")
    if kind in BUILTIN_KINDS:
        return
    if takes_argument is not None or kind not in _OTHER_KINDS:
        _OTHER_KINDS[kind] = takes_argument is not False


def known_kinds() -> list[str]:
    """Every kind a spec may name: the built-in ones and those registered so far."""
    return sorted({*BUILTIN_KINDS, *_OTHER_KINDS})


def format_seconds(seconds: float) -> str:
    """A time budget as a spec writes it: ``1s``, ``0.25s`` (as short as reads back the same value)."""
    text = repr(float(seconds))
    return (text[:-2] if text.endswith(".0") else text) + "s"


def budget_problem(simulations: object = None, seconds: object = None) -> str | None:
    """Why a budget is out of bounds (``seconds`` when given, else ``simulations``), or None: 1 to
    :data:`MAX_SIMULATIONS` simulations; finite, > 0 and at most :data:`MAX_SECONDS` seconds."""
    if seconds is not None:
        ok = isinstance(seconds, numbers.Real) and not isinstance(seconds, bool) \
            and math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS
        return None if ok else (f"seconds per move must be finite, > 0 and <= {MAX_SECONDS:g}, "
                                f"got {preview(seconds)}")
    ok = isinstance(simulations, numbers.Integral) and not isinstance(simulations, bool) \
        and 1 <= simulations <= MAX_SIMULATIONS
    return None if ok else f"simulations must be from 1 to {MAX_SIMULATIONS}, got {preview(simulations)}"


@dataclass(frozen=True)
class AgentSpec:
    """An agent spec, read and checked (module docstring): build one with :meth:`parse`.

    ``argument`` is the text after the kind's colon as written (``None`` without one); the other
    fields are what it says, for the kinds that have them, else ``None``. Two specs are equal when
    they name the same agent (``mcts`` and ``mcts:64`` are), whatever their text.
    """

    kind: str
    argument: str | None = field(default=None, compare=False)
    simulations: int | None = None
    seconds: float | None = None
    rollout: str | None = None
    prior: str | None = None
    path: str | None = None
    inner: AgentSpec | None = None

    @classmethod
    def parse(cls, text: object) -> AgentSpec:
        """Read ``text``; anything wrong is an :class:`AgentSpecError` (one line naming it)."""
        if not isinstance(text, str) or not text.strip():
            raise AgentSpecError(f"an agent spec must be a non-empty string such as 'random', 'greedy', "
                                 f"'mcts:64' or 'policy:PATH', got {preview(text)}")
        return _parse(text)

    @property
    def text(self) -> str:
        """The spec as written (its kind and raw argument): what an error about it quotes."""
        return self.kind if self.argument is None else f"{self.kind}:{self.argument}"

    @property
    def searches(self) -> bool:
        """Whether the agent searches on a budget (``mcts``, ``az``)."""
        return self.kind in SEARCH_KINDS

    def walk(self) -> Iterator[AgentSpec]:
        """This spec and the specs nested in it (the model of ``mcts:N:policy:PATH``)."""
        yield self
        if self.inner is not None:
            yield from self.inner.walk()

    def with_seconds(self, seconds: float) -> AgentSpec:
        """This spec with its budget replaced by ``seconds`` a move, if it searches; else itself."""
        if not self.searches:
            return self
        problem = budget_problem(seconds=seconds)
        if problem:
            raise AgentSpecError(f"{preview(self.text)}: {problem}")
        timed = replace(self, simulations=None, seconds=float(seconds))
        return replace(timed, argument=timed._canonical_argument())

    def _canonical_argument(self) -> str | None:
        if self.kind in ("random", "greedy"):
            return None
        if self.kind in SEARCH_KINDS:
            budget = format_seconds(self.seconds) if self.seconds is not None else str(self.simulations)
            if self.kind == "az":
                return f"{self.path}:{budget}"
            if self.inner is not None:
                return f"{budget}:{self.inner}"
            if self.prior != "greedy":
                return f"{budget}:{self.rollout}:{self.prior}"
            return budget if self.rollout == "none" else f"{budget}:{self.rollout}"
        if self.kind in _MODEL_KINDS:
            return self.path
        return self.argument

    def __str__(self) -> str:
        argument = self._canonical_argument()
        return self.kind if argument is None else f"{self.kind}:{argument}"

    def __repr__(self) -> str:
        return f"AgentSpec({str(self)!r})"


def _parse(text: str) -> AgentSpec:
    """``text`` (a non-empty string) read as a spec; every error quotes it."""
    kind, sep, arg = text.partition(":")
    p = preview(text)
    if kind not in BUILTIN_KINDS and kind not in _OTHER_KINDS:
        raise AgentSpecError(f"unknown agent {p}; known kinds: {', '.join(known_kinds())}")
    argument = arg if sep else None
    if sep and (kind in _NO_ARGUMENT or not _OTHER_KINDS.get(kind, True)):
        raise AgentSpecError(f"agent {kind!r} takes no argument, got {p}")
    if sep and not arg.strip():
        usage = _USAGE.get(kind, f"{kind!r} alone or {kind}:ARG")
        raise AgentSpecError(f"agent spec {p} has nothing after its colon; write {usage}")
    if kind == "mcts":
        return _parse_mcts(argument, p)
    if kind == "az":
        return _parse_az(argument, p)
    if kind in _MODEL_KINDS:
        if argument is None:
            raise AgentSpecError(f"agent spec {p} needs {_MODEL_KINDS[kind]}: {_USAGE[kind]}")
        return AgentSpec(kind, argument, path=argument)
    return AgentSpec(kind, argument)


def _read_budget(field_text: str, p: str, strict: bool) -> tuple[int | None, float | None] | None:
    """``N`` or ``Ts`` → (simulations, seconds), checked against the bounds; text that is not a
    budget is an error when ``strict`` (an ``mcts`` budget), else None (part of an ``az`` path)."""
    head = field_text.strip()
    try:
        if head.endswith("s"):
            sims, seconds = None, float(head[:-1])
        else:
            sims, seconds = int(head), None
    except ValueError:
        digits = head.lstrip("+-")
        if digits.isascii() and digits.isdigit():   # too many digits for int() to read
            raise AgentSpecError(f"{p}: simulations must be from 1 to {MAX_SIMULATIONS}, got {preview(head)}") from None
        if not strict:
            return None
        raise AgentSpecError(f"{p}: mcts simulations must be an integer (or a time such as 1s), "
                             f"got {preview(head)}") from None
    if seconds is not None:
        problem = budget_problem(seconds=seconds)
    else:
        problem = None if 1 <= sims <= MAX_SIMULATIONS else \
            f"simulations must be from 1 to {MAX_SIMULATIONS}, got {preview(head)}"
    if problem:
        raise AgentSpecError(f"{p}: {problem}")
    return sims, seconds


def _parse_mcts(argument: str | None, p: str) -> AgentSpec:
    """``[BUDGET][:ROLLOUT[:PRIOR]]`` or ``[BUDGET:]policy:PATH`` (module docstring)."""
    if argument is None:
        return AgentSpec("mcts", None, DEFAULT_SIMULATIONS, None, "none", "greedy")
    fields = argument.split(":")
    at = next((i for i, f in enumerate(fields) if f.strip() in NETWORK_KINDS), None)
    head = fields if at is None else fields[:at]
    if at is None and len(head) > 3:
        raise AgentSpecError(f"{p}: an mcts spec takes at most N:ROLLOUT:PRIOR (or N:policy:PATH)")
    if head and not head[0].strip():
        raise AgentSpecError(f"{p} needs a budget after the colon: simulations (mcts:64) or seconds "
                             f"per move (mcts:1s); plain 'mcts' means mcts:64")
    if at is not None:
        if len(head) > 1:
            raise AgentSpecError(f"mcts:N:policy:PATH takes no rollout or prior, got {p}")
        kind, path = fields[at].strip(), ":".join(fields[at + 1:])
        if at + 1 == len(fields) or not path.strip():
            raise AgentSpecError(f"mcts:N:policy:PATH needs a model path, got {p}")
        sims, seconds = _read_budget(head[0], p, strict=True) if head else (DEFAULT_SIMULATIONS, None)
        return AgentSpec("mcts", argument, sims, seconds, inner=AgentSpec(kind, path, path=path))
    if not all(f.strip() for f in head[1:]):
        raise AgentSpecError(f"{p} has an empty part after a colon; write mcts:N, mcts:N:ROLLOUT or "
                             f"mcts:N:ROLLOUT:PRIOR")
    sims, seconds = _read_budget(head[0], p, strict=True)
    rollout = head[1].strip() if len(head) > 1 else "none"
    prior = head[2].strip() if len(head) > 2 else "greedy"
    if rollout not in ROLLOUTS:
        raise AgentSpecError(f"{p}: the rollout must be one of {', '.join(ROLLOUTS)}, got {preview(rollout)}")
    if prior not in PRIORS:
        raise AgentSpecError(f"{p}: the prior must be one of {', '.join(PRIORS)}, got {preview(prior)}")
    if prior == "uniform" and rollout == "none":
        raise AgentSpecError(f"{p}: a uniform prior needs rollouts: mcts:N:random:uniform or mcts:N:greedy:uniform")
    return AgentSpec("mcts", argument, sims, seconds, rollout, prior)


def _parse_az(argument: str | None, p: str) -> AgentSpec:
    """``MODEL[:BUDGET]``: the budget is the last part when it reads as one, so a path may hold colons."""
    if argument is None:
        raise AgentSpecError(f"agent spec {p} needs a model: {_USAGE['az']}")
    model, sep, tail = argument.rpartition(":")
    budget = _read_budget(tail, p, strict=False) if sep else None
    if budget is None:
        return AgentSpec("az", argument, DEFAULT_SIMULATIONS, path=argument)
    if not model.strip():
        raise AgentSpecError(f"agent spec {p} needs a model before its budget: {_USAGE['az']}")
    return AgentSpec("az", argument, *budget, path=model)
