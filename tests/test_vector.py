"""The batched envs: Gymnasium VectorEnv, SB3 VecEnv, single-agent env and their registration.

Checks shapes and dtypes, masks against the engine, the SAME_STEP autoreset, move-for-move agreement
with separate ``tafl_env.Game`` objects, the self-play slot rules, fixed opponents ("random", a
callable, an object with ``.act``), berserk chains in both modes, ``gymnasium.make_vec``,
``check_env`` and a short MaskablePPO run.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest

from tafl_env import VARIANTS, Game
from tafl_env.engine.state import REASON_NAMES
from tafl_env.errors import IllegalMoveError
from tafl_env.observation import observe
from tafl_env.registration import ENV_IDS, register_envs
from tafl_env.single import TaflSingleEnv
from tafl_env.observation import observer_for
from tafl_env.vector import TaflVectorEnv

from conftest import diagram_position as pos  # ASCII board, rank N on top → position string

SIDES = ("attacker", "defender")
RESULT_CODE = {"attacker": 0, "defender": 1, "draw": 2}
REASON_CODE = {name: code for code, name in REASON_NAMES.items()}


# --- helpers -------------------------------------------------------------------------------------

def sq(name: str, n: int) -> int:
    return (int(name[1:]) - 1) * n + (ord(name[0]) - ord("a"))


def action(origin: str, target: str, n: int) -> int:
    o, t = sq(origin, n), sq(target, n)
    dr, df = t // n - o // n, t % n - o % n
    d = (0 if dr > 0 else 2) if dr else (1 if df > 0 else 3)
    return (o * 4 + d) * (n - 1) + abs(dr or df) - 1


def random_legal(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of a (B, A) mask."""
    return np.array([rng.choice(np.flatnonzero(row)) for row in mask], dtype=np.int64)


def first_legal(obs, mask):
    """A deterministic opponent: the lowest legal action of each game."""
    return np.argmax(mask, axis=1)


# Berserk: c1-c5 takes d5 (against e5), then c5-c7 takes c8, then c7-b7 takes b8: a chain of three.
CHAIN = pos("""
11 . . . . . . . . . . .
10 . . . . . . . . K . .
 9 . t t . . . . . . . .
 8 . T T . . . . . . . .
 7 . . . . . . . . . . .
 6 . . . . . . . . . . .
 5 . . . T t . . . . . .
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . . . . . . T .
 1 . . t . . . . . . . .
""")
CHAIN_MOVES = [("c1", "c5"), ("c5", "c7"), ("c7", "b7")]

# Berserk, defenders to move: the king on k5 escapes to the corner k1 in one move.
ESCAPE = pos("""
11 . . . . . . . . . . .
10 . . . . . . . . . . .
 9 . . . t . . . . . . .
 8 . . . . . . . . . . .
 7 . . . . . . t . . . .
 6 . . . . . . . . . . .
 5 . . . . . . . . . . K
 4 . . . . . . . . . . .
 3 . . . . . . . . . . .
 2 . . . . T . . . . . .
 1 . . . . . . . . . . .
""")


# --- the observation encoder against a plane-by-plane reference -----------------------------------

def reference_observation(eng, st, side):
    """RULES-level reading of tafl_env.observation's plane table, one plane at a time."""
    b, n, s = len(st), eng.n, eng.s
    side = np.asarray(side)
    out = np.zeros((b, s, 14), dtype=np.float32)
    cells = st.board[:, :s]
    own_side = np.where(side[:, None] == 0, 0, 1)
    piece_side = np.where(np.isin(cells, [1, 2]), 0, np.where(np.isin(cells, [3, 4, 5]), 1, -1))
    own, enemy = piece_side == own_side, (piece_side >= 0) & (piece_side != own_side)
    for offset, mask in ((0, own), (3, enemy)):
        out[:, :, offset + 0] = mask & np.isin(cells, [1, 3])      # soldiers
        out[:, :, offset + 1] = mask & np.isin(cells, [2, 4])      # commander / knight
        out[:, :, offset + 2] = mask & (cells == 5)                # king
    t = eng.tables
    out[:, t.throne, 6] = 1
    out[:, :, 7] = (t.is_corner[:s] & eng.rules.restricted_corners)
    out[:, :, 8] = t.escape[:s]
    out[:, :, 9] = (st.to_move == side)[:, None]
    out[:, :, 10] = (side == 1)[:, None]
    for g in range(b):
        if st.chain[g] >= 0:
            out[g, st.chain[g], 11] = 1
    out[:, :, 12] = (eng.repetition_count(st) >= 2)[:, None]
    if eng.rules.max_turns:
        out[:, :, 13] = (st.turn / eng.rules.max_turns)[:, None]
    return out.reshape(b, n, n, 14)


