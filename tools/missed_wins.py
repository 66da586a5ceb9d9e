"""Forced wins a player missed or walked into, read from game records (OpenTafl's ``.otg``).

    python tools/missed_wins.py GAME.otg [GAME.otg ...] --side defender [--agents greedy mcts:1000]

For every position of ``--side`` to move it finds, exactly, the moves that win **now** and the
moves that win **in two** (every reply of the opponent lets the mover win at once, or loses on the
spot): :class:`agents.greedy.wins.WinFinder`, the check the AZ agent's root uses. It reports the
positions where such a win was there and the move played was not one (**missed**), and the moves
after which the *opponent* had a win in two (**walked into**), with the moves that would have
denied the opponent any win now or in two (none: the position was lost already; some: the move
played was the mistake), and with what each agent of ``--agents`` plays in those positions. The
last line is one JSON object. A win in two is a fork (two threats that no single reply stops): the
depth the greedy agent does not see and a search of a few dozen simulations can miss when the move
is outside the moves its root considers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agents import make_agent
from agents.greedy.wins import WIN_NOW, WinFinder
from tafl_env import Game
from tafl_env.opentafl import read_otg

_FINDER = WinFinder()


def winning_moves(game: Game) -> dict[str, str]:
    """``{move: "now" | "in two"}`` for the side to move (none inside a berserk chain)."""
    actions, flags = _FINDER.flags(game.engine, game.state, 0)
    return {str(game.copy().push(int(a))): ("now" if f == WIN_NOW else "in two")
            for a, f in zip(actions, flags) if f}


def denying_moves(game: Game) -> tuple[int, list[str]]:
    """The number of legal moves of the side to move, and those after which the opponent has no
    win now and none in two (:meth:`WinFinder.leaves_a_win`, the AZ agent's root guard): a move
    into the opponent's win in two was a blunder where the list is not empty, and the game already
    lost where it is."""
    actions = game.legal_actions()
    denying = [str(game.copy().push(int(a))) for a in actions
               if not _FINDER.leaves_a_win(game.engine, game.state, 0, int(a))]
    return len(actions), denying


def analyse(game_moves: list, variant_game: Game, side: str, agents: list[str]) -> list[dict]:
    """The positions of ``side`` with a missed win or a move into the opponent's win in two."""
    game = variant_game.copy()
    found = []
    for turn, move in enumerate(game_moves):
        if game.to_move == side and int(game.state.chain[0]) < 0:
            wins = winning_moves(game)
            after = game.copy()
            after.push(move.action)
            played = str(move)
            walked = {}
            if not after.is_over() and int(after.state.chain[0]) < 0 and after.to_move != side:
                walked = winning_moves(after)
            missed = wins and played not in wins
            if missed or walked:
                row = {"ply": turn + 1, "position": game.position, "played": played,
                       "wins": wins, "opponent_wins_after": walked}
                if walked:
                    row["moves"], row["moves_denying"] = denying_moves(game)
                for spec in agents:
                    agent = make_agent(spec, seed=0)
                    probe = game.copy()
                    row.setdefault("agents", {})[spec] = str(probe.push(int(agent.act(probe.engine, probe.state)[0])))
                found.append(row)
        game.push(move.action)
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("records", nargs="+", type=Path, help="OpenTafl game records (.otg)")
    p.add_argument("--side", choices=("attacker", "defender"), required=True, help="whose moves to check")
    p.add_argument("--agents", nargs="*", default=[], help="agent specs whose move is shown where one was missed")
    p.add_argument("--json", action="store_true", help="print only the final JSON line")
    args = p.parse_args(argv)
    report = []
    for path in args.records:
        record = read_otg(path.read_text(encoding="utf-8"))
        start = Game(record.rules, position=record.position, to_move=record.to_move, max_turns=None)
        moves = list(record.game.moves)
        rows = analyse(moves, start, args.side, args.agents)
        report.append({"record": str(path), "plies": len(moves), "result": record.game.result,
                       "reason": record.game.reason, "positions": rows})
        if not args.json:
            print(f"{path.name}: {len(moves)} plies, {record.game.result} ({record.game.reason}); "
                  f"{sum(bool(r['wins']) for r in rows)} missed wins, "
                  f"{sum(bool(r['opponent_wins_after']) for r in rows)} moves into a win in two")
            for r in rows:
                denying = (f"; {len(r['moves_denying'])} of its {r['moves']} moves deny them"
                           if "moves" in r else "")
                print(f"  ply {r['ply']}: played {r['played']}; wins {r['wins'] or '-'}; "
                      f"opponent's wins after it {r['opponent_wins_after'] or '-'}{denying}; "
                      f"agents {r.get('agents', {})}")
    print(json.dumps({"side": args.side, "records": report}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
