"""Moves that win now or in two, found exactly: the guard a search's root can put before its choice.

A move **wins in two** when every reply of the opponent loses: it ends the game for the mover, or it
leaves the mover a move that wins at once (an unstoppable threat, or two threats no single reply
stops). The greedy agent's exact check of a reply's immediate wins (:mod:`agents.greedy.kernels`,
``opp_can_win``) judges each reply, so a flagged move is a proven win whatever a network's prior
thinks of it. The converse is not promised for Berserk: a reply that opens a berserk chain is
counted as one that holds (its continuations are not searched).

    >>> from tafl_env import Game
    >>> g = Game("historical_tablut", position="/6t2/4t4/3T2T2/3t5/1T1K3tt/9/1t1t1t3/4t4/5t3/",
    ...          to_move="defender")
    >>> finder = WinFinder()
    >>> sorted(str(g.copy().push(int(a))) for a in finder.wins_in_two(g.engine, g.state, 0))
    ['b5-b6', 'd5-c5']
"""

from __future__ import annotations

import numpy as np

from tafl_env.engine import Engine, State

from . import kernels as _k
from .agent import SearchWork, prepare

__all__ = ["WinFinder", "WIN_NOW", "WIN_IN_TWO", "after_move"]

WIN_NOW, WIN_IN_TWO = _k.WIN_NOW, _k.WIN_IN_TWO


def after_move(engine: Engine, state: State, game: int, action: int) -> tuple[State, bool | None]:
    """Game ``game`` after ``action`` (a one-game State) and, where the move settles
    :meth:`WinFinder.leaves_a_win` by itself, its answer: the mover lost at once (True), the game
    ended otherwise or the move opened a berserk chain of the mover's (False); else None."""
    child = state.take(np.array([game]))
    engine.step(child, np.array([action]))
    if child.reason[0] != 0:
        return child, int(child.winner[0]) == 1 - int(state.to_move[game])
    if child.chain[0] >= 0:
        return child, False
    return child, None


class WinFinder:
    """Flags every legal move of a game as winning now, in two, or neither (module docstring).

    Holds the work rows of the compiled check between calls (one set per engine and State layout).
    """

    def __init__(self):
        self._work: dict[int, SearchWork] = {}

    def _work_for(self, engine: Engine, state: State) -> SearchWork:
        if len(state) and int(state.turn.max()) + 6 >= state.history.shape[1]:
            prepare(state, 4)
        w = self._work.get(id(engine))
        if (w is None or w.engine is not engine or w.key[1] != state.history.shape[1]
                or w.key[2] != state.pieces.shape[2]):
            w = self._work[id(engine)] = SearchWork(engine, state, 5 + state.pieces.shape[2])
        return w

    def flags(self, engine: Engine, state: State, game: int) -> tuple[np.ndarray, np.ndarray]:
        """``(actions, flags)`` of game ``game`` (running, no berserk chain pending): its legal
        actions and, for each, ``WIN_NOW``, ``WIN_IN_TWO`` or 0."""
        if state.reason[game] != 0 or state.chain[game] >= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        w = self._work_for(engine, state)
        racts = np.zeros_like(w.acts)
        flags = np.zeros_like(w.acts)
        n = _k.root_wins(state.arrays(), int(game), w.W, engine.kernel_tables, w.at, w.acts, racts,
                         flags, w.info, w.scratch, w.cacts, w.ccnt, w.cidx, w.rw)
        return w.acts[:n].copy(), flags[:n].copy()

    def wins_in_two(self, engine: Engine, state: State, game: int) -> np.ndarray:
        """The actions of game ``game`` that win in two (not those that win at once)."""
        actions, flags = self.flags(engine, state, game)
        return actions[flags == WIN_IN_TWO]

    def leaves_a_win(self, engine: Engine, state: State, game: int, action: int) -> bool:
        """Whether ``action`` in game ``game`` (running, no chain pending) loses at once or leaves
        the opponent a move that wins now or in two (a flag of :meth:`flags` after it). A draw
        leaves no win; a move that opens a berserk chain of the mover's is not judged (False: its
        continuations are not searched). The compiled check stops at the first win it finds,
        every move's immediate result first: a guard scanning moves that leave a threat standing
        pays a step a move, not the full check (benchmarks/bench_guard.py)."""
        child, settled = after_move(engine, state, game, action)
        if settled is not None:
            return settled
        w = self._work_for(engine, child)
        racts = np.zeros_like(w.acts)
        return bool(_k.any_win(child.arrays(), 0, w.W, engine.kernel_tables, w.at, w.acts, racts,
                               w.info, w.scratch, w.cacts, w.ccnt, w.cidx, w.rw))
