"""The AlphaZero agents: the network with its search (``az``) and the network alone
(``azpolicy``).

Specs (:func:`agents.make_agent`, ``tafl play --vs``, ``tafl eval`` configs):

- ``az:PATH`` / ``az:PATH:SIMS`` / ``az:PATH:Ts`` — the model at PATH (``NAME.pt`` with its
  ``NAME.json``, or a training checkpoint folder) searching ``SIMS`` simulations per move (default
  64) or about ``T`` seconds per move of each game (``az:model.pt:0.5s``: the simulation count is
  set from the measured speed of the previous moves, the first move probing with 16);
- ``az:<variant>[:SIMS|:Ts]`` — the model shipped for that variant (``agents/pretrained/<variant>_az.pt``);
- ``azpolicy:PATH`` / ``azpolicy:<variant>`` — the network alone: the legal move of the highest
  logit (no search), the figure that says what the network itself learned.

A budget has the MCTS agent's bounds (:data:`agents.mcts.agent.MAX_SIMULATIONS` simulations,
:data:`agents.mcts.agent.MAX_SECONDS` a move; a time budget stops at the simulation bound too)
and a search tree per game must fit the memory available, all checked when the spec is read
(:class:`agents.spec.AgentSpec` reads it; the factories build from its fields).

The search is :class:`~agents.az.search.BatchedSearch` with a Gumbel root and no noise by default
(``gumbel_scale=0``: the ``considered`` moves of the highest prior, the move among the most
visited by ``logits + sigma(q)``), so an agent plays the same game for the same position; every
game of a batch is searched at once. The model records its rules (:mod:`.checkpoint`): the agent
refuses any other game (another move cap is fine). It also records the leaf value self-play
searched with (``static_value_weight``: the greedy evaluation's share, :mod:`.search`), and the
agent searches with it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.errors import preview
from tafl_env.rules import VARIANTS

from ..base import Agent, register_agent
from ..mcts.agent import MAX_SECONDS, MAX_SIMULATIONS, tree_bytes  # noqa: F401  (the bounds an az budget has)
from ..spec import DEFAULT_SIMULATIONS, AgentSpec, AgentSpecError, budget_problem
from ..greedy.wins import WIN_IN_TWO, WIN_NOW, WinFinder
from .search import BatchedSearch, SearchSettings

__all__ = ["AZAgent", "AZPolicyAgent", "shipped_model", "parse_az_spec"]

PROBE_SIMULATIONS = 16
PRETRAINED = Path(__file__).resolve().parent.parent / "pretrained"


def shipped_model(variant: str) -> Path | None:
    """The AZ model shipped for ``variant`` (``agents/pretrained/<variant>_az.pt``), or None."""
    path = PRETRAINED / f"{variant}_az.pt"
    return path if variant in VARIANTS and path.is_file() else None


def _resolve(arg: str, kind: str) -> Path:
    if arg in VARIANTS:
        path = shipped_model(arg)
        if path is None:
            have = sorted(v for v in VARIANTS if shipped_model(v))
            raise AgentSpecError(f"no AZ model is shipped for {arg} (shipped: {', '.join(have) or 'none'}); "
                                 f"give a path: {kind}:PATH")
        return path
    path = Path(arg)
    from .checkpoint import model_paths

    pt, js = model_paths(path)
    if not pt.is_file():
        raise AgentSpecError(f"{kind}: no model at {arg!r} (expected NAME.pt with NAME.json, a checkpoint "
                             f"folder, or a variant id: {', '.join(VARIANTS)})")
    return pt


def parse_az_spec(arg: str | None) -> tuple[str, int, float | None]:
    """``PATH[:SIMS|:Ts]`` (the part after ``az:``) → (PATH, simulations, seconds or None), as
    :meth:`AgentSpec.parse <agents.spec.AgentSpec.parse>` reads ``az:ARG``: the budget is the last
    part when it reads as one, so a path may hold colons; a budget beyond the MCTS agent's bounds
    is an :class:`~agents.spec.AgentSpecError`.

    >>> parse_az_spec("runs/az/final.pt:128"), parse_az_spec("legacy_ard_ri:0.5s")
    (('runs/az/final.pt', 128, None), ('legacy_ard_ri', 64, 0.5))
    """
    spec = AgentSpec.parse("az" if arg is None else f"az:{arg}")
    return spec.path, spec.simulations or DEFAULT_SIMULATIONS, spec.seconds


class _Model:
    """A loaded network, its record and its evaluator."""

    def __init__(self, model, record: dict | None, device: str):
        import torch as th

        from .checkpoint import load_model
        from .network import AZNet, Evaluator

        if isinstance(model, AZNet):
            if record is None:
                raise ValueError("an AZNet needs its record (the rules it was trained on)")
            self.net, self.record, self.path = model, record, None
        else:
            self.path = _resolve(os.fspath(model), "az")
            from .checkpoint import CheckpointError

            try:
                self.net, self.record = load_model(self.path, device)
            except CheckpointError as exc:
                raise AgentSpecError(str(exc)) from None
        self.device = device
        self.evaluate = Evaluator(self.net, device)
        self._checked: set = set()
        self.th = th

    def check_rules(self, rules, name: str) -> None:
        from ..model_rules import rules_mismatch

        if rules in self._checked:
            return
        n = self.record["network"].get("board_size")
        if n != rules.board_size:
            raise AgentSpecError(f"{name} plays a {n}x{n} board; {rules.name} is "
                                 f"{rules.board_size}x{rules.board_size}")
        problem = rules_mismatch(self.record, rules)
        if problem:
            raise AgentSpecError(f"{name} was trained on {problem}")
        self._checked.add(rules)


class AZAgent(Agent):
    """The network with the batched search (module docstring).

    Args:
        model: a model path (or a variant id: the shipped model), or an ``AZNet`` with ``record``.
        simulations: per move and game (unless ``seconds``).
        seconds: about this much time per move of each game (a batch of B games: B times as long).
        device: where the network runs.
        wins_in_two: the root's guard in two (:mod:`agents.greedy.wins`, exact): play a move that
            wins in two (every reply loses) whenever the root has one and has no win at once
            (which the search's root check plays); with no win of its own, never play a move
            after which the opponent has a win now or in two where another move leaves it none
            (then the best of those by the search's visits, then its policy target). A Gumbel
            root considers only the moves of the highest priors, and a search of a few dozen
            simulations rarely proves a fork three plies deep, its own or the opponent's.
        **search: :class:`~agents.az.search.SearchSettings` fields (``root``, ``considered``,
            ``gumbel_scale``, ...); those the model's record keeps (``static_value_weight``: the
            search it was trained with) default to the record's.
    """

    name = "az"

    def __init__(self, model, simulations: int = 64, seconds: float | None = None, device: str = "cpu",
                 record: dict | None = None, seed: int | None = None, wins_in_two: bool = True, **search):
        super().__init__(seed)
        problem = budget_problem(simulations, seconds)
        if problem:
            raise ValueError(problem)
        if seconds is None:
            from tafl_env.memory import fits

            fits(tree_bytes(int(simulations)), f"az with {int(simulations)} simulations (a search tree per game)")
        self.model = _Model(model, record, device)
        search.setdefault("gumbel_scale", 0.0)
        for key, value in self.model.record.get("search", {}).items():    # as the network was trained
            search.setdefault(key, value)
        self.settings = SearchSettings(**search)
        self.simulations = int(simulations)
        self.seconds = None if seconds is None else float(seconds)
        self._per_sim: float | None = None       # seconds per simulation run, measured
        self._searches: dict[int, BatchedSearch] = {}
        where = self.model.path if self.model.path is not None else "<network>"
        self.name = f"az:{where}:{f'{self.seconds:g}s' if self.seconds else self.simulations}"
        self.last_simulations = np.zeros(0, dtype=np.int64)
        self.wins = WinFinder() if wins_in_two else None

    def check_rules(self, rules) -> str | None:
        self.model.check_rules(rules, self.name)
        return None

    def _budget(self) -> int:
        if self.seconds is None:
            return self.simulations
        if self._per_sim is None:
            return PROBE_SIMULATIONS
        # bounded as the MCTS agent's time budget is: a very fast move must not size a huge tree
        return max(1, min(MAX_SIMULATIONS, int(self.seconds / max(self._per_sim, 1e-12))))

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        self.model.check_rules(engine.rules, self.name)
        search = self._searches.get(id(engine))
        if search is None or search.engine is not engine:
            search = self._searches[id(engine)] = BatchedSearch(engine, self.model.evaluate, self.settings, self.rng)
        search.rng = self.rng
        sims = self._budget()
        t0 = time.perf_counter()
        res = search.run(state, sims, noise=self.settings.gumbel_scale > 0)
        spent = time.perf_counter() - t0
        if self.seconds is not None and res.simulations.sum() > 0:
            # per simulation actually run: games with a proven root or one legal move run none
            # and take (nearly) no time, as under the MCTS agent's time budget, so that a game
            # that searches gets its ``seconds`` and not more
            per = spent / int(res.simulations.sum())
            self._per_sim = per if self._per_sim is None else 0.5 * (self._per_sim + per)
        self.last_simulations = res.simulations
        if self.wins is not None:
            self._guard_in_two(engine, state, res)
        return res.action

    def _guard_in_two(self, engine: Engine, state: State, res) -> None:
        """Where a game's root has a move that wins in two and none that wins at once, play the
        one of them the search visited most (the first, where it visited none). Where it has no
        win, keep the search's move unless it leaves the opponent a win now or in two and
        another move does not: then play the best such move by the search's ranking."""
        for g in np.flatnonzero((state.reason == 0) & (state.chain < 0)):
            g = int(g)
            actions, flags = self.wins.flags(engine, state, g)
            if (flags == WIN_NOW).any():
                continue
            winning = actions[flags == WIN_IN_TWO]
            if len(winning):
                if res.action[g] not in winning:
                    visits = [int(res.visits[g][res.actions[g] == a].sum()) for a in winning]
                    res.action[g] = winning[int(np.argmax(visits))]
                continue
            if not self.wins.leaves_a_win(engine, state, g, int(res.action[g])):
                continue
            legal = res.actions[g] >= 0
            ranked = res.actions[g][legal][np.lexsort((-res.target[g][legal], -res.visits[g][legal]))]
            for action in ranked:
                if action != res.action[g] and not self.wins.leaves_a_win(engine, state, g, int(action)):
                    res.action[g] = action
                    break


class AZPolicyAgent(Agent):
    """The network alone: the legal move of the highest logit (``deterministic``), or a sample
    of the softmax over the legal moves."""

    name = "azpolicy"

    def __init__(self, model, device: str = "cpu", record: dict | None = None, deterministic: bool = True,
                 seed: int | None = None):
        super().__init__(seed)
        self.model = _Model(model, record, device)
        self.deterministic = deterministic
        where = self.model.path if self.model.path is not None else "<network>"
        self.name = f"azpolicy:{where}"

    def check_rules(self, rules) -> str | None:
        self.model.check_rules(rules, self.name)
        return None

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        self.model.check_rules(engine.rules, self.name)
        logits, _ = self.model.evaluate(engine, state)
        mask = engine.legal_action_mask(state).astype(bool)
        z = np.where(mask, logits.astype(np.float64), -np.inf)
        if not self.deterministic:
            z = z + self.rng.gumbel(size=z.shape)
        return z.argmax(axis=1).astype(np.int64)


def _az_factory(spec: AgentSpec, seed=None, **kw):
    _resolve(spec.path, "az")
    budget = {"simulations": spec.simulations} if spec.seconds is None else {"seconds": spec.seconds}
    try:
        return AZAgent(spec.path, seed=seed, **budget, **kw)
    except AgentSpecError:
        raise
    except ValueError as exc:        # the memory check, a bad search setting
        raise AgentSpecError(f"{preview(spec.text)}: {exc}") from None


def _azpolicy_factory(spec: AgentSpec, seed=None, **kw):
    _resolve(spec.path, "azpolicy")
    return AZPolicyAgent(spec.path, seed=seed, **kw)


register_agent("az", _az_factory, reads_spec=True)
register_agent("azpolicy", _azpolicy_factory, reads_spec=True)
