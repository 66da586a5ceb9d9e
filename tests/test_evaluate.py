"""The evaluation harness (agents/evaluation/): statistics, ratings, play_games, round robins,
records, GIFs, tournament configs and ``tafl eval``."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import shlex
from pathlib import Path

import numpy as np
import pytest

from agents import Agent, make_agent
from agents.base import AgentSpecError
from agents.schema import ConfigError
from agents.evaluation.gif import export_gif
from agents.evaluation.play import agent_seeds, play_games
from agents.evaluation.ratings import ELO_SCALE, elo_difference, elo_ratings, expected_score, fit_bradley_terry
from agents.evaluation.report import format_record
from agents.evaluation.stats import attacker_score, pairing_table, side_table, wilson_interval
from agents.evaluation.matches import chunk_seed
from agents.evaluation.openings import load_openings
from agents.evaluation.tournament import (CHUNK, TOURNAMENT_SCHEMA, load_tournament_config, round_robin,
                                          validate_tournament_config)
from tafl_env import VARIANTS, make_rules
from tafl_env.cli import main

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs" / "tournaments"


# --- small fake agents ------------------------------------------------------------------------------

class FirstLegal(Agent):
    """Always the lowest legal action id (deterministic)."""

    name = "first"

    def act(self, engine, state):
        mask = engine.legal_action_mask(state)
        out = np.argmax(mask, axis=1).astype(np.int64)
        out[state.done] = -1
        return out


class Spy(Agent):
    """A random agent that checks it is only ever asked for its own side's running games."""

    name = "spy"

    def __init__(self, side: int, seed=None):
        super().__init__(seed)
        self.side = side
        self.calls = 0
        self.rows = 0

    def act(self, engine, state):
        assert len(state) > 0
        assert not state.done.any(), "asked to act in a finished game"
        assert (state.to_move == self.side).all(), "asked to act for the other side"
        self.calls += 1
        self.rows += len(state)
        return engine.random_actions(state, self.rng).astype(np.int64)


def factory(spec, seed):
    return FirstLegal(seed) if spec == "first" else make_agent(spec, seed=seed)


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# --- Wilson intervals ---------------------------------------------------------------------------------

@pytest.mark.parametrize("k,n,lo,hi", [
    (5, 10, 0.2366, 0.7634),
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (1, 4, 0.0456, 0.6994),
    (50, 100, 0.4038, 0.5962),
])
def test_wilson_interval_known_values(k, n, lo, hi):
    a, b = wilson_interval(k, n)
    assert a == pytest.approx(lo, abs=5e-5) and b == pytest.approx(hi, abs=5e-5)


def test_wilson_interval_edge_cases():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    # a fractional score (draws as half) lies between its neighbours
    lo_mid, hi_mid = wilson_interval(5.5, 10)
    assert wilson_interval(5, 10)[0] < lo_mid < wilson_interval(6, 10)[0]
    # a wider z gives a wider interval
    assert wilson_interval(5, 10, z=2.576)[0] < wilson_interval(5, 10)[0]
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


# --- ratings --------------------------------------------------------------------------------------------

def test_elo_scale_and_inverse():
    assert ELO_SCALE == pytest.approx(173.7178, abs=1e-4)
    assert elo_difference(0.75) == pytest.approx(400 * math.log10(3), abs=1e-9)
    assert elo_difference(0.75) == pytest.approx(190.849, abs=1e-3)
    assert expected_score(400.0) == pytest.approx(10 / 11)
    assert expected_score(elo_difference(0.3)) == pytest.approx(0.3)


def test_two_players_one_side_p075_gives_190_8():
    att, dfd = [0] * 400, [1] * 400
    y = [1.0] * 300 + [0.0] * 100
    r, h = fit_bradley_terry(att, dfd, y, 2, side_advantage=False, prior_sd=None)
    assert h == 0.0
    assert r[0] - r[1] == pytest.approx(190.849, abs=1e-3)
    assert r.sum() == pytest.approx(0.0, abs=1e-9)
    # the default (tiny) prior shrinks it by well under an Elo point
    r2, _ = fit_bradley_terry(att, dfd, y, 2, side_advantage=False)
    assert 189.8 < r2[0] - r2[1] < 190.85