@pytest.mark.parametrize("variant", VARIANTS)
def test_observer_equals_reference(variant):
    env = TaflVectorEnv(variant, 16, max_turns=60)
    env.reset(seed=1)
    rng = np.random.default_rng(2)
    eng = env.engine
    obsr = observer_for(eng)
    seen_chain = False
    for _ in range(40):
        st = env.state
        for side in (np.zeros(len(st), int), np.ones(len(st), int), rng.integers(0, 2, len(st))):
            assert np.array_equal(observe(eng, st, side), reference_observation(eng, st, side))
        games = np.array([3, 0, 5])
        assert np.array_equal(obsr.observe(st, games, [1, 0, 1]),
                              reference_observation(eng, st.take(games), np.array([1, 0, 1])))
        pairs = obsr.observe_pairs(st)
        assert np.array_equal(pairs[0::2], reference_observation(eng, st, np.zeros(len(st), int)))
        assert np.array_equal(pairs[1::2], reference_observation(eng, st, np.ones(len(st), int)))
        seen_chain |= bool((st.chain >= 0).any())
        env.step(random_legal(env.action_masks(), rng))
    if variant == "legacy_berserk":
        assert seen_chain


# --- spaces, shapes, masks ------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", [{"self_play": True}, {"opponent": "random"}])
def test_shapes_dtypes_and_masks(variant, mode):
    b = 4
    env = TaflVectorEnv(variant, b, **mode)
    eng = env.engine
    n, a = eng.n, eng.num_actions
    assert env.single_observation_space == gymnasium.spaces.Box(0, 1, (n, n, 14), np.float32)
    assert env.single_action_space == gymnasium.spaces.Discrete(a)
    assert env.observation_space == gymnasium.vector.utils.batch_space(env.single_observation_space, b)
    assert env.action_space == gymnasium.vector.utils.batch_space(env.single_action_space, b)
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    obs, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for t in range(6):
        assert obs.shape == (b, n, n, 14) and obs.dtype == np.float32 and obs in env.observation_space
        mask = infos["action_mask"]
        assert mask.shape == (b, a) and mask.dtype == np.int8
        assert np.array_equal(env.action_masks(), mask)
        engine_mask = eng.legal_action_mask(env.state)
        if env.self_play:
            tm = env.state.to_move.astype(int)
            assert np.array_equal(mask[2 * np.arange(b // 2) + tm], engine_mask)
            waiting = mask[2 * np.arange(b // 2) + 1 - tm]
            assert (waiting[:, -1] == 1).all() and (waiting.sum(axis=1) == 1).all()
            assert infos["active"].tolist() == (np.arange(b) % 2 == np.repeat(tm, 2)).tolist()
        else:
            assert np.array_equal(mask, engine_mask)
            assert (env.state.to_move == infos["side"]).all() and infos["active"].all()
            assert (obs[:, 0, 0, 9] == 1).all()              # the learner is always to move
        obs, rew, term, trunc, infos = env.step(random_legal(mask, rng))
        assert rew.shape == term.shape == trunc.shape == (b,)
        assert rew.dtype == np.float32 and term.dtype == trunc.dtype == bool


def test_observation_is_from_each_slots_side():
    env = TaflVectorEnv("historical_tablut", 2)
    obs, infos = env.reset(seed=0)
    eng, st = env.engine, env.state
    assert np.array_equal(obs[0], observe(eng, st, [0])[0]) and np.array_equal(obs[1], observe(eng, st, [1])[0])
    assert obs[0, 0, 0, 10] == 0 and obs[1, 0, 0, 10] == 1          # plane 10: is defender
    assert obs[0, 0, 0, 9] == 1 and obs[1, 0, 0, 9] == 0            # plane 9: to move (attackers start)
    assert infos["side"].tolist() == [0, 1]


# --- agreement with tafl_env.Game -----------------------------------------------------------------

@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_berserk", "legacy_ard_ri"])
def test_self_play_agrees_with_separate_games(variant):
    """The same actions into the vector env and into separate Games: same boards, obs, ends."""
    g_count, cap = 3, 30
    env = TaflVectorEnv(variant, 2 * g_count, max_turns=cap)
    obs, infos = env.reset(seed=5)
    games = [Game(variant, max_turns=cap) for _ in range(g_count)]
    rng = np.random.default_rng(7)
    ended = 0
    for _ in range(150):
        mask = infos["action_mask"]
        actions = random_legal(mask, rng)
        for g, game in enumerate(games):
            slot = 2 * g + SIDES.index(game.to_move)
            assert np.array_equal(mask[slot], game.action_mask())
            game.push(int(actions[slot]))
        obs, rew, term, trunc, infos = env.step(actions)
        for g, game in enumerate(games):
            a_slot, d_slot = 2 * g, 2 * g + 1
            if game.is_over():
                ended += 1
                assert infos["_final_obs"][a_slot] and infos["_final_obs"][d_slot]
                assert np.array_equal(infos["final_obs"][a_slot], observe(game.engine, game.state, [0])[0])
                assert np.array_equal(infos["final_obs"][d_slot], observe(game.engine, game.state, [1])[0])
                fi = infos["final_info"]
                assert fi["winner"][a_slot] == RESULT_CODE[game.result]
                assert fi["reason"][d_slot] == REASON_CODE[game.reason]
                assert fi["turns"][a_slot] == game.turns
                expect = {"attacker": 1.0, "defender": -1.0, "draw": 0.0}[game.result]
                assert (rew[a_slot], rew[d_slot]) == (expect, -expect)
                is_trunc = game.reason == "truncated"
                assert trunc[a_slot] == trunc[d_slot] == is_trunc
                assert term[a_slot] == term[d_slot] == (not is_trunc)
                games[g] = game = Game(variant, max_turns=cap)     # the env reset it: so do we
            else:
                assert not (term[a_slot] or trunc[a_slot] or term[d_slot] or trunc[d_slot])
                assert rew[a_slot] == rew[d_slot] == 0
                assert not infos.get("_final_obs", np.zeros(6, bool))[a_slot]
            assert np.array_equal(env.state.board[g], game.state.board[0])
            assert env.state.turn[g] == game.turns and env.state.chain[g] == game.state.chain[0]
            assert np.array_equal(obs[a_slot], observe(game.engine, game.state, [0])[0])
            assert np.array_equal(obs[d_slot], observe(game.engine, game.state, [1])[0])
    assert ended >= 3


def test_fixed_callable_opponent_agrees_with_game():
    variant, cap = "legacy_tawlbwrdd", 40
    b = 3
    env = TaflVectorEnv(variant, b, opponent=first_legal, learner_side="defender", max_turns=cap)
    obs, infos = env.reset(seed=0)

    def opponent_replies(game, learner):
        while not game.is_over() and game.to_move != learner:
            game.push(int(np.argmax(game.action_mask())))

    games = [Game(variant, max_turns=cap) for _ in range(b)]
    for game in games:
        opponent_replies(game, "defender")
    rng = np.random.default_rng(3)
    ended = 0
    for _ in range(60):
        actions = random_legal(infos["action_mask"], rng)
        obs, rew, term, trunc, infos = env.step(actions)
        for g in range(b):
            game = games[g]
            game.push(int(actions[g]))
            opponent_replies(game, "defender")
            if game.is_over():
                ended += 1
                assert term[g] or trunc[g]
                assert rew[g] == {"defender": 1.0, "attacker": -1.0, "draw": 0.0}[game.result]
                assert np.array_equal(infos["final_obs"][g], observe(game.engine, game.state, [1])[0])
                games[g] = game = Game(variant, max_turns=cap)
                opponent_replies(game, "defender")
            else:
                assert not (term[g] or trunc[g]) and rew[g] == 0
            assert np.array_equal(env.state.board[g], game.state.board[0])
            assert np.array_equal(obs[g], observe(game.engine, game.state, [1])[0])
    assert ended >= 1


# --- autoreset ------------------------------------------------------------------------------------

def test_same_step_autoreset_and_truncation():
    env = TaflVectorEnv("legacy_ard_ri", 4, max_turns=3)     # every game is cut after 3 turns
    obs0, _ = env.reset(seed=0)
    fresh = obs0.copy()
    rng = np.random.default_rng(0)
    ended_any = False
    for _ in range(3):
        obs, rew, term, trunc, infos = env.step(random_legal(env.action_masks(), rng))
    # After 3 turns every game is over (truncated unless decided earlier) and already restarted.
    ended = trunc | term
    assert ended.all()
    for i in np.flatnonzero(trunc):
        ended_any = True
        assert not term[i] and rew[i] == 0
        assert infos["final_info"]["reason"][i] == REASON_CODE["truncated"]
        assert infos["final_info"]["winner"][i] == 2
        assert infos["final_obs"][i].shape == (7, 7, 14)
        assert infos["final_obs"][i][0, 0, 13] == 1.0           # progress plane: 3/3 turns
    assert ended_any
    assert infos["_final_obs"].all() and infos["_final_info"].all()
    assert np.array_equal(obs, fresh)                          # the new games' first observations
    assert (env.state.turn == 0).all() and not env.state.done.any()


def test_partial_reset_with_reset_mask():
    env = TaflVectorEnv("historical_tablut", 4, opponent="random")
    obs0, _ = env.reset(seed=0)
    rng = np.random.default_rng(1)
    env.step(random_legal(env.action_masks(), rng))
    before = env.state.board.copy()
    obs, infos = env.reset(options={"reset_mask": np.array([False, True, False, False])})
    assert env.state.turn.tolist() == [2, 0, 2, 2]           # learner move + opponent reply
    assert np.array_equal(env.state.board[[0, 2, 3]], before[[0, 2, 3]])
    assert np.array_equal(obs[1], obs0[1])
    sp = TaflVectorEnv("historical_tablut", 4)
    sp.reset(seed=0)
    with pytest.raises(ValueError, match="both slots"):
        sp.reset(options={"reset_mask": np.array([True, False, False, False])})


# --- self-play slots -------------------------------------------------------------------------------

def test_self_play_waiting_slot_action_is_ignored():
    rng = np.random.default_rng(4)
    a, b = TaflVectorEnv("historical_tablut", 6), TaflVectorEnv("historical_tablut", 6)
    _, infos = a.reset(seed=0)
    b.reset(seed=0)
    for _ in range(10):
        acts = random_legal(infos["action_mask"], rng)
        garbage = acts.copy()
        garbage[~infos["active"]] = 12345             # not even legal: waiting slots are ignored
        ra = a.step(acts)
        rb = b.step(garbage)
        infos = ra[4]
        for x, y in zip(ra[:4], rb[:4]):
            assert np.array_equal(x, y)


def test_self_play_final_rewards_to_both_slots():
    n = 11
    env = TaflVectorEnv("legacy_berserk", 4, layout=ESCAPE, first_to_move="defender")
    obs, infos = env.reset(seed=0)
    assert infos["active"].tolist() == [False, True, False, True]
    escape = action("k5", "k1", n)
    pass_ = env.engine.pass_action
    obs, rew, term, trunc, infos = env.step(np.array([pass_, escape, pass_, escape]))
    assert rew.tolist() == [-1.0, 1.0, -1.0, 1.0]
    assert term.all() and not trunc.any()
    assert infos["final_info"]["reason"].tolist() == [REASON_CODE["escaped"]] * 4
    assert infos["final_info"]["side"].tolist() == [0, 1, 0, 1]
    assert infos["active"].tolist() == [False, True, False, True]      # restarted
    # illegal action of an active slot: error, nothing changes
    board = env.state.board.copy()
    with pytest.raises(IllegalMoveError, match="env"):
        env.step(np.array([pass_, pass_, pass_, escape]))
    assert np.array_equal(env.state.board, board)


def test_self_play_berserk_chain_keeps_the_same_slot_active():
    n = 11
    env = TaflVectorEnv("legacy_berserk", 2, layout=CHAIN, max_turns=None)
    obs, infos = env.reset(seed=0)
    pass_ = env.engine.pass_action
    steps = [action(o, t, n) for o, t in CHAIN_MOVES[:2]]
    for k, a in enumerate(steps):
        obs, rew, term, trunc, infos = env.step(np.array([a, pass_]))
        assert infos["active"].tolist() == [True, False]
        m = infos["action_mask"]
        assert m[0, pass_] == 1 and m[0].sum() == 2                 # the next capture or pass
        assert m[1].tolist() == [0] * pass_ + [1]
        assert obs[0, :, :, 11].sum() == 1 and obs[1, :, :, 11].sum() == 1   # chain plane
        assert env.state.turn[0] == 0 and rew.tolist() == [0, 0]
    obs, rew, term, trunc, infos = env.step(np.array([pass_, pass_]))     # the attacker ends the chain
    assert infos["active"].tolist() == [False, True] and env.state.turn[0] == 1
    assert obs[:, :, :, 11].sum() == 0


# --- fixed opponents -------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["legacy_berserk", "legacy_alea_evangelii", "legacy_ard_ri"])
def test_random_opponent_alternate_sides(variant):
    b = 6
    env = TaflVectorEnv(variant, b, opponent="random", learner_side="alternate", max_turns=12)
    obs, infos = env.reset(seed=3)
    assert infos["side"].tolist() == [0, 1, 0, 1, 0, 1]
    rng = np.random.default_rng(0)
    episodes = np.zeros(b, int)
    for _ in range(20):
        side_before = infos["side"].copy()
        obs, rew, term, trunc, infos = env.step(random_legal(infos["action_mask"], rng))
        done = term | trunc
        episodes += done
        assert (infos["side"] == np.where(done, 1 - side_before, side_before)).all()
        assert (infos["final_info"]["side"][done] == side_before[done]).all() if done.any() else True
        assert (env.state.to_move == infos["side"]).all() and not env.state.done.any()
        assert (obs[:, 0, 0, 10] == infos["side"]).all() and (obs[:, 0, 0, 9] == 1).all()
        assert set(np.unique(rew)) <= {-1.0, 0.0, 1.0} and (rew[~done] == 0).all() and (rew[trunc] == 0).all()
    assert (episodes >= 1).all()


def test_random_opponent_is_seeded():
    def run():
        env = TaflVectorEnv("historical_tablut", 4, opponent="random", learner_side="defender")
        obs, _ = env.reset(seed=11)
        rng = np.random.default_rng(0)
        out = [obs]
        for _ in range(5):
            out.append(env.step(random_legal(env.action_masks(), rng))[0])
        return np.stack(out)

    assert np.array_equal(run(), run())


class ScriptedOpponent:
    """An object with .act: plays the given moves in order; records what it was shown."""

    def __init__(self, moves):
        self.moves = list(moves)
        self.calls = []

    def act(self, obs, mask):
        self.calls.append((obs.copy(), mask.copy()))
        assert obs.dtype == np.float32 and mask.dtype == np.int8 and len(obs) == len(mask) == 1
        a = self.moves.pop(0)
        assert mask[0, a] == 1
        return np.array([a])


def test_opponent_berserk_chain_inside_reset_and_step():
    n = 11
    chain = [action(o, t, n) for o, t in CHAIN_MOVES]
    opp = ScriptedOpponent(chain + [action("i10", "i9", n)])   # i10: wrong side, never reached
    env = TaflVectorEnv("legacy_berserk", 1, opponent=opp, learner_side="defender", layout=CHAIN,
                        max_turns=None)
    obs, infos = env.reset(seed=0)
    assert len(opp.calls) == 3                               # the whole chain, inside reset
    for o, m in opp.calls:
        assert (o[0, :, :, 10] == 0).all() and (o[0, :, :, 9] == 1).all()   # the attacker's view
    assert opp.calls[1][1][0, env.engine.pass_action] == 1   # within the chain pass is offered
    assert env.state.turn[0] == 1 and env.state.to_move[0] == 1
    # c5, c8, b8 captured... d5 captured, c8 and b8 captured; the attacker's piece ended on b7
    g = Game("legacy_berserk", position=CHAIN, max_turns=None)
    for o, t in CHAIN_MOVES:
        g.push(f"{o}-{t}")
    assert np.array_equal(env.state.board[0], g.state.board[0])
    assert np.array_equal(obs[0], observe(g.engine, g.state, [1])[0])


def test_learner_berserk_chain_in_fixed_mode():
    n = 11
    opp = ScriptedOpponent([action("i10", "i9", n)])
    env = TaflVectorEnv("legacy_berserk", 1, opponent=opp, learner_side="attacker", layout=CHAIN,
                        max_turns=None)
    obs, infos = env.reset(seed=0)
    pass_ = env.engine.pass_action
    obs, rew, term, trunc, infos = env.step(np.array([action("c1", "c5", n)]))
    assert not opp.calls and env.state.chain[0] == sq("c5", n)          # still the learner's turn
    assert infos["action_mask"][0, pass_] == 1 and infos["action_mask"][0].sum() == 2
    obs, rew, term, trunc, infos = env.step(np.array([pass_]))
    assert len(opp.calls) == 1 and env.state.turn[0] == 2 and env.state.to_move[0] == 0
    assert env.state.board[0, sq("i9", n)] != 0


def test_callable_opponent_sees_its_own_side_and_batches():
    seen = []

    def opponent(obs, mask):
        seen.append((obs.shape, mask.shape, obs[:, 0, 0, 10].copy()))
        return np.argmax(mask, axis=1)

    env = TaflVectorEnv("legacy_tawlbwrdd", 5, opponent=opponent, learner_side="attacker")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(4):
        env.step(random_legal(env.action_masks(), rng))
    assert len(seen) == 4
    for obs_shape, mask_shape, is_def in seen:
        k = obs_shape[0]
        assert obs_shape == (k, 11, 11, 14) and mask_shape == (k, 4841) and (is_def == 1).all()
    bad = TaflVectorEnv("legacy_tawlbwrdd", 2, opponent=lambda o, m: np.zeros(len(m), int),
                        learner_side="defender")
    with pytest.raises(IllegalMoveError, match="opponent"):
        bad.reset(seed=0)


def test_a_refused_env_closes_quietly():
    """An env whose __init__ refused its arguments is still closed by gymnasium's __del__:
    closing must not fail on the parts it never built."""
    half_built = TaflVectorEnv.__new__(TaflVectorEnv)
    half_built.close_extras()


def test_argument_errors():
    with pytest.raises(ValueError, match="even"):
        TaflVectorEnv("historical_tablut", 3)
    with pytest.raises(ValueError, match="learner_side"):
        TaflVectorEnv("historical_tablut", 2, opponent="random", learner_side="king")
    with pytest.raises(ValueError, match="opponent"):
        TaflVectorEnv("historical_tablut", 2, opponent="greedy")
    with pytest.raises(ValueError, match="self_play"):
        TaflVectorEnv("historical_tablut", 2, opponent="random", self_play=True)
    env = TaflVectorEnv("historical_tablut", 2, opponent="random")
    with pytest.raises(RuntimeError):
        env.action_masks()
    env.reset(seed=0)
    with pytest.raises(IllegalMoveError):
        env.step(np.array([0, 0, 0]))


# --- registration, make_vec, single-agent env ----------------------------------------------------

def test_register_envs_and_make_vec():
    register_envs()
    register_envs()  # idempotent
    assert ENV_IDS["historical_tablut"] == "tafl/HistorischesTablut-v0"
    assert ENV_IDS["legacy_berserk"] == "tafl/LegacyBerserkHnefatafl-v0"
    for variant, env_id in ENV_IDS.items():
        spec = gymnasium.spec(env_id)
        assert spec.vector_entry_point == "tafl_env.vector:TaflVectorEnv"
        assert spec.entry_point == "tafl_env.single:TaflSingleEnv"
    venv = gymnasium.make_vec("tafl/LegacyArdRi-v0", num_envs=4, vectorization_mode="vector_entry_point",
                              opponent="random", learner_side="defender")
    assert isinstance(venv, TaflVectorEnv) and venv.num_envs == 4 and venv.variant == "legacy_ard_ri"
    obs, infos = venv.reset(seed=0)
    assert obs.shape == (4, 7, 7, 14) and infos["action_mask"].shape == (4, 1177)
    single = gymnasium.make("tafl/HistorischesTablut-v0", learner_side="defender")
    obs, info = single.reset(seed=0)
    assert obs.shape == (9, 9, 14) and info["action_mask"].dtype == np.int8


@pytest.mark.parametrize("variant,side", [("historical_tablut", "attacker"), ("legacy_berserk", "defender")])
def test_check_env_single_agent(variant, side):
    from gymnasium.utils.env_checker import check_env

    register_envs()
    env = gymnasium.make(ENV_IDS[variant], learner_side=side)
    gc.collect()    # earlier tests' garbage is not collected inside the check (its ResourceWarnings are not ours)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    found = [w for w in caught if "render" not in str(w.message) and not issubclass(w.category, ResourceWarning)]
    assert not found, [str(w.message) for w in found]


def test_single_env_illegal_action_loses_and_game_plays_out():
    env = TaflSingleEnv("legacy_ard_ri", learner_side="defender", render_mode="ansi")
    obs, info = env.reset(seed=0)
    assert env.learner_side == "defender" and obs[0, 0, 10] == 1 and obs[0, 0, 9] == 1
    assert "Ard Ri" in env.render()
    obs2, rew, term, trunc, info = env.step(env.num_actions - 1)
    assert (rew, term, trunc, info["illegal_action"]) == (-1.0, True, False, True)
    assert info["action_mask"].sum() == 0 and np.array_equal(obs, obs2)
    with pytest.raises(RuntimeError):
        env.step(0)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=1)
    total = 0
    while True:
        a = rng.choice(np.flatnonzero(env.action_masks()))
        obs, rew, term, trunc, info = env.step(a)
        total += 1
        if term or trunc:
            break
        assert rew == 0 and not info["illegal_action"]
    assert info["reason"] in REASON_CODE and rew in (-1.0, 0.0, 1.0)
    assert trunc == (info["reason"] == "truncated")
    if info["winner"] in SIDES:
        assert rew == (1.0 if info["winner"] == "defender" else -1.0)
    alt = TaflSingleEnv("legacy_ard_ri", learner_side="alternate")
    sides = [alt.reset(seed=0) and alt.learner_side, alt.reset() and alt.learner_side,
             alt.reset() and alt.learner_side, alt.reset(seed=0) and alt.learner_side]
    assert sides == ["attacker", "defender", "attacker", "attacker"]


def test_import_does_not_load_training_libraries():
    code = ("import sys, tafl_env, tafl_env.vector, tafl_env.single, tafl_env.registration; "
            "tafl_env.registration.register_envs(); "
            "bad = [m for m in ('torch', 'stable_baselines3', 'sb3_contrib') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- SB3 ------------------------------------------------------------------------------------------

def test_sb3_vecenv_conventions():
    pytest.importorskip("stable_baselines3")
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from tafl_env.sb3 import TaflSB3VecEnv

    venv = TaflSB3VecEnv("legacy_ard_ri", 4, opponent="random", learner_side="alternate", max_turns=3,
                         seed=0)
    obs = venv.reset()
    assert obs.shape == (4, 7, 7, 14) and obs.dtype == np.float32
    assert is_masking_supported(venv)
    masks = get_action_masks(venv)
    assert masks.shape == (4, 1177) and np.array_equal(masks, venv.engine.legal_action_mask(venv.state))
    assert venv.env_method("action_masks", indices=[2]).shape == (1, 1177)
    assert venv.get_attr("variant") == ["legacy_ard_ri"] * 4 and venv.env_is_wrapped(gymnasium.Wrapper) == [False] * 4
    rng = np.random.default_rng(0)
    saw_trunc = False
    for _ in range(4):
        obs, rew, dones, infos = venv.step(random_legal(get_action_masks(venv), rng))
        assert len(infos) == 4 and dones.dtype == bool
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"].shape == (7, 7, 14)
            assert infos[i]["TimeLimit.truncated"] == (infos[i]["reason"] == REASON_CODE["truncated"])
            saw_trunc |= infos[i]["TimeLimit.truncated"]
            if infos[i]["TimeLimit.truncated"]:
                assert rew[i] == 0
        for i in np.flatnonzero(~dones):
            assert infos[i] == {}
    assert saw_trunc
    venv.close()


def test_maskable_ppo_smoke():
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from tafl_env.sb3 import TaflSB3VecEnv

    torch.set_num_threads(1)
    venv = TaflSB3VecEnv("legacy_ard_ri", 8, seed=0)              # self-play: 4 games
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [32]})
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    obs = venv.reset()
    masks = get_action_masks(venv)
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert actions.shape == (8,) and (masks[np.arange(8), actions] == 1).all()
    pass_ = venv.engine.pass_action
    assert (actions[0::2] == pass_).all()                           # Ard Ri: defenders move first
    venv.step(actions)
