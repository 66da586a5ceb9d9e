"""MCTS with a network evaluator, compiled: the trees of a whole batch of games as one forest of
2-D arrays (row ``g`` = game ``g``'s tree, laid out as in :mod:`.mcts`), searched in rounds.

A round is two kernel calls around one network forward pass:

1. :func:`select_leaves` walks every tree (up to ``leaves_per_tree`` times) from its root to a
   leaf, with a virtual loss on each edge it takes so that the next walk spreads out. A walk that
   ends on a terminal, proven or depth-capped node is backed up at once; a walk that reaches a new
   position creates its node, marks it pending and copies the position into a row of the leaf
   State; a walk that reaches a node already pending waits for it.
2. The caller evaluates the leaf State's rows in one forward pass (priors over the legal moves,
   a value for the side to move).
3. :func:`expand_leaves` gives every pending node its edges and priors and its value, then backs
   up each waiting walk, replacing its virtual loss with the value.

A pending node has no edges yet and ``first = -2 - slot`` (its row in the leaf State); an
expanded node has ``first >= 0``.
"""

from __future__ import annotations

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
    prove_up,
)

OK, FULL = 0, 1


@leaf
def _views(nodes, edges, g):
    """Game ``g``'s tree of a forest: its rows of the forest's node and edge arrays."""
    return (Nodes(nodes.first[g], nodes.count[g], nodes.visits[g], nodes.value[g], nodes.proven[g],
                  nodes.side[g], nodes.key[g], nodes.turn[g], nodes.terminal[g]),
            Edges(edges.action[g], edges.prior[g], edges.child[g], edges.visits[g], edges.value_sum[g],
                  edges.lost[g]))


@kernel
def select_leaves(W, tb, hdr, nodes, edges, budget, leaves_per_tree, c_puct, L, leaf_game,
                  leaf_node, path_nodes, path_edges, path_game, path_depth, path_slot, counts,
                  info, scratch):
    """Walk every tree of the forest (rows ``2g``/``2g+1`` of ``W``: game g's root and its path
    row) until ``budget[g]`` simulations are started or ``leaves_per_tree`` walks are made.
    Writes the pending leaves (rows of ``L``, their game and node) and the walks waiting for them;
    ``counts`` = [leaves, walks, simulations started]. Callers leave room for
    ``leaves_per_tree + 1`` nodes in each tree."""
    max_depth = path_nodes.shape[1]
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
def expand_leaves(L, tb, hdr, nodes, edges, leaf_game, leaf_node, n_leaves, start, priors,
                  values, path_nodes, path_edges, path_game, path_depth, path_slot, n_paths, acts):
    """Expand the pending leaves ``start ..`` (row ``s`` of ``L``, ``priors[s]`` over the action
    ids, ``values[s]`` for its side to move), then back up the waiting walks. Returns the first
    leaf that found no room for its edges (the caller grows the forest and calls again from
    there, nothing half-done), or ``n_leaves`` when all is done."""
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
        nd.value[node] = values[s]
        for i in range(n):
            e = base + i
            ed.action[e] = acts[i]
            ed.prior[e] = priors[s, acts[i]]
            ed.child[e] = -1
            ed.visits[e] = 0
            ed.value_sum[e] = 0.0
            ed.lost[e] = 0
    for p in range(n_paths):
        g = path_game[p]
        nd, ed = _views(nodes, edges, g)
        node = leaf_node[path_slot[p]]
        value = values[path_slot[p]]
        side = nd.side[node]
        nd.visits[node] += 1
        for i in range(path_depth[p]):
            x = path_nodes[p, i]
            e = path_edges[p, i]
            ed.value_sum[e] += (value if nd.side[x] == side else -value) + 1.0
    return n_leaves


@kernel
def room(hdr, node_cap, need_nodes):
    """Whether every tree has room for ``need_nodes`` more nodes."""
    for g in range(hdr.shape[0]):
        if hdr[g, H_NODES] + need_nodes >= node_cap:
            return False
    return True
