"""A native numpy vector env for any environment of the suite, driven by its exact model.

:class:`ModelVectorEnv` steps ``N`` sub-environments of one configuration as arrays of state ids,
reading transitions, rewards, terminations, ``critical``, success, ``turn_score`` and the optional
info keys from tables built once from ``dynamics.model()``. For the same seeds and actions it
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
from collections.abc import Callable, Mapping, Sequence
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

#: largest table of per-state rows (observations, action masks) kept, in bytes (64 MiB). Above
#: it the rows of the states the sub-environments are in are computed at every step with
#: ``dynamics.observe`` / ``dynamics.action_mask`` (slower, same values).
MAX_TABLE_BYTES = 64 << 20
#: tables of at most this many reachable states are filled when the env is built; larger ones
#: are filled on first visit of each state (so building stays cheap).
EAGER_STATES = 20_000
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

    The model's transitions are used in place (copied once sorted if some ``(state, action)``'s
    outcomes are not contiguous); the env adds per transition a ``critical`` flag (and a
    cumulative probability when some outcome is random), per ``(state, action)`` the first
    transition (and the number of outcomes). Observations and action masks are tables by
    state id when they fit :data:`MAX_TABLE_BYTES` (64 MiB), filled at construction up to
    :data:`EAGER_STATES` reachable states and on first visit above; beyond the bound they are
    computed at every step for the states the sub-environments are in. Observation spaces that
    do not batch into one array (``Dict``, ``Text``, ...) are always computed per step.
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
        self.num_envs = validation.integer("num_envs", num_envs, minimum=1)
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
        self._build_tables(dynamics)

        shape = (self.num_envs,)
        self._state = np.zeros(shape, dtype=np.int64)
        self._episode_length = np.zeros(shape, dtype=np.int64)
        self._num_critical = np.zeros(shape, dtype=np.int64)
        self._critical = np.zeros(shape, dtype=bool)
        self._mask_now: np.ndarray | None = None  # action masks of the current states
        self._ended = np.zeros(shape, dtype=bool)  # finished on the last step (NEXT_STEP)
        self._has_reset = False
        self._generators: list[np.random.Generator | None] = [None] * self.num_envs
        self._uniforms = np.zeros((self.num_envs, DRAW_BLOCK)) if self._random else None
        self._next_uniform = np.full(shape, DRAW_BLOCK, dtype=np.int64)

    # ----------------------------------------------------------------------------- tables
    def _build_tables(self, dynamics: Dynamics) -> None:
        model = dynamics.model()
        num_states, num_actions = model.num_states, model.num_actions
        self._num_actions = num_actions
        self._states: Mapping[int, Any] = model.states
        sa = model.state * num_actions + model.action
        # each (state, action)'s outcomes, contiguous and in the model's (= outcomes') order
        starts = np.flatnonzero(np.concatenate(([True], sa[1:] != sa[:-1]))) if sa.size else sa
        order = None
        seen = np.zeros(num_states * num_actions, dtype=bool)
        seen[sa[starts]] = True  # a (state, action) starting twice collapses: not contiguous
        if int(np.count_nonzero(seen)) != starts.size:  # then sort, stably
            order = np.argsort(sa, kind="stable")
            sa = sa[order]
            starts = np.flatnonzero(np.concatenate(([True], sa[1:] != sa[:-1])))

        def column(values: np.ndarray) -> np.ndarray:
            return values if order is None else values[order]

        prob = column(model.prob)
        self._next_state = column(model.next_state)
        self._reward = column(model.reward)
        self._terminated = column(model.terminated)
        critical = dynamics.critical_table()
        #: ``critical`` reached by each transition (never on a terminated one).
        self._next_critical = critical.take(self._next_state) & ~self._terminated
        counts = np.diff(np.append(starts, sa.size))
        #: first transition of each (state, action) (0 where there is none: never used).
        self._first = np.zeros(num_states * num_actions, dtype=np.int64)
        self._first[sa[starts]] = starts
        self._random = bool(counts.size) and int(counts.max()) > 1
        self._count: np.ndarray | None = None
        self._cumulative: np.ndarray | None = None
        #: the cumulative probabilities (all but the last) when every random (state, action)
        #: has the same outcome probabilities (Diluted Doors: the routine lengths), else None.
        self._one_cumulative: np.ndarray | None = None
        if self._random:
            self._count = np.zeros(num_states * num_actions, dtype=np.int32)
            self._count[sa[starts]] = counts
            self._cumulative = _accumulate(prob, starts, counts)
            self._one_cumulative = _common_cumulative(self._cumulative, starts, counts)

        # the initial distribution in the order of initial_outcomes(), not by id
        initial = dynamics.initial_outcomes()
        self._initial_ids = np.array([dynamics.state_id(s) for _, s in initial], dtype=np.int64)
        acc, cumulative = 0.0, []
        for p, _ in initial:
            acc += p  # as base.sample_item
            cumulative.append(acc)
        self._initial_cumulative = np.array(cumulative[:-1])
        self._random = self._random or len(initial) > 1

        self._critical_table = critical
        self._success_table = dynamics.success_table()
        self._success_cache: dict[int, bool] = {}
        self._gaps = dynamics.action_gaps() if dynamics.reports_action_gap else None
        #: ``turn_score`` of every state id (the single env's per-state scores).
        self._turn_scores = dynamics.turn_score_table()
        reachable, states = model.reachable, self._states
        self._observations: _RowTable | None = None
        probe = create_empty_array(self.single_observation_space, 1)
        if isinstance(probe, np.ndarray):
            self._observations = _RowTable(
                self._compute_observations, num_states, probe.shape[1:], probe.dtype, reachable
            )
        self._masks: _RowTable | None = None
        if dynamics.has_action_masks:
            mask = np.asarray(dynamics.action_mask(states[int(self._initial_ids[0])]))
            self._masks = _RowTable(
                self._compute_masks, num_states, mask.shape, mask.dtype, reachable
            )

    def _compute_observations(self, ids: np.ndarray) -> Any:
        """Observations of the states ``ids``, batched as ``SyncVectorEnv`` batches them."""
        space, observe, states = self.single_observation_space, self.dynamics.observe, self._states
        out = create_empty_array(space, len(ids))
        return concatenate(space, [observe(states[i]) for i in ids.tolist()], out)

    def _compute_masks(self, ids: np.ndarray) -> np.ndarray:
        """Action masks of the states ``ids``, shape ``(len(ids), num_actions)``."""
        return np.stack([self.dynamics.action_mask(self._states[i]) for i in ids.tolist()])

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
        if self._random:
            for i in index.tolist():
                if seeds[i] is not None or self._generators[i] is None:
                    self._generators[i] = seeding.np_random(seeds[i])[0]
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
        sa = self._state * self._num_actions
        sa += a
        t = self._first.take(sa)
        if self._count is not None:
            count = self._count.take(sa)
            drawing = count > 1
            if any_restart:
                drawing &= ~restart
            index = np.flatnonzero(drawing)
            if index.size:
                t[index] = self._choose(t[index], count[index], self._draw(index))
        state = self._next_state.take(t)
        rewards = self._reward.take(t)
        terminated = self._terminated.take(t)
        invalid = None
        if self._mask_now is not None:
            invalid = ~self._mask_now[np.arange(self.num_envs), a]
        self._episode_length += 1
        self._num_critical += self._critical
        self._state = state
        self._critical = self._next_critical.take(t)
        if self._masks is not None:
            self._mask_now = self._masks.rows(state)
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
        self._critical[index] = self._critical_table.take(self._state[index])
        if self._masks is not None:
            if self._mask_now is None:
                self._mask_now = self._masks.rows(self._state)
            else:
                self._mask_now[index] = self._masks.rows(self._state[index])

    def _observe(self, state: np.ndarray) -> Any:
        if self._observations is not None:
            return self._observations.rows(state)
        return self._compute_observations(state)

    def _step_infos(
        self, state: np.ndarray, invalid: np.ndarray | None, set_mask: np.ndarray | None
    ) -> dict[str, Any]:
        """``critical``, ``state_id`` and the optional keys of ``state`` (the current states),
        set where ``set_mask`` (everywhere when ``None``; unset entries are 0)."""
        values: dict[str, np.ndarray] = {
            keys.CRITICAL: self._critical.copy(),
            keys.STATE_ID: state.copy(),
            keys.ANCHOR: self.dynamics.anchors_of(state),
            keys.TURN_SCORE: self._turn_scores.take(state),
        }
        if self._gaps is not None:
            values[keys.ACTION_GAP] = self._gaps.take(state)
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
        success = self._success_table.take(state) & ended
        for i in np.flatnonzero(ended & ~terminated).tolist():  # truncated by the env's budget
            success[i] = self._is_success(int(state[i]))
        episode_length = np.where(ended, self._episode_length, 0)
        num_critical = np.where(ended, self._num_critical, 0)
        values = keys.episode_end_info(success, num_critical, episode_length, ended=ended)
        infos: dict[str, np.ndarray] = {}
        for key, value in values.items():
            infos[key], infos["_" + key] = value, ended.copy()
        return infos

    def _is_success(self, state_id: int) -> bool:
        """``dynamics.is_success`` of a (non-terminal) state, remembered."""
        if state_id not in self._success_cache:
            self._success_cache[state_id] = bool(self.dynamics.is_success(self._states[state_id]))
        return self._success_cache[state_id]

    def _choose(self, first: np.ndarray, count: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The transition ``base.sample_item`` picks with the uniforms ``u``: the first of the
        ``count`` outcomes from ``first`` whose cumulative probability exceeds ``u``, else the
        last. Cumulative probabilities never decrease, so the outcomes passed over are a prefix:
        its length is found by binary lifting (``log2`` of the most outcomes, vectorized)."""
        if self._one_cumulative is not None:  # one distribution: one sorted search
            return first + np.searchsorted(self._one_cumulative, u, side="right")
        cumulative, candidates = self._cumulative, count - 1
        chosen = first.copy()
        step = 1 << (int(candidates.max()).bit_length() - 1)
        while step:
            probe = chosen + step
            # within the first ``count - 1`` outcomes and passed over (padded: never past the end)
            passed = probe <= first + candidates
            passed &= cumulative.take(probe - 1) <= u
            chosen += passed * step
            step >>= 1
        return chosen

    def _draw(self, index: np.ndarray) -> np.ndarray:
        """One uniform for each sub-environment of ``index`` from its own generator, in stream
        order (drawn :data:`DRAW_BLOCK` at a time)."""
        uniforms, cursor = self._uniforms, self._next_uniform
        position = cursor.take(index)
        for i in index[position == DRAW_BLOCK].tolist():  # used up: draw the next block
            uniforms[i] = self._generators[i].random(DRAW_BLOCK)
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


