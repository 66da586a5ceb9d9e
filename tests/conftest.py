"""Shared test helpers: where the public case data lives.

Test modules import what they need from here (``from conftest import CASES_DIR``); pytest puts
this folder on ``sys.path`` because ``tests/`` is not a package.
"""

from __future__ import annotations

from pathlib import Path

CASES_DIR = Path(__file__).resolve().parent / "data" / "cases"
"""The public test cases (perft counts and game records of an independent implementation)."""
