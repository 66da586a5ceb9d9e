"""The public test cases of ``tests/data/cases/`` (made by an independent implementation of RULES.md).

- every game of ``games.jsonl`` replayed through :class:`tafl_env.Game` (no move cap) ends in the
  recorded position, side to move, result, reason and turn count;
- the same games replayed through the batched :class:`~tafl_env.engine.Engine`, all games of a
  variant in one batch, agree with ``Game`` after every move and with the record at the end;
- every perft count of ``perft.json`` up to 2,000,000 (larger ones are marked ``slow``);
- the suite needs nothing outside the repository: the cases are the copy in ``tests/data/cases``
  (never skipped), no test file names a path outside the checkout, and the rules and design
  documents the code cites are at the repository root, with every cited section present.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tafl_env import VARIANTS, Game, make_rules
from tafl_env.engine import Engine
from tafl_env.notation import parse_move, square_name
from tafl_env.perft import perft

from conftest import CASES_DIR

SLOW_COUNT = 2_000_000
SUMMARY_KEYS = ("position", "to_move", "result", "reason", "turns")


PERFT_CASES = json.loads((CASES_DIR / "perft.json").read_text(encoding="utf-8"))["cases"]
GAMES = [json.loads(line) for line in (CASES_DIR / "games.jsonl").read_text(encoding="utf-8").splitlines()
         if line.strip()]


def _game_id(g: dict) -> str:
    return f"{g['variant']}-{g['seed']}"


# --- sanity of the case files themselves ----------------------------------------------------------

def test_case_files_cover_every_variant():
    assert {g["variant"] for g in GAMES} == set(VARIANTS)
    assert {c["variant"] for c in PERFT_CASES} == set(VARIANTS)
    assert len({_game_id(g) for g in GAMES}) == len(GAMES), "duplicate game ids"


# --- games through Game ---------------------------------------------------------------------------

@pytest.mark.parametrize("record", GAMES, ids=_game_id)
def test_game_replay(record):
    game = Game(record["variant"], max_turns=None)
    for i, text in enumerate(record["moves"]):
        try:
            game.push(text)
        except Exception as exc:  # pragma: no cover - the message tells which move failed
            pytest.fail(f"move {i} ({text!r}) of {_game_id(record)} was rejected: {exc}")
    summary = game.summary()
    assert {k: summary[k] for k in SUMMARY_KEYS} == {k: record[k] for k in SUMMARY_KEYS}
    assert game.is_over() == (record["result"] is not None)
    if record["result"] is None:
        assert game.outcome() is None
        assert game.action_mask().sum() > 0
    else:
        assert tuple(game.outcome()) == (record["result"], record["reason"])
        assert game.action_mask().sum() == 0
        assert len(game.legal_moves()) == 0


def _implied_pass_records():
    """Berserk games with every explicit ``pass`` that is followed by a move removed (RULES §6.7:
    the opponent's next move implies the pass), for the games that have such a pass."""
    out = []
    for g in GAMES:
        moves = g["moves"]
        kept = [m for i, m in enumerate(moves) if not (m == "pass" and i + 1 < len(moves))]
        if len(kept) < len(moves):
            out.append(dict(g, moves=kept))
    return out


@pytest.mark.parametrize("record", _implied_pass_records(), ids=_game_id)
def test_game_replay_with_implied_passes(record):
    game = Game(record["variant"], max_turns=None)
    for text in record["moves"]:
        game.push(text)
    summary = game.summary()
    assert {k: summary[k] for k in SUMMARY_KEYS} == {k: record[k] for k in SUMMARY_KEYS}
    assert any(m.is_pass for m in game.moves), "the implied passes were not recorded as moves"


def test_some_game_has_a_pass_to_imply():
    assert _implied_pass_records(), "no game of games.jsonl has an explicit pass followed by a move"


# --- games through the batched engine -------------------------------------------------------------

def _actions_of(record: dict) -> tuple[list[int], list[dict]]:
    """The action ids of a recorded game and the ``Game`` summary after each action.

    Each move string is read with ``notation.parse_move``, encoded with ``Engine.encode``, and the
    action is accepted only if ``Game.describe`` writes it back as the very same string and it is in
    ``Game.legal_actions()``. An opponent's move during a pending chain is preceded by a pass.
    """
    game = Game(record["variant"], max_turns=None)
    eng, n = game.engine, game.rules.board_size
    actions, summaries = [], []
    for text in record["moves"]:
        parsed = parse_move(text, n)
        if parsed == "pass":
            action = eng.pass_action
        else:
            if game.chain is not None and square_name(parsed.origin, n) != game.chain:
                actions.append(eng.pass_action)
                game.push(eng.pass_action)
                summaries.append(game.summary())
            action = eng.encode(parsed.origin, parsed.target)
        assert action in set(game.legal_actions().tolist()), f"{text!r} after {len(actions)} actions"
        assert game.describe(action).notation == text
        actions.append(action)
        game.push(action)
        summaries.append(game.summary())
    return actions, summaries


def _games_by_variant():
    groups = defaultdict(list)
    for g in GAMES:
        groups[g["variant"]].append(g)
    return groups


@pytest.mark.parametrize("variant", VARIANTS)
def test_games_replayed_in_one_batch(variant):
    """All games of a variant in one batch; each step plays the next action of every game that has
    one (a sub-batch taken with ``State.take`` and written back with ``State.put``)."""
    records = _games_by_variant()[variant]
    rules = make_rules(variant, max_turns=None)
    eng = Engine(rules)
    plans = [_actions_of(r) for r in records]
    b = len(records)
    state = eng.initial_state(b)
    longest = max(len(a) for a, _ in plans)
    sides = ("attacker", "defender")
    for t in range(longest):
        rows = np.array([i for i in range(b) if t < len(plans[i][0])])
        acts = np.array([plans[i][0][t] for i in rows])
        mask = eng.legal_action_mask(state)
        assert mask[rows, acts].all(), f"step {t}: a recorded action is not in the batch's mask"
        sub = state.take(rows)
        eng.step(sub, acts)
        state.put(rows, sub)
        for i in rows:
            exp = plans[i][1][t]
            got_pos = eng.position(state, int(i))
            assert got_pos == exp["position"], f"{_game_id(records[i])} after action {t}"
            assert sides[int(state.to_move[i])] == exp["to_move"], f"{_game_id(records[i])} after action {t}"
            assert int(state.turn[i]) == exp["turns"], f"{_game_id(records[i])} after action {t}"
            chain = int(state.chain[i])
            assert (square_name(chain, rules.board_size) if chain >= 0 else None) == exp["chain"]
    winner_codes = {None: -1, "attacker": 0, "defender": 1, "draw": 2}
    for i, r in enumerate(records):
        assert eng.position(state, i) == r["position"], _game_id(r)
        assert sides[int(state.to_move[i])] == r["to_move"], _game_id(r)
        assert int(state.turn[i]) == r["turns"], _game_id(r)
        assert int(state.winner[i]) == winner_codes[r["result"]], _game_id(r)
        assert bool(state.done[i]) == (r["reason"] is not None), _game_id(r)
        assert bool(state.done[i]) == (int(state.reason[i]) != 0), _game_id(r)
    # Finished games have no legal action; running ones do.
    counts = eng.count_legal(state)
    assert ((counts == 0) == state.done).all()


# --- perft ----------------------------------------------------------------------------------------

def _perft_params():
    params = []
    for c in PERFT_CASES:
        for depth, count in sorted(c["perft"].items(), key=lambda kv: int(kv[0])):
            marks = [pytest.mark.slow] if count > SLOW_COUNT else []
            params.append(pytest.param(c, int(depth), count, marks=marks,
                                       id=f"{c['variant']}-{c['name']}-d{depth}"))
    return params


def _perft_start(case: dict):
    """(engine, batch-of-one state) of a perft case; a case with ``moves`` is reached by playing them."""
    variant = case["variant"]
    if case.get("moves"):
        game = Game(variant, max_turns=None)
        for text in case["moves"]:
            game.push(text)
        assert game.position == case["position"]
        assert game.to_move == case["to_move"]
        assert game.chain == case["pending"]
        assert not game.is_over()
        return game.engine, game.state
    eng = Engine(make_rules(variant, max_turns=None))
    state = eng.initial_state(1, case["position"], case["to_move"])
    assert eng.position(state, 0) == case["position"]
    assert case["pending"] is None
    if case["name"] == "start":
        start = Game(variant)
        assert start.position == case["position"] and start.to_move == case["to_move"]
    return eng, state


@pytest.mark.parametrize("case,depth,count", _perft_params())
def test_perft(case, depth, count):
    eng, state = _perft_start(case)
    before = state.copy()
    assert perft(eng, state, depth) == count
    # perft must not disturb the state it counts from
    for field in ("board", "to_move", "chain", "turn", "winner", "reason"):
        np.testing.assert_array_equal(getattr(state, field), getattr(before, field))
    if depth == 1:
        assert int(eng.count_legal(state)[0]) == count
        assert int(eng.legal_action_mask(state)[0].sum()) == count


@pytest.mark.parametrize("case", PERFT_CASES, ids=lambda c: f"{c['variant']}-{c['name']}")
def test_perft_of_a_batch_is_the_sum(case):
    """perft over a batch of three copies of the same game is three times the count."""
    eng, state = _perft_start(case)
    depth = 2 if "2" in case["perft"] else 1
    batch = state.take(np.zeros(3, dtype=np.intp))
    assert perft(eng, batch, depth) == 3 * case["perft"][str(depth)]


# --- the suite is self-contained ------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
# Spelled in pieces so that this file does not match its own patterns.
_OUTSIDE = re.compile("|".join([
    r"\.\./" + "sha" + "red",                # the sibling folder the cases once came from
    r"[\"']" + "sha" + "red" + r"[\"']",   # ... joined as a path component
    r"/" + r"work/",                        # an absolute path of a development machine
    "TAFL_" + "SHARED",                     # an environment variable pointing there
]))


def test_cases_are_the_copy_in_the_repository():
    assert CASES_DIR == REPO / "tests" / "data" / "cases"
    for name in ("README.md", "perft.json", "games.jsonl"):
        assert (CASES_DIR / name).is_file(), f"{name} is missing from {CASES_DIR}"
    assert PERFT_CASES and GAMES


def test_no_test_file_reaches_outside_the_repository():
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            # the one sibling a test may look for: an OpenTafl build to test against, skipped where absent
            if _OUTSIDE.search(line) and "opentafl" not in line.lower():
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "test files refer to paths outside the repository:\n" + "\n".join(offenders)


def test_the_case_tests_cannot_skip():
    source = Path(__file__).read_text(encoding="utf-8")
    for word in ("pytest." + "skip", "skip" + "if", "importor" + "skip"):
        assert word not in source, f"{word} in {Path(__file__).name}: the public cases must always run"


def test_the_cases_run_in_a_lone_copy_of_the_tests(tmp_path):
    """The case tests, copied alone into a fresh folder (no sibling folders, no environment variable
    pointing anywhere), collect every case and pass without a single skip."""
    tests = tmp_path / "checkout" / "tests"
    (tests / "data" / "cases").mkdir(parents=True)
    for name in ("conftest.py", "test_cases.py"):
        (tests / name).write_bytes((REPO / "tests" / name).read_bytes())
    for path in CASES_DIR.iterdir():
        (tests / "data" / "cases" / path.name).write_bytes(path.read_bytes())
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/test_cases.py",
         "-k", "case_files_cover or (test_perft and d1) or are_the_copy"],
        cwd=tests.parent, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "skipped" not in out and re.search(r"\b\d+ passed", out), out