#: read-only attributes that deep copies share (the rest, episodes and generators, is copied).
# fmt: off
_SHARED_ATTRIBUTES = (
    "dynamics", "single_env", "spec", "_states", "_next_state", "_reward", "_terminated",
    "_next_critical", "_first", "_count", "_cumulative", "_one_cumulative", "_initial_ids",
    "_initial_cumulative", "_critical_table", "_success_table", "_gaps", "_turn_scores",
    "_observations", "_masks",
)
# fmt: on


class _RowTable:
    """Rows ``compute(ids)`` (shape ``(len(ids), *row_shape)``) of states by id: a table filled
    at once or on first visit when it fits :data:`MAX_TABLE_BYTES`, else computed per call for
    the distinct ids asked for. Shared by deep copies (a cache of fixed values)."""

    def __init__(
        self,
        compute: Callable[[np.ndarray], np.ndarray],
        num_states: int,
        row_shape: tuple[int, ...],
        dtype: np.dtype,
        reachable: np.ndarray,
    ) -> None:
        self.compute = compute
        self.table: np.ndarray | None = None
        size = num_states * int(np.prod(row_shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if size > MAX_TABLE_BYTES:
            return
        self.table = np.zeros((num_states, *row_shape), dtype=dtype)
        self.filled = np.zeros(num_states, dtype=bool)
        self.missing = int(reachable.sum())
        if self.missing <= EAGER_STATES:
            self._fill(np.flatnonzero(reachable))

    def rows(self, ids: np.ndarray) -> np.ndarray:
        table = self.table
        if table is None:
            distinct, inverse = np.unique(ids, return_inverse=True)
            return self.compute(distinct).take(inverse, axis=0)
        if self.missing:
            new = ids[~self.filled.take(ids)]
            if new.size:
                self._fill(np.unique(new))
        return table.take(ids, axis=0)  # take: much faster than [...]

    def _fill(self, ids: np.ndarray) -> None:
        if ids.size:
            self.table[ids] = self.compute(ids)
            self.filled[ids] = True
            self.missing -= int(ids.size)


def _accumulate(prob: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Cumulative probability of each transition within its ``(state, action)``, accumulated
    left to right in float64 as ``base.sample_item`` does (``acc += p``); padded with
    ``max(counts)`` infinities so that probes past the last group stay in the array."""
    most = int(counts.max())
    cumulative = np.concatenate([prob.astype(np.float64), np.full(most, np.inf)])
    groups = np.flatnonzero(counts > 1)
    for k in range(1, most):
        groups = groups[counts[groups] > k]
        at = starts[groups] + k
        cumulative[at] = cumulative[at - 1] + prob[at]
    return cumulative


def _common_cumulative(
    cumulative: np.ndarray, starts: np.ndarray, counts: np.ndarray
) -> np.ndarray | None:
    """The cumulative probabilities but the last shared by every ``(state, action)`` with
    several outcomes, or ``None`` when they differ."""
    random = counts > 1
    most = int(counts.max())
    if not np.all(counts[random] == most):
        return None
    rows = cumulative[starts[random][:, None] + np.arange(most - 1)]
    return rows[0].copy() if np.all(rows == rows[0]) else None


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
