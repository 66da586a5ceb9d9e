"""What the bad-input tests measure of an error message."""

from __future__ import annotations

import re

_PATH = re.compile(r"/[^\s:',]+")


def words_length(text: str) -> int:
    """The length of ``text`` with each path it quotes counted as ``/PATH``: a bound on a message's
    words, not on the temporary folders it names (their length varies, e.g. under pytest-xdist)."""
    return len(_PATH.sub("/PATH", text))
