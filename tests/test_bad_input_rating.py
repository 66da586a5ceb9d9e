"""Bad input to rating, the anchor build and the leaderboard: one line naming it, nothing changed.

Data files (anchor tables, the anchor record, the leaderboard) are read as data: a spec in them
never opts in to unpickling, an unreadable line never costs the lines after it, and a file is
left byte for byte as it was when the input is refused. Each test checks the one line, the exit
status from the command line and that nothing was written or run.
"""

from __future__ import annotations

import json
import multiprocessing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agents import base
from agents.evaluation import leaderboard
from agents.evaluation.adapters import AgentError
from agents.evaluation.anchors import build_anchors, games_path
from agents.evaluation.anchors import main as anchors_main
from agents.evaluation.rate import rate
from tafl_env.cli import main as tafl

ROOT = Path(__file__).resolve().parents[1]
VARIANT = "legacy_ard_ri"
UNPICKLING = ["unpickle-policy:evil.zip", "mcts:100:unpickle-policy:evil.zip", "rllib:some/dir"]


def table(*anchors, h=0.0):
    return {"variant": VARIANT, "anchors": [{"name": n, "spec": s, "rating": r} for n, s, r in anchors],
            "side_advantage": {"elo": h}}


def one_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    assert len(lines) == 1, text[:800]
    assert len(lines[0]) <= 600
    return lines[0]


@pytest.fixture
def no_unpickling(monkeypatch):
    """Every unpickling kind's factory replaced by one that records that it was called."""
    base.known_kinds()
    calls = []
    for kind in base.UNPICKLING_KINDS:
        monkeypatch.setitem(base._REGISTRY, kind, lambda arg, seed=None, _k=kind, **kw: calls.append((_k, arg)))
    return calls


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- specs in data files ---------------------------------------------------------------------------

@pytest.mark.parametrize("spec", UNPICKLING)
def test_an_anchor_file_cannot_ask_for_unpickling(spec, tmp_path, monkeypatch, capsys, no_unpickling):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "anchors.json").write_text(json.dumps(table(("g", "greedy", 1000.0), ("evil", spec, 1200.0))))
    before = snapshot(tmp_path)
    assert tafl(["rate", "greedy", "--variant", VARIANT, "--anchors", "anchors.json", "--no-progress"]) == 2
    err = one_line(capsys.readouterr().err)
    assert "anchors.json" in err and "unpickles" in err and "'evil'" in err
    assert no_unpickling == [] and snapshot(tmp_path) == before


@pytest.mark.parametrize("spec", UNPICKLING)
def test_an_anchor_table_passed_to_rate_cannot_ask_for_unpickling(spec, no_unpickling):
    with pytest.raises(ValueError, match="unpickles"):
        rate("greedy", VARIANT, anchors=table(("g", "greedy", 1000.0), ("evil", spec, 1200.0)), games=4)
    assert no_unpickling == []


def test_the_command_line_may_still_opt_in_to_unpickling(no_unpickling, capsys):
    """The user's own argument is theirs to give: the factory is reached (here a recorder)."""
    tafl(["rate", "unpickle-policy:mine.zip", "--variant", VARIANT, "--games", "4", "--no-progress"])
    assert no_unpickling == [("unpickle-policy", "mine.zip")]


