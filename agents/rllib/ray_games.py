"""``tafl eval --ray``: a tournament's games as Ray tasks, on a local Ray or a cluster.

A round robin (:func:`agents.evaluation.tournament.round_robin`) plays every leg (one agent attacking, the
other defending) in chunks of the config's ``batch_size`` games (the whole leg when it is null);
each chunk has its own seed, from which both agents are reset, so a chunk depends on nothing played
before it. Here every chunk is one Ray task (:func:`play_chunk`: build the two agents from their
specs and seeds, play the chunk), all submitted at once and spread over the cluster's CPUs; the
results are put back in the local order, so the tables, ratings and files are those of the local
run for the same seed (only the timings differ). Set ``batch_size`` to split long legs into more
tasks.

On a cluster every node needs the project installed (``pip install -e '.[rllib]'`` in the same
Python), and a ``policy:PATH`` or ``rllib:DIR`` agent's files must lie at the same path on every
node (a shared file system), since each task loads its agents where it runs.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

__all__ = ["play_chunk", "ray_executor", "run_tournament_ray"]


def play_chunk(rules, attacker_spec: str, attacker_seed, defender_spec: str, defender_seed, games: int,
               seed: int, record: bool) -> tuple[list[dict[str, Any]], float, dict[str, list]]:
    """One chunk of a leg, as the local run plays it: ``(results, seconds, timing)`` (``timing``:
    each side's ``[seconds choosing, moves]``, :func:`agents.evaluation.play.play_games`)."""
    from ..evaluation.play import play_games
    from ..evaluation.tournament import build_agent

    t0 = time.perf_counter()
    att = build_agent(attacker_spec, attacker_seed)
    dfd = build_agent(defender_spec, defender_seed)
    timing: dict[str, list] = {}
    results = play_games(rules, att, dfd, games, seed=seed, record=record, timing=timing)
    return results, time.perf_counter() - t0, timing


def ray_executor(rules, legs, record: bool, on_chunk: Callable[[int], Any]) -> list[tuple[list, float, dict]]:
    """Play every chunk of ``legs`` as a Ray task (Ray must be initialised); each leg's
    ``(results in local order, summed task seconds, summed timing)``."""
    import ray

    task = ray.remote(num_cpus=1)(play_chunk)
    rules_ref = ray.put(rules)
    refs, where = [], {}
    for k, (att_spec, sa, dfd_spec, sd, chunks) in enumerate(legs):
        for c, (n, chunk_seed) in enumerate(chunks):
            ref = task.remote(rules_ref, att_spec, sa, dfd_spec, sd, n, chunk_seed, record)
            where[ref] = (k, c)
            refs.append(ref)
    done: dict[tuple[int, int], tuple[list, float, dict]] = {}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                results, seconds, timing = ray.get(ref)
                done[where[ref]] = (results, seconds, timing)
                on_chunk(len(results))
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    out = []
    for k, (_, _, _, _, chunks) in enumerate(legs):
        parts = [done[(k, c)] for c in range(len(chunks))]
        timing: dict[str, list] = {}
        for _, _, t in parts:
            for side, (secs, moves) in t.items():
                spent = timing.setdefault(side, [0.0, 0])
                spent[0] += secs
                spent[1] += moves
        out.append(([r for results, _, _ in parts for r in results], sum(s for _, s, _ in parts), timing))
    return out


def run_tournament_ray(config: Mapping[str, Any], *, out_dir, address: str | None = None,
                       progress: bool = True) -> dict[str, Any]:
    """:func:`agents.evaluation.tournament.run_tournament` with the games as Ray tasks, on the cluster at
    ``address`` (checked already: :func:`agents.rllib.cluster.check_address`) or a local Ray."""
    from ..evaluation.tournament import round_robin
    from .cluster import ray_session

    cfg = dict(config)
    with ray_session(address) as session:
        result = round_robin(cfg["variant"], cfg["agents"], cfg["games_per_pair"], cfg["seed"],
                             max_turns=cfg["max_turns"], options=cfg["options"], out_dir=out_dir,
                             records=cfg["records"], gifs=cfg["gifs"], fps=cfg["fps"],
                             batch_size=cfg["batch_size"], bootstrap=cfg["bootstrap"], anchor=cfg["anchor"],
                             prior_sd=cfg["prior_sd"], progress=progress, config=cfg, executor=ray_executor)
    result["ray"] = {"address": session["address"], "cpus": session["cpus"]}
    return result
