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

Modules: :mod:`~routine_envs.credit.base` (the interface: :class:`Advantages`,
:class:`EstimatorContext`, :class:`FromContext`, :func:`declare` and the batch checks),
:mod:`~routine_envs.credit.group_baselines` (``trajectory_mc``, ``rloo``, ``routine_masked``,
``gigpo``), :mod:`~routine_envs.credit.critics` (``gae``, ``mc_rollout``, ``oracle``) and
:mod:`~routine_envs.credit.registry` (:data:`ESTIMATORS`, resolving and checking specs,
:func:`build_estimator`). Every name is importable from ``routine_envs.credit`` itself.
"""

from routine_envs.credit.base import (
    BATCH_FIELDS,
    INFO_KEY_OF_FIELD,
    AdvantageEstimator,
    Advantages,
    DeclaredEstimator,
    EstimatorContext,
    FromContext,
    check_advantages,
    check_batch,
    check_independent_groups,
    check_provides,
    declare,
    is_group_independent,
    missing_annotations,
    rollout_scheme,
)
from routine_envs.credit.critics import GAE, MCRollout, Oracle, OracleSource, td_advantages
from routine_envs.credit.group_baselines import (
    GROUP_KEYS,
    RLOO,
    GiGPO,
    RoutineMasked,
    TrajectoryMC,
)
from routine_envs.credit.registry import (
    ARGUMENT_CHECKS,
    BUILD_ARGUMENTS,
    ESTIMATOR_ATTRIBUTES,
    ESTIMATORS,
    EstimatorLike,
    build_estimator,
    build_from_context,
    check_arguments,
    check_estimator_class,
    check_estimator_object,
    check_estimator_spec,
    estimator_class,
    make_estimator,
    resolve_estimator,
)
from routine_envs.episodes import batch_for
from routine_envs.rollouts import (  # the sources of mc_rollout
    BranchedRollouts,
    ModelRollouts,
    PolicyTable,
    RolloutPolicy,
    RolloutSource,
)

__all__ = [
    "ARGUMENT_CHECKS",
    "BATCH_FIELDS",
    "BUILD_ARGUMENTS",
    "ESTIMATORS",
    "ESTIMATOR_ATTRIBUTES",
    "GAE",
    "GROUP_KEYS",
    "INFO_KEY_OF_FIELD",
    "RLOO",
    "AdvantageEstimator",
    "Advantages",
    "BranchedRollouts",
    "DeclaredEstimator",
    "EstimatorContext",
    "EstimatorLike",
    "FromContext",
    "GiGPO",
    "MCRollout",
    "ModelRollouts",
    "Oracle",
    "OracleSource",
    "PolicyTable",
    "RolloutPolicy",
    "RolloutSource",
    "RoutineMasked",
    "TrajectoryMC",
    "batch_for",
    "build_estimator",
    "build_from_context",
    "check_advantages",
    "check_arguments",
    "check_batch",
    "check_estimator_class",
    "check_estimator_object",
    "check_estimator_spec",
    "check_independent_groups",
    "check_provides",
    "declare",
    "estimator_class",
    "is_group_independent",
    "make_estimator",
    "missing_annotations",
    "resolve_estimator",
    "rollout_scheme",
    "td_advantages",
]
