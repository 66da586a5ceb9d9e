"""The batched network search, compiled: the trees of a whole batch of games as one forest of
2-D arrays (row ``g`` = game ``g``'s tree, laid out as in :mod:`.kernels`), searched in rounds.
It serves the MCTS agent's network evaluator (``mcts:N:policy:PATH``: PUCT everywhere) and the
AlphaZero search (:mod:`agents.az.search`: a Gumbel root by default).

A round is two kernel calls around one network forward pass:

1. :func:`select_leaves` walks every tree (up to ``leaves_per_tree`` times) from its root to a
   leaf, with a virtual loss on each edge it takes (a visit worth -1 until the backup) so that the
   next walk spreads out. The root's edge is chosen by Sequential Halving (``RULE_GUMBEL``:
   :func:`.gumbel.pick_root`, with the game's considered-visit sequence ``seq[g]`` indexed by the
   simulation number and the root's Gumbel noise ``gum[g]``) or by PUCT (``RULE_PUCT``); inner
   edges by Gumbel MuZero's deterministic rule (``RULE_GUMBEL``) or by PUCT. A walk that ends on
   a terminal, proven or depth-capped node is backed up at once; a walk that reaches a new
   position creates its node, marks it pending and copies the position into a row of the leaf
   State; a walk that reaches a node already pending waits for it.
2. The caller evaluates the leaf State's rows in one forward pass (priors or raw logits over the
   action ids, a value for the side to move).
3. :func:`expand_leaves` gives every pending node its edges and priors (the network's priors as
   given, or the softmax of its logits over the legal moves, computed here: no legal-move mask is
   built for the network) and its value, then backs up each waiting walk, replacing its virtual
   loss with the value.

A pending node has no edges yet and ``first = -2 - slot`` (its row in the leaf State); an
expanded node has ``first >= 0``. :func:`root_outputs` reads each root after the search: the
move, the policy target and the search's value.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from tafl_env.engine._jit import kernel, leaf
from tafl_env.engine.rows import (
    I_KEY,
    I_REASON,
    I_TO_MOVE,
    I_TURN,
    I_WINNER,
    copy_full,
    copy_light,
    copy_seen,
    list_actions,
    step_row,
)
from tafl_env.engine.state import RUNNING

from .gumbel import final_choice, improved_policy, pick_interior, pick_root
from .kernels import (
    H_EDGES,
    H_NODES,
    H_ROOT,
    H_SIMS,
    Edges,
    Nodes,
    _known,
    _new_node,
    _pick_edge,
    every_edge_lost,
    prove_up,
)

__all__ = ["search_round", "select_leaves", "expand_leaves", "root_outputs", "room", "RULE_PUCT",
           "RULE_GUMBEL"]

OK, FULL = 0, 1
RULE_PUCT, RULE_GUMBEL = 0, 1
# qparams: the completed-Q transform's constants and PUCT's
Q_C_VISIT, Q_C_SCALE, Q_RESCALE, Q_C_PUCT = range(4)


@leaf
def _views(nodes, edges, g):
    """Game ``g``'s tree of a forest: its rows of the forest's node and edge arrays."""
    return (Nodes(nodes.first[g], nodes.count[g], nodes.visits[g], nodes.value[g], nodes.proven[g],
                  nodes.side[g], nodes.key[g], nodes.turn[g], nodes.terminal[g]),
            Edges(edges.action[g], edges.prior[g], edges.child[g], edges.visits[g], edges.value_sum[g],
                  edges.lost[g]))


@kernel
def select_leaves(W, tb, hdr, nodes, edges, budget, leaves_per_tree, rules, qp, seq, gum, L,
                  leaf_game, leaf_node, path_nodes, path_edges, path_game, path_depth, path_slot,
                  counts, info, scratch, sig, probs):
    """Walk every tree (rows ``2g``/``2g+1`` of ``W``: game g's root and its path row) until
    ``budget[g]`` simulations are started or ``leaves_per_tree`` walks are made; ``rules`` =
    [root rule, inner rule], ``qp`` the Q transform's and PUCT's constants. Writes the new
    leaves (rows of ``L``, their game and node) and the walks waiting for them; ``counts`` =
    [leaves, walks, simulations started]. Callers leave room for ``leaves_per_tree + 1`` nodes in
    each tree."""
    max_depth = path_nodes.shape[1]
    c_visit, c_scale, rescale, c_puct = qp[Q_C_VISIT], qp[Q_C_SCALE], qp[Q_RESCALE] != 0, qp[Q_C_PUCT]
    nl = 0
    npaths = 0
    started = 0
    for g in range(hdr.shape[0]):
        nd, ed = _views(nodes, edges, g)
        n_first, n_count, n_visits, n_value, n_proven, n_side, n_key, n_turn, n_term = nd
        e_action, e_child, e_n, e_w = ed.action, ed.child, ed.visits, ed.value_sum
        h = hdr[g]
        root = h[H_ROOT]
        r0 = 2 * g
        r1 = r0 + 1
        for _ in range(leaves_per_tree):
            if n_proven[root] != 0 or h[H_SIMS] >= budget[g]:
                break
            if n_first[root] < 0:        # the root itself waits for the network
                if n_first[root] == -1:
                    copy_full(W, r0, L, nl)
                    leaf_game[nl] = g
                    leaf_node[nl] = root
                    n_first[root] = -2 - nl
                    nl += 1
                break
            copy_light(W, r0, r1)
            copy_seen(W, r0, r1)
            node = root
            depth = 0
            while True:
                if depth == 0 and rules[0] == RULE_GUMBEL:
                    e = pick_root(node, nd, ed, gum[g], seq[g, h[H_SIMS]], c_visit, c_scale,
                                  rescale, sig)
                elif depth > 0 and rules[1] == RULE_GUMBEL:
                    e = pick_interior(node, nd, ed, c_visit, c_scale, rescale, sig, probs)
                else:
                    e = _pick_edge(node, nd, ed, c_puct)
                path_nodes[npaths, depth] = node
                path_edges[npaths, depth] = e
                depth += 1
                n_visits[node] += 1            # the virtual loss (undone by the backup)
                e_n[e] += 1
                e_w[e] -= 1.0
                step_row(W, tb, r1, e_action[e], info, scratch)
                child = e_child[e]
                if child < 0:
                    child = _new_node(h, nd, W[I_TO_MOVE][r1], W[I_KEY][r1], W[I_TURN][r1])
                    e_child[e] = child
                    if W[I_REASON][r1] != RUNNING:
                        w = W[I_WINNER][r1]
                        n_term[child] = 1
                        n_value[child] = 0.0 if w == 2 else (1.0 if w == n_side[child] else -1.0)
                    else:
                        copy_full(W, r1, L, nl)
                        leaf_game[nl] = g
                        leaf_node[nl] = child
                        n_first[child] = -2 - nl
                        nl += 1
                    node = child
                    break
                node = child
                if (n_term[node] or n_proven[node] != 0 or n_first[node] < 0
                        or depth >= max_depth):
                    break
            h[H_SIMS] += 1
            started += 1
            if n_first[node] < 0 and not n_term[node]:
                path_game[npaths] = g
                path_depth[npaths] = depth
                path_slot[npaths] = -2 - n_first[node]
                npaths += 1
                continue
            # a known value (terminal, proven, or the depth cap): back up now
            side = n_side[node]
            value = _known(nd, node, side)
            if value == 2.0:
                value = n_value[node]
            n_visits[node] += 1
            for i in range(depth):
                x = path_nodes[npaths, i]
                e = path_edges[npaths, i]
                e_w[e] += (value if n_side[x] == side else -value) + 1.0
            prove_up(nd, ed, path_nodes[npaths], path_edges[npaths], depth)
    counts[0] = nl
    counts[1] = npaths
    counts[2] = started
    return OK


@kernel
def expand_leaves(L, tb, hdr, nodes, edges, leaf_game, leaf_node, n_leaves, start, scores,
                  from_logits, values, path_nodes, path_edges, path_game, path_depth, path_slot,
                  n_paths, acts):
    """Expand the pending leaves ``start ..`` (row ``s`` of ``L``: priors = ``scores[s]`` at its
    legal moves, or with ``from_logits`` the softmax of ``scores[s]`` over its legal moves; value
    ``values[s]`` for its side to move, clipped to [-1, 1]), then back up the waiting walks.
    Returns the first leaf that found no room for its edges (the caller grows the forest and calls
    again from there, nothing half-done), or ``n_leaves`` when all is done."""
    e_cap = edges.action.shape[1]
    for s in range(start, n_leaves):
        g = leaf_game[s]
        node = leaf_node[s]
        nd, ed = _views(nodes, edges, g)
        n = list_actions(L, tb, s, acts)
        base = hdr[g, H_EDGES]
        if base + n > e_cap:
            return s
        hdr[g, H_EDGES] = base + n
        nd.first[node] = base
        nd.count[node] = n
        nd.value[node] = min(1.0, max(-1.0, values[s]))
        mx = -math.inf
        if from_logits:
            for i in range(n):
                mx = max(mx, scores[s, acts[i]])
        total = 0.0
        for i in range(n):
            p = math.exp(scores[s, acts[i]] - mx) if from_logits else scores[s, acts[i]]
            total += p
            e = base + i
            ed.action[e] = acts[i]
            ed.prior[e] = p
            ed.child[e] = -1
            ed.visits[e] = 0
            ed.value_sum[e] = 0.0
            ed.lost[e] = 0
        if from_logits:
            for i in range(n):
                ed.prior[base + i] /= total
    for p in range(n_paths):
        g = path_game[p]
        nd, ed = _views(nodes, edges, g)
        node = leaf_node[path_slot[p]]
        value = nd.value[node]
        side = nd.side[node]
        nd.visits[node] += 1
        for i in range(path_depth[p]):
            x = path_nodes[p, i]
            e = path_edges[p, i]
            ed.value_sum[e] += (value if nd.side[x] == side else -value) + 1.0
    return n_leaves


@kernel
def root_outputs(hdr, nodes, edges, rules, qp, gum, acts, visits, target, choice, value, sig,
                 probs):
    """Each root after its search: its legal moves (``acts[g, :count]``, -1 after), their
    visits, the policy target (the improved policy under ``RULE_GUMBEL``, the visit shares under
    ``RULE_PUCT``; a proven win: its winning move), the move to play (``choice[g]``, an action)
    and the search's value for the side to move, ``(v_raw + sum of backed-up values) / (1 + N)``.
    Returns nothing; the arrays are written."""
    c_visit, c_scale, rescale = qp[Q_C_VISIT], qp[Q_C_SCALE], qp[Q_RESCALE] != 0
    width = acts.shape[1]
    for g in range(hdr.shape[0]):
        nd, ed = _views(nodes, edges, g)
        e_action, e_child, e_n, e_w, e_lost = ed.action, ed.child, ed.visits, ed.value_sum, ed.lost
        root = hdr[g, H_ROOT]
        base = nd.first[root]
        cnt = nd.count[root]
        side = nd.side[root]
        for i in range(width):
            acts[g, i] = -1
            visits[g, i] = 0
            target[g, i] = 0.0
        total_n = 0
        total_w = 0.0
        for i in range(cnt):
            e = base + i
            acts[g, i] = e_action[e]
            visits[g, i] = e_n[e]
            total_n += e_n[e]
            total_w += e_w[e]
        value[g] = (nd.value[root] + total_w) / (1.0 + total_n)
        if nd.proven[root] == 1:                 # proven won: the winning move
            best = base
            for i in range(cnt):
                c = e_child[base + i]
                if c >= 0 and _known(nd, c, side) == 1.0:
                    best = base + i
                    break
                if ed.prior[base + i] > ed.prior[best]:
                    best = base + i
            target[g, best - base] = 1.0
            choice[g] = e_action[best]
            value[g] = 1.0
            continue
        every = every_edge_lost(e_lost, base, cnt)
        if rules[0] == RULE_GUMBEL:
            improved_policy(root, nd, ed, c_visit, c_scale, rescale, sig, probs)
            for i in range(cnt):
                target[g, i] = probs[i]
            choice[g] = e_action[final_choice(root, nd, ed, gum[g], c_visit, c_scale, rescale,
                                              sig)]
            continue
        shown = 0
        for i in range(cnt):
            if not (e_lost[base + i] and not every):
                shown += e_n[base + i]
        best = -1
        for i in range(cnt):
            e = base + i
            if e_lost[e] and not every:
                continue
            target[g, i] = e_n[e] / shown if shown > 0 else 0.0
            if best < 0:
                best = e
                continue
            q = e_w[e] / e_n[e] if e_n[e] > 0 else -2.0
            qb = e_w[best] / e_n[best] if e_n[best] > 0 else -2.0
            if e_n[e] > e_n[best] or (e_n[e] == e_n[best] and (q > qb or (q == qb and ed.prior[e] > ed.prior[best]))):
                best = e
        if shown == 0:                       # no search (a forced move): the prior
            for i in range(cnt):
                if not (e_lost[base + i] and not every):
                    target[g, i] = ed.prior[base + i]
        choice[g] = e_action[best]


@kernel
def room(hdr, node_cap, need_nodes):
    """Whether every tree has room for ``need_nodes`` more nodes."""
    for g in range(hdr.shape[0]):
        if hdr[g, H_NODES] + need_nodes >= node_cap:
            return False
    return True


class Rules(NamedTuple):
    """How a batched search chooses: ``rules`` = [root rule, inner rule] (``RULE_*``), ``qp`` the
    Q transform's and PUCT's constants (``Q_*``); under a Gumbel root, ``seq`` (games, sims) the
    considered-visit schedule and ``gum`` (games, edges) the root's noise; ``sig`` and ``probs``
    scratch rows of the width of the action space."""

    rules: np.ndarray
    qp: np.ndarray
    seq: np.ndarray
    gum: np.ndarray
    sig: np.ndarray
    probs: np.ndarray


def puct_rules(games: int, c_puct: float) -> Rules:
    """PUCT at every node (the MCTS agent's network evaluator): no schedule, no noise."""
    return Rules(np.array([RULE_PUCT, RULE_PUCT], dtype=np.int64), np.array([0.0, 0.0, 0.0, c_puct]),
                 np.zeros((games, 1), dtype=np.int64), np.zeros((games, 1)), np.zeros(1), np.zeros(1))


def search_round(forest, b: int, engine, work, bufs, budget: np.ndarray, leaves_per_tree: int,
                 rules: Rules, evaluate, from_logits: bool) -> tuple[int, int]:
    """One round over the first ``b`` trees of ``forest`` (module docstring): walk, evaluate the
    new leaves with ``evaluate(engine, leaves) -> (scores (R, A), values (R,))`` (priors, or
    logits with ``from_logits``), expand and back up, growing the forest where it is full.
    ``work``: the search's :class:`~agents.greedy.agent.SearchWork`; ``bufs``: its
    :class:`~.forest.RoundBuffers`. Returns (leaves evaluated, simulations started)."""
    tb = engine.kernel_tables
    L, RA, LA, leaf_game, leaf_node, pn, pe, pg, pd, ps, counts = bufs
    hdr, nodes, edges = forest.rows(b)
    if not room(hdr, nodes.first.shape[1], leaves_per_tree + 2):
        forest.grow(nodes=True)
        hdr, nodes, edges = forest.rows(b)
    select_leaves(RA, tb, hdr, nodes, edges, budget, leaves_per_tree, rules.rules, rules.qp, rules.seq,
                  rules.gum, LA, leaf_game, leaf_node, pn, pe, pg, pd, ps, counts, work.info, work.scratch,
                  rules.sig, rules.probs)
    nl, npaths, started = (int(x) for x in counts)
    if nl:
        scores, values = evaluate(engine, L if nl == len(L) else L.take(np.arange(nl)))
        s = 0
        while True:
            s = expand_leaves(LA, tb, hdr, nodes, edges, leaf_game, leaf_node, nl, s, scores, from_logits,
                              values, pn, pe, pg, pd, ps, npaths, work.acts)
            if s == nl:
                break
            forest.grow(edges=True)
            hdr, nodes, edges = forest.rows(b)
    return nl, started
