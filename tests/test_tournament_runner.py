"""Tournaments through the chunk runner: paired openings, chunk seeds, ``jobs`` and the
``openings`` field of a tournament config."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from agents import Agent, make_agent
from agents.evaluation.matches import chunk_seed
from agents.evaluation.openings import load_openings
from agents.evaluation.play import play_games
from agents.evaluation.tournament import leg_chunks, round_robin, validate_tournament_config
from agents.schema import ConfigError
from tafl_env.cli import main

VARIANT = "legacy_ard_ri"
SUITE = load_openings(VARIANT)


class FirstLegal(Agent):
    """Always the lowest legal action id: it chooses deterministically, whatever its seed."""

    name = "first"

    def act(self, engine, state):
        out = np.argmax(engine.legal_action_mask(state), axis=1).astype(np.int64)
        out[state.done] = -1
        return out


def first_factory(spec, seed):
    return FirstLegal(seed) if spec == "first" else make_agent(spec, seed=seed)


def _records(folder: Path) -> list[list[str]]:
    """The move lists of a run's records/, in game order."""
    return [[line for line in p.read_text().splitlines() if line and not line.startswith("#")]
            for p in sorted((folder / "records").glob("*.txt"))]


def _run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# --- chunks and seeds -------------------------------------------------------------------------------

def test_leg_chunks_split_the_leg_and_pair_the_openings():
    players = {"a": "random", "b": "greedy"}
    chunks = leg_chunks(players, "a", "b", 10, 5, SUITE[:3], 4, record=True)
    assert [len(c.openings) for c in chunks] == [4, 4, 2]
    assert [g for c in chunks for g in c.openings] == [k % 3 for k in range(10)]
    assert all(c.moves == tuple(tuple(SUITE[i]) for i in c.openings) for c in chunks)
    assert [c.seed for c in chunks] == [chunk_seed(5, "a", "b", k) for k in range(3)]
    assert all(c.record and c.attacker_agent == "random" and c.defender_agent == "greedy" for c in chunks)
    back = leg_chunks(players, "b", "a", 10, 5, SUITE[:3], 4)
    assert [c.openings for c in back] == [c.openings for c in chunks]      # the same openings each way round
    assert {c.seed for c in back}.isdisjoint(c.seed for c in chunks)
    start = leg_chunks(players, "a", "b", 3, 5, None, 8)
    assert start[0].openings == (None, None, None) and start[0].moves == ((), (), ())


def test_chunk_size_defaults_to_a_block_and_follows_batch_size():
    agents = {"r1": "random", "r2": "random"}
    out = round_robin(VARIANT, agents, 20, seed=3, max_turns=12, progress=False, bootstrap=0)
    assert out["chunk_size"] == 8 and [leg["chunks"] for leg in out["legs"]] == [2, 2]
    rows = [g for g in out["games"] if g["leg"] == 0]
    assert [g["chunk"] for g in rows] == [0] * 8 + [1] * 2
    assert [g["seed"] for g in rows] == [chunk_seed(3, "r1", "r2", 0)] * 8 + [chunk_seed(3, "r1", "r2", 1)] * 2
    small = round_robin(VARIANT, agents, 20, seed=3, max_turns=12, progress=False, bootstrap=0, batch_size=3)
    assert [leg["chunks"] for leg in small["legs"]] == [4, 4]
    assert out["openings"] == {"source": "suite", "count": len(SUITE)}


def test_a_pair_plays_the_same_games_whoever_else_plays():
    """Chunk seeds come from the agents' names, so leaving an agent out changes no other pair's games."""
    three = round_robin(VARIANT, {"a": "random", "b": "random", "c": "random"}, 4, seed=1, max_turns=20,
                        progress=False, bootstrap=0)
    two = round_robin(VARIANT, {"a": "random", "c": "random"}, 4, seed=1, max_turns=20, progress=False,
                      bootstrap=0)
    keep = ("attacker", "defender", "seed", "opening", "result", "reason", "turns")
    pick = lambda games: [{k: g[k] for k in keep} for g in games if {g["attacker"], g["defender"]} == {"a", "c"}]
    assert pick(three["games"]) == pick(two["games"]) and len(pick(two["games"])) == 4


# --- openings ---------------------------------------------------------------------------------------

def test_deterministic_agents_play_distinct_games_from_paired_openings(tmp_path):
    out = round_robin(VARIANT, {"f1": "first", "f2": "first"}, 8, seed=0, max_turns=40, out_dir=tmp_path / "s",
                      records=True, progress=False, bootstrap=0, agent_factory=first_factory)
    games, moves = out["games"], _records(tmp_path / "s")
    assert len(moves) == 8 and [g["opening"] for g in games] == [0, 1, 2, 3] * 2
    for leg in out["legs"]:
        mine = [tuple(m) for m in moves[leg["first_game"]: leg["first_game"] + leg["games"]]]
        assert len(set(mine)) == len(mine) == 4, "one distinct game per opening"
    for g, m in zip(games, moves):      # each game begins with its opening, the same one each way round
        assert m[:len(SUITE[g["opening"]])] == SUITE[g["opening"]]


