"""An OTEP engine: any agent of this project, playing for OpenTafl (or any OTEP host) over a pipe.

:class:`OtepEngine` reads the host's lines and answers them (``tafl otep`` runs it on stdin and
stdout). It keeps the game in a :class:`tafl_env.Game` and follows the host's moves, but the
position a host sends is what counts: whenever its moves do not lead to that position here (the
rules differ in a detail, a repetition ended the game here and not there, a move was refused), the
game goes on from the position the host sent.

The engine never passes a berserk chain (OpenTafl has no pass): when the agent would pass, it plays
one of the chain's capturing continuations instead. A move the host refuses (``error N``) is not
offered again in that position; after ``error 4`` (the berserk piece must move) only the piece that
moved last is played.
"""

from __future__ import annotations

import random
import traceback
from typing import Callable, Iterable, TextIO

import numpy as np

from tafl_env.errors import TaflError
from tafl_env.game import Game
from tafl_env.opentafl import UnsupportedRulesError, parse_rules_string

from ..spec import AgentSpec
from .protocol import BERSERK_WRONG_PIECE, Clock, Transcript, read_side, send_line, simple_move


class OtepEngine:
    """The engine side of OTEP for one agent spec (``build(spec, seed)`` makes the agent, once, when
    the first rules arrive). :meth:`handle` takes one line from the host and writes the answers to
    ``out``; it returns False on ``goodbye``."""

    def __init__(self, spec: AgentSpec, out: TextIO, *, log: TextIO | None = None, seed: int | None = None,
                 build: Callable | None = None):
        self.spec = spec
        self.out = out
        self.transcript = Transcript(log)
        self.log = log
        self.seed = seed
        self._build = build
        self.agent = None
        self.rules = None
        self.game: Game | None = None
        self.record: str | None = None        # the last position the host sent
        self.side: str | None = None          # from 'side' (analysis)
        self.clock: Clock | None = None
        self.before: Game | None = None       # the game before the move last sent
        self.sent: str | None = None
        self.rejected: dict[tuple[str, str], set[str]] = {}
        self.only_piece: int | None = None    # after error 4: the berserk piece
        self.sent_target: int | None = None   # where the move last sent went
        self.last_target: int | None = None   # ... and the move the host last accepted
        self.warmed = False
        self.rng = random.Random(seed)

    # --- I/O -------------------------------------------------------------------------------------

    def send(self, line: str) -> None:
        send_line(self.out, self.transcript, line)

    def note(self, text: str) -> None:
        """A line for the log only (``# ...``): what the engine did that the protocol does not show."""
        self.transcript.note("#", text)

    def hello(self) -> None:
        self.send("hello")

    def run(self, lines: Iterable[str]) -> int:
        """Answer every line until ``goodbye`` or the end of input; returns 0."""
        for raw in lines:
            if not self.handle(raw):
                break
        return 0

    def handle(self, raw: str) -> bool:
        line = raw.strip()
        if not line:
            return True
        self.transcript.received(line)
        word, _, rest = line.partition(" ")
        handler = getattr(self, "_on_" + word.replace("-", "_"), None)
        if word == "goodbye":
            return False
        if handler is None:
            return True                        # unknown lines are ignored
        try:
            handler(rest.strip())
        except Exception as exc:               # a bug must not take the host's game down silently
            if self.log is not None:
                traceback.print_exc(file=self.log)
            self.send(f"error -1 {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        return True

    # --- messages ----------------------------------------------------------------------------------

    def _on_rules(self, text: str) -> None:
        try:
            rules = parse_rules_string(text, max_turns=None)
        except UnsupportedRulesError as exc:
            self.rules = self.game = None
            self.send(f"error -1 {exc}")
            return
        try:
            agent = self._agent()
            note = agent.check_rules(rules)
        except ValueError as exc:
            self.rules = self.game = None
            self.send(f"error -1 {' '.join(str(exc).split())}")
            return
        if note and self.log is not None:
            self.log.write(f"note: {note}\n")
        self.rules = rules
        self._new_game(Game(rules))
        if not self.warmed:                   # compile the agent's kernels before the clock runs
            self.warmed = True
            agent.act(self.game.engine, self.game.state)

    def _on_position(self, text: str) -> None:
        if text:
            self.record = text.split()[0]

    def _on_side(self, text: str) -> None:
        self.side = read_side(text) or self.side

    def _on_clock(self, text: str) -> None:
        self.clock = Clock.parse(text)

    def _on_opponent_move(self, text: str) -> None:
        moves, _, position = text.rpartition(" ")
        if not moves:                          # one field: a move list without a position
            moves, position = position, ""
        if self.game is None:
            self.record = position or self.record
            return
        if position and self.game.position == position:
            return                             # re-sent after a refused move: already here
        trial = self.game.copy()
        try:
            for move in moves.split("|"):
                if move:
                    trial.push(move)
        except TaflError:
            trial = None
        if trial is not None and (not position or trial.position == position):
            self.game, self.record = trial, None
        else:
            self.record = position or None

    def _on_play(self, text: str) -> None:
        side = read_side(text)
        if side is None:
            return
        if self.game is None:
            self.send("error -1 no rules to play: send 'rules' first")
            return
        game = self._synced(side)
        move = self._choose(game)
        if move is None:
            self.send("error -1 no legal move left")
            return
        self.before = game.copy()
        self.sent = move.notation
        game.push(move.action)
        self.sent_target = move.target
        self.only_piece = None
        self.send("move " + simple_move(move.origin, move.target, game.n))

    def _on_move(self, text: str) -> None:
        position = text.split()[0] if text else ""
        if self.game is not None and position and self.game.position != position:
            self.record = position
        if self.before is not None:
            self.last_target = self.sent_target
        self.before = None

    def _on_error(self, text: str) -> None:
        try:
            code = int(text.split()[0])
        except (IndexError, ValueError):
            return
        if code <= 0 or self.before is None:   # a warning, or nothing of ours to take back
            return
        key = (self.before.position, self.before.to_move)
        self.rejected.setdefault(key, set()).add(self.sent)
        self.game, self.before = self.before, None
        if code == BERSERK_WRONG_PIECE and self.last_target is not None:
            self.only_piece = self.last_target

    def _on_finish(self, text: str) -> None:
        self.game, self.record, self.before = None, None, None
        self.rejected.clear()
        if self.rules is not None:
            self._new_game(Game(self.rules))

    def _on_analyze(self, text: str) -> None:
        if self.game is None or self.side is None:
            return
        move = self._choose(self._synced(self.side))
        if move is not None:
            self.send(f"analysis 1 {simple_move(move.origin, move.target, self.game.n)} 0")

    # --- the game ----------------------------------------------------------------------------------

    def _agent(self):
        if self.agent is None:
            build = self._build
            if build is None:
                from ..base import make_agent as build
            self.agent = build(self.spec, seed=self.seed)
        return self.agent

    def _new_game(self, game: Game) -> None:
        self.game, self.record, self.before, self.only_piece = game, None, None, None

    def _synced(self, side: str) -> Game:
        """The game, made to agree with the host: its last position, ``side`` to move."""
        game = self.game
        if self.record is not None and self.record != game.position:
            self.note(f"following the host's position {self.record} ({side}s to move)")
            game = Game(self.rules, position=self.record, to_move=side)
        elif game.chain is not None and game.to_move != side:
            game = game.copy()
            game.push("pass")                  # the host's side ended its chain without a move here
        if game.is_over() or game.to_move != side:
            self.note(f"going on from {game.position} with the {side}s to move"
                      + (f" (the game here ended: {game.result}, {game.reason})" if game.is_over() else ""))
            game = Game(self.rules, position=game.position, to_move=side)
        self.game, self.record = game, None
        return game

    def _choose(self, game: Game):
        """The agent's move (never a pass; not one the host refused here), or None if none is left."""
        refused = self.rejected.get((game.position, game.to_move), set())
        moves = [m for m in game.legal_moves() if not m.is_pass and m.notation not in refused]
        if self.only_piece is not None:
            moves = [m for m in moves if m.origin == self.only_piece] or moves
        if not moves:
            return None
        agent = self._agent()
        if self.clock is not None and self.spec.seconds is not None and hasattr(agent, "seconds"):
            agent.seconds = self.clock.seconds_for(game.to_move, self.spec.seconds)
        action = int(np.asarray(agent.act(game.engine, game.state)).reshape(-1)[0])
        chosen = next((m for m in moves if m.action == action), None)
        return chosen if chosen is not None else self.rng.choice(moves)

