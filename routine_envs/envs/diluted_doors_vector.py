"""Diluted Doors, natively vectorized with numpy: ``N`` sub-environments stepped as arrays.

``gym.make_vec("DilutedDoors-v0", num_envs=N)`` builds it (the registered vector entry point);
``vectorization_mode="sync"`` still gives a ``SyncVectorEnv`` over single environments. For the same
seeds and actions both return the same observations, rewards, terminations, truncations and infos,
bit for bit (``tests/test_vector_env.py`` checks it step by step), at a small fraction of the cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from routine_envs import annotations as keys
from routine_envs.envs import validation
from routine_envs.envs.base import InvalidActionError
from routine_envs.envs.diluted_doors import DilutedDoorsEnv, DoorsDynamics, DoorsState

#: uniforms drawn ahead per sub-environment at a time (only for a ``(low, high)`` routine length).
_DRAW_BLOCK = 32
#: largest table of every observation by state_id kept (bytes); larger configurations (wide
#: ``(low, high)`` ranges) compute the two corridor columns at each step instead.
_OBS_TABLE_BYTES = 8 << 20


class DilutedDoorsVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` Diluted Doors sub-environments with one configuration, stepped as arrays.

    The dynamics, observations, rewards and info keys are those of
    :class:`~routine_envs.envs.diluted_doors.DilutedDoorsEnv` (see its docstring); this class
    only batches them. Observations have shape ``(num_envs, num_floors + 5)`` (float32); rewards
    ``(num_envs,)`` float64; terminations and truncations ``(num_envs,)`` bool.

    ## Autoreset

    ``metadata["autoreset_mode"]`` says which Gymnasium 1.x convention is used; choose it with
    ``autoreset_mode``:

    - ``NEXT_STEP`` (default, as ``SyncVectorEnv``): a sub-environment whose episode ended is
      reset by the *next* ``step``, which ignores its action and returns the first observation of
      the new episode with reward 0, ``terminated = truncated = False`` and the reset's info.
    - ``SAME_STEP``: it is reset within the step that ended it; that step returns the new episode's
      first observation and ``critical``/``state_id``, and the ended episode's last observation and
      info in ``infos["final_obs"]`` (object array) and ``infos["final_info"]`` (batched dict).
    - ``DISABLED``: stepping a sub-environment whose episode ended raises
      ``gymnasium.error.ResetNeeded``; reset it with ``reset(options={"reset_mask": mask})``.

    ``reset(options={"reset_mask": mask})`` (bool array ``(num_envs,)``) resets only the masked
    sub-environments, in every mode, as ``SyncVectorEnv`` does.

    ## Information

    Batched the Gymnasium way: every key of a sub-environment's ``info`` becomes an array of shape
    ``(num_envs,)`` with a boolean mask ``"_<key>"`` saying which entries are set (unset entries
    are 0/False). ``critical`` and ``state_id`` are set for every sub-environment on every
    ``reset``/``step``; ``success``, ``num_critical``, ``episode_length`` and ``decision_density``
    are present only when some episode ended, set for those sub-environments.

    ## Seeding

    ``reset(seed=s)`` seeds sub-environment ``i`` with ``s + i`` (a list gives one seed per
    sub-environment; ``None`` keeps its generator), exactly as ``SyncVectorEnv`` seeds single
    environments, and each sub-environment draws its routine lengths from its own
    ``gymnasium.utils.seeding.np_random`` stream in the same order as the single environment.
    With an integer ``routine_length`` nothing is random.

    ## Arguments

    - ``num_envs`` (int >= 1): number of sub-environments.
    - ``num_floors``, ``num_doors``, ``routine_length``, ``reward``, ``layout_seed``: as for the
      single environment (validated by it).
    - ``max_episode_steps`` (int >= 1 or ``None``): truncate an episode after this many steps.
      Gymnasium passes it to a vector entry point instead of adding a ``TimeLimit``. Truncation
      follows the single environment's step budget (``env.unwrapped.max_steps``): ``truncated``
      only when not ``terminated``, with the episode-end annotations in ``info``.
    - ``autoreset_mode`` (``AutoresetMode`` or its string value): see Autoreset.
    - ``render_mode``: only ``None``; render single environments instead.

    ``single_env`` is a (never stepped) single environment with the same configuration: its
    ``num_states``, ``decision_density``, ``model()`` and ``oracle()`` describe every
    sub-environment.
    """

    #: the defaults; an instance's ``metadata`` holds its own ``autoreset_mode``.
    metadata: dict[str, Any] = {  # noqa: RUF012 (as gymnasium.vector.VectorEnv declares it)
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": [],
    }

    def __init__(
        self,
        num_envs: int = 1,
        num_floors: int = 3,
        num_doors: int = 3,
        routine_length: int | tuple[int, int] = 10,
        reward: str = "success",
        layout_seed: int = 0,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        self.num_envs = validation.integer("num_envs", num_envs, minimum=1)
        if max_episode_steps is not None:
            max_episode_steps = validation.integer("max_episode_steps", max_episode_steps, 1)
        mode = _autoreset_mode(autoreset_mode)
        if render_mode is not None:
            raise ValueError(
                f"render_mode must be None for the vector env, got {render_mode!r}: render single "
                "environments (gym.make) instead"
            )
        single = DilutedDoorsEnv(
            num_floors=num_floors,
            num_doors=num_doors,
            routine_length=routine_length,
            reward=reward,
            layout_seed=layout_seed,
        )
        single.max_steps = max_episode_steps
        self.single_env = single
        #: the shared, immutable MDP (the single env's own).
        self.dynamics = env = single.dynamics
        self.max_episode_steps = max_episode_steps
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.render_mode = None

        self.single_observation_space = single.observation_space
        self.single_action_space = single.action_space
        self.observation_space = batch_space(single.observation_space, self.num_envs)
        self.action_space = batch_space(single.action_space, self.num_envs)

        # configuration: constants and small lookup tables
        n = env.num_floors
        self._num_floors = n
        self._num_doors = env.num_doors
        #: correct door per floor, padded with -1 for the terminal "floor" ``num_floors``.
        self._correct_doors = np.array([*env.correct_doors, -1], dtype=np.int64)
        self._low = env.routine_range[0]
        self._obs_scale = env.position_scale
        self._build_tables(env)
        # routine lengths: fixed, or drawn as base.sample_item does (the first outcome whose
        # cumulative probability, accumulated in the same float order, exceeds a uniform).
        self._lengths = np.asarray(env.lengths, dtype=np.int64)
        self._draws = len(env.lengths) > 1
        cumulative, acc = [], 0.0
        for _ in env.lengths:
            acc += env.length_probability
            cumulative.append(acc)
        self._cumulative = np.asarray(cumulative)

        # per-sub-environment state, arrays of shape (num_envs,): the fields of DoorsState, ...
        shape = (self.num_envs,)
        self._floor = np.zeros(shape, dtype=np.int64)
        self._position = np.zeros(shape, dtype=np.int64)
        self._length = np.zeros(shape, dtype=np.int64)
        self._correct = np.zeros(shape, dtype=np.int64)
        # ... the episode bookkeeping of RoutineEnv, ...
        self._episode_length = np.zeros(shape, dtype=np.int64)
        self._num_critical = np.zeros(shape, dtype=np.int64)
        self._critical = np.zeros(shape, dtype=bool)
        # ... episodes that ended on the last step (NEXT_STEP: reset by the next step), ...
        self._ended = np.zeros(shape, dtype=bool)
        self._has_reset = False
        # ... and random streams, consumed _DRAW_BLOCK uniforms at a time.
        self._generators: list[np.random.Generator | None] = [None] * self.num_envs
        self._uniforms = np.zeros((self.num_envs, _DRAW_BLOCK)) if self._draws else None
        self._next_uniform = np.full(shape, _DRAW_BLOCK, dtype=np.int64)

    def _build_tables(self, env: DoorsDynamics) -> None:
        """Lookup tables over ``key = 2 * (floor * (num_floors + 1) + correct) + at_doors``
        (see :meth:`_key`), and over ``state_id`` when small enough."""
        n = env.num_floors
        size = 2 * (n + 1) ** 2
        #: observation without its two corridor columns (num_floors + 1, + 2), (size, n + 5).
        self._rows = np.zeros((size, n + 5), dtype=np.float32)
        #: state_id at the doors / of the first cell of the block of (floor, correct).
        self._id_base = np.zeros(size, dtype=np.int64)
        self._critical_table = np.zeros(size, dtype=bool)
        self._terminated_table = np.zeros(size, dtype=bool)
        self._reward_table = np.zeros(size, dtype=np.float64)
        for floor in range(n + 1):
            for correct in range(n + 1):
                block = floor * (n + 1) + correct
                for at_doors in (0, 1):
                    key = 2 * block + at_doors
                    position = 0 if at_doors else 1
                    if floor == n and not at_doors:
                        continue  # no corridor after the last floor
                    state = DoorsState(floor, position, position, correct)
                    row = env.observe(state)  # the dynamics' own numbers
                    row[n + 1 : n + 3] = 0.0
                    self._rows[key] = row
                    self._critical_table[key] = env.is_critical(state)
                    if at_doors:
                        self._id_base[key] = env.state_id(state)
                    else:
                        self._id_base[key] = env.corridor_base + block * env.cells_per_block
                    if floor == n:
                        self._terminated_table[key] = True
                        self._reward_table[key] = env.final_reward(correct)
        self._initial_key = self._key(np.zeros(1, np.int64), np.zeros(1, np.int64), True)[0]
        self._initial_critical = bool(self._critical_table[self._initial_key])
        #: per corridor length l >= 1: offset of its cells in a block, minus 1 (0 for l = 0).
        m, high = env.min_corridor, env.routine_range[1]
        lengths = np.arange(high + 1, dtype=np.int64)
        offset = (lengths - 1) * lengths // 2 - (m - 1) * m // 2 - 1
        offset[0] = 0
        self._corridor_offset = offset
        #: every observation, indexed by state_id, unless that would take too much memory.
        self._obs_table: np.ndarray | None = None
        if env.num_states * (n + 5) * 4 <= _OBS_TABLE_BYTES:
            f, p, length, c = _enumerate_states(n, m, high)
            key = self._key(f, c, p == 0)
            table = np.zeros((env.num_states, n + 5), dtype=np.float32)
            table[self._state_ids(key, p, length)] = self._observe_columns(key, p, length)
            self._obs_table = table

    # ------------------------------------------------------------------------ Gymnasium API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-environment (or those of ``options["reset_mask"]``).

        ``seed``: ``None``, an int ``s`` (sub-environment ``i`` gets ``s + i``) or one seed (or
        ``None``) per sub-environment. Returns observations ``(num_envs, num_floors + 5)`` and
        batched infos.
        """
        seeds = self._seeds(seed)
        mask = None if options is None else options.get("reset_mask")
        if mask is None:
            index = np.arange(self.num_envs)
        elif not self._has_reset:
            raise ValueError("the first reset() must reset every sub-environment: no reset_mask")
        else:
            index = np.flatnonzero(self._check_reset_mask(mask))
        if self._draws:
            for i in index.tolist():
                if seeds[i] is not None or self._generators[i] is None:
                    self._generators[i] = seeding.np_random(seeds[i])[0]
                    self._next_uniform[i] = _DRAW_BLOCK
        self._reset_envs(index)
        self._ended[index] = False
        self._has_reset = True

        f, p, length, c = self._floor, self._position, self._length, self._correct
        key = self._key(f, c, p == 0)
        all_ids = self._state_ids(key, p, length)
        anchors = self.dynamics.anchors_of(all_ids)
        if mask is None:
            set_mask = np.ones(self.num_envs, dtype=bool)
            critical, state_id = self._critical.copy(), all_ids.copy()
        else:  # unset entries are 0, as in SyncVectorEnv
            set_mask = np.zeros(self.num_envs, dtype=bool)
            set_mask[index] = True
            critical, state_id = self._critical & set_mask, all_ids * set_mask
            anchors = anchors * set_mask
        infos = {
            keys.CRITICAL: critical,
            "_" + keys.CRITICAL: set_mask,
            keys.STATE_ID: state_id,
            "_" + keys.STATE_ID: set_mask.copy(),
            keys.ANCHOR: anchors,
            "_" + keys.ANCHOR: set_mask.copy(),
        }
        return self._observe(key, all_ids, p, length), infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-environment with ``actions`` (integers, shape ``(num_envs,)``).

        Returns observations ``(num_envs, num_floors + 5)`` float32, rewards float64,
        terminations, truncations (bool) and batched infos, all of shape ``(num_envs,)``.
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

        # the transition of every sub-environment (garbage for those restarting, undone below)
        f, p, length, c = self._floor, self._position, self._length, self._correct
        doors = p == 0
        c += doors & (a == self._correct_doors.take(f))
        p += 1
        if self._draws:
            drawing = doors & ~restart if any_restart else doors
            index = np.flatnonzero(drawing)
            length[index] = self._lengths.take(self._draw(index))
        else:
            length[doors] = self._low
        leave = p > length  # the corridor (possibly empty) is behind: next floor's doors
        f += leave
        stay = ~leave
        p *= stay
        length *= stay
        self._episode_length += 1
        self._num_critical += self._critical
        if any_restart:
            self._reset_envs(np.flatnonzero(restart))
            leave = p == 0
        key = self._key(f, c, leave)
        terminated = self._terminated_table.take(key)
        rewards = self._reward_table.take(key)
        self._critical = self._critical_table.take(key)
        if self.max_episode_steps is None:
            truncated = np.zeros(self.num_envs, dtype=bool)
        else:
            truncated = self._episode_length >= self.max_episode_steps
            truncated &= ~terminated

        ended = terminated | truncated
        any_ended = bool(ended.any())
        infos: dict[str, Any] = {}
        if any_ended and mode == AutoresetMode.SAME_STEP:
            index = np.flatnonzero(ended)
            final_ids = self._state_ids(key[index], p[index], length[index])
            final_obs = np.full(self.num_envs, None, dtype=object)
            rows = self._observe(key[index], final_ids, p[index], length[index])
            for i, row in zip(index.tolist(), rows, strict=True):
                final_obs[i] = row
            state_id = np.zeros(self.num_envs, dtype=np.int64)
            state_id[index] = final_ids
            anchors = np.zeros(self.num_envs, dtype=np.int64)
            anchors[index] = self.dynamics.anchors_of(final_ids)
            final_info = {
                keys.CRITICAL: self._critical & ended,
                "_" + keys.CRITICAL: ended,
                keys.STATE_ID: state_id,
                "_" + keys.STATE_ID: ended.copy(),
                keys.ANCHOR: anchors,
                "_" + keys.ANCHOR: ended.copy(),
                **self._episode_end_infos(ended),
            }
            infos.update(
                {
                    "final_obs": final_obs,
                    "_final_obs": ended.copy(),
                    "final_info": final_info,
                    "_final_info": ended.copy(),
                }
            )
            self._reset_envs(index)
            key[index] = self._initial_key
        elif any_ended:
            infos.update(self._episode_end_infos(ended))
        if mode != AutoresetMode.SAME_STEP:
            self._ended = ended

        state_id = self._state_ids(key, p, length)
        all_set = np.ones(self.num_envs, dtype=bool)
        infos[keys.CRITICAL] = self._critical.copy()
        infos["_" + keys.CRITICAL] = all_set
        infos[keys.STATE_ID] = state_id
        infos["_" + keys.STATE_ID] = all_set.copy()
        infos[keys.ANCHOR] = self.dynamics.anchors_of(state_id)
        infos["_" + keys.ANCHOR] = all_set.copy()
        return self._observe(key, state_id, p, length), rewards, terminated, truncated, infos

    # --------------------------------------------------------------------------- internals
    def _reset_envs(self, index: np.ndarray) -> None:
        """Put the sub-environments ``index`` at the start of an episode (no randomness)."""
        for array in (
            self._floor,
            self._position,
            self._length,
            self._correct,
            self._episode_length,
            self._num_critical,
        ):
            array[index] = 0
        self._critical[index] = self._initial_critical

    def _key(self, f: np.ndarray, c: np.ndarray, at_doors: np.ndarray | bool) -> np.ndarray:
        """Index into the lookup tables of ``(floor, num_correct, at the doors)``."""
        key = f * (2 * (self._num_floors + 1))
        key += 2 * c
        key += at_doors
        return key

    def _state_ids(self, key: np.ndarray, p: np.ndarray, length: np.ndarray) -> np.ndarray:
        """``state_id`` (int64) of each state, as ``DoorsDynamics.state_id``."""
        state_id = self._id_base.take(key)
        state_id += self._corridor_offset.take(length)
        state_id += p
        return state_id

    def _observe(
        self, key: np.ndarray, state_id: np.ndarray, p: np.ndarray, length: np.ndarray
    ) -> np.ndarray:
        """Observations ``(len(key), num_floors + 5)`` float32, as ``DoorsDynamics.observe``."""
        if self._obs_table is not None:
            return self._obs_table.take(state_id, axis=0)  # take: much faster than [...]
        return self._observe_columns(key, p, length)

    def _observe_columns(self, key: np.ndarray, p: np.ndarray, length: np.ndarray) -> np.ndarray:
        n = self._num_floors
        obs = self._rows.take(key, axis=0)
        obs[:, n + 1] = p * self._obs_scale  # float64 products rounded to float32, as the
        obs[:, n + 2] = (length - p) * self._obs_scale  # single env's assignments
        return obs

    def _episode_end_infos(self, ended: np.ndarray) -> dict[str, np.ndarray]:
        """The episode-end keys, set (and masked) where ``ended``."""
        episode_length = np.where(ended, self._episode_length, 0)
        num_critical = np.where(ended, self._num_critical, 0)
        density = np.zeros(self.num_envs)
        np.divide(num_critical, episode_length, out=density, where=ended)
        return {
            keys.SUCCESS: ended & (self._correct == self._num_floors),
            "_" + keys.SUCCESS: ended.copy(),
            keys.NUM_CRITICAL: num_critical,
            "_" + keys.NUM_CRITICAL: ended.copy(),
            keys.EPISODE_LENGTH: episode_length,
            "_" + keys.EPISODE_LENGTH: ended.copy(),
            keys.DECISION_DENSITY: density,
            "_" + keys.DECISION_DENSITY: ended.copy(),
        }

    def _draw(self, index: np.ndarray) -> np.ndarray:
        """Index of the routine length drawn by each sub-environment of ``index`` (one uniform
        each from its own generator, in stream order)."""
        uniforms, cursor = self._uniforms, self._next_uniform
        position = cursor.take(index)
        for i in index[position == _DRAW_BLOCK].tolist():  # used up: draw the next block
            uniforms[i] = self._generators[i].random(_DRAW_BLOCK)
            cursor[i] = 0
        position = cursor.take(index)
        cursor[index] = position + 1
        u = uniforms.take(index * _DRAW_BLOCK + position)  # flat index into (num_envs, block)
        chosen = np.searchsorted(self._cumulative, u, side="right")
        return np.minimum(chosen, len(self._cumulative) - 1, out=chosen)

    def _check_actions(self, actions: Any) -> np.ndarray:
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        n = self._num_doors
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
        return a

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

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int) and not isinstance(seed, bool):
            seeds = [seed + i for i in range(self.num_envs)]
        elif isinstance(seed, Sequence) and not isinstance(seed, str):
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(
                    f"seed as a list must have one entry per sub-environment ({self.num_envs}), "
                    f"got {len(seeds)}"
                )
        else:
            raise ValueError(f"seed must be None, an int or a list of them, got {seed!r}")
        for s in seeds:
            if s is not None and (not isinstance(s, int) or isinstance(s, bool) or s < 0):
                raise ValueError(f"every seed must be None or an int >= 0, got {s!r}")
        return seeds

    def __repr__(self) -> str:
        env = self.single_env
        return (
            f"DilutedDoorsVectorEnv(num_envs={self.num_envs}, num_floors={env.num_floors}, "
            f"num_doors={env.num_doors}, routine_length={env.routine_length!r}, "
            f"reward={env.reward_mode!r}, layout_seed={env.layout_seed}, "
            f"max_episode_steps={self.max_episode_steps}, "
            f"autoreset_mode={self.autoreset_mode.value!r})"
        )


def _autoreset_mode(value: AutoresetMode | str) -> AutoresetMode:
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


def _enumerate_states(
    num_floors: int, min_corridor: int, high: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every state of the id space as ``(floor, position, corridor_length, num_correct)`` arrays:
    doors and terminal states, then each corridor cell ``1..l`` of each length
    ``min_corridor..high`` of each ``(floor, num_correct)`` block."""
    n = num_floors
    counts = n + 1
    door_f = np.repeat(np.arange(n + 1), counts)  # floor n: the terminal states
    door_c = np.tile(np.arange(counts), n + 1)
    cell_l = np.repeat(np.arange(min_corridor, high + 1), np.arange(min_corridor, high + 1))
    cell_p = np.arange(cell_l.size) - np.searchsorted(cell_l, cell_l) + 1  # 1..l in each l
    blocks = n * counts
    f = np.concatenate([door_f, np.repeat(np.arange(blocks) // counts, cell_l.size)])
    c = np.concatenate([door_c, np.repeat(np.arange(blocks) % counts, cell_l.size)])
    p = np.concatenate([np.zeros(door_f.size, np.int64), np.tile(cell_p, blocks)])
    length = np.concatenate([np.zeros(door_f.size, np.int64), np.tile(cell_l, blocks)])
    return f, p, length, c
