"""A native numpy vector env for any environment of the suite, driven by its dynamics.

:class:`ModelVectorEnv` steps ``N`` sub-environments of one configuration as arrays of state
indices, reading transitions, rewards, terminations, ``critical``, success, ``turn_score`` and the
optional info keys from tables that grow as the episodes visit states: a state's row and a
``(state, action)``'s outcomes are computed once, on first visit, with the calls the single env
makes (``dynamics.outcomes``, ``is_critical``, ``turn_score``, ...), so building it costs nothing
and it never expands more of the model than its episodes reach. For the same seeds and actions it
returns what ``gym.make_vec(id, N, vectorization_mode="sync", ...)`` returns over single
environments, bit for bit (``tests/test_model_vector.py`` checks it step by step): the same
draws from the same per-sub-environment generators, the same info keys and masks, the same time
limit.

Every id registered with :func:`~routine_envs.registration.register_dynamics` has it attached
(``gym.make_vec(id, num_envs)``); an id registered with ``gym.register`` gets it with
``vector_entry_point=make_model_vector_env(EnvClass)`` (or ``"module:EnvClass"``).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from routine_envs import annotations as keys
from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import InvalidActionError, branch_copy

#: largest table of per-state rows (observations, action masks) kept, in bytes (64 MiB). Once
#: the visited states' rows would pass it, the rows of the states the sub-environments are in
#: are computed at every step with ``dynamics.observe`` / ``dynamics.action_mask`` (slower, same
#: values).
MAX_TABLE_BYTES = 64 << 20
#: most sub-environments of one vector env (a documented limit, checked before anything is
#: allocated: each costs a few hundred bytes plus its observation).
MAX_NUM_ENVS = 1 << 20
#: draw with one sorted search while every random ``(state, action)`` seen has the same outcome
#: probabilities (the tests turn it off to check the general search gives the same draws).
SHARED_DISTRIBUTION_SHORTCUT = True
#: uniforms drawn ahead per sub-environment at a time (only when some outcome is random).
DRAW_BLOCK = 32
#: single-env wrappers that change nothing the vector env returns (``gym.make``'s defaults).
_TRANSPARENT_WRAPPERS = (gym.wrappers.OrderEnforcing, gym.wrappers.PassiveEnvChecker)

EnvSource = Dynamics | gym.Env | Callable[[], gym.Env]


class ModelVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` sub-environments of one configuration of any dynamics, stepped as arrays.

    Each sub-environment is an id into the exact model's id space; a step looks up its
    ``(state, action)``'s outcomes in the model (in the order of ``dynamics.outcomes``), draws
    one with a uniform of the sub-environment's own generator when there are several (the
    first whose cumulative probability, accumulated as ``base.sample_item`` does, exceeds the
    uniform; no draw otherwise), and reads everything else from tables by state id.

    Shapes: observations ``batch_space(single_observation_space, num_envs)`` (e.g.
    ``(num_envs, *obs_shape)``); rewards ``(num_envs,)`` float64; terminations and truncations
    ``(num_envs,)`` bool; every info key ``(num_envs,)`` (``action_mask``:
    ``(num_envs, num_actions)``) with its ``"_key"`` mask.

    ## Source

    ``source`` is the single environment to replicate: a :class:`Dynamics`, an env whose
    ``unwrapped`` has ``dynamics`` (e.g. ``gym.make(id, **kwargs)``), or a function returning
    one (called once). From an env, its step budget ``env.unwrapped.max_steps`` is kept (the
    base env's truncation: only when not terminated, with the episode-end keys). Wrappers other
    than ``gym.make``'s order and checker wrappers are refused (a ``TimeLimit``: pass
    ``max_episode_steps``). The observation must be ``dynamics.observe(state)`` (an env that
    overrides its observation with the history cannot be replicated from the model).

    ## Autoreset

    ``autoreset_mode`` as in Gymnasium 1.x (``metadata["autoreset_mode"]``):

    - ``NEXT_STEP`` (default): a finished sub-environment is reset by the next ``step``, which
      ignores its action and returns the reset's observation and info, reward 0, not done.
    - ``SAME_STEP``: reset within the step that ended it; the ended episode's last observation
      and info are in ``infos["final_obs"]`` (object array) and ``infos["final_info"]``.
    - ``DISABLED``: stepping a finished sub-environment raises ``gymnasium.error.ResetNeeded``;
      reset it with ``reset(options={"reset_mask": mask})``.

    ## Time limit

    ``max_episode_steps`` (what ``gym.make_vec`` passes a vector entry point) is Gymnasium's
    ``TimeLimit`` over each single env: ``truncated`` on the ``max_episode_steps``-th step of an
    episode, also when it terminates there, and no episode-end keys unless it terminated.

    ## Seeding

    ``reset(seed=s)`` seeds sub-environment ``i`` with ``s + i``; a sequence gives one seed (or
    ``None``) each; ``None`` keeps the generators (numpy integers are accepted). As
    ``SyncVectorEnv`` seeds single envs: each sub-environment draws from its own
    ``gymnasium.utils.seeding.np_random(seed)`` stream in the single env's order.

    ## Tables and memory

    Nothing of the model is built in advance (``dynamics.model()`` is never called by the env
    itself). States get an index when an episode first reaches them (or an outcome of a visited
    ``(state, action)`` leads to them), with the keys the single env reports about a state
    (``state_id``, ``anchor``, ``critical``, ``action_gap``, ``action_mask``, ``turn_score``,
    from the dynamics' shared memo); a ``(state, action)``'s outcomes are listed when a
    sub-environment first takes it, each with its next state, reward, termination, ``critical``
    flag and cumulative probability. Success is asked of a state when an episode ends there.
    Observations and action masks are rows by visited state while they fit
    :data:`MAX_TABLE_BYTES` (64 MiB), computed per step for the states the sub-environments are
    in beyond it; observation spaces that do not batch into one array (``Dict``, ``Text``, ...)
    are always computed per step. ``num_envs`` is at most :data:`MAX_NUM_ENVS`. Deep copies
    share what was expanded.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012 (defaults, as VectorEnv declares it)
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": [],
    }

    def __init__(
        self,
        source: EnvSource,
        num_envs: int = 1,
        *,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        self.num_envs = validation.integer("num_envs", num_envs, 1, MAX_NUM_ENVS)
        if max_episode_steps is not None:
            max_episode_steps = validation.integer("max_episode_steps", max_episode_steps, 1)
        mode = autoreset_mode_of(autoreset_mode)
        if render_mode is not None:
            raise ValueError(
                f"render_mode must be None for the vector env, got {render_mode!r}: render single "
                "environments (gym.make) instead"
            )
        dynamics, single = _resolve(source)
        if single is not None and single.unwrapped.observation_shows_history:
            raise ValueError(
                f"{type(single.unwrapped).__name__} observes more than its state (its observation "
                "shows the history), which the model-driven vector env cannot: use "
                'gym.make_vec(..., vectorization_mode="sync")'
            )
        #: the shared, immutable MDP of every sub-environment.
        self.dynamics = dynamics
        #: the (never stepped) single env it came from, ``None`` when built from dynamics.
        self.single_env = single
        #: the single env's own step budget (``env.unwrapped.max_steps``), or ``None``.
        self.max_steps: int | None = None if single is None else single.unwrapped.max_steps
        self.max_episode_steps = max_episode_steps
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}

        space = dynamics.observation_space if single is None else single.observation_space
        self.single_observation_space = space
        self.single_action_space = gym.spaces.Discrete(dynamics.num_actions)
        self.observation_space = batch_space(space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._num_actions = dynamics.num_actions
        self._reports_gap = bool(dynamics.reports_action_gap)
        #: what the episodes visited so far (shared by deep copies).
        self._visited = _Visited(dynamics, self.single_observation_space)
        self._initial_ids, self._initial_cumulative = self._visited.initial()

        shape = (self.num_envs,)
        self._state = np.zeros(shape, dtype=np.int64)
        self._episode_length = np.zeros(shape, dtype=np.int64)
        self._num_critical = np.zeros(shape, dtype=np.int64)
        self._critical = np.zeros(shape, dtype=bool)
        self._mask_now: np.ndarray | None = None  # action masks of the current states
        self._ended = np.zeros(shape, dtype=bool)  # finished on the last step (NEXT_STEP)
        self._has_reset = False
        # a sub-environment's generator is built from its reset seed when it first draws (most
        # configurations never draw: building one per reset was a quarter of a group rollout)
        self._generators: list[np.random.Generator | None] = [None] * self.num_envs
        self._stream_seeds: list[int | None] = [None] * self.num_envs
        self._uniforms = np.zeros((self.num_envs, DRAW_BLOCK))
        self._next_uniform = np.full(shape, DRAW_BLOCK, dtype=np.int64)

    @property
    def visited_states(self) -> int:
        """How many states the episodes reached so far (with the outcomes of the ``(state,
        action)`` pairs they took): all of the model this env has expanded."""
        return len(self._visited.states)

    # ------------------------------------------------------------------------ Gymnasium API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-environment (or those of ``options["reset_mask"]``, a bool array
        ``(num_envs,)``). ``seed``: ``None``, an int ``s`` (sub-environment ``i`` gets ``s + i``)
        or one seed (or ``None``) per sub-environment. Returns batched observations and infos."""
        seeds = self._seeds(seed)
        mask = None if options is None else options.get("reset_mask")
        if mask is None:
            index = np.arange(self.num_envs)
        elif not self._has_reset:
            raise ValueError("the first reset() must reset every sub-environment: no reset_mask")
        else:
            index = np.flatnonzero(self._check_reset_mask(mask))
        for i in index.tolist():  # some outcome may be random (known only once visited)
            if seeds[i] is not None:  # a new stream, built at its first draw (_draw)
                self._stream_seeds[i], self._generators[i] = seeds[i], None
                self._next_uniform[i] = DRAW_BLOCK
        self._reset_envs(index)
        self._ended[index] = False
        self._has_reset = True
        state = self._state
        if mask is None:
            infos = self._step_infos(state, None, None)
        else:  # only the reset sub-environments' infos are set (the others are 0), as Sync
            set_mask = np.zeros(self.num_envs, dtype=bool)
            set_mask[index] = True
            infos = self._step_infos(state, None, set_mask)
        return self._observe(state), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-environment with ``actions`` (integers, shape ``(num_envs,)``).

        Returns batched observations, rewards (float64), terminations and truncations (bool),
        all with leading dimension ``num_envs``, and batched infos.
        """
        if not self._has_reset:
            raise gym.error.ResetNeeded("step() called before reset(): call envs.reset() first")
        a = self._check_actions(actions)
        mode = self.autoreset_mode
        restart = self._ended  # NEXT_STEP: these sub-environments are reset, not stepped
        any_restart = bool(restart.any())
        if any_restart and mode == AutoresetMode.DISABLED:
            raise gym.error.ResetNeeded(
                f"step() called on finished sub-environments {np.flatnonzero(restart).tolist()} "
                "with autoreset disabled: reset them with reset(options={'reset_mask': mask})"
            )

        # the transition of every sub-environment (garbage for those restarting, replaced)
        visited = self._visited
        sa = self._state * self._num_actions
        sa += a
        t = visited.first.take(sa)
        if t.min() < 0:  # (state, action)s taken for the first time: list their outcomes
            new = t < 0
            if any_restart:
                new &= ~restart
            visited.expand(np.unique(sa[new]))
            t = visited.first.take(sa)
        if visited.random:
            count = visited.count.take(sa)
            drawing = count > 1
            if any_restart:
                drawing &= ~restart
            index = np.flatnonzero(drawing)
            if index.size:
                t[index] = visited.choose(t[index], count[index], self._draw(index))
        state = visited.next_state.take(t)
        rewards = visited.reward.take(t)
        terminated = visited.terminated.take(t)
        invalid = None
        if self._mask_now is not None:
            invalid = ~self._mask_now[np.arange(self.num_envs), a]
        self._episode_length += 1
        self._num_critical += self._critical
        self._state = state
        self._critical = visited.next_critical.take(t)
        if visited.masks is not None:
            self._mask_now = visited.masks.rows(state)
        if any_restart:
            index = np.flatnonzero(restart)
            self._reset_envs(index)
            state = self._state
            rewards[index] = 0.0
            terminated[index] = False
            if invalid is not None:
                invalid[index] = False

        length = self._episode_length
        truncated = np.zeros(self.num_envs, dtype=bool)
        if self.max_steps is not None:  # the single env's own budget: ends it, with its keys
            truncated = length >= self.max_steps
            truncated &= ~terminated
        with_keys = terminated | truncated  # episodes the single env itself ended
        if self.max_episode_steps is not None:  # TimeLimit over the single env
            truncated = truncated | (length >= self.max_episode_steps)
        ended = terminated | truncated

        # The keys in SyncVectorEnv's order (it adds each sub-environment's info in turn, each
        # info with the step keys before the episode-end keys): the step keys, then the
        # episode-end keys; SAME_STEP: "final_obs" and "final_info" first when sub-environment
        # 0 ended, after the step keys otherwise.
        final: dict[str, Any] = {}
        if mode == AutoresetMode.SAME_STEP and ended.any():
            index = np.flatnonzero(ended)
            final_obs = np.full(self.num_envs, None, dtype=object)
            rows = self._observe(state[index])
            for j, i in enumerate(index.tolist()):
                final_obs[i] = _row(rows, j)
            final_info = self._step_infos(state, invalid, ended)
            if with_keys.any():
                final_info.update(self._episode_end_infos(state, terminated, with_keys))
            final["final_obs"], final["_final_obs"] = final_obs, ended.copy()
            final["final_info"], final["_final_info"] = final_info, ended.copy()
            self._reset_envs(index)
            state = self._state
            if invalid is not None:
                invalid[index] = False
        elif with_keys.any():
            final = self._episode_end_infos(state, terminated, with_keys)
        if mode != AutoresetMode.SAME_STEP:
            self._ended = ended
        infos = self._step_infos(state, invalid, None)
        if final and mode == AutoresetMode.SAME_STEP and ended[0]:
            infos = {**final, **infos}
        else:
            infos.update(final)
        return self._observe(state), rewards, terminated, truncated, infos

    # --------------------------------------------------------------------------- internals
    def _reset_envs(self, index: np.ndarray) -> None:
        """Start new episodes in the sub-environments ``index`` (drawing their start when the
        initial distribution has several outcomes)."""
        if self._initial_cumulative.size:
            chosen = np.searchsorted(self._initial_cumulative, self._draw(index), side="right")
            self._state[index] = self._initial_ids.take(chosen)
        else:
            self._state[index] = self._initial_ids[0]
        self._episode_length[index] = 0
        self._num_critical[index] = 0
        visited = self._visited
        self._critical[index] = visited.critical.take(self._state[index])
        if visited.masks is not None:
            if self._mask_now is None:
                self._mask_now = visited.masks.rows(self._state)
            else:
                self._mask_now[index] = visited.masks.rows(self._state[index])

    def _observe(self, state: np.ndarray) -> Any:
        return self._visited.observations.rows(state)

    def _step_infos(
        self, state: np.ndarray, invalid: np.ndarray | None, set_mask: np.ndarray | None
    ) -> dict[str, Any]:
        """``critical``, ``state_id`` and the optional keys of ``state`` (the current states),
        set where ``set_mask`` (everywhere when ``None``; unset entries are 0)."""
        visited = self._visited
        values: dict[str, np.ndarray] = {
            keys.CRITICAL: self._critical.copy(),
            keys.STATE_ID: visited.state_id.take(state),
            keys.ANCHOR: visited.anchor.take(state),
            keys.TURN_SCORE: visited.turn_score.take(state),
        }
        if self._reports_gap:
            values[keys.ACTION_GAP] = visited.action_gap.take(state)
        if self._mask_now is not None:
            values[keys.ACTION_MASK] = self._mask_now.copy()
            values[keys.INVALID_ACTION] = (
                np.zeros(self.num_envs, dtype=bool) if invalid is None else invalid.copy()
            )
        if set_mask is None:
            set_mask = np.ones(self.num_envs, dtype=bool)
        else:
            for value in values.values():
                value[~set_mask] = 0
        infos: dict[str, Any] = {}
        for key, value in values.items():
            infos[key], infos["_" + key] = value, set_mask.copy()
        return infos

    def _episode_end_infos(
        self, state: np.ndarray, terminated: np.ndarray, ended: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The episode-end keys of the sub-environments ``ended`` (which end in ``state``)."""
        success = np.zeros(self.num_envs, dtype=bool)
        index = np.flatnonzero(ended)
        success[index] = self._visited.success(state[index])
        episode_length = np.where(ended, self._episode_length, 0)
        num_critical = np.where(ended, self._num_critical, 0)
        values = keys.episode_end_info(success, num_critical, episode_length, ended=ended)
        infos: dict[str, np.ndarray] = {}
        for key, value in values.items():
            infos[key], infos["_" + key] = value, ended.copy()
        return infos

    def _draw(self, index: np.ndarray) -> np.ndarray:
        """One uniform for each sub-environment of ``index`` from its own generator, in stream
        order (drawn :data:`DRAW_BLOCK` at a time)."""
        uniforms, cursor = self._uniforms, self._next_uniform
        position = cursor.take(index)
        for i in index[position == DRAW_BLOCK].tolist():  # used up: draw the next block
            generator = self._generators[i]
            if generator is None:  # the stream of the last reset seed (None: fresh entropy)
                generator = self._generators[i] = seeding.np_random(self._stream_seeds[i])[0]
            uniforms[i] = generator.random(DRAW_BLOCK)
            cursor[i] = 0
        position = cursor.take(index)
        cursor[index] = position + 1
        return uniforms.take(index * DRAW_BLOCK + position)  # flat index into (num_envs, block)

    def _check_actions(self, actions: Any) -> np.ndarray:
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        n = self._num_actions
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu":
            raise InvalidActionError(
                f"actions must be an integer array of shape ({self.num_envs},) with values in "
                f"[0, {n}), got {a.dtype} array of shape {a.shape}"
            )
        if a.min() < 0 or a.max() >= n:
            bad = np.flatnonzero((a < 0) | (a >= n))
            raise InvalidActionError(
                f"actions must be in [0, {n}) (single_action_space={self.single_action_space}): "
                f"sub-environments {bad.tolist()[:10]} got {a[bad].tolist()[:10]}"
            )
        return a.astype(np.int64, copy=False)

    def _check_reset_mask(self, mask: Any) -> np.ndarray:
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
            raise ValueError(f"options['reset_mask'] must be a numpy bool array, got {mask!r}")
        if mask.shape != (self.num_envs,):
            raise ValueError(
                f"options['reset_mask'] must have shape ({self.num_envs},), got {mask.shape}"
            )
        if not mask.any():
            raise ValueError("options['reset_mask'] must select at least one sub-environment")
        return mask

    def _seeds(self, seed: Any) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if _is_integer(seed):
            if seed < 0:
                raise ValueError(f"seed must be an int >= 0, got {seed!r}")
            return [int(seed) + i for i in range(self.num_envs)]
        if isinstance(seed, np.ndarray) and seed.ndim == 1:
            seed = seed.tolist()
        if not isinstance(seed, Sequence) or isinstance(seed, (str, bytes)):
            raise ValueError(f"seed must be None, an int or a list of them, got {seed!r}")
        if len(seed) != self.num_envs:
            raise ValueError(
                f"seed as a list must have one entry per sub-environment ({self.num_envs}), "
                f"got {len(seed)}"
            )
        if all(type(s) is int and s >= 0 for s in seed):  # the usual case, without the ABC
            return list(seed)  # checks of _is_integer (a trainer reseeds every group)
        for s in seed:
            if s is not None and (not _is_integer(s) or s < 0):
                raise ValueError(f"every seed must be None or an int >= 0, got {s!r}")
        return [None if s is None else int(s) for s in seed]

    def __deepcopy__(self, memo: dict[int, Any]) -> ModelVectorEnv:
        """An independent branch: the same future for the same actions. The dynamics, spaces
        and read-only tables are shared; episodes and generators are copied."""
        return branch_copy(self, memo, shared=_SHARED_ATTRIBUTES)

    def __repr__(self) -> str:
        source = self.dynamics if self.single_env is None else self.single_env.unwrapped
        return (
            f"ModelVectorEnv({source!r}, num_envs={self.num_envs}, "
            f"max_episode_steps={self.max_episode_steps}, "
            f"autoreset_mode={self.autoreset_mode.value!r})"
        )


