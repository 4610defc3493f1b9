"""Decision-density diagnosis: estimate rho for any branchable Gymnasium environment.

``rho`` is the share of steps whose action can change the expected return (critical steps over
episode length). :func:`diagnose` estimates it *without annotations*, from the environment's
behaviour alone:

1. **Sampling.** Episodes are played from ``reset(seed=...)`` under the policy (uniform random
   by default; ``policy=`` takes a stable-baselines3 model, a callable observation -> action
   probabilities or a spec, see :func:`as_policy`) until at least ``num_states`` states have been
   visited; every state in which an action is taken is tested, so the estimate is the share of
   *steps* that are critical. Whole episodes are kept (the last one is finished), so an
   environment whose episodes all have the same density is estimated without a partial-episode
   bias.
2. **Branching.** At each sampled state, ``num_rollouts`` times: ``copy.deepcopy`` the
   environment, give the copy's ``env.unwrapped.np_random`` a fresh seed for this rollout (so
   rollouts see independent environment randomness), then branch that copy into every action and
   continue each branch to the end of the episode under the continuation policy. Within a rollout
   every action sees the same environment generator and the same policy generator: *common random
   numbers*, so an action that does not matter gives exactly the same path and the same return.
3. **Test.** ``G[a, i]`` is the undiscounted return from the state after action ``a`` in rollout
   ``i``. For each action ``a`` other than the reference (the first action) the paired differences
   ``D_a = G[a] - G[ref]`` (``num_rollouts`` of them) are tested for zero mean with a two-sided
   paired Student t-test, its p-value floored at ``2^(1 - n)`` (the smallest an exact sign-flip
   test gives with ``n`` pairs; this also covers a constant non-zero difference, where t is
   infinite); the state's p-value is the smallest, times ``A - 1`` (Bonferroni), and the state
   is *critical* when it is ``<= alpha``. Differences that are all exactly zero (the paths
   coincide) give p = 1. So ``num_rollouts >= 1 + log2((A - 1) / alpha)`` is needed (9 for three
   actions at alpha = 0.01); fewer is refused.

Assumptions of the test (see ``docs/diagnose.md``):

- ``copy.deepcopy(env)`` branches the episode (same state, same future for the same actions),
  and the environment draws its randomness from ``env.unwrapped.np_random`` (Gymnasium's
  convention). Randomness from anywhere else is repeated identically across rollouts, which
  makes the rollouts dependent and the test anti-conservative.
- The return is measured under the continuation policy: "critical" means ``Q^pi(s, .)`` is not
  constant for that policy, which for a policy giving every action positive probability is the
  suite's definition (the optimal action gap is positive) in every environment of the suite.
- The t-test is exact for normally distributed differences and approximate otherwise; with few
  rollouts and skewed returns its level is approximate. Its power is limited: a state where the
  action changes the expected return by less than the test can detect with ``num_rollouts``
  rollouts is classified *routine*. :attr:`DiagnosisResult.mde` reports the minimum detectable
  effect (80 % power), so rho is an estimate of the share of steps with an effect above it.
  A routine state is flagged critical with probability at most ``alpha`` (where the test's
  level holds), so false positives add at most ``alpha * (1 - rho)`` to rho in expectation; a
  routine state whose branches coincide exactly is never flagged.

The confidence interval is a **cluster-robust Wilson score interval**: the Wilson interval for a
proportion, computed on the effective number of states ``n / deff``, where the design effect
``deff >= 1`` is the ratio of the cluster-robust (episodes as clusters, linearized ratio
estimator) variance of rho to the binomial one. States from one episode are correlated; the
interval accounts for it, and unlike an episode bootstrap it does not collapse to a point when
rho is 0 or 1 or when every episode has the same density. It covers the sampling of states only,
not the test's errors.

Modules: :mod:`~routine_envs.diagnose.algorithm` (sampling, branching, :func:`diagnose`),
:mod:`~routine_envs.diagnose.policies` (the policy it runs under, :func:`as_policy`),
:mod:`~routine_envs.diagnose.statistics` (the test, the minimum detectable effect, the interval),
:mod:`~routine_envs.diagnose.results` (result types), :mod:`~routine_envs.diagnose.report` (the
reading and the text report) and :mod:`~routine_envs.diagnose.cli` (``python -m routine_envs
diagnose``).

Needs the ``diagnose`` extra (scipy for the t and normal distributions, tqdm for the progress
bar), which the core package does not: ``pip install "routine-envs[diagnose]"``.
"""

try:  # the diagnose extra, before the modules that use it: fail with how to install it
    import scipy.stats  # noqa: F401
    import tqdm  # noqa: F401
except ImportError as error:
    raise ImportError(
        f"routine_envs.diagnose needs {(error.name or 'scipy').split('.')[0]}: "
        'pip install "routine-envs[diagnose]"'
    ) from error

from routine_envs.diagnose.algorithm import ContinuationPolicy, branch, check_arguments, diagnose
from routine_envs.diagnose.cli import DiagnoseSettings, run
from routine_envs.diagnose.policies import (
    DiagnosisPolicy,
    ModelPolicy,
    ProbabilityPolicy,
    UniformPolicy,
    as_policy,
    check_probabilities,
    load_model,
    policy_name,
    with_action_mask,
)
from routine_envs.diagnose.report import format_result, reading
from routine_envs.diagnose.results import (
    Agreement,
    DiagnosisResult,
    MinimumDetectableEffect,
    StateRecord,
)
from routine_envs.diagnose.statistics import (
    MDE_POWER,
    ActionTest,
    action_dependence_test,
    cluster_wilson_interval,
    min_rollouts,
    minimum_detectable_effect,
    smallest_p_value,
    t_two_sided_p,
)

__all__ = [
    "MDE_POWER",
    "ActionTest",
    "Agreement",
    "ContinuationPolicy",
    "DiagnoseSettings",
    "DiagnosisPolicy",
    "DiagnosisResult",
    "MinimumDetectableEffect",
    "ModelPolicy",
    "ProbabilityPolicy",
    "StateRecord",
    "UniformPolicy",
    "action_dependence_test",
    "as_policy",
    "branch",
    "check_arguments",
    "check_probabilities",
    "cluster_wilson_interval",
    "diagnose",
    "format_result",
    "load_model",
    "min_rollouts",
    "minimum_detectable_effect",
    "policy_name",
    "reading",
    "run",
    "smallest_p_value",
    "t_two_sided_p",
    "with_action_mask",
]