def test_leaderboard_rate_skips_an_unpickling_line_and_keeps_the_others(tmp_path, capsys, no_unpickling, monkeypatch):
    path = tmp_path / "leaderboard.json"
    board = {"variants": {VARIANT: {"evil": leaderboard._line(FakeRating(), "unpickle-policy:evil.zip", None)}}}
    path.write_text(json.dumps(board))
    rated = []

    def fake_rate(spec, variant, **kw):
        rated.append(spec)
        return FakeRating(variant=variant)

    monkeypatch.setattr("agents.evaluation.rate.rate", fake_rate)
    code = leaderboard.main(["--rate", "--variants", VARIANT, "--games", "16", "--path", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and no_unpickling == []
    assert "evil" in one_line(err) and "unpickles" in err
    lines = json.loads(path.read_text())["variants"][VARIANT]
    assert rated == [f"mcts:100:policy:{VARIANT}"] and set(lines) == {"evil", "policy+mcts100"}
    assert lines["evil"] == board["variants"][VARIANT]["evil"]          # the failing line as it was


@pytest.mark.parametrize("spec", UNPICKLING)
@pytest.mark.parametrize("which", ["az sparring", "az eval_opponents", "az warm_start_agent", "ppo eval_opponents",
                                   "tournament agents"])
def test_a_config_cannot_ask_for_unpickling(which, spec, no_unpickling):
    from agents.az.config import validate_az_config
    from agents.evaluation.tournament import validate_tournament_config
    from agents.schema import ConfigError
    from agents.ppo.config import validate_train_config

    kind, field = which.split()
    with pytest.raises(ConfigError, match=f"field '{field}'.*unpickles") as info:
        if kind == "az":
            value = [spec] if field == "eval_opponents" else spec
            validate_az_config({"backend": "az", "variant": VARIANT, "iterations": 1, field: value})
        elif kind == "ppo":
            validate_train_config({"variant": VARIANT, "total_timesteps": 1000, field: [spec]})
        else:
            validate_tournament_config({"variant": VARIANT, "games_per_pair": 2, "agents": {"a": "greedy", "b": spec}})
    one_line(str(info.value))
    assert no_unpickling == []


# --- the anchor record -------------------------------------------------------------------------------

def small_record(tmp_path: Path, chunks: int = 12) -> Path:
    """The shipped Ard Ri record's settings line and first ``chunks`` chunks, in a fresh root."""
    src = games_path(VARIANT, ROOT / "results" / "anchors")
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)[:1 + chunks]
    dst = games_path(VARIANT, tmp_path / "rec")
    dst.parent.mkdir(parents=True)
    dst.write_text("".join(lines), encoding="utf-8")
    return dst


def fit(tmp_path: Path, *extra: str) -> int:
    return anchors_main(["fit", VARIANT, "--root", str(tmp_path / "rec"), "--out", str(tmp_path / "out.json"),
                         *extra])


BAD_MIDDLE_LINES = {
    "blank": "\n",
    "garbage": "not json at all\n",
    "an array": "[1, 2, 3]\n",
    "no key": json.dumps({"attacker": "greedy", "defender": "random", "seconds": 1.0, "timing": {},
                          "games": []}) + "\n",
    "an unknown result": None,          # a real chunk with one result changed
    "non-numeric timing": None,
}


@pytest.mark.parametrize("kind", list(BAD_MIDDLE_LINES))
def test_a_bad_middle_line_stops_the_build_and_leaves_the_record_byte_identical(kind, tmp_path, capsys):
    path = small_record(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    bad = BAD_MIDDLE_LINES[kind]
    if bad is None:
        row = json.loads(lines[3])
        if kind == "an unknown result":
            row["games"][0]["result"] = "white"
        else:
            row["timing"]["attacker"][0] = "slow"
        bad = json.dumps(row) + "\n"
    lines.insert(5, bad)
    path.write_text("".join(lines))
    before = path.read_bytes()
    assert fit(tmp_path) == 2
    err = one_line(capsys.readouterr().err)
    assert "line 6" in err and str(path) in err
    assert path.read_bytes() == before and not (tmp_path / "out.json").exists()


def test_a_garbage_settings_line_is_named(tmp_path, capsys):
    path = small_record(tmp_path)
    path.write_text("garbage\n" + "".join(path.read_text().splitlines(keepends=True)[1:]))
    before = path.read_bytes()
    assert fit(tmp_path) == 2
    assert "line 1" in one_line(capsys.readouterr().err) and path.read_bytes() == before


def test_only_a_torn_last_line_is_dropped(tmp_path, capsys):
    path = small_record(tmp_path)
    whole = path.read_text()
    path.write_text(whole + '{"key": "r0:torn", "attac')
    assert fit(tmp_path) == 0
    assert path.read_text() == whole
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["games"] == sum(len(json.loads(x)["games"]) for x in whole.splitlines()[1:])


def test_a_bad_spec_added_to_the_ladder_changes_nothing(tmp_path, capsys):
    path = small_record(tmp_path)
    before = path.read_bytes()
    code = anchors_main(["build", VARIANT, "--root", str(tmp_path / "rec"), "--out", str(tmp_path / "out.json"),
                         "--add", "mcts50000=mcts:5O000", "--max-rounds", "1"])
    assert code == 2
    err = one_line(capsys.readouterr().err)
    assert "mcts50000" in err and "5O000" in err
    assert path.read_bytes() == before and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--max-minutes", "-5"], ["--max-minutes", "0"],
                                  ["--max-minutes", "nan"], ["--target-ci", "-1"], ["--max-rounds", "0"],
                                  ["--seed", "-1"]])
