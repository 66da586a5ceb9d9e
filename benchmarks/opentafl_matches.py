"""Matches of OpenTafl's built-in AI against one of our agents, through ``tafl otep``.

Each game is one run of OpenTafl's headless driver (``match.sh`` in ../shared/opentafl or
$OPENTAFL_HOME, docs/opentafl.md): OpenTafl's referee and AI against ``tafl otep --agent SPEC``.
The sides alternate: OpenTafl's AI attacks in games 1, 3, 5, ... and defends in the others. Each game
is checked as tests/test_otep.py checks one:

- the engine's transcript (``tafl otep --log``) has no line with ``error`` (a refused move, a rules
  refusal, a resignation) and no ``# `` warning (the engine had to follow OpenTafl's position);
- OpenTafl's output has no ``rejected move``, no ``modal:`` and no Java exception;
- the move list replays legally in ``tafl_env.Game``;
- where OpenTafl finished the game within our move cap, our rules end it there too, with the same
  winner; a game OpenTafl stopped early for no reason (its timeout) is an error as well.

Where OpenTafl plays its rules otherwise under the same rules string (RULES.md §10), or its AI
fails on its own, the game gets a note, not an error:

- a threefold repetition it gives to the player who made it, where ours goes to the other;
- a berserk piece of its that goes on without capturing (illegal here): the replay goes on from
  OpenTafl's position, its turn ended, and the engine's one warning that it followed that
  position is expected;
- attackers who win because no defender has an empty square beside it, where ours go on (a jump
  is left);
- the NullPointerException its AI's worker thread throws in ``printSearchStats`` after it has
  played its move, when our reply comes so fast that the AI's next search has replaced the
  workspace that thread reads (``LocalAi`` keeps one ``mWorkspace`` for all its threads).

The move cap. RULES.md §3.10 caps a game at ``max_turns`` turns, a turn being one side's move (a
whole berserk chain is one turn). OpenTafl's driver counts plies, one for each move, so
``--max-plies`` is the cap itself; in Berserk a chain is several plies, and the driver gets half as
much again so that our cap, counted in turns on the replay, is what ends a long game. A game that
reaches our cap is a draw (``truncated``), whatever OpenTafl does with the plies it plays after it
(the driver checks its limit every 200 ms and may play one more). Results are ours: the replay's
result where it ended the game, else OpenTafl's.

    python benchmarks/opentafl_matches.py --variant legacy_ard_ri --agent greedy --games 20 --think 1
    python benchmarks/opentafl_matches.py --variant historical_tablut --agent az:historical_tablut:64 \\
        --games 2 --out /tmp/otg --json

One line a game (OpenTafl's side, plies, result, seconds a move of each player from OpenTafl's
output, each side's first move left out, errors, notes), then one JSON line: the games, the
protocol errors, the notes, our agent's score as attacker and as defender with 95% Wilson
intervals (a draw counts half), the seconds. ``--json`` prints only that line. ``--out DIR`` keeps
each game's ``.otg`` record, the engine's transcript and OpenTafl's output. The exit status is 1
if any game had a protocol error, 2 if OpenTafl or java is missing or an argument is wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.stats import wdl  # noqa: E402
from agents.spec import AgentSpec, AgentSpecError  # noqa: E402
from tafl_env import VARIANTS, Game, make_rules  # noqa: E402
from tafl_env.errors import TaflError  # noqa: E402
from tafl_env.notation import (DEFENDER_SOLDIER, EMPTY, KING, KNIGHT, format_position,  # noqa: E402
                               parse_move, parse_position)
from tafl_env.opentafl import rules_string  # noqa: E402

from opentafl_agreement import opentafl_home  # noqa: E402  (benchmarks/ is on the path of its scripts)

PLY_LINE = re.compile(r"^\s*(\d+) (atk|def) \S")
OPENTAFL_SIDE = {"attackers": "attacker", "defenders": "defender", "draw": "draw"}
DRIVER_TIMEOUT_S = 3600          # the driver's own limit a game; we wait a minute longer


def ply_limit(variant: str) -> tuple[int, int]:
    """Our move cap in turns and the driver's ``--max-plies`` for it (see the module's docstring)."""
    rules = make_rules(variant)
    cap = rules.max_turns
    return cap, cap + cap // 2 if rules.berserk else cap


@dataclass
class GameReport:
    number: int
    ai_side: str                       # "attackers" or "defenders": OpenTafl's AI
    plies: int = 0                     # OpenTafl's count: one a move
    turns: int = 0                     # ours: one a side's turn, a berserk chain one
    opentafl: str = "unfinished"       # OpenTafl's result
    result: str = "draw"               # ours: attacker, defender or draw
    reason: str = ""                   # why: our reason, or "opentafl"/"stopped"
    seconds: float = 0.0
    ai_move_s: list[float] = field(default_factory=list)
    agent_move_s: list[float] = field(default_factory=list)
    ai_cpu_s: list[float] = field(default_factory=list)        # java's CPU time during the AI's moves
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)             # OpenTafl's own rules and faults
    divergences: int = 0                                       # berserk continuations without a capture
    walled_in: bool = False                                    # no defender with an empty square beside it

    @property
    def agent_side(self) -> str:
        return "defender" if self.ai_side == "attackers" else "attacker"

    @property
    def agent_score(self) -> float:
        return 0.5 if self.result == "draw" else float(self.result == self.agent_side)

    def line(self, games: int) -> str:
        def per_move(xs: list[float]) -> str:
            return f"{sum(xs) / len(xs):.2f}/{max(xs):.2f}" if xs else "-"
        outcome = ("draw" if self.result == "draw" else "win" if self.result == self.agent_side else "loss")
        return (f"game {self.number:>3}/{games}  AI {self.ai_side:<9}  plies {self.plies:>4}  "
                f"result {self.result} ({self.reason}), ours {outcome}  "
                f"s/move mean/max AI {per_move(self.ai_move_s)} (CPU {per_move(self.ai_cpu_s)}) "
                f"ours {per_move(self.agent_move_s)}  "
                f"{self.seconds:.0f} s  errors: {'; '.join(self.errors) if self.errors else 'none'}"
                + (f"  notes: {'; '.join(self.notes)}" if self.notes else ""))


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system, all threads) a process has used so far; None where /proc has
    no answer."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


Line = tuple[float, "float | None", str]


def run_driver(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[list[Line], bool]:
    """Run the driver; its output lines (stdout and stderr), each with the time it arrived and the CPU
    seconds java had used by then (match.sh execs java), and whether it had to be stopped after
    ``timeout`` seconds."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, process_group=0)
    killed = threading.Event()

    def stop() -> None:
        killed.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)       # the driver's own group: java and our engine
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, stop)
    timer.start()
    lines = []
    try:
        for raw in proc.stdout:
            lines.append((time.monotonic(), cpu_seconds(proc.pid), raw.rstrip("\n")))
        proc.wait()
    finally:
        timer.cancel()
    return lines, killed.is_set()


