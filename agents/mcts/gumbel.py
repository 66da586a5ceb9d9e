"""The Gumbel root's arithmetic, compiled (Danihelka et al. 2022, "Policy improvement by planning
with Gumbel"; the formulas as ``mctx`` implements them in ``qtransforms.py``, ``seq_halving.py``
and ``action_selection.py``).

A node's edges are ``base .. base + count - 1`` of the edge arrays (:mod:`agents.mcts.kernels`):
prior probability ``e_prior`` (the logits are ``log prior``, equal to the network's up to a
constant, which no formula here sees), visits ``e_n`` and value sum ``e_w`` for the node's side to
move (``q = e_w / e_n``); ``n_value`` is the node's raw network value. Edges marked lost (proven
losses, or moves the root check found losing) take no part unless every edge is lost; their
improved probability is 0.

- **Mixed value** ``v_mix = (v_raw + N * sum_{b visited} p_b q_b / sum_{b visited} p_b) / (N + 1)``
  with ``N = sum_b n_b`` (``_compute_mixed_value``);
- **completed Q**: ``q_b`` where ``n_b > 0``, else ``v_mix``; optionally rescaled to [0, 1] by the
  min and max over the node's edges (mctx's ``rescale_values``);
- ``sigma(q) = (c_visit + max_b n_b) * c_scale * q`` (mctx's defaults: c_visit 50, c_scale 0.1);
- **improved policy** ``pi' = softmax(logits + sigma(completed Q))``;
- **root choice** (Sequential Halving): the edge with ``n_b`` equal to the considered visit count
  of this simulation that maximises ``g_b + logits_b + sigma(q_b)`` (``g``: the root's Gumbel
  noise);
- **interior choice** (Gumbel MuZero's deterministic rule): ``argmax_b pi'_b - n_b / (1 + N)``.

**Sequential Halving's schedule** (mctx's ``seq_halving.py``). With ``m`` considered actions and ``n`` simulations, the root visits the ``m`` actions of the
highest ``g + logits`` once each, then keeps the better half (by ``g + logits + sigma(q)``) and
visits each of them again, and so on down to two actions; each phase gets
``max(1, floor(n / (ceil(log2 m) * considered)))`` visits per action. The schedule is written as
the visit count that the action chosen at each simulation must have
(:func:`considered_visits`): the compiled root (:func:`pick_root`)
takes, among the actions with exactly that many visits, the best by
``g + logits + sigma(completed Q)``, which is the halving.

    >>> considered_visits(4, 10)
    (0, 0, 0, 0, 1, 1, 2, 2, 3, 3)
    >>> considered_visits(1, 3)
    (0, 1, 2)
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from tafl_env.engine._jit import helper, kernel

from .kernels import every_edge_lost

LOW_LOGIT = -1e9     # the logit of a move of prior 0 (mctx clips the scores there)
EPSILON = 1e-8       # the smallest range rescaled Q-values are divided by


@helper
def _logit(p):
    return math.log(p) if p > 0.0 else LOW_LOGIT


@helper
def sigma_completed_q(node, nodes, edges, c_visit, c_scale, rescale, out):
    """``out[i] = sigma(completed Q)`` of ``node``'s edge ``i`` (module docstring); returns the
    mixed value. Lost edges (unless all are) are left out of the mixed value and the rescaling
    and get ``out[i] = 0``."""
    n_first, n_count, n_value = nodes.first, nodes.count, nodes.value
    e_prior, e_n, e_w, e_lost = edges.prior, edges.visits, edges.value_sum, edges.lost
    base = n_first[node]
    cnt = n_count[node]
    every = every_edge_lost(e_lost, base, cnt)
    total_n = 0.0
    sum_p = 0.0
    weighted = 0.0
    max_n = 0.0
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not every:
            continue
        if e_n[e] > 0:
            p = max(e_prior[e], 1e-38)
            total_n += e_n[e]
            sum_p += p
            weighted += p * e_w[e] / e_n[e]
        if e_n[e] > max_n:
            max_n = float(e_n[e])
    if sum_p > 0.0:
        weighted /= sum_p
    mixed = (n_value[node] + total_n * weighted) / (total_n + 1.0)
    lo = math.inf
    hi = -math.inf
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not every:
            out[i] = 0.0
            continue
        q = e_w[e] / e_n[e] if e_n[e] > 0 else mixed
        out[i] = q
        lo = min(lo, q)
        hi = max(hi, q)
    scale = (c_visit + max_n) * c_scale
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not every:
            continue
        q = out[i]
        if rescale:
            q = (q - lo) / max(hi - lo, EPSILON)
        out[i] = scale * q
    return mixed


@helper
def improved_policy(node, nodes, edges, c_visit, c_scale, rescale, sig, out):
    """``out[i] = softmax(logits + sigma(completed Q))`` over ``node``'s edges (lost edges 0,
    unless all are lost); ``sig`` is scratch (it holds sigma afterwards)."""
    n_first, n_count = nodes.first, nodes.count
    e_prior, e_lost = edges.prior, edges.lost
    base = n_first[node]
    cnt = n_count[node]
    every = every_edge_lost(e_lost, base, cnt)
    sigma_completed_q(node, nodes, edges, c_visit, c_scale, rescale, sig)
    mx = -math.inf
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not every:
            continue
        z = _logit(e_prior[e]) + sig[i]
        out[i] = z
        mx = max(mx, z)
    total = 0.0
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not every:
            out[i] = 0.0
            continue
        out[i] = math.exp(out[i] - mx)
        total += out[i]
    for i in range(cnt):
        out[i] /= total


@helper
def pick_interior(node, nodes, edges, c_visit, c_scale, rescale, sig, probs):
    """Gumbel MuZero's interior choice: the edge maximising ``pi'_b - n_b / (1 + N)``."""
    n_first, n_count = nodes.first, nodes.count
    e_n, e_lost = edges.visits, edges.lost
    base = n_first[node]
    cnt = n_count[node]
    every = every_edge_lost(e_lost, base, cnt)
    improved_policy(node, nodes, edges, c_visit, c_scale, rescale, sig, probs)
    total = 0.0
    for i in range(cnt):
        total += e_n[base + i]
    best = -math.inf
    choice = base
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not every:
            continue
        score = probs[i] - e_n[e] / (1.0 + total)
        if score > best:
            best = score
            choice = e
    return choice


@helper
def pick_root(node, nodes, edges, gumbel, considered_visit, c_visit, c_scale, rescale, sig):
    """Sequential Halving's choice at the root: among the edges with exactly
    ``considered_visit`` visits, the one maximising ``g + logits + sigma(completed Q)``
    (``gumbel[i]``: edge ``i``'s noise). Should no edge have that count (an edge proven lost
    during the search), the least visited edge of the highest score."""
    n_first, n_count = nodes.first, nodes.count
    e_prior, e_n, e_lost = edges.prior, edges.visits, edges.lost
    base = n_first[node]
    cnt = n_count[node]
    every = every_edge_lost(e_lost, base, cnt)
    sigma_completed_q(node, nodes, edges, c_visit, c_scale, rescale, sig)
    mx = -math.inf
    for i in range(cnt):
        mx = max(mx, _logit(e_prior[base + i]))
    best = -math.inf
    choice = -1
    fallback = -1
    fb_n = 0
    fb_score = -math.inf
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not every:
            continue
        score = max(LOW_LOGIT, gumbel[i] + _logit(e_prior[e]) - mx + sig[i])
        if e_n[e] == considered_visit and score > best:
            best = score
            choice = e
        if fallback < 0 or e_n[e] < fb_n or (e_n[e] == fb_n and score > fb_score):
            fallback = e
            fb_n = e_n[e]
            fb_score = score
    return choice if choice >= 0 else fallback


@helper
def final_choice(node, nodes, edges, gumbel, c_visit, c_scale, rescale, sig):
    """The move after the search: among the most visited edges, the one maximising
    ``g + logits + sigma(completed Q)`` (mctx's ``gumbel_muzero_policy``)."""
    e_n, e_lost = edges.visits, edges.lost
    base = nodes.first[node]
    cnt = nodes.count[node]
    every = every_edge_lost(e_lost, base, cnt)
    top = -1
    for i in range(cnt):
        e = base + i
        if not (e_lost[e] and not every) and e_n[e] > top:
            top = e_n[e]
    return pick_root(node, nodes, edges, gumbel, top, c_visit, c_scale, rescale, sig)


@kernel
def node_improved_policy(node, nodes, edges, c_visit, c_scale, rescale, sig, out):
    """:func:`improved_policy` of one node of one tree (``nodes``/``edges`` 1-D), for tests and
    diagnostics; returns the mixed value."""
    improved_policy(node, nodes, edges, c_visit, c_scale, rescale, sig, out)
    return sigma_completed_q(node, nodes, edges, c_visit, c_scale, rescale, sig)


@kernel
def node_choices(node, nodes, edges, gumbel, considered_visit, c_visit, c_scale, rescale, sig,
                 probs):
    """(root choice for ``considered_visit``, interior choice, final choice) of one node of one
    tree, as edge indices (for tests and diagnostics)."""
    a = pick_root(node, nodes, edges, gumbel, considered_visit, c_visit, c_scale, rescale, sig)
    b = pick_interior(node, nodes, edges, c_visit, c_scale, rescale, sig, probs)
    c = final_choice(node, nodes, edges, gumbel, c_visit, c_scale, rescale, sig)
    return a, b, c


# --- the schedule (plain Python: it is computed once per budget) -----------------------------------

def considered_visits(max_considered: int, simulations: int) -> tuple[int, ...]:
    """The visit count of the action chosen at each of ``simulations`` simulations with
    ``max_considered`` actions considered (mctx's ``get_sequence_of_considered_visits``)."""
    if max_considered <= 1:
        return tuple(range(simulations))
    log2max = int(math.ceil(math.log2(max_considered)))
    sequence: list[int] = []
    visits = [0] * max_considered
    considered = max_considered
    while len(sequence) < simulations:
        extra = max(1, int(simulations / (log2max * considered)))
        for _ in range(extra):
            sequence.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return tuple(sequence[:simulations])


@lru_cache(maxsize=64)
def halving_table(max_considered: int, simulations: int) -> np.ndarray:
    """``(max_considered + 1, simulations)`` int64: row ``k`` is :func:`considered_visits` of
    ``k`` actions (a root with fewer legal moves than ``max_considered`` uses its own row)."""
    table = np.array([considered_visits(k, simulations) for k in range(max_considered + 1)],
                     dtype=np.int64).reshape(max_considered + 1, simulations)
    table.setflags(write=False)
    return table
