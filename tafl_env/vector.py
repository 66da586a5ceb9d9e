"""Batched environments: a Gymnasium ``VectorEnv`` over one engine batch of B games.

One :class:`~tafl_env.engine.State` holds every game of the batch; each ``step`` is one batched
engine step (plus the opponent's batched replies), and the observations of all B environments are
built by one compiled pass (:class:`tafl_env.observation.Observer`). No Python loop runs over games.

Two modes (both here and in the SB3 ``VecEnv`` of :mod:`tafl_env.sb3`, which shares the core):

**Self-play** (``self_play=True``, the default when no opponent is given). The learner plays both
sides. Each game has two slots: slot ``2g`` is the attacker of game ``g``, slot ``2g+1`` its
defender, so ``num_envs`` must be even and the batch holds ``num_envs // 2`` games.

- At each step only the slot whose side is to move in its game plays. The waiting slot's mask
  allows exactly one action, the pass action (``num_actions - 1``), as a no-op: whatever the
  waiting slot sends is ignored. ``infos["active"]`` marks the slots that move next.
- Each slot observes the game from its own side (the waiting slot too).
- Rewards are 0 until the game ends; then both slots end together (``terminated`` or, at the move
  cap, ``truncated``) and each gets its side's final reward: +1 win, −1 loss, 0 draw or truncation.
- Berserk chains: the same slot stays active until the chain ends (by a pass or a non-capturing
  continuation being impossible); the other slot keeps passing.

**Fixed opponent** (``opponent=`` ``"random"``, a callable ``opponent(obs, mask) -> actions`` or an
object with ``.act(obs, mask)``; ``obs`` is ``(K, N, N, 14)`` float32 from the opponent's side,
``mask`` ``(K, A)`` int8, the result ``K`` actions). The learner plays one side per environment:
``learner_side="attacker"`` or ``"defender"`` for all, or ``"alternate"``: environment ``i`` starts
as the attacker when ``i`` is even and switches side at every new episode. Inside ``step`` the
opponent moves, for all games at once, until the learner is to move again (in a berserk chain
it may move several times); likewise after a reset when the opponent moves first.
``"random"`` uses :meth:`Engine.random_actions` (uniform over legal actions, no mask unpacked).
Rewards are +1/−1 at the end from the learner's side, 0 for a draw and on truncation.

**Autoreset: ``AutoresetMode.SAME_STEP``.** A game that ends in ``step`` is reset inside that same
step: the returned observation and ``infos["action_mask"]`` already belong to the new game, and
the last observation of the finished episode is in ``infos["final_obs"]`` (an object array of
length ``num_envs``, ``None`` where no episode ended, ``infos["_final_obs"]`` marks the rows),
with ``infos["final_info"]`` holding that step's per-environment end data (``winner`` code 0
attacker / 1 defender / 2 draw, ``reason`` code as ``tafl_env.engine.REASON_NAMES``, ``turns``,
``side``; each with its ``_key`` mask) and ``infos["_final_info"]`` the rows. SAME_STEP was chosen
because with action masks every observation the agent receives then has a live game and a mask
with at least one legal action: NEXT_STEP would hand out the finished game's observation with an
all-zero mask and then require a step whose action is ignored, which masked policies (a softmax
over no legal action) cannot sample; it is also the convention of SB3, so both front ends of this
module behave the same.

Illegal actions (a moving slot's or the learner's action not in its mask, or an opponent's reply)
raise :class:`~tafl_env.errors.IllegalMoveError` and change nothing (the rule ``"raise"`` of
:func:`tafl_env.outcome.illegal_action`): an opponent's illegal reply takes the learners' moves of
that step back too. Use the masks.

Truncation: at the variant's move cap (``max_turns``, a rule option) the engine ends a game with
reason ``'truncated'``: ``truncated=True, terminated=False``, reward 0. When the opponent's opening
already reaches the cap (``max_turns=1`` with the learner moving second), the learner cannot move
in that episode: its mask allows only the pass action, as a placeholder whose value is ignored,
and the next step ends the episode as truncated.

Spaces: ``single_observation_space = Box(0, 1, (N, N, 14), float32)`` (planes:
:mod:`tafl_env.observation`), ``single_action_space = Discrete(A)``, ``A = N*N*4*(N-1) + 1``; the
batched spaces come from :func:`gymnasium.vector.utils.batch_space`. The masks are
``infos["action_mask"]`` ``(num_envs, A)`` int8 and :meth:`TaflVectorEnv.action_masks`.

    >>> env = TaflVectorEnv("historical_tablut", num_envs=4)
    >>> obs, infos = env.reset(seed=0)
    >>> obs.shape, infos["action_mask"].shape, infos["active"].tolist()
    ((4, 9, 9, 14), (4, 2593), [True, False, True, False])
    >>> actions = [int(m.nonzero()[0][0]) for m in env.action_masks()]
    >>> obs, rewards, terminated, truncated, infos = env.step(actions)
    >>> infos["active"].tolist()
    [False, True, False, True]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .engine import Engine, State
from .engine.core import BATCH_MEMORY_FACTOR, CHECKED_BATCH
from .engine.state import RUNNING, TRUNCATED
from .errors import (IllegalMoveError, InvalidArgumentError, InvalidOptionError, check_reset_options,
                     check_seed, preview)
from .game import engine_for
from .memory import fits
from .observation import NUM_PLANES, observer_for
from .outcome import illegal_action
from .rules import SIDES, RuleSet, make_rules, side_index

__all__ = ["TaflVectorEnv", "BatchCore", "EngineOpponent", "MAX_NUM_ENVS"]



class EngineOpponent:
    """An opponent that acts on the engine state rather than on observations.

    ``EngineOpponent(agent)`` wraps an engine agent (``agent.act(engine, state) -> actions``, the
    interface of :class:`agents.base.Agent`, e.g. the greedy or MCTS agent) or a function
    ``fn(engine, state) -> actions``. The vector envs then hand it the sub-batch of games it must
    move (``state.take(rows)``) instead of ``(obs, mask)``. Objects whose ``act`` method takes an
    ``engine`` parameter are wrapped automatically.
    """

    def __init__(self, agent):
        act = getattr(agent, "act", agent)
        if not callable(act):
            raise ValueError(f"{agent!r} has no act(engine, state) and is not callable")
        self.agent = agent
        self.act = act

    def __call__(self, engine: Engine, state: State) -> np.ndarray:
        return self.act(engine, state)

    def __repr__(self) -> str:
        return f"EngineOpponent({self.agent!r})"


def _acts_on_state(fn) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "engine" in params


def _opponent_fn(opponent) -> Callable | str | None:
    if opponent is None or (isinstance(opponent, str) and opponent == "random"):
        return opponent
    if isinstance(opponent, EngineOpponent):
        return opponent
    if isinstance(opponent, str):
        raise ValueError(f"unknown opponent {opponent!r}: use 'random', a callable "
                         "opponent(obs, mask) -> actions, or an object with .act(obs, mask)")
    act = getattr(opponent, "act", None)
    if callable(act):
        return EngineOpponent(opponent) if _acts_on_state(act) else act
    if callable(opponent):
        return opponent
    raise ValueError(f"opponent {opponent!r} is neither 'random', callable, nor has .act(obs, mask)")


MAX_NUM_ENVS = 1_000_000
"""The most environments one vector env holds: more is a mistake (a typo, a unit confusion) long before
it is a workload, and is refused at once, whatever the memory of the machine."""


def env_bytes(engine: Engine) -> int:
    """About the memory one environment of a vector env takes: its game's state as a batch in use
    takes it (:data:`~tafl_env.engine.core.BATCH_MEMORY_FACTOR` copies), its observation four times
    (the one returned, a finished episode's final one, and the observation space's bounds, which
    Gymnasium stores whole) and its action mask twice (the mask and a step's work)."""
    obs = 4 * engine.n * engine.n * NUM_PLANES
    state = engine.initial_state(1).buffer.nbytes
    return BATCH_MEMORY_FACTOR * state + 4 * obs + 2 * engine.mask_width


class BatchCore:
    """The shared engine-side logic of the vector envs (Gymnasium and SB3) and the single env.

    Holds one engine :class:`State` of all games, plays the opponent, computes rewards, resets
    finished games and builds observations and masks. Front ends only format what it returns.
    """

    def __init__(self, variant: str | RuleSet, num_envs: int, opponent=None,
                 learner_side: str | int = "attacker", self_play: bool | None = None,
                 autoreset: bool = True, **options):
        if isinstance(variant, RuleSet):
            if options:
                raise ValueError("pass rule options either in the RuleSet or as keywords, not both")
            rules = variant
        else:
            rules = make_rules(variant, **options)
        if not isinstance(num_envs, (int, np.integer)) or isinstance(num_envs, bool) or num_envs < 1:
            raise InvalidArgumentError(f"num_envs must be a positive int, got {preview(num_envs)}")
        if num_envs > MAX_NUM_ENVS:
            raise InvalidArgumentError(f"num_envs must be at most {MAX_NUM_ENVS}, got {preview(num_envs)}")
        if self_play is None:
            self_play = opponent is None
        if self_play and opponent is not None:
            raise ValueError("self_play=True plays both sides with the learner; do not pass an opponent")
        self.rules = rules
        self.engine = eng = engine_for(rules)
        if num_envs > CHECKED_BATCH:   # refused before it is allocated, not a MemoryError halfway
            fits(int(num_envs) * env_bytes(eng), f"num_envs={int(num_envs)} ({rules.name})")
        self.observer = observer_for(eng)
        self.num_envs = int(num_envs)
        self.self_play = bool(self_play)
        self.autoreset = autoreset
        self.n, self.num_actions, self.pass_action = eng.n, eng.num_actions, eng.pass_action
        if self.self_play:
            if self.num_envs % 2:
                raise ValueError(f"self-play uses two slots per game: num_envs must be even, got {num_envs}")
            self.num_games = self.num_envs // 2
            self.opponent = None
            self.alternate = False
            self.base_side = np.tile(np.array([0, 1], dtype=np.int8), self.num_games)
        else:
            self.num_games = self.num_envs
            self.opponent = _opponent_fn("random" if opponent is None else opponent)
            self.alternate = learner_side == "alternate"
            if self.alternate:
                self.base_side = (np.arange(self.num_envs) % 2).astype(np.int8)
            else:
                try:
                    s = side_index(learner_side)
                except Exception as e:  # noqa: BLE001 - re-raised with the accepted values
                    raise ValueError(f"learner_side must be 'attacker', 'defender' or 'alternate', "
                                     f"got {learner_side!r}") from e
                self.base_side = np.full(self.num_envs, s, dtype=np.int8)
        self.side = self.base_side.copy()          # (num_envs,) the side each env's agent plays
        self._fresh1 = eng.initial_state(1)
        if self._fresh1.done[0]:
            raise ValueError(f"the start position of {rules.name} is already over")
        self._games = np.arange(self.num_games)
        self.rng = np.random.default_rng()
        self.state: State | None = None
        self.mask: np.ndarray | None = None
        self._rep: np.ndarray | None = None    # plane 12 of every game, valid within a step
        self.moves = 0                          # engine moves played (learner and opponent)

    # --- helpers -----------------------------------------------------------------------------

    def set_opponent(self, opponent) -> None:
        """Replace the fixed opponent (fixed-opponent mode only); it plays from the next move on."""
        if self.self_play:
            raise ValueError("self-play envs have no opponent to set")
        self.opponent = _opponent_fn("random" if opponent is None else opponent)

    def _fresh(self, k: int) -> State:
        return self._fresh1.take(np.zeros(k, dtype=np.intp))

    def _opponent_actions(self, st: State, rows: np.ndarray, side: np.ndarray) -> np.ndarray:
        """One action per game of ``st``; ``rows`` (the games the opponent must move) get the
        opponent's choice, seen from ``side`` (R,) (the opponent's side in each of those games)."""
        eng = self.engine
        if isinstance(self.opponent, str):   # "random"
            return eng.random_actions(st, self.rng)
        whole = len(rows) == len(st)
        if isinstance(self.opponent, EngineOpponent):
            sub = st if whole else st.take(rows)
            chosen = np.asarray(self.opponent(eng, sub)).reshape(-1)
            if chosen.shape != (len(rows),):
                raise ValueError(f"the opponent must return {len(rows)} actions, got {chosen.shape}")
            acts = np.zeros(len(st), dtype=np.intp)
            acts[rows] = chosen
            return acts
        obs = self.observer.observe(st, None if whole else rows, side)
        mask = eng.legal_action_mask(st)
        if not whole:
            mask = mask[rows]
        chosen = np.asarray(self.opponent(obs, mask))
        if chosen.shape != (len(rows),) or not np.issubdtype(chosen.dtype, np.integer):
            raise ValueError(f"the opponent must return {len(rows)} integer actions, got an array of "
                             f"shape {chosen.shape} and dtype {chosen.dtype}")
        acts = np.zeros(len(st), dtype=np.intp)
        acts[rows] = chosen
        return acts

    def _play_opponent(self, st: State, side: np.ndarray) -> None:
        """Opponent moves in ``st`` until every running game has the learner (``side``) to move."""
        eng = self.engine
        while True:
            running = st.reason == RUNNING
            rows = np.flatnonzero(running & (st.to_move != side))
            if not len(rows):
                return
            opp = 1 - side[rows]
            if len(rows) == np.count_nonzero(running):     # every running game: step in place
                target, sub_rows = st, rows
            else:
                target, sub_rows = st.take(rows), np.arange(len(rows))
            acts = self._opponent_actions(target, sub_rows, opp)
            try:
                eng.step(target, acts)
            except IllegalMoveError as e:
                illegal_action("raise", SIDES[int(opp[0])], f"the opponent chose an illegal action: {e}")
            self.moves += len(rows)
            if target is not st:
                st.put(rows, target)

    def _reset_games(self, games: np.ndarray) -> None:
        """Fresh games at rows ``games`` (alternating sides flip; the opponent opens if it starts)."""
        k = len(games)
        if not k:
            return
        fresh = self._fresh(k)
        if not self.self_play:
            if self.alternate:
                self.side[games] ^= 1
            side = self.side[games]
            self._play_opponent(fresh, side)
            for _ in range(100):   # an opening that ends the game at once: start those again
                over = np.flatnonzero(fresh.done & (fresh.reason != TRUNCATED))  # (not the cap's)
                if not len(over):
                    break
                again = self._fresh(len(over))
                self._play_opponent(again, side[over])
                fresh.put(over, again)
            else:
                raise RuntimeError("the opponent's opening keeps ending the game; cannot start an episode")
        self.state.put(games, fresh)
        if self._rep is not None:
            self._rep[games] = self.observer.repeated(fresh)

    def _observe(self, games=None) -> np.ndarray:
        """Observations of all envs (or of the envs of ``games``), from each env's side."""
        rep = self._rep
        if self.self_play:
            return self.observer.observe_pairs(self.state, games, rep)
        side = self.side if games is None else self.side[games]
        return self.observer.observe(self.state, games, side, rep)

    def _masks(self) -> np.ndarray:
        eng = self.engine
        if not self.self_play:
            mask = eng.legal_action_mask(self.state)
            over = self.state.reason != RUNNING    # an opening cut by the move cap: pass, ignored
            if over.any():
                mask[over, eng.pass_action] = 1
            return mask
        # Slot 2g+side of game g: the mover's slot gets the game's mask, the other slot only the
        # pass action (its placeholder move), both written straight into the returned buffer.
        g = len(self.state)
        out = np.zeros((2 * g, eng.mask_width), dtype=np.int8)
        mover_rows = 2 * self._games + self.state.to_move
        eng.write_masks(self.state, out, mover_rows)
        out[mover_rows ^ 1, eng.pass_action] = 1
        return out[:, : eng.num_actions]

    def env_rows(self, games: np.ndarray) -> np.ndarray:
        """The environment indices of games ``games`` (two slots per game in self-play)."""
        if not self.self_play:
            return games
        return (2 * games[:, None] + np.arange(2)).reshape(-1)

    def active(self) -> np.ndarray:
        """(num_envs,) bool: the environments whose action counts at the next step."""
        if not self.self_play:
            return self.state.reason == RUNNING
        return (self.state.to_move[:, None] == np.arange(2)).reshape(-1) & np.repeat(
            self.state.reason == RUNNING, 2)

    # --- reset and step ----------------------------------------------------------------------

    def reset(self, games: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Start all games (``games`` None) or only those; returns (obs, mask) of all envs."""
        if games is None or self.state is None:
            self.side[:] = self.base_side
            self.state = self._fresh(self.num_games)
            if not self.self_play:
                self._play_opponent(self.state, self.side)
                self._reset_games(np.flatnonzero(self.state.done & (self.state.reason != TRUNCATED)))
        else:
            self._reset_games(np.asarray(games, dtype=np.intp))
        self.mask = self._masks()
        return self._observe(), self.mask

    def step(self, actions) -> dict[str, Any]:
        """One step of every environment. Returns a dict with ``obs, reward, terminated,
        truncated, mask`` (all envs, after autoreset) and, for the envs whose episode ended,
        ``ended`` (env indices), ``final_obs`` and ``final`` (dict of per-env end data)."""
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        st, eng = self.state, self.engine
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise IllegalMoveError(f"actions must be {self.num_envs} integers (one per env), got "
                                   f"shape {a.shape} of {a.dtype}")
        if self.self_play:
            moving = a.reshape(self.num_games, 2)[self._games, st.to_move.astype(np.intp)]
        else:
            moving = a
        moving = self._action_ids(moving)
        self._rep = None
        # The opponent's replies may still be illegal (a callable's): its error must leave every
        # game as it was (RULES §7), the learner's moves taken back too.
        saved = None if self.self_play or isinstance(self.opponent, str) else (
            st.copy(), self.side.copy(), self.moves)
        try:
            eng.step(st, moving)
        except IllegalMoveError as e:
            bad = np.flatnonzero((st.reason == RUNNING) & ~eng.check_legal(st, moving))
            envs = 2 * bad + st.to_move[bad] if self.self_play else bad
            illegal_action("raise", SIDES[int(st.to_move[bad[0]])] if len(bad) else SIDES[0],
                           f"illegal action from env(s) {envs[:5].tolist()} (engine games "
                           f"{bad[:5].tolist()}): {e}")
        try:
            return self._after_learner(st)
        except IllegalMoveError:
            if saved is not None:
                self.state, self.side[:], self.moves = saved[0], saved[1], saved[2]
                self._rep = None
            raise

    def _after_learner(self, st: State) -> dict[str, Any]:
        """The rest of :meth:`step` once the learners' moves are played: the opponent's replies,
        rewards, ends of episodes and autoreset."""
        self.moves += self.num_games
        if not self.self_play:
            self._play_opponent(st, self.side)
        self._rep = self.observer.repeated(st)   # plane 12 of every game, once per step

        ended_games = np.flatnonzero(st.reason != RUNNING)
        reward = np.zeros(self.num_envs, dtype=np.float32)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        out: dict[str, Any] = {"reward": reward, "terminated": terminated, "truncated": truncated}
        if len(ended_games):
            winner = st.winner[ended_games]
            reason = st.reason[ended_games]
            rows = self.env_rows(ended_games)
            if self.self_play:
                winner, reason = np.repeat(winner, 2), np.repeat(reason, 2)
            side = self.side[rows]
            reward[rows] = np.where(winner == side, 1.0, np.where(winner == 1 - side, -1.0, 0.0))
            trunc = reason == TRUNCATED
            terminated[rows] = ~trunc
            truncated[rows] = trunc
            turns = st.turn[ended_games]
            out["ended"] = rows
            out["final_obs"] = self._observe(ended_games)
            out["final"] = {"winner": winner.copy(), "reason": reason.copy(),
                            "turns": np.repeat(turns, 2) if self.self_play else turns.copy(),
                            "side": side.copy()}
            if self.autoreset:
                self._reset_games(ended_games)
        self.mask = self._masks()
        out["mask"] = self.mask
        out["obs"] = self._observe()
        self._rep = None
        return out

    def _action_ids(self, moving: np.ndarray) -> np.ndarray:
        """The actions of the games' movers as integers. Only those are read: what a waiting slot
        or a finished game sends (NaN, None) is ignored, as documented, and replaced by the pass."""
        running = self.state.reason == RUNNING
        if moving.dtype.kind in "iu" and running.all():
            return moving
        acts = np.full(len(moving), self.pass_action, dtype=np.intp)
        given = moving[running]
        if given.dtype == object:
            given = np.array(given.tolist())
        if given.dtype.kind == "f":
            whole = np.isfinite(given) & (given == np.round(given))
        else:
            whole = np.full(len(given), given.dtype.kind in "iu" and given.ndim == 1)
        if not whole.all():
            games = np.flatnonzero(running)[~whole]
            envs = 2 * games + self.state.to_move[games] if self.self_play else games
            raise IllegalMoveError(f"actions must be integers: env(s) {envs[:5].tolist()} sent "
                                   f"{moving[games[:5]].tolist()}")
        acts[running] = given
        return acts

    def render_text(self, game: int = 0) -> str:
        from .notation import board_diagram

        st = self.state
        head = (f"{self.rules.title}: game {game}, turn {int(st.turn[game])}, "
                f"{SIDES[int(st.to_move[game])]} to move")
        return head + "\n" + board_diagram(st.board[game], self.n)


def _spaces(core: BatchCore):
    from gymnasium import spaces

    obs = spaces.Box(0.0, 1.0, (core.n, core.n, NUM_PLANES), dtype=np.float32)
    return obs, spaces.Discrete(core.num_actions)


def _seed_rng(seed) -> np.random.Generator:
    if isinstance(seed, (list, tuple, np.ndarray)):
        return np.random.default_rng(np.random.SeedSequence([int(s) for s in seed]))
    return np.random.default_rng(seed)


def _check_seed(seed):
    """A reset seed: None, an int >= 0 or a non-empty list of them (one generator seeded by all)."""
    where = "TaflVectorEnv.reset"
    if isinstance(seed, (list, tuple, np.ndarray)):
        items = np.asarray(seed, dtype=object).reshape(-1).tolist() if isinstance(seed, np.ndarray) else seed
        if not len(items):
            raise InvalidArgumentError(f"{where}: a seed list must hold at least one int >= 0, got {preview(seed)}")
        for i, s in enumerate(items):
            if s is None:
                raise InvalidArgumentError(f"{where}: seed[{i}] must be an int >= 0, got None")
            check_seed(s, f"{where}, seed[{i}]")
        return [int(s) for s in items]
    return check_seed(seed, where)


try:
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError:  # pragma: no cover - gymnasium is a core dependency
    VectorEnv = object  # type: ignore[misc,assignment]
    AutoresetMode = None  # type: ignore[assignment]


class TaflVectorEnv(VectorEnv):
    """Gymnasium vector env of ``num_envs`` Tafl environments over one batched engine state.

    Args:
        variant: a variant id (``tafl_env.VARIANTS``) or a ``RuleSet``.
        num_envs: the number of environments (even in self-play: two slots per game).
        opponent: ``None`` (self-play unless ``self_play=False``, then ``"random"``), ``"random"``,
            a callable ``opponent(obs, mask) -> actions`` or an object with ``.act(obs, mask)``.
        learner_side: ``"attacker"``, ``"defender"`` or ``"alternate"`` (fixed-opponent mode).
        self_play: both sides played by the learner (default: ``opponent is None``).
        render_mode: ``None``, ``"ansi"`` (a text board of each game) or ``"rgb_array"`` (an
            ``(H, W, 3)`` uint8 image per environment, as ``gymnasium.wrappers.vector.RecordVideo``
            expects; the two slots of a self-play game show the same board).
        square_px: the size of a square in ``rgb_array`` images.
        **options: rule options (``tafl_env.make_rules``), e.g. ``max_turns=100``.

    The modes, rewards, slot semantics and the SAME_STEP autoreset are described in the module
    docstring (:mod:`tafl_env.vector`). Step infos: ``action_mask`` (num_envs, A) int8,
    ``active`` (num_envs,) bool (the envs whose action counts next step), ``side`` (num_envs,)
    int8 (0 attacker / 1 defender: whom each env plays), each with its ``_key`` mask; and, when
    episodes ended, ``final_obs`` / ``final_info`` with their masks. ``reset(options=
    {"reset_mask": (num_envs,) bool})`` restarts only the marked environments (in self-play both
    slots of a game must be marked together).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP if AutoresetMode else "SameStep",
                "render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, variant: str | RuleSet = "historical_tablut", num_envs: int = 2, opponent=None,
                 learner_side: str = "attacker", self_play: bool | None = None,
                 render_mode: str | None = None, square_px: int = 32, **options):
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}")
        self._core = BatchCore(variant, num_envs, opponent, learner_side, self_play, **options)
        self.square_px = int(square_px)
        self.variant = self._core.rules.name
        self.num_envs = self._core.num_envs
        self.render_mode = render_mode
        self.single_observation_space, self.single_action_space = _spaces(self._core)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._ones = np.ones(self.num_envs, dtype=bool)

    @property
    def engine(self) -> Engine:
        return self._core.engine

    @property
    def state(self) -> State:
        """The batched engine state (num_games rows; read it, do not change it)."""
        return self._core.state

    @property
    def self_play(self) -> bool:
        return self._core.self_play

    def _infos(self) -> dict[str, Any]:
        core = self._core
        return {"action_mask": core.mask, "_action_mask": self._ones.copy(),
                "active": core.active(), "_active": self._ones.copy(),
                "side": core.side.copy(), "_side": self._ones.copy()}

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        # Every argument is checked before anything changes: a refused reset keeps the generator.
        seed = _check_seed(seed)
        options = check_reset_options(options, ("reset_mask",), "TaflVectorEnv.reset")
        games = None
        if options.get("reset_mask") is not None and self._core.state is not None:
            try:
                m = np.asarray(options["reset_mask"], dtype=bool)
            except (TypeError, ValueError):
                raise InvalidOptionError(f"reset_mask must be {self.num_envs} bools, got "
                                         f"{preview(options['reset_mask'])}") from None
            if m.shape != (self.num_envs,):
                raise InvalidOptionError(f"reset_mask must have shape ({self.num_envs},), got {m.shape}")
            if self._core.self_play:
                pairs = m.reshape(-1, 2)
                if (pairs[:, 0] != pairs[:, 1]).any():
                    raise InvalidOptionError("self-play: reset_mask must mark both slots of a game "
                                             "(2g, 2g+1) together")
                m = pairs[:, 0]
            games = np.flatnonzero(m)
        if seed is not None:
            self._np_random = _seed_rng(seed)
            self._np_random_seed = seed if isinstance(seed, int) else -1
        self._core.rng = self.np_random
        obs, _ = self._core.reset(games)
        return obs, self._infos()

    def step(self, actions):
        out = self._core.step(actions)
        infos = self._infos()
        if "ended" in out:
            rows = out["ended"]
            done = np.zeros(self.num_envs, dtype=bool)
            done[rows] = True
            final_obs = np.full(self.num_envs, None, dtype=object)
            for j, i in enumerate(rows.tolist()):   # gymnasium's convention: one object per env
                final_obs[i] = out["final_obs"][j]
            final_info: dict[str, Any] = {}
            for key, value in out["final"].items():
                arr = np.zeros(self.num_envs, dtype=value.dtype)
                arr[rows] = value
                final_info[key], final_info["_" + key] = arr, done.copy()
            infos["final_obs"], infos["_final_obs"] = final_obs, done.copy()
            infos["final_info"], infos["_final_info"] = final_info, done
        return out["obs"], out["reward"], out["terminated"], out["truncated"], infos

    def action_masks(self) -> np.ndarray:
        """(num_envs, A) int8: the legal actions of every env now (as ``infos["action_mask"]``)."""
        if self._core.mask is None:
            raise RuntimeError("call reset() first")
        return self._core.mask

    def render(self):
        core = self._core
        if self.render_mode is None or core.state is None:
            return None
        if self.render_mode == "ansi":
            return tuple(core.render_text(g) for g in range(core.num_games))
        from .render import render_rgb

        frames = [render_rgb(core.engine, core.state, g, self.square_px) for g in range(core.num_games)]
        return tuple(frames[g] for g in core._games.repeat(2)) if core.self_play else tuple(frames)

    def close_extras(self, **kwargs: Any) -> None:
        core = getattr(self, "_core", None)   # absent when __init__ refused its arguments
        if core is not None:
            core.state = None