def test_draws_count_as_half_wins():
    # 200 wins, 200 draws, 0 losses: score 0.75 -> the same 190.8 Elo as 300-100
    y = [1.0] * 200 + [0.5] * 200
    r, _ = fit_bradley_terry([0] * 400, [1] * 400, y, 2, side_advantage=False, prior_sd=None)
    assert r[0] - r[1] == pytest.approx(190.849, abs=1e-3)
    # all draws: equal
    r, h = fit_bradley_terry([0, 1] * 10, [1, 0] * 10, [0.5] * 20, 2)
    assert r == pytest.approx([0.0, 0.0], abs=1e-6) and h == pytest.approx(0.0, abs=1e-6)


def test_p075_both_sides_gives_no_side_advantage():
    # A scores 0.75 against B as attacker and as defender
    att = [0] * 400 + [1] * 400
    dfd = [1] * 400 + [0] * 400
    y = [1.0] * 300 + [0.0] * 100 + [0.0] * 300 + [1.0] * 100
    r, h = fit_bradley_terry(att, dfd, y, 2, prior_sd=None)
    assert r[0] - r[1] == pytest.approx(190.849, abs=1e-3)
    assert h == pytest.approx(0.0, abs=1e-6)


def test_pure_side_advantage():
    # attackers win 3 of 4 whoever plays them: equal ratings, h = 190.8
    att = [0] * 400 + [1] * 400
    dfd = [1] * 400 + [0] * 400
    y = ([1.0] * 300 + [0.0] * 100) * 2
    r, h = fit_bradley_terry(att, dfd, y, 2, prior_sd=None)
    assert r[0] - r[1] == pytest.approx(0.0, abs=1e-6)
    assert h == pytest.approx(190.849, abs=1e-3)


def test_symmetric_results_give_equal_ratings():
    att, dfd, y = [], [], []
    for a in range(4):
        for b in range(4):
            if a != b:
                att += [a] * 10
                dfd += [b] * 10
                y += [1.0] * 6 + [0.0] * 3 + [0.5]
    r, h = fit_bradley_terry(att, dfd, y, 4)
    assert r == pytest.approx(np.zeros(4), abs=1e-6)
    assert h > 0  # attackers score 0.65


def test_side_advantage_and_ratings_recovered_on_synthetic_data():
    rng = np.random.default_rng(7)
    true = np.array([-250.0, 0.0, 100.0, 300.0])
    true -= true.mean()
    h_true = -120.0
    att, dfd, y = [], [], []
    for a in range(4):
        for b in range(4):
            if a != b:
                p = expected_score(true[a] - true[b] + h_true)
                res = np.where(rng.random(3000) < p, 1.0, 0.0)
                att += [a] * 3000
                dfd += [b] * 3000
                y += res.tolist()
    r, h = fit_bradley_terry(att, dfd, y, 4)
    assert h == pytest.approx(h_true, abs=12)
    assert r == pytest.approx(true, abs=15)
    assert np.all(np.diff(r) > 0)


def test_fit_is_a_stationary_point_of_the_penalised_likelihood():
    rng = np.random.default_rng(3)
    att = rng.integers(0, 3, 60)
    dfd = (att + rng.integers(1, 3, 60)) % 3
    y = rng.choice([0.0, 0.5, 1.0], 60)
    prior = 300.0
    r, h = fit_bradley_terry(att, dfd, y, 3, prior_sd=prior)

    def objective(theta):
        rr, hh = theta[:3], theta[3]
        z = (rr[att] - rr[dfd] + hh) / ELO_SCALE
        ll = np.sum(y * -np.logaddexp(0, -z) + (1 - y) * -np.logaddexp(0, z))
        return ll - 0.5 * np.sum((theta / prior) ** 2)

    theta = np.append(r, h)
    f0 = objective(theta)
    for k in range(4):
        for eps in (-1.0, 1.0):
            t = theta.copy()
            t[k] += eps
            if k < 3:  # keep the ratings centred (the optimum has mean 0)
                t[:3] -= eps / 3
            assert objective(t) <= f0 + 1e-9


def test_perfect_scores_stay_finite():
    att = [0] * 20 + [1] * 20
    dfd = [1] * 20 + [0] * 20
    y = [1.0] * 20 + [0.0] * 20  # player 0 wins everything
    r, h = fit_bradley_terry(att, dfd, y, 2)
    assert np.all(np.isfinite(r)) and math.isfinite(h)
    assert 500 < r[0] - r[1] < 5000
    # a stronger prior shrinks more
    r_tight, _ = fit_bradley_terry(att, dfd, y, 2, prior_sd=200)
    assert 0 < r_tight[0] - r_tight[1] < r[0] - r[1]


