"""The benchmark standard: openings, fixed-anchor ratings, paired games, the anchor
build, adapters for any agent, bad agents' one-line errors and ``tafl rate``.

Games here use cheap agents (random, greedy, a few MCTS simulations) and small anchor tables made
in the test, so every test is quick after the engine and search kernels are compiled.
"""

from __future__ import annotations

import json
import math
import pickle
from collections import Counter

import numpy as np
import pytest

from agents import make_agent
from agents.evaluation.adapters import AgentError, CallableAgent, GuardedAgent, agent_source
from agents.evaluation.anchors import (ANCHORS, build_anchors, games_path, load_anchors, out_of_order,
                                       round_chunks, schedule)
from agents.evaluation.matches import ChunkRunner
from agents.evaluation.openings import load_openings, openings_path
from agents.evaluation.play import opening_states, play_games
from agents.evaluation.rate import FAR_ELO, RATED, choose_anchors, rate, sprt_llr
from agents.evaluation.ratings import ELO_SCALE, elo_difference, ratings_against_fixed
from tafl_env.game import Game, engine_for
from tafl_env.rules import VARIANTS, make_rules

VARIANT = "legacy_ard_ri"


def table(*anchors, h=0.0):
    """An anchor table as the anchor file holds it: (name, spec, rating) triples."""
    return {"variant": VARIANT, "anchors": [{"name": n, "spec": s, "rating": r} for n, s, r in anchors],
            "side_advantage": {"elo": h}}


RANDOM_ONLY = table(("rnd", "random", 500.0))
LADDER = table(("rnd", "random", 0.0), ("greedy", "greedy", 1000.0), ("m8", "mcts:8", 1300.0), h=-300.0)


def first_legal(observation, action_mask):
    return int(np.flatnonzero(action_mask)[0])


# --- rating maths -----------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_known_scores_give_known_elo(p):
    """Against one anchor at 1000, a score p (on both sides, no side term) is 1000 + Elo(p)."""
    n = 1000
    wins = round(p * n)
    games = [{"attacker": "x", "defender": "a", "result": "attacker" if k < wins else "defender"} for k in range(n)]
    row = ratings_against_fixed(games, {"a": 1000.0}, 0.0, prior_sd=None)["ratings"][0]
    assert row["rating"] == pytest.approx(1000 + elo_difference(wins / n), abs=0.01)
    assert row["low"] < row["rating"] < row["high"]


def test_the_side_term_is_held_and_pairs_cancel_it():
    """Scores q attacking and q defending against an equal opponent, whatever h: the paired
    design puts the rated agent on the anchor; with h the anchor fit's, attacking alone is exact."""
    h = -300.0
    q = 1 / (1 + 10 ** (-h / 400))                      # the attackers' expected score at equal strength
    att = [{"attacker": "x", "defender": "a", "result": "attacker" if k < round(q * 1000) else "defender"}
           for k in range(1000)]
    dfd = [{"attacker": "a", "defender": "x", "result": "attacker" if k < round(q * 1000) else "defender"}
           for k in range(1000)]
    for wrong_h in (0.0, h, 200.0):
        row = ratings_against_fixed(att + dfd, {"a": 1000.0}, wrong_h, prior_sd=None)["ratings"][0]
        assert row["rating"] == pytest.approx(1000.0, abs=1e-6)
    alone = ratings_against_fixed(att, {"a": 1000.0}, h, prior_sd=None)["ratings"][0]
    assert alone["rating"] == pytest.approx(1000.0, abs=1.0)


def test_the_interval_narrows_with_games_and_a_perfect_score_stays_finite():
    few = [{"attacker": "x", "defender": "a", "result": "attacker"}] * 8
    many = [{"attacker": "x", "defender": "a", "result": r} for r in ["attacker", "defender"] * 400]
    r_few = ratings_against_fixed(few, {"a": 1000.0}, 0.0, prior_mean=1000.0)["ratings"][0]
    r_many = ratings_against_fixed(many, {"a": 1000.0}, 0.0, prior_mean=1000.0)["ratings"][0]
    assert math.isfinite(r_few["rating"]) and r_few["rating"] > 1000 and r_few["low"] > 1000
    assert r_many["high"] - r_many["low"] < 100 < r_few["high"] - r_few["low"]


