"""tools/missed_wins.py on two games the Tawlbwrdd agent of iteration 444 (shipped then) lost to
OpenTafl's AI (their records are kept beside its card): a move into the opponent's win in two is
told apart from a position lost already by the moves that would have denied that win."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
GAMES = ROOT / "results" / "training" / "legacy_tawlbwrdd_az" / "run1_part4" / "shipped" / "opentafl_az64"


def _tool():
    return load_script("tools/missed_wins.py")


def _report(capsys, *argv) -> list[dict]:
    assert _tool().main([*map(str, argv), "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["records"]
    return record["positions"]


def test_a_move_into_a_fork_from_a_lost_position_has_no_denying_move(capsys):
    rows = _report(capsys, GAMES / "game-002-ai-defenders.otg", "--side", "attacker")
    by_ply = {r["ply"]: r for r in rows}
    assert sorted(by_ply) == [43, 45]
    lost = by_ply[43]
    assert lost["played"] == "a5-b5" and lost["opponent_wins_after"] == {"b6-b11": "in two"}
    assert lost["moves"] == 111 and lost["moves_denying"] == []
    assert by_ply[45]["opponent_wins_after"] == {"b11-a11": "now"}


def test_a_blunder_has_denying_moves_and_the_move_played_is_not_one(capsys):
    rows = _report(capsys, GAMES / "game-005-ai-attackers.otg", "--side", "defender")
    by_ply = {r["ply"]: r for r in rows}
    blunder = by_ply[148]
    assert blunder["played"] == "g10-i10" and blunder["moves"] == 4
    assert len(blunder["moves_denying"]) == 3 and blunder["played"] not in blunder["moves_denying"]
    assert [len(by_ply[p]["moves_denying"]) for p in (150, 152, 156)] == [2, 0, 1]
