"""Write README.md for recorded tournaments: command, config, seeds, ratings overall and per side,
the random < greedy < MCTS check; prune records/ to the first game of each leg.

    python tools/summarize.py legacy_ard_ri [historical_tablut ...]

Per-side ratings: every (agent, side) is a separate player ("greedy@attacker", ...), fitted with
agents.evaluation.ratings.elo_ratings (Bradley-Terry, no side term: attacker-players only meet
defender-players, so ratings are comparable within one side only); each side is anchored on
random's rating for that side (random = 0), with profile-likelihood 95% intervals (agents/evaluation/ratings.py).
A discussion written by hand follows the marker line and is kept on rewrite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from agents.evaluation.ratings import elo_ratings  # noqa: E402

TOURNAMENTS = ROOT / "results" / "tournaments"
MARK = "<!-- discussion (hand-written, kept on rewrite) -->"
SIDES = ("attacker", "defender")


def kind(spec: str) -> str:
    return spec.split(":")[0]


def order_holds(rating: dict[str, float], specs: dict[str, str]) -> tuple[bool, str]:
    """random < greedy < every MCTS agent, on point estimates."""
    r = rating[[n for n in specs if kind(specs[n]) == "random"][0]]
    g = rating[[n for n in specs if kind(specs[n]) == "greedy"][0]]
    m = [rating[n] for n in specs if kind(specs[n]) == "mcts"]
    parts = []
    if not r < g:
        parts.append("greedy is not above random")
    if not all(g < x for x in m):
        parts.append("an MCTS agent is not above greedy")
    return not parts, "; ".join(parts) or "holds"


def per_side(res: dict) -> dict[str, dict[str, dict]]:
    games = res["games"]
    names = list(res["agents"])
    rand = [n for n in names if kind(res["agents"][n]) == "random"][0]
    renamed = [dict(g, attacker=g["attacker"] + "@attacker", defender=g["defender"] + "@defender")
               for g in games]
    players = [f"{n}@{s}" for s in SIDES for n in names]
    boot = res["config"].get("bootstrap", 200)
    out = {}
    for side in SIDES:
        fit = elo_ratings(renamed, players, anchor=f"{rand}@{side}", bootstrap=boot, seed=res["seed"],
                          side_advantage=False)
        out[side] = {row["name"].split("@")[0]: row for row in fit["ratings"] if row["name"].endswith("@" + side)}
    return out


def fmt_iv(lo, hi):
    return "" if lo is None else f"[{lo:.0f}, {hi:.0f}]"


def prune_records(out: Path, res: dict) -> int:
    rec = out / "records"
    if not rec.is_dir():
        return 0
    keep = {f"game{leg['first_game']:05d}_" for leg in res["legs"]}
    n = 0
    for p in sorted(rec.iterdir()):
        if p.name[:10] in keep:
            n += 1
        else:
            p.unlink()
    return n


def summarize(variant: str) -> dict:
    out = TOURNAMENTS / variant
    res = json.loads((out / "results.json").read_text())
    specs = res["agents"]
    cfg_path = ROOT / "configs" / "tournaments" / f"{variant}.yaml"
    cfg_text = cfg_path.read_text() if cfg_path.exists() else ""
    kept = prune_records(out, res)
    overall = {r["name"]: r for r in res["ratings"]["ratings"]}
    sides = per_side(res)
    side_rows = {(r["agent"], r["side"]): r for r in res["sides"]}
    ok_all, why_all = order_holds({n: overall[n]["rating"] for n in specs}, specs)
    ok_side = {s: order_holds({n: sides[s][n]["rating"] for n in specs}, specs) for s in SIDES}
    sa = res["ratings"]["side_advantage"]
    ar = res["attacker_results"]
    # The command that produced the run: the config, and --games where it overrode the config's.
    import yaml   # noqa: PLC0415 (only here)
    config_games = yaml.safe_load((ROOT / "configs" / "tournaments" / f"{variant}.yaml").read_text())["games_per_pair"]
    games_flag = (f" --games {res['config']['games_per_pair']}"
                  if res["config"]["games_per_pair"] != config_games else "")
    L = [f"# Tournament: {variant}", ""]
    L += [f"Round robin of {', '.join(f'`{n}` ({s})' for n, s in specs.items())}: "
          f"{res['config']['games_per_pair']} games per pair (half each way round), "
          f"{ar['games']} games in {res['seconds'] / 60:.1f} min on a shared 2-core machine "
          f"(run at low priority, `nice`, beside other jobs), move cap {res['rules']['max_turns']} turns "
          f"(a capped game is a draw).", ""]
    L += ["## Command", "", "```", f"nice -n 5 tafl eval --config configs/tournaments/{variant}.yaml{games_flag}", "```", "",
          f"Base seed {res['seed']}; every leg's first chunk seed (`agents.evaluation.matches.chunk_seed`) is in the "
          "table below, every game's in results.json and games.csv. The run is deterministic given the seeds.", ""]
    L += ["| leg | attacker | defender | seed | games | seconds |", "|---:|---|---|---:|---:|---:|"]
    for leg in res["legs"]:
        L.append(f"| {leg['leg']} | {leg['attacker']} | {leg['defender']} | {leg['seed']} | {leg['games']} "
                 f"| {leg['seconds']:.0f} |")
    if "time_per_move" in res:
        L += ["", "## Time per move", "", "Thinking time of each agent over all its moves (one game of a leg "
              "at a time per agent call; a batched agent's time is shared by the games it moved in).", "",
              "| agent | spec | moves | ms per move |", "|---|---|---:|---:|"]
        for n, t in res["time_per_move"].items():
            L.append(f"| {n} | `{specs[n]}` | {t['moves']} | {t['ms_per_move']:.2f} |")
    ratings = res["ratings"]
    how = (f"95% {ratings['intervals']} intervals" if "intervals" in ratings else
           f"95% bootstrap intervals ({ratings['bootstrap']} replicates, stratified by pairing)")
    L += ["", "## Ratings overall", "",
          f"Bradley–Terry Elo with a side term (agents/evaluation/ratings.py), anchored on random = 0, {how}.", "",
          "| agent | spec | Elo | 95% interval | games | score |", "|---|---|---:|---|---:|---:|"]
    for r in res["ratings"]["ratings"]:
        L.append(f"| {r['name']} | `{specs[r['name']]}` | {r['rating']:.0f} | {fmt_iv(r['low'], r['high'])} "
                 f"| {r['games']} | {r['score']:.3f} |")
    L += ["", f"Attacker side advantage: {sa['elo']:+.0f} Elo {fmt_iv(sa['low'], sa['high'])}; over all games "
          f"the attackers won {ar['wins']}, drew {ar['draws']}, lost {ar['losses']} "
          f"(attacker score {ar['score']:.3f}).", ""]
    L += ["## Per side", "",
          "Elo per side: each (agent, side) fitted as its own player (no side term), anchored on random "
          "of that side = 0; comparable within a side only. Score: win 1, draw ½, with the Wilson 95% "
          "interval; win rate counts wins only.", "",
          "| agent | side | Elo | 95% interval | games | W | D | L | win rate | score [95%] |",
          "|---|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for s in SIDES:
        for n in sorted(specs, key=lambda n: -sides[s][n]["rating"]):
            e = sides[s][n]
            t = side_rows[(n, s)]
            L.append(f"| {n} | {s} | {e['rating']:.0f} | {fmt_iv(e['low'], e['high'])} | {t['games']} | {t['wins']} "
                     f"| {t['draws']} | {t['losses']} | {t['win_rate']:.2f} | {t['score']:.2f} "
                     f"[{t['score_low']:.2f}, {t['score_high']:.2f}] |")
    L += ["", "## Pairings", "", "| A | B | A: W-D-L | A's score [95%] | A as attacker | A as defender |",
          "|---|---|---|---|---:|---:|"]
    for p in res["pairings"]:
        L.append(f"| {p['agent']} | {p['opponent']} | {p['wins']}-{p['draws']}-{p['losses']} | {p['score']:.2f} "
                 f"[{p['score_low']:.2f}, {p['score_high']:.2f}] | {p['as_attacker']['score']:.2f} "
                 f"| {p['as_defender']['score']:.2f} |")
    reasons: dict[str, int] = {}
    for g in res["games"]:
        reasons[g["reason"]] = reasons.get(g["reason"], 0) + 1
    L += ["", "Game endings: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda x: -x[1])) + ".", ""]
    L += ["## Does random < greedy < MCTS hold? (point estimates)", "",
          f"- overall: **{'yes' if ok_all else 'no'}** ({why_all})"]
    for s in SIDES:
        L.append(f"- as {s}: **{'yes' if ok_side[s][0] else 'no'}** ({ok_side[s][1]})")
    L += ["", "## Files", "",
          "results.json (everything, incl. per-game rows), games.csv, ratings.csv, ratings.png, "
          f"records/ ({kept} replayable games: the first game of each leg; replay with the command in each "
          "file's `#` header, e.g. `tafl replay VARIANT --file F`), gifs/ (first game of the first leg).", "",
          "## Config", "", "```yaml", cfg_text.rstrip(), "```", ""]
    readme = out / "README.md"
    old = readme.read_text() if readme.exists() else ""
    disc = old[old.index(MARK):] if MARK in old else MARK + "\n\n## Discussion\n\n(to be written)\n"
    readme.write_text("\n".join(L) + "\n" + disc)
    from tafl_env import make_rules
    n = make_rules(variant).board_size
    board = f"{n}x{n}"
    order = {s: " > ".join(sorted(specs, key=lambda n: -sides[s][n]["rating"])) for s in SIDES}
    row = (f"| [{variant}]({variant}/README.md) | {board} | {', '.join(f'`{x}`' for x in specs.values())} "
           f"| {res['config']['games_per_pair']} / {ar['games']} | {res['rules']['max_turns']} "
           f"| {res['seconds'] / 60:.1f} | "
           + ", ".join(f"{r['name']} {r['rating']:.0f} {fmt_iv(r['low'], r['high'])}" for r in res["ratings"]["ratings"])
           + f" | {sa['elo']:+.0f} {fmt_iv(sa['low'], sa['high'])} | {'yes' if ok_all else 'no'} | "
           + " | ".join(f"{'yes' if ok_side[s][0] else 'no'} ({order[s]})" for s in SIDES) + " |")
    return {"variant": variant, "overall": ok_all, "sides": {s: ok_side[s][0] for s in SIDES},
            "ratings": {n: overall[n]["rating"] for n in specs}, "games": ar["games"],
            "attacker_score": ar["score"], "minutes": res["seconds"] / 60, "overview_row": row}


OVERVIEW_HEAD = ("| variant | board | agents | games per pair / total | move cap | minutes | Elo overall [95%] "
                 "| attacker side advantage (Elo) | random < greedy < MCTS overall "
                 "| as attacker (per-side Elo order) | as defender (per-side Elo order) |\n"
                 "|---|---|---|---|---:|---:|---|---|---|---|---|")


if __name__ == "__main__":
    rows = []
    for v in sys.argv[1:]:
        summary = summarize(v)
        rows.append(summary.pop("overview_row"))
        print(json.dumps(summary))
    print("\nThe overview table of results/tournaments/README.md:\n\n" + OVERVIEW_HEAD + "\n" + "\n".join(rows))