def test_sprt_decides_both_ways():
    rows = lambda att_result: [{"attacker": a, "defender": d, "result": r, "opening": k, "block": 0}
                               for k in range(60) for a, d, r in
                               [(RATED, "x", att_result), ("x", RATED, "defender" if k % 3 else "attacker")]]
    strong = sprt_llr(rows("attacker"), {"x": 1000.0}, 0.0, 1000, 1150, 1200)
    weak = sprt_llr(rows("defender"), {"x": 1000.0}, 0.0, 1000, 1150, 900)
    assert strong > math.log(0.95 / 0.05) and weak < math.log(0.05 / 0.95)


def test_choose_anchors_brackets_the_estimate_and_passes_over_a_far_anchor():
    ladder = [("a", 0.0), ("b", 1000.0), ("c", 1300.0), ("d", 1800.0)]
    assert choose_anchors(1100, ladder) == ["b", "c"]
    assert choose_anchors(1550, ladder) == ["c", "d"]
    assert choose_anchors(-50, ladder) == ["a", "b"]
    assert choose_anchors(5000, ladder) == ["c", "d"]
    # a bracketing anchor over FAR_ELO away gives way to the next nearest on the other side
    assert choose_anchors(950, ladder) == ["b", "c"]
    assert choose_anchors(1300, ladder) == choose_anchors(1350, ladder) == ["b", "c"]
    # ... unless the far one is still among the two nearest (both far, or no nearer one beyond)
    assert choose_anchors(500, ladder) == ["a", "b"]
    assert choose_anchors(1000 - FAR_ELO, ladder) == ["a", "b"]


def test_an_agent_just_under_an_anchor_above_random_plays_no_games_against_random():
    """greedy starts at 1000, just under the 1010 anchor whose only neighbour below is random,
    1600 Elo away: it plays the two anchors above, never random, whose games would say nothing."""
    ladder = table(("rnd", "random", -600.0), ("g", "greedy", 1010.0), ("g2", "greedy", 1300.0))
    r = rate("greedy", VARIANT, anchors=ladder, games=96, seed=4)
    assert {o["name"] for o in r.opponents} == {"g", "g2"}
    assert not any("rnd" in (g["attacker"], g["defender"]) for g in r.records) and len(r.records) == 96


# --- openings ---------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_shipped_suites_are_distinct_playable_and_capture_free(variant):
    suite = load_openings(variant)
    data = json.loads(openings_path(variant).read_text())
    assert len(suite) == data["arguments"]["count"] >= 32
    state = opening_states(engine_for(make_rules(variant)), suite)
    assert not state.done.any() and (state.chain < 0).all()
    assert len(set(state.key.tolist())) == len(suite)
    start = Game(variant)
    pieces = int((start.state.board[0] != 0).sum())
    assert ((state.board != 0).sum(axis=1) == pieces).all()
    for o in data["openings"][:4]:
        g = Game(variant)
        for m in o["moves"]:
            g.push(m)
        assert g.position == o["position"] and g.to_move == o["to_move"]


def test_play_games_starts_from_openings_and_records_them():
    suite = load_openings(VARIANT)[:3]
    res = play_games(VARIANT, make_agent("random"), make_agent("random"), 3, seed=1, record=True, openings=suite)
    for r, o in zip(res, suite):
        assert r["moves"][:len(o)] == o and r["turns"] >= len(o)
        g = Game(VARIANT)
        for m in r["moves"]:
            g.push(m)
        assert g.is_over() and g.result == r["result"]
    with pytest.raises(ValueError, match="one opening per game"):
        play_games(VARIANT, make_agent("random"), make_agent("random"), 2, openings=suite)


