"""The commands that the agents package adds to ``tafl``: ``eval``, ``train``, ``play`` and ``rate``.

They reach the ``tafl`` command through the entry-point group ``tafl.commands`` (``pyproject.toml``):
:mod:`tafl_env.cli` knows nothing of this package and loads an add-on command only when it is
asked for. Each ``add_*`` function adds one sub-parser; the commands report bad input as
:class:`tafl_env.cli.CommandError` (one line on stderr, exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tafl_env.cli import (PROG, CommandError, add_json_flag, add_rule_options, add_start_options,
                          bounded_float, emit_json, positive_int, result_text, rule_options_from_args,
                          seed_int)
from tafl_env.errors import preview
from tafl_env.extras import require
from tafl_env.rules import SIDES

from .errors import AgentsError

__all__ = ["add_eval", "add_train", "add_play", "add_rate", "add_warmup"]


MAX_MINUTES = 10**6
"""The longest ``--max-minutes`` (about two years): a finite bound, so that ``inf`` is refused."""

CONFIG_OUT = object()
"""``--out`` given without a folder: the config's ``output_dir``."""


def cmd_eval(args: argparse.Namespace) -> int:
    require("eval", f"{PROG} eval")
    from .evaluation.report import check_output_dir, format_report, fresh_run_dir, summary_line
    from .evaluation.tournament import load_tournament_config, run_tournament, select_agents

    if isinstance(args.out, str) and not args.out.strip():
        raise CommandError("--out needs a folder, got an empty string")
    overrides = {"seed": args.seed, "games_per_pair": args.games, "records": True if args.records else None}
    flags = {"seed": "--seed", "games_per_pair": "--games", "records": "--records"}
    address = None
    if args.ray is not None:
        require("rllib", f"{PROG} eval --ray")
    try:
        config = select_agents(load_tournament_config(args.config, overrides, flags), args.agents)
        if args.out is None:
            out = fresh_run_dir(config["variant"])
        else:
            out = Path(config["output_dir"] if args.out is CONFIG_OUT else args.out)
        check_output_dir(out, keep_results=not args.overwrite)
        if args.ray is not None:
            from .ray_session import check_address, resolve_address

            address = resolve_address(args.ray or None)
            if address is not None:
                check_address(address)
        if not args.json:
            print(f"results will go to {out}", flush=True)
        result = run_tournament(config, out_dir=out, progress=not args.no_progress, jobs=args.jobs,
                                ray=False if args.ray is None else (address or True))
    except AgentsError as exc:
        raise CommandError(str(exc)) from None
    if "ray" in result:
        print(f"games played as Ray tasks on {result['ray']['address']} ({result['ray']['cpus']:g} CPUs)")
    print(format_report(result))
    print(f"results written to {result['out_dir']}")
    if args.json:
        emit_json(summary_line(result))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    require("train", f"{PROG} train")

    try:
        config = _load_train_config(args.config)
    except AgentsError as exc:
        raise CommandError(str(exc)) from None
    if config.get("backend") == "rllib":
        return _train_rllib(args, config)
    if config.get("backend") == "az":
        return _train_az(args, config)
    if args.address is not None:
        raise CommandError(f"--address is for configs with backend: rllib or az; {args.config} trains with sb3")
    from .ppo.run import format_summary, train

    try:
        if args.max_minutes is not None:
            config["max_minutes"] = args.max_minutes
        summary = train(config, out_dir=args.out, total_timesteps=args.timesteps, resume=args.resume,
                        seed=args.seed, progress=False if args.no_progress else None,
                        final_eval=not args.no_eval,
                        command=" ".join([PROG, "train", *sys.argv[2:]]) if sys.argv[1:2] == ["train"] else None)
    except AgentsError as exc:
        raise CommandError(str(exc)) from None
    except FileNotFoundError as exc:
        raise CommandError(f"cannot read {exc.filename}: {exc.strerror}") from None
    print(format_summary(summary))
    print(f"results written to {summary['out']}")
    if args.json:
        emit_json(summary)
    return 0


