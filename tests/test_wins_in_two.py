"""Moves that win in two (agents/greedy/wins.py) and the AZ agent's guard that plays them, and that keeps it
from moves into the opponent's.

The compiled finder is checked against the definition played out move by move with ``Game``: a
move wins in two when every reply of the opponent either loses on the spot or leaves the mover a
move that wins at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.greedy.wins import WIN_IN_TWO, WIN_NOW, WinFinder
from tafl_env import Game

# Historisches Tablut, defenders to move (from a game of the shipped AZ agent against OpenTafl's AI,
# where the agent played d3-c3): two moves leave the attackers no reply that stops the king
# reaching the edge next.
TABLUT_FORK = "/6t2/4t4/3T2T2/3t5/1T1K3tt/9/1t1t1t3/4t4/5t3/"
# Positions of random games where the attackers win in two.
ATTACKER_WINS = [("historical_tablut", "/5t3/7tT/3t1K1t1/9/tt7/T1t6/1tTT3Tt/4T2tt/3t1t1t1/", "f9-f4"),
                 ("legacy_ard_ri", "/2Ttt2/T2tt2/t6/tt2t1t/1t2ttK/2t1t2/3t3/", "e6-f6")]


def _wins_now(game: Game) -> bool:
    for move in game.legal_moves():
        child = game.copy()
        child.push(move.action)
        if child.is_over() and child.result == game.to_move:
            return True
    return False


def definition(game: Game) -> dict[str, str]:
    """The moves that win now or in two, by playing every reply out (slow, plain)."""
    out = {}
    for move in game.legal_moves():
        child = game.copy()
        child.push(move.action)
        if child.is_over():
            if child.result == game.to_move:
                out[str(move)] = "now"
            continue
        if int(child.state.chain[0]) >= 0:
            continue
        holds = False
        for reply in child.legal_moves():
            after = child.copy()
            after.push(reply.action)
            if after.is_over():
                holds = after.result != game.to_move
            elif int(after.state.chain[0]) >= 0:
                holds = True                       # the finder does not search a reply's chain
            else:
                holds = not _wins_now(after)
            if holds:
                break
        if not holds:
            out[str(move)] = "in two"
    return out


def flagged(finder: WinFinder, game: Game) -> dict[str, str]:
    actions, flags = finder.flags(game.engine, game.state, 0)
    return {str(game.copy().push(int(a))): ("now" if f == WIN_NOW else "in two")
            for a, f in zip(actions, flags) if f}


def test_the_fork_of_a_tablut_game():
    game = Game("historical_tablut", position=TABLUT_FORK, to_move="defender")
    assert flagged(WinFinder(), game) == definition(game) == {"b5-b6": "in two", "d5-c5": "in two"}


@pytest.mark.parametrize("variant,position,move", ATTACKER_WINS)
def test_the_attackers_wins_in_two(variant, position, move):
    game = Game(variant, position=position, to_move="attacker")
    found = flagged(WinFinder(), game)
    assert found.get(move) == "in two" and found == definition(game)


@pytest.mark.parametrize("variant,games,plies", [
    ("legacy_ard_ri", 2, 40),
    pytest.param("historical_tablut", 1, 40, marks=pytest.mark.slow),       # the definition: ~0.25 s a position
    pytest.param("legacy_tawlbwrdd", 1, 16, marks=pytest.mark.slow),
    pytest.param("legacy_berserk", 1, 16, marks=pytest.mark.slow),
])
def test_the_finder_agrees_with_the_definition_in_random_games(variant, games, plies):
    finder = WinFinder()
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(games):
        game = Game(variant)
        while not game.is_over() and game.turns < plies:
            if int(game.state.chain[0]) < 0:
                assert flagged(finder, game) == definition(game), game.position
                checked += 1
            moves = game.legal_moves()
            game.push(moves[rng.integers(len(moves))].action)
    assert checked >= min(games * plies, 16) // 2


def test_a_finished_game_or_a_pending_chain_has_no_flags():
    finder = WinFinder()
    rng = np.random.default_rng(3)
    game = Game("legacy_berserk")
    chain_seen = False
    while not game.is_over():
        if int(game.state.chain[0]) >= 0:
            assert len(finder.flags(game.engine, game.state, 0)[0]) == 0
            chain_seen = True
        moves = game.legal_moves()
        game.push(moves[rng.integers(len(moves))].action)
    assert chain_seen and len(finder.flags(game.engine, game.state, 0)[0]) == 0


def test_the_az_agent_plays_a_win_in_two():
    pytest.importorskip("torch")
    from agents.az.agent import AZAgent

    game = Game("historical_tablut", position=TABLUT_FORK, to_move="defender")
    agent = AZAgent("historical_tablut", simulations=16)
    move = str(game.copy().push(int(agent.act(game.engine, game.state)[0])))
    assert move in ("b5-b6", "d5-c5")
    unguarded = AZAgent("historical_tablut", simulations=16, wins_in_two=False)
    assert unguarded.wins is None


# --- the other way round: no move into the opponent's win in two ------------------------------------

# Legacy Tawlbwrdd, a game the agent of iteration 444 (shipped then) lost to OpenTafl's AI (its record
# is kept beside the card, the network beside its part): defenders to move at ply 148, where three of
# the king's four moves leave the attackers no win in two and the agent, unguarded, played the fourth;
# at ply 152 none of its two moves does.
OPENTAFL_GAME = "results/training/legacy_tawlbwrdd_az/run1_part4/shipped/opentafl_az64/game-005-ai-attackers.otg"
ITERATION_444 = "results/training/legacy_tawlbwrdd_az/run1_part4/model.pt"


def _replayed(plies: int) -> Game:
    """The record's game after ``plies`` plies, its history included (repetitions count)."""
    from tafl_env.opentafl import read_otg

    record = read_otg((Path(__file__).resolve().parent.parent / OPENTAFL_GAME).read_text(encoding="utf-8"))
    game = Game(record.rules, position=record.position, to_move=record.to_move, max_turns=None)
    for move in list(record.game.moves)[:plies]:
        game.push(move.action)
    return game