# --- rating real games ------------------------------------------------------------------------

def test_a_coin_flip_agent_rates_at_its_anchor():
    """random against random: the rating is the anchor's, inside the interval."""
    r = rate("random", VARIANT, anchors=RANDOM_ONLY, games=96, seed=3)
    assert r.games == 96 and r.low < 500.0 < r.high
    assert r.opponents[0]["wins"] + r.opponents[0]["draws"] + r.opponents[0]["losses"] == 96


def test_each_opening_is_played_once_on_each_side_per_anchor_and_block():
    r = rate("greedy", VARIANT, anchors=LADDER, games=64, seed=5)
    sides = Counter((g["attacker"] == RATED, g["attacker"] if g["defender"] == RATED else g["defender"],
                     g["opening"], g["block"]) for g in r.records)
    assert set(sides.values()) == {1}
    pairs = Counter((anchor, opening, block) for _, anchor, opening, block in sides)
    assert set(pairs.values()) == {2} and len(r.records) == 64
    assert {o["name"] for o in r.opponents} <= {"greedy", "m8", "rnd"}
    text = str(r)
    assert "as attacker" in text and "W-D-L" in text and "greedy" in text


GREEDY_LADDER = table(("rnd", "random", 0.0), ("g", "greedy", 1000.0), ("g2", "greedy", 1200.0), h=-300.0)


def test_the_same_seed_gives_the_same_rating():
    """greedy breaks ties at random: the seed decides its games, and the same seed the same ones."""
    a = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=32, seed=11)
    b = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=32, seed=11)
    assert a.records == b.records and a.elo == b.elo and (a.low, a.high) == (b.low, b.high)
    c = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=32, seed=12)
    assert c.records != a.records


def test_workers_give_the_same_games():
    one = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=32, seed=7)
    two = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=32, seed=7, jobs=2)
    assert one.records == two.records and one.elo == two.elo


@pytest.mark.slow
def test_a_search_agent_is_reproducible_across_workers():
    one = rate("mcts:8", VARIANT, anchors=LADDER, games=64, seed=7)
    two = rate("mcts:8", VARIANT, anchors=LADDER, games=64, seed=7, jobs=2)
    assert one.records == two.records and one.elo == two.elo and one.elo > 1000


def test_target_ci_and_sprt_stop_early():
    r = rate("greedy", VARIANT, anchors=table(("rnd", "random", 0.0), ("g", "greedy", 1000.0)), games=2000,
             sprt=(0.0, 1000.0), seed=2)
    assert r.stopped == "SPRT: H1 accepted" and r.games < 2000 and r.sprt["llr"] >= r.sprt["upper"]
    wide = rate("random", VARIANT, anchors=RANDOM_ONLY, games=2000, target_ci=400, seed=2)
    assert wide.stopped.startswith("target") and max(wide.elo - wide.low, wide.high - wide.elo) <= 400


def test_a_plain_callable_is_rated():
    r = rate(first_legal, VARIANT, anchors=RANDOM_ONLY, games=16, seed=1)
    assert r.agent == "first_legal" and r.games == 16


def test_an_sb3_model_is_rated_and_one_for_another_variant_is_refused():
    sb3 = pytest.importorskip("sb3_contrib")
    from agents.ppo.policy import resolve_model_path

    model = sb3.MaskablePPO.load(str(resolve_model_path(VARIANT)), device="cpu")
    r = rate(model, VARIANT, anchors=RANDOM_ONLY, games=16, seed=1)
    assert r.agent == "sb3:MaskablePPO" and r.games == 16
    tablut = {**RANDOM_ONLY, "variant": "historical_tablut"}
    with pytest.raises(AgentError, match=r"^sb3:MaskablePPO takes observations of shape \(7, 7, 14\); "
                                         r"historical_tablut gives \(9, 9, 14\)$"):
        rate(model, "historical_tablut", anchors=tablut, games=16, openings=[[]] * 8)


