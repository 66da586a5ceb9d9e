"""MCTS, compiled: trees as arrays, one per game, searched by a kernel that replays each
simulation's path on a work row with the engine's own step, expands leaves with the greedy
scoring (:mod:`.greedy`), backs values up and proves wins and losses (agents/mcts/agent.py documents the
algorithm).

A tree is two records of arrays with named fields, :class:`Nodes` and :class:`Edges` (as the
engine's State has named arrays), indexed by node and by edge; a forest's arrays have a game axis
first. ``hdr`` holds the node count, the edge count, the root, the simulations of this call and
the root whose moves :func:`check_root` classified.

The evaluator is chosen by ``cfg`` (``C_*`` entries): priors from the greedy scoring or uniform,
leaf values from the greedy scoring or from playouts (random or greedy moves) on a work row, PUCT
or UCT selection. The network evaluator's batched search lives in :mod:`.netsearch`. Tree reuse re-roots the tree at
the node of the new position (found by key and turn below the old root); the nodes outside the
kept subtree stay in the arrays until the tree is cleared, so a kept subtree keeps every count.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from tafl_env.engine._jit import helper, kernel, leaf
from tafl_env.engine.state import RUNNING
from tafl_env.engine.tables import P_BERSERK

from tafl_env.engine.movegen import random_move
from tafl_env.engine.rows import (I_CHAIN, I_HIST, I_KEY, I_MOVES, I_PIECES, I_REASON, I_TO_MOVE,
                                  I_TURN, I_WINNER, copy_light, copy_seen, list_actions, step_row)
from tafl_env.engine.step import next_random

from ..greedy.kernels import choose_node, evaluate, score_node
from ..greedy.scoring import LOSS, UNSAFE, WIN



class Nodes(NamedTuple):
    """A tree's nodes, one entry per node (the kernels take this record as it is)."""

    first: np.ndarray      # int64: index of the node's first edge (its edges are contiguous), -1 unexpanded
    count: np.ndarray      # int64: its number of edges
    visits: np.ndarray     # int64: simulations through it
    value: np.ndarray      # float64: its value for the side to move there (evaluator or mean)
    proven: np.ndarray     # int64: +1 proven win, -1 proven loss for the side to move, 0 open
    side: np.ndarray       # int64: the side to move there
    key: np.ndarray        # uint64: its position key (tree reuse finds the new root by key and turn)
    turn: np.ndarray       # int64: its turn
    terminal: np.ndarray   # int64: 1 for a finished game


class Edges(NamedTuple):
    """A tree's edges (moves), one entry per edge."""

    action: np.ndarray     # int64: the action
    prior: np.ndarray      # float64: its prior
    child: np.ndarray      # int64: the node it leads to, -1 not yet made
    visits: np.ndarray     # int64: simulations through it
    value_sum: np.ndarray  # float64: the sum of their values for the mover
    lost: np.ndarray       # int64: 1 if the move is proven lost for the mover


NODE_DTYPES = Nodes(np.int64, np.int64, np.int64, np.float64, np.int64, np.int64, np.uint64, np.int64, np.int64)
EDGE_DTYPES = Edges(np.int64, np.float64, np.int64, np.int64, np.float64, np.int64)


def new_nodes(shape) -> Nodes:
    return Nodes(*(np.zeros(shape, dtype) for dtype in NODE_DTYPES))


def new_edges(shape) -> Edges:
    return Edges(*(np.zeros(shape, dtype) for dtype in EDGE_DTYPES))


H_NODES, H_EDGES, H_ROOT, H_SIMS, H_CHECKED = range(5)
HDR_SIZE = 5
OK, FULL = 0, 1
W_CAPTURE_VALUE = 1.0

# cfg: the evaluator and the selection rule, one int64 array per agent
C_PRIOR, C_LEAF, C_SELECT, C_PLAYOUT, C_ROLLOUTS, C_MAX_TURNS, CFG_SIZE = range(7)
PRIOR_GREEDY, PRIOR_UNIFORM = 0, 1
LEAF_GREEDY, LEAF_PLAYOUT = 0, 1
SELECT_PUCT, SELECT_UCT = 0, 1
PLAYOUT_RANDOM, PLAYOUT_GREEDY = 0, 1
PLAYOUT_ROW = 2   # the work row a playout runs on (row 1 keeps the leaf)


