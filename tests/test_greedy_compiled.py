"""The compiled greedy (agents/greedy/kernels.py) against a brute-force one-ply search written with
the engine's Python API: every child played, every reply of the opponent played (berserk chains
expanded to their end), scores computed from the documented preference order."""

from __future__ import annotations

import numpy as np
import pytest

from tafl_env import VARIANTS, make_rules
from tafl_env.engine import Engine
from tafl_env.perft import expand

from agents.greedy import GreedyAgent
from agents.greedy.scoring import LOSS, UNSAFE, W_CAPTURE, WIN
from reference_eval import evaluate as reference_evaluate


def _opponent_wins(eng, child) -> bool:
    """Brute force: does any reply (chains searched to the end) win for the side to move?"""
    o = int(child.to_move[0])
    grand, _, _ = expand(eng, child)
    while len(grand):
        if (grand.winner == o).any():
            return True
        pending = np.flatnonzero((grand.chain >= 0) & ~grand.done)
        if not len(pending):
            return False
        grand, _, _ = expand(eng, grand.take(pending))
    return False


def brute_scores(eng, st):
    mover = int(st.to_move[0])
    actions = eng.legal_actions(st)
    before = int((np.isin(st.board[0, :eng.s], [3, 4, 5] if mover == 0 else [1, 2])).sum())
    out = {}
    for a in actions:
        ch = st.copy()
        eng.step(ch, np.array([a]))
        if ch.chain[0] >= 0 and not ch.done[0]:
            eng.step(ch, np.array([eng.pass_action]))
        after = int((np.isin(ch.board[0, :eng.s], [3, 4, 5] if mover == 0 else [1, 2])).sum())
        e = float(reference_evaluate(eng, ch)[0])
        em = e if mover == 1 else -e
        w = int(ch.winner[0])
        if w == mover:
            sc = WIN
        elif w == 2:
            sc = 0.0
        elif w >= 0:
            sc = LOSS
        else:
            sc = W_CAPTURE * (before - after) + em
            if _opponent_wins(eng, ch):
                sc += UNSAFE
        out[int(a)] = sc
    return out


def _random_positions(eng, rng, count, max_plies, in_chain=False):
    found = 0
    while found < count:
        st = eng.initial_state(1)
        for _ in range(int(rng.integers(0, max_plies))):
            if st.done[0] or (in_chain and st.chain[0] >= 0):
                break
            eng.step(st, eng.random_actions(st, rng))
        if st.done[0] or (in_chain and st.chain[0] < 0):
            continue
        found += 1
        yield st


@pytest.mark.parametrize("variant", VARIANTS)
def test_compiled_greedy_matches_brute_force(variant):
    eng = Engine(make_rules(variant))
    rng = np.random.default_rng(7)
    greedy = GreedyAgent(seed=0)
    count = 2 if variant == "legacy_alea_evangelii" else 6
    for st in _random_positions(eng, rng, count, 150):
        ref = brute_scores(eng, st)
        scores, _, action = greedy.score_moves(eng, st)
        got = dict(zip(action.tolist(), scores.tolist()))
        assert got.keys() == ref.keys()
        for a in ref:
            assert got[a] == pytest.approx(ref[a]), (variant, a, got[a], ref[a])
        chosen = int(greedy.act(eng, st)[0])
        assert ref[chosen] == max(ref.values())


def test_compiled_greedy_inside_berserk_chains():
    eng = Engine(make_rules("legacy_berserk"))
    rng = np.random.default_rng(3)
    greedy = GreedyAgent(seed=0)
    for st in _random_positions(eng, rng, 4, 400, in_chain=True):
        ref = brute_scores(eng, st)
        scores, _, action = greedy.score_moves(eng, st)
        got = dict(zip(action.tolist(), scores.tolist()))
        assert got.keys() == ref.keys() and eng.pass_action in got
        for a in ref:
            assert got[a] == pytest.approx(ref[a])
        assert ref[int(greedy.act(eng, st)[0])] == max(ref.values())


@pytest.mark.parametrize("variant", VARIANTS)
def test_lazy_choice_is_a_best_scored_move(variant):
    """act() checks the opponent's replies only for children whose score could still be best
    (choose_node); it must pick a move of the highest full score (score_moves checks every child),
    also where the child of the highest score before the check is unsafe ("tense": 1-20% of
    random positions, so positions are drawn until five tense ones were checked)."""
    eng = Engine(make_rules(variant))
    rng = np.random.default_rng(11)
    greedy = GreedyAgent(seed=2)
    tense = 0
    for st in _random_positions(eng, rng, 1500, 400):
        scores, _, action = greedy.score_moves(eng, st)
        best = set(action[scores == scores.max()].tolist())
        unsafe = (scores <= UNSAFE / 2) & (scores > LOSS / 2)
        tense += bool(np.where(unsafe, scores - UNSAFE, scores).max() > scores.max())
        for _ in range(4 if len(best) > 1 else 1):
            assert int(greedy.act(eng, st)[0]) in best
        if tense == 5:
            break
    assert tense == 5, "too few positions where the check changes the best move"


def test_lazy_choice_breaks_ties_uniformly():
    eng = Engine(make_rules("historical_tablut"))
    rng = np.random.default_rng(5)
    greedy = GreedyAgent(seed=3)
    for st in _random_positions(eng, rng, 200, 60):
        scores, _, action = greedy.score_moves(eng, st)
        best = action[scores == scores.max()]
        if 2 <= len(best) <= 6:
            break
    else:
        pytest.fail("no position with 2-6 best moves")
    picks = np.array([int(greedy.act(eng, st)[0]) for _ in range(100 * len(best))])
    counts = np.array([(picks == a).sum() for a in best])
    assert counts.sum() == len(picks)                  # nothing outside the best
    assert counts.min() >= 55 and counts.max() <= 145  # ~100 each (binomial sd <= 9.5)
