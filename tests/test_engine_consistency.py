"""The engine's incremental bookkeeping (keys, line masks, occupancy, piece slots, cached moves)
agrees with values recomputed from the boards, along random games with resets, for every variant."""

import numpy as np
import pytest

from tafl_env.engine import Engine
from tafl_env.rules import VARIANTS, make_rules


@pytest.mark.parametrize("variant", VARIANTS)
def test_audit_along_random_games(variant):
    eng = Engine(make_rules(variant, max_turns=40))
    state = eng.initial_state(12)
    fresh = eng.initial_state(1)
    rng = np.random.default_rng(3)
    finished = 0
    for _ in range(150):
        eng.step(state, eng.random_actions(state, rng))
        assert eng.audit(state) == []
        done = np.flatnonzero(state.done)
        finished += len(done)
        if len(done):
            state.put(done, fresh.take(np.zeros(len(done), dtype=np.intp)))
    assert finished > 0


def test_audit_detects_a_corrupted_state():
    eng = Engine(make_rules("historical_tablut"))
    state = eng.initial_state(2)
    state.board[1, 0] = 1  # a soldier appears on a1 without the bookkeeping knowing
    problems = eng.audit(state)
    assert any("key" in p for p in problems)
    assert any("line" in p for p in problems)


def test_random_actions_are_uniform_over_legal_actions():
    eng = Engine(make_rules("legacy_ard_ri"))
    state = eng.initial_state(4000)
    actions = eng.random_actions(state, np.random.default_rng(0))
    legal = np.flatnonzero(eng.legal_action_mask(state.take([0]))[0])
    assert set(actions.tolist()) == set(legal.tolist())
    counts = np.array([(actions == a).sum() for a in legal])
    expected = len(actions) / len(legal)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 30  # 7 degrees of freedom: p < 1e-4 for a fair sampler


@pytest.mark.parametrize("variant", VARIANTS)
def test_masks_written_into_any_rows_match_the_moves(variant):
    """write_masks (the vector envs' path) puts each game's mask into the row it is told, and the
    mask (table-unpacked up to 13x13, unpackbits beyond) sets exactly the packed moves' bits."""
    eng = Engine(make_rules(variant))
    state = eng.initial_state(6)
    rng = np.random.default_rng(5)
    for _ in range(7):
        eng.step(state, np.where(state.done, 0, eng.random_actions(state, rng)))
    rows = np.array([9, 2, 5, 0, 7, 3])
    buffer = np.zeros((10, eng.mask_width), dtype=np.int8)
    eng.write_masks(state, buffer, rows)
    mask = eng.legal_action_mask(state)
    assert mask.shape == (6, eng.num_actions) and mask.dtype == np.int8
    np.testing.assert_array_equal(buffer[rows, : eng.num_actions], mask)
    assert not buffer[[1, 4, 6, 8]].any()            # rows not named stay zero
    k = eng.n - 1
    for g in range(6):
        want = set()
        slots = state.pieces[g, state.to_move[g]]
        for slot, square in enumerate(slots):
            for d in range(4):
                bits = int(state.moves[g, slot, d])
                want |= {(square * 4 + d) * k + i for i in range(k) if bits >> i & 1}
        if state.chain[g] >= 0:
            want.add(eng.pass_action)
        assert set(np.flatnonzero(mask[g]).tolist()) == want
