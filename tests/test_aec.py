"""The PettingZoo AEC environment (tafl_env.aec) and the renderers (tafl_env.render).

PettingZoo's own checks (api_test, seed_test, render_test) run on every variant; the rest checks what
they cannot: the mask against an independent Game replay (berserk chains included), rewards and
truncation, the illegal-action paths, copies in mid-game, rendering contents and the registry.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, render_test, seed_test

from tafl_env import VARIANTS, Game, IllegalMoveError, make_rules
from tafl_env.aec import REGISTRY_IDS, TaflEnv, env, raw_env, registry_id
from tafl_env.notation import parse_square
from tafl_env.observation import observe
from tafl_env import render as R

from conftest import diagram_position as board_from_picture

NAMES = {
    "legacy_alea_evangelii": "LegacyAleaEvangelii",
    "legacy_tawlbwrdd": "LegacyTawlbwrdd",
    "historical_tablut": "HistorischesTablut",
    "legacy_ard_ri": "LegacyArdRi",
    "legacy_berserk": "LegacyBerserkHnefatafl",
}
# api_test/seed_test cycles (one cycle = one move per agent); the 19x19 board is the slow one
CYCLES = {"legacy_alea_evangelii": 15, "legacy_tawlbwrdd": 60, "historical_tablut": 100,
          "legacy_ard_ri": 100, "legacy_berserk": 60}


def pick(obs: dict, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rng.integers(len(legal))])


def over(e) -> bool:
    a = e.agent_selection
    return e.terminations[a] or e.truncations[a]


def finish(e) -> None:
    """Step the dead agents out, as PettingZoo's loop does."""
    while e.agents:
        assert over(e)
        e.step(None)


# --- PettingZoo's own checks ------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::UserWarning")  # agent names without _<n>, dict observations
@pytest.mark.parametrize("variant", VARIANTS)
def test_pettingzoo_api(variant):
    api_test(env(variant), num_cycles=CYCLES[variant], verbose_progress=False)
    api_test(raw_env(variant), num_cycles=5, verbose_progress=False)


@pytest.mark.parametrize("variant", VARIANTS)
def test_pettingzoo_seed(variant):
    seed_test(lambda: env(variant), num_cycles=CYCLES[variant] // 2)


@pytest.mark.parametrize("variant", VARIANTS)
def test_pettingzoo_render(variant, monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.setitem(TaflEnv.metadata, "render_fps", 1000)  # no need to watch

    def is_board(text):
        return isinstance(text, str) and ("to move" in text or "game over" in text)

    render_test(lambda render_mode=None: env(variant, render_mode=render_mode, square_px=8),
                custom_tests={"ansi": is_board})


# --- spaces and observations --------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_spaces_and_first_observation(variant):
    e = env(variant)
    e.reset()
    n = make_rules(variant).board_size
    a = n * n * 4 * (n - 1) + 1
    for agent in ("attacker", "defender"):
        space = e.observation_space(agent)
        assert space is e.observation_space(agent) and e.action_space(agent) is e.action_space(agent)
        assert space["observation"].shape == (n, n, 14) and space["observation"].dtype == np.float32
        assert space["action_mask"].shape == (a,) and space["action_mask"].dtype == np.int8
        assert e.action_space(agent).n == a
    assert e.possible_agents == ["attacker", "defender"]
    assert e.agent_selection == make_rules(variant).first_to_move
    mover = e.agent_selection
    other = "defender" if mover == "attacker" else "attacker"
    g = Game(variant)
    o_mover, o_other = e.observe(mover), e.observe(other)
    np.testing.assert_array_equal(o_mover["action_mask"], g.action_mask())
    assert not o_other["action_mask"].any()
    assert o_mover["observation"][..., 9].all() and not o_other["observation"][..., 9].any()
    # own pieces of one side are the enemy pieces of the other
    np.testing.assert_array_equal(o_mover["observation"][..., 0:3], o_other["observation"][..., 3:6])
    assert str(e.unwrapped) == f"tafl_{variant}_v0"


# --- the mask along random games, against an independent Game replay ------------------------------

def _replay_and_compare(variant: str, seed: int, max_steps: int, **options) -> dict:
    """Random play; at every step the env must agree with a Game fed the same actions."""
    e = raw_env(variant, **options)
    e.reset()
    g = Game(variant, **options)
    rng = np.random.default_rng(seed)
    seen = {"chains": 0, "repeat_mover": 0, "passes": 0, "steps": 0}
    prev_mover = None
    for _ in range(max_steps):
        if over(e):
            break
        mover = e.agent_selection
        assert mover == g.to_move
        obs = e.observe(mover)
        mask = obs["action_mask"]
        np.testing.assert_array_equal(mask, g.action_mask())
        assert mask.dtype == np.int8 and mask.sum() > 0
        side = 0 if mover == "attacker" else 1
        np.testing.assert_array_equal(obs["observation"], observe(g.engine, g.state, np.array([side]))[0])
        other = "defender" if mover == "attacker" else "attacker"
        assert not e.observe(other)["action_mask"].any()
        if g.chain is not None:
            seen["chains"] += 1
            assert mask[-1] == 1, "pass must be legal during a chain"
            assert obs["observation"][..., 11].sum() == 1
            chain_sq = parse_square(g.chain, g.n)
            assert obs["observation"].reshape(-1, 14)[chain_sq, 11] == 1
            for a in np.flatnonzero(mask[:-1]):
                assert g.describe(int(a)).origin == chain_sq
            assert mover == prev_mover or prev_mover is None
        else:
            assert mask[-1] == 0
        a = pick(obs, rng)
        if a == len(mask) - 1:
            seen["passes"] += 1
        e.step(a)
        g.push(a)
        seen["steps"] += 1
        if e.agent_selection == mover and not over(e):
            seen["repeat_mover"] += 1
        prev_mover = mover
        assert e.infos[e.agent_selection]["turn"] == g.turns
    assert e.unwrapped.game.position == g.position
    return seen


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "legacy_berserk"])
def test_mask_matches_game_along_random_games(variant):
    steps = 40 if variant == "legacy_alea_evangelii" else 120
    seen = _replay_and_compare(variant, seed=1, max_steps=steps)
    assert seen["steps"] >= 20
    assert seen["chains"] == 0 and seen["repeat_mover"] == 0


