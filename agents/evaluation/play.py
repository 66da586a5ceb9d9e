"""Matches: a batch of games of one attacker agent against one defender agent, at once.

:func:`play_games` plays G games in one batched engine :class:`~tafl_env.engine.State`; at every
step the games where the attackers are to move go to the attacker agent (as one sub-batch), the
others to the defender agent. With ``record=True`` every game's moves come back in notation,
written by the engine's own decoding (:meth:`~tafl_env.engine.Engine.decode`) and
:func:`tafl_env.notation.format_move`. With ``openings`` every game starts from the position a few
moves in that its opening (a list of moves in notation, RULES.md §1) reaches from the variant's
start (:func:`opening_states`).
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from tafl_env.engine import REASON_NAMES, RESULT_NAMES, Engine, State
from tafl_env.errors import preview
from tafl_env.game import Game, engine_for
from tafl_env.notation import PASS, format_move
from tafl_env.rules import RuleSet, make_rules

from ..base import Agent

__all__ = ["ATTACKER", "DEFENDER", "agent_seeds", "opening_states", "play_games", "move_texts"]

ATTACKER, DEFENDER = 0, 1


def agent_seeds(seed: int | None) -> tuple[int | None, int | None]:
    """The attacker's and the defender's seeds derived from one game-batch seed."""
    if seed is None:
        return None, None
    a, d = np.random.SeedSequence(int(seed)).generate_state(2)
    return int(a), int(d)


def move_texts(engine: Engine, actions: np.ndarray, info, rows: np.ndarray) -> list[str]:
    """Notation of ``actions[rows]`` just played, from the StepInfo of that step.

    Origins and targets come from the engine's action table (:meth:`Engine.decode`); jumps, chain
    continuations and captures from the step's info.
    """
    rows = np.asarray(rows, dtype=np.intp)
    acts = np.asarray(actions)[rows]
    origins, _, _, targets = engine.decode(acts)
    out = []
    for k, g in enumerate(rows):
        if int(acts[k]) == engine.pass_action:
            out.append(PASS)
            continue
        caps = tuple(int(c) for c in info.captured[g] if c < engine.s)
        out.append(format_move(int(origins[k]), int(targets[k]), engine.n, jump=bool(info.jump[g]),
                               continuation=bool(info.continuation[g]), captures=caps))
    return out


def opening_states(engine: Engine, openings: Sequence[Sequence[str] | None]) -> State:
    """One game per opening, each the variant's start with the opening's moves played.

    The moves are read by :meth:`tafl_env.game.Game.push` (notation of RULES.md §1; a bad or
    illegal move is an error naming it); an empty opening (or ``None``) is the start itself. The
    turn counter keeps counting from the start, so the opening's turns count towards the move cap.

    >>> eng = engine_for(make_rules("legacy_ard_ri"))
    >>> st = opening_states(eng, [["c3-c2"], None])
    >>> st.turn.tolist(), st.to_move.tolist()
    ([1, 0], [0, 1])
    """
    if not len(openings):
        raise ValueError("openings must hold at least one opening")
    states = {}
    for moves in openings:
        key = tuple(moves or ())
        if key not in states:
            game = Game(engine.rules)
            for text in key:
                game.push(text)
            if game.is_over():
                raise ValueError(f"opening {preview(' '.join(key))} ends the game ({game.result}, {game.reason})")
            states[key] = game.state
    return State.concatenate([states[tuple(moves or ())] for moves in openings])


def play_games(variant_or_rules: str | RuleSet, attacker: Agent, defender: Agent, games: int,
               seed: int | None = None, max_turns: int | None = None, record: bool = False,
               timing: dict[str, list] | None = None, openings: Sequence[Sequence[str] | None] | None = None,
               **options) -> list[dict[str, Any]]:
    """Play ``games`` games of ``attacker`` (attackers) against ``defender`` at once.

    All games live in one batched state. At every step the games where the attackers are to move
    go to ``attacker.act`` (as the sub-batch ``state.take(rows)``), the others to
    ``defender.act``, and then every game is stepped with the combined actions.

    Args:
        variant_or_rules: a variant id or a :class:`~tafl_env.rules.RuleSet`.
        attacker, defender: the agents (may be the same object for self-play).
        games: the number of games (the batch size).
        seed: when given, both agents are reset with seeds derived from it (:func:`agent_seeds`),
            so the batch is reproducible.
        max_turns: the move cap in turns (a game reaching it is a truncated draw); ``None``: the
            cap of the rules (the variant's default, or that of a given ``RuleSet``).
        record: also return each game's moves in notation (``'pass'`` for the pass action).
        timing: a dict to which the time the agents spend choosing is added:
            ``timing["attacker"]`` and ``timing["defender"]`` become ``[seconds, moves]``, the
            seconds of their ``act`` calls and the moves those calls chose (so time per move is
            seconds / moves, whatever the batch).
        openings: one opening per game (``games`` of them): the moves in notation that lead from
            the variant's start to the game's first position (:func:`opening_states`); ``None``:
            every game from the start.
        **options: rule options (RULES.md) for ``make_rules``.

    Returns:
        one dict per game: ``game`` (index), ``result`` (``'attacker'``, ``'defender'``,
        ``'draw'``), ``reason``, ``turns`` (counted from the start, the opening's included) and,
        with ``record``, ``moves`` (the opening's moves first, as given, then those played).

    >>> from agents import make_agent
    >>> res = play_games("legacy_ard_ri", make_agent("random"), make_agent("random"), 3, seed=1)
    >>> len(res), sorted(res[0])
    (3, ['game', 'reason', 'result', 'turns'])
    """
    if max_turns is not None:
        options["max_turns"] = max_turns
    rules = make_rules(variant_or_rules, **options)
    engine = engine_for(rules)
    if not isinstance(games, (int, np.integer)) or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
    if seed is not None:
        seed_a, seed_d = agent_seeds(seed)
        attacker.reset(seed_a)
        if defender is not attacker:
            defender.reset(seed_d)
    if openings is None:
        state = engine.initial_state(int(games))
        moves: list[list[str]] = [[] for _ in range(games)]
    else:
        if len(openings) != games:
            raise ValueError(f"openings must give one opening per game: {len(openings)} for {games} games")
        state = opening_states(engine, openings)
        moves = [list(o or ()) for o in openings]
    while True:
        running = ~state.done
        if not running.any():
            break
        actions = np.full(games, -1, dtype=np.int64)
        for side, agent in ((ATTACKER, attacker), (DEFENDER, defender)):
            rows = np.flatnonzero(running & (state.to_move == side))
            if not len(rows):
                continue
            sub = state.take(rows)
            t0 = time.perf_counter()
            acts = np.asarray(agent.act(engine, sub), dtype=np.int64).reshape(-1)
            if timing is not None:
                spent = timing.setdefault("attacker" if side == ATTACKER else "defender", [0.0, 0])
                spent[0] += time.perf_counter() - t0
                spent[1] += len(rows)
            if acts.shape != rows.shape:
                raise ValueError(f"{agent!r} returned {acts.shape[0]} actions for {len(rows)} games")
            actions[rows] = acts
        live = np.flatnonzero(running)
        bad = live[actions[live] < 0]
        if len(bad):
            raise ValueError(f"an agent returned -1 for running game(s) {bad[:5].tolist()}")
        info = engine.step(state, actions)
        if record:
            for g, text in zip(live, move_texts(engine, actions, info, live)):
                moves[g].append(text)
    out = []
    for g in range(games):
        row: dict[str, Any] = {"game": g, "result": RESULT_NAMES[int(state.winner[g])],
                               "reason": REASON_NAMES[int(state.reason[g])], "turns": int(state.turn[g])}
        if record:
            row["moves"] = moves[g]
        out.append(row)
    return out