# --- broken agents --------------------------------------------------------------------------

def boom(observation, action_mask):
    raise RuntimeError("out of coffee")


@pytest.mark.parametrize("agent, message", [
    (boom, r"^agent boom failed in legacy_ard_ri: RuntimeError: out of coffee$"),
    (lambda obs, mask: 0, r"^agent <lambda> played an illegal move in legacy_ard_ri: action 0 \(.*\)$"),
    (lambda obs, mask: 10 ** 6, r"^agent <lambda> played an illegal move .*action 1000000 .*out of range"),
    ("policy:historical_tablut", r"policy:historical_tablut plays a 9x9 board; legacy_ard_ri is 7x7"),
    ("mcts:lots", r"mcts simulations must be an integer"),
    (42, r"^cannot rate int object"),
])
def test_a_broken_agent_stops_the_rating_with_one_line(agent, message):
    with pytest.raises((AgentError, ValueError), match=message) as err:
        rate(agent, VARIANT, anchors=RANDOM_ONLY, games=16)
    assert "\n" not in str(err.value)


def test_guarded_agent_pickles_a_spec_without_its_built_agent():
    import pickle

    g = GuardedAgent("greedy", "greedy")
    assert g.inner is not None and pickle.loads(pickle.dumps(g))._inner is None
    src, label = agent_source("mcts:100:policy:x.zip", time_per_move=0.25)
    assert str(src) == label == "mcts:0.25s:policy:x.zip" and src.seconds == 0.25
    src, _ = agent_source(make_agent("mcts:50"), time_per_move=0.5)
    assert src.seconds == 0.5


# --- the anchor build -----------------------------------------------------------------------

def test_the_anchor_build_resumes_and_matches_a_fresh_build(tmp_path):
    tiny = {"random": "random", "greedy": "greedy", "m4": "mcts:4"}
    one = build_anchors(VARIANT, anchors=tiny, max_rounds=1, root=tmp_path / "a", out=tmp_path / "a.json",
                        progress=False)
    path = games_path(VARIANT, tmp_path / "a")
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + 6 and one["rounds"] == 1 and one["games"] == 48
    with path.open("a") as f:               # a run killed while writing leaves a torn line
        f.write('{"key": "r1:random>gre')
    two = build_anchors(VARIANT, anchors=tiny, max_rounds=2, root=tmp_path / "a", out=tmp_path / "a.json",
                        progress=False)
    fresh = build_anchors(VARIANT, anchors=tiny, max_rounds=2, root=tmp_path / "b", out=tmp_path / "b.json",
                          progress=False)
    untimed = lambda res: [{k: v for k, v in a.items() if k != "ms_per_move"} for a in res["anchors"]]
    assert untimed(two) == untimed(fresh) and two["games"] == 48 + 32
    written = json.loads((tmp_path / "a.json").read_text())
    assert written["pin"] == {"name": "greedy", "rating": 1000.0}
    assert [a for a in written["anchors"] if a["name"] == "greedy"][0]["rating"] == 1000.0
    assert written["out_of_order"] == out_of_order(written["anchors"])
    assert written["ordered_by_budget"] == (written["out_of_order"] == [])
    with pytest.raises(ValueError, match="other settings"):
        build_anchors(VARIANT, anchors=tiny, seed=1, max_rounds=1, root=tmp_path / "a", out=tmp_path / "c.json",
                      progress=False)
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_stopped_runner_finishes_the_running_chunks_and_starts_no_more(jobs):
    tiny = {"random": "random", "greedy": "greedy", "m4": "mcts:4"}
    chunks = round_chunks(VARIANT, tiny, load_openings(VARIANT), 0, 0)
    with ChunkRunner(make_rules(VARIANT), jobs) as runner:
        everything = runner.run(chunks)
        seen = []
        some = runner.run(chunks, on_done=seen.append, stop=lambda: len(seen) >= 1)
    # one worker: the first chunk only; two: the two started before the first one finished
    assert [r.chunk.key for r in some] == [c.key for c in chunks[:jobs]]
    assert sorted(r.chunk.key for r in seen) == sorted(r.chunk.key for r in some)
    assert [r.games for r in some] == [r.games for r in everything[:jobs]]