def test_mask_matches_game_through_berserk_chains():
    """Random Berserk games until chains have occurred: the same agent moves again, pass is legal."""
    total = {"chains": 0, "repeat_mover": 0, "passes": 0}
    for seed in range(20):
        seen = _replay_and_compare("legacy_berserk", seed=seed, max_steps=150)
        for k in total:
            total[k] += seen[k]
        if total["chains"] >= 3 and total["passes"] >= 1:
            break
    assert total["chains"] >= 3, "no berserk chain in 20 random games"
    assert total["repeat_mover"] >= total["chains"] > 0
    assert total["passes"] >= 1


# --- ends of games: rewards, termination, truncation --------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_rewards_sum_to_zero_at_the_end(variant):
    cap = 60 if variant == "legacy_alea_evangelii" else None
    rng = np.random.default_rng(7)
    outcomes = set()
    for game in range(3 if cap else 4):
        e = env(variant, **({"max_turns": cap} if cap else {}))
        e.reset()
        steps = 0
        while not over(e):
            obs, reward, *_ = e.last()
            assert reward == 0
            e.step(pick(obs, rng))
            steps += 1
        info = e.infos["attacker"]
        assert info == e.infos["defender"]
        assert set(info) == {"turn", "reason", "result"}
        r = dict(e.unwrapped._cumulative_rewards)
        assert sum(r.values()) == 0
        if info["reason"] == "truncated":
            assert r == {"attacker": 0, "defender": 0}
            assert all(e.truncations.values()) and not any(e.terminations.values())
        else:
            assert all(e.terminations.values()) and not any(e.truncations.values())
            if info["result"] == "draw":
                assert r == {"attacker": 0, "defender": 0}
            else:
                loser = "defender" if info["result"] == "attacker" else "attacker"
                assert r == {info["result"]: 1, loser: -1}
        outcomes.add(info["reason"])
        # each agent sees its final reward through last(), then steps out with None
        seen = {}
        while e.agents:
            agent = e.agent_selection
            _, reward, *_ = e.last()
            seen[agent] = reward
            e.step(None)
        assert seen == r
    assert outcomes