# --- the documents the code cites are in the repository ------------------------------------------

def _cited_files():
    for pattern in ("*.py", "*.md", "*.yaml", "*.toml", "*.ipynb"):
        for path in REPO.rglob(pattern):
            rel = path.relative_to(REPO)
            if rel.parts[0] in (".git", ".venv", "results", "build", "dist") or rel.name == "RULES.md":
                continue
            yield rel, path.read_text(encoding="utf-8")


def test_every_cited_rules_section_exists():
    """Every ``§x.y`` in the code, configs and documents names a numbered heading of RULES.md."""
    rules = (REPO / "RULES.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#+ (\d+(?:\.\d+)?)\.? ", rules, flags=re.MULTILINE))
    cited = re.compile(r"§(\d+(?:\.\d+)?)(?:\s*[-–]\s*§?(\d+(?:\.\d+)?))?|RULES(?:\.md)? section (\d+)")
    missing = []
    for rel, text in _cited_files():
        for match in cited.finditer(text):
            for number in filter(None, match.groups()):
                if number not in headings:
                    missing.append(f"{rel}: {match.group(0)}")
    assert len(headings) >= 25, sorted(headings)
    assert not missing, "cited sections missing from RULES.md: " + ", ".join(missing)


def test_every_cited_design_section_exists():
    """Every citation of a DESIGN.md section by its quoted name names a heading of DESIGN.md."""
    design = (REPO / "DESIGN.md").read_text(encoding="utf-8")
    headings = {h.strip() for h in re.findall(r"^#+ (.+)$", design, flags=re.MULTILINE)}
    missing = []
    for rel, text in _cited_files():
        for name in re.findall(r"DESIGN\.md,? \"([^\"]+)\"", text):
            if name not in headings:
                missing.append(f"{rel}: {name}")
    assert not missing, "cited sections missing from DESIGN.md: " + ", ".join(missing)