def test_fit_input_checks():
    with pytest.raises(ValueError):
        fit_bradley_terry([0], [1], [1.5], 2)
    with pytest.raises(ValueError):
        fit_bradley_terry([0], [2], [1.0], 2)
    with pytest.raises(ValueError):
        fit_bradley_terry([0, 1], [1], [1.0], 2)


def _games(table):
    """Rows for elo_ratings from (attacker, defender, result, count) tuples."""
    return [{"attacker": a, "defender": d, "result": res} for a, d, res, c in table for _ in range(c)]


def test_elo_ratings_anchor_intervals_and_determinism():
    games = _games([("random", "good", "defender", 8), ("random", "good", "attacker", 2),
                    ("good", "random", "attacker", 7), ("good", "random", "draw", 2),
                    ("good", "random", "defender", 1)])
    out = elo_ratings(games, ["random", "good"], anchor="random", bootstrap=100, seed=5)
    by = {r["name"]: r for r in out["ratings"]}
    assert by["random"]["rating"] == 0.0
    assert by["good"]["rating"] > 150
    assert by["good"]["low"] <= by["good"]["rating"] <= by["good"]["high"]
    assert by["good"]["low"] > 0  # clearly better
    assert by["good"]["games"] == 20 and by["good"]["score"] == pytest.approx((8 + 7 + 1) / 20)
    assert out["ratings"][0]["name"] == "good"  # sorted best first
    sa = out["side_advantage"]
    assert sa["low"] <= sa["elo"] <= sa["high"]
    again = elo_ratings(games, ["random", "good"], anchor="random", bootstrap=100, seed=5)
    assert again == out
    # profile-likelihood intervals are deterministic: the seed no longer matters
    assert elo_ratings(games, ["random", "good"], anchor="random", bootstrap=100, seed=6) == out
    # without anchor: mean 0
    mean0 = elo_ratings(games, ["random", "good"], bootstrap=0)
    assert sum(r["rating"] for r in mean0["ratings"]) == pytest.approx(0.0, abs=1e-9)
    assert mean0["ratings"][0]["low"] is None
    with pytest.raises(ValueError):
        elo_ratings(games, ["random", "good"], anchor="nobody")


def _unanimous(games_each_side: int):
    """'ppo' beats 'rnd' in every game, half of them attacking."""
    return _games([("ppo", "rnd", "attacker", games_each_side), ("rnd", "ppo", "defender", games_each_side)])


def test_few_unanimous_games_give_a_wide_interval():
    # a past collapse: 8 unanimous games gave ppo [x, x] and the side advantage [-500, -500]
    out = elo_ratings(_unanimous(4), ["rnd", "ppo"], anchor="rnd")
    by = {r["name"]: r for r in out["ratings"]}
    ppo, sa = by["ppo"], out["side_advantage"]
    assert ppo["low"] < ppo["rating"] < ppo["high"]
    assert ppo["low"] > 0                               # better, that much 8 games do show
    assert ppo["high"] - ppo["low"] > 1000              # but not by how much
    assert sa["low"] < sa["elo"] < sa["high"] and sa["high"] - sa["low"] > 1000
    assert by["rnd"]["low"] == by["rnd"]["high"] == 0.0  # the anchor is 0 by definition
    # more unanimous games raise the lower end: the data say more, the prior still bounds the top
    more = {r["name"]: r for r in elo_ratings(_unanimous(200), ["rnd", "ppo"], anchor="rnd")["ratings"]}
    assert more["ppo"]["low"] > ppo["low"] + 300


def test_interval_width_follows_the_number_of_games():
    widths = []
    for reps in (2, 20, 200):   # A scores 3 of 4 on each side
        games = _games([("A", "B", "attacker", 3 * reps), ("A", "B", "defender", reps),
                        ("B", "A", "defender", 3 * reps), ("B", "A", "attacker", reps)])
        out = elo_ratings(games, ["A", "B"], anchor="B")
        a = [r for r in out["ratings"] if r["name"] == "A"][0]
        assert a["low"] < a["rating"] < a["high"]
        widths.append(a["high"] - a["low"])
    assert widths[0] > 2 * widths[1] > 4 * widths[2]
    assert widths[0] > 400 and widths[2] < 90