@pytest.mark.parametrize("variant", VARIANTS)
def test_truncation_at_move_cap(variant):
    e = env(variant, max_turns=3)
    e.reset()
    mover_order = []
    while not over(e):
        obs, *_ = e.last()
        mover_order.append(e.agent_selection)
        e.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert e.truncations == {"attacker": True, "defender": True}
    assert e.terminations == {"attacker": False, "defender": False}
    assert e.rewards == {"attacker": 0, "defender": 0}
    assert e.infos["attacker"]["reason"] == "truncated" and e.infos["attacker"]["turn"] == 3
    assert e.unwrapped.game.reason == "truncated"
    assert not e.observe(e.agent_selection)["action_mask"].any()
    finish(e)
    assert e.agents == []
    e2 = raw_env(variant, max_turns=1)
    e2.reset()
    e2.step(int(np.flatnonzero(e2.observe(e2.agent_selection)["action_mask"])[0]))
    assert over(e2) and e2.truncations == {"attacker": True, "defender": True}
    with pytest.raises(ValueError):  # once dead, only None is accepted
        e2.step(0)


def test_loaded_position_without_moves_is_over_at_reset():
    # the lone attacker on a1 is walled in by two defenders: the attackers, to move, lose (RULES §6.6)
    pos = board_from_picture("""
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . . . . . .
        . . . . K . . . .
        . . . . . . . . .
        . . . . . . . . .
        T . . . . . . . .
        t T . . . . . . .
    """)
    e = env("historical_tablut")
    e.reset(options={"position": pos, "to_move": "attacker"})
    assert all(e.terminations.values())
    assert e.infos["attacker"]["reason"] == "no_moves" and e.infos["attacker"]["result"] == "defender"
    assert e.unwrapped._cumulative_rewards == {"attacker": -1, "defender": 1}
    finish(e)
    # options change one episode only; the next reset is the variant's start again
    e.reset()
    assert not any(e.terminations.values()) and e.unwrapped.game.position == Game("historical_tablut").position


def test_reset_from_position_option_and_constructor():
    pos = "/3ttt3/2t6/4T4/t3T3t/ttTTKTTtt/t3T3t/4T4/4t4/3ttt3/"
    e = raw_env("historical_tablut")
    e.reset(options={"position": pos, "to_move": "defender"})
    assert e.agent_selection == "defender" and e.unwrapped.game.position == pos
    e2 = raw_env("historical_tablut", position=pos, to_move="defender")
    e2.reset(seed=3)
    np.testing.assert_array_equal(e2.observe("defender")["observation"], e.observe("defender")["observation"])


# --- illegal actions ------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_ard_ri"])
def test_wrapped_env_illegal_action_ends_game(variant):
    e = env(variant)
    e.reset()
    obs, *_ = e.last()
    mover = e.agent_selection
    other = "defender" if mover == "attacker" else "attacker"
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    e.step(illegal)
    assert all(e.terminations.values())
    _, reward, terminated, _, info = e.last()
    assert terminated
    assert e.unwrapped._cumulative_rewards == {mover: -1, other: 0}
    # the infos of every end (DESIGN.md): turn, reason and result, the reason a Termination's
    assert info == {"turn": 0, "reason": "illegal_action", "result": other}
    assert e.infos == {mover: info, other: info}
    seen = {}
    while e.agents:
        seen[e.agent_selection] = e.last()[1]
        e.step(None)
    assert seen == {mover: -1, other: 0}


def test_wrapped_env_rejects_out_of_range_action():
    e = env("historical_tablut")
    e.reset()
    with pytest.raises(AssertionError):
        e.step(e.action_space("attacker").n)


def _pettingzoo_stack(variant, **options):
    """env() as PettingZoo's own wrapper classes build it (the reference for tafl_env.wrappers)."""
    from pettingzoo.utils import wrappers
    e = wrappers.TerminateIllegalWrapper(raw_env(variant, **options), illegal_reward=-1)
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(e))


