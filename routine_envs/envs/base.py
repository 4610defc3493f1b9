"""The thin Gymnasium env on top of a :class:`~routine_envs.dynamics.Dynamics`.

An environment of the suite is a public, immutable dynamics object (the MDP) plus this env,
which holds only the episode: the current state, the random generator, the counters and the
history. The base owns ``reset``/``step`` with Gymnasium's seeding on ``self.np_random``, action
checking, the info contract of :mod:`routine_envs.annotations`, the optional step budget,
rendering dispatch and cheap ``copy.deepcopy`` branching (the dynamics and their exact model are
shared by every copy). The exact model, the oracle and the success probability are the
dynamics' own, reached through ``env.unwrapped.dynamics`` (the env forwards them too).

Because ``step`` samples from the same ``outcomes`` that the exact model enumerates, the
oracle's values are exact for the environment as it runs; the tests still check them against
Monte-Carlo rollouts branched with ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
from numpy.random.bit_generator import ISeedSequence

from routine_envs import annotations as keys
from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.oracle import OracleValues, PolicyLike, TabularModel
from routine_envs.rendering.text_view import TextView

# the step path's info keys, bound once (a module attribute read per key costs on every step)
_CRITICAL, _STATE_ID, _ANCHOR, _SCORE = keys.CRITICAL, keys.STATE_ID, keys.ANCHOR, keys.TURN_SCORE

ObsType = TypeVar("ObsType")
StateType = TypeVar("StateType", bound=Hashable)

#: types of immutable values: ``copy.deepcopy`` of an env shares them instead of copying.
_IMMUTABLE_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})
#: spaces whose only mutable state is their random generator.
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


@dataclass
class EpisodeHistory(Generic[StateType]):
    """What happened so far in the episode: ``states[0]`` the start, then after every step the
    action taken and the state reached (``len(states) == len(actions) + 1``). States are
    immutable, so a copy of the history shares them."""

    states: list[StateType] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)

    def __deepcopy__(self, memo: dict[int, Any]) -> EpisodeHistory[StateType]:
        return EpisodeHistory(list(self.states), list(self.actions))


StepKeys = tuple[int, int, bool, "float | None", "np.ndarray | None", float]
"""What a step reports about the state it reaches, by the state alone: ``(state_id, anchor,
critical, action_gap, action_mask, turn_score)`` (the gap ``None`` unless reported, the mask
``None`` without action masks; ``critical`` before an episode end sets it to False)."""


class FromDynamics:
    """A public name of an env read from its ``dynamics``: ``env.num_floors`` is
    ``env.dynamics.num_floors``. A non-data descriptor, so an attribute set on the env instance
    wins, as it would over ``__getattr__``; unlike ``__getattr__`` it leaves the interpreter's
    fast attribute reads on the env (every ``self.x`` of ``step``) in place."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, env: Any, owner: type | None = None) -> Any:
        if env is None:
            return self
        dynamics = env.__dict__.get("dynamics")
        if dynamics is None:
            raise AttributeError(f"{type(env).__name__!r} object has no attribute {self.name!r}")
        return getattr(dynamics, self.name)


@functools.cache
def _public_class_names(cls: type) -> tuple[str, ...]:
    return tuple(name for name in dir(cls) if not name.startswith("_"))


def forward_to_dynamics(env_class: type, dynamics: Any) -> None:
    """Make every public name of ``dynamics`` (its class's and its instance's) that
    ``env_class`` does not define readable on the env through :class:`FromDynamics`."""
    names = (*_public_class_names(type(dynamics)), *vars(dynamics))
    for name in names:
        if not name.startswith("_") and name != "dynamics" and not hasattr(env_class, name):
            setattr(env_class, name, FromDynamics(name))


#: the env class of every dynamics class that has one (see :func:`env_class`).
_ENV_CLASSES: dict[type, type] = {}