def test_profile_interval_matches_the_normal_approximation_for_many_games():
    # one side, no prior: the rating gap is 400 log10(p/(1-p)); its sd 1/sqrt(n p (1-p)) logits
    games = _games([("A", "B", "attacker", 3000), ("A", "B", "defender", 1000)])
    out = elo_ratings(games, ["A", "B"], anchor="B", side_advantage=False, prior_sd=None)
    a = [r for r in out["ratings"] if r["name"] == "A"][0]
    half = 1.959964 * ELO_SCALE / math.sqrt(4000 * 0.75 * 0.25)
    assert a["rating"] == pytest.approx(elo_difference(0.75), abs=1e-6)
    assert a["low"] == pytest.approx(a["rating"] - half, abs=1.5)
    assert a["high"] == pytest.approx(a["rating"] + half, abs=1.5)
    # without a prior a one-sided record has no upper end at all
    out = elo_ratings(_unanimous(4), ["rnd", "ppo"], anchor="rnd", side_advantage=False, prior_sd=None)
    assert [r for r in out["ratings"] if r["name"] == "ppo"][0]["high"] == math.inf


# --- tables ---------------------------------------------------------------------------------------------

def test_pairing_and_side_tables():
    games = _games([("A", "B", "attacker", 3), ("A", "B", "draw", 1),
                    ("B", "A", "attacker", 1), ("B", "A", "defender", 3)])
    (row,) = pairing_table(games, ["A", "B"])
    assert (row["agent"], row["opponent"]) == ("A", "B")
    assert (row["wins"], row["draws"], row["losses"], row["games"]) == (6, 1, 1, 8)
    assert row["score"] == pytest.approx(6.5 / 8)
    assert (row["score_low"], row["score_high"]) == pytest.approx(wilson_interval(6.5, 8))
    assert (row["win_rate_low"], row["win_rate_high"]) == pytest.approx(wilson_interval(6, 8))
    assert row["as_attacker"]["wins"] == 3 and row["as_attacker"]["draws"] == 1
    assert row["as_defender"]["wins"] == 3 and row["as_defender"]["losses"] == 1
    sides = {(r["agent"], r["side"]): r for r in side_table(games, ["A", "B"])}
    assert sides[("B", "attacker")]["wins"] == 1 and sides[("B", "attacker")]["losses"] == 3
    assert sides[("B", "defender")]["score"] == pytest.approx(0.5 / 4)
    assert attacker_score("draw") == 0.5


# --- play_games -----------------------------------------------------------------------------------------

def test_play_games_gives_each_agent_only_its_own_side():
    att, dfd = Spy(0, seed=1), Spy(1, seed=2)
    res = play_games("legacy_ard_ri", att, dfd, 6, max_turns=40)
    assert len(res) == 6
    assert att.calls > 0 and dfd.calls > 0
    assert {r["result"] for r in res} <= {"attacker", "defender", "draw"}
    assert all(1 <= r["turns"] <= 40 for r in res)
    # Ard Ri: the defenders move first, so over all games the defender acts at least as often
    assert dfd.rows >= att.rows


def test_play_games_is_reproducible_and_batched_like_single_games():
    a = play_games("historical_tablut", make_agent("random"), make_agent("random"), 5, seed=11,
                   max_turns=50, record=True)
    b = play_games("historical_tablut", make_agent("random"), make_agent("random"), 5, seed=11,
                   max_turns=50, record=True)
    assert a == b
    c = play_games("historical_tablut", make_agent("random"), make_agent("random"), 5, seed=12,
                   max_turns=50, record=True)
    assert [g["moves"] for g in a] != [g["moves"] for g in c]
    # each record replays, move by move, to the same result in a single Game
    from tafl_env.game import Game

    for g in a:
        game = Game("historical_tablut", max_turns=50)
        for m in g["moves"]:
            game.push(m)
        assert (game.result, game.reason, game.turns) == (g["result"], g["reason"], g["turns"])
        assert len(g["moves"]) >= g["turns"]
        # the recorded notation is the writer's full form (captures, '^', '=') as Game writes it
        assert [m.notation for m in game.moves] == g["moves"]


def test_play_games_rejects_bad_agents():
    class Bad(Agent):
        def act(self, engine, state):
            return np.full(len(state), -1, dtype=np.int64)

    with pytest.raises(ValueError, match="-1"):
        play_games("legacy_ard_ri", Bad(), Bad(), 2)
    with pytest.raises(ValueError):
        play_games("legacy_ard_ri", FirstLegal(), FirstLegal(), 0)


def _replay(path, extra=()):
    code, out, err = run_cli(["replay", *extra, "--file", str(path), "--json"])
    assert code == 0, err
    assert "differs" not in err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("variant,turns", [("legacy_ard_ri", None), ("historical_tablut", None),
                                           ("legacy_berserk", 60)])
