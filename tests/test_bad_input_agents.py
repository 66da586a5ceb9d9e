"""Bad input to the agents package: ``mcts`` specs and what a person types to ``tafl play``.

Each mistake is one clear line naming it: an ``mcts`` spec with a colon and nothing after it, or a
budget that is not finite, not positive or too large, is refused rather than read as the default;
a 100 KB line typed at the ``tafl play`` prompt is quoted cut to a line.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from agents import make_agent
from agents.base import AgentSpecError
from agents.mcts.agent import MAX_SECONDS, MAX_SIMULATIONS, parse_spec

MAX_LINE = 400


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) <= MAX_LINE, text[:500]
    return text


# --- mcts specs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["mcts::", "mcts:::", "mcts::random", "mcts::policy:model.zip"])
def test_mcts_spec_with_no_budget_after_the_colon_is_refused(spec):
    with pytest.raises(AgentSpecError, match="needs a budget after the colon") as info:
        make_agent(spec)
    assert repr(spec) in one_line(info.value)


def test_mcts_with_an_empty_argument_is_refused():
    # "mcts:" is refused when the spec is read, before any factory, and names the spec
    with pytest.raises(AgentSpecError, match="'mcts:' has nothing after its colon") as info:
        parse_spec("")
    one_line(info.value)


@pytest.mark.parametrize("spec", ["mcts:", "mcts: ", "az:", "policy:"])
def test_a_colon_with_nothing_after_it_is_refused_through_make_agent(spec):
    with pytest.raises(AgentSpecError, match="nothing after its colon") as info:
        make_agent(spec)
    one_line(info.value)


@pytest.mark.parametrize("spec", ["mcts:64:", "mcts:64::uniform", "mcts:64:random:", "mcts:1s: "])
def test_mcts_spec_with_an_empty_part_is_refused(spec):
    with pytest.raises(AgentSpecError, match="empty part after a colon") as info:
        make_agent(spec)
    assert repr(spec) in one_line(info.value)


def test_plain_mcts_keeps_its_default_budget():
    assert make_agent("mcts").simulations == 64
    assert parse_spec(None) == (64, None, "none", "greedy")


@pytest.mark.parametrize("spec, what", [
    ("mcts:0", "simulations"), ("mcts:-5", "simulations"), (f"mcts:{MAX_SIMULATIONS + 1}", "simulations"),
    ("mcts:" + "9" * 5000, "from 1 to"),
    ("mcts:0s", "seconds"), ("mcts:-1s", "seconds"), ("mcts:nans", "seconds"), ("mcts:infs", "seconds"),
    ("mcts:-infs", "seconds"), ("mcts:1e999s", "seconds"), (f"mcts:{MAX_SECONDS + 1:g}s", "seconds"),
    ("mcts:1.5", "integer"), ("mcts:s", "integer"), ("mcts:64x", "integer"),
])
def test_mcts_budget_out_of_bounds_is_refused_with_one_line(spec, what):
    with pytest.raises(AgentSpecError, match=what) as info:
        make_agent(spec)
    one_line(info.value)


def test_mcts_budget_bounds_themselves_are_accepted():
    assert parse_spec(str(MAX_SIMULATIONS))[0] == MAX_SIMULATIONS
    assert parse_spec(f"{MAX_SECONDS:g}s")[1] == MAX_SECONDS
    assert parse_spec("1")[0] == 1 and parse_spec("0.25s")[1] == 0.25
    assert parse_spec("12:random:uniform") == (12, None, "random", "uniform")
    assert make_agent("mcts:8:greedy").simulations == 8


def test_mcts_long_spec_is_quoted_cut_to_a_line():
    with pytest.raises(AgentSpecError) as info:
        make_agent("mcts:" + "x" * 100_000)
    assert "characters)" in one_line(info.value)


# --- tafl play ------------------------------------------------------------------------------------

def play(monkeypatch, argv, lines):
    from tafl_env.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["play", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("line", ["x" * 100_000, "c5-c6x" + "/".join(["a1"] * 30_000), "c5" + "-" * 100_000])
def test_play_quotes_a_long_line_cut_to_a_line(monkeypatch, line):
    code, out, err = play(monkeypatch, ["legacy_ard_ri", "--vs", "random", "--side", "defender"],
                          [line, "quit"])
    assert code == 0, err
    answer = [ln for ln in out.splitlines() if "cannot read that move" in ln or "not a legal move" in ln]
    assert len(answer) == 1 and len(answer[0]) <= MAX_LINE + 100, answer[0][:500] if answer else out[:500]
    assert "characters)" in answer[0]
    assert max(len(ln) for ln in out.splitlines()) <= MAX_LINE + 100


def test_openings_quote_a_long_move_cut_to_a_line():
    from agents.evaluation.play import opening_states
    from tafl_env.game import engine_for
    from tafl_env.rules import make_rules

    eng = engine_for(make_rules("legacy_ard_ri"))
    with pytest.raises(ValueError) as info:
        opening_states(eng, [["c5-c6", "y" * 100_000]])
    assert "characters)" in one_line(info.value)
    assert np.array_equal(opening_states(eng, [["c5-c6"]]).turn, [1])
