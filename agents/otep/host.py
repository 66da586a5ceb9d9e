"""The host side of OTEP: any OpenTafl engine as an agent of this project (``otep:COMMAND``,
``otep:FILE.ini``).

:class:`OtepAgent` plays where any agent plays (``tafl play``, ``tafl eval``, ``tafl rate``). It
starts engine processes on first use and keeps them: one per game it is asked about at once (at
most ``sessions``, default 8 or ``$TAFL_OTEP_SESSIONS``; more games are asked in turn). Each process
is a *session* that follows one game: the host sends ``rules`` when a game starts, then the other
side's moves and the position (``opponent-move``) and ``play``, reads ``move``, checks it in its own
copy of the game and confirms it (``move <position>``) or refuses it (``error N``, up to three
times, then the agent fails with one line naming the engine).

A game is recognised by its state: a game whose position before the opponent's turn is the one a
session left it in continues that session. Any other game (a new one, or one whose session has gone
to another game) starts a session afresh with ``rules`` whose start is the game's position and
whose first mover is the side to move (OpenTafl's own way to set up a position); that session does
not know the game's earlier positions. A game in the middle of a berserk chain that no session
follows is passed (no rules string holds an open chain).
"""

from __future__ import annotations

import configparser
import os
import queue
import shlex
import shutil
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path

import numpy as np

from tafl_env.engine import Engine, State
from tafl_env.engine.tables import SIDE_OF
from tafl_env.errors import IllegalMoveError, InvalidMoveError, preview
from tafl_env.game import Game
from tafl_env.notation import PASS, format_move, parse_move, square_name
from tafl_env.opentafl import UnsupportedRulesError, rules_string
from tafl_env.rules import SIDES

from ..base import Agent, register_agent
from ..errors import AgentsError
from ..spec import AgentSpecError
from .protocol import (BERSERK_WRONG_PIECE, BERSERK_WRONG_SIDE, ILLEGAL_MOVE, SIDE_WORD, WRONG_SIDE, Transcript,
                       simple_move)

__all__ = ["OtepAgent", "OtepError", "engine_command"]

DEFAULT_SESSIONS = 8
MAX_REFUSALS = 3
"""Moves of one turn the host refuses before the engine counts as broken."""


class OtepError(AgentsError):
    """An OTEP engine failed: it did not start, died, gave up (``error -1``), kept playing illegal
    moves or fell silent."""


def engine_command(text: str) -> tuple[list[str], str | None, str]:
    """``(argv, working folder, name)`` of ``otep:``'s argument: a command line (run in the current
    folder), or an OpenTafl engine ``.ini`` (``[engine]`` ``directory`` relative to the .ini's
    folder, as OpenTafl resolves it against its ``engines/`` folder; ``command``; ``arguments``;
    ``filename``, which must exist there).

    >>> engine_command("tafl otep --agent greedy")
    (['tafl', 'otep', '--agent', 'greedy'], None, 'tafl otep --agent greedy')
    """
    text = (text or "").strip()
    if not text:
        raise AgentSpecError("agent spec 'otep' needs an engine: otep:COMMAND or otep:FILE.ini")
    if text.lower().endswith(".ini") and " " not in text:
        ini = Path(text).expanduser()
        parser = configparser.ConfigParser(interpolation=None)
        try:
            if not parser.read(ini, encoding="utf-8"):
                raise AgentSpecError(f"otep:{text}: no such engine file")
        except configparser.Error as exc:
            raise AgentSpecError(f"otep:{text}: not an engine .ini ({type(exc).__name__})") from None
        if not parser.has_section("engine"):
            raise AgentSpecError(f"otep:{text}: an engine .ini needs an [engine] section")
        section = parser["engine"]
        missing = [k for k in ("directory", "filename", "command") if not section.get(k, "").strip()]
        if missing:
            raise AgentSpecError(f"otep:{text}: [engine] lacks {', '.join(missing)}")
        folder = (ini.parent / section["directory"].strip()).resolve()
        if not (folder / section["filename"].strip()).exists():
            raise AgentSpecError(f"otep:{text}: the engine file {folder / section['filename'].strip()} does not exist")
        command = section["command"].strip()
        if "/" in command and not Path(command).is_absolute():
            command = str(folder / command)
        argv = [command] + section.get("arguments", "").split()
        return argv, str(folder), section.get("name", "").strip() or ini.stem
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise AgentSpecError(f"otep:{text}: {exc}") from None
    return argv, None, text