#: attributes that deep copies share: the dynamics, the spaces' source and what was visited (a
#: cache of fixed values); the rest, episodes and generators, is copied.
_SHARED_ATTRIBUTES = (
    "dynamics",
    "single_env",
    "spec",
    "_visited",
    "_initial_ids",
    "_initial_cumulative",
)


class _Column:
    """A 1-d array that grows (capacity doubling); :attr:`data` is the whole buffer, so that
    ``data.take(indices)`` reads it with no copy (entries past :attr:`size` hold ``fill``).
    Values are appended to a list (:meth:`append`) and written in one go by :meth:`flush`."""

    def __init__(self, dtype: Any, fill: Any = 0, capacity: int = 64) -> None:
        self.fill = fill
        self.data = np.full(capacity, fill, dtype=dtype)
        self.size = 0
        self.pending: list[Any] = []

    def __len__(self) -> int:
        return self.size + len(self.pending)

    def append(self, value: Any) -> None:
        self.pending.append(value)

    def flush(self) -> None:
        """Write the appended values into :attr:`data`."""
        if self.pending:
            self.extend(self.pending)
            self.pending = []

    def reserve(self, size: int) -> None:
        """Room for ``size`` entries."""
        if size > self.data.size:
            grown = np.full(max(size, 2 * self.data.size), self.fill, dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown

    def extend(self, values: Sequence[Any] | np.ndarray) -> None:
        self.reserve(self.size + len(values))
        self.data[self.size : self.size + len(values)] = values
        self.size += len(values)

    def take(self, indices: np.ndarray) -> np.ndarray:
        return self.data.take(indices)


class _Rows:
    """Rows ``compute(states)`` (observations or action masks, shape ``(n, *row_shape)``) of
    visited states by index, each computed on first use and kept while the table fits
    :data:`MAX_TABLE_BYTES`; past it (or for rows that do not batch into one array) computed
    per call for the distinct indices asked for."""

    def __init__(
        self,
        compute: Callable[[list[Any]], Any],
        states: list[Any],
        row_shape: tuple[int, ...] | None,
        dtype: Any = None,
    ) -> None:
        self.compute, self.states = compute, states
        self.table: np.ndarray | None = None
        self.filled = np.zeros(0, dtype=bool)
        self.row_bytes: int | None = None
        if row_shape is not None:
            self.row_bytes = int(np.prod(row_shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            self.table = np.zeros((0, *row_shape), dtype=dtype)

    def rows(self, ids: np.ndarray) -> Any:
        table = self.table
        if table is not None and ids.size and int(ids.max()) >= len(table):
            table = self._grow(int(ids.max()) + 1)
        if table is None and self.row_bytes is None:  # Dict, Tuple, Text: computed per step
            return self.compute([self.states[i] for i in ids.tolist()])
        if table is None:  # an array table dropped past its bound: each distinct state once
            distinct, inverse = np.unique(ids, return_inverse=True)
            return self.compute([self.states[i] for i in distinct.tolist()]).take(inverse, axis=0)
        new = ids[~self.filled.take(ids)]
        if new.size:
            new = np.unique(new)
            table[new] = self.compute([self.states[i] for i in new.tolist()])
            self.filled[new] = True
        return table.take(ids, axis=0)  # take: much faster than [...]

    def _grow(self, size: int) -> np.ndarray | None:
        """The table with room for ``size`` states, or ``None`` (dropped) past the bound."""
        size = max(size, 2 * len(self.table))
        if size * self.row_bytes > MAX_TABLE_BYTES:
            size = MAX_TABLE_BYTES // max(self.row_bytes, 1)
            if size < len(self.states):
                self.table = None
                return None
        old = self.table
        self.table = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
        self.table[: len(old)] = old
        filled = np.zeros(size, dtype=bool)
        filled[: len(self.filled)] = self.filled
        self.filled = filled
        return self.table


class _Visited:
    """What the sub-environments of a :class:`ModelVectorEnv` (and its deep copies) visited:
    states by index, in the order they were reached, with the keys the single env reports of
    them; the outcomes of every ``(state, action)`` taken. Everything is computed on first
    visit with the single env's own calls, so the values are the single env's."""

    def __init__(self, dynamics: Dynamics, space: gym.spaces.Space) -> None:
        self.dynamics = dynamics
        self.num_actions = dynamics.num_actions
        self.memo = dynamics.step_key_cache()  # shared with the single envs of this config
        self.masked = bool(dynamics.has_action_masks)
        self.reports_gap = bool(dynamics.reports_action_gap)
        self.index: dict[Any, int] = {}
        self.states: list[Any] = []
        # per state
        self.state_id, self.anchor = _Column(np.int64), _Column(np.int64)
        self.critical, self.turn_score = _Column(bool), _Column(np.float64)
        self.action_gap = _Column(np.float64)
        self.success_known = _Column(np.int8, fill=-1)  # -1 not asked yet, else 0 / 1
        # per (state, action): the first outcome (-1: not listed yet) and how many
        self.first = _Column(np.int64, fill=-1)
        self.count = _Column(np.int32)
        # per outcome: next state, reward, termination, critical flag, cumulative probability
        self.next_state, self.reward = _Column(np.int64), _Column(np.float64)
        self.terminated, self.next_critical = _Column(bool), _Column(bool)
        self.cumulative = _Column(np.float64, fill=np.inf)
        self.most = 1  # most outcomes of one (state, action)
        self.random = False  # some (state, action) taken has several outcomes
        self.columns = (
            self.state_id, self.anchor, self.critical, self.turn_score, self.action_gap,
            self.next_state, self.reward, self.terminated, self.next_critical, self.cumulative,
        )  # fmt: skip
        #: the cumulative probabilities (all but the last) shared by every random (state,
        #: action) so far (Diluted Doors: the routine lengths), ``None`` once two differ.
        self.common: np.ndarray | None = None
        self.common_holds = True
        probe = create_empty_array(space, 1)
        shape = probe.shape[1:] if isinstance(probe, np.ndarray) else None
        dtype = probe.dtype if isinstance(probe, np.ndarray) else None
        self.space = space
        self.observations = _Rows(self._observe, self.states, shape, dtype)
        self.masks: _Rows | None = None
        if self.masked:
            self.masks = _Rows(self._mask_rows, self.states, (self.num_actions,), bool)

    # ------------------------------------------------------------------- states
    def add(self, state: Any) -> int:
        """The index of ``state``, its keys computed on first visit."""
        found = self.index.get(state)
        if found is not None:
            return found
        known = self.memo.get(state)
        if known is None:
            dynamics = self.dynamics
            known = self.memo[state] = (
                dynamics.state_id(state),
                dynamics.anchor(state),
                bool(dynamics.is_critical(state)),
                dynamics.action_gap(state) if self.reports_gap else None,
                dynamics.action_mask(state) if self.masked else None,
                float(dynamics.turn_score(state)),
            )
        found = self.index[state] = len(self.states)
        self.states.append(state)
        self.state_id.append(known[0])
        self.anchor.append(known[1])
        self.critical.append(known[2])
        self.action_gap.append(known[3] if self.reports_gap else 0.0)
        self.turn_score.append(known[5])
        return found

    def flush(self) -> None:
        """Write what :meth:`add` and :meth:`expand` appended into the arrays steps read."""
        new = len(self.states) - self.success_known.size
        self.success_known.extend(np.full(new, -1, dtype=np.int8))
        self.first.extend(np.full(new * self.num_actions, -1, dtype=np.int64))
        self.count.extend(np.zeros(new * self.num_actions, dtype=np.int32))
        for column in self.columns:
            column.flush()

    def initial(self) -> tuple[np.ndarray, np.ndarray]:
        """The initial states' indices in the order of ``initial_outcomes()`` and their
        cumulative probabilities but the last (accumulated as ``base.sample_item`` does)."""
        initial = self.dynamics.initial_outcomes()
        ids = np.array([self.add(s) for _, s in initial], dtype=np.int64)
        self.flush()
        acc, cumulative = 0.0, []
        for p, _ in initial:
            acc += p
            cumulative.append(acc)
        return ids, np.array(cumulative[:-1])

    def success(self, states: np.ndarray) -> np.ndarray:
        """``dynamics.is_success`` of the states (indices), each asked once."""
        known = self.success_known.take(states)
        for i in np.unique(states[known < 0]).tolist():
            self.success_known.data[i] = bool(self.dynamics.is_success(self.states[i]))
        return self.success_known.take(states).astype(bool)

    def _observe(self, states: list[Any]) -> Any:
        """Observations of ``states``, batched as ``SyncVectorEnv`` batches them."""
        out = create_empty_array(self.space, len(states))
        return concatenate(self.space, [self.dynamics.observe(s) for s in states], out)

    def _mask_rows(self, states: list[Any]) -> np.ndarray:
        return np.stack([self.memo[s][4] for s in states])

    # ------------------------------------------------------------------ outcomes
    def expand(self, pairs: np.ndarray) -> None:
        """List the outcomes of the ``(state, action)`` pairs (``state * num_actions +
        action``, not listed yet), in the order of ``dynamics.outcomes``."""
        memo = self.memo
        for sa in pairs.tolist():
            state, action = divmod(sa, self.num_actions)
            outcomes = self.dynamics.outcomes(self.states[state], action)
            start, n = len(self.next_state), len(outcomes)
            acc = 0.0
            for p, nxt, reward, terminated in outcomes:
                self.next_state.append(self.add(nxt))
                self.reward.append(float(reward))
                self.terminated.append(bool(terminated))
                self.next_critical.append(memo[nxt][2] and not terminated)
                acc += p  # as base.sample_item
                self.cumulative.append(acc)
            self.first.data[sa], self.count.data[sa] = start, n
            if n > 1:
                self.random = True
                self.most = max(self.most, n)
                self._note_distribution(np.array(self.cumulative.pending[-n:-1]))
        self.flush()
        # room for the probes of choose past the last outcome (never read as passed over)
        self.cumulative.reserve(self.cumulative.size + self.most)

    def _note_distribution(self, cumulative: np.ndarray) -> None:
        if not self.common_holds:
            return
        if self.common is None:
            self.common = cumulative
        elif self.common.shape != cumulative.shape or not np.array_equal(self.common, cumulative):
            self.common, self.common_holds = None, False

    def choose(self, first: np.ndarray, count: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The outcome ``base.sample_item`` picks with the uniforms ``u``: the first of the
        ``count`` outcomes from ``first`` whose cumulative probability exceeds ``u``, else the
        last. Cumulative probabilities never decrease, so the outcomes passed over are a prefix:
        its length is found by binary lifting (``log2`` of the most outcomes, vectorized)."""
        if SHARED_DISTRIBUTION_SHORTCUT and self.common_holds and self.common is not None:
            return first + np.searchsorted(self.common, u, side="right")
        cumulative, candidates = self.cumulative.data, count - 1
        chosen = first.copy()
        step = 1 << (int(candidates.max()).bit_length() - 1)
        while step:
            probe = chosen + step
            # within the first ``count - 1`` outcomes and passed over (room reserved past the end)
            passed = probe <= first + candidates
            passed &= cumulative.take(probe - 1) <= u
            chosen += passed * step
            step >>= 1
        return chosen


def _row(rows: Any, j: int) -> Any:
    """Row ``j`` of batched observations (an array, or a dict/tuple of them)."""
    if isinstance(rows, dict):
        return {key: _row(value, j) for key, value in rows.items()}
    if isinstance(rows, tuple):
        return tuple(_row(value, j) for value in rows)
    return rows[j]


def _is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _resolve(source: EnvSource) -> tuple[Dynamics, gym.Env | None]:
    """The dynamics of ``source`` and the single env it came from (``None`` for dynamics)."""
    if isinstance(source, Dynamics):
        return source, None
    env = source if isinstance(source, gym.Env) else source() if callable(source) else None
    if not isinstance(env, gym.Env):
        raise TypeError(
            "source must be a routine_envs Dynamics, a gymnasium Env or a function returning "
            f"one, got {type(source).__name__}"
        )
    inner = env
    while isinstance(inner, gym.Wrapper):
        if not isinstance(inner, _TRANSPARENT_WRAPPERS):
            limit = isinstance(inner, gym.wrappers.TimeLimit)
            raise ValueError(
                f"cannot replicate the wrapper {type(inner).__name__} from the model"
                f"{' (pass max_episode_steps instead)' if limit else ''}: give the env unwrapped "
                "or made by gym.make without wrappers"
            )
        inner = inner.env
    dynamics = getattr(env.unwrapped, "dynamics", None)
    if not isinstance(dynamics, Dynamics):
        raise TypeError(
            f"{type(env.unwrapped).__name__} has no dynamics (env.unwrapped.dynamics): "
            "ModelVectorEnv needs an environment built on routine_envs.dynamics.Dynamics"
        )
    return dynamics, env


def autoreset_mode_of(value: AutoresetMode | str) -> AutoresetMode:
    """``value`` as an ``AutoresetMode``: the enum, its value (``"NextStep"``) or its name in any
    case (``"next_step"``)."""
    if isinstance(value, str):
        by_name = {m.name.lower(): m for m in AutoresetMode}
        if value.lower() in by_name:
            return by_name[value.lower()]
    try:
        return AutoresetMode(value)
    except ValueError:
        raise ValueError(
            f"autoreset_mode must be an AutoresetMode, one of {[m.value for m in AutoresetMode]} "
            f"or one of {[m.name.lower() for m in AutoresetMode]}, got {value!r}"
        ) from None
