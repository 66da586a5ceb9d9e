"""Batched and single-game results agree move for move (DESIGN.md, "Habits").

B random games are played in one batched ``Engine`` state and, in parallel, the same games each
as its own batch of one and as a ``Game`` pushing the same action ids. After every step the legal
action masks, boards, side to move, chain, turn, winner and reason must agree. Hypothesis draws the
seed, the number of steps, the side to move first and a few rule options; it is derandomized so the
run is reproducible.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tafl_env import VARIANTS, Game, make_rules
from tafl_env.game import engine_for

PUBLIC_FIELDS = ("board", "to_move", "chain", "turn", "winner", "reason", "done")
B = 8
# Fewer steps on the big board keep the whole file fast.
MAX_STEPS = {"legacy_alea_evangelii": 40}
DEFAULT_MAX_STEPS = 60


def _row(state, i: int) -> dict:
    return {f: np.asarray(getattr(state, f))[i].copy() for f in PUBLIC_FIELDS}


def _assert_rows_equal(a: dict, b: dict, where: str) -> None:
    for f in PUBLIC_FIELDS:
        np.testing.assert_array_equal(a[f], b[f], err_msg=f"{where}: field {f}")


def _snapshot(state) -> dict:
    return {f: np.array(getattr(state, f), copy=True) for f in PUBLIC_FIELDS}


def _assert_same_snapshot(a: dict, b: dict, what: str) -> None:
    for f in PUBLIC_FIELDS:
        np.testing.assert_array_equal(a[f], b[f], err_msg=f"{what}: field {f} changed")


settings.register_profile(
    "tafl_batched", derandomize=True, deadline=None, max_examples=4, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _play_in_parallel(rules, b: int, steps: int, seed: int, first: str | None) -> dict:
    """Play ``b`` random games in one batch, as ``b`` batches of one and as ``b`` Games, checking
    after every step that all three agree; returns how often chains and game ends were seen."""
    eng = engine_for(rules)
    variant = rules.name
    rng = np.random.default_rng(seed)
    batch = eng.initial_state(b, to_move=first)
    singles = [eng.initial_state(1, to_move=first) for _ in range(b)]
    games = [Game(rules, to_move=first) for _ in range(b)]
    stats = {"chains": 0, "passes": 0, "finished": 0}

    def check(t: int) -> None:
        mask = eng.legal_action_mask(batch)
        counts = eng.count_legal(batch)
        assert mask.shape == (b, eng.num_actions) and mask.dtype == np.int8
        np.testing.assert_array_equal(mask.sum(axis=1), counts)
        for i in range(b):
            where = f"{variant} step {t} game {i}"
            single_mask = eng.legal_action_mask(singles[i])[0]
            np.testing.assert_array_equal(mask[i], single_mask, err_msg=f"{where}: mask vs single")
            np.testing.assert_array_equal(mask[i], games[i].action_mask(), err_msg=f"{where}: mask vs Game")
            np.testing.assert_array_equal(
                eng.legal_action_mask(batch.take(np.array([i])))[0], mask[i],
                err_msg=f"{where}: mask of the taken row")
            row = _row(batch, i)
            _assert_rows_equal(row, _row(singles[i], 0), f"{where}: batch vs single")
            _assert_rows_equal(row, _row(games[i].state, 0), f"{where}: batch vs Game")
            assert eng.position(batch, i) == games[i].position, where
            assert games[i].to_move == ("attacker", "defender")[int(row["to_move"])], where
            assert games[i].turns == int(row["turn"]), where
            assert games[i].is_over() == bool(row["done"]), where
            assert games[i].result == {-1: None, 0: "attacker", 1: "defender", 2: "draw"}[int(row["winner"])]
            # the pass action is legal exactly while a chain is pending
            assert mask[i, eng.pass_action] == (int(row["chain"]) >= 0), where
            if int(row["chain"]) >= 0:
                assert rules.berserk and not row["done"], where
                assert games[i].chain is not None, where

    check(0)
    for t in range(1, steps + 1):
        actions = eng.random_actions(batch, rng)
        mask = eng.legal_action_mask(batch)
        for i in range(b):
            if batch.done[i]:
                assert actions[i] == -1
            else:
                assert 0 <= actions[i] < eng.num_actions and mask[i, actions[i]] == 1
        stats["chains"] += int((batch.chain >= 0).sum())
        stats["passes"] += int((actions == eng.pass_action).sum())
        eng.step(batch, actions)
        for i in range(b):
            if actions[i] >= 0:
                eng.step(singles[i], actions[i:i + 1])
                games[i].push(int(actions[i]))
        check(t)
        # Restart every other finished game (fresh rows written in with State.put); leave the rest.
        finished = np.flatnonzero(batch.done)
        restart = finished[finished % 2 == 0]
        if len(restart):
            stats["finished"] += len(restart)
            batch.put(restart, eng.initial_state(len(restart), to_move=first))
            for i in restart:
                singles[i] = eng.initial_state(1, to_move=first)
                games[i] = Game(rules, to_move=first)
            check(t)
    # Finished games stay as they are when stepped with any action value.
    done = np.flatnonzero(batch.done)
    stats["finished"] += len(done)
    if len(done):
        before = _snapshot(batch.take(done))
        eng.step(batch, np.where(batch.done, 0, eng.random_actions(batch, rng)))
        _assert_same_snapshot(before, _snapshot(batch.take(done)), "a finished game")
    return stats


@pytest.mark.parametrize("variant", VARIANTS)
@settings(settings.get_profile("tafl_batched"))
@given(
    seed=st.integers(0, 2**32 - 1),
    first=st.sampled_from([None, "attacker", "defender"]),
    max_turns=st.sampled_from([None, 12, 40]),
    repetition=st.sampled_from(["starter_loses", "draw", "ignore"]),
    data=st.data(),
)
def test_batched_equals_single(variant, seed, first, max_turns, repetition, data):
    rules = make_rules(variant, max_turns=max_turns, repetition=repetition)
    steps = data.draw(st.integers(10, MAX_STEPS.get(variant, DEFAULT_MAX_STEPS)), label="steps")
    _play_in_parallel(rules, B, steps, seed, first)


def test_batched_equals_single_through_berserk_chains():
    """A longer Berserk run that is sure to pass through pending chains and pass actions."""
    stats = _play_in_parallel(make_rules("legacy_berserk", max_turns=None), 8, 100, 2024, None)
    assert stats["chains"] > 0 and stats["passes"] > 0, stats


def test_batched_equals_single_to_the_end():
    """Short capped games, so that every game ends (by truncation at the latest) and is restarted."""
    stats = _play_in_parallel(make_rules("legacy_ard_ri", max_turns=20), 8, 60, 99, None)
    assert stats["finished"] >= 8, stats


@pytest.mark.parametrize("variant", VARIANTS)
def test_random_games_finish(variant):
    """Random play with a short cap finishes every game with a winner or a truncation (the property
    test above therefore sees finished games as well as running ones)."""
    rules = make_rules(variant, max_turns=30)
    eng = engine_for(rules)
    rng = np.random.default_rng(7)
    batch = eng.initial_state(32)
    for _ in range(80):
        eng.step(batch, eng.random_actions(batch, rng))
    assert batch.done.all()
    assert (batch.turn <= 30).all()
    # truncated games have no winner; every other finished game has one
    running_to_cap = batch.turn == 30
    assert ((batch.winner >= 0) | running_to_cap).all()
    assert (eng.count_legal(batch) == 0).all()


# --- State.copy / take / put independence ------------------------------------------------------

def _played_batch(variant: str, b: int = 6, plies: int = 9, seed: int = 3):
    eng = engine_for(make_rules(variant, max_turns=None))
    state = eng.initial_state(b)
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        eng.step(state, eng.random_actions(state, rng))
    return eng, state, rng


@pytest.mark.parametrize("variant", VARIANTS)
def test_copy_is_independent(variant):
    eng, state, rng = _played_batch(variant)
    original = _snapshot(state)
    copy = state.copy()
    _assert_same_snapshot(original, _snapshot(copy), "copy")
    eng.step(copy, eng.random_actions(copy, rng))
    copy.board[:, 0] = 0
    _assert_same_snapshot(original, _snapshot(state), "original after stepping the copy")
    # and the other way round
    copy2 = state.copy()
    snap2 = _snapshot(copy2)
    eng.step(state, eng.random_actions(state, rng))
    _assert_same_snapshot(snap2, _snapshot(copy2), "copy after stepping the original")


@pytest.mark.parametrize("index", [np.array([4, 1, 1]), np.array([True, False, True, False, True, False])],
                         ids=["int-array", "bool-mask"])
@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_berserk"])
def test_take_is_independent(variant, index):
    eng, state, rng = _played_batch(variant)
    original = _snapshot(state)
    taken = state.take(index)
    rows = np.arange(len(state))[index]
    assert len(taken) == len(rows)
    for j, i in enumerate(rows):
        _assert_rows_equal(_row(taken, j), _row(state, int(i)), f"taken row {j}")
    eng.step(taken, eng.random_actions(taken, rng))
    taken.board[:, :] = 0
    _assert_same_snapshot(original, _snapshot(state), "original after stepping the taken batch")


@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_berserk"])
def test_take_with_a_slice_is_independent(variant):
    """``take`` makes "a new batch" (its docstring): also for a slice, which numpy would otherwise
    turn into views of the original arrays."""
    eng, state, rng = _played_batch(variant)
    original = _snapshot(state)
    taken = state.take(slice(1, 4))
    assert len(taken) == 3
    eng.step(taken, eng.random_actions(taken, rng))
    taken.board[:, 0] = 0
    _assert_same_snapshot(original, _snapshot(state), "original after stepping a slice-taken batch")


@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_berserk"])
def test_put_writes_rows_and_copies(variant):
    eng, state, rng = _played_batch(variant)
    fresh = eng.initial_state(2)
    fresh_snap = _snapshot(fresh)
    other_rows = [0, 2, 3, 5]
    before_others = {i: _row(state, i) for i in other_rows}
    state.put(np.array([1, 4]), fresh)
    for j, i in enumerate([1, 4]):
        _assert_rows_equal(_row(state, i), _row(fresh, j), f"row {i} after put")
    for i in other_rows:
        _assert_rows_equal(_row(state, i), before_others[i], f"untouched row {i} after put")
    # The rows written in behave like fresh games.
    mask = eng.legal_action_mask(state)
    fresh_mask = eng.legal_action_mask(fresh)
    np.testing.assert_array_equal(mask[[1, 4]], fresh_mask)
    # Stepping the batch must not reach back into the source of put.
    eng.step(state, eng.random_actions(state, rng))
    _assert_same_snapshot(fresh_snap, _snapshot(fresh), "source of put")


@pytest.mark.parametrize("variant", VARIANTS)
def test_game_copy_is_independent(variant):
    game = Game(variant)
    rng = np.random.default_rng(11)
    for _ in range(5):
        game.push(int(rng.choice(game.legal_actions())))
    summary, mask, n_moves = game.summary(), game.action_mask().copy(), len(game.moves)
    other = game.copy()
    assert other.summary() == summary
    other.push(int(other.legal_actions()[0]))
    assert game.summary() == summary and len(game.moves) == n_moves
    np.testing.assert_array_equal(game.action_mask(), mask)


def test_batch_mask_row_equals_game_mask_midgame():
    """A game played inside a batch and the same game played alone have equal masks, also when the
    games of the batch differ (the single game is rebuilt from its actions)."""
    rules = make_rules("legacy_berserk", max_turns=None)
    eng = engine_for(rules)
    rng = np.random.default_rng(5)
    batch = eng.initial_state(5)
    played = [[] for _ in range(5)]
    for _ in range(25):
        acts = eng.random_actions(batch, rng)
        eng.step(batch, acts)
        for i, a in enumerate(acts):
            if a >= 0:
                played[i].append(int(a))
    mask = eng.legal_action_mask(batch)
    for i in range(5):
        g = Game(rules)
        for a in played[i]:
            g.push(a)
        np.testing.assert_array_equal(mask[i], g.action_mask(), err_msg=f"game {i}")
        assert g.position == eng.position(batch, i)