def _load_train_config(path: str) -> dict:
    """A training config of either backend (``backend: sb3``, the default, or ``backend: rllib``)."""
    from .schema import read_yaml_config

    raw = read_yaml_config(path)
    if isinstance(raw, dict) and raw.get("backend") == "az":
        from .az.config import validate_az_config

        return validate_az_config(raw, source=str(path))
    if isinstance(raw, dict) and raw.get("backend") == "rllib":
        require("rllib", f"{PROG} train with backend: rllib")
        from .rllib.config import validate_rllib_config

        return validate_rllib_config(raw, source=str(path))
    from .ppo.config import validate_train_config

    return validate_train_config(raw, source=str(path))


def _train_rllib(args: argparse.Namespace, config: dict) -> int:
    from .rllib.trainer import format_summary, train_rllib

    try:
        summary = train_rllib(config, out_dir=args.out, total_timesteps=args.timesteps, resume=args.resume,
                              seed=args.seed, progress=False if args.no_progress else None,
                              final_eval=not args.no_eval, address=args.address, max_minutes=args.max_minutes,
                              command=" ".join([PROG, "train", *sys.argv[2:]]) if sys.argv[1:2] == ["train"] else None)
    except AgentsError as exc:
        raise CommandError(str(exc)) from None
    except FileNotFoundError as exc:
        raise CommandError(f"cannot read {exc.filename}: {exc.strerror}") from None
    print(format_summary(summary))
    print(f"results written to {summary['out']}")
    if args.json:
        emit_json(summary)
    return 0


def _train_az(args: argparse.Namespace, config: dict) -> int:
    from .az.train import format_summary, train_az
    from .schema import ConfigError

    if args.timesteps is not None:
        raise CommandError(f"--timesteps is for sb3 and rllib configs; {args.config} (backend: az) counts "
                           "'iterations' (and --max-minutes)")
    try:
        summary = train_az(config, out_dir=args.out, resume=args.resume, seed=args.seed,
                           max_minutes=args.max_minutes, progress=False if args.no_progress else None,
                           final_eval=not args.no_eval, address=args.address,
                           command=" ".join([PROG, "train", *sys.argv[2:]]) if sys.argv[1:2] == ["train"] else None)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    except FileNotFoundError as exc:
        raise CommandError(f"cannot read {exc.filename}: {exc.strerror}") from None
    print(format_summary(summary))
    print(f"results written to {summary['out']}")
    if args.json:
        emit_json(summary)
    return 0


PLAY_HELP = """Type a move in notation (RULES.md section 1), e.g. d2-d3, f7^f9 (a jump), or 'pass' to
end a berserk chain; captures need not be written. Other commands:
  moves       list your legal moves
  moves SQ    list the legal moves of your piece on SQ, e.g. 'moves e3'
  undo        take back your last move (and the reply to it)
  board       draw the board again (the last move is marked: the piece in ( ), where it came from *)
  help        this text
  quit        give up and leave"""


def _board_text(game) -> str:
    from tafl_env.render import render_ansi

    return render_ansi(game.engine, game.state, last_move=game.moves[-1] if game.moves else None)


def _piece_moves(game, text: str, human: str) -> str:
    """The answer to ``moves SQ``: the legal moves of the piece on SQ, or why there are none."""
    from tafl_env.engine.tables import SIDE_OF
    from tafl_env.errors import InvalidMoveError
    from tafl_env.notation import parse_square, square_name

    try:
        sq = parse_square(text, game.n)
    except InvalidMoveError as exc:
        return f"cannot read the square {preview(text)}: {exc}"
    name = square_name(sq, game.n)
    side = int(SIDE_OF[game.state.board[0, sq]])
    if side < 0:
        return f"there is no piece on {name}"
    if side != SIDES.index(human):
        return f"the piece on {name} is not yours (you play the {human}s)"
    mine = [m.notation for m in game.legal_moves() if m.origin == sq]
    return " ".join(mine) if mine else f"the piece on {name} has no legal move now"


