"""The OpenTafl Engine Protocol both ways (agents/otep): golden transcripts of the engine, ``tafl otep``
as a program, the ``otep:`` agent against our own engine in whole games and against broken engines;
with OpenTafl at hand (../shared/opentafl or $OPENTAFL_HOME), a short match against OpenTafl's AI."""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.base import Agent
from agents.evaluation.play import play_games
from agents.otep.engine import OtepEngine
from agents.otep.host import OtepAgent, OtepError, engine_command
from agents.otep.protocol import Clock
from agents.spec import AgentSpec, AgentSpecError
from tafl_env import Game, make_rules
from tafl_env.notation import parse_square
from tafl_env.opentafl import rules_string

from conftest import load_script
from test_opentafl_rules import needs_opentafl, opentafl_home

ENGINE = f"{sys.executable} -m tafl_env otep"
TABLUT = rules_string(make_rules("historical_tablut"))
START = make_rules("historical_tablut").layout


class First(Agent):
    """The first legal action: a deterministic stand-in for an agent."""

    name = "first"
    seconds = None

    def choose(self, engine, state):
        return np.array([np.flatnonzero(engine.legal_action_mask(state)[g])[0] for g in range(len(state))])


def talk(lines, spec="greedy", agent=None):
    """The engine's answers to ``lines`` (its ``hello`` first), and the agent it played."""
    out, log = io.StringIO(), io.StringIO()
    agent = agent or First()
    engine = OtepEngine(AgentSpec.parse(spec), out, log=log, seed=0, build=lambda s, seed=None: agent)
    engine.hello()
    for line in lines:
        if not engine.handle(line):
            break
    return out.getvalue().splitlines(), log.getvalue(), agent


def after(*moves, variant="historical_tablut", position=None, to_move=None):
    game = Game(variant, position=position, to_move=to_move)
    for m in moves:
        game.push(m)
    return game.position


# --- the engine, line by line ----------------------------------------------------------------------

def test_a_game_transcript():
    out, log, _ = talk([f"rules {TABLUT}", "play attackers", f"move {after('d1-d2')}",
                        f"opponent-move e3-d3 {after('d1-d2', 'e3-d3')}", "clock 60000 60000 0 0 0",
                        "play attackers", f"move {after('d1-d2', 'e3-d3', 'e1-d1')}", "status hi", "what-is-this",
                        "finish 3", "goodbye", "play attackers"])
    assert out == ["hello", "move d1-d2", "move e1-d1"]
    assert "<< what-is-this" in log and "#" not in log          # ignored; no resync was needed


def test_the_engine_plays_defenders_and_follows_berserk_turns():
    berserk = rules_string(make_rules("legacy_berserk"))
    start = "/2t8/11/11/11/3Tt6/11/11/1TT8/1tt8/10K/11/"          # RULES.md §5.5's three captures
    rules = berserk.replace(make_rules("legacy_berserk").layout, start)
    end = after("c1-c5", "c5-c7", "c7-b7", variant="legacy_berserk", position=start, to_move="attacker")
    out, log, _ = talk([f"rules {rules}", f"opponent-move c1-c5|c5-c7|c7-b7 {end}", "play defenders"])
    assert out == ["hello", "move k10-k11"] and "#" not in log


class Script(First):
    """Plays the given moves in order (``pass`` too), whatever the position."""

    def __init__(self, *moves):
        super().__init__()
        self.moves = list(moves)

    def choose(self, engine, state):
        move = self.moves.pop(0)
        if move == "first":
            return super().choose(engine, state)
        if move == "pass":
            return np.array([engine.pass_action])
        origin, target = (parse_square(square, engine.n) for square in move.split("-"))
        return np.array([engine.encode(origin, target)])


def test_the_engine_continues_its_own_chain_and_never_passes():
    start = "/2t8/11/11/11/3Tt6/11/11/1TT8/1tt8/10K/11/"
    rules = rules_string(make_rules("legacy_berserk", layout=start))
    one = after("c1-c5", variant="legacy_berserk", position=start, to_move="attacker")
    out, log, _ = talk([f"rules {rules}", "play attackers", f"move {one}", "play attackers"],
                       agent=Script("first", "c1-c5", "pass"))     # (the first move is the warm-up's)
    assert out == ["hello", "move c1-c5", "move c5-c7"]                # a capturing continuation, not a pass
    assert "#" not in log