@leaf
def _new_node(hdr, nodes, side, key, turn):
    """A fresh, unexpanded node for a position of ``side`` to move, ``key`` and ``turn``."""
    i = hdr[H_NODES]
    hdr[H_NODES] = i + 1
    nodes.first[i] = -1
    nodes.count[i] = 0
    nodes.visits[i] = 0
    nodes.value[i] = 0.0
    nodes.proven[i] = 0
    nodes.side[i] = side
    nodes.key[i] = key
    nodes.turn[i] = turn
    nodes.terminal[i] = 0
    return i


@helper
def _expand(S, tb, at, row, node, hdr, nodes, edges, bufs, e0, value_scale, temperature):
    """Score row ``row``'s moves and fill ``node``'s edges, value and proof."""
    n_first, n_count, n_visits, n_value, n_proven, n_side, n_key, n_turn, n_term = nodes
    e_action, e_prior, e_child, e_n, e_w, e_lost = edges
    acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw, stamp, gen, ties = bufs
    copy_seen(S, row, row + 1)
    for t in range(S[I_TURN][0], S[I_TURN][row] + 1):   # the path's history, for repetition
        S[I_HIST][row + 1, t] = S[I_HIST][row, t]
        S[I_HIST][row + 2, t] = S[I_HIST][row, t]
    n = score_node(S, tb, at, row, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw,
                   stamp, gen)
    base = hdr[H_EDGES]
    hdr[H_EDGES] = base + n
    n_first[node] = base
    n_count[node] = n
    berserk = tb.params[P_BERSERK] != 0
    wins = 0
    safe = 0
    unsafe = 0
    best = -np.inf
    best_strength = 0.0
    for i in range(n):
        sc = scores[i]
        if sc >= WIN / 2:
            wins += 1
        elif sc > LOSS / 2:
            if sc <= UNSAFE / 2:
                unsafe += 1
            else:
                safe += 1
                if sc > best:
                    best = sc
                    best_strength = W_CAPTURE_VALUE * caps[i] + emov[i]
    # priors: softmax of the strength over the pool (wins; else safe; else unsafe; else all)
    mx = -np.inf
    for i in range(n):
        sc = scores[i]
        kind = 3 if sc >= WIN / 2 else (0 if sc <= LOSS / 2 else (1 if sc <= UNSAFE / 2 else 2))
        pool = kind == 3 if wins else (kind == 2 if safe else (kind == 1 if unsafe else True))
        e = base + i
        e_action[e] = acts[i]
        e_child[e] = -1
        e_n[e] = 0
        e_w[e] = 0.0
        e_lost[e] = 1 if (kind == 0 or (kind == 1 and not berserk)) else 0
        if kind == 1 and berserk:
            e_n[e] = 1
            e_w[e] = -1.0
        if pool:
            v = (W_CAPTURE_VALUE * caps[i] + emov[i]) / temperature
            e_prior[e] = v
            if v > mx:
                mx = v
        else:
            e_prior[e] = -np.inf
    total = 0.0
    for i in range(n):
        e = base + i
        p = math.exp(e_prior[e] - mx) if e_prior[e] > -np.inf else 0.0
        if wins:
            p = 1.0 if e_prior[e] > -np.inf else 0.0
        e_prior[e] = p
        total += p
    for i in range(n):
        e_prior[base + i] /= total
    side = n_side[node]
    if wins:
        n_proven[node] = 1
        n_value[node] = 1.0
    elif not safe and not (berserk and unsafe):
        n_proven[node] = -1
        n_value[node] = -1.0
    elif not safe:
        n_value[node] = -1.0
    else:
        e0s = e0 if side == 1 else -e0
        n_value[node] = math.tanh((best_strength - e0s) / value_scale)