@pytest.mark.filterwarnings("ignore::UserWarning")   # PettingZoo warns of each illegal move
@pytest.mark.parametrize("variant", ["historical_tablut", "legacy_berserk"])
def test_env_wrappers_behave_as_pettingzoos_own(variant):
    """env()'s wrappers forward attributes by properties; a game played through them and through
    PettingZoo's own classes, illegal and out-of-range actions included, must look the same."""
    ours, ref = env(variant, max_turns=40), _pettingzoo_stack(variant, max_turns=40)
    for e in (ours, ref):
        with pytest.raises(AttributeError, match="agent_selection cannot be accessed before reset"):
            e.agent_selection
        with pytest.raises(AttributeError, match="agents cannot be accessed before reset"):
            e.agents
    rng = np.random.default_rng(3)
    games = 0
    for e in (ours, ref):
        e.reset()
    def plain(info):    # PettingZoo's wrapper leaves the infos as they were: ours adds the ruling
        if isinstance(info, dict) and info.get("reason") == "illegal_action":
            return {"turn": info["turn"]}
        return info

    while games < 8:
        seen = [e.last() for e in (ours, ref)]
        for a, b in zip(*seen):
            if isinstance(a, dict) and "action_mask" in a:
                for k in a:
                    np.testing.assert_array_equal(a[k], b[k])
            else:
                assert plain(a) == b
        for name in ("agents", "agent_selection", "rewards", "_cumulative_rewards", "terminations",
                     "truncations"):
            assert getattr(ours, name) == getattr(ref, name), name
        assert {k: plain(v) for k, v in ours.infos.items()} == ref.infos
        obs, _, term, trunc, _ = seen[0]
        if term or trunc:
            for e in (ours, ref):
                e.step(None)
            if not ours.agents:
                assert not ref.agents
                games += 1
                for e in (ours, ref):
                    e.reset()
            continue
        roll = rng.random()
        if roll < 0.02:
            for e in (ours, ref):
                with pytest.raises(AssertionError):
                    e.step(int(obs["action_mask"].size))   # outside the action space
        elif roll < 0.05:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"] == 0)))   # loses the game
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        if roll >= 0.02:
            for e in (ours, ref):
                e.step(action)


def test_env_wrappers_write_through_to_the_env():
    e = env("historical_tablut")
    e.reset()
    e.infos = {"attacker": {"turn": 5}, "defender": {"turn": 5}}
    assert e.unwrapped.infos is e.infos and e.last()[4] == {"turn": 5}


def test_raw_env_raises_on_illegal_action_and_changes_nothing():
    e = raw_env("historical_tablut")
    e.reset()
    rng = np.random.default_rng(0)
    for _ in range(5):
        e.step(pick(e.observe(e.agent_selection), rng))
    before = pickle.dumps(e)
    obs = e.observe(e.agent_selection)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    for bad in (illegal, e.unwrapped.engine.pass_action, -1, e.action_space("attacker").n, None, 1.5):
        with pytest.raises(IllegalMoveError) as info:
            e.step(bad)
        assert e.agent_selection in str(info.value)
        assert pickle.dumps(e) == before
    after = e.observe(e.agent_selection)
    np.testing.assert_array_equal(after["observation"], obs["observation"])
    np.testing.assert_array_equal(after["action_mask"], obs["action_mask"])
    e.step(np.int64(pick(obs, rng)))  # numpy ints are actions too
    assert len(e.played) == 6


# --- copies in mid-game ---------------------------------------------------------------------------

def _snapshot(e) -> tuple:
    obs = {a: e.observe(a) for a in e.agents}
    return (e.agent_selection, list(e.agents), dict(e.unwrapped._cumulative_rewards), dict(e.terminations),
            dict(e.truncations), {a: dict(v) for a, v in e.infos.items()},
            {a: (o["observation"].tobytes(), o["action_mask"].tobytes()) for a, o in obs.items()})


def _to_midgame(variant: str, steps: int, want_chain: bool = False):
    rng = np.random.default_rng(3)
    for attempt in range(30):
        e = env(variant, max_turns=400)
        e.reset()
        for i in range(400):
            if over(e):
                break
            e.step(pick(e.last()[0], rng))
            chained = e.unwrapped.engine_state.chain[0] >= 0
            if (chained if want_chain else i + 1 >= steps) and not over(e):
                return e
    raise AssertionError("no suitable mid-game position found")


@pytest.mark.parametrize("variant", VARIANTS)
def test_pickle_and_deepcopy_in_midgame(variant):
    want_chain = variant == "legacy_berserk"
    e = _to_midgame(variant, steps=9, want_chain=want_chain)
    if want_chain:
        assert e.unwrapped.game.chain is not None
    copies = [copy.deepcopy(e), pickle.loads(pickle.dumps(e))]
    for c in copies:
        assert _snapshot(c) == _snapshot(e)
        assert c.unwrapped.engine is e.unwrapped.engine  # shared, rebuilt from the rules
    rng = np.random.default_rng(11)
    for _ in range(60):
        if over(e):
            break
        a = pick(e.last()[0], rng)
        for env_ in [e] + copies:
            env_.step(a)
        for c in copies:
            assert _snapshot(c) == _snapshot(e)
    # the copies are independent: moving one leaves the others alone
    if not over(e):
        copies[0].step(pick(copies[0].last()[0], rng))
        assert _snapshot(copies[1]) == _snapshot(e)