def test_anchors_build_refuses_out_of_range_numbers(argv, tmp_path, capsys):
    path = small_record(tmp_path)
    before = path.read_bytes()
    with pytest.raises(SystemExit) as info:
        anchors_main(["build", VARIANT, "--root", str(tmp_path / "rec"), "--out", str(tmp_path / "out.json"), *argv])
    assert info.value.code == 2
    assert argv[0] in capsys.readouterr().err
    assert path.read_bytes() == before and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"jobs": 0}, "jobs must be an int >= 1"), ({"jobs": 2.5}, "jobs must be an int"),
    ({"max_minutes": -5}, "max_minutes must be a finite number > 0"),
    ({"max_minutes": float("nan")}, "max_minutes must be a finite number"),
    ({"target_ci": -1}, "target_ci must be a finite number > 0"), ({"seed": -1}, "seed must be an int >= 0"),
])
def test_build_anchors_refuses_bad_arguments_before_reading_the_record(kwargs, message, tmp_path):
    path = small_record(tmp_path)
    before = path.read_bytes()
    with pytest.raises((TypeError, ValueError), match=message):
        build_anchors(VARIANT, root=tmp_path / "rec", out=tmp_path / "out.json", progress=False, **kwargs)
    assert path.read_bytes() == before and not (tmp_path / "out.json").exists()


def test_a_record_with_no_games_writes_no_anchor_file(tmp_path, capsys):
    path = small_record(tmp_path, chunks=0)
    assert fit(tmp_path) == 2
    assert "no games" in one_line(capsys.readouterr().err) and not (tmp_path / "out.json").exists()
    assert path.read_text().count("\n") == 1


# --- the leaderboard -----------------------------------------------------------------------------------

@dataclass
class FakeRating:
    """What :func:`leaderboard.add_entry` reads of a rating."""

    variant: str = VARIANT
    elo: float = 1000.0
    seed: int = 0
    games: int = 16
    extra: dict = field(default_factory=dict)

    def to_dict(self):
        side = {"elo": 1000.0, "low": 900.0, "high": 1100.0, "games": 8}
        return {"elo": self.elo, "low": self.elo - 50, "high": self.elo + 50, "attacker": side, "defender": side,
                "games": self.games, "draws": 0, "score": 0.5, "seed": self.seed, "stopped": "games",
                "time_per_move": None}


def _add_many(path: str, prefix: str, count: int) -> None:
    for k in range(count):
        leaderboard.add_entry(FakeRating(elo=float(k)), f"{prefix}{k}", spec="greedy", path=path)


def test_two_processes_adding_lines_at_once_land_every_line(tmp_path):
    path = tmp_path / "leaderboard.json"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_add_many, args=(str(path), prefix, 200)) for prefix in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lines = json.loads(path.read_text())["variants"][VARIANT]
    assert len(lines) == 400
    assert leaderboard.render_markdown(json.loads(path.read_text())) == path.with_suffix(".md").read_text()


def test_leaderboard_rate_keeps_lines_added_while_it_rates(tmp_path, monkeypatch, capsys):
    path = tmp_path / "leaderboard.json"
    leaderboard.add_entry(FakeRating(), "mine", spec="greedy", path=path)

    def slow_rate(spec, variant, **kw):     # another process adds a line meanwhile
        leaderboard.add_entry(FakeRating(elo=1234.0), "added-meanwhile", spec="random", path=path)
        return FakeRating(variant=variant, elo=999.0)

    monkeypatch.setattr("agents.evaluation.rate.rate", slow_rate)
    assert leaderboard.main(["--rate", "--variants", VARIANT, "--path", str(path)]) == 0
    lines = json.loads(path.read_text())["variants"][VARIANT]
    assert {"mine", "added-meanwhile", "policy+mcts100"} <= set(lines) and lines["mine"]["elo"] == 999.0


@pytest.mark.parametrize("name", ["x | spec | 9999 | 1 | 2", "two\nlines", "a" * 5000, "", "`code`", "-x"])
def test_a_leaderboard_name_that_could_forge_a_row_is_refused(name, tmp_path):
    path = tmp_path / "leaderboard.json"
    with pytest.raises(ValueError, match="leaderboard name") as info:
        leaderboard.add_entry(FakeRating(), name, spec="greedy", path=path)
    one_line(str(info.value))
    assert not path.exists() and not path.with_suffix(".md").exists()


