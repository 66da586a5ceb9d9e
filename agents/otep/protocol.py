"""What both ends of the OpenTafl Engine Protocol share: side words, error codes, the clock line,
move texts and the transcript.

OTEP (OpenTafl's ``opentafl-engine-protocol.txt``, as OpenTafl 0.4.8 speaks it) is one ASCII line
per message in each direction; docs/opentafl.md lists the messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

from tafl_env.notation import square_name

SIDE_WORD = {"attacker": "attackers", "defender": "defenders"}
"""This project's side names → the protocol's."""
SIDE_OF_WORD = {word: side for side, word in SIDE_WORD.items()}

WRONG_SIDE, ILLEGAL_MOVE, BERSERK_WRONG_SIDE, BERSERK_WRONG_PIECE = 1, 2, 3, 4
"""``error N`` codes the host sends for a refused move."""

FINISH_CODES = {None: 0, "draw": 1, "attacker": 2, "defender": 3}
"""``finish N``: no result, draw, attackers win, defenders win."""


def read_side(word: str) -> str | None:
    """``attackers``/``defenders`` (singular accepted) → ``attacker``/``defender``; else None."""
    word = word.strip().lower()
    return SIDE_OF_WORD.get(word) or (word if word in SIDE_WORD else None)


def simple_move(origin: int, target: int, n: int) -> str:
    """The protocol's simple notation: origin, ``-``, target (jumps and continuations too)."""
    return f"{square_name(origin, n)}-{square_name(target, n)}"


@dataclass(frozen=True)
class Clock:
    """A ``clock`` line: each side's time left (ms; of the current overtime period when ``*``),
    the overtime period's length and the periods each side has left."""

    attacker_ms: int
    defender_ms: int
    attacker_overtime: bool = False
    defender_overtime: bool = False
    overtime_s: float = 0.0
    attacker_periods: int = 0
    defender_periods: int = 0

    @classmethod
    def parse(cls, text: str) -> "Clock | None":
        """``<atk_ms>[*] <def_ms>[*] <overtime_s> <atk_ot> <def_ot>`` (the last three optional);
        None when it does not read as one.

        >>> Clock.parse("60000 1500* 10 0 2")
        Clock(attacker_ms=60000, defender_ms=1500, attacker_overtime=False, defender_overtime=True, overtime_s=10.0, attacker_periods=0, defender_periods=2)
        """
        parts = text.split()
        try:
            att, dfd = parts[0], parts[1]
            rest = [float(p) for p in parts[2:5]]
            return cls(int(att.rstrip("*")), int(dfd.rstrip("*")), att.endswith("*"), dfd.endswith("*"),
                       rest[0] if rest else 0.0, int(rest[1]) if len(rest) > 1 else 0,
                       int(rest[2]) if len(rest) > 2 else 0)
        except (IndexError, ValueError):
            return None

    def seconds_for(self, side: str, budget: float) -> float:
        """The time to spend on a move of ``side``: a thirtieth of the main time left (plus most of
        an overtime period when periods are left), most of the period once in overtime; never more
        than ``budget``, never less than a hundredth of a second.

        >>> Clock(60000, 60000).seconds_for("attacker", 5.0), Clock(60000, 60000).seconds_for("attacker", 1.0)
        (2.0, 1.0)
        >>> Clock(0, 3000, defender_overtime=True, overtime_s=10, defender_periods=1).seconds_for("defender", 5.0)
        1.8
        """
        left = (self.attacker_ms if side == "attacker" else self.defender_ms) / 1000.0
        overtime = self.attacker_overtime if side == "attacker" else self.defender_overtime
        periods = self.attacker_periods if side == "attacker" else self.defender_periods
        if overtime:
            share = 0.6 * left
        else:
            share = left / 30.0 + (0.6 * self.overtime_s if periods > 0 else 0.0)
        return round(max(0.01, min(float(budget), share)), 6)


class Transcript:
    """The protocol lines of a session, one a line: ``<<`` received, ``>>`` sent (``--log``)."""

    def __init__(self, stream: TextIO | None):
        self.stream = stream

    def note(self, direction: str, line: str) -> None:
        if self.stream is not None:
            self.stream.write(f"{direction} {line}\n")
            self.stream.flush()

    def received(self, line: str) -> None:
        self.note("<<", line)

    def sent(self, line: str) -> None:
        self.note(">>", line)


def send_line(out: TextIO, transcript: Transcript, line: str) -> None:
    """One protocol line to ``out`` at once (the host waits on it), and to the transcript."""
    transcript.sent(line)
    out.write(line + "\n")
    out.flush()