def test_pickle_drops_the_window(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    e = raw_env("legacy_ard_ri", render_mode="human", square_px=8)
    e.reset()
    assert e._renderer is not None and e._renderer.is_open
    c = pickle.loads(pickle.dumps(e))
    assert c._renderer is None
    assert _snapshot(c) == _snapshot(e)
    e.close()
    c.close()


# --- helpers for search agents ------------------------------------------------------------------

def test_game_copy_and_notation():
    e = env("historical_tablut")
    e.reset()
    assert e.unwrapped.action_to_notation(441) == "e2-c2"  # (13*4 + 3)*8 + 1
    g = e.unwrapped.game
    g.push("e2-c2")
    assert e.unwrapped.game.turns == 0, "the game is a copy"
    with pytest.raises(IllegalMoveError):
        e.unwrapped.action_to_notation(10)  # no piece on a1
    e.step(441)
    assert e.unwrapped.game.position == g.position and e.unwrapped.played == [441]
    np.testing.assert_array_equal(e.unwrapped.state(), e.observe("attacker")["observation"])


# --- rendering ------------------------------------------------------------------------------------

def _tile(img: np.ndarray, n: int, px: int, square: str, dy: int, dx: int) -> tuple[int, ...]:
    """The pixel at offset (dy, dx) inside the tile of ``square`` (rank N on top)."""
    sq = parse_square(square, n)
    r, f = divmod(sq, n)
    return tuple(int(c) for c in img[(n - 1 - r) * px + dy, f * px + dx])


def test_rgb_squares_and_pieces_differ():
    px = 32
    pos = board_from_picture("""
        . . . t t t t t . . .
        . . . . . c . . . . .
        . . . . . . . . . . .
        t . . . . T . . . . t
        t . . . T N T . . . t
        t c . T T . T T . c t
        t . . . T T T . . . t
        t . . . . K . . . . t
        . . . . . . . . . . .
        . . . . . c . . . . .
        . . . t t t t t . . .
    """)
    g = Game("legacy_berserk", position=pos)
    img = R.render_rgb(g.engine, g.state, square_px=px)
    assert img.shape == (11 * px, 11 * px, 3) and img.dtype == np.uint8
    bg = lambda sq: tuple(_tile(img, 11, px, sq, 4, 4))
    centre = lambda sq: tuple(_tile(img, 11, px, sq, px // 2, px // 2))
    rim = lambda sq: tuple(_tile(img, 11, px, sq, px // 2 - 6, px // 2 - 6))  # inside the disc, off the mark
    plain, throne, corner = bg("b2"), bg("f6"), bg("a1")
    assert len({plain, throne, corner}) == 3
    assert bg("a11") == corner and bg("k1") == corner
    assert centre("f6") == throne, "the empty throne shows no piece"
    attacker, defender, king, commander, knight = (centre("d1"), centre("f8"), centre("f4"),
                                                   centre("f10"), centre("f7"))
    assert len({attacker, defender, king, commander, knight, plain, throne, corner}) == 8
    assert rim("f4") == defender, "the king is a light disc with a mark"
    assert rim("f10") == attacker, "a commander is a dark disc with a mark"
    assert rim("f7") == defender, "the knight is a light disc with a mark"
    assert sum(attacker) < sum(plain) < sum(defender)


def test_rgb_marks_the_chain_piece_and_tablut_edge():
    e = _to_midgame("legacy_berserk", 0, want_chain=True).unwrapped
    chain = e.game.chain
    img = R.render_rgb(e.engine, e.engine_state, square_px=16)
    assert tuple(_tile(img, 11, 16, chain, 1, 1)) == R.CHAIN
    g = Game("historical_tablut")
    img = R.render_rgb(g.engine, g.state, square_px=16)
    assert img.shape == (144, 144, 3)
    # Tablut: corners plain, the whole edge escapes, the throne is the centre
    assert tuple(_tile(img, 9, 16, "a1", 1, 1)) == tuple(_tile(img, 9, 16, "b1", 1, 1)) == R.ESCAPE
    assert tuple(_tile(img, 9, 16, "b2", 1, 1)) == R.SQUARE
    assert tuple(_tile(img, 9, 16, "e5", 1, 1)) == R.THRONE


def test_ansi_board_with_coordinates_and_status():
    pos = board_from_picture("""
        . . . t t t t t . . .
        . . . . . t . . . . .
        . . . . . . . . . . .
        t . . . . T . . . . t
        t . . . T T T . . . t
        t t . T T . T T . t t
        t . . . T . T . . . t
        t . . . . K . . . . t
        . . . . . . . . . . .
        . . . . . t . . . . .
        . . . t t t t t . . .
    """)
    e = raw_env("legacy_tawlbwrdd", render_mode="ansi", position=pos, to_move="defender")
    e.reset()
    text = e.render()
    lines = text.splitlines()
    assert lines[0].startswith("11 + . . t t t t t . . +")
    assert lines[5] == " 6 t t . T T # T T . t t"
    assert lines[11] == "   a b c d e f g h i j k"
    assert lines[12] == "defender to move, turn 0"
    e.step(e.unwrapped.game.push("f4-f6").action)  # the king walks back onto the throne
    assert "attacker to move, turn 1" in e.render() and "#" not in e.render()
    g = Game("historical_tablut", max_turns=1)
    g.push("e2-c2")
    assert R.render_ansi(g.engine, g.state).splitlines()[-1] == "game over after turn 1: truncated (move cap)"


def test_render_without_mode_warns_and_returns_none():
    e = raw_env("legacy_ard_ri")
    e.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert e.render() is None
    assert caught
    with pytest.raises(ValueError):
        raw_env("legacy_ard_ri", render_mode="svg")


def test_human_mode_with_dummy_video_driver(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.setitem(TaflEnv.metadata, "render_fps", 1000)
    e = env("legacy_ard_ri", render_mode="human", square_px=10)
    e.reset()
    renderer = e.unwrapped._renderer
    assert renderer is not None and renderer.is_open
    assert renderer._screen.get_size() == (70, 70)
    rng = np.random.default_rng(0)
    for _ in range(3):
        e.step(pick(e.last()[0], rng))
    assert e.render() is None
    e.close()
    assert e.unwrapped._renderer is None
    # a window closed by the user closes the renderer
    r = R.HumanRenderer(fps=0)
    r.show(np.zeros((20, 30, 3), dtype=np.uint8))
    import pygame
    assert r._screen.get_size() == (30, 20)
    pygame.event.post(pygame.event.Event(pygame.QUIT))
    r.show(np.zeros((20, 30, 3), dtype=np.uint8))
    assert not r.is_open
    r.close()


# --- the registry ---------------------------------------------------------------------------------

def test_registry_ids():
    assert set(REGISTRY_IDS.values()) == set(VARIANTS)
    for variant, name in NAMES.items():
        assert registry_id(variant) == f"tafl/{name}-v0"
        assert REGISTRY_IDS[f"tafl/{name}-v0"] == variant


@pytest.mark.parametrize("variant", VARIANTS)
def test_pettingzoo_make(variant):
    e = pettingzoo.make("aec", f"tafl/{NAMES[variant]}-v0", max_turns=7)
    assert isinstance(e.unwrapped, TaflEnv)
    assert e.unwrapped.rules == make_rules(variant, max_turns=7)
    e.reset()
    obs, *_ = e.last()
    np.testing.assert_array_equal(obs["action_mask"], Game(variant).action_mask())
    # an unversioned id resolves to v0; the wrappers are those of env()
    e2 = pettingzoo.make("aec", f"tafl/{NAMES[variant]}")
    assert e2.unwrapped.rules == make_rules(variant)
    assert type(e2) is type(env(variant))
    assert isinstance(e2, pettingzoo.utils.wrappers.OrderEnforcingWrapper)


def test_bad_arguments_are_named():
    from tafl_env import InvalidOptionError, InvalidPositionError, UnknownVariantError

    with pytest.raises(UnknownVariantError):
        raw_env("chess")
    with pytest.raises(InvalidOptionError):
        raw_env("historical_tablut", no_such_rule=True)
    with pytest.raises(InvalidPositionError):
        raw_env("historical_tablut", position="/K/")