@helper
def expand_uniform(S, tb, row, node, hdr, nodes, edges, acts):
    """Fill ``node``'s edges with row ``row``'s legal moves, all of the same prior (nothing
    scored: no proof, the value is left to the caller)."""
    n_first, n_count = nodes.first, nodes.count
    e_action, e_prior, e_child, e_n, e_w, e_lost = edges
    n = list_actions(S, tb, row, acts)
    base = hdr[H_EDGES]
    hdr[H_EDGES] = base + n
    n_first[node] = base
    n_count[node] = n
    for i in range(n):
        e = base + i
        e_action[e] = acts[i]
        e_prior[e] = 1.0 / n
        e_child[e] = -1
        e_n[e] = 0
        e_w[e] = 0.0
        e_lost[e] = 0


@helper
def classify(tb, node, nodes, edges, acts, scores, n):
    """Mark ``node``'s edges with the greedy scores of its moves (``acts[:n]``/``scores[:n]``, in
    any order): wins prove the node (the priors go to the winning moves), moves that lose at once
    and, outside Berserk, unsafe moves are lost (in Berserk: one virtual losing visit), a node
    whose every edge is lost is lost. Priors and values are otherwise the evaluator's."""
    n_first, n_count, n_value, n_proven = nodes.first, nodes.count, nodes.value, nodes.proven
    e_action, e_prior, e_n, e_w, e_lost = (edges.action, edges.prior, edges.visits, edges.value_sum,
                                           edges.lost)
    base = n_first[node]
    cnt = n_count[node]
    berserk = tb.params[P_BERSERK] != 0
    wins = 0
    for i in range(n):
        if scores[i] >= WIN / 2:
            wins += 1
    for i in range(n):
        e = base
        for j in range(cnt):
            if e_action[base + j] == acts[i]:
                e = base + j
                break
        sc = scores[i]
        if wins:
            e_prior[e] = 1.0 / wins if sc >= WIN / 2 else 0.0
        elif sc <= LOSS / 2:
            e_lost[e] = 1
        elif sc <= UNSAFE / 2:
            if berserk:
                e_n[e] += 1
                e_w[e] -= 1.0
            else:
                e_lost[e] = 1
    if wins:
        n_proven[node] = 1
        n_value[node] = 1.0
        return
    for j in range(cnt):
        if e_lost[base + j] == 0:
            return
    n_proven[node] = -1
    n_value[node] = -1.0


@helper
def playouts(S, tb, at, cfg, rng, bufs, side, e0, value_scale):
    """The mean result of ``cfg[C_ROLLOUTS]`` playouts from the leaf in row 1 for ``side``: at
    most ``cfg[C_MAX_TURNS]`` actions each (random, or the greedy agent's choice), on row
    ``PLAYOUT_ROW``; a finished game is worth +1/-1 (a draw 0), an unfinished one the static
    value ``tanh((E_side - E0_side) / value_scale)`` of its last position."""
    acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw, stamp, gen, ties = bufs
    p = PLAYOUT_ROW
    t0 = S[I_TURN][0]
    for t in range(t0, S[I_TURN][1] + 1):     # the path's history, for repetition
        S[I_HIST][p, t] = S[I_HIST][1, t]
    total = 0.0
    for _ in range(cfg[C_ROLLOUTS]):
        copy_light(S, 1, p)
        copy_seen(S, 1, p)
        for _ in range(cfg[C_MAX_TURNS]):
            if S[I_REASON][p] != RUNNING:
                break
            if cfg[C_PLAYOUT] == PLAYOUT_GREEDY:
                copy_seen(S, p, p + 1)
                for t in range(t0, S[I_TURN][p] + 1):
                    S[I_HIST][p + 1, t] = S[I_HIST][p, t]
                    S[I_HIST][p + 2, t] = S[I_HIST][p, t]
                a = acts[choose_node(S, tb, at, p, acts, scores, caps, emov, info, scratch,
                                     cacts, ccnt, cidx, rw, stamp, gen, ties, rng)]
            else:
                a = random_move(S[I_TO_MOVE], S[I_CHAIN], S[I_PIECES], S[I_MOVES], tb, p,
                                next_random(rng, 0))[0]
            step_row(S, tb, p, a, info, scratch)
        if S[I_REASON][p] != RUNNING:
            w = S[I_WINNER][p]
            total += 0.0 if w == 2 else (1.0 if w == side else -1.0)
        else:
            e = evaluate(S, tb, at, p, stamp, gen)
            es = e if side == 1 else -e
            e0s = e0 if side == 1 else -e0
            total += math.tanh((es - e0s) / value_scale)
    return total / cfg[C_ROLLOUTS]