def test_an_agent_built_in_a_process_moves_once_untimed_and_its_games_do_not_change(monkeypatch):
    """Each spec's agent is built once a process and makes one untimed move then (compiling its
    kernels outside the time a move that chunks record); chunks reset it from their own seeds, so
    their games are those of an agent that never made that move."""
    from agents.evaluation import matches

    chunks = round_chunks(VARIANT, {"greedy": "greedy", "m4": "mcts:4"}, load_openings(VARIANT), 0, 0)
    monkeypatch.setattr(matches, "_CACHE", {})
    warmed = [matches.play_chunk(make_rules(VARIANT), c).games for c in chunks]
    moved = []
    monkeypatch.setattr(matches, "_CACHE", {})
    monkeypatch.setattr(matches, "_first_move", lambda agent, rules: moved.append(agent.name))
    unmoved = [matches.play_chunk(make_rules(VARIANT), c).games for c in chunks]
    assert unmoved == warmed
    assert sorted(moved) == sorted(a.name for a in matches._CACHE.values()) and len(moved) == 4


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_rated_spec_moves_once_untimed_where_it_plays_and_its_rating_does_not_change(monkeypatch, jobs):
    """The rated agent, built from a spec, makes one untimed move once it is checked (its kernels
    compiled outside any time budget), in the workers too; its games are unchanged by it."""
    from agents.evaluation import adapters, matches

    monkeypatch.setattr(matches, "_CACHE", {})
    warmed = rate("mcts:4", VARIANT, anchors=GREEDY_LADDER, games=16, seed=7, jobs=jobs)
    moved = []
    monkeypatch.setattr(matches, "_CACHE", {})
    monkeypatch.setattr(matches, "_first_move", lambda agent, rules: moved.append(agent.name))
    unmoved = rate("mcts:4", VARIANT, anchors=GREEDY_LADDER, games=16, seed=7, jobs=jobs)
    untimed = lambda r: {k: v for k, v in r.to_dict().items() if k != "seconds"}
    assert untimed(unmoved) == untimed(warmed)
    assert moved.count("mcts:4") == 1      # here; a worker's move is in its own process
    guarded = adapters.GuardedAgent("mcts:4", "mcts:4")
    guarded.check_rules(make_rules(VARIANT))
    assert guarded._rules is not None and pickle.loads(pickle.dumps(guarded))._rules == guarded._rules


def test_a_build_past_its_deadline_starts_nothing_and_a_later_one_plays_on(tmp_path):
    tiny = {"random": "random", "greedy": "greedy", "m4": "mcts:4"}
    with pytest.raises(ValueError, match="no games of this ladder"):   # past its deadline at once: nothing to fit
        build_anchors(VARIANT, anchors=tiny, jobs=2, max_minutes=1e-9, root=tmp_path / "a", out=tmp_path / "a.json",
                      progress=False)
    assert not (tmp_path / "a.json").exists() and games_path(VARIANT, tmp_path / "a").read_text().count("\n") == 1
    on = build_anchors(VARIANT, anchors=tiny, jobs=2, max_rounds=1, root=tmp_path / "a", out=tmp_path / "a.json",
                       progress=False)
    fresh = build_anchors(VARIANT, anchors=tiny, max_rounds=1, root=tmp_path / "b", out=tmp_path / "b.json",
                          progress=False)
    untimed = lambda res: [{k: v for k, v in a.items() if k != "ms_per_move"} for a in res["anchors"]]
    assert on["games"] == 48 and untimed(on) == untimed(fresh)