class EngineProcess:
    """One engine process: started, greeted (``hello``), lines in and out; its stderr is kept in a
    temporary file, for the error that names a failure."""

    def __init__(self, argv: list[str], cwd: str | None, name: str, transcript: Transcript,
                 hello_timeout: float):
        self.name, self.transcript = name, transcript
        exe = argv[0]
        found = Path(cwd or ".", exe).exists() if "/" in exe else shutil.which(exe) is not None
        if not found:
            raise OtepError(f"otep engine {preview(name)}: cannot run {exe!r}: not found")
        self.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.stderr, text=True, encoding="ascii", errors="replace",
                                         bufsize=1)
        except OSError as exc:
            raise OtepError(f"otep engine {preview(name)}: cannot start it: {exc.strerror or exc}") from None
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        while True:
            line = self.read(hello_timeout, "to say hello")
            if line.split(" ", 1)[0] == "hello":
                break

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)

    def send(self, line: str) -> None:
        self.transcript.sent(line)
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self.failure("stopped reading") from None

    def read(self, timeout: float | None, waiting_for: str = "to move") -> str:
        """The next non-empty line; an :class:`OtepError` when the engine ends or stays silent."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise self.failure(f"sent nothing for {timeout:g} s while waiting for it {waiting_for}") from None
            if line is None:
                self.lines.put(None)
                raise self.failure("ended")
            if line.strip():
                self.transcript.received(line.strip())
                return line.strip()

    def failure(self, what: str) -> OtepError:
        try:
            self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        code = self.proc.poll()
        self.stderr.seek(0)
        tail = " | ".join(self.stderr.read().strip().splitlines()[-3:])
        return OtepError(f"otep engine {preview(self.name)} {what}"
                         + (f" (exit status {code})" if code is not None else "")
                         + (f"; its stderr: {tail[-300:]}" if tail else ""))

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("goodbye\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self.stderr.close()


class _Session:
    """An engine process and the game it follows (the host's copy of the engine's view)."""

    def __init__(self, process: EngineProcess):
        self.process = process
        self.game: Game | None = None
        self.rules_line = ""
        self.replay: list[str] = []      # what to send again after a refused move
        self.simple = True               # 'simple-moves off' asks for full notation
        self.used = 0


def _shutdown(sessions: list) -> None:
    for s in sessions:
        try:
            s.process.close()
        except Exception:
            pass
    sessions.clear()


def _same(a: State, b: State) -> bool:
    return (int(a.turn[0]) == int(b.turn[0]) and int(a.key[0]) == int(b.key[0])
            and int(a.chain[0]) == int(b.chain[0]) and int(a.to_move[0]) == int(b.to_move[0])
            and bool(np.array_equal(a.board[0], b.board[0])))


def _follows(a: State, b: State) -> bool:
    """``b`` is ``a`` one whole turn of the other side later (by the recorded positions)."""
    t = int(a.turn[0])
    return (int(a.chain[0]) < 0 and int(b.turn[0]) == t + 1 and b.history.shape[1] > t
            and int(b.history[0, t]) == int(a.key[0]) and int(b.to_move[0]) != int(a.to_move[0]))


def _turn_between(engine: Engine, start: State, goal: State, max_moves: int = 12) -> list[tuple] | None:
    """The moves of one turn (a berserk chain: several) that lead from ``start`` to ``goal``, as
    ``(action, origin, target, notation)``; None when none does."""
    frontier = [(start, [])]
    for _ in range(max_moves):
        nxt = []
        for state, path in frontier:
            actions = np.flatnonzero(engine.legal_action_mask(state)[0])
            if not len(actions):
                continue
            kids = state.take(np.zeros(len(actions), dtype=np.intp))
            info = engine.step(kids, actions)
            origins, _, _, targets = engine.decode(actions)
            chain_goes_on = (kids.chain >= 0) & (kids.to_move == start.to_move[0]) & ~kids.done
            here = (kids.board == goal.board[0]).all(axis=1)
            for i in np.flatnonzero(chain_goes_on | here):
                a = int(actions[i])
                if a == engine.pass_action:
                    step = (a, None, None, PASS)
                else:
                    caps = tuple(int(c) for c in info.captured[i] if c < engine.s)
                    step = (a, int(origins[i]), int(targets[i]),
                            format_move(int(origins[i]), int(targets[i]), engine.n, jump=bool(info.jump[i]),
                                        continuation=bool(info.continuation[i]), captures=caps))
                kid = kids.take([i])
                if chain_goes_on[i]:
                    nxt.append((kid, path + [step]))
                elif _same(kid, goal):
                    return path + [step]
        if not nxt:
            return None
        frontier = nxt
    return None


class OtepAgent(Agent):
    """An OTEP engine as an agent (module docstring). ``command`` is ``otep:``'s argument: a command
    line, or an OpenTafl engine ``.ini``; nothing starts until the first move is asked for.

    Args:
        sessions: engine processes at most (default ``$TAFL_OTEP_SESSIONS`` or 8).
        move_timeout: seconds an engine may think before it counts as silent (default 600).
        log: a file to append every session's protocol transcript to (default ``$TAFL_OTEP_LOG``).

    ``protocol_errors`` lists the moves refused and the engine's warnings (``error 0``), each one
    line; ``close()`` ends the processes (also done when the agent is collected, or at exit).
    """

    def __init__(self, command: str, seed: int | None = None, *, sessions: int | None = None,
                 move_timeout: float = 600.0, hello_timeout: float = 60.0, log: str | None = None):
        super().__init__(seed)
        self.command = command
        self.argv, self.cwd, label = engine_command(command)
        self.name = f"otep:{label}"
        if sessions is None:
            env = os.environ.get("TAFL_OTEP_SESSIONS", "").strip()
            sessions = int(env) if env.isdigit() and int(env) > 0 else DEFAULT_SESSIONS
        self.max_sessions = int(sessions)
        self.move_timeout, self.hello_timeout = move_timeout, hello_timeout
        self.log_path = log if log is not None else (os.environ.get("TAFL_OTEP_LOG") or None)
        self._log = None
        self.protocol_errors: list[str] = []
        self._sessions: list[_Session] = []
        self._clock = 0
        self._started = 0
        self._finalizer = weakref.finalize(self, _shutdown, self._sessions)

    def __reduce__(self):
        """A copy for another process: the same engine, no processes yet."""
        return (_rebuild, (self.command, self.max_sessions, self.move_timeout, self.hello_timeout, self.log_path))

    def close(self) -> None:
        """End the engine processes (``goodbye``; after two seconds they are stopped)."""
        _shutdown(self._sessions)
        if self._log is not None:
            self._log.close()
            self._log = None

    def check_rules(self, rules) -> str | None:
        try:
            rules_string(rules)
        except UnsupportedRulesError as exc:
            raise AgentSpecError(f"{self.name} cannot be given {rules.name}: {exc}") from None
        return None

    def reset(self, seed: int | None = None) -> None:
        """New games: every session starts afresh at its next move (the processes are kept)."""
        super().reset(seed)
        for s in list(self._sessions):
            try:
                if s.game is not None:
                    s.process.send("finish 0")
            except OtepError:
                s.process.close()
                self._sessions.remove(s)
            s.game = None

    # --- moves -------------------------------------------------------------------------------------

    def choose(self, engine: Engine, state: State) -> np.ndarray:
        rules = engine.rules
        self.check_rules(rules)
        out = np.full(len(state), -1, dtype=np.int64)
        rows = [state.take([g]) for g in range(len(state))]
        pending = list(range(len(state)))
        try:
            while pending:
                plan, pending = self._plan(engine, rows, pending, out)
                for g, session, kind, turn in plan:
                    self._ask(session, engine, rows[g], kind, turn)
                for g, session, _, _ in plan:
                    out[g] = self._answer(session)
        except BaseException:
            _shutdown(self._sessions)         # answers still in flight would answer the wrong question
            raise
        return out

    def _plan(self, engine: Engine, rows: list[State], pending: list[int], out: np.ndarray):
        """(game, session, how, the other side's turn) for the games the sessions take now, and the
        games left for the next round (more games than sessions)."""
        rules = engine.rules
        free = [s for s in self._sessions if s.game is not None and s.game.rules == rules]
        plan, fresh = [], []
        for g in pending:
            row = rows[g]
            match = next((s for s in free if _same(s.game.state, row)), None)
            kind, turn = "same", []
            if match is None:
                for s in free:
                    if _follows(s.game.state, row):
                        found = _turn_between(engine, s.game.state, row)
                        if found is not None:
                            match, kind, turn = s, "follow", found
                            break
            if match is None:
                fresh.append(g)
                continue
            free.remove(match)
            plan.append((g, match, kind, turn))
        taken = {id(s) for _, s, _, _ in plan}
        spare = sorted((s for s in self._sessions if id(s) not in taken), key=lambda s: (s.game is not None, s.used))
        left = []
        for g in fresh:
            if int(rows[g].chain[0]) >= 0:
                out[g] = engine.pass_action       # an open chain no session follows (module docstring)
                continue
            if spare:
                session = spare.pop(0)
            elif len(self._sessions) < self.max_sessions:
                session = self._start()
            else:
                left.append(g)
                continue
            plan.append((g, session, "fresh", []))
        return plan, left

    def _start(self) -> _Session:
        if self.log_path and self._log is None:
            self._log = open(self.log_path, "a", encoding="utf-8")
        self._started += 1
        transcript = _NumberedTranscript(self._log, self._started)
        session = _Session(EngineProcess(self.argv, self.cwd, self.name[len("otep:"):], transcript,
                                         self.hello_timeout))
        self._sessions.append(session)
        return session

    def _ask(self, session: _Session, engine: Engine, row: State, kind: str, turn: list[tuple]) -> None:
        """Send what brings the session's engine to ``row`` (rules, the other side's turn or nothing)
        and ``play``."""
        rules = engine.rules
        self._clock += 1
        session.used = self._clock
        game = Game.from_state(rules, row)
        side = game.to_move
        if kind == "fresh":
            if session.game is not None:
                session.process.send("finish 0")
            start = rules
            if int(row.turn[0]) == 1 and int(row.start_side[0]) == rules.first_side:
                first = _turn_between(engine, engine.initial_state(1), row)   # the game's first turn
                if first is not None:
                    kind, turn = "follow", first
            if kind == "fresh" and (game.position != rules.layout or side != rules.first_to_move):
                start = rules.replace(layout=game.position, first_to_move=side)
            session.rules_line = "rules " + rules_string(start)
            session.process.send(session.rules_line)
            session.replay = []
        if kind == "follow":
            moves = [(text if not session.simple else simple_move(o, t, rules.board_size))
                     for _, o, t, text in turn if text != PASS]
            line = f"opponent-move {'|'.join(moves)} {game.position}"
            session.process.send(line)
            session.replay = [line]
        else:
            session.replay = []
        session.game = game
        session.process.send(f"play {SIDE_WORD[side]}")

    def _answer(self, session: _Session) -> int:
        """The engine's move, checked and confirmed; refused moves are answered with ``error N``."""
        refusals = []
        process = session.process
        while True:
            line = process.read(self.move_timeout)
            word, _, rest = line.partition(" ")
            if word == "move":
                action, code, why = self._check(session, rest.strip())
                if action is not None:
                    process.send(f"move {session.game.position}")
                    return action
                refusals.append(f"{preview(rest.strip())} ({why})")
                self.protocol_errors.append(f"{self.name} played {refusals[-1]} in {session.game.position}")
                process.send(f"error {code}")
                if len(refusals) >= MAX_REFUSALS:
                    raise OtepError(f"{self.name} played {len(refusals)} illegal moves in "
                                    f"{session.game.position} ({SIDE_WORD[session.game.to_move]} to move): "
                                    + "; ".join(refusals))
                for again in session.replay:
                    process.send(again)
                process.send(f"play {SIDE_WORD[session.game.to_move]}")
            elif word == "error":
                code, _, text = rest.partition(" ")
                if code.strip() == "-1":
                    raise OtepError(f"{self.name} gave up: {text.strip() or 'error -1'}")
                self.protocol_errors.append(f"{self.name} warned: {rest.strip()}")
            elif word == "rules":
                process.send(session.rules_line)
            elif word == "position":
                process.send(f"position {session.game.position}")
            elif word == "side":
                process.send(f"side {SIDE_WORD[session.game.to_move]}")
            elif word == "simple-moves":
                session.simple = rest.strip().lower() != "off"
            # status, analysis, clock (this host keeps none), hello, dump ...: nothing to answer

    def _check(self, session: _Session, text: str) -> tuple[int | None, int, str]:
        """(action, 0, '') for a legal move of the side to move, else (None, error code, why)."""
        game = session.game
        text = text.split()[0] if text else ""
        try:
            parsed = parse_move(text, game.n)
        except InvalidMoveError as exc:
            return None, ILLEGAL_MOVE, str(exc)
        chain = game.state.chain[0]
        if parsed != PASS:
            owner = int(SIDE_OF[game.state.board[0, parsed.origin]])
            if owner < 0:
                return None, ILLEGAL_MOVE, f"no piece on {square_name(parsed.origin, game.n)}"
            if owner != int(game.state.to_move[0]):
                return None, (BERSERK_WRONG_SIDE if chain >= 0 else WRONG_SIDE), \
                    f"a piece of the {SIDES[owner]}s, but the {game.to_move}s are to move"
            if chain >= 0 and parsed.origin != chain:
                return None, BERSERK_WRONG_PIECE, f"the berserk piece on {square_name(int(chain), game.n)} must move"
        trial = game.copy()
        try:
            move = trial.push_notation(text)
        except (IllegalMoveError, InvalidMoveError) as exc:
            return None, ILLEGAL_MOVE, str(exc).split(": ", 1)[-1]
        session.game = trial
        return move.action, 0, ""


class _NumberedTranscript(Transcript):
    """A host transcript line names its session: ``2 >> play attackers``."""

    def __init__(self, stream, number: int):
        super().__init__(stream)
        self.number = number

    def note(self, direction: str, line: str) -> None:
        super().note(f"{self.number} {direction}", line)


def _rebuild(command, sessions, move_timeout, hello_timeout, log) -> OtepAgent:
    return OtepAgent(command, sessions=sessions, move_timeout=move_timeout, hello_timeout=hello_timeout, log=log)


def _factory(argument, seed=None, **kwargs) -> OtepAgent:
    return OtepAgent(argument or "", seed=seed, **kwargs)


register_agent("otep", _factory, takes_argument=True)