def test_tafl_rate_refuses_a_bad_leaderboard_name_before_any_game(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("agents.evaluation.rate.rate", lambda *a, **k: pytest.fail("games were played"))
    assert tafl(["rate", "greedy", "--variant", VARIANT, "--leaderboard", "x | fake | 9999", "--no-progress"]) == 2
    assert "--leaderboard" in one_line(capsys.readouterr().err)
    assert not (tmp_path / "results").exists()


def test_a_spec_with_a_pipe_is_escaped_in_the_markdown(tmp_path):
    path = tmp_path / "leaderboard.json"
    leaderboard.add_entry(FakeRating(), "mine", spec="policy:a|b.zip", path=path)
    row = next(x for x in path.with_suffix(".md").read_text().splitlines() if x.startswith("| mine"))
    assert "a\\|b.zip" in row and row.count(" | ") == 9     # ten cells


@pytest.mark.parametrize("argv", [["--games", "0"], ["--target-ci", "nan"], ["--jobs", "0"], ["--seed", "-3"]])
def test_leaderboard_command_refuses_out_of_range_numbers(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        leaderboard.main(["--rate", "--path", str(tmp_path / "lb.json"), *argv])
    assert info.value.code == 2 and argv[0] in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_an_unreadable_leaderboard_is_named_and_left_alone(tmp_path, capsys):
    path = tmp_path / "leaderboard.json"
    path.write_text("{not json")
    assert leaderboard.main(["--path", str(path)]) == 2
    assert str(path) in one_line(capsys.readouterr().err) and path.read_text() == "{not json"
    with pytest.raises(ValueError, match="cannot read the leaderboard"):
        leaderboard.add_entry(FakeRating(), "mine", spec="greedy", path=path)


# --- rate() and tafl rate ------------------------------------------------------------------------------

LADDER = table(("rnd", "random", 0.0), ("g", "greedy", 1000.0))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"anchors": {}}, ValueError, "non-empty list of anchors"),
    ({"anchors": []}, TypeError, "anchors must be"),
    ({"anchors": {"variant": VARIANT, "anchors": [{"name": "x", "spec": "greedy", "rating": "high"}],
                  "side_advantage": {"elo": 0}}}, ValueError, "finite 'rating'"),
    ({"sprt": (0,)}, TypeError, "sprt must be a pair"),
    ({"sprt": (0, float("nan"))}, ValueError, r"sprt\[1\]"),
    ({"games": "4"}, TypeError, "games must be an int"), ({"games": 2.5}, TypeError, "games must be an int"),
    ({"games": True}, TypeError, "games must be an int"), ({"games": 2**70}, ValueError, "games must be an int"),
    ({"seed": -1}, ValueError, "seed must be an int >= 0"), ({"seed": 1.5}, TypeError, "seed must be an int"),
    ({"alpha": 0}, ValueError, "alpha must be"), ({"beta": float("nan")}, ValueError, "beta must be"),
    ({"jobs": 2.5}, TypeError, "jobs must be an int"), ({"jobs": 0}, ValueError, "jobs must be"),
    ({"time_per_move": float("inf")}, ValueError, "time_per_move must be"),
    ({"target_ci": -1}, ValueError, "target_ci must be"),
    ({"openings": [["d4-d5x"]]}, ValueError, "opening 0"), ({"openings": [[1, 2]]}, ValueError, "opening 0"),
    ({"openings": []}, ValueError, "non-empty list"),
])
def test_rate_refuses_bad_arguments_with_their_name(kwargs, error, message):
    kwargs = {"anchors": LADDER, "games": 4, **kwargs}
    with pytest.raises(error, match=message) as info:
        rate("greedy", VARIANT, **kwargs)
    one_line(str(info.value))


@pytest.mark.parametrize("returned", [92.5, "92", True, None])
def test_a_callable_must_return_an_int_action(returned):
    with pytest.raises(AgentError, match="an action is an int") as info:
        rate(lambda obs, mask: returned, VARIANT, anchors=LADDER, games=4)
    one_line(str(info.value))