@leaf
def _known(nodes, x, side):
    """The exact value of node x for ``side`` (2.0: not known)."""
    n_proven, n_side, n_term, n_value = nodes.proven, nodes.side, nodes.terminal, nodes.value
    if n_term[x]:
        v = n_value[x]
    elif n_proven[x] != 0:
        v = float(n_proven[x])
    else:
        return 2.0
    return v if n_side[x] == side else -v


@leaf
def every_edge_lost(e_lost, base, cnt):
    """Whether every edge ``base .. base + cnt - 1`` of a node is proven lost (then the lost edges
    take part in the choices again: the node's side must still play one)."""
    for i in range(cnt):
        if e_lost[base + i] == 0:
            return False
    return True


@helper
def _pick_edge(node, nodes, edges, c_puct):
    n_first, n_count, n_visits, n_value = nodes.first, nodes.count, nodes.visits, nodes.value
    e_prior, e_n, e_w, e_lost = edges.prior, edges.visits, edges.value_sum, edges.lost
    base = n_first[node]
    cnt = n_count[node]
    all_lost = every_edge_lost(e_lost, base, cnt)
    sq = math.sqrt(n_visits[node] + 1.0)
    best = -np.inf
    choice = base
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not all_lost:
            continue
        q = e_w[e] / e_n[e] if e_n[e] > 0 else n_value[node]
        u = q + c_puct * e_prior[e] * sq / (1.0 + e_n[e])
        if u > best:
            best = u
            choice = e
    return choice


@helper
def _pick_uct(node, nodes, edges, c_uct, rng):
    """UCB1: an unvisited edge first (uniformly at random), else the highest
    ``Q + c_uct * sqrt(ln N / n)``; lost edges only when every edge is lost."""
    n_first, n_count, n_visits = nodes.first, nodes.count, nodes.visits
    e_n, e_w, e_lost = edges.visits, edges.value_sum, edges.lost
    base = n_first[node]
    cnt = n_count[node]
    all_lost = every_edge_lost(e_lost, base, cnt)
    fresh = 0
    choice = base
    for i in range(cnt):
        e = base + i
        if e_n[e] == 0 and (all_lost or not e_lost[e]):
            fresh += 1
            if next_random(rng, 0) * fresh < 1.0:
                choice = e
    if fresh:
        return choice
    log_n = math.log(max(n_visits[node], 1))
    best = -np.inf
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not all_lost:
            continue
        u = e_w[e] / e_n[e] + c_uct * math.sqrt(log_n / e_n[e])
        if u > best:
            best = u
            choice = e
    return choice


