"""The public model of an environment: an immutable *dynamics* object.

A :class:`Dynamics` is the whole MDP of one configuration, with nothing of an episode in it: the
initial outcomes, the transition function ``outcomes(state, action)``, the canonical ``state_id``
and its inverse, the observation of a state, success, criticality, the configuration's decision
density and longest episode, and a short text description of every state. It is immutable (a
frozen dataclass), so environments, their deep copies, vector envs, team envs, renderers, the
exact-model layer (:mod:`routine_envs.oracle`) and the model sampler can share one instance.

FrozenLake's public ``P`` and MiniGrid's ``Grid``/``MiniGridEnv`` split are the anchors: the
thin Gymnasium env (:class:`routine_envs.envs.base.RoutineEnv`) holds only the episode.

A new environment writes a frozen dataclass subclass with its configuration as fields (their
defaults are the environment's, written once) and implements the abstract methods; everything
else (``is_critical``, the exact model, the oracle, the success probability, a text picture, a
text view for language-model agents) is derived. The class also states what the registry and the
tests read: the keyword that sets rho (:attr:`Dynamics.density_kwarg`), a small configuration
(:attr:`Dynamics.small_config`), its renderer and its text view. One call registers it
(:func:`routine_envs.registration.register_dynamics`). See ``docs/contributing-an-env.md``.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np

from routine_envs.annotations import observation_anchor
from routine_envs.oracle import (
    OracleValues,
    Outcome,
    PolicyLike,
    TabularModel,
    build_model,
    evaluate_policy,
    optimal_values,
    success_values,
)
from routine_envs.rendering.text_view import TextView, describe_render, describe_view

StateType = TypeVar("StateType", bound=Hashable)

#: the largest exact model built (states, and state-action pairs of the id space): larger
#: configurations run, and say so when their model is asked for.
MAX_MODEL_STATES = 20_000_000
MAX_MODEL_PAIRS = 200_000_000
ObsType = TypeVar("ObsType")

Renderer = Callable[[Any, Any, Any, str], "str | np.ndarray"]
"""``renderer(dynamics, state, history, mode)``: a text picture (``"ansi"``) or an
``(H, W, 3)`` uint8 image (``"rgb_array"``) of ``state`` (``history``: the episode's
``states`` and ``actions`` so far)."""


class _StepMemo(dict):
    """A step memo (a dict that can be weakly referenced, for :data:`_STEP_MEMOS`)."""

    __slots__ = ("__weakref__",)


#: the step memo of every configuration in use (alive while a dynamics holds it).
_STEP_MEMOS: weakref.WeakValueDictionary[tuple[Any, ...], _StepMemo] = weakref.WeakValueDictionary()
_PLAIN_TYPES = (bool, int, float, str, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` is a number, a string, ``None`` or a tuple of them (exact ``repr``)."""
    if isinstance(value, tuple):
        return all(_plain(item) for item in value)
    return type(value) in _PLAIN_TYPES