def test_refused_rules_and_bad_order():
    out, _, _ = talk(["play attackers", f"rules dim:9 linc:y start:{START}", "play attackers"])
    assert out == ["hello", "error -1 no rules to play: send 'rules' first",
                   "error -1 OpenTafl rules this engine cannot play: linc:y (Linnaean capture against the throne)",
                   "error -1 no rules to play: send 'rules' first"]


def test_a_refused_move_is_not_offered_again():
    p1, p2 = after("d1-d2"), after("d1-d2", "e3-d3")
    out, log, _ = talk([f"rules {TABLUT}", "play attackers", f"move {p1}", f"opponent-move e3-d3 {p2}",
                        "play attackers", "error 2", f"opponent-move e3-d3 {p2}", "play attackers"])
    assert out[:3] == ["hello", "move d1-d2", "move e1-d1"]
    assert out[3].startswith("move ") and out[3] != "move e1-d1"
    Game("historical_tablut", position=p2).push(out[3][5:])          # legal


def test_error_4_plays_the_piece_that_moved_last():
    """The host asks for a second move of the same side (a berserk chain there, none here): after
    ``error 4`` the engine moves the piece it moved last."""
    p1 = after("d1-d2")
    out, log, _ = talk([f"rules {TABLUT}", "play attackers", f"move {p1}", "play attackers", "error 4",
                        f"opponent-move d1-d2 {p1}", "play attackers"])
    assert out[:3] == ["hello", "move d1-d2", "move e1-d1"]
    assert out[3].startswith("move d2-"), out
    assert "# going on from" in log


def test_the_host_position_wins():
    odd = "/3ttt3/4t4/4T4/t3T3t/ttTTKTTt1/t3T3t/4T4/4t4/3ttt3/"       # i5 gone: not reachable from here
    out, log, _ = talk([f"rules {TABLUT}", f"opponent-move a4-a3 {odd}", "play defenders"])
    assert out[1].startswith("move ") and "# following the host's position" in log
    Game("historical_tablut", position=odd, to_move="defender").push(out[1][5:])


def test_the_clock_bounds_a_timed_agent():
    agent = First()
    talk([f"rules {TABLUT}", "clock 30000 30000 0 0 0", "play attackers"], spec="mcts:5s", agent=agent)
    assert agent.seconds == 1.0
    agent = First()
    talk([f"rules {TABLUT}", "clock 300000 300000 0 0 0", "play attackers"], spec="mcts:2s", agent=agent)
    assert agent.seconds == 2.0
    agent = First()
    talk([f"rules {TABLUT}", "clock 300000 300000 0 0 0", "play attackers"], spec="mcts:64", agent=agent)
    assert agent.seconds is None                                       # a simulation budget ignores clocks
    assert Clock.parse("nonsense") is None


def test_analysis():
    out, _, _ = talk([f"rules {TABLUT}", "side attackers", "analyze 1 5"])
    assert out == ["hello", "analysis 1 d1-d2 0"]


# --- tafl otep, the program --------------------------------------------------------------------------