def test_openings_start_plays_every_game_from_the_start(tmp_path):
    cfg = validate_tournament_config({"variant": VARIANT, "agents": {"a": "random", "b": "greedy"},
                                      "games_per_pair": 6, "openings": "start"})
    assert cfg["openings"] == "start"
    out = round_robin(VARIANT, {"f1": "first", "f2": "first"}, 6, seed=0, max_turns=40, out_dir=tmp_path / "s",
                      records=True, progress=False, bootstrap=0, agent_factory=first_factory,
                      openings=cfg["openings"])
    moves = _records(tmp_path / "s")
    (from_start,) = play_games(VARIANT, FirstLegal(), FirstLegal(), 1, max_turns=40, record=True)
    assert all(g["opening"] is None for g in out["games"]) and out["openings"]["count"] == 0
    assert moves == [from_start["moves"]] * 6       # the same game over and over: both choose deterministically
    header = next((tmp_path / "s" / "records").glob("*.txt")).read_text()
    assert "# opening: none (from the start position)" in header


def test_openings_may_be_a_suite_file_or_move_lists(tmp_path):
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"variant": VARIANT, "openings": [{"moves": m} for m in SUITE[5:7]]}))
    cfg = validate_tournament_config({"variant": VARIANT, "agents": {"a": "random", "b": "random"},
                                      "games_per_pair": 6, "openings": str(path)})
    from_file = round_robin(VARIANT, cfg["agents"], 6, seed=2, max_turns=16, progress=False, bootstrap=0,
                            openings=cfg["openings"])
    from_lists = round_robin(VARIANT, cfg["agents"], 6, seed=2, max_turns=16, progress=False, bootstrap=0,
                             openings=SUITE[5:7])
    assert [g["opening"] for g in from_file["games"]] == [0, 1, 0] * 2
    assert from_file["games"] == from_lists["games"]
    assert from_file["openings"] == {"source": str(path), "count": 2}


@pytest.mark.parametrize("value,words", [
    ("", "must not be empty"),
    ("no/such/suite.json", "no file"),
    ("{other}", "not 'legacy_ard_ri'"),
    ("{garbage}", "cannot read the opening suite"),
    ("{illegal}", "opening 0, move"),
    (3, "must be str"),
])
def test_a_bad_openings_value_is_refused_by_the_config_check(tmp_path, value, words):
    files = {"{other}": json.dumps({"variant": "historical_tablut", "openings": [{"moves": []}]}),
             "{garbage}": "not json", "{illegal}": json.dumps({"variant": VARIANT, "openings": [{"moves": ["a1-a9"]}]})}
    if value in files:
        path = tmp_path / "suite.json"
        path.write_text(files[value])
        value = str(path)
    with pytest.raises(ConfigError) as info:
        validate_tournament_config({"variant": VARIANT, "agents": {"a": "random", "b": "random"},
                                    "games_per_pair": 2, "openings": value})
    assert info.value.field == "openings" and "'openings'" in str(info.value)
    assert words in str(info.value) and "\n" not in str(info.value)


# --- where the chunks play --------------------------------------------------------------------------

class Unpicklable(FirstLegal):
    def __reduce__(self):
        raise TypeError("this agent stays in its process")


def test_an_unpicklable_agent_plays_here_only():
    factory = lambda spec, seed: Unpicklable(seed) if spec == "first" else make_agent(spec, seed=seed)
    with pytest.raises(TypeError):
        pickle.dumps(Unpicklable())
    out = round_robin(VARIANT, {"f": "first", "r": "random"}, 2, max_turns=12, progress=False, bootstrap=0,
                      agent_factory=factory)
    assert len(out["games"]) == 2
    with pytest.raises(ValueError, match="agent 'f' cannot be sent to worker processes"):
        round_robin(VARIANT, {"f": "first", "r": "random"}, 2, progress=False, agent_factory=factory, jobs=2)
    with pytest.raises(ValueError, match="jobs"):
        round_robin(VARIANT, {"f": "random", "r": "random"}, 2, progress=False, jobs=0)


def test_eval_with_two_jobs_plays_the_games_of_one(tmp_path):
    cfg = tmp_path / "t.yaml"
    cfg.write_text(f"variant: {VARIANT}\nagents:\n  random: random\n  greedy: greedy\ngames_per_pair: 8\n"
                   "seed: 6\nmax_turns: 40\nbatch_size: 2\nbootstrap: 0\nrecords: true\n")
    runs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        code, stdout, err = _run_cli(["eval", "--config", str(cfg), "--jobs", jobs, "--out", str(out),
                                      "--no-progress", "--json"])
        assert code == 0, err
        runs[jobs] = json.loads((out / "results.json").read_text())
        assert [leg["chunks"] for leg in runs[jobs]["legs"]] == [2, 2]
    one, two = runs["1"], runs["2"]
    assert one["games"] == two["games"] and len(one["games"]) == 8
    assert one["pairings"] == two["pairings"] and one["ratings"] == two["ratings"]
    assert (tmp_path / "jobs1" / "games.csv").read_text() == (tmp_path / "jobs2" / "games.csv").read_text()
    assert _records(tmp_path / "jobs1") == _records(tmp_path / "jobs2")
    code, _, err = _run_cli(["eval", "--config", str(cfg), "--jobs", "0", "--no-progress"])
    assert code == 2 and "--jobs" in err