class RoutineEnv(gym.Env[ObsType, np.int64], Generic[ObsType, StateType]):
    """Base class: an annotated, branchable episode on exact, shared dynamics.

    ``RoutineEnv(dynamics, render_mode=None, max_steps=None)`` holds an episode on the given
    dynamics. An env class *for* a dynamics class, ``class DoorsEnv(RoutineEnv,
    dynamics=DoorsDynamics)`` (a docstring is all it needs; :func:`env_class` builds a generic
    one), builds its dynamics from its keyword arguments instead: the dynamics' fields (their
    defaults are the env's), then ``max_steps`` and ``render_mode``. Its ``__signature__`` says
    so (``inspect.signature``, which the command lines' keyword checks and the docs read), its
    ``metadata["render_modes"]`` are the dynamics' :attr:`~Dynamics.render_modes` and its
    pictures the dynamics' :attr:`~Dynamics.renderer`. A subclass with options of its own
    writes an ``__init__`` whose keyword-only parameters are those options, builds the dynamics
    with :meth:`make_dynamics` and calls ``RoutineEnv.__init__`` (CodeFix's ``obs_mode``).

    Public attributes the env does not define are read from its dynamics
    (``env.unwrapped.num_floors`` is ``env.unwrapped.dynamics.num_floors``).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": validation.RenderModes(["ansi", "human"]),
        "render_fps": 4,
    }
    #: the dynamics class this env class builds from its keyword arguments (``None``: the env
    #: is given its dynamics).
    dynamics_class: ClassVar[type[Dynamics] | None] = None

    def __init_subclass__(cls, dynamics: type[Dynamics] | None = None, **kwargs: Any) -> None:
        """``dynamics=``: the env class of that dynamics class (see the class docstring). A
        subclass's own ``metadata["render_modes"]`` becomes a
        :class:`~routine_envs.envs.validation.RenderModes`, so that ``gym.make`` refuses a
        non-string ``render_mode`` with a ``ValueError`` naming it (before the env is called)."""
        super().__init_subclass__(**kwargs)
        if dynamics is not None:
            if not (isinstance(dynamics, type) and issubclass(dynamics, Dynamics)):
                raise ValueError(f"dynamics must be a Dynamics subclass, got {dynamics!r}")
            cls.dynamics_class = dynamics
            if "metadata" not in cls.__dict__:
                cls.metadata = {"render_modes": list(dynamics.render_modes), "render_fps": 4}
            if "__init__" not in cls.__dict__:
                cls.__init__ = _init_from_config  # type: ignore[method-assign]
            if not cls.__dict__.get("__doc__"):
                cls.__doc__ = dynamics.__doc__
            _ENV_CLASSES.setdefault(dynamics, cls)
        own = cls.__dict__.get("metadata")
        if isinstance(own, dict) and not isinstance(
            own.get("render_modes"), (validation.RenderModes, type(None))
        ):
            cls.metadata = {**own, "render_modes": validation.RenderModes(own["render_modes"])}
        if cls.dynamics_class is not None:
            cls.__signature__ = config_signature(cls)  # type: ignore[attr-defined]

    @classmethod
    def make_dynamics(cls, *args: Any, **config: Any) -> Dynamics:
        """The dynamics of a configuration: ``args`` the dynamics' positional fields in their
        order, ``config`` fields by name (``TypeError`` for any other, as a call gives)."""
        return dynamics_from_arguments(cls, args, config)

    def __init__(
        self, dynamics: Dynamics, render_mode: str | None = None, max_steps: int | None = None
    ) -> None:
        render_mode = validation.render_mode(render_mode, self.metadata["render_modes"])
        #: the environment's exact, immutable MDP (shared by deep copies).
        self.dynamics = dynamics
        self.render_mode = render_mode
        self.observation_space = dynamics.observation_space
        self.action_space = gym.spaces.Discrete(dynamics.num_actions)
        self._num_actions = int(dynamics.num_actions)
        #: optional step budget: the episode is truncated (not terminated) after this many steps.
        #: The model and the oracle describe the environment without it (Gymnasium's convention:
        #: truncation is outside the MDP).
        self.max_steps = (
            None if max_steps is None else validation.integer("max_steps", max_steps, minimum=1)
        )
        self.history: EpisodeHistory[StateType] = EpisodeHistory()
        self._state: StateType | None = None
        self._finished = False
        self._critical_now = False
        self._episode_length = 0
        self._num_critical = 0
        self._reports_gap = dynamics.reports_action_gap
        self._masked = dynamics.has_action_masks
        #: ``{state: StepKeys}``, the dynamics' own memo (shared, never copied)
        self._step_keys = dynamics.step_key_cache()
        #: the :data:`StepKeys` of the current state (its mask tells a step's invalid action)
        self._keys_now: StepKeys | None = None
        forward_to_dynamics(type(self), dynamics)

    # ------------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        """Start an episode; ``seed`` reseeds ``self.np_random`` as in every Gymnasium env."""
        super().reset(seed=seed)
        state = self._state = sample_item(self.dynamics.initial_outcomes(), self.np_random)[1]
        self._finished = False
        self._episode_length = 0
        self._num_critical = 0
        known = self._keys_now = self._known(state)
        self._critical_now = known[2]
        self.history = EpisodeHistory([state], [])
        if self.render_mode == "human":
            self.render()
        obs = self._observation()
        info = {_CRITICAL: known[2], _STATE_ID: known[0], _ANCHOR: known[1], _SCORE: known[5]}
        if self.observation_shows_history:
            info[keys.ANCHOR] = keys.observation_anchor(obs)
        if self._reports_gap:
            info[keys.ACTION_GAP] = known[3]
        if self._masked:
            info[keys.ACTION_MASK] = known[4].copy()
            info[keys.INVALID_ACTION] = False
        return obs, info

    def step(self, action: Any) -> tuple[ObsType, float, bool, bool, dict[str, Any]]:
        """Take ``action``; raises :class:`InvalidActionError` for an action outside the space and
        ``gymnasium.error.ResetNeeded`` before ``reset`` or after the episode ended."""
        state = self._state
        if state is None:
            raise gym.error.ResetNeeded("step() called before reset(): call env.reset() first")
        if self._finished:
            raise gym.error.ResetNeeded(
                "step() called on a finished episode (it returned terminated or truncated): "
                "call env.reset() to start a new one"
            )
        if type(action) is int and 0 <= action < self._num_actions:  # fast path
            a = action
        else:
            a = check_discrete_action(action, int(self.action_space.n))
        dynamics = self.dynamics
        outcomes = dynamics.outcomes(state, a)
        _, nxt, reward, terminated = (
            outcomes[0] if len(outcomes) == 1 else sample_item(outcomes, self.np_random)
        )
        self._episode_length += 1
        self._num_critical += self._critical_now
        history = self.history
        history.actions.append(a)
        history.states.append(nxt)
        self._state = nxt
        before = self._keys_now
        known = self._keys_now = self._step_keys.get(nxt) or self._known(nxt)
        state_id, anchor, critical, gap, mask, score = known
        if terminated:
            critical = False
        self._critical_now = critical
        if self.observation_shows_history:
            obs = self._observation()
            anchor = keys.observation_anchor(obs)
        else:
            obs = dynamics.observe(nxt)
        info = {_CRITICAL: critical, _STATE_ID: state_id, _ANCHOR: anchor, _SCORE: score}
        if self._reports_gap:
            info[keys.ACTION_GAP] = gap
        if self._masked:
            info[keys.ACTION_MASK] = mask.copy()
            info[keys.INVALID_ACTION] = not before[4][a]
        truncated = (
            not terminated and self.max_steps is not None and self._episode_length >= self.max_steps
        )
        if terminated or truncated:
            self._finished = True
            info.update(
                keys.episode_end_info(
                    dynamics.is_success(nxt), self._num_critical, self._episode_length
                )
            )
        if self.render_mode == "human":
            self.render()
        return obs, float(reward), bool(terminated), truncated, info

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text picture; ``"rgb_array"``: an ``(H, W, 3)`` uint8 image;
        ``"human"``: prints the text picture and returns None (Gymnasium's convention: ``reset``
        and ``step`` then call it themselves). The pictures are the dynamics' renderer's."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None: pass render_mode to gym.make")
            return None
        if self._state is None:
            raise gym.error.ResetNeeded("render() called before reset()")
        dynamics = self.dynamics
        if self.render_mode == "human":
            print(dynamics.renderer(dynamics, self._state, self.history, "ansi"), flush=True)
            return None
        return dynamics.renderer(dynamics, self._state, self.history, self.render_mode)

    def text_view(self) -> TextView:
        """What a language-model agent is told (the dynamics' :meth:`~Dynamics.text_view`).

        Raises:
            ValueError: the env was not made with the dynamics' ``text_kwargs`` (CodeFix's text
                view needs ``obs_mode="text"``: its observation is then the transcript an agent
                reads); ``make_text_env`` passes them.
        """
        for name, value in self.dynamics.text_kwargs.items():
            if getattr(self, name, None) != value:
                raise ValueError(
                    f"{name} must be {value!r} for the text interface of "
                    f"{type(self).__name__} (make_text_env passes it), got "
                    f"{getattr(self, name, None)!r}"
                )
        return self.dynamics.text_view()

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
        return self.dynamics.state_id(self.state)

    @property
    def critical(self) -> bool:
        """Whether the next action, taken in the current state, can change the expected return."""
        return self._critical_now

    #: the observation shows more than the state (e.g. a transcript's last call): the anchor is
    #: then hashed from each observation instead of cached per state (set on the class, or on an
    #: instance whose mode decides it).
    observation_shows_history: bool = False

    def _observation(self) -> ObsType:
        """The observation of the current state. An env whose observation also shows the
        history (e.g. a transcript's last call) overrides this and sets
        ``observation_shows_history``; otherwise ``step`` calls ``dynamics.observe`` directly."""
        return self.dynamics.observe(self._state)

    def _known(self, state: StateType) -> StepKeys:
        """The :data:`StepKeys` of ``state``, computed on its first visit and kept in the
        dynamics' memo (shared by every env on them)."""
        known = self._step_keys.get(state)
        if known is None:
            dynamics = self.dynamics
            known = self._step_keys[state] = (
                dynamics.state_id(state),
                dynamics.anchor(state),
                bool(dynamics.is_critical(state)),
                dynamics.action_gap(state) if self._reports_gap else None,
                dynamics.action_mask(state) if self._masked else None,
                float(dynamics.turn_score(state)),
            )
        return known

    def describe_state(self, state_id: int) -> StateType:
        """Inverse of ``state_id``: the state with that id (``ValueError`` outside the ids)."""
        return self.dynamics.state_from_id(state_id)

    # ------------------------------------------------------- the exact model (the dynamics')
    @property
    def num_states(self) -> int:
        """Size of the ``state_id`` space."""
        return self.dynamics.num_states

    def model(self) -> TabularModel:
        """The exact tabular model (built on first use, shared by every env on the dynamics)."""
        return self.dynamics.model()

    def oracle(self, policy: PolicyLike, gamma: float = 1.0) -> OracleValues:
        """The perfect critic: exact ``Q^pi``, ``V^pi`` and ``A^pi`` of a tabular ``policy``
        (array ``(num_states, num_actions)`` or function ``state_id -> probabilities``)."""
        return self.dynamics.oracle(policy, gamma=gamma)

    def optimal(self, gamma: float = 1.0) -> OracleValues:
        """Exact ``Q*``/``V*``; ``optimal().action_gap > tolerance`` on the critical states."""
        return self.dynamics.optimal(gamma=gamma)

    def success_probability(self, policy: PolicyLike) -> float:
        """Exact probability that an episode under ``policy`` ends in success (no sampling)."""
        return self.dynamics.success_probability(policy)

    def decision_observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Every reachable non-terminal ``state_id`` and its observation (see
        :meth:`Dynamics.decision_observations`)."""
        return self.dynamics.decision_observations()

    # --------------------------------------------------------------------------- internals
    def __deepcopy__(self, memo: dict[int, Any]) -> RoutineEnv:
        """Branch: an independent env whose future, for the same actions, equals this one's
        (random generator included). The dynamics, the spec and the (immutable) state are
        shared."""
        return branch_copy(
            self, memo, shared=("dynamics", "spec", "_state", "_step_keys", "_keys_now")
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_step_keys"]  # the dynamics' memo: relinked on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._step_keys = self.dynamics.step_key_cache()

    def __repr__(self) -> str:
        """``Name(field=value, ...)``: the dynamics' fields, then the options that differ from
        their defaults (e.g. ``max_steps``)."""
        return config_repr(self)


def config_repr(env: Any) -> str:
    """``Name(field=value, ...)`` of an env on dynamics (a team env's too): its dynamics'
    fields, then the keyword-only options of its class's signature (``max_steps``,
    ``max_cycles``, ...; not ``render_mode``) that differ from their defaults."""
    dynamics = vars(env).get("dynamics")
    if not dataclasses.is_dataclass(dynamics):
        return f"<{type(env).__name__}>"
    fields_ = config_fields(dynamics)
    parts = [f"{f.name}={getattr(dynamics, f.name)!r}" for f in fields_]
    signature = getattr(type(env), "__signature__", None)
    options = [] if signature is None else signature.parameters.values()
    skip = {"render_mode", *(f.name for f in fields_)}
    for p in options:
        if p.kind is p.KEYWORD_ONLY and p.name not in skip:
            value = getattr(env, p.name, p.default)
            if value != p.default:
                parts.append(f"{p.name}={value!r}")
    return f"{type(env).__name__}({', '.join(parts)})"


def dynamics_from_arguments(
    env_class: type, args: Sequence[Any], config: dict[str, Any]
) -> Dynamics:
    """The dynamics of ``env_class`` (its ``dynamics_class``) for a call's arguments: ``args``
    the dynamics' positional fields in their order, ``config`` fields by name (``TypeError``
    for any other, as a call gives)."""
    dynamics = env_class.dynamics_class
    name = env_class.__name__
    if dynamics is None:
        raise TypeError(f"{name} is given its dynamics: {name}(dynamics, ...)")
    names = [f.name for f in config_fields(dynamics) if not f.kw_only]
    if len(args) > len(names):
        raise TypeError(
            f"{name}() takes at most {len(names)} positional arguments (the fields "
            f"of {dynamics.__name__}), got {len(args)}"
        )
    for field_name, value in zip(names, args, strict=False):
        if field_name in config:
            raise TypeError(f"{name}() got multiple values for argument {field_name!r}")
        config[field_name] = value
    known = {f.name for f in config_fields(dynamics)}
    for field_name in config:
        if field_name not in known:
            raise TypeError(f"{name}() got an unexpected keyword argument {field_name!r}")
    return dynamics(**config)


def _init_from_config(
    self: RoutineEnv,
    *args: Any,
    max_steps: int | None = None,
    render_mode: str | None = None,
    **config: Any,
) -> None:
    """``__init__`` of an env class for a dynamics class: the dynamics' fields (positional in
    their order, or by name), then the step budget and the render mode."""
    dynamics = type(self).make_dynamics(*args, **config)
    RoutineEnv.__init__(self, dynamics, render_mode=render_mode, max_steps=max_steps)


def config_fields(dynamics: Any) -> list[dataclasses.Field]:
    """The configuration fields of a dynamics class (or object): its ``__init__`` fields, in the
    order the classes declare them (a field that a base class declares as a class variable, as
    ``critical_tolerance``, keeps the place of the subclass's field, not the base's)."""
    found = {f.name: f for f in dataclasses.fields(dynamics) if f.init}
    order: list[str] = []
    klass = dynamics if isinstance(dynamics, type) else type(dynamics)
    for base in reversed(klass.__mro__):
        for name, annotation in vars(base).get("__annotations__", {}).items():
            if name in found and name not in order and "ClassVar" not in str(annotation):
                order.append(name)
    order += [name for name in found if name not in order]
    return [found[name] for name in order]


def config_signature(cls: type[RoutineEnv]) -> inspect.Signature:
    """The signature of an env class for a dynamics class: the dynamics' fields (keyword-only
    where the dataclass says so) with their defaults, then the keyword-only options of the
    class's ``__init__`` (``max_steps``, ``render_mode``, ...)."""
    fields_ = config_fields(cls.dynamics_class)
    params = []
    for f in fields_:
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = inspect.Parameter.empty
        kind = (
            inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        params.append(inspect.Parameter(f.name, kind, default=default, annotation=f.type))
    names = {f.name for f in fields_}
    init = inspect.signature(cls.__init__)
    params += [
        p for p in init.parameters.values() if p.kind is p.KEYWORD_ONLY and p.name not in names
    ]
    params.sort(key=lambda p: p.kind is inspect.Parameter.KEYWORD_ONLY)  # (stable)
    return inspect.Signature(params)


def env_class(dynamics: type[Dynamics]) -> type[RoutineEnv]:
    """The env class of a dynamics class: the first ``RoutineEnv`` subclass declared with
    ``dynamics=`` it, else a generic one built once (named ``<Name>Env``, the dynamics'
    docstring, no behaviour of its own; its instances pickle through the dynamics class)."""
    if not (isinstance(dynamics, type) and issubclass(dynamics, Dynamics)):
        raise ValueError(f"dynamics must be a Dynamics subclass, got {dynamics!r}"[:200])
    found = _ENV_CLASSES.get(dynamics)
    if found is None:
        name = dynamics.__name__.removesuffix("Dynamics") + "Env"
        namespace = {
            "__module__": dynamics.__module__,
            "__qualname__": name,
            "__doc__": dynamics.__doc__,
            "__reduce__": _reduce_generated,
        }
        found = type(name, (RoutineEnv,), namespace, dynamics=dynamics)
    return found


def is_module_level(cls: type) -> bool:
    """Whether ``cls`` is its module's attribute of its name (importable as ``module:Name``)."""
    module = sys.modules.get(cls.__module__)
    return module is not None and getattr(module, cls.__qualname__, None) is cls


def _reduce_generated(self: RoutineEnv) -> tuple[Any, ...]:
    return _rebuild_env, (type(self).dynamics_class, self.__getstate__())


def _rebuild_env(dynamics: type[Dynamics], state: dict[str, Any]) -> RoutineEnv:
    """Unpickle an env of a generic class (:func:`env_class`), built again from its dynamics."""
    cls = env_class(dynamics)
    env = cls.__new__(cls)
    env.__setstate__(state)
    return env


def branch_copy(obj: Any, memo: dict[int, Any], shared: Sequence[str] = ()) -> Any:
    """A deep copy of ``obj`` made fast for environments: immutable values and the attributes
    named in ``shared`` are shared, generators are copied through their state and flat spaces
    shallowly (with their own generator); the rest is deep-copied (dynamics share themselves)."""
    clone = obj.__class__.__new__(obj.__class__)
    memo[id(obj)] = clone
    state = clone.__dict__
    for name, value in obj.__dict__.items():
        kind = type(value)
        if kind in _IMMUTABLE_TYPES or name in shared:
            state[name] = value
        elif id(value) in memo:
            state[name] = memo[id(value)]
        elif kind is np.random.Generator:  # copy.deepcopy pickles it: ~10x slower
            state[name] = memo[id(value)] = copy_generator(value)
        elif kind in _FLAT_SPACES:
            state[name] = memo[id(value)] = copy_space(value)
        else:
            state[name] = copy.deepcopy(value, memo)
    return clone


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


def copy_space(space: gym.spaces.Space) -> gym.spaces.Space:
    """A copy of a space of :data:`_FLAT_SPACES` sharing its read-only bounds and shape, with its
    own random generator (each generator among its attributes is copied, whatever its name; an
    unseeded space stays unseeded: reading ``np_random`` would seed it, ~30 us)."""
    clone = object.__new__(type(space))
    state = vars(clone)
    state.update(vars(space))
    for name, value in state.items():
        if type(value) is np.random.Generator:
            state[name] = copy_generator(value)
    return clone