class _InstantRunner:
    """A ChunkRunner that draws every game at once, in the order given, and keeps each run's list."""

    windows: list[list[str]] = []

    def __init__(self, rules, jobs=1, ray=False):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def run(self, chunks, on_done=None, stop=None):
        from agents.evaluation.matches import ChunkResult

        self.windows.append([c.key for c in chunks])
        out = []
        for c in chunks:
            if stop is not None and stop():
                break
            games = [{"attacker": c.attacker, "defender": c.defender, "opening": o, "result": "draw",
                      "reason": "truncated", "turns": 1, "chunk": c.key} for o in c.openings]
            out.append(ChunkResult(c, games, 0.0, {}))
            on_done(out[-1])
        return out


def test_a_round_is_followed_by_the_next_rounds_chunks_and_a_finished_build_fits_whole_rounds(tmp_path, monkeypatch):
    """Workers go on into the next round while a round's last chunk runs; the build still stops
    after the round that meets the target, and fits that round's games only."""
    from agents.evaluation import anchors as anchors_module

    tiny = {"random": "random", "greedy": "greedy", "m4": "mcts:4"}
    keys = lambda r: {c.key for c in round_chunks(VARIANT, tiny, load_openings(VARIANT), 2026, r)}
    monkeypatch.setattr(anchors_module, "ChunkRunner", _InstantRunner)
    _InstantRunner.windows = []
    two = build_anchors(VARIANT, anchors=tiny, target_ci=1e-9, max_rounds=2, root=tmp_path / "a",
                        out=tmp_path / "a.json", progress=False)
    first = _InstantRunner.windows[0]
    assert set(first) == keys(0) | keys(1) and set(first[:len(keys(0))]) == keys(0)
    assert two["rounds"] == 2 and two["stopped"] == "rounds" and two["games"] == 16 * len(keys(0) | keys(1)) // 2
    _InstantRunner.windows = []
    met = build_anchors(VARIANT, anchors=tiny, target_ci=10_000, root=tmp_path / "b", out=tmp_path / "b.json",
                        progress=False)
    assert met["rounds"] == 1 and met["stopped"] == "target" and met["games"] == 8 * len(keys(0))
    # a round-1 chunk already in the record (played while round 0 ended) is kept but not fitted
    chunk = min(round_chunks(VARIANT, tiny, load_openings(VARIANT), 2026, 1), key=lambda c: c.key)
    res = _InstantRunner(None).run([chunk], on_done=lambda r: None)[0]
    with games_path(VARIANT, tmp_path / "b").open("a") as f:
        f.write(json.dumps({"key": chunk.key, "attacker": chunk.attacker, "defender": chunk.defender, "seed": chunk.seed,
                            "seconds": 0.0, "timing": {}, "games": res.games}) + "\n")
    again = build_anchors(VARIANT, anchors=tiny, target_ci=10_000, play=False, root=tmp_path / "b",
                          out=tmp_path / "c.json", progress=False)
    assert again["games"] == met["games"] and again["anchors"] == met["anchors"]


def test_a_ladder_grows_at_its_top_and_keeps_its_games(tmp_path):
    tiny = {"random": "random", "greedy": "greedy", "m1": "mcts:1"}
    grown = {**tiny, "m2": "mcts:2"}
    build_anchors(VARIANT, anchors=tiny, max_rounds=1, root=tmp_path / "a", out=tmp_path / "a.json", progress=False)
    path = games_path(VARIANT, tmp_path / "a")
    kept = path.read_text().splitlines()[1:]
    two = build_anchors(VARIANT, anchors=grown, max_rounds=1, root=tmp_path / "a", out=tmp_path / "a.json",
                        progress=False)
    assert path.read_text().splitlines()[1:1 + len(kept)] == kept
    assert json.loads(path.read_text().splitlines()[0])["settings"]["anchors"] == grown
    fresh = build_anchors(VARIANT, anchors=grown, max_rounds=1, root=tmp_path / "b", out=tmp_path / "b.json",
                          progress=False)
    untimed = lambda res: [{k: v for k, v in a.items() if k != "ms_per_move"} for a in res["anchors"]]
    assert untimed(two) == untimed(fresh) and two["games"] == 6 * 16
    # a new anchor anywhere but the top would move the schedule of recorded pairs: refused
    with pytest.raises(ValueError, match="other settings"):
        build_anchors(VARIANT, anchors={"m0": "mcts:3", **grown}, max_rounds=1, root=tmp_path / "a",
                      out=tmp_path / "c.json", progress=False)