def test_records_replay_to_the_same_result(tmp_path, variant, turns):
    defender = FirstLegal() if variant == "legacy_ard_ri" else make_agent("random")
    # Jumps are rare in random Berserk play: enough games that some occur (deterministic seed).
    games = 16 if variant == "legacy_berserk" else 4
    res = play_games(variant, make_agent("random"), defender, games, seed=2, max_turns=turns, record=True)
    if variant == "historical_tablut":  # decisive games (escapes, a king capture) are exercised
        assert {g["reason"] for g in res} >= {"escaped", "king_captured"}
    rules = make_rules(variant, **({"max_turns": turns} if turns else {}))
    moves = [m for g in res for m in g["moves"]]
    if variant == "legacy_berserk":  # the chain notation is exercised
        assert any("=" in m or m == "pass" for m in moves) and any("^" in m for m in moves)
    assert any("x" in m for m in moves)
    from tafl_env.game import Game

    for g in res:  # the full written form, captures included (a reader would accept them left out)
        game = Game(rules)
        for m in g["moves"]:
            game.push(m)
        assert [m.notation for m in game.moves] == g["moves"]
    for g in res:
        row = dict(g, attacker="random", defender="first", seed=3, index_in_leg=g["game"])
        path = tmp_path / f"{variant}_{g['game']}.txt"
        text = format_record(rules, row, str(path))
        path.write_text(text)
        assert text.startswith("# tafl-env game record")
        assert f"# variant: {variant}" in text and "# result:" in text
        header = [line for line in text.splitlines() if line.startswith("# replay: ")][0]
        argv = shlex.split(header[len("# replay: "):])
        assert argv[:5] == ["tafl", "replay", variant, "--file", str(path)]
        code, out, err = run_cli(argv[1:] + ["--json"])  # the header's own command, in-process
        assert code == 0 and "differs" not in err, err
        summary = json.loads(out.strip().splitlines()[-1])
        assert (summary["result"], summary["reason"], summary["turns"]) == (g["result"], g["reason"], g["turns"])


# --- round robin ----------------------------------------------------------------------------------------

AGENTS = {"rand_a": "random", "rand_b": "random", "first": "first"}


def test_round_robin_pairing_side_balance_and_seeds():
    out = round_robin("legacy_ard_ri", AGENTS, 4, seed=9, max_turns=30, progress=False, bootstrap=0,
                      agent_factory=factory)
    games = out["games"]
    assert len(games) == 3 * 4
    names = list(AGENTS)
    for a in names:
        for b in names:
            if a != b:
                n = sum(1 for g in games if g["attacker"] == a and g["defender"] == b)
                assert n == 2, (a, b, n)
        assert sum(g["attacker"] == a for g in games) == sum(g["defender"] == a for g in games) == 4
    assert len(out["legs"]) == 6
    for leg in out["legs"]:    # one chunk per leg (2 games < CHUNK), seeded by the names
        assert leg["chunks"] == 1 and leg["seed"] == chunk_seed(9, leg["attacker"], leg["defender"], 0)
        assert all(g["seed"] == leg["seed"] for g in games[leg["first_game"]: leg["first_game"] + leg["games"]])
    assert len({leg["seed"] for leg in out["legs"]}) == 6
    # paired openings: game k of "a attacks b" and of "b attacks a" start from opening k
    assert [g["opening"] for g in games] == [0, 1] * 6
    assert [g["index_in_leg"] for g in games] == [0, 1] * 6
    # time per move: every move of every game after its opening is counted once, for the agent that chose it
    suite = load_openings("legacy_ard_ri")
    chosen = lambda g: g["turns"] - len(suite[g["opening"]])
    timing = out["time_per_move"]
    assert sorted(timing) == sorted(names)
    assert sum(t["moves"] for t in timing.values()) == sum(chosen(g) for g in games)
    for leg in out["legs"]:
        assert leg["attacker_moves"] + leg["defender_moves"] == sum(
            chosen(g) for g in games[leg["first_game"]: leg["first_game"] + leg["games"]])
    assert all(t["ms_per_move"] > 0 for t in timing.values())
    again = round_robin("legacy_ard_ri", AGENTS, 4, seed=9, max_turns=30, progress=False, bootstrap=0,
                        agent_factory=factory)
    assert again["games"] == games and again["ratings"] == out["ratings"]
    with pytest.raises(ValueError, match="even"):
        round_robin("legacy_ard_ri", AGENTS, 3, seed=9, progress=False, agent_factory=factory)
    assert agent_seeds(None) == (None, None)
    assert agent_seeds(1) != agent_seeds(2)