def java_exceptions(texts: list[str]) -> list[str]:
    """Each Java exception in OpenTafl's output, its message and stack frames on one line."""
    found = []
    for i, text in enumerate(texts):
        if "Exception" in text and not text[:1].isspace():
            frames = []
            for more in texts[i + 1:]:
                if not (more[:1].isspace() or more.startswith("Caused by")):
                    break
                frames.append(more.strip())
            found.append(" | ".join([text.strip(), *frames]))
    return found


FOLLOWING = "# following the host's position"


def check_transcript(path: Path, divergences: int) -> list[str]:
    """The engine transcript's error lines and warnings (first three of each kind), less one
    warning that it followed OpenTafl's position for each of the game's ``divergences``."""
    if not path.exists():
        return ["no engine transcript"]
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    errors = [ln for ln in text if "error" in ln][:3]
    warnings = [ln for ln in text if "# " in ln]
    for _ in range(divergences):
        following = next((ln for ln in warnings if ln.startswith(FOLLOWING)), None)
        if following is not None:
            warnings.remove(following)
    return [f"engine: {ln.strip()[:160]}" for ln in errors + warnings[:3]]


def after_opentafl_continuation(game: Game, token: str) -> Game:
    """A game from the position OpenTafl reaches with a berserk continuation that captures nothing
    (a plain slide, illegal here), the other side to move: OpenTafl's turn ends there."""
    move = parse_move(token, game.n)
    board = parse_position(game.position, game.n)
    board[move.target], board[move.origin] = board[move.origin], 0
    other = "defender" if game.to_move == "attacker" else "attacker"
    return Game(game.rules, position=format_position(board, game.n), to_move=other)


