"""``tafl otep --agent SPEC``: any agent as an OpenTafl engine, speaking OTEP on stdin and stdout.

Registered through the ``tafl.commands`` entry-point group (``pyproject.toml``). It answers
``hello`` before it builds the agent (OpenTafl gives an engine five seconds to say it), writes
nothing but protocol lines to stdout and nothing at all to stderr while it plays (OpenTafl never
reads an engine's stderr): ``--log FILE`` gets the transcript, and any warning or traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from tafl_env.cli import CommandError, seed_int

DESCRIPTION = """Play an agent as an OpenTafl engine: the OpenTafl Engine Protocol (OTEP) on stdin and
stdout. Point an OpenTafl engine .ini at this command (docs/opentafl.md), or another program's
otep: agent. The agent is built when the first rules arrive; rules it cannot play are refused
with 'error -1' naming them."""


def cmd_otep(args: argparse.Namespace) -> int:
    from ..spec import AgentSpec, AgentSpecError
    from .protocol import Transcript, send_line

    try:
        spec = AgentSpec.parse(args.agent)
    except AgentSpecError as exc:
        raise CommandError(str(exc)) from None
    try:
        log = open(args.log, "a", encoding="utf-8") if args.log else None
    except OSError as exc:
        raise CommandError(f"--log {args.log}: {exc.strerror or exc}") from None
    os.environ["TAFL_COMPILE_NOTICE"] = "0"
    # hello before the engine module loads: importing it loads the engine and numba (most of a second)
    send_line(sys.stdout, Transcript(log), "hello")
    from .engine import OtepEngine

    engine = OtepEngine(spec, sys.stdout, log=log, seed=args.seed)
    sink = log if log is not None else open(os.devnull, "w", encoding="utf-8")
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = sink            # stray prints must not reach the protocol or stderr
    try:
        return engine.run(iter(sys.stdin.readline, ""))
    finally:
        sys.stdout, sys.stderr = saved
        sink.close()


def add_otep(sub) -> None:
    """The ``tafl otep`` command (entry point ``otep`` of ``tafl.commands``)."""
    p = sub.add_parser("otep", help="play an agent as an OpenTafl engine (OTEP on stdin/stdout)",
                       description=DESCRIPTION)
    p.add_argument("--agent", required=True, metavar="SPEC",
                   help="the agent: random, greedy, mcts:N, mcts:Ts (uses the host's clock, up to T a move), "
                        "policy:PATH, az:MODEL ...")
    p.add_argument("--log", metavar="FILE", help="append the protocol transcript (and any warning) to FILE")
    p.add_argument("--seed", type=seed_int, default=None, help="the agent's random seed")
    p.set_defaults(func=cmd_otep)