def _leaves_a_win(game: Game, move) -> bool:
    after = game.copy()
    after.push(move.action)
    if after.is_over():
        return after.outcome().winner != game.to_move
    _, flags = WinFinder().flags(after.engine, after.state, 0)
    return bool(((flags == WIN_NOW) | (flags == WIN_IN_TWO)).any())


def test_the_az_agent_denies_the_opponent_a_win_in_two():
    pytest.importorskip("torch")
    from agents.az.agent import AZAgent

    game = _replayed(147)
    denying = {str(m) for m in game.legal_moves() if not _leaves_a_win(game, m)}
    assert len(denying) == 3 and len(game.legal_moves()) == 4
    network = str(Path(__file__).resolve().parent.parent / ITERATION_444)
    guarded = AZAgent(network, simulations=64)
    assert str(game.copy().push(int(guarded.act(game.engine, game.state)[0]))) in denying
    # the search alone plays the move the record holds, the fourth: the guard is what changed it
    unguarded = AZAgent(network, simulations=64, wins_in_two=False)
    assert str(game.copy().push(int(unguarded.act(game.engine, game.state)[0]))) == "g10-i10"


def test_the_guard_takes_the_best_ranked_denying_move_and_keeps_the_search_where_none_denies():
    pytest.importorskip("torch")
    from agents.az.agent import AZAgent
    from agents.az.search import SearchResult

    agent = AZAgent("legacy_tawlbwrdd", simulations=8)
    game = _replayed(147)
    moves = game.legal_moves()
    walked = next(m for m in moves if _leaves_a_win(game, m))
    denying = [m for m in moves if not _leaves_a_win(game, m)]
    # the search's ranking: the walked-into move first, then the denying moves in reverse order
    order = [walked, *reversed(denying)]
    actions = np.array([[m.action for m in order]])
    res = SearchResult(action=np.array([walked.action]), actions=actions,
                       visits=np.array([[9, 1, 2, 3]]), target=np.full((1, 4), 0.25),
                       value=np.zeros(1), simulations=np.array([15]))
    agent._guard_in_two(game.engine, game.state, res)
    assert int(res.action[0]) == denying[0].action             # the most visited of them (3 visits)

    lost = _replayed(151)
    assert all(_leaves_a_win(lost, m) for m in lost.legal_moves())
    guarded = AZAgent("legacy_tawlbwrdd", simulations=16)
    unguarded = AZAgent("legacy_tawlbwrdd", simulations=16, wins_in_two=False)
    assert int(guarded.act(lost.engine, lost.state)[0]) == int(unguarded.act(lost.engine, lost.state)[0])


@pytest.mark.parametrize("variant,seed", [
    ("legacy_ard_ri", 6),
    ("historical_tablut", 5),
    ("legacy_tawlbwrdd", 5),
    ("legacy_berserk", 5),
])
def test_leaves_a_win_stops_early_and_agrees_with_every_flag(variant, seed):
    """``WinFinder.leaves_a_win`` (the compiled ``any_win``, which stops at the first win found)
    says the same as all of the opponent's flags after the move, for every legal move of the
    positions of a random game where some moves leave a win and others do not (and of its first)."""
    finder = WinFinder()
    rng = np.random.default_rng(seed)
    game = Game(variant)
    compared = 0
    while not game.is_over() and compared < 3:
        if int(game.state.chain[0]) < 0:
            moves = game.legal_moves()
            said = [finder.leaves_a_win(game.engine, game.state, 0, m.action) for m in moves]
            if game.turns == 0 or 0 < sum(said) < len(said):
                assert said == [_leaves_a_win(game, m) for m in moves], game.position
                compared += game.turns > 0
        moves = game.legal_moves()
        game.push(moves[rng.integers(len(moves))].action)
    assert compared == 3


def test_leaves_a_win_in_the_recorded_positions():
    game = _replayed(147)
    said = {str(m): WinFinder().leaves_a_win(game.engine, game.state, 0, m.action) for m in game.legal_moves()}
    assert said == {str(m): _leaves_a_win(game, m) for m in game.legal_moves()}
    assert sorted(said.values()) == [False, False, False, True]
    lost = _replayed(151)
    assert all(WinFinder().leaves_a_win(lost.engine, lost.state, 0, m.action) for m in lost.legal_moves())