def defenders_walled_in(game: Game) -> bool:
    """OpenTafl's test for the defenders' moves: no defender has an empty square beside it (its
    referee counts no jumps)."""
    n = game.n
    board = parse_position(game.position, n).reshape(n, n)
    for row, col in zip(*np.nonzero(np.isin(board, (DEFENDER_SOLDIER, KNIGHT, KING)))):
        for r, c in ((row + 1, col), (row - 1, col), (row, col + 1), (row, col - 1)):
            if 0 <= r < n and 0 <= c < n and board[r, c] == EMPTY:
                return False
    return True


def replay(variant: str, moves: list[str], cap: int, report: GameReport) -> tuple[tuple[str, str] | None, bool]:
    """Replay OpenTafl's moves here: errors and notes to ``report``, our turn count to
    ``report.turns``, OpenTafl's berserk continuations without a capture to ``report.divergences``
    (the replay goes on from OpenTafl's position). Returns our (result, reason) where our rules (the
    cap included) end the game, else None, and whether every other move was legal."""
    game = Game(variant, max_turns=None)
    ours: tuple[str, str] | None = None
    ended_at, done = 0, 0                      # done: turns before the game now replayed
    for i, token in enumerate(moves, 1):
        if ours is not None and game.is_over():         # OpenTafl played on: check the rest from here
            game = Game(variant, position=game.position, to_move=game.to_move, max_turns=None)
        try:
            game.push(token)
        except TaflError as exc:
            if game.chain is None or "continuation must capture" not in str(exc):
                report.errors.append(f"ply {i} {token}: {exc}")
                if ours is None:
                    report.turns = done + game.turns
                return ours, False
            report.divergences += 1
            report.notes.append(f"ply {i} {token}: OpenTafl's berserk piece went on without a capture "
                                f"(RULES.md §10); replayed from its position")
            done += game.turns + 1
            game = after_opentafl_continuation(game, token)
        if ours is None and (game.is_over() or done + game.turns >= cap):
            ours = (game.result, game.reason) if game.is_over() else ("draw", "truncated")
            ended_at, report.turns = i, done + game.turns
    if ours is None:
        report.turns = done + game.turns
        report.walled_in = defenders_walled_in(game)
    elif ended_at < len(moves) and ours[1] != "truncated":
        report.errors.append(f"our rules end the game at ply {ended_at} ({ours[0]}, {ours[1]}); "
                             f"OpenTafl played {len(moves) - ended_at} more")
    return ours, True