@kernel
def search(S, tb, at, hdr, nodes, edges, path_nodes, path_edges, sims, e0, value_scale,
           temperature, c_puct, bufs, cfg, c_uct, rng):
    """Run ``sims`` simulations of the tree in ``hdr``/``nodes``/``edges`` from the position in
    row 0 of ``S`` (rows 1 ... are the path's row, the playout's and the scoring's scratch), with
    the evaluator and selection of ``cfg``. Returns OK, or FULL when the arrays have no room for
    another expansion (nothing half-done)."""
    n_first, n_count, n_visits, n_value, n_proven, n_side, n_key, n_turn, n_term = nodes
    e_action, e_prior, e_child, e_n, e_w, e_lost = edges
    max_depth = path_nodes.shape[0]
    n_cap = n_first.shape[0]
    e_cap = e_action.shape[0]
    na = bufs[0].shape[0]
    root = hdr[H_ROOT]
    for _ in range(sims):
        if n_proven[root] != 0:
            return OK
        if hdr[H_NODES] + 1 >= n_cap or hdr[H_EDGES] + na >= e_cap:
            return FULL
        copy_light(S, 0, 1)
        copy_seen(S, 0, 1)
        node = root
        depth = 0
        leaf_node = -1
        value = 0.0
        vside = 0
        fresh_value = 2.0   # a new leaf's playout value (2.0: the node's own value)
        while True:
            if cfg[C_SELECT] == SELECT_UCT:
                e = _pick_uct(node, nodes, edges, c_uct, rng)
            else:
                e = _pick_edge(node, nodes, edges, c_puct)
            path_nodes[depth] = node
            path_edges[depth] = e
            depth += 1
            child = e_child[e]
            step_row(S, tb, 1, e_action[e], info_of(bufs), scratch_of(bufs))   # one inlined step
            if child < 0:
                child = _new_node(hdr, nodes, S[I_TO_MOVE][1], S[I_KEY][1], S[I_TURN][1])
                e_child[e] = child
                if S[I_REASON][1] != RUNNING:
                    w = S[I_WINNER][1]
                    n_term[child] = 1
                    n_value[child] = 0.0 if w == 2 else (1.0 if w == n_side[child] else -1.0)
                else:
                    if cfg[C_PRIOR] == PRIOR_GREEDY:
                        _expand(S, tb, at, 1, child, hdr, nodes, edges, bufs, e0, value_scale,
                                temperature)
                    else:
                        expand_uniform(S, tb, 1, child, hdr, nodes, edges, bufs[0])
                    if cfg[C_LEAF] == LEAF_PLAYOUT and n_proven[child] == 0:
                        fresh_value = playouts(S, tb, at, cfg, rng, bufs, n_side[child], e0,
                                               value_scale)
                        if cfg[C_PRIOR] != PRIOR_GREEDY:
                            n_value[child] = fresh_value   # first-play value of its edges
                leaf_node = child
                break
            node = child
            if n_term[node] or n_proven[node] != 0 or depth >= max_depth:
                leaf_node = node
                break
        value = n_value[leaf_node] if fresh_value == 2.0 else fresh_value
        vside = n_side[leaf_node]
        hdr[H_SIMS] += 1
        # backup
        n_visits[leaf_node] += 1
        for i in range(depth):
            x = path_nodes[i]
            e = path_edges[i]
            n_visits[x] += 1
            e_n[e] += 1
            e_w[e] += value if n_side[x] == vside else -value
        prove_up(nodes, edges, path_nodes, path_edges, depth)
    return OK


@helper
def prove_up(nodes, edges, path_nodes, path_edges, depth):
    """Push proofs up a path (as in :func:`search`): a winning edge proves its node won, a node
    whose every edge is lost is lost."""
    n_first, n_count, n_proven, n_side = nodes.first, nodes.count, nodes.proven, nodes.side
    e_child, e_lost = edges.child, edges.lost
    for i in range(depth - 1, -1, -1):
        x = path_nodes[i]
        e = path_edges[i]
        v = _known(nodes, e_child[e], n_side[x])
        if v == 2.0 or v == 0.0:
            break
        if v > 0:
            n_proven[x] = 1
        else:
            e_lost[e] = 1
            if not every_edge_lost(e_lost, n_first[x], n_count[x]):
                break
            n_proven[x] = -1


@leaf
def info_of(bufs):
    return bufs[4]


@leaf
def scratch_of(bufs):
    return bufs[5]


