"""The shared base of every single-agent environment in the suite.

A subclass describes its dynamics once, as a pure transition function over hashable states
(``_outcomes``), plus how a state is observed, identified and annotated. The base owns the rest:
``reset``/``step`` with Gymnasium's seeding on ``self.np_random``, action checking, the info
contract of :mod:`routine_envs.annotations`, episode bookkeeping, rendering dispatch, cheap
``copy.deepcopy`` branching, and the exact tabular model on which the oracle runs.

Because ``step`` samples from the same ``_outcomes`` that :meth:`RoutineEnv.model` enumerates,
the oracle's values are exact for the environment as it runs; the tests still check them against
Monte-Carlo rollouts branched with ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
import dataclasses
from abc import abstractmethod
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
from numpy.random.bit_generator import ISeedSequence

from routine_envs import annotations as keys
from routine_envs.oracle import (
    OracleValues,
    Outcome,
    PolicyLike,
    TabularModel,
    build_model,
    evaluate_policy,
    optimal_values,
)

ObsType = TypeVar("ObsType")
StateType = TypeVar("StateType", bound=Hashable)

#: types of immutable values: ``copy.deepcopy`` of an env shares them instead of copying.
_IMMUTABLE_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})
#: spaces whose only mutable state is their random generator (``_np_random``).
_FLAT_SPACES = frozenset(
    {
        gym.spaces.Box,
        gym.spaces.Discrete,
        gym.spaces.MultiDiscrete,
        gym.spaces.MultiBinary,
        gym.spaces.Text,
    }
)


class InvalidActionError(gym.error.InvalidAction, ValueError):
    """An action outside the environment's action space."""


def check_discrete_action(action: Any, n: int, owner: str = "") -> int:
    """``action`` as an ``int`` in ``[0, n)``: a Python or numpy integer, or a 0-d integer array.

    Raises:
        InvalidActionError: anything else (floats, bools, strings, arrays of other shapes) or an
            integer outside the range; ``owner`` (e.g. an agent's name) is named in the message.
    """
    of = f" of {owner}" if owner else ""
    if type(action) is int:  # fast path
        a = action
    elif isinstance(action, np.integer) or (
        isinstance(action, np.ndarray)
        and action.shape == ()
        and np.issubdtype(action.dtype, np.integer)
    ):
        a = int(action)
    else:
        raise InvalidActionError(
            f"action{of} must be an integer in [0, {n}) (action_space=Discrete({n})), "
            f"got {action!r} of type {type(action).__name__}"
        )
    if not 0 <= a < n:
        raise InvalidActionError(
            f"action {a}{of} is outside the action space Discrete({n}): "
            f"valid actions are 0..{n - 1}"
        )
    return a


def sample_item(items: Sequence[Any], rng: np.random.Generator) -> Any:
    """Draw one of ``items``, tuples whose first entry is the probability, with ``rng`` (no draw
    when there is a single item, so deterministic steps consume no randomness)."""
    if len(items) == 1:
        return items[0]
    u = rng.random()
    acc = 0.0
    for item in items:
        acc += item[0]
        if u < acc:
            return item
    return items[-1]


