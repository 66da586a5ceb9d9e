"""``tafl play``: a person against an agent in the terminal, driven here through stdin."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np

from agents import Agent, register_agent
from tafl_env.cli import main
from tafl_env.game import Game


class FirstLegal(Agent):
    """Always the lowest legal action id (deterministic)."""

    name = "first"

    def act(self, engine, state):
        out = np.argmax(engine.legal_action_mask(state), axis=1).astype(np.int64)
        out[state.done] = -1
        return out


register_agent("firstlegal_test", lambda arg, seed=None, **kw: FirstLegal(seed=seed))


def play(monkeypatch, argv, lines):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["play", *argv])
    return code, out.getvalue(), err.getvalue()


def first_legal(game: Game) -> str:
    return game.describe(int(game.legal_actions()[0])).notation


def test_play_illegal_input_reprompts_then_moves_then_quit(monkeypatch):
    # Ard Ri: the defenders move first; the person plays them, the agent the attackers.
    sim = Game("legacy_ard_ri")
    mine1 = "c5-c6"
    sim.push(mine1)
    reply1 = first_legal(sim)
    sim.push(reply1)
    mine2 = sim.legal_moves()[-1].notation
    sim.push(mine2)
    reply2 = first_legal(sim)
    sim.push(reply2)
    lines = ["", "help", "zz9-q", "d1-d2", "d4-d5", "moves", mine1, mine2, "quit"]
    code, out, err = play(monkeypatch, ["legacy_ard_ri", "--vs", "firstlegal_test", "--side", "defender",
                                        "--json"], lines)
    assert code == 0, err
    assert "you play the defenders" in out
    assert "Type a move in notation" in out                       # help
    assert "cannot read that move" in out and "zz9-q" in out      # malformed
    assert "not yours" in out and "d1" in out                     # an attacker's piece
    assert "not a legal move" in out and "d4-d5" in out           # the king is blocked by d5
    legal = [m.notation for m in Game("legacy_ard_ri").legal_moves()]
    assert " ".join(legal) in out                                 # 'moves'
    assert f"you play {mine1}" in out and f"you play {mine2}" in out
    assert f"firstlegal_test (attacker) plays {reply1}" in out
    assert f"firstlegal_test (attacker) plays {reply2}" in out
    assert out.count("your move (defender)> ") == 9               # one prompt per input line
    assert "you left the game" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["moves"] == [mine1, reply1, mine2, reply2]
    assert summary["abandoned"] is True and summary["result"] is None
    # the board is drawn after each move
    assert out.count("a b c d e f g") >= 5


def test_play_to_the_end_and_agent_moves_first(monkeypatch):
    # Historisches Tablut, the king one slide from the edge: the person (defenders) escapes.
    pos = "/t8/9/9/9/4K4/9/9/9/9/"
    code, out, err = play(monkeypatch, ["historical_tablut", "--vs", "random", "--side", "defender",
                                        "--position", pos, "--to-move", "defender", "--json"], ["e5-e9"])
    assert code == 0, err
    assert "defender wins (escaped)" in out and "you win" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["result"] == "defender" and summary["reason"] == "escaped" and not summary["abandoned"]
    # the person plays the attackers in Ard Ri: the agent (defenders) moves first, unasked
    code, out, err = play(monkeypatch, ["legacy_ard_ri", "--vs", "firstlegal_test", "--json"], [])
    assert code == 0, err
    first = first_legal(Game("legacy_ard_ri"))
    assert f"firstlegal_test (defender) plays {first}" in out
    assert "end of input" in out                                   # EOF leaves cleanly
    assert json.loads(out.strip().splitlines()[-1])["moves"] == [first]


def test_play_bad_arguments(monkeypatch):
    code, out, err = play(monkeypatch, ["legacy_ard_ri", "--vs", "nosuchagent"], [])
    assert code == 2 and "nosuchagent" in err and "Traceback" not in err
    code, out, err = play(monkeypatch, ["nosuchvariant", "--vs", "random"], [])
    assert code == 2 and "nosuchvariant" in err


def test_play_undo_piece_moves_and_the_opponents_last_move(monkeypatch):
    # Ard Ri: the person plays the defenders (first), the agent the attackers
    sim = Game("legacy_ard_ri")
    sim.push("c5-c6")
    reply = first_legal(sim)
    c5_moves = [m.notation for m in Game("legacy_ard_ri").legal_moves() if m.notation.startswith("c5")]
    lines = ["undo", "moves c5", "moves d1", "moves b2", "moves z9", "c5-c6", "board", "undo", "moves c5",
             "c5-c6", "quit"]
    code, out, err = play(monkeypatch, ["legacy_ard_ri", "--vs", "firstlegal_test", "--side", "defender",
                                        "--json"], lines)
    assert code == 0, err
    assert "nothing to undo" in out
    assert out.count(" ".join(c5_moves)) == 2                    # 'moves c5', before and after the undo
    assert "the piece on d1 is not yours" in out
    assert "there is no piece on b2" in out
    assert "cannot read the square 'z9'" in out
    assert f"firstlegal_test (attacker) plays {reply}" in out
    # the board after the reply marks it: the moved piece in ( ), the square it left as *
    after_reply = out.split(f"plays {reply}\n", 1)[1]
    assert "(t)" in after_reply.split("turn", 1)[0] and "*" in after_reply.split("turn", 1)[0]
    assert f"last move: {reply}" in out                            # 'board'
    assert "took back your last move" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["moves"] == ["c5-c6", reply]                    # undone, then played again