def test_a_grown_ladder_is_continued_without_naming_its_new_anchors(tmp_path, monkeypatch):
    tiny = {"random": "random", "greedy": "greedy", "m1": "mcts:1"}
    monkeypatch.setitem(ANCHORS, VARIANT, tiny)
    from agents.evaluation.anchors import main
    main(["build", VARIANT, "--max-rounds", "1", "--root", str(tmp_path), "--out", str(tmp_path / "a.json"),
          "--add", "m2=mcts:2"])
    path = games_path(VARIANT, tmp_path)
    assert json.loads(path.read_text().splitlines()[0])["settings"]["anchors"] == {**tiny, "m2": "mcts:2"}
    before = len(path.read_text().splitlines())
    res = build_anchors(VARIANT, max_rounds=2, root=tmp_path, out=tmp_path / "b.json", progress=False)
    assert [a["name"] for a in res["anchors"]].count("m2") == 1 and len(path.read_text().splitlines()) > before
    assert main(["build", VARIANT, "--root", str(tmp_path), "--add", "m2=mcts:3"]) == 2   # the name is taken


def test_the_schedule_plays_neighbours_most():
    names = list(ANCHORS[VARIANT])
    counts = Counter(p for r in range(8) for p in schedule(names, r))
    assert counts[(names[0], names[1])] == 8 and counts[(names[0], names[2])] == 4 and counts[(names[0], names[5])] == 1


# --- the command ----------------------------------------------------------------------------

def test_tafl_rate_prints_a_rating_and_json(tmp_path, capsys):
    from tafl_env.cli import main

    anchors = tmp_path / "anchors.json"
    anchors.write_text(json.dumps(LADDER))
    assert main(["rate", "greedy", "--variant", VARIANT, "--anchors", str(anchors), "--games", "32",
                 "--no-progress", "--json"]) == 0
    out = capsys.readouterr().out
    assert "greedy in legacy_ard_ri: Elo" in out and "as defender" in out
    data = json.loads(out.strip().splitlines()[-1])
    assert data["games"] == 32 and data["low"] < data["elo"] < data["high"]


def test_tafl_rate_with_a_stopping_rule_caps_at_2000_games_and_records_the_cap(tmp_path, monkeypatch):
    from tafl_env.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "anchors.json").write_text(json.dumps(RANDOM_ONLY))
    assert main(["rate", "random", "--variant", VARIANT, "--anchors", "anchors.json", "--target-ci", "400",
                 "--seed", "2", "--no-progress", "--leaderboard", "mine"]) == 0
    line = json.loads((tmp_path / "results" / "leaderboard.json").read_text())["variants"][VARIANT]["mine"]
    assert line["command"] == "tafl rate random --variant legacy_ard_ri --seed 2 --games 2000 --target-ci 400"
    assert line["stopped"].startswith("target") and line["games"] < 400