def play_one(number: int, ai_side: str, args, home: Path, rules: str, folder: Path) -> GameReport:
    report = GameReport(number, ai_side)
    max_plies = ply_limit(args.variant)[1]
    stem = folder / f"game-{number:03d}-ai-{ai_side}"
    log, otg, out = stem.with_suffix(".engine.log"), stem.with_suffix(".otg"), stem.with_suffix(".opentafl.txt")
    for path in (log, otg, out):
        path.unlink(missing_ok=True)
    engine = f"{sys.executable} -m tafl_env otep --agent {args.agent} --log {log}"
    if args.seed is not None:
        engine += f" --seed {args.seed + number}"
    cmd = [str(home / "match.sh"), "--cmd", engine, "--rules", rules, "--ai-side", ai_side,
           "--think", str(args.think), "--max-plies", str(max_plies), "--timeout", str(DRIVER_TIMEOUT_S),
           "--out", str(otg)]
    with tempfile.TemporaryDirectory(prefix="opentafl-work-") as work:
        t0 = time.monotonic()
        lines, killed = run_driver(cmd, ROOT, {**os.environ, "OPENTAFL_WORK": work}, DRIVER_TIMEOUT_S + 60)
        report.seconds = time.monotonic() - t0
        out.write_text("".join(f"{t - t0:9.3f} {ln}\n" for t, _, ln in lines), encoding="utf-8")
    if killed:
        report.errors.append(f"no end after {DRIVER_TIMEOUT_S + 60} s: stopped")
    judge(report, lines, log, args.variant)
    return report


def judge(report: GameReport, lines: list[Line], log: Path, variant: str) -> None:
    """Check one game from OpenTafl's output ``lines`` and the engine transcript ``log``; the
    timings, errors, notes and result go to ``report``."""
    ai_side = report.ai_side
    cap, max_plies = ply_limit(variant)
    last, last_cpu, started = None, None, set()
    for t, cpu, text in lines:
        m = PLY_LINE.match(text)
        if m:
            ai_moved = (m.group(2) == "atk") == (ai_side == "attackers")
            if ai_moved in started:          # a side's first move also holds its start-up
                (report.ai_move_s if ai_moved else report.agent_move_s).append(t - last)
                if ai_moved and cpu is not None and last_cpu is not None:
                    report.ai_cpu_s.append(cpu - last_cpu)
            started.add(ai_moved)
            last, last_cpu = t, cpu
        elif "rejected move" in text or text.startswith("modal:"):
            report.errors.append(f"OpenTafl: {text.strip()[:160]}")
    texts = [ln for _, _, ln in lines]
    for exception in java_exceptions(texts):
        if "AiWorkspace.printSearchStats" in exception:
            report.notes.append("OpenTafl's AI: NullPointerException in printSearchStats after its move")
        else:
            report.errors.append(f"OpenTafl: {exception[:300]}")
    last_mover = next(("attacker" if m.group(2) == "atk" else "defender"
                       for m in map(PLY_LINE.match, reversed(texts)) if m), None)
    moves_line = next((ln for ln in texts if ln.startswith("MOVES")), None)
    result_line = next((ln for ln in texts if ln.startswith("RESULT ")), None)
    plies_line = next((ln for ln in texts if ln.startswith("PLIES ")), None)
    if moves_line is None or result_line is None:
        report.errors.append("OpenTafl gave no MOVES/RESULT (see its output)")
        report.errors += check_transcript(log, 0)
        return

    report.plies = int(plies_line.split()[1]) if plies_line else 0
    report.opentafl = result_line.split()[1]
    moves = [t for t in moves_line.split()[1:] if not t.endswith(".") and t != "---"]
    ours, legal = replay(variant, moves, cap, report)
    report.errors += check_transcript(log, report.divergences)
    theirs = OPENTAFL_SIDE.get(report.opentafl)
    if not legal:                            # no result to compare past an illegal move
        report.result, report.reason = ours or (theirs or "draw", "opentafl")
    elif ours is not None:
        report.result, report.reason = ours
        if ours[1] == "repetition" and theirs == last_mover != ours[0]:
            report.notes.append(f"repetition: OpenTafl gives it to the {last_mover}, who made it; "
                                f"ours to the {ours[0]} (RULES.md §10)")
        elif ours[1] != "truncated" and theirs != ours[0]:
            report.errors.append(f"OpenTafl's result {report.opentafl}, ours {ours[0]} ({ours[1]})")
    elif theirs == "attacker" and report.walled_in:
        report.result, report.reason = theirs, "opentafl"
        report.notes.append("no defender has an empty square beside it: OpenTafl's attackers win, "
                            "ours go on (a jump is left; RULES.md §10)")
    elif theirs is not None:
        report.result, report.reason = theirs, "opentafl"
        report.errors.append(f"OpenTafl ended the game ({report.opentafl}) at ply {report.plies}; "
                             f"our rules go on (turn {report.turns})")
    else:                                    # unfinished before our cap
        report.result, report.reason = "draw", "stopped"
        if report.plies < max_plies:
            report.errors.append(f"OpenTafl stopped at ply {report.plies}, before the limit {max_plies}")