def cmd_play(args: argparse.Namespace) -> int:
    from tafl_env.engine.tables import SIDE_OF
    from tafl_env.errors import IllegalMoveError, InvalidMoveError
    from tafl_env.game import Game
    from tafl_env.notation import PASS, parse_move, square_name

    from .base import make_agent

    # everything is checked before the game starts: the variant and options, the agent, its rules
    game = Game(args.variant, position=args.position, to_move=args.to_move, **rule_options_from_args(args, cap=True))
    try:
        agent = make_agent(args.vs, seed=args.seed)
        note = agent.check_rules(game.rules)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    human = args.side
    them = SIDES[1 - SIDES.index(human)]
    stdin = sys.stdin
    print(f"{game.rules.title}: you play the {human}s "
          f"against {args.vs} ({them}s). Type 'help' for help.")
    if note:
        print(f"note: {note}")
    print(_board_text(game))
    history: list = []     # the game before each of the person's moves, for 'undo'
    quit_ = False
    while not game.is_over():
        if game.to_move != human:
            action = int(agent.act(game.engine, game.state)[0])
            move = game.push(action)
            print(f"{args.vs} ({them}) plays {move.notation}")
            print(_board_text(game))
            continue
        chain = f" (berserk chain on {game.chain}: capture again or 'pass')" if game.chain else ""
        print(f"your move ({human}){chain}> ", end="", flush=True)
        line = stdin.readline()
        if not line:
            print("\nend of input: leaving the game")
            quit_ = True
            break
        text = line.strip()
        if not text:
            continue
        low = text.lower()
        words = low.split()
        if low in ("quit", "exit", "q", "resign"):
            print("you left the game")
            quit_ = True
            break
        if low in ("help", "?", "h"):
            print(PLAY_HELP)
            continue
        if low == "board":
            last = game.moves[-1].notation if game.moves else None
            print(_board_text(game) + (f"\nlast move: {last}" if last else ""))
            continue
        if low == "moves":
            print(" ".join(m.notation for m in game.legal_moves()))
            continue
        if words[0] == "moves" and len(words) == 2:
            print(_piece_moves(game, words[1], human))
            continue
        if low in ("undo", "takeback", "u"):
            if not history:
                print("nothing to undo: you have not moved yet")
                continue
            game = history.pop()
            print(f"took back your last move; {human} to move again")
            print(_board_text(game))
            continue
        try:
            parsed = parse_move(text, game.n)
            if parsed != PASS and SIDE_OF[game.state.board[0, parsed.origin]] == 1 - SIDES.index(human):
                raise IllegalMoveError(f"the piece on {square_name(parsed.origin, game.n)} is not yours "
                                       f"(you play the {human}s)")
            before = game.copy()
            move = game.push(text)
        except InvalidMoveError as exc:
            print(f"cannot read that move: {exc}. Type 'moves' for the legal moves, 'help' for help.")
            continue
        except IllegalMoveError as exc:
            print(f"not a legal move: {exc}. Type 'moves' for the legal moves, 'help' for help.")
            continue
        history.append(before)
        print(f"you play {move.notation}")
        print(_board_text(game))
    if quit_:
        outcome = "abandoned"
    else:
        outcome = result_text(game)
        verdict = ("a draw" if game.result == "draw" else "you win" if game.result == human else "you lose")
        print(f"game over: {outcome} after {game.turns} turns: {verdict}")
    if args.json:
        emit_json({"variant": game.variant, "human": human, "opponent": args.vs, "result": game.result,
                   "reason": game.reason, "turns": game.turns, "abandoned": quit_,
                   "moves": [m.notation for m in game.moves]})
    return 0


# --- the parsers ---------------------------------------------------------------------------------