@kernel
def expand_root(S, tb, at, hdr, nodes, edges, bufs, e0, value_scale, temperature, prior):
    """A fresh tree: its root is the position in row 0 (expanded with row 0 as its row, with the
    greedy scoring or uniform priors); -1 for ``prior`` leaves it unexpanded (a network
    evaluator expands it)."""
    hdr[H_NODES] = 0
    hdr[H_EDGES] = 0
    hdr[H_SIMS] = 0
    hdr[H_CHECKED] = -1
    root = _new_node(hdr, nodes, S[I_TO_MOVE][0], S[I_KEY][0], S[I_TURN][0])
    hdr[H_ROOT] = root
    if prior == PRIOR_GREEDY:
        _expand(S, tb, at, 0, root, hdr, nodes, edges, bufs, e0, value_scale, temperature)
        hdr[H_CHECKED] = root
    elif prior == PRIOR_UNIFORM:
        expand_uniform(S, tb, 0, root, hdr, nodes, edges, bufs[0])


@kernel
def check_root(S, tb, at, hdr, nodes, edges, bufs):
    """Classify the root's moves (the position in row 0, expanded) with the greedy scoring's
    exact check: :func:`classify`. Every evaluator's root gets it once, so that a win in one is
    taken and a loss in one avoided whatever the priors."""
    acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw, stamp, gen, ties = bufs
    root = hdr[H_ROOT]
    hdr[H_CHECKED] = root
    copy_seen(S, 0, 1)
    n = score_node(S, tb, at, 0, acts, scores, caps, emov, info, scratch, cacts, ccnt, cidx, rw,
                   stamp, gen)
    classify(tb, root, nodes, edges, acts, scores, n)


@kernel
def find_node(hdr, nodes, edges, key, turn, max_depth, stack_node, stack_idx):
    """The expanded node below the root (at most ``max_depth`` plies) whose position key and turn
    are ``key``/``turn``, or -1 (a depth-first search on the stack arrays)."""
    n_first, n_count, n_key, n_turn, n_term = (nodes.first, nodes.count, nodes.key, nodes.turn,
                                               nodes.terminal)
    e_child = edges.child
    root = hdr[H_ROOT]
    if n_key[root] == key and n_turn[root] == turn and n_count[root] > 0:
        return root
    sp = 0
    stack_node[0] = root
    stack_idx[0] = 0
    while sp >= 0:
        x = stack_node[sp]
        i = stack_idx[sp]
        if i >= n_count[x]:
            sp -= 1
            continue
        stack_idx[sp] += 1
        c = e_child[n_first[x] + i]
        if c < 0 or n_term[c]:
            continue
        if n_key[c] == key and n_turn[c] == turn and n_count[c] > 0:
            return c
        if n_turn[c] <= turn and n_count[c] > 0 and sp + 1 < max_depth:
            sp += 1
            stack_node[sp] = c
            stack_idx[sp] = 0
    return -1


@kernel
def best_action(hdr, nodes, edges):
    """The move to play at the root: a proven win if there is one, else the most visited edge
    that is not a proven loss (ties: higher mean value, then higher prior)."""
    n_first, n_count, n_proven, n_side = nodes.first, nodes.count, nodes.proven, nodes.side
    e_action, e_prior, e_child, e_n, e_w, e_lost = edges
    root = hdr[H_ROOT]
    base = n_first[root]
    cnt = n_count[root]
    side = n_side[root]
    if n_proven[root] == 1:
        for i in range(cnt):
            c = e_child[base + i]
            if c >= 0 and _known(nodes, c, side) == 1.0:
                return e_action[base + i]
        best = base
        for i in range(cnt):
            if e_prior[base + i] > e_prior[best]:
                best = base + i
        return e_action[best]
    all_lost = every_edge_lost(e_lost, base, cnt)
    best = -1
    for i in range(cnt):
        e = base + i
        if e_lost[e] and not all_lost:
            continue
        if best < 0:
            best = e
            continue
        q = e_w[e] / e_n[e] if e_n[e] > 0 else -2.0
        qb = e_w[best] / e_n[best] if e_n[best] > 0 else -2.0
        if (e_n[e] > e_n[best] or (e_n[e] == e_n[best] and (q > qb or (q == qb and e_prior[e] > e_prior[best])))):
            best = e
    return e_action[best]