@pytest.mark.parametrize("content, words", [
    ("garbage", ["garbage.json", "cannot read the anchor file"]),
    ("[1, 2]", ["garbage.json", "JSON object"]),
    (json.dumps({"variant": VARIANT, "anchors": [{"name": "g", "spec": "greedy", "rating": 1000}]}),
     ["garbage.json", "side_advantage"]),
])
def test_tafl_rate_names_an_unreadable_anchor_file(content, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "garbage.json").write_text(content)
    assert tafl(["rate", "greedy", "--variant", VARIANT, "--anchors", "garbage.json", "--no-progress"]) == 2
    err = one_line(capsys.readouterr().err)
    assert all(w in err for w in words), err


@pytest.mark.parametrize("content, words", [
    ("[[\"d4-d5\"]]", ["suite.json", "a JSON object with a list 'openings'"]),
    ("{bad", ["suite.json", "cannot read the opening suite"]),
    (json.dumps({"variant": VARIANT, "openings": [{"moves": ["a1-a9"]}]}), ["suite.json", "opening 0"]),
])
def test_tafl_rate_names_an_unreadable_opening_suite(content, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.json").write_text(content)
    assert tafl(["rate", "greedy", "--variant", VARIANT, "--openings", "suite.json", "--no-progress"]) == 2
    err = one_line(capsys.readouterr().err)
    assert all(w in err for w in words), err


def test_the_shipped_records_and_tables_pass_the_checks():
    """Every shipped anchor file and leaderboard line is valid data (no false refusal)."""
    from agents.evaluation.anchors import load_anchors
    from tafl_env.rules import VARIANTS

    for v in VARIANTS:
        assert load_anchors(v)["variant"] == v
    board = json.loads((ROOT / "results" / "leaderboard.json").read_text())
    for v, lines in board["variants"].items():
        for name, line in lines.items():
            leaderboard.check_name(name)
            base.check_data_spec(line["spec"], name)


def test_a_learned_agents_line_records_its_training_cost(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "anchors.json").write_text(json.dumps(table(("g", "greedy", 1000.0), ("r", "random", 500.0))))
    argv = ["rate", "greedy", "--variant", VARIANT, "--anchors", "anchors.json", "--games", "16", "--no-progress",
            "--leaderboard", "mine"]
    assert tafl([*argv, "--training-hours", "1.5"]) == 2
    assert "go together" in one_line(capsys.readouterr().err)
    assert tafl([*argv, "--training-hours", "1.5", "--trained-from", "x" * 500]) == 2
    assert "started_from" in one_line(capsys.readouterr().err)
    assert not (tmp_path / "results" / "leaderboard.json").exists()
    assert tafl([*argv, "--training-hours", "1.5", "--trained-from", "600 mcts:100 games"]) == 0
    path = tmp_path / "results" / "leaderboard.json"
    assert json.loads(path.read_text())["variants"][VARIANT]["mine"]["cost"] == \
        {"cpu_hours": 1.5, "started_from": "600 mcts:100 games"}
    assert "| 1.5 CPU h from 600 mcts:100 games |" in path.with_suffix(".md").read_text()
    assert tafl(argv) == 0                                  # a re-rating keeps the recorded cost
    assert json.loads(path.read_text())["variants"][VARIANT]["mine"]["cost"]["cpu_hours"] == 1.5


@pytest.mark.parametrize("where", ["anchor file", "tournament config"])
def test_a_data_file_cannot_name_a_program_to_run(where, tmp_path, monkeypatch, capsys):
    """otep:COMMAND runs the program it names: only a command line may ask for that."""
    from agents.evaluation.tournament import validate_tournament_config
    from agents.schema import ConfigError

    evil = f"otep:touch {tmp_path / 'ran'}"
    if where == "anchor file":
        monkeypatch.chdir(tmp_path)
        (tmp_path / "anchors.json").write_text(json.dumps(table(("g", "greedy", 1000.0), ("evil", evil, 1200.0))))
        assert tafl(["rate", "greedy", "--variant", VARIANT, "--anchors", "anchors.json", "--no-progress"]) == 2
        assert "runs the program it names" in one_line(capsys.readouterr().err)
    else:
        with pytest.raises(ConfigError, match="runs the program it names"):
            validate_tournament_config({"variant": VARIANT, "games_per_pair": 2, "agents": {"a": "greedy", "b": evil}})
    assert not (tmp_path / "ran").exists()
