"""Agents: legality on random positions (berserk chains included), determinism, greedy's tactics,
MCTS's win-in-one, a MaskablePPO policy, and greedy's strength against random play."""

from __future__ import annotations

import numpy as np
import pytest

from tafl_env import VARIANTS, Game, make_rules
from tafl_env.engine import Engine
from tafl_env.perft import expand

from agents import make_agent
from agents.base import AgentSpecError
from agents.mcts.evaluators import RolloutEvaluator
from agents.greedy import GreedyAgent
from agents.mcts import MCTSAgent

from conftest import diagram_position as picture  # ASCII board, rank N on top → position string


# King on c3 (away from the throne), b3 attacker west of him: d7-d3 sandwiches him (a win in one).
KING_CAPTURE_IN_ONE = picture("""
9 . . . . . . . . .
8 . . . . . . . . .
7 . . . t . . . . .
6 . . . . . . . . .
5 . . . . . . . . .
4 . . T . . . . . .
3 . t K . . . . . .
2 . . T . . . T . .
1 . . . . . . . . t
""")

# The king on c5 has one open line (east, to i5). h1-h2 would capture g2 but let him escape;
# h9 or f2 can block the fifth rank.
ESCAPE_OR_CAPTURE = picture("""
9 . . . . . . . t .
8 . . . . . . . . .
7 . . . . . . . . .
6 . . T . . . . . .
5 . T K . . . . . .
4 . . T . . . . . .
3 . . . . . . . . .
2 . . . . . t T . .
1 t . . . . . . t .
""")


_ENGINES: dict[str, Engine] = {}


def engine(variant: str, **options) -> Engine:
    key = variant + repr(sorted(options.items()))
    if key not in _ENGINES:
        _ENGINES[key] = Engine(make_rules(variant, **options))
    return _ENGINES[key]


def random_positions(eng: Engine, batch: int, plies: int, seed: int):
    """A batch after ``plies`` random actions per game (some games may be over)."""
    rng = np.random.default_rng(seed)
    st = eng.initial_state(batch)
    lengths = rng.integers(0, plies, size=batch)
    for ply in range(plies):
        a = eng.random_actions(st, rng)
        a[lengths <= ply] = -1
        st_running = ~st.done & (lengths > ply)
        if not st_running.any():
            break
        sub = np.flatnonzero(st_running)
        part = st.take(sub)
        eng.step(part, a[sub])
        st.put(sub, part)
    return st


def chain_states(eng: Engine, want: int = 6, seed: int = 0):
    """States inside a pending berserk chain, found by random play."""
    rng = np.random.default_rng(seed)
    st = eng.initial_state(64)
    found = []
    for _ in range(300):
        eng.step(st, eng.random_actions(st, rng))
        idx = np.flatnonzero((st.chain >= 0) & ~st.done)
        if len(idx):
            found.append(st.take(idx))
        if sum(len(f) for f in found) >= want:
            break
        if st.done.all():
            st = eng.initial_state(64)
    from tafl_env.engine import State
    out = State.concatenate(found)
    return out.take(np.arange(min(len(out), want)))


def assert_legal(eng, st, actions):
    actions = np.asarray(actions)
    assert actions.shape == (len(st),)
    assert (actions[st.done] == -1).all()
    assert eng.check_legal(st, actions)[~st.done].all()