def test_the_command_says_hello_first_and_nothing_on_stderr(tmp_path):
    log = tmp_path / "otep.log"
    proc = subprocess.Popen([*ENGINE.split(), "--agent", "greedy", "--log", str(log)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "hello\n"
    out, err = proc.communicate(f"rules {TABLUT}\nplay attackers\ngoodbye\n", timeout=300)
    assert proc.returncode == 0 and err == ""
    assert out.startswith("move ") and len(out.splitlines()) == 1
    transcript = log.read_text().splitlines()
    assert transcript[0] == ">> hello" and "<< play attackers" in transcript


def test_hello_comes_before_the_engine_loads():
    # OpenTafl resigns an engine silent for about five seconds: what runs before hello must stay light
    # (the engine and numba load after it; benchmarks/otep_latency.py measures the time).
    probe = ("import sys, agents.otep.command, agents.spec, agents;"
             "loaded = [m for m in ('tafl_env.engine', 'numba', 'torch') if m in sys.modules];"
             "print(','.join(loaded))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_the_command_refuses_a_bad_spec():
    proc = subprocess.run([*ENGINE.split(), "--agent", "mcts:lots"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("tafl otep: error: ") and len(proc.stderr.splitlines()) == 1


# --- the otep: agent ----------------------------------------------------------------------------------

def test_engine_command_reads_an_ini(tmp_path):
    folder = tmp_path / "engines" / "mine"
    folder.mkdir(parents=True)
    (folder / "run.sh").write_text("#!/bin/sh\n")
    ini = tmp_path / "engines" / "mine.ini"
    ini.write_text("[engine]\nname=Mine\ndirectory=mine\nfilename=run.sh\ncommand=python3\narguments=a.py -x\n")
    assert engine_command(str(ini)) == (["python3", "a.py", "-x"], str(folder.resolve()), "Mine")
    ini.write_text("[engine]\ndirectory=mine\nfilename=gone.sh\ncommand=python3\n")
    with pytest.raises(AgentSpecError, match="does not exist"):
        engine_command(str(ini))
    for text, why in ((str(tmp_path / "none.ini"), "no such engine file"), ("", "needs an engine"),
                      ("'unclosed", "No closing quotation")):
        with pytest.raises(AgentSpecError, match=why):
            make_agent(f"otep:{text}") if text else engine_command(text)


def test_the_agent_refuses_rules_opentafl_cannot_play():
    agent = make_agent(f"otep:{ENGINE} --agent greedy")
    assert agent.check_rules(make_rules("legacy_berserk")) is None
    with pytest.raises(AgentSpecError, match="commander_sandwich"):
        agent.check_rules(make_rules("legacy_berserk", commander_sandwich=False))
    copy = pickle.loads(pickle.dumps(agent))
    assert isinstance(copy, OtepAgent) and copy.command == agent.command and copy._sessions == []


@pytest.mark.parametrize("variant", ["legacy_ard_ri", "historical_tablut"])
def test_our_engine_through_the_protocol(variant, tmp_path):
    """``tafl otep --agent greedy`` behind the ``otep:`` agent plays whole games on both sides,
    with no protocol error and every game followed from its start (one ``rules`` a game)."""
    log = tmp_path / "host.log"
    agent = OtepAgent(f"{ENGINE} --agent greedy --seed 1", log=str(log))
    other = OtepAgent(f"{ENGINE} --agent random --seed 2")
    try:
        first = play_games(variant, agent, make_agent("greedy"), 2, seed=1, record=True)
        second = play_games(variant, make_agent("random"), agent, 2, seed=2, record=True)
        both = play_games(variant, other, other, 1, seed=3, record=True)     # one engine for both sides
    finally:
        agent.close()
        other.close()
    assert agent.protocol_errors == [] and other.protocol_errors == []
    for row in first + second + both:
        assert row["result"] in ("attacker", "defender", "draw") and row["turns"] > 0
        game = Game(variant)
        for move in row["moves"]:
            game.push(move)
        assert game.is_over()
    text = log.read_text()
    assert text.count(">> rules ") == 4 and " error" not in text
    assert "opponent-move" in text and ">> move /" in text


def _fake_engine(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake.py"
    script.write_text("import sys\nprint('hello', flush=True)\nfor line in sys.stdin:\n"
                      "    line = line.strip()\n" + body)
    return f"{sys.executable} {script}"


@pytest.mark.parametrize("body,match", [
    ("    if line.startswith('play'):\n        print('move a1-a2', flush=True)\n", "3 illegal moves"),
    ("    if line.startswith('play'):\n        print('move e5-e6', flush=True)\n", "the attackers are to move"),
    ("    if line.startswith('play'):\n        print('error -1 I resign', flush=True)\n", "gave up: I resign"),
    ("    if line.startswith('play'):\n        sys.stderr.write('boom\\n'); sys.exit(3)\n", "ended .exit status 3.*boom"),
    ("    pass\n", "sent nothing for 1 s"),
])
def test_broken_engines_fail_in_one_line(tmp_path, body, match):
    agent = OtepAgent(_fake_engine(tmp_path, body), move_timeout=1)
    game = Game("historical_tablut")
    try:
        with pytest.raises(OtepError, match=match) as err:
            agent.act(game.engine, game.state)
    finally:
        agent.close()
    assert "\n" not in str(err.value)


def test_a_missing_engine(tmp_path):
    agent = OtepAgent("no-such-program-here --x")
    game = Game("historical_tablut")
    with pytest.raises(OtepError, match="not found"):
        agent.act(game.engine, game.state)


def test_tafl_play_against_an_engine(monkeypatch, capsys):
    from tafl_env.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\n"))
    assert main(["play", "historical_tablut", "--vs", f"otep:{ENGINE} --agent greedy", "--side", "defender"]) == 0
    out = capsys.readouterr().out
    assert "(attacker) plays " in out and "you left the game" in out


# --- against OpenTafl -------------------------------------------------------------------------------------

@pytest.mark.slow   # two games against OpenTafl's AI at a second a move
@needs_opentafl
def test_a_match_against_opentafls_ai(tmp_path):
    """Two games of Historisches Tablut (OpenTafl's referee and AI on each side, 1 s a move) against
    ``tafl otep --agent greedy``, judged as benchmarks/opentafl_matches.py judges its games: no move
    refused, no protocol error or warning, every move legal here, and the same result here but for
    the differences RULES.md §10 documents."""
    bench = load_script("benchmarks/opentafl_matches.py")
    home = opentafl_home()
    for side in ("attackers", "defenders"):
        log = tmp_path / f"engine-{side}.log"
        out = subprocess.run([str(home / "match.sh"), "--cmd", f"{ENGINE} --agent greedy --log {log}",
                              "--rules", TABLUT, "--ai-side", side, "--think", "1",
                              "--max-plies", str(bench.ply_limit("historical_tablut")[1]),
                              "--out", str(tmp_path / f"{side}.otg")],
                             capture_output=True, text=True, timeout=400, cwd=tmp_path,
                             env={**__import__("os").environ, "OPENTAFL_WORK": str(tmp_path / side)})
        report = bench.GameReport(0, side)
        bench.judge(report, [(0.0, None, line) for line in out.stdout.splitlines()], log, "historical_tablut")
        assert report.errors == [], (report.errors, out.stdout[-2000:])


@needs_opentafl
def test_a_third_party_engine_as_an_agent(tmp_path):
    """OpenTafl's bundled random engine (engines/dummy_engine.py) plays through the otep: agent."""
    dummy = opentafl_home() / "engines" / "dummy_engine.py"
    agent = OtepAgent(f"{sys.executable} {dummy}")
    try:
        rows = play_games("historical_tablut", agent, make_agent("greedy"), 2, seed=3, record=True)
    finally:
        agent.close()
    assert all(row["result"] for row in rows) and agent.protocol_errors == []


def test_opentafl_ai_rated_on_the_anchors(tmp_path, capsys):
    """benchmarks/opentafl_ai_rating.py fits the AI from match files: scoring 3/4 against the
    mcts:1000 anchor puts it above that anchor, all losses against it below; a non-anchor opponent
    needs --rated."""
    bench = load_script("benchmarks/opentafl_ai_rating.py")

    def match(path, agent, ai_wins):
        results = [{"ai_side": "attackers" if i % 2 == 0 else "defenders",
                    "result": ("attacker" if i % 2 == 0 else "defender") if i < ai_wins else
                              ("defender" if i % 2 == 0 else "attacker")} for i in range(40)]
        path.write_text(json.dumps({"variant": "historical_tablut", "agent": agent, "think_s": 1,
                                    "results": results}) + "\n")
        return str(path)

    strong = match(tmp_path / "a.json", "mcts:1000", 30)
    assert bench.main(["--variant", "historical_tablut", strong]) == 0
    high = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    weak = match(tmp_path / "b.json", "mcts:1000", 0)
    assert bench.main(["--variant", "historical_tablut", weak]) == 0
    low = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    anchor = high["opponents"][0]["opponent_elo"]
    assert high["low"] > anchor > low["high"] and high["games"] == 40
    with pytest.raises(SystemExit):
        bench.main(["--variant", "historical_tablut", match(tmp_path / "c.json", "az:x.pt:64", 10)])
    assert "--rated" in capsys.readouterr().err