class RoutineEnv(gym.Env[ObsType, np.int64], Generic[ObsType, StateType]):
    """Base class: annotated, branchable, exactly modelled episodic environment.

    Subclasses set ``observation_space``, ``action_space`` (``Discrete``) and ``num_states`` in
    ``__init__`` and implement the hooks below. States must be immutable and hashable.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    #: size of the ``state_id`` space: every id is in ``[0, num_states)``.
    num_states: int
    action_space: gym.spaces.Discrete
    #: attributes that ``copy.deepcopy`` shares instead of copying: those that only depend on the
    #: configuration (the spec included), and the current state (immutable by contract).
    _shared_attributes: ClassVar[frozenset[str]] = frozenset(
        {"_model_cache", "_config", "spec", "_state"}
    )

    def __init__(self, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.render_mode = render_mode
        self._state: StateType | None = None
        self._finished = False
        self._critical_now = False
        self._episode_length = 0
        self._num_critical = 0
        self._model_cache: TabularModel | None = None
        #: optional step budget: the episode is truncated (not terminated) after this many steps.
        #: The model and the oracle describe the environment without it (Gymnasium's convention:
        #: truncation is outside the MDP).
        self.max_steps: int | None = None

    # ----------------------------------------------------------------- hooks for subclasses
    @abstractmethod
    def _initial_outcomes(self) -> Sequence[tuple[float, StateType]]:
        """The initial-state distribution as ``(probability, state)`` pairs."""

    @abstractmethod
    def _outcomes(self, state: StateType, action: int) -> Sequence[Outcome]:
        """Every ``(probability, next_state, reward, terminated)`` of ``action`` in ``state``."""

    @abstractmethod
    def _state_id(self, state: StateType) -> int:
        """Canonical id of ``state`` in ``[0, num_states)``."""

    @abstractmethod
    def _observe(self, state: StateType) -> ObsType:
        """The observation of ``state`` (a fresh object the caller may keep)."""

    @abstractmethod
    def _is_critical(self, state: StateType) -> bool:
        """Ground truth: does the action taken in ``state`` change the expected return?"""

    @abstractmethod
    def _is_success(self, state: StateType) -> bool:
        """Whether the episode ending in ``state`` (terminal, or truncated there) is a success."""

    def _after_reset(self) -> None:
        """Called at the end of ``reset`` (e.g. to clear a history kept for rendering)."""

    def _after_step(self, state: StateType, action: int, next_state: StateType) -> None:
        """Called in ``step`` once the state has advanced (e.g. to record history)."""

    def _render_ansi(self) -> str:
        raise NotImplementedError

    def _render_rgb(self) -> np.ndarray:
        raise NotImplementedError

    # ------------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        """Start an episode; ``seed`` reseeds ``self.np_random`` as in every Gymnasium env."""
        super().reset(seed=seed)
        self._state = self._sample(self._initial_outcomes())[1]
        self._finished = False
        self._episode_length = 0
        self._num_critical = 0
        self._critical_now = self._is_critical(self._state)
        self._after_reset()
        return self._observe(self._state), self._step_info(self._state)

    def step(self, action: Any) -> tuple[ObsType, float, bool, bool, dict[str, Any]]:
        """Take ``action``; raises :class:`InvalidActionError` for an action outside the space and
        ``gymnasium.error.ResetNeeded`` before ``reset`` or after the episode ended."""
        if self._state is None:
            raise gym.error.ResetNeeded("step() called before reset(): call env.reset() first")
        if self._finished:
            raise gym.error.ResetNeeded(
                "step() called on a finished episode (it returned terminated or truncated): "
                "call env.reset() to start a new one"
            )
        if type(action) is int and 0 <= action < self.action_space.n:  # fast path
            a = action
        else:
            a = self._check_action(action)
        outcomes = self._outcomes(self._state, a)
        _, nxt, reward, terminated = outcomes[0] if len(outcomes) == 1 else self._sample(outcomes)
        self._episode_length += 1
        self._num_critical += self._critical_now
        self._after_step(self._state, a, nxt)
        self._state = nxt
        self._critical_now = False if terminated else self._is_critical(nxt)
        info = self._step_info(nxt)
        truncated = (
            not terminated and self.max_steps is not None and self._episode_length >= self.max_steps
        )
        if terminated or truncated:
            self._finished = True
            info.update(self._episode_end_info(nxt))
        return self._observe(nxt), float(reward), bool(terminated), truncated, info

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text picture; ``"rgb_array"``: an ``(H, W, 3)`` uint8 image."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None: pass render_mode to gym.make")
            return None
        if self._state is None:
            raise gym.error.ResetNeeded("render() called before reset()")
        if self.render_mode == "ansi":
            return self._render_ansi()
        return self._render_rgb()

    # ------------------------------------------------------------------------- annotations
    @property
    def state(self) -> StateType:
        """The current underlying state (immutable)."""
        if self._state is None:
            raise gym.error.ResetNeeded("no state before reset()")
        return self._state

    @property
    def state_id(self) -> int:
        """Canonical id of the current state."""
        return self._state_id(self.state)

    @property
    def critical(self) -> bool:
        """Whether the next action, taken in the current state, can change the expected return."""
        return self._critical_now

    def _step_info(self, state: StateType) -> dict[str, Any]:
        return {keys.CRITICAL: self._critical_now, keys.STATE_ID: self._state_id(state)}

    def _episode_end_info(self, state: StateType) -> dict[str, Any]:
        return {
            keys.SUCCESS: bool(self._is_success(state)),
            keys.NUM_CRITICAL: self._num_critical,
            keys.EPISODE_LENGTH: self._episode_length,
            keys.DECISION_DENSITY: self._num_critical / self._episode_length,
        }

    # ------------------------------------------------------------------------------ oracle
    def model(self) -> TabularModel:
        """The exact tabular model (built on first use, shared by deep copies)."""
        if self._model_cache is None:
            self._model_cache = build_model(
                self._initial_outcomes(),
                self._outcomes,
                self._state_id,
                self.num_states,
                int(self.action_space.n),
            )
        return self._model_cache

    def oracle(self, policy: PolicyLike, gamma: float = 1.0) -> OracleValues:
        """The perfect critic: exact ``Q^pi``, ``V^pi`` and ``A^pi`` of a tabular ``policy``
        (array ``(num_states, num_actions)`` or function ``state_id -> probabilities``)."""
        return evaluate_policy(self.model(), policy, gamma=gamma)

    def optimal(self, gamma: float = 1.0) -> OracleValues:
        """Exact ``Q*``/``V*``; ``optimal().action_gap > 0`` on exactly the critical states."""
        return optimal_values(self.model(), gamma=gamma)

    def decision_observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Every reachable non-terminal ``state_id`` and its observation: shapes ``(K,)`` and
        ``(K, *observation_shape)``. With these a policy network gives a tabular policy for
        :meth:`oracle` (``pi(. | obs(s))`` for every ``s``)."""
        model = self.model()
        ids = np.flatnonzero(model.decision_states)
        return ids, np.stack([self._observe(model.states[int(i)]) for i in ids])

    def success_probability(self, policy: PolicyLike) -> float:
        """Exact probability that an episode under ``policy`` ends in success (no sampling)."""
        model = self.model()
        success_ids = np.zeros(model.num_states, dtype=bool)
        for sid in np.flatnonzero(model.terminal):
            success_ids[sid] = self._is_success(model.states[int(sid)])
        hits = model.terminated & success_ids[model.next_state]
        values = evaluate_policy(dataclasses.replace(model, reward=hits.astype(np.float64)), policy)
        return float(model.initial @ values.v)

    # --------------------------------------------------------------------------- internals
    def _check_action(self, action: Any) -> int:
        return check_discrete_action(action, int(self.action_space.n))

    def _sample(self, items: Sequence[Any]) -> Any:
        return sample_item(items, self.np_random)

    def __deepcopy__(self, memo: dict[int, Any]) -> RoutineEnv:
        """Branch: an independent env whose future, for the same actions, equals this one's
        (random generator included). Configuration-only attributes are shared, not copied."""
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        shared = self._shared_attributes
        state = clone.__dict__
        for name, value in self.__dict__.items():
            kind = type(value)
            if kind in _IMMUTABLE_TYPES or name in shared:
                state[name] = value
            elif id(value) in memo:
                state[name] = memo[id(value)]
            elif kind is np.random.Generator:  # copy.deepcopy pickles it: ~10x slower
                state[name] = memo[id(value)] = copy_generator(value)
            elif kind in _FLAT_SPACES:
                state[name] = memo[id(value)] = _copy_space(value)
            else:
                state[name] = copy.deepcopy(value, memo)
        return clone

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_model_cache"] = None  # rebuilt on demand; can be large
        return state


class _BlankSeed(ISeedSequence):
    """Seeds a bit generator with zeros at no cost, for a state that is overwritten at once."""

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        return np.zeros(n_words, dtype=dtype)


_BLANK_SEED = _BlankSeed()


def copy_generator(generator: np.random.Generator) -> np.random.Generator:
    """An independent generator in the same state, so with the same future draws (about 10x
    faster than ``copy.deepcopy``; the copy's ``bit_generator.seed_seq`` is not kept)."""
    bits = generator.bit_generator
    clone = type(bits)(_BLANK_SEED)
    clone.state = bits.state
    return np.random.Generator(clone)


def _copy_space(space: gym.spaces.Space) -> gym.spaces.Space:
    """A copy of a space of :data:`_FLAT_SPACES` sharing its read-only bounds and shape, with its
    own random generator."""
    clone = object.__new__(type(space))
    clone.__dict__.update(space.__dict__)
    if space._np_random is not None:
        clone._np_random = copy_generator(space._np_random)
    return clone
