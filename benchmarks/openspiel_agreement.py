"""Agreement of the OpenSpiel games (tafl_env/openspiel.py) with the AEC environment over random games.

Each game is played through both front ends side by side, the same uniformly random legal action in
each; at every ply the player to move, the legal actions and the observation planes of the player to
move must be the same, and at the end the result, the reason and the returns. The fast test tier
plays 20 games per variant (tests/test_openspiel.py); this plays the long run:

    python benchmarks/openspiel_agreement.py                          # 10,000 games per variant
    python benchmarks/openspiel_agreement.py --games 500 --variants legacy_ard_ri legacy_berserk

The last line is one JSON object (``--json`` prints only that). The exit status is 1 if any game
disagreed; the first disagreement of each variant is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import numpy as np

import tafl_env
import tafl_env.openspiel as tos

AGENTS = ("attacker", "defender")


class Disagreement(Exception):
    """The two front ends differ; the message says where and how."""


def play_both(env, game, rng: np.random.Generator) -> tuple[str, str, int]:
    """One random game through ``env`` (a raw AEC env) and ``game`` (its OpenSpiel game); returns
    ``(result, reason, plies)`` or raises :class:`Disagreement`."""
    env.reset()
    state = game.new_initial_state()
    n = game.engine.n
    plies = 0
    while not state.is_terminal():
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            raise Disagreement(f"ply {plies}: the AEC env has ended, OpenSpiel has not ({state.history()})")
        player = state.current_player()
        if player != AGENTS.index(agent):
            raise Disagreement(f"ply {plies}: OpenSpiel's player {player}, the AEC env's {agent}")
        obs = env.observe(agent)
        legal = state.legal_actions()
        if legal != np.flatnonzero(obs["action_mask"]).tolist():
            raise Disagreement(f"ply {plies}: legal actions differ after {state.history()}")
        planes = np.asarray(state.observation_tensor(player), dtype=np.float32).reshape(n, n, -1)
        if not np.array_equal(planes, obs["observation"]):
            raise Disagreement(f"ply {plies}: observations differ after {state.history()}")
        action = legal[int(rng.integers(len(legal)))]
        state.apply_action(action)
        env.step(action)
        plies += 1
    agent = env.agent_selection
    if not (env.terminations[agent] or env.truncations[agent]):
        raise Disagreement(f"ply {plies}: OpenSpiel's game has ended, the AEC env's has not")
    info, outcome = env.infos[agent], state.outcome()
    if (outcome.result, outcome.reason) != (info["result"], info["reason"]):
        raise Disagreement(f"the end differs: OpenSpiel {outcome.result} ({outcome.reason}), "
                           f"the AEC env {info['result']} ({info['reason']}) after {state.history()}")
    rewards = [env._cumulative_rewards[a] for a in AGENTS]
    if state.returns() != rewards:
        raise Disagreement(f"returns {state.returns()} but rewards {rewards} after {state.history()}")
    if plies > game.max_game_length():
        raise Disagreement(f"{plies} plies, more than max_game_length() = {game.max_game_length()}")
    return outcome.result, outcome.reason, plies


def check_variant(variant: str, games: int, seed: int) -> dict:
    env = tafl_env.raw_env(variant)
    game = tos.load_game(variant)
    rng = np.random.default_rng(seed)
    ends, results = Counter(), Counter()
    plies = longest = disagreements = 0
    first = None
    start = time.perf_counter()
    for g in range(games):
        try:
            result, reason, length = play_both(env, game, rng)
        except Disagreement as exc:
            disagreements += 1
            first = first or f"game {g}: {exc}"
            continue
        results[result] += 1
        ends[reason] += 1
        plies += length
        longest = max(longest, length)
    return {"variant": variant, "games": games, "disagreements": disagreements, "first": first,
            "plies": plies, "longest": longest, "max_game_length": game.max_game_length(),
            "results": dict(results), "reasons": dict(ends), "seconds": round(time.perf_counter() - start, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=10_000, help="random games per variant (default 10000)")
    p.add_argument("--variants", nargs="+", default=list(tafl_env.VARIANTS), metavar="VARIANT",
                   help="default: the five variants")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    args = p.parse_args(argv)
    reports = []
    for variant in args.variants:
        r = check_variant(variant, args.games, args.seed)
        reports.append(r)
        if not args.json:
            print(f"{variant:<22} {r['games']:>6} games {r['plies']:>9} plies (longest {r['longest']}, "
                  f"bound {r['max_game_length']}) {r['disagreements']} disagreements, {r['seconds']} s; "
                  f"results {r['results']}; reasons {r['reasons']}", flush=True)
            if r["first"]:
                print(f"  first: {r['first']}", flush=True)
    print(json.dumps({"games_per_variant": args.games, "seed": args.seed, "variants": reports}))
    return 1 if any(r["disagreements"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