def add_eval(sub) -> None:
    """The ``tafl eval`` command (entry point ``eval`` of ``tafl.commands``)."""
    p = sub.add_parser("eval", help="run a round-robin tournament from a YAML config",
                       description="Run a round-robin tournament (agents/evaluation/tournament.py) from a YAML config "
                                   "(configs/tournaments/*.yaml): every pair plays both ways round, each "
                                   "opening of the config's suite once with each agent on each side; writes "
                                   "results.json, games.csv, ratings.csv and ratings.png to a fresh folder "
                                   "runs/tournaments/<variant>/<time>/ (or --out) and says where. Needs the "
                                   "'eval' extra (and 'train' for policy: agents).")
    p.add_argument("--config", "-c", required=True, metavar="FILE", help="the tournament config (YAML)")
    p.add_argument("--games", type=positive_int, metavar="N",
                   help="games per pair (even), instead of the config's games_per_pair")
    p.add_argument("--out", metavar="DIR", nargs="?", const=CONFIG_OUT,
                   help="write the results to DIR instead of a fresh runs/tournaments/<variant>/<time>/; "
                        "'--out' alone: to the config's output_dir (where its recorded results live)")
    p.add_argument("--overwrite", action="store_true",
                   help="allow writing into a folder that already holds results (results.json)")
    p.add_argument("--agents", nargs="+", metavar="NAME", help="play only these agents of the config")
    p.add_argument("--seed", type=seed_int, help="base seed, instead of the config's seed")
    p.add_argument("--records", action="store_true", help="write records/ (one move file per game)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="worker processes playing the chunks of games (default 1); the same games as with 1")
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="play the chunks of games as Ray tasks (the same games as a local run): on the cluster "
                        "at ADDRESS (HOST:PORT, ray://HOST:PORT or auto), else $RAY_ADDRESS, else a local Ray "
                        "started for the command (needs the 'rllib' extra)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=cmd_eval)


def add_train(sub) -> None:
    """The ``tafl train`` command (entry point ``train`` of ``tafl.commands``)."""
    p = sub.add_parser("train", help="self-play training (MaskablePPO, or RLlib PPO on Ray) from a YAML config",
                       description="Train one policy for both sides with MaskablePPO against a league of "
                                   "its past snapshots, itself and the greedy agent (agents/ppo/), "
                                   "from a YAML config (configs/train/*.yaml). Writes checkpoints, TensorBoard "
                                   "logs, eval.csv/eval.json, final.zip and learning_curve.png to the output dir. "
                                   "A config with 'backend: rllib' (configs/rllib/*.yaml) trains with RLlib's PPO "
                                   "on a local Ray or a cluster (--address) instead (agents/rllib/trainer.py; "
                                   "needs the 'rllib' extra).")
    p.add_argument("--config", "-c", required=True, metavar="FILE", help="the training config (YAML)")
    p.add_argument("--out", metavar="DIR", help="output directory, instead of the config's output_dir")
    p.add_argument("--timesteps", type=positive_int, metavar="N", help="instead of the config's total_timesteps")
    p.add_argument("--seed", type=seed_int, help="instead of the config's seed")
    p.add_argument("--max-minutes", type=bounded_float(0, MAX_MINUTES, "a number of minutes", low_open=True),
                   metavar="M", help="stop after M minutes of wall time")
    p.add_argument("--resume", metavar="CKPT", help="continue from a checkpoint: OUT/checkpoints/step_T.zip "
                                                    "(sb3), the directory OUT/checkpoints/step_T (rllib) or "
                                                    "OUT/checkpoints/iter_XXXXXX (az)")
    p.add_argument("--address", metavar="ADDRESS",
                   help="backend: rllib or az: the Ray cluster to join (HOST:PORT, ray://HOST:PORT or auto); "
                        "default $RAY_ADDRESS, else a local Ray started and shut down by the run")
    p.add_argument("--no-eval", action="store_true", help="skip the final evaluation")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=cmd_train)