AGENT_SPECS = {
    "random": lambda seed: make_agent("random", seed=seed),
    "greedy": lambda seed: make_agent("greedy", seed=seed),
    "mcts": lambda seed: MCTSAgent(simulations=12, leaves_per_tree=6, seed=seed),
    "mcts_rollouts": lambda seed: MCTSAgent(simulations=6, evaluator=RolloutEvaluator("random", "greedy", max_turns=6),
                                            seed=seed),
    "mcts_uct": lambda seed: MCTSAgent(simulations=8, evaluator=RolloutEvaluator("random", "uniform", max_turns=10),
                                       seed=seed),
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", sorted(AGENT_SPECS))
def test_legal_actions_on_random_positions(variant, kind):
    eng = engine(variant)
    batch = 3 if (kind.startswith("mcts") or variant == "legacy_alea_evangelii") else 12
    st = random_positions(eng, batch, 60, seed=1)
    st.put([0], random_positions(eng, 1, 400, seed=2))   # likely finished
    agent = AGENT_SPECS[kind](0)
    assert_legal(eng, st, agent.act(eng, st))


@pytest.mark.parametrize("kind", sorted(AGENT_SPECS))
def test_legal_actions_in_berserk_chains(kind):
    eng = engine("legacy_berserk")
    st = chain_states(eng, want=4)
    assert len(st) >= 1 and (st.chain >= 0).all()
    actions = AGENT_SPECS[kind](3).act(eng, st)
    assert_legal(eng, st, actions)


def test_finished_games_get_minus_one():
    eng = engine("legacy_ard_ri")
    st = random_positions(eng, 4, 500, seed=5)
    st = st.take(np.flatnonzero(st.done))
    assert len(st)
    for kind in AGENT_SPECS:
        assert (AGENT_SPECS[kind](0).act(eng, st) == -1).all()


@pytest.mark.parametrize("kind", sorted(AGENT_SPECS))
def test_determinism_with_seed(kind):
    eng = engine("historical_tablut")
    st = random_positions(eng, 6, 30, seed=7)
    a1 = AGENT_SPECS[kind](11).act(eng, st.copy())
    a2 = AGENT_SPECS[kind](11).act(eng, st.copy())
    assert (a1 == a2).all()


def test_make_agent_specs():
    assert isinstance(make_agent("greedy"), GreedyAgent)
    m = make_agent("mcts:8", seed=1)
    assert isinstance(m, MCTSAgent) and m.simulations == 8
    assert (m.rollout, m.prior, m.name) == ("none", "greedy", "mcts:8")
    g = make_agent("mcts:8:greedy", seed=1)
    assert (g.simulations, g.rollout, g.prior, g.name) == (8, "greedy", "greedy", "mcts:8:greedy")
    u = make_agent("mcts:8:random:uniform", seed=1)
    assert (u.rollout, u.prior, u.name) == ("random", "uniform", "mcts:8:random:uniform")
    assert make_agent("mcts").simulations == 64


@pytest.mark.parametrize("spec, words", [("mcts:lots", "simulations"), ("mcts:0", "simulations"),
                                         ("mcts:8:fast", "rollout"), ("mcts:8:random:wide", "prior"),
                                         ("mcts:8:none:uniform", "rollouts"), ("mcts:8:a:b:c", "at most")])
def test_mcts_bad_specs_name_the_problem(spec, words):
    with pytest.raises(ValueError, match=words):
        make_agent(spec)


# --- greedy tactics ----------------------------------------------------------------------------

def test_greedy_king_escapes_in_one():
    # the king on c5: only the fifth rank east is open (to i5, an edge square)
    pos = picture("""
9 . . . . . . . . .
8 . . . . . . . . .
7 . . . . . . . . .
6 . . T . . . . . .
5 . T K . . . . . .
4 . . T . . . . . .
3 . . . . . . . . .
2 . . . . . t T . .
1 t . . . . . . t .
""")
    eng = engine("historical_tablut")
    st = eng.initial_state(8, position=pos, to_move="defender")
    a = GreedyAgent(seed=0).act(eng, st)
    eng.step(st, a)
    assert (st.winner == 1).all() and (st.reason == 2).all()


def test_greedy_attackers_capture_king_in_one():
    pos = KING_CAPTURE_IN_ONE
    eng = engine("historical_tablut")
    st = eng.initial_state(8, position=pos, to_move="attacker")
    eng.step(st, GreedyAgent(seed=1).act(eng, st))
    assert (st.winner == 0).all() and (st.reason == 1).all()


def _defender_can_win(variant, position, to_move, move):
    g = Game(variant, position=position, to_move=to_move)
    g.push(move)
    for reply in g.legal_moves():
        h = g.copy()
        h.push(reply)
        if h.result == "defender":
            return True
    return False


def test_greedy_blocks_escape_instead_of_capturing():
    pos = ESCAPE_OR_CAPTURE
    v = "historical_tablut"
    assert _defender_can_win(v, pos, "attacker", "h1-h2")      # the capture is a blunder
    eng = engine(v)
    st = eng.initial_state(16, position=pos, to_move="attacker")
    actions = GreedyAgent(seed=2).act(eng, st)
    g = Game(v, position=pos, to_move="attacker")
    for a in set(actions.tolist()):
        move = g.describe(a)
        assert not _defender_can_win(v, pos, "attacker", move.notation), move.notation


def test_greedy_prefers_capture_over_quiet_move():
    pos = picture("""
9 t . . . . . . . t
8 . . . . . . . . .
7 . . . . . . . . .
6 . . . . T . . . .
5 . . . T K T . . .
4 . . . . T . . . .
3 . . . . . . . . .
2 . . . . . t T . .
1 t . . . . . . t .
""")
    eng = engine("historical_tablut")
    st = eng.initial_state(8, position=pos, to_move="attacker")
    a = GreedyAgent(seed=3).act(eng, st)
    g = Game("historical_tablut", position=pos, to_move="attacker")
    assert all(g.describe(int(x)).notation.startswith("h1-h2") for x in a)
    eng.step(st, a)
    assert (st.board[:, 1 * 9 + 6] == 0).all()  # g2 = (rank 2 - 1) * 9 + file g is empty


def _brute_unsafe(eng, st):
    """(M,) the side to move in each (running, chain-free) state has a winning reply (full search)."""
    o = st.to_move.astype(int)
    unsafe = np.zeros(len(st), dtype=bool)
    ch, owner, _ = expand(eng, st)
    while len(ch):
        unsafe[owner[ch.winner == o[owner]]] = True
        c = np.flatnonzero((ch.chain >= 0) & ~ch.done)
        if not len(c):
            break
        ch, p, _ = expand(eng, ch.take(c))
        owner = owner[c][p]
    return unsafe


def _check_threats_along_games(eng, greedy, rng, games, plies, every, greedy_plays, limit=None):
    """Play ``games`` games (greedy where ``greedy_plays(ply, to_move)``, else random) and compare
    greedy's check of the opponent's immediate wins with a full expansion on every chain-free
    child of every ``every``-th position; returns (children checked, positives)."""
    st = eng.initial_state(games)
    checked = positives = 0
    for ply in range(plies):
        if st.done.all():
            break
        a = np.where(greedy_plays(ply, st.to_move), greedy.act(eng, st), eng.random_actions(st, rng))
        eng.step(st, a)
        if ply % every == every - 1:
            ch, _, _ = expand(eng, st.take(np.flatnonzero(~st.done)))
            ch = ch.take(np.flatnonzero(~ch.done & (ch.chain < 0))[:limit])
            if len(ch):
                fast = greedy.opponent_can_win(eng, ch)
                full = _brute_unsafe(eng, ch)
                assert (fast == full).all(), [eng.position(ch, i) for i in np.flatnonzero(fast != full)[:3]]
                checked += len(ch)
                positives += int(full.sum())
    return checked, positives


@pytest.mark.parametrize("variant", ["legacy_ard_ri", "historical_tablut", "legacy_berserk"])
def test_greedy_threat_check_matches_full_search(variant):
    """The filtered check of the opponent's immediate wins agrees with a full expansion (repetition
    off: the one documented approximation)."""
    checked, positives = _check_threats_along_games(
        engine(variant, repetition="ignore"), GreedyAgent(seed=0), np.random.default_rng(4), 12, 80, 8,
        lambda ply, to_move: np.full(len(to_move), ply % 2 == 1), limit=400)
    assert checked > 100 and (positives > 0 or variant == "legacy_berserk")


@pytest.mark.parametrize("greedy_side,seed", [(0, 3), (1, 2)])
def test_berserk_threat_check_matches_full_search_under_pressure(greedy_side, seed):
    """Berserk's filters (the king holds; only capturing replies played, their chains searched)
    against a full expansion in positions where wins are near: greedy presses one side, random
    plays the other, and every child of every 5th position is checked."""
    checked, positives = _check_threats_along_games(
        engine("legacy_berserk"), GreedyAgent(seed=seed), np.random.default_rng(seed), 8, 160, 5,
        lambda ply, to_move: to_move == greedy_side)
    assert checked > 2000 and positives > 20, (checked, positives)


def test_greedy_beats_random():
    eng = engine("legacy_ard_ri")
    b = 40
    st = eng.initial_state(b)
    greedy, rand = GreedyAgent(seed=5), make_agent("random", seed=6)
    greedy_side = np.arange(b) % 2              # half the games greedy attacks, half it defends
    for _ in range(eng.rules.max_turns * 2):
        if st.done.all():
            break
        ga, ra = greedy.act(eng, st), rand.act(eng, st)
        eng.step(st, np.where(st.to_move == greedy_side, ga, ra))
    wins = int((st.winner == greedy_side).sum())
    for side in (0, 1):
        assert (st.winner[greedy_side == side] == side).sum() >= 14, side
    assert wins >= 32


# --- MCTS ---------------------------------------------------------------------------------------

def test_mcts_finds_win_in_one():
    pos = KING_CAPTURE_IN_ONE
    eng = engine("historical_tablut")
    st = eng.initial_state(4, position=pos, to_move="attacker")
    for agent in (MCTSAgent(simulations=60, seed=0),
                  MCTSAgent(simulations=300, evaluator=RolloutEvaluator("random", "uniform", max_turns=20), seed=0)):
        s = st.copy()
        eng.step(s, agent.act(eng, s))
        assert (s.winner == 0).all()


def test_mcts_greedy_rollouts_legal():
    eng = engine("legacy_ard_ri")
    st = random_positions(eng, 3, 20, seed=9)
    a = MCTSAgent(simulations=8, evaluator=RolloutEvaluator("greedy", "greedy", max_turns=4), seed=0).act(eng, st)
    assert_legal(eng, st, a)


# The king on the throne, each line blocked two squares away; stepping to e4 (or d5, f5, e6) opens
# two lines to the edge at once, a win in two (a "fork") that one ply of look-ahead cannot prove.
FORK = picture("""
9 . . . . . . . . .
8 . . . . t . . . .
7 . . . . . . . . .
6 . . . . . . . . .
5 . t . . K . . t .
4 . . . . . . . . .
3 . . . . . . . . .
2 . . . . t . . . .
1 . . . . . . . . .
""")


def test_mcts_proves_a_fork_and_wins():
    eng = engine("historical_tablut")
    st = eng.initial_state(4, position=FORK, to_move="defender")
    mcts, greedy = MCTSAgent(simulations=16, seed=1), GreedyAgent(seed=2)
    eng.step(st, mcts.act(eng, st))
    roots_proven = [int(t.nodes.proven[t.hdr[2]]) for t in mcts.trees().values()]
    assert roots_proven == [1, 1, 1, 1]           # the search proved the win for every game
    eng.step(st, greedy.act(eng, st))               # whatever the attackers do ...
    eng.step(st, mcts.act(eng, st))                 # ... the king escapes
    assert (st.winner == 1).all() and (st.reason == 2).all()


def test_mcts_blocks_an_escape_line():
    pos = ESCAPE_OR_CAPTURE
    v = "historical_tablut"
    eng = engine(v)
    st = eng.initial_state(6, position=pos, to_move="attacker")
    g = Game(v, position=pos, to_move="attacker")
    for agent in (MCTSAgent(simulations=8, seed=3), MCTSAgent(simulations=32, seed=4)):
        for a in set(agent.act(eng, st).tolist()):
            move = g.describe(a).notation
            assert not _defender_can_win(v, pos, "attacker", move), move


def test_mcts_lost_position_still_moves_legally():
    # the king has two open lines whatever the attackers do: every move is a proven loss
    eng = engine("historical_tablut")
    st = eng.initial_state(2, position=FORK, to_move="defender")
    g = Game("historical_tablut", position=FORK, to_move="defender")
    eng.step(st, np.array([g.push("e5-e4").action] * 2))
    a = MCTSAgent(simulations=16, seed=5).act(eng, st)
    assert_legal(eng, st, a)


def test_mcts_beats_greedy_on_ard_ri():
    """With 64 simulations MCTS beats greedy from both sides (greedy-vs-greedy: the defenders
    win 31 of 32 games, so the attacker games are the telling ones)."""
    from agents.evaluation.play import play_games
    won = 0
    for side in ("attacker", "defender"):
        m, g = MCTSAgent(simulations=64, seed=6), GreedyAgent(seed=7)
        res = play_games("legacy_ard_ri", *((m, g) if side == "attacker" else (g, m)), 8, seed=8)
        won += sum(r["result"] == side for r in res)
        if side == "attacker":
            assert sum(r["result"] == side for r in res) >= 4
    assert won >= 12


# --- policy -------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["legacy_ard_ri", "legacy_berserk"])
def test_policy_agent_legal(tmp_path, variant):
    pytest.importorskip("sb3_contrib")
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    from agents.ppo.policy import PolicyAgent

    eng = engine(variant)
    n = eng.n

    class Tiny(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (n, n, 14), np.float32)
        action_space = gym.spaces.Discrete(eng.num_actions)

        def reset(self, seed=None, options=None):
            return np.zeros((n, n, 14), np.float32), {}

        def step(self, action):
            return np.zeros((n, n, 14), np.float32), 0.0, True, False, {}

        def action_masks(self):
            return np.ones(eng.num_actions, dtype=bool)

    model = MaskablePPO("MlpPolicy", Tiny(), n_steps=8, batch_size=8, seed=0,
                        policy_kwargs=dict(net_arch=[16]), device="cpu")
    path = tmp_path / "tiny.zip"
    model.save(path)
    # not this package's board network: policy: refuses to unpickle it and names the opt-in
    with pytest.raises(AgentSpecError, match="unpickle-policy:"):
        make_agent(f"policy:{path}", seed=0)
    for det in (True, False):
        agent = make_agent(f"unpickle-policy:{path}", seed=0, deterministic=det)
        assert isinstance(agent, PolicyAgent)
        st = random_positions(eng, 10, 40, seed=3)
        st.put([0], random_positions(eng, 1, 400, seed=4))
        assert_legal(eng, st, agent.act(eng, st))
    if variant == "legacy_berserk":
        ch = chain_states(eng, want=3)
        assert_legal(eng, ch, PolicyAgent(path, seed=1, unpickle=True).act(eng, ch))


# --- greedy's Berserk filters must keep chains that win -------------------------------------------

def _berserk_state(pic: str, to_move: str, **options):
    eng = engine("legacy_berserk", **options)
    return eng, eng.initial_state(1, position=picture(pic), to_move=to_move)


def _single_moves_win(eng, st) -> bool:
    """Does any reply win without a chain continuation (its chain, if any, ended by a pass)?"""
    ch, _, _ = expand(eng, st)
    pend = np.flatnonzero((ch.chain >= 0) & ~ch.done)
    if len(pend):
        sub = ch.take(pend)
        eng.step(sub, np.full(len(pend), eng.pass_action))
        ch.put(pend, sub)
    return bool((ch.winner == st.to_move[0]).any())


def test_greedy_berserk_filter_keeps_chain_to_king_capture():
    """d1-d7 captures d8 and does not land next to the king; only its continuation d7-f7 (capturing
    g7) completes the 4-side capture of the king on f8. The filter must not skip the first move."""
    eng, st = _berserk_state("""
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . t . t . . . . .
        . . . T t K t . . . .
        . . . . . . T t . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . t . . . . . . .
    """, "attacker")
    assert not _single_moves_win(eng, st)
    assert _brute_unsafe(eng, st)[0]
    assert GreedyAgent(seed=0).opponent_can_win(eng, st)[0]


def test_greedy_berserk_filter_keeps_king_chain_to_corner():
    """The king's c5-c1 captures b1 against the corner a1; only the continuation c1-a1 escapes."""
    eng, st = _berserk_state("""
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . t . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . K . . . . . t . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . t . . . . . . T . .
        . t . . . . . . . . .
    """, "defender")
    assert not _single_moves_win(eng, st)
    assert _brute_unsafe(eng, st)[0]
    assert GreedyAgent(seed=0).opponent_can_win(eng, st)[0]


def test_greedy_berserk_filter_skips_harmless_positions():
    """Negative control: the same picture without the anvil d9, so d1-d7 opens no chain: nothing
    wins, and the filter and the full search agree."""
    eng, st = _berserk_state("""
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . t . . . . .
        . . . T t K t . . . .
        . . . . . . T t . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . t . . . . . . .
    """, "attacker")
    assert not _brute_unsafe(eng, st)[0]
    assert not GreedyAgent(seed=0).opponent_can_win(eng, st)[0]


def test_greedy_encirclement_filter_keeps_the_closing_move():
    """Tawlbwrdd: the attackers enclose the king's 3x3 block c3-e5 but for the dead end f4-g4;
    g7-g4 (stopped by g3) closes it and wins by encirclement without landing next to a defender,
    so only the per-target flood fill keeps it (the full search agrees); with a second gap (b4) no
    single move encircles and nothing is flagged."""
    eng = engine("legacy_tawlbwrdd")
    pic = """
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . . . . . .
        . . . . . . t . . . .
        . . t t t . . . . . .
        . t . . . t . . . . .
        . t . K . . . . . . .
        . t . . . t t . . . .
        . . t t t . . . . . .
        . . . . . . . . . . .
    """
    st = eng.initial_state(1, position=picture(pic), to_move="attacker")
    g = Game("legacy_tawlbwrdd", position=picture(pic), to_move="attacker")
    g.push("g7-g4")
    assert (g.result, g.reason) == ("attacker", "encircled")
    assert _brute_unsafe(eng, st)[0]
    assert GreedyAgent(seed=0).opponent_can_win(eng, st)[0]
    pic2 = pic.replace(". t . K . . . . . . .", ". . . K . . . . . . .")
    st2 = eng.initial_state(1, position=picture(pic2), to_move="attacker")
    assert not _brute_unsafe(eng, st2)[0]
    assert not GreedyAgent(seed=0).opponent_can_win(eng, st2)[0]
