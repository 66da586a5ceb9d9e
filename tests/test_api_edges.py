"""API edges of the front ends (issue 12, items 4 and 6, and the outcome types).

Each bad input must be rejected with an error naming what was wrong, leaving nothing half-applied;
the conventions of PettingZoo and Gymnasium (``state_space``, ``rgb_array``) must hold.
"""

from __future__ import annotations

import numpy as np
import pytest

from tafl_env import Game, make_rules
from tafl_env.errors import IllegalMoveError, InvalidMoveError, InvalidOptionError, TaflError
from tafl_env.notation import parse_position, parse_square

TABLUT = "historical_tablut"


# --- notation: ASCII digits only ---------------------------------------------------------------

@pytest.mark.parametrize("text", ["e\uff12-c2", "e2-c\uff12", "e\u0662-c2", "e2-c2xd\uff12", "e\uff12"])
def test_moves_with_non_ascii_digits_are_malformed(text):
    g = Game(TABLUT)
    with pytest.raises(InvalidMoveError, match="malformed"):
        g.push(text)
    assert g.turns == 0 and not g.moves


def test_squares_and_positions_with_non_ascii_digits_are_malformed():
    with pytest.raises(InvalidMoveError, match="malformed square"):
        parse_square("e\uff15", 9)
    start = Game(TABLUT).position
    with pytest.raises(TaflError, match="\uff13"):
        parse_position(start.replace("3", "\uff13", 1), 9)
    assert parse_square("e5", 9) == 40