def add_play(sub) -> None:
    """The ``tafl play`` command (entry point ``play`` of ``tafl.commands``)."""
    p = sub.add_parser("play", help="play against an agent in the terminal",
                       description="Play against an agent in the terminal: type moves in notation "
                                   "('moves' lists the legal moves, 'moves e3' those of one piece, 'undo' "
                                   "takes your last move back, 'help', 'quit'). Reads stdin line by line, "
                                   "so it can be driven by a pipe.")
    p.add_argument("variant", metavar="VARIANT")
    p.add_argument("--vs", required=True, metavar="AGENT",
                   help="the opponent: random, greedy, mcts:N[:ROLLOUT[:PRIOR]] or policy:PATH")
    p.add_argument("--side", choices=SIDES, default="attacker", help="your side (default: attacker)")
    p.add_argument("--seed", type=seed_int, default=None, help="the agent's random seed")
    add_start_options(p)
    add_rule_options(p, cap_help="stop the game after N turns (default: the variant's move cap)")
    add_json_flag(p)
    p.set_defaults(func=cmd_play)


def cmd_rate(args: argparse.Namespace) -> int:
    require("eval", f"{PROG} rate")
    from .base import AgentSpecError
    from .evaluation.adapters import AgentError
    from .evaluation.rate import game_cap, rate

    if args.ray is not None:
        require("rllib", f"{PROG} rate --ray")
    if args.sprt is not None and not args.sprt[0] < args.sprt[1]:
        raise CommandError(f"--sprt needs ELO0 < ELO1, got {args.sprt[0]:g} {args.sprt[1]:g}")
    games = game_cap(args.games, args.target_ci, args.sprt)     # the cap played is the one recorded
    if (args.training_hours is None) != (args.trained_from is None):
        raise CommandError("--training-hours and --trained-from go together (a learned agent's training cost)")
    if args.training_hours is not None and args.leaderboard is None:
        raise CommandError("--training-hours and --trained-from describe a leaderboard line: add --leaderboard")
    if args.leaderboard is not None:        # checked before the games, not after them
        from .evaluation.leaderboard import check_cost, check_name

        try:
            check_name(args.leaderboard or args.agent)
            if args.training_hours is not None:
                check_cost({"cpu_hours": args.training_hours, "started_from": args.trained_from})
        except ValueError as exc:
            raise CommandError(f"--leaderboard: {exc}" + ("" if args.leaderboard else "; give the line a NAME")) from None
    try:
        result = rate(args.agent, args.variant, games=games, target_ci=args.target_ci,
                      sprt=tuple(args.sprt) if args.sprt else None, time_per_move=args.time_per_move,
                      jobs=args.jobs, ray=False if args.ray is None else (args.ray or True), seed=args.seed,
                      anchors=args.anchors, openings=args.openings, progress=not args.no_progress)
    except (AgentError, AgentSpecError, FileNotFoundError) as exc:
        raise CommandError(str(exc)) from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    print(result)
    if args.leaderboard is not None:
        from .evaluation.leaderboard import add_entry

        command = " ".join([PROG, "rate", args.agent, "--variant", args.variant, "--seed", str(args.seed),
                            "--games", str(games)]
                           + (["--target-ci", f"{args.target_ci:g}"] if args.target_ci else [])
                           + (["--sprt", f"{args.sprt[0]:g}", f"{args.sprt[1]:g}"] if args.sprt else [])
                           + (["--time-per-move", f"{args.time_per_move:g}"] if args.time_per_move else []))
        cost = None if args.training_hours is None else {"cpu_hours": args.training_hours,
                                                         "started_from": args.trained_from}
        path = add_entry(result, args.leaderboard or args.agent, spec=args.agent, command=command, cost=cost)
        print(f"leaderboard line {args.leaderboard or args.agent!r} written: {path}")
    if args.json:
        emit_json(result.to_dict())
    return 0