def test_round_robin_writes_the_result_files(tmp_path):
    out_dir = tmp_path / "ardri"
    res = round_robin("legacy_ard_ri", AGENTS, 2, seed=1, max_turns=40, out_dir=out_dir, records=True,
                      gifs=1, fps=10, progress=False, bootstrap=20, anchor="rand_a", agent_factory=factory)
    for name in ("results.json", "games.csv", "ratings.csv", "ratings.png"):
        assert (out_dir / name).is_file(), name
    data = json.loads((out_dir / "results.json").read_text())
    assert data["variant"] == "legacy_ard_ri" and data["seed"] == 1
    assert len(data["games"]) == 6 and len(data["legs"]) == 6
    assert {r["name"] for r in data["ratings"]["ratings"]} == set(AGENTS)
    assert data["ratings"]["anchor"] == "rand_a"
    assert [r for r in data["ratings"]["ratings"] if r["name"] == "rand_a"][0]["rating"] == 0.0
    assert len(data["pairings"]) == 3 and len(data["sides"]) == 6
    with open(out_dir / "games.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6 and rows[0]["attacker"] == "rand_a" and rows[0]["seed"] == str(res["legs"][0]["seed"])
    with open(out_dir / "ratings.csv") as fh:
        rrows = list(csv.reader(fh))
    assert rrows[0][:3] == ["name", "spec", "rating"] and len(rrows) == 1 + 3 + 1
    assert (out_dir / "ratings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    records = sorted((out_dir / "records").glob("*.txt"))
    assert len(records) == 6
    for path, g in zip(records, data["games"]):
        summary = _replay(path, ["legacy_ard_ri", "--max-turns", "40"])
        assert (summary["result"], summary["reason"], summary["turns"]) == (g["result"], g["reason"], g["turns"])
        # the same game as OpenTafl's record (read back here without a move cap)
        from tafl_env.opentafl import read_otg

        otg = read_otg(path.with_suffix(".otg").read_text())
        assert otg.game.turns == g["turns"] and otg.tags["attackers"] == g["attacker_spec"]
        assert otg.game.result == (None if g["reason"] == "truncated" else g["result"])
    gifs = list((out_dir / "gifs").glob("*.gif"))
    assert len(gifs) == 1


# --- GIF ------------------------------------------------------------------------------------------------

def test_export_gif_is_a_valid_animation(tmp_path):
    from PIL import Image

    moves = ["c5-c6", "c1-c2", "e5-f5", "e1-e2"]
    path = export_gif("legacy_ard_ri", moves, tmp_path / "g.gif", fps=5)
    assert path.read_bytes()[:6] in (b"GIF89a", b"GIF87a")
    with Image.open(path) as im:
        assert im.is_animated and im.n_frames == len(moves) + 1
        assert im.size[0] == im.size[1] > 0
        frames = []
        for k in range(im.n_frames):
            im.seek(k)
            frames.append(np.asarray(im.convert("RGB")))
    assert not np.array_equal(frames[0], frames[1])  # the first move changed the picture
    # coordinates around the board, and every move after the start framed in blue
    from tafl_env import render as R

    assert im.size[0] == 7 * 24 + R.margin_px(24)
    has = lambda f, c: bool(np.all(f == np.array(c), axis=-1).any())
    assert all(has(f, R.LABEL) for f in frames)
    assert not has(frames[0], R.LAST_MOVE) and all(has(f, R.LAST_MOVE) for f in frames[1:])
    with pytest.raises(ValueError):  # an illegal move in the list is an error
        export_gif("legacy_ard_ri", ["d1-d2"], tmp_path / "bad.gif")


# --- configs --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_shipped_configs_load_and_document_every_field(variant):
    path = CONFIGS / f"{variant}.yaml"
    cfg = load_tournament_config(path)
    assert cfg["variant"] == variant
    specs = list(cfg["agents"].values())
    assert "random" in specs and "greedy" in specs
    budgets = [int(s.split(":")[1]) for s in specs if s.split(":")[0] == "mcts" and s.count(":") == 1
               and s.split(":")[1].isdigit()]
    assert len(budgets) >= 2 and budgets == sorted(set(budgets))   # a ladder of search budgets
    from agents.pretrained import shipped_policies

    if variant in shipped_policies():   # the shipped policy plays, alone and as MCTS evaluator
        assert f"policy:{variant}" in specs
        assert any(s.startswith("mcts:") and s.endswith(f":policy:{variant}") for s in specs)
    text = path.read_text()
    for key in TOURNAMENT_SCHEMA:  # every field appears, each after a comment
        assert f"\n{key}:" in text, key
        before = text.split(f"\n{key}:")[0].rstrip().splitlines()[-1]
        assert before.startswith("#"), key


@pytest.mark.parametrize("path", sorted(CONFIGS.rglob("*.yaml")), ids=lambda p: str(p.relative_to(CONFIGS)))
def test_every_tournament_config_loads(path):
    """The strength comparisons and training-card evaluations in subfolders are checked like the ladders."""
    cfg = load_tournament_config(path)
    assert cfg["variant"] in VARIANTS and cfg["output_dir"].startswith("results/")


BASE = {"variant": "legacy_ard_ri", "agents": {"a": "random", "b": "random"}, "games_per_pair": 4}


@pytest.mark.parametrize("change,field,words", [
    ({"colour": "red"}, "colour", "unknown field"),
    ({"games_per_pair": "ten"}, "games_per_pair", "must be int"),
    ({"games_per_pair": 3}, "games_per_pair", "even"),
    ({"games_per_pair": 0}, "games_per_pair", "even"),
    ({"seed": True}, "seed", "must be int"),
    ({"seed": -1}, "seed", "from 0 to"),
    ({"max_turns": 0}, "max_turns", ">= 1"),
    ({"max_turns": 2.5}, "max_turns", "must be int or null"),
    ({"variant": "chess"}, "variant", "unknown variant"),
    ({"agents": ["random", "greedy"]}, "agents", "must be dict"),
    ({"agents": {"a": "random", "b": "alphazero"}}, "agents", "unknown agent 'alphazero'; known kinds"),
    ({"agents": {"a": "random", "b": "mcts:lots"}}, "agents", "simulations"),
    ({"agents": {"a": "random", "b": "mcts:16:fast"}}, "agents", "rollout"),
    ({"agents": {"a": "random", "b": "mcts:16:random:wide"}}, "agents", "prior"),
    ({"agents": {"a": "random", "b": 3}}, "agents", "spec"),
    ({"anchor": "zed"}, "anchor", "not one of the agents"),
    ({"bootstrap": -5}, "bootstrap", ">= 0"),
    ({"prior_sd": 0}, "prior_sd", ">= 1 (Elo)"),
    ({"records": "yes"}, "records", "must be bool"),
    ({"options": {"repetition": "sometimes"}}, "options", "repetition"),
    ({"options": {"no_such_rule": 1}}, "options", "no_such_rule"),
])
def test_config_validation_names_the_field(change, field, words):
    raw = dict(BASE, **change)
    with pytest.raises(ConfigError) as info:
        validate_tournament_config(raw)
    assert info.value.field == field
    assert repr(field) in str(info.value) and words in str(info.value)


def test_config_missing_field_defaults_and_yaml_errors(tmp_path):
    raw = dict(BASE)
    del raw["games_per_pair"]
    with pytest.raises(ConfigError, match="'games_per_pair': is required"):
        validate_tournament_config(raw)
    cfg = validate_tournament_config(dict(BASE))
    assert cfg["seed"] == 0 and cfg["output_dir"] == "runs/tournaments/legacy_ard_ri"  # never results/
    assert cfg["bootstrap"] > 0 and cfg["anchor"] is None and cfg["options"] == {}
    bad = tmp_path / "bad.yaml"
    bad.write_text("variant: legacy_ard_ri\nagents: {a: random, b: random}\ngames_per_pair: 4\nfoo: 1\n")
    with pytest.raises(ConfigError, match="'foo': unknown field") as info:
        load_tournament_config(bad)
    assert str(bad) in str(info.value)
    bad.write_text("variant: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_tournament_config(bad)
    with pytest.raises(ConfigError):
        load_tournament_config(tmp_path / "missing.yaml")


# --- tafl eval ------------------------------------------------------------------------------------------

def _write_config(tmp_path, **extra):
    cfg = tmp_path / "t.yaml"
    body = ("variant: legacy_ard_ri\nagents:\n  r1: random\n  r2: random\n  r3: random\n"
            "games_per_pair: 6\nseed: 4\nmax_turns: 40\nbootstrap: 20\nanchor: r1\n"
            f"output_dir: {tmp_path / 'default_out'}\n")
    body += "".join(f"{k}: {v}\n" for k, v in extra.items())
    cfg.write_text(body)
    return cfg


def test_tafl_eval_end_to_end(tmp_path):
    cfg = _write_config(tmp_path)
    out = tmp_path / "out"
    code, stdout, err = run_cli(["eval", "--config", str(cfg), "--games", "2", "--out", str(out),
                                 "--json", "--no-progress", "--records"])
    assert code == 0, err
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["games"] == 3 * 2 and summary["variant"] == "legacy_ard_ri"
    assert {r["name"] for r in summary["ratings"]} == {"r1", "r2", "r3"}
    assert summary["out"] == str(out)
    assert (out / "results.json").is_file() and len(list((out / "records").glob("*.txt"))) == 6
    assert not (tmp_path / "default_out").exists()
    # the same config and seed give the same games
    code, stdout2, _ = run_cli(["eval", "--config", str(cfg), "--games", "2", "--out", str(tmp_path / "o2"),
                                "--json", "--no-progress"])
    a = json.loads((out / "results.json").read_text())["games"]
    b = json.loads((tmp_path / "o2" / "results.json").read_text())["games"]
    assert a == b
    # --agents picks a subset
    code, stdout, err = run_cli(["eval", "--config", str(cfg), "--games", "2", "--out", str(tmp_path / "o3"),
                                 "--agents", "r2", "r3", "--json", "--no-progress"])
    assert code == 0, err
    assert json.loads(stdout.strip().splitlines()[-1])["games"] == 2


def test_tafl_eval_errors_name_the_problem(tmp_path):
    cfg = _write_config(tmp_path, colour="red")
    code, _, err = run_cli(["eval", "--config", str(cfg), "--no-progress"])
    assert code == 2 and "'colour'" in err and "unknown field" in err and "Traceback" not in err
    cfg = _write_config(tmp_path)
    code, _, err = run_cli(["eval", "--config", str(cfg), "--games", "3", "--no-progress"])
    assert code == 2 and "'games_per_pair'" in err
    code, _, err = run_cli(["eval", "--config", str(cfg), "--agents", "r1", "nobody", "--no-progress"])
    assert code == 2 and "nobody" in err
    code, _, err = run_cli(["eval", "--config", str(tmp_path / "none.yaml")])
    assert code == 2 and "cannot read" in err


def test_agent_spec_errors_are_reported():
    with pytest.raises(AgentSpecError, match="agent .b.: .*nosuch"):
        round_robin("legacy_ard_ri", {"a": "random", "b": "nosuch"}, 2, progress=False)


def test_round_robin_with_the_greedy_agent(tmp_path):
    pytest.importorskip("agents.greedy")
    out_dir = tmp_path / "g"
    res = round_robin("legacy_ard_ri", {"random": "random", "greedy": "greedy"}, 4, seed=2, out_dir=out_dir,
                      records=True, progress=False, bootstrap=10, anchor="random")
    by = {r["name"]: r for r in res["ratings"]["ratings"]}
    assert by["random"]["rating"] == 0.0 and by["greedy"]["games"] == 4
    for path, g in zip(sorted((out_dir / "records").glob("*.txt")), res["games"]):
        summary = _replay(path, ["legacy_ard_ri", "--max-turns", "150"])
        assert (summary["result"], summary["reason"], summary["turns"]) == (g["result"], g["reason"], g["turns"])


# --- the split harness and agent specs ------------------------------------------------------------------

@pytest.mark.parametrize("spec,words", [
    ("random:5", "takes no argument"), ("greedy:x", "takes no argument"), (None, "must be a non-empty string"),
    ("", "must be a non-empty string"), (3, "must be a non-empty string"), ("alphazero", "unknown agent"),
])
def test_bad_agent_specs_are_rejected_clearly(spec, words):
    with pytest.raises(AgentSpecError, match=words):
        make_agent(spec)
    with pytest.raises(ValueError):   # AgentSpecError is a ValueError
        make_agent(spec)


def test_config_rejects_arguments_the_agent_ignores():
    with pytest.raises(ConfigError, match="takes no argument"):
        validate_tournament_config(dict(BASE, agents={"a": "random:5", "b": "greedy"}))


def test_recorded_moves_are_the_engines_notation():
    # play_games writes moves through the engine's decode and format_move: the same text as Game
    from tafl_env.game import Game

    for variant in ("legacy_berserk", "historical_tablut"):
        (g,) = play_games(variant, make_agent("random"), make_agent("random"), 1, seed=3, record=True,
                          max_turns=60)
        game = Game(variant, max_turns=60)
        for text in g["moves"]:
            assert game.push(text).notation == text
        assert (game.result, game.turns) == (g["result"], g["turns"])
