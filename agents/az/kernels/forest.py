"""A round of the batched AlphaZero search, compiled, over the forest of
:mod:`agents.mcts.netsearch` (row ``g`` of each node and edge array = game ``g``'s tree, laid out
as in :mod:`agents.mcts.kernels`).

A round is :func:`select_leaves`, one forward pass of the network over the leaves (done by the
caller), then :func:`expand_leaves`. It differs from the PUCT network search of
:mod:`agents.mcts.netsearch` in the choice of edges and in the expansion:

- the root's edge is chosen by Sequential Halving (``ROOT_GUMBEL``: :func:`.gumbel.pick_root`,
  with the game's considered-visit sequence ``seq[g]`` indexed by the simulation number and the
  root's Gumbel noise ``gum[g]``) or by PUCT (``RULE_PUCT``: priors that the caller may have
  mixed with Dirichlet noise);
- inner edges by Gumbel MuZero's deterministic rule (``RULE_GUMBEL``) or by PUCT;
- a leaf is expanded from the network's raw logits: a softmax over its legal moves, computed
  here (no legal-move mask is built for the network).

Walks spread within a round by a virtual loss (a visit worth -1 until the backup); a walk that ends
on a terminal, proven or depth-capped node is backed up at once; a walk that reaches a node
already waiting for the network waits with it. :func:`root_outputs` reads each root after the
search: the move, the policy target and the search's value.
"""

from __future__ import annotations

import math

from tafl_env.engine._jit import kernel
from tafl_env.engine.rows import (I_KEY, I_REASON, I_TO_MOVE, I_TURN, I_WINNER, copy_full,
                                  copy_light, copy_seen, list_actions, step_row)
from tafl_env.engine.state import RUNNING

from agents.mcts.kernels import H_EDGES, H_ROOT, H_SIMS, _known, _new_node, _pick_edge, prove_up
from agents.mcts.netsearch import _views

from .gumbel import final_choice, improved_policy, pick_interior, pick_root

RULE_PUCT, RULE_GUMBEL = 0, 1
# qparams: the completed-Q transform's constants
Q_C_VISIT, Q_C_SCALE, Q_RESCALE, Q_C_PUCT = range(4)


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
    return 0


@kernel
def expand_leaves(L, tb, hdr, nodes, edges, leaf_game, leaf_node, n_leaves, start, logits,
                  values, path_nodes, path_edges, path_game, path_depth, path_slot, n_paths, acts):
    """Expand the pending leaves ``start ..`` (row ``s`` of ``L``: priors = the softmax of
    ``logits[s]`` over its legal moves, value ``values[s]`` for its side to move), then back up the
    waiting walks. Returns the first leaf that found no room for its edges (the caller grows the
    forest and calls again from there, nothing half-done), or ``n_leaves`` when all is done."""
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
        for i in range(n):
            mx = max(mx, logits[s, acts[i]])
        total = 0.0
        for i in range(n):
            p = math.exp(logits[s, acts[i]] - mx)
            total += p
            e = base + i
            ed.action[e] = acts[i]
            ed.prior[e] = p
            ed.child[e] = -1
            ed.visits[e] = 0
            ed.value_sum[e] = 0.0
            ed.lost[e] = 0
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
        every = True
        for i in range(cnt):
            if e_lost[base + i] == 0:
                every = False
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