RATE_DESCRIPTION = """Rate an agent against the variant's fixed anchors (agents/evaluation/rate.py; docs/rating.md).
The agent plays the anchors nearest its strength (random, greedy, the shipped policy, MCTS at rising
simulation budgets; their Elo fixed and shipped, greedy pinned at 1000) from the variant's opening
suite, every opening twice: once on each side. Prints its Elo with a 95% interval, per side, and
W-D-L against each anchor (draws count 1/2). Stops at --games, or earlier at --target-ci or when
--sprt decides. The same --seed gives the same games and rating (with --jobs and --ray too). A
broken agent (an exception, an illegal move, another variant's model) stops it with one line
naming the agent (exit status 2)."""


def add_rate(sub) -> None:
    """The ``tafl rate`` command (entry point ``rate`` of ``tafl.commands``)."""
    p = sub.add_parser("rate", help="rate an agent against the variant's fixed anchors",
                       description=RATE_DESCRIPTION)
    p.add_argument("agent", metavar="AGENT",
                   help="the agent spec: greedy, mcts:N, mcts:Ts, mcts:N:policy:PATH, policy:PATH, rllib:DIR ... "
                        "(Python objects, callables and SB3 models: agents.evaluation.rate.rate)")
    p.add_argument("--variant", required=True, metavar="VARIANT", help="the variant (tafl variants)")
    p.add_argument("--games", type=positive_int, metavar="N",
                   help="the most games to play (default 400, or 2000 with --target-ci or --sprt; "
                        "rounded up to whole game pairs of a block)")
    p.add_argument("--target-ci", type=bounded_float(0, 10_000, "an Elo half-width", low_open=True), metavar="ELO",
                   help="stop once the 95%% interval is within +-ELO")
    p.add_argument("--sprt", type=bounded_float(-10_000, 10_000, "an Elo"), nargs=2, metavar=("ELO0", "ELO1"),
                   help="stop when the SPRT (alpha = beta = 0.05) accepts H0: Elo = ELO0 or H1: Elo = ELO1")
    p.add_argument("--time-per-move", type=bounded_float(0, 3600, "seconds a move", low_open=True), metavar="T",
                   help="a searching AGENT (mcts:...) gets T seconds a move instead of its simulations "
                        "(the anchors keep their simulation budgets; their time per move is in the anchor file)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="play the games as Ray tasks: on the cluster at ADDRESS, else $RAY_ADDRESS, else a local Ray "
                        "(needs the 'rllib' extra); the same games as a local run")
    p.add_argument("--seed", type=seed_int, default=0, help="the base seed of every game (default 0)")
    p.add_argument("--anchors", metavar="FILE", help="an anchor file instead of the shipped one")
    p.add_argument("--openings", metavar="FILE", help="an opening suite file instead of the shipped one")
    p.add_argument("--leaderboard", nargs="?", const="", metavar="NAME",
                   help="add (or replace) this agent's line in results/leaderboard.md and .json, as NAME")
    p.add_argument("--training-hours", type=bounded_float(0, 1e6, "CPU hours"), metavar="H",
                   help="with --leaderboard: the CPU hours a learned agent's training took (the line's training column)")
    p.add_argument("--trained-from", metavar="TEXT",
                   help="with --training-hours: what its training started from, e.g. '1,200 mcts:100 games (warm start)'")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=cmd_rate)


def cmd_warmup(args: argparse.Namespace) -> int:
    import json

    from .warmup import warmup

    def report(phase: str, seconds: float, built: int) -> None:
        if not args.json:
            print(f"{phase:<16} {seconds:6.1f} s   {built} functions built", flush=True)

    rows = warmup(report)
    if args.json:
        print(json.dumps({"phases": rows}))
    return 0


def add_warmup(sub) -> None:
    """The ``tafl warmup`` command (entry point ``warmup`` of ``tafl.commands``)."""
    p = sub.add_parser("warmup", help="compile every kernel once (e.g. right after install)",
                       description="Compile every kernel of the engine and of the search agents once "
                                   "(agents/warmup.py), so that a later first step or first move loads "
                                   "them from numba's disk cache instead of compiling for a minute. "
                                   "Prints each phase's time and how many functions it built (0: all "
                                   "were cached).")
    add_json_flag(p)
    p.set_defaults(func=cmd_warmup)