@dataclass(frozen=True)
class Dynamics(ABC, Generic[StateType, ObsType]):
    """An environment's exact, immutable MDP (one configuration).

    Subclasses are frozen dataclasses whose fields are the configuration; ``__post_init__``
    validates them (``ValueError`` naming the parameter) and may store derived constants with
    :meth:`_derive`. States are immutable and hashable (e.g. a ``NamedTuple``).

    Required (abstract): :attr:`num_states`, :attr:`num_actions`, :attr:`observation_space`,
    :meth:`initial_outcomes`, :meth:`outcomes`, :meth:`state_id`, :meth:`state_from_id`,
    :meth:`observe`, :meth:`is_success`, :attr:`decision_density`,
    :attr:`max_episode_length`.

    Derived (override only where cheaper, a test checks the two agree): :meth:`is_critical` and
    :meth:`action_gap` from the exact model, :meth:`describe`, :meth:`action_mask`,
    :meth:`model`, :meth:`oracle`, :meth:`optimal`, :meth:`success_probability`.

    Stated once, for the env, the registry and the tests (class attributes, all optional):
    :attr:`density_kwarg` and :attr:`density_rule`, :attr:`small_config`, :attr:`renderer` and
    :attr:`render_modes`, :attr:`text_kwargs`; and the hooks :meth:`action_names` and
    :meth:`build_text_view` (the default view is built from :meth:`describe`).
    """

    #: the field that sets the decision density (the experiments sweep it), or ``None``.
    density_kwarg: ClassVar[str | None] = None
    #: how :attr:`density_kwarg` sets rho, for the registry and the docs
    #: (``"routine_length L: rho = 1/(1+L)"``).
    density_rule: ClassVar[str] = ""
    #: a small configuration (field values over the defaults) whose episodes take a few steps:
    #: the tests' Monte-Carlo checks run on it for every id registered with these dynamics.
    small_config: ClassVar[Mapping[str, Any]] = {}
    #: keyword arguments the env must be made with for its text view (``make_text_env`` passes
    #: them unless given; e.g. CodeFix's ``{"obs_mode": "text"}``).
    text_kwargs: ClassVar[Mapping[str, Any]] = {}
    #: the render modes :attr:`renderer` draws (``"human"`` prints the ``"ansi"`` picture).
    render_modes: ClassVar[tuple[str, ...]] = ("ansi", "human")
    #: draws a state (:data:`Renderer`); the default writes its description.
    renderer: ClassVar[Renderer] = staticmethod(describe_render)

    #: ``critical`` is ``action_gap > critical_tolerance`` (0: exact routine).
    critical_tolerance: ClassVar[float] = 0.0
    #: routine is only approximate: every step's ``info`` carries the exact ``action_gap``.
    approximate_routine: ClassVar[bool] = False

    @property
    def reports_action_gap(self) -> bool:
        """Whether ``info`` carries ``action_gap`` (default: :attr:`approximate_routine`)."""
        return self.approximate_routine

    #: some actions are invalid somewhere: :meth:`action_mask` returns arrays, and ``info``
    #: carries ``action_mask`` and ``invalid_action``.
    has_action_masks: ClassVar[bool] = False

    #: the observation (and the text view) never shows, before the episode ends, whether a
    #: decision was right, beyond the states :meth:`reveals_outcome` names: for the same actions
    #: and random draws the observations are the same under every ``layout_seed``. The contract
    #: suite's leak probes hold every id to it; a version kept for comparison that does show the
    #: outcome declares ``False`` (a property where a field decides), and the probes check that
    #: it does.
    hides_outcome: ClassVar[bool] = True

    def reveals_outcome(self, state: StateType) -> bool:
        """Whether the observation of the non-terminal ``state`` shows an outcome by design (a
        test report, say); the leak probes leave such states out. Default: none does."""
        return False

    # ------------------------------------------------------------------------ required
    @property
    @abstractmethod
    def num_states(self) -> int:
        """Size of the ``state_id`` space: every id is in ``[0, num_states)``."""

    @property
    @abstractmethod
    def num_actions(self) -> int:
        """Size of the ``Discrete`` action space."""

    @property
    @abstractmethod
    def observation_space(self) -> gym.spaces.Space:
        """A fresh observation space (the env owns and seeds its copy)."""

    @abstractmethod
    def initial_outcomes(self) -> Sequence[tuple[float, StateType]]:
        """The initial-state distribution as ``(probability, state)`` pairs."""

    @abstractmethod
    def outcomes(self, state: StateType, action: int) -> Sequence[Outcome]:
        """Every ``(probability, next_state, reward, terminated)`` of ``action`` in ``state``
        (``action`` an int in ``[0, num_actions)``; the probabilities sum to 1)."""

    @abstractmethod
    def state_id(self, state: StateType) -> int:
        """Canonical id of ``state`` in ``[0, num_states)``: equal states, equal ids."""

    @abstractmethod
    def state_from_id(self, state_id: int) -> StateType:
        """Inverse of :meth:`state_id`; ``ValueError`` for an id outside ``[0, num_states)``."""

    @abstractmethod
    def observe(self, state: StateType) -> ObsType:
        """The observation of ``state`` (a fresh object the caller may keep)."""

    @abstractmethod
    def is_success(self, state: StateType) -> bool:
        """Whether an episode ending in ``state`` (terminal, or truncated there) succeeded."""

    @property
    @abstractmethod
    def decision_density(self) -> float:
        """The configuration's expected rho (documented per environment)."""

    @property
    @abstractmethod
    def max_episode_length(self) -> int:
        """The longest possible episode in steps (an upper bound where episodes can loop)."""

    # ------------------------------------------------------------------------- derived
    def is_critical(self, state: StateType) -> bool:
        """Ground truth: can the action taken in ``state`` change the expected return? By
        definition (:mod:`routine_envs.annotations`): the exact optimal action gap exceeds
        :attr:`critical_tolerance`. A terminal state is never critical."""
        return bool(self.critical_table()[self.state_id(state)])

    def action_gap(self, state: StateType) -> float:
        """The exact optimal action gap ``max_a Q*(s, a) - min_a Q*(s, a)`` (0 on terminal)."""
        return float(self.action_gaps()[self.state_id(state)])

    def action_mask(self, state: StateType) -> np.ndarray | None:
        """The valid actions in ``state``, bool ``(num_actions,)``; ``None``: all are valid."""
        return None

    def anchor(self, state: StateType) -> int:
        """The ``anchor`` of ``state``'s observation (:func:`annotations.observation_anchor`),
        computed once per state."""
        anchors = self._cached("anchors", dict)
        value = anchors.get(state)
        if value is None:
            value = anchors[state] = observation_anchor(self.observe(state))
        return value

    def step_key_cache(self) -> dict[StateType, tuple[Any, ...]]:
        """The ``{state: (state_id, anchor, critical, action_gap, action_mask, turn_score)}`` memo
        that envs
        fill as they step (what a step reports about the state it reaches that depends on the
        state alone, computed once). Its entries depend on the configuration alone, so dynamics
        of one class with equal fields (numbers, strings, tuples: compared by ``repr``, so
        ``True`` is not ``1``) share one: the sub-envs of a ``SyncVectorEnv`` warm it once."""
        return self._cached("step_keys", self._shared_step_memo)

    def _shared_step_memo(self) -> dict[StateType, tuple[Any, ...]]:
        """The memo of this configuration; a fresh one unless the class is itself a dataclass
        (its fields are then its whole configuration) with plain field values."""
        values = tuple(getattr(self, f.name) for f in fields(self))
        if "__dataclass_fields__" not in vars(type(self)) or not _plain(values):
            return {}
        return _STEP_MEMOS.setdefault((type(self), repr(values)), _StepMemo())

    def anchors_of(self, state_ids: np.ndarray) -> np.ndarray:
        """The anchors of many states by id, int64 of the shape of ``state_ids`` (each computed
        once and kept: in a table over every id up to 2**22 states, else in a dict)."""
        ids = np.asarray(state_ids, dtype=np.int64)
        if self.num_states <= 1 << 22:
            table = self._cached("anchor_table", lambda: np.full(self.num_states, -1, np.int64))
            values = table[ids]
            missing = np.unique(ids[values < 0])
            if missing.size:
                table.setflags(write=True)
                table[missing] = [self.anchor(self.state_from_id(int(i))) for i in missing]
                table.setflags(write=False)
                values = table[ids]
            return values
        flat = [self.anchor(self.state_from_id(int(i))) for i in ids.ravel()]
        return np.asarray(flat, dtype=np.int64).reshape(ids.shape)

    # ---------------------------------------------------------------------- turn score
    def turn_score(self, state: StateType) -> float:
        """A verifier's score of ``state`` (``info["turn_score"]``): how far the task is along,
        as a process reward model or a programmatic check would judge it. Privileged: it is read
        from the hidden state. Default: the exact probability that the episode succeeds from
        ``state`` when played optimally from there (:meth:`optimal_success_table`); an
        environment may define a cheaper or a more realistic score (documented on its page)."""
        return float(self.optimal_success_table()[self.state_id(state)])

    def turn_score_table(self) -> np.ndarray:
        """:meth:`turn_score` of every ``state_id``, float64 ``(num_states,)``, 0 on unreachable
        ids (built once from the exact model): what the native vector env and the model sampler
        read, equal to the per-state scores the single env reports."""
        if type(self).turn_score is Dynamics.turn_score:
            return self.optimal_success_table()

        def build() -> np.ndarray:
            model = self.model()
            table = np.zeros(model.num_states)
            for sid in np.flatnonzero(model.reachable).tolist():
                table[sid] = self.turn_score(model.states[sid])
            return table

        return self._cached("turn_score_table", build)

    def optimal_success_table(self) -> np.ndarray:
        """The exact probability of success from every ``state_id`` under the optimal policy,
        float64 ``(num_states,)``: the policy uniform over the (valid) actions whose ``Q*``
        (``gamma = 1``) is within ``1e-9`` of the best, evaluated on the success indicator of
        the terminal transitions; 1.0 on successful terminal ids, 0.0 on failed terminal and
        unreachable ids."""

        def build() -> np.ndarray:
            model = self.model()
            q = self.optimal().q
            valid = self.mask_table() if self.has_action_masks else np.ones(q.shape, bool)
            valid[~model.decision_states] = True  # rows never consulted: any distribution
            best = np.where(valid, q, -np.inf).max(axis=1, keepdims=True)
            chosen = valid & (q >= best - 1e-9 * np.maximum(1.0, np.abs(best)))
            policy = chosen / chosen.sum(axis=1, keepdims=True)
            success = self.success_table()
            hits = (model.terminated & success[model.next_state]).astype(np.float64)
            values = evaluate_policy(model, policy, reward=hits).v
            return np.where(model.terminal, success.astype(np.float64), values)

        return self._cached("optimal_success_table", build)

    def describe(self, state: StateType) -> str:
        """A short text description of ``state``, as an agent would be told it: what its
        observation shows and nothing it hides (the default text view tells the agent this)."""
        return repr(state)

    # ----------------------------------------------------------------------- text view
    def action_names(self) -> tuple[str, ...]:
        """A name per action, lower-case words with underscores (``("forward", "pick_up")``):
        the tools of the default text view. Default: ``action_0``, ``action_1``, ..."""
        return tuple(f"action_{a}" for a in range(self.num_actions))

    def text_view(self) -> TextView:
        """What a language-model agent is told (:mod:`routine_envs.text`): the task, the rules,
        the actions as tools and every observation as text (built once by
        :meth:`build_text_view`, kept on these dynamics)."""
        return self._cached("text_view", self.build_text_view)

    def build_text_view(self) -> TextView:
        """Build the text view; override with words of your own. The default
        (:func:`~routine_envs.rendering.text_view.describe_view`): an observation is told as
        :meth:`describe` of the state it comes from (its numbers when :meth:`describe` is not
        overridden), the actions are :meth:`action_names`, the task and rules are the class
        docstring's Description, Rewards and Episode End."""
        return describe_view(self, describes_states=type(self).describe is not Dynamics.describe)

    # ---------------------------------------------------------------------- exact model
    def model(self) -> TabularModel:
        """The exact tabular model (built on first use, cached on these dynamics and so shared
        by every env, copy and vector env on them).

        Raises:
            ValueError: the model would exceed :data:`MAX_MODEL_STATES` states or
                :data:`MAX_MODEL_PAIRS` state-action pairs; the message names its size.
        """
        pairs = self.num_states * self.num_actions
        if self.num_states > MAX_MODEL_STATES or pairs > MAX_MODEL_PAIRS:
            raise ValueError(
                f"the exact model of {self!r} has {self.num_states:,} states x "
                f"{self.num_actions:,} actions = {pairs:,} state-action pairs, more than the "
                f"{MAX_MODEL_STATES:,} states / {MAX_MODEL_PAIRS:,} pairs built"
            )
        return self._cached("model", self.build_model)

    def build_model(self) -> TabularModel:
        """Enumerate the model; generic search by default, an env may write a faster one."""
        return build_model(
            self.initial_outcomes(), self.outcomes, self.state_id, self.num_states, self.num_actions
        )

    def oracle(self, policy: PolicyLike, gamma: float = 1.0) -> OracleValues:
        """The perfect critic: exact ``Q^pi``, ``V^pi`` and ``A^pi`` of a tabular ``policy``
        (array ``(num_states, num_actions)`` or function ``state_id -> probabilities``)."""
        return evaluate_policy(self.model(), policy, gamma=gamma)

    def optimal(self, gamma: float = 1.0) -> OracleValues:
        """Exact ``Q*``/``V*`` (cached for ``gamma = 1``)."""
        if gamma == 1.0:
            return self._cached("optimal", lambda: optimal_values(self.model()))
        return optimal_values(self.model(), gamma=gamma)

    def action_gaps(self) -> np.ndarray:
        """The exact optimal action gap of every ``state_id``, shape ``(num_states,)``; over the
        *valid* actions where some are invalid (an invalid no-op is no choice: with a step cost
        its self-loop would make every gap positive)."""
        if self.has_action_masks:
            return self._cached("action_gaps", lambda: self.valid_action_gap(self.optimal()))
        return self._cached("action_gaps", lambda: self.optimal().action_gap)

    def critical_table(self) -> np.ndarray:
        """``is_critical`` of every ``state_id`` by its definition (the exact action gap above
        the tolerance), bool ``(num_states,)``; False on terminal and unreachable ids."""
        return self._cached("critical_table", lambda: self.action_gaps() > self.critical_tolerance)

    def success_table(self) -> np.ndarray:
        """``is_success`` of every reachable terminal ``state_id``, bool ``(num_states,)``."""

        def build() -> np.ndarray:
            model = self.model()
            table = np.zeros(model.num_states, dtype=bool)
            for sid in np.flatnonzero(model.terminal):
                table[sid] = self.is_success(model.states[int(sid)])
            return table

        return self._cached("success_table", build)

    def success_probability(self, policy: PolicyLike) -> float:
        """Exact probability that an episode under ``policy`` ends in success (no sampling)."""
        return success_values(self.model(), self.success_table(), policy)

    def decision_observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Every reachable non-terminal ``state_id`` and its observation: shapes ``(K,)`` and
        ``(K, *observation_shape)``. With these a policy network gives a tabular policy for
        :meth:`oracle` (``pi(. | obs(s))`` for every ``s``)."""
        model = self.model()
        ids = np.flatnonzero(model.decision_states)
        return ids, np.stack([self.observe(model.states[int(i)]) for i in ids])

    # --------------------------------------------------- where some actions are invalid
    def mask_table(self) -> np.ndarray:
        """The mask of every state id, shape ``(num_states, num_actions)`` bool (a fresh array);
        all-False rows for terminal and unreachable ids (all True without action masks)."""

        def build() -> np.ndarray:
            table = np.zeros((self.num_states, self.num_actions), dtype=bool)
            for sid in np.flatnonzero(self.model().decision_states):
                mask = self.action_mask(self.state_from_id(int(sid)))
                table[sid] = True if mask is None else mask
            table.flags.writeable = False
            return table

        return self._cached("mask_table", build).copy()

    def valid_action_gap(self, values: OracleValues) -> np.ndarray:
        """``max - min`` of ``values.q`` over each state's valid actions, ``(num_states,)`` (0
        where none is valid); positive exactly on critical states for ``self.optimal()``."""
        mask = self.mask_table()
        hi = np.where(mask, values.q, -np.inf).max(axis=1)
        lo = np.where(mask, values.q, np.inf).min(axis=1)
        return np.where(mask.any(axis=1), hi - lo, 0.0)

    def masked_uniform_policy(self) -> np.ndarray:
        """Uniform over the valid actions of each state, shape ``(num_states, num_actions)``
        (uniform over all actions where none is valid), for :meth:`oracle`."""
        mask = self.mask_table().astype(np.float64)
        counts = mask.sum(axis=1, keepdims=True)
        return np.where(counts > 0, mask / np.maximum(counts, 1), 1.0 / mask.shape[1])

    # ----------------------------------------------------------------------- internals
    def _derive(self, **values: Any) -> None:
        """Store derived constants on a frozen instance (for ``__post_init__`` only)."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _cached(self, name: str, build: Any) -> Any:
        """A value computed once from the configuration and kept on this instance."""
        cache = self.__dict__.setdefault("_derived_cache", {})
        if name not in cache:
            value = build()
            if isinstance(value, np.ndarray):
                value.setflags(write=False)  # shared by every env on these dynamics
            cache[name] = value
        return cache[name]

    def __deepcopy__(self, memo: dict[int, Any]) -> Dynamics:
        return self  # immutable: copies of an env share their dynamics (and its model)

    def __copy__(self) -> Dynamics:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_derived_cache", None)  # rebuilt on demand; can be large
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