def side_summary(reports: list[GameReport], side: str | None) -> dict:
    """Our agent's wins, draws, losses and score with 95% Wilson intervals, on one side or (None) both."""
    stats = wdl(r.agent_score for r in reports if side in (None, r.agent_side))
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in stats.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    p.add_argument("--agent", required=True, metavar="SPEC", help="our agent (agents/spec.py), e.g. greedy, mcts:1000")
    p.add_argument("--games", type=int, default=20, help="games; OpenTafl's AI attacks in the odd ones (default 20)")
    p.add_argument("--think", type=int, default=1, help="OpenTafl's AI: whole seconds a move (default 1)")
    p.add_argument("--seed", type=int, default=None, help="our agent's seed; game N gets SEED+N")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="keep .otg records, engine transcripts and OpenTafl's output here")
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    args = p.parse_args(argv)
    try:
        args.agent = str(AgentSpec.parse(args.agent))
    except AgentSpecError as exc:
        p.error(str(exc))
    if args.games < 1 or args.think < 1:
        p.error("--games and --think must be at least 1")
    home = opentafl_home()
    if home is None:
        print("OpenTafl (../shared/opentafl or $OPENTAFL_HOME) or java is not here", file=sys.stderr)
        return 2

    rules = rules_string(make_rules(args.variant))
    cap, max_plies = ply_limit(args.variant)
    start = time.monotonic()
    reports: list[GameReport] = []
    with tempfile.TemporaryDirectory(prefix="opentafl-matches-") as scratch:
        folder = args.out or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for number in range(1, args.games + 1):
            ai_side = "attackers" if number % 2 else "defenders"
            report = play_one(number, ai_side, args, home, rules, folder)
            reports.append(report)
            if not args.json:
                print(report.line(args.games), flush=True)

    ai_moves = [s for r in reports for s in r.ai_move_s]
    agent_moves = [s for r in reports for s in r.agent_move_s]
    ai_cpu = [s for r in reports for s in r.ai_cpu_s]
    errors = [f"game {r.number}: {e}" for r in reports for e in r.errors]
    summary = {
        "variant": args.variant, "agent": args.agent, "think_s": args.think, "games": len(reports),
        "move_cap_turns": cap, "max_plies": max_plies,
        "protocol_errors": len(errors), "games_with_errors": sum(1 for r in reports if r.errors),
        "errors": errors[:20],
        "games_with_notes": sum(1 for r in reports if r.notes),
        "notes": [f"game {r.number}: {n}" for r in reports for n in r.notes][:20],
        "agent_as_attacker": side_summary(reports, "attacker"),
        "agent_as_defender": side_summary(reports, "defender"),
        "agent_overall": side_summary(reports, None),
        "results": [{"game": r.number, "ai_side": r.ai_side, "plies": r.plies, "turns": r.turns,
                     "result": r.result, "reason": r.reason, "opentafl": r.opentafl,
                     "seconds": round(r.seconds, 1)} for r in reports],
        "ai_s_per_move": round(sum(ai_moves) / len(ai_moves), 3) if ai_moves else None,
        "ai_s_per_move_max": round(max(ai_moves), 3) if ai_moves else None,
        "ai_cpu_s_per_move": round(sum(ai_cpu) / len(ai_cpu), 3) if ai_cpu else None,
        "agent_s_per_move": round(sum(agent_moves) / len(agent_moves), 3) if agent_moves else None,
        "seconds": round(time.monotonic() - start, 1),
    }
    print(json.dumps(summary))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