@pytest.mark.parametrize("argv, message", [
    (["policy:historical_tablut"], "policy:historical_tablut plays a 9x9 board"),
    (["greedy", "--sprt", "10", "5"], "--sprt needs ELO0 < ELO1"),
    (["nonsense"], "unknown agent 'nonsense'"),
])
def test_tafl_rate_bad_input_is_one_line(tmp_path, capsys, argv, message):
    from tafl_env.cli import main

    anchors = tmp_path / "anchors.json"
    anchors.write_text(json.dumps(RANDOM_ONLY))
    assert main(["rate", *argv, "--variant", VARIANT, "--anchors", str(anchors), "--games", "16",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_tafl_rate_without_anchors_names_the_command_that_builds_them(tmp_path, capsys):
    from tafl_env.cli import main

    missing = tmp_path / "none.json"
    assert main(["rate", "greedy", "--variant", VARIANT, "--anchors", str(missing), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"no anchors for {VARIANT}" in err
    assert f"python -m agents.evaluation.anchors build {VARIANT}" in err and not missing.exists()


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_ladder_climbs_from_random_through_greedy_to_at_least_three_search_budgets(variant):
    specs = list(ANCHORS[variant].values())
    assert specs[:3] == ["random", f"policy:{variant}", "greedy"]
    budgets = [int(spec.split(":")[1]) for spec in specs[3:]]
    assert all(spec.startswith("mcts:") for spec in specs[3:]) and len(budgets) >= 3
    assert budgets == sorted(set(budgets)) and list(ANCHORS[variant]) == ["random", "policy", "greedy"] + [
        f"mcts{n}" for n in budgets]
    for spec in specs:
        make_agent(spec)                   # every anchor is a spec the suite builds


def test_the_shipped_anchor_files_are_well_formed():
    for variant in VARIANTS:
        try:
            data = load_anchors(variant)
        except FileNotFoundError:
            continue
        names = [a["name"] for a in data["anchors"]]
        assert sorted(names) == sorted(ANCHORS[variant]) and data["pin"]["name"] == "greedy"
        assert {a["spec"] for a in data["anchors"]} == set(ANCHORS[variant].values())
        assert all(a["low"] <= a["rating"] <= a["high"] for a in data["anchors"])
        # the file's word on the ladder's order is its ratings' (files from before the check: ordered)
        assert data.get("out_of_order", []) == out_of_order(data["anchors"]), variant
        assert data.get("ordered_by_budget", True) == (not out_of_order(data["anchors"]))


@pytest.mark.slow
def test_ray_gives_the_same_games():
    pytest.importorskip("ray")
    local = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=32, seed=7)
    on_ray = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=32, seed=7, ray=True)
    assert local.records == on_ray.records and local.elo == on_ray.elo


# --- the leaderboard ------------------------------------------------------------------------

def test_the_leaderboard_names_search_rungs_out_of_budget_order():
    from agents.evaluation.leaderboard import _order_note

    row = lambda name, n, elo: {"name": name, "spec": f"mcts:{n}", "rating": elo, "low": elo - 40, "high": elo + 40}
    ordered = {"anchors": [row("mcts10", 10, 1050.0), row("mcts30", 30, 1100.0)]}
    inverted = {"anchors": [row("mcts10", 10, 1100.0), row("mcts30", 30, 1000.0)]}
    assert _order_note(ordered) == []
    assert _order_note(inverted) == ["", "Not ordered by budget: `mcts30` rates 100 Elo below `mcts10` "
                                         "(outside their intervals)."]


def test_a_leaderboard_line_is_added_and_replaced(tmp_path, capsys):
    from agents.evaluation.leaderboard import add_entry
    from tafl_env.cli import main

    board = tmp_path / "leaderboard.json"
    r = rate("greedy", VARIANT, anchors=GREEDY_LADDER, games=16, seed=1)
    add_entry(r, "my-greedy", spec="greedy", path=board)
    add_entry(r, "my-greedy", spec="greedy", path=board)
    data = json.loads(board.read_text())
    line = data["variants"][VARIANT]["my-greedy"]
    assert len(data["variants"][VARIANT]) == 1 and line["games"] == 16 and line["spec"] == "greedy"
    assert line["command"].startswith("tafl rate greedy --variant legacy_ard_ri --seed 1")
    md = board.with_suffix(".md").read_text()
    assert f"## {VARIANT}" in md and "| my-greedy | `greedy` |" in md
    assert not list(tmp_path.glob(".*.tmp"))
