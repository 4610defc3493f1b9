"""Advantage estimators: small pure functions over a batch of finished episodes.

One interface, usable from any RL library (an LLM trainer included; numpy only): an estimator is
called on an :class:`~routine_envs.episodes.EpisodeBatch` and returns an :class:`Advantages`
(one advantage per step, and a return target where it trains a critic). ``requires`` names the
batch fields it reads: a trainer fails before training where they are missing, and the batch an
estimator gets holds only the privileged fields it declares (:func:`batch_for`).

Estimators (``R_i`` episode return, ``G_t`` return-to-go, ``V`` a value):

- ``gae`` (learned critic): ``A_t = sum_k (gamma lam)^k delta_{t+k}``,
  ``delta_t = r_t + gamma V(s_{t+1}) - V(s_t)``.
- ``trajectory_mc`` (critic-free): ``A_t = R_i - mean_group(R)``, over ``std_group(R)`` with
  ``normalize_std``.
- ``rloo`` (critic-free): ``A_t = R_i - mean_{j != i in group}(R_j)``.
- ``gigpo`` (critic-free, turn-level): ``A_t = A^E_i + omega (G_t - mean_{group, state_id}(G))``.
- ``mc_rollout`` (Monte-Carlo critic): ``A_t = r_t + gamma V^(s_{t+1}) - V^(s_t)``, ``V^`` the
  mean return of k rollouts from the state (branched from the live env, or on the exact model).
- ``oracle`` (perfect critic, optionally noisy): ``A_t = A^pi(s_t, a_t) + sigma N(0, 1)``.
- ``routine_masked`` (critic-free, ground truth): ``A_t = critical_t (R_i - mean_group(R))``.
- Turn-level methods of LLM trainers (:mod:`routine_envs.turn_level`): ``discounted_turn``
  (verifiers' stepwise advantages), ``turn_index_norm`` (MT-GRPO's per-turn-index normalisation,
  ``fix``: a length-independent baseline, as verl RFC #7244 asks), ``turn_credit``
  (prime-rl's turn-credit).

Building estimators: a trainer or a lab describes what it has in an :class:`EstimatorContext`
(env, policy table, gamma, rollout policy, seed) and calls :func:`build_estimator` with a name, a
class or an instance; each class takes what it needs in its ``from_context`` (the
:class:`FromContext` mixin maps constructor parameters to context fields): no switch over names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np

from routine_envs import plugins
from routine_envs.episodes import PER_STEP_FIELDS, Declared, EpisodeBatch
from routine_envs.episodes import batch_for as batch_for
from routine_envs.oracle import PolicyLike
from routine_envs.rollouts import (  # re-exported: the sources of mc_rollout
    BranchedRollouts,
    ModelRollouts,
    PolicyTable,
    RolloutPolicy,
    RolloutSource,
)

BATCH_FIELDS = (*PER_STEP_FIELDS, "snapshots")
"""Optional :class:`EpisodeBatch` fields an estimator may require (see
:class:`~routine_envs.episodes.EpisodeBatch` for each one's meaning and shape)."""
INFO_KEY_OF_FIELD = dict(critical="critical", state_ids="state_id", anchors="anchor")
INFO_KEY_OF_FIELD["turn_scores"] = "turn_score"  # of the info each step returns
"""The ``info`` key each annotation field is read from (``turn_scores``: after each step)."""


@dataclass(frozen=True)
class Advantages:
    """What an estimator returns.

    Attributes:
        advantages: one advantage per step, shape ``(N,)``.
        returns: value targets for a learned critic, shape ``(N,)``, or ``None`` (critic-free).
    """

    advantages: np.ndarray
    returns: np.ndarray | None = None


@runtime_checkable
class AdvantageEstimator(Protocol):
    """The estimator interface.

    Attributes:
        name: registry name.
        requires: :data:`BATCH_FIELDS` the estimator reads.
        trains_critic: whether it uses (and returns targets for) the learner's value head.

    Optional: ``group_independent`` (default ``False``): ``True`` declares that the advantages
    of a group's steps depend only on that group's episodes, so a caller may pass many groups
    at once; otherwise measurements that define a batch as one group (the SNR lab) call the
    estimator on one group at a time, so an estimator that pools statistics over its input
    is measured honestly.
    """

    name: str
    requires: frozenset[str]
    trains_critic: bool

    def __call__(self, batch: EpisodeBatch) -> Advantages: ...


@dataclass(frozen=True)
class EstimatorContext:
    """What a caller (a trainer, the SNR lab) offers the estimators it builds.

    Every field is optional (``None``: not available); an estimator takes the fields it needs in
    its ``from_context`` and fails there, before any training, when one is missing.

    Attributes:
        env: ``env.unwrapped`` of an environment of the suite (anything with ``oracle(policy,
            gamma)``: the exact model, for the perfect critic).
        policy_table: the behaviour policy as a :data:`PolicyTable`, shape
            ``(num_states, num_actions)``.
        gamma: the learner's discount factor.
        gae_lambda: the learner's GAE lambda.
        rollout_policy: a batched policy ``(observations, infos) -> actions`` for Monte-Carlo
            rollouts branched from live environments (:data:`RolloutPolicy`).
        sampler: an exact-model sampler (:class:`routine_envs.sampler.ModelSampler`) for
            Monte-Carlo rollouts simulated on the model instead.
        seed: seed of the estimator's own randomness (critic noise, simulated rollouts).
    """

    env: Any = None
    policy_table: PolicyTable | None = None
    gamma: float | None = None
    gae_lambda: float | None = None
    rollout_policy: Callable[..., np.ndarray] | None = None
    sampler: Any = None
    seed: int | None = None


E = TypeVar("E", bound="FromContext")


class FromContext:
    """Mixin: ``from_context`` fills constructor parameters from an :class:`EstimatorContext`.

    ``context_fields`` maps a constructor parameter to the context field it takes (only fields
    that are not ``None``); explicit keyword arguments win over the context."""

    context_fields: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def from_context(cls: type[E], context: EstimatorContext, **kwargs: Any) -> E:
        """An instance built from ``context`` and constructor ``kwargs``."""
        values = {
            param: getattr(context, attr)
            for param, attr in cls.context_fields.items()
            if getattr(context, attr) is not None
        }
        values.update(kwargs)
        return cls(**values)


def check_batch(estimator: Any, batch: EpisodeBatch, kind: str = "estimator") -> None:
    """Raise ``ValueError`` naming every field ``estimator`` (anything with ``name`` and
    ``requires``: an estimator, a detector, named by ``kind``) needs that ``batch`` lacks."""
    missing = sorted(f for f in estimator.requires if getattr(batch, f) is None)
    if missing:
        raise ValueError(
            f"{kind} {estimator.name!r} needs batch fields {missing} that the batch does not have"
        )


def _group_stats(
    values: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-element group mean, population std and group size of ``values`` (all shape like it)."""
    index = np.unique(groups, return_inverse=True)[1].reshape(-1)
    counts = np.bincount(index)
    sums = np.bincount(index, weights=values)
    means = sums / counts
    var = np.bincount(index, weights=(values - means[index]) ** 2) / counts
    return means[index], np.sqrt(var[index]), counts[index]


def _episode_advantage(batch: EpisodeBatch, normalize_std: bool, eps: float) -> np.ndarray:
    """``R_i - mean_group(R)`` (optionally over the group std), shape ``(M,)``."""
    returns = batch.episode_returns()
    mean, std, _ = _group_stats(returns, batch.groups)
    adv = returns - mean
    return adv / (std + eps) if normalize_std else adv


def _bootstrap(batch: EpisodeBatch) -> np.ndarray:
    """``V(s_T)`` after each episode: the bootstrap value when truncated, else 0; ``(M,)``."""
    if batch.truncated is None or batch.bootstrap_values is None:
        return np.zeros(batch.num_episodes)
    return np.where(batch.truncated, batch.bootstrap_values, 0.0)


def td_advantages(batch: EpisodeBatch, values: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """GAE(lambda) of per-step ``values`` (shape ``(N,)``) on ``batch``'s rewards, vectorized over
    episodes: ``sum_k (gamma lam)^k delta_{t+k}``, ``delta_t = r_t + gamma V(s_{t+1}) - V(s_t)``
    (``V`` after the last step: the bootstrap value when truncated, else 0). Shape ``(N,)``;
    ``lam = 0`` gives the one-step TD errors."""
    v = batch.padded(values.astype(np.float64))
    r = batch.padded(np.asarray(batch.rewards, dtype=np.float64))
    lengths = batch.lengths
    rows = np.arange(batch.num_episodes)
    v_next = np.zeros_like(v)
    v_next[:, :-1] = v[:, 1:]
    v_next[rows, lengths - 1] = _bootstrap(batch)
    delta = r + gamma * v_next - v
    adv = np.zeros_like(v)
    running = np.zeros(batch.num_episodes)
    for t in range(v.shape[1] - 1, -1, -1):
        live = t < lengths
        running = np.where(live, delta[:, t] + gamma * lam * running, 0.0)
        adv[:, t] = running
    return batch.unpad(adv)


# --------------------------------------------------------------------------- estimators
@dataclass
class GAE(FromContext):
    """Generalized advantage estimation from the learner's values (what SB3 PPO does):
    ``A_t = sum_k (gamma lam)^k delta_{t+k}``, returns ``A_t + V(s_t)``."""

    gamma: float = 0.99
    gae_lambda: float = 0.95
    name: ClassVar[str] = "gae"
    requires: ClassVar[frozenset[str]] = frozenset({"values"})
    trains_critic: ClassVar[bool] = True
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {"gamma": "gamma", "gae_lambda": "gae_lambda"}

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        adv = td_advantages(batch, batch.values, self.gamma, self.gae_lambda)
        return Advantages(adv, adv + batch.values)


@dataclass
class TrajectoryMC(FromContext):
    """Monte-Carlo trajectory advantage (GRPO's outcome advantage): every step of episode ``i``
    gets ``R_i - mean_group(R)``, divided by ``std_group(R) + eps`` when ``normalize_std``.
    With a fixed ``baseline`` (e.g. the exact ``J = V^pi(s_0)``) it is ``R_i - baseline``."""

    normalize_std: bool = False
    eps: float = 1e-6
    baseline: float | None = None
    name: ClassVar[str] = "trajectory_mc"
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        if self.baseline is not None:
            adv = batch.episode_returns() - self.baseline
        else:
            adv = _episode_advantage(batch, self.normalize_std, self.eps)
        return Advantages(np.repeat(adv, batch.lengths))


@dataclass
class RLOO(FromContext):
    """REINFORCE leave-one-out: ``A_t = R_i - mean_{j != i}(R_j)`` over the episode's group
    (``= G/(G-1) (R_i - mean_group(R))``); groups need at least two episodes."""

    name: ClassVar[str] = "rloo"
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        returns = batch.episode_returns()
        mean, _, size = _group_stats(returns, batch.groups)
        if np.any(size < 2):
            raise ValueError("rloo needs groups of at least 2 episodes (group_size >= 2)")
        adv = size / (size - 1) * (returns - mean)
        return Advantages(np.repeat(adv, batch.lengths))


GROUP_KEYS = ("anchor", "state_id")
"""What grouping estimators group steps by: the observation-only ``anchor`` (the default, fair:
what any agent could compute) or the privileged ``state_id`` (may encode hidden state)."""


@dataclass
class GiGPO(FromContext):
    """Group-in-group policy optimization (critic-free, turn-level): the episode advantage plus
    ``omega`` times a step advantage ``G_t - mean(G)`` over the steps of the same episode group
    that share an anchor state; each part over its std when ``normalize_std``.

    ``group_by="anchor"`` (default) groups steps with equal observations (``info["anchor"]``),
    as GiGPO does with the agent's own observation; ``"state_id"`` groups by the privileged
    state id, an explicit choice that results name (see :attr:`label`)."""

    omega: float = 1.0
    gamma: float = 1.0
    normalize_std: bool = False
    eps: float = 1e-6
    group_by: str = "anchor"
    name: ClassVar[str] = "gigpo"
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.group_by not in GROUP_KEYS:
            raise ValueError(f"group_by must be one of {GROUP_KEYS}, got {self.group_by!r}")

    @property
    def requires(self) -> frozenset[str]:
        """``{"anchors"}``, or ``{"state_ids"}`` when grouping by the privileged id."""
        return frozenset({"anchors" if self.group_by == "anchor" else "state_ids"})

    @property
    def label(self) -> str:
        """How results name this estimator: privileged grouping says so."""
        return self.name if self.group_by == "anchor" else f"{self.name} (privileged: state_id)"

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        episode_adv = np.repeat(
            _episode_advantage(batch, self.normalize_std, self.eps), batch.lengths
        )
        to_go = batch.returns_to_go(self.gamma)
        group_of_step = np.repeat(batch.group_index(), batch.lengths)
        keys_of_step = batch.anchors if self.group_by == "anchor" else batch.state_ids
        anchors = np.unique(np.stack([group_of_step, keys_of_step]), axis=1, return_inverse=True)[
            1
        ].reshape(-1)
        mean, std, _ = _group_stats(to_go, anchors)
        step_adv = to_go - mean
        if self.normalize_std:
            step_adv = step_adv / (std + self.eps)
        return Advantages(episode_adv + self.omega * step_adv)


@dataclass
class RoutineMasked(FromContext):
    """The trajectory advantage with steps annotated routine set to zero (the "prune routine
    steps" remedy, using ground truth): ``A_t = critical_t (R_i - mean_group(R))``."""

    normalize_std: bool = False
    eps: float = 1e-6
    name: ClassVar[str] = "routine_masked"
    requires: ClassVar[frozenset[str]] = frozenset({"critical"})
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        adv = np.repeat(_episode_advantage(batch, self.normalize_std, self.eps), batch.lengths)
        return Advantages(np.where(batch.critical, adv, 0.0))


class OracleSource(Protocol):
    """What :class:`Oracle` needs of an environment: ``env.unwrapped`` of any suite env."""

    def oracle(self, policy: PolicyLike, gamma: float = 1.0) -> Any: ...


@dataclass
class Oracle(FromContext):
    """The perfect critic: ``A_t = A^pi(s_t, a_t)`` exact from the environment's model, plus
    ``sigma * N(0, 1)`` noise per step (an imperfect critic of known error variance sigma^2).

    ``policy`` is the tabular policy the episodes were collected with: an array
    ``(num_states, num_actions)``, or a zero-argument callable returning one (for a policy that
    changes during training). ``sigma`` is in units of return."""

    env: OracleSource
    policy: PolicyTable
    sigma: float = 0.0
    gamma: float = 1.0
    seed: int | None = None
    name: ClassVar[str] = "oracle"
    requires: ClassVar[frozenset[str]] = frozenset({"state_ids", "actions"})
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {
        "env": "env",
        "policy": "policy_table",
        "gamma": "gamma",
        "seed": "seed",
    }
    _rng: np.random.Generator = field(init=False, repr=False)
    _fixed: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {self.sigma}")
        if not hasattr(self.env, "oracle"):
            raise ValueError(
                "estimator 'oracle' needs an environment with an exact model "
                "(env.unwrapped.oracle), got "
                f"{type(self.env).__name__}"
            )
        self._rng = np.random.default_rng(self.seed)

    def table(self) -> np.ndarray:
        """The current policy table, shape ``(num_states, num_actions)``."""
        policy = self.policy
        return np.asarray(policy() if callable(policy) else policy)

    def advantage_table(self) -> np.ndarray:
        """``A^pi`` of every (state, action); computed once for a fixed policy array."""
        if callable(self.policy):
            return self.env.oracle(self.table(), gamma=self.gamma).advantage
        if self._fixed is None:
            self._fixed = self.env.oracle(self.table(), gamma=self.gamma).advantage
        return self._fixed

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        adv = self.advantage_table()[batch.state_ids, batch.actions]
        if self.sigma > 0:
            adv = adv + self.sigma * self._rng.standard_normal(adv.shape)
        return Advantages(adv)


@dataclass
class MCRollout:
    """VinePPO-style Monte-Carlo critic: ``V^(s_t)`` is the mean return of ``num_rollouts``
    rollouts of the current policy from ``s_t``; ``A_t = r_t + gamma V^(s_{t+1}) - V^(s_t)``.
    ``num_rollouts`` (k) sets the critic's error (its variance falls like 1/k).

    ``source`` is where the rollouts come from (a :class:`RolloutSource`):
    :class:`BranchedRollouts` (``copy.deepcopy`` of the live env at each step; needs per-step
    snapshots, ``keep_snapshots=True``) or :class:`ModelRollouts` (simulated on the exact
    model). A bare batched policy ``(observations, infos) -> actions`` means branched rollouts
    of it. ``requires`` is the source's."""

    source: RolloutSource | RolloutPolicy
    num_rollouts: int = 4
    gamma: float = 1.0
    name: ClassVar[str] = "mc_rollout"
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.num_rollouts < 1:
            raise ValueError(f"num_rollouts must be >= 1, got {self.num_rollouts}")
        if not hasattr(self.source, "values"):
            self.source = BranchedRollouts(self.source)

    @property
    def requires(self) -> frozenset[str]:
        """The batch fields the rollout source reads."""
        return self.source.requires

    @classmethod
    def from_context(cls, context: EstimatorContext, **kwargs: Any) -> MCRollout:
        """Rollouts on the model when the context has a ``sampler`` and a ``policy_table``
        (``seed`` in ``kwargs`` or the context seeds them), else branched from live envs with
        its ``rollout_policy``; ``gamma`` from the context unless given.

        ``source="model"`` (e.g. ``estimator_kwargs: {source: model}`` in a config) asks for
        rollouts simulated on the exact model of the context's env, with the policy table of the
        learner: the same distribution as branching live envs (the env *is* its model), at a
        fraction of the cost; ``source="branch"`` asks for branching."""
        if context.gamma is not None:
            kwargs.setdefault("gamma", context.gamma)
        choice = kwargs.pop("source", None) if isinstance(kwargs.get("source"), str) else None
        if choice not in (None, "model", "branch"):
            raise ValueError(f"mc_rollout source must be 'model' or 'branch', got {choice!r}")
        if choice == "model":
            if context.policy_table is None or (context.sampler is None and context.env is None):
                raise ValueError("mc_rollout source='model' needs the env and a policy table")
            from routine_envs.sampler import ModelSampler

            sampler = context.sampler if context.sampler is not None else ModelSampler(context.env)
            seed = kwargs.pop("seed", context.seed)
            kwargs["source"] = ModelRollouts(sampler, context.policy_table, seed)
        elif choice == "branch":
            if context.rollout_policy is None:
                raise ValueError("mc_rollout source='branch' needs a rollout policy")
            kwargs["source"] = BranchedRollouts(context.rollout_policy)
        if "source" not in kwargs:
            seed = kwargs.pop("seed", context.seed)
            if context.sampler is not None and context.policy_table is not None:
                kwargs["source"] = ModelRollouts(context.sampler, context.policy_table, seed)
            elif context.rollout_policy is not None:
                kwargs["source"] = BranchedRollouts(context.rollout_policy)
            else:
                raise ValueError(
                    "estimator 'mc_rollout' needs a rollout policy (branched rollouts) or a "
                    "model sampler and a policy table (simulated rollouts) in its context"
                )
        return cls(**kwargs)

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        values = self.source.values(batch, self.num_rollouts, self.gamma)
        adv = td_advantages(batch, values, self.gamma, lam=0.0)
        return Advantages(adv, adv + values)


ESTIMATORS: dict[str, type | str] = {
    **{cls.name: cls for cls in (GAE, TrajectoryMC, RLOO, GiGPO, MCRollout, Oracle, RoutineMasked)},
    # built on this module (a detector; the turn-level methods): named by import path,
    # imported when first used, so this module never imports them
    "detector_masked": "routine_envs.detectors.masked:DetectorMasked",
    "discounted_turn": "routine_envs.turn_level:DiscountedTurn",
    "turn_index_norm": "routine_envs.turn_level:TurnIndexNorm",
    "turn_credit": "routine_envs.turn_level:TurnCredit",
}
"""Every estimator by registry name: its class, or the import path of one defined in a module
built on this one (:mod:`routine_envs.detectors`, :mod:`routine_envs.turn_level`)."""


BUILD_ARGUMENTS: dict[type, Mapping[str, Any]] = {
    MCRollout: {
        "source": Literal["model", "branch"] | RolloutSource | RolloutPolicy,
        "seed": int | None,
    }
}
"""Keyword arguments a built-in class's ``from_context`` reads beyond its constructor's: name ->
type (a class outside declares its own as a class attribute ``extra_arguments``). Kept out of
the class bodies: a built-in class's source is part of the run keys of the shipped references."""
ARGUMENT_CHECKS = {
    "routine_envs.detectors.masked:DetectorMasked": "routine_envs.detectors.base:check_masked"
}
"""Checks of a built-in class's data arguments beyond their types, by the import paths of the
class and of the check (``detector_masked``: its detector spec; a layer above). A class outside
defines a classmethod ``check_arguments(kwargs)`` (``ValueError`` for bad ones) instead."""


def check_arguments(found: Any, kwargs: Mapping[str, Any], where: str, from_data: bool) -> None:
    """:func:`routine_envs.plugins.check_builder_arguments` with :data:`BUILD_ARGUMENTS`, then
    (``from_data``) the class's check of :data:`ARGUMENT_CHECKS` or ``check_arguments``."""
    extra = BUILD_ARGUMENTS.get(found) if isinstance(found, type) else None
    plugins.check_builder_arguments(found, kwargs, where, from_data, extra)
    if not (from_data and kwargs and isinstance(found, type)):
        return
    path = ARGUMENT_CHECKS.get(f"{found.__module__}:{found.__qualname__}")
    check = plugins.load_object(path) if path else getattr(found, "check_arguments", None)
    if callable(check):
        try:
            check(dict(kwargs))
        except Exception as err:  # the class's own code: a one-line error whatever it raised
            problem = plugins.one_line(str(err), 300) if isinstance(err, ValueError) else None
            raise ValueError(f"{where}: {problem or plugins.raised(err)}") from None


def make_estimator(name: str | AdvantageEstimator, **kwargs: Any) -> AdvantageEstimator:
    """An estimator by registry name or import path built with its constructor ``kwargs`` only
    (no context; see :func:`build_estimator`), or ``name`` itself if it is already an
    estimator. ``ValueError`` for an unknown name or a wrong keyword."""
    return build_estimator(name, None, **kwargs)


EstimatorSpec = str | type | AdvantageEstimator
"""What :func:`build_estimator` accepts: a registry name or an import path
``"package.module:Name"`` (either optionally followed by JSON keyword arguments,
``'gigpo{"omega": 0.5}'``), an estimator class or an instance."""

ESTIMATOR_ATTRIBUTES = ("name", "requires", "trains_critic")
"""What every estimator has besides ``__call__(batch) -> Advantages``."""


def estimator_class(name: str) -> type:
    """The estimator class registered as ``name`` in :data:`ESTIMATORS` (the one place a name is
    resolved); ``ValueError`` for an unknown name."""
    if name not in ESTIMATORS:
        raise ValueError(
            f"unknown estimator {name!r}; known: {sorted(ESTIMATORS)}, or an import path "
            "'package.module:Name' of your own"
        )
    found = ESTIMATORS[name]
    return plugins.load_object(found, "estimator") if isinstance(found, str) else found


def check_estimator_object(obj: Any, where: str) -> None:
    """Raise ``ValueError`` unless the object ``obj`` follows the estimator protocol:
    :data:`ESTIMATOR_ATTRIBUTES`, callable, ``requires`` within :data:`BATCH_FIELDS`."""
    missing = [a for a in ESTIMATOR_ATTRIBUTES if not hasattr(obj, a)]
    if isinstance(obj, type) or not callable(obj):
        missing.append("__call__(batch)")
    if missing:
        raise ValueError(
            f"{where} is not an advantage estimator: it lacks {missing} (an estimator has "
            "name, requires, trains_critic and __call__(batch) -> Advantages; see "
            "docs/estimators.md)"
        )
    plugins.check_requires(obj.requires, BATCH_FIELDS, where)


def check_estimator_class(cls: type, where: str) -> None:
    """``ValueError`` unless class ``cls`` builds advantage estimators (``builtins:int`` is
    refused): :func:`routine_envs.plugins.check_plugin_class` of :data:`ESTIMATOR_ATTRIBUTES`."""
    kinds = {"name": str, "trains_critic": bool}
    what = "an advantage estimator"
    plugins.check_plugin_class(cls, where, ESTIMATOR_ATTRIBUTES, what, kinds, BATCH_FIELDS)


def check_estimator_spec(spec: str | plugins.Spec, what: str = "estimator") -> Any:
    """What ``spec`` names (:func:`resolve_estimator`), validated before any run: its JSON
    arguments match the class's signature and types (:func:`check_arguments`); a one-line
    ``ValueError`` naming the spec (``what``: the parameter) and the argument."""
    parsed = spec if isinstance(spec, plugins.Spec) else plugins.parse_spec(spec, what)
    found = resolve_estimator(parsed.target)
    check_arguments(
        found, parsed.kwargs, plugins.arguments_label(what, parsed.target, parsed.text), True
    )
    return found


def resolve_estimator(target: str) -> type | AdvantageEstimator:
    """The estimator class (or ready object) that ``target`` names: a registry name, or an
    import path ``"package.module:Name"`` to outside code (imported here, so a worker process
    that resolves the same text imports it too). ``ValueError`` naming ``target`` when it is
    unknown, cannot be imported or is not an estimator (a class is checked too:
    :func:`check_estimator_class`)."""
    if plugins.is_import_path(target):
        obj = plugins.load_object(target, "estimator")
    else:
        obj = estimator_class(target)
    where = f"estimator {plugins.brief(target)}"
    if isinstance(obj, type):
        check_estimator_class(obj, where)
    else:
        check_estimator_object(obj, where)
    return obj


def build_estimator(
    spec: EstimatorSpec, context: EstimatorContext | None = None, **kwargs: Any
) -> AdvantageEstimator:
    """An estimator from ``spec`` and what ``context`` offers, with constructor ``kwargs``.

    ``spec`` is a registry name or an import path ``"package.module:Name"`` (text, optionally
    followed by JSON keyword arguments, which ``kwargs`` override; resolved by
    :func:`resolve_estimator`), a class, or an instance (returned as is; no keyword arguments
    then). A class is built with its ``from_context(context, **kwargs)`` classmethod when it has
    one (every estimator of this module, and any class using the :class:`FromContext` mixin),
    else with ``cls(**kwargs)``. The JSON arguments are checked as data, ``kwargs`` as Python
    values, against the class's signature and type hints
    (:func:`check_arguments`), so
    ``build_estimator("gigpo", omega="x")`` is refused before anything is built.

    Raises:
        ValueError: an unknown name, an import that fails, a wrong keyword or type, something
            that is not an estimator, or an estimator that cannot be built from ``context``.
    """
    text, data = None, {}
    if isinstance(spec, str):
        parsed = plugins.parse_spec(spec, "estimator")
        text, data, label = parsed.text, parsed.kwargs, parsed.target
        spec = resolve_estimator(parsed.target)
    else:
        label = getattr(spec, "name", None) if isinstance(spec, type) else None
        label = label if isinstance(label, str) else getattr(spec, "__name__", repr(spec))
    where = f"estimator {plugins.brief(text)}" if text is not None else plugins.brief(spec)
    if not isinstance(spec, type):
        if not isinstance(spec, AdvantageEstimator):
            check_estimator_object(spec, where)
            raise ValueError(f"{where} is not an AdvantageEstimator")
        if kwargs or data:
            names = plugins.brief(sorted({**data, **kwargs}), 200)
            raise ValueError(f"keyword arguments {names} given with an estimator object")
        check_estimator_object(spec, where)
        return spec
    check_estimator_class(spec, where)
    bad = plugins.arguments_label("estimator", label, text)
    check_arguments(spec, data, bad, from_data=True)
    check_arguments(spec, kwargs, bad, from_data=False)
    estimator = build_from_context(spec, context, {**data, **kwargs})
    check_estimator_object(estimator, f"{where}: {spec.__name__}(...), what it builds,")
    return estimator


def check_advantages(result: Any, name: str) -> None:
    """``ValueError`` naming estimator ``name``, the field and the first step that is not
    finite, when an array of what it returned is not (``advantages``, ``returns``: every field
    of the :class:`Advantages`, or subclass, it returned; ``None`` and integer fields pass).
    Checked as soon as an estimator returns (its :class:`DeclaredEstimator` record), so NaN
    advantages are named there rather than failing far away (``probs must be finite``).

    Its cost: one ``np.isfinite(a).all()`` per array (measured: 3 us for the advantages of
    2,048 steps, 5 us with return targets, against about 35 ms for an iteration of the batched
    trainer on Diluted Doors: 0.01%); the step is only looked for when something is not
    finite."""
    if dataclasses.is_dataclass(result):
        names = [f.name for f in dataclasses.fields(result)]
    else:
        names = ["advantages", "returns"]
    for field_name in names:
        value = getattr(result, field_name, None)
        if value is None:
            continue
        array = np.asarray(value)
        if array.dtype.kind not in "fc":
            if array.dtype.kind != "O":
                continue  # integers and booleans are finite
            try:
                array = array.astype(np.float64)
            except (TypeError, ValueError):
                continue  # not numbers: not this check's business
        if np.isfinite(array).all():
            continue
        bad = np.flatnonzero(~np.isfinite(array.ravel()))
        raise ValueError(
            f"estimator {name!r} returned non-finite {field_name}: {array.ravel()[bad[0]]} at "
            f"step {int(bad[0])} (the first; {len(bad)} of {array.size} not finite)"
        )


@dataclass(frozen=True, eq=False)
class DeclaredEstimator(Declared):
    """An estimator's :class:`~routine_envs.episodes.Declared` record (:func:`declare`): calling
    it calls the estimator on the batch as it may see it, then checks that what it returned is
    finite (:func:`check_advantages`)."""

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        """The estimator's advantages on ``batch`` (its declared fields only), checked finite."""
        result = super().__call__(batch)
        check_advantages(result, self.name)
        return result


def declare(reader: Any, kind: str = "estimator") -> Declared:
    """The :class:`~routine_envs.episodes.Declared` record of ``reader`` (a built estimator, or
    a detector with ``kind="detector"``): its ``name``, ``requires`` (checked: batch field
    names), ``trains_critic`` and ``group_independent`` read once, here, and frozen. Every
    consumer builds a reader then declares it at once and uses only the record from then on
    (call the record to call the reader on the batch as it may see it), so what a reader is
    given, what its source is checked for and the privileged fields its runs record are one set
    whatever its attributes say when read again. An estimator's record also checks what it
    returns (:class:`DeclaredEstimator`). A record is returned as it is."""
    if isinstance(reader, Declared):
        return reader
    name = reader.name
    where = f"{kind} {plugins.brief(name)}"
    requires = reader.requires  # the one read of requires
    plugins.check_requires(requires, BATCH_FIELDS, where)  # a collection of names
    frozen = frozenset(requires)
    record = DeclaredEstimator if kind == "estimator" else Declared
    return record(
        reader,
        str(name),
        frozen,
        kind,
        bool(getattr(reader, "trains_critic", False)),
        bool(getattr(reader, "group_independent", False)),
    )


def build_from_context(
    cls: type, context: EstimatorContext | None, kwargs: Mapping[str, Any], kind: str = "estimator"
) -> Any:
    """``cls.from_context(context, **kwargs)`` where the class has one, else ``cls(**kwargs)``;
    a wrong keyword is a ``ValueError`` naming the ``kind`` (estimator, detector) and its name."""
    context = context or EstimatorContext()
    label = getattr(cls, "name", cls.__name__)
    build = getattr(cls, "from_context", None)
    try:
        return build(context, **kwargs) if build is not None else cls(**kwargs)
    except TypeError as err:
        message = plugins.brief(str(err), 300)
        raise ValueError(f"bad arguments for {kind} {label!r}: {message}") from None


def check_provides(
    estimator: Any, provided: frozenset[str], source: str, kind: str = "estimator"
) -> None:
    """Raise ``ValueError`` when ``estimator`` (an estimator or detector, named by ``kind``)
    requires batch fields that ``source`` (a trainer, the lab's model sampler) cannot provide,
    naming both, before any work."""
    missing = sorted(set(estimator.requires) - set(provided))
    if missing:
        raise ValueError(
            f"{kind} {estimator.name!r} requires batch fields {missing}, which {source} "
            f"does not provide (it provides {sorted(provided)})"
        )


def is_group_independent(estimator: AdvantageEstimator) -> bool:
    """Whether ``estimator`` declares that a group's advantages depend only on that group."""
    return bool(getattr(estimator, "group_independent", False))


def missing_annotations(estimator: AdvantageEstimator, info: Mapping[str, Any]) -> list[str]:
    """The ``info`` keys ``estimator`` needs that an environment's ``info`` (from ``reset``)
    lacks, so a trainer can refuse before any training."""
    return sorted(
        INFO_KEY_OF_FIELD[f]
        for f in estimator.requires
        if f in INFO_KEY_OF_FIELD and INFO_KEY_OF_FIELD[f] not in info
    )
