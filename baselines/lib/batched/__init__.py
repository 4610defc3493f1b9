"""Batched PPO: many independent runs of one setting trained at once in one process.

The package is named for what it does to runs, not to data: every run (a seed, a density, any
``env_kwargs`` of one environment id) stays an independent PPO run, but R of them share the
process, the native vector envs, the exact models and every matrix product.

## API (what a sweep calls)

::

    from baselines.lib.runs import Run, train

    runs = [Run.of("DilutedDoors-v1", "ppo", {"num_floors": 2, "routine_length": L}, seed,
                   budget=15_000, eval_every=750, trainer="batched")
            for L in (0, 3, 9, 29) for seed in range(10)]
    results = train(runs)   # one baselines.lib.trainers.RunResult per run, in order

- a run is a :class:`baselines.lib.runs.Run` (env id and kwargs, the parsed method, seed,
  budget, evaluation step, target, resolved hyperparameters); :func:`baselines.lib.runs.train`
  hands the runs whose ``trainer`` is ``batched`` to this package.
- :func:`train(runs, progress=False, max_batch=64) -> list[RunResult]`: trains them, batched
  by :func:`group_runs`; each ``RunResult`` has ``timesteps`` (the protocol's grid: 0 and every
  ``eval_every`` up to the budget), ``success`` (exact success probability of the current
  stochastic policy at each point, from the dynamics' model, as ``SuccessCurve`` measures it),
  ``steps_to_target`` (first crossing, interpolated; ``None`` if not reached),
  ``steps_trained`` (whole rollouts), ``hyperparameters``, and ``wall_time``/``cpu_time`` (s):
  the batch's time divided equally among the runs active in each iteration. Bad settings of
  any run raise ``ValueError`` before any training.
- :func:`check(run)`: a one-line ``ValueError`` naming ``--trainer batched`` when a
  run cannot train here (no exact model, a hyperparameter not implemented, an estimator needing
  env snapshots or annotations the env lacks), before anything is built; the sweeps call it
  when they plan.
- :func:`batch_key(run)` / :func:`group_runs(runs, max_batch)`: which runs can share a batch:
  the same env id, method spec and resolved hyperparameters; ``env_kwargs`` (densities,
  observation modes), seeds, budgets and schedules may differ.
- ``python -m baselines train --trainer batched ...`` trains one run (R = 1) this way;
  ``compare``, ``multiagent`` and ``benchmark run --trainer batched`` train their sweeps this
  way, the runs of one env id, method and hyperparameters in one worker call
  (``baselines.lib.runs.BATCHING``, ``baselines.lib.runner.Batching``).

## What is the same as SB3 (the protocol's algorithm)

``ppo``: SB3 ``PPO`` (``MaskablePPO`` where the env has action masks): ``n_envs`` envs stepped
``n_steps`` times per rollout, episodes continuing across rollouts, time-limit truncations
bootstrapped from ``V(final obs)``, GAE(lambda) with SB3's bookkeeping, separate policy and
value MLPs (``net_arch``, tanh) with orthogonal init (gains sqrt(2), 0.01, 1), ``n_epochs`` over
minibatches of ``batch_size`` from a fresh permutation, clipped surrogate, unclipped value loss
times ``vf_coef``, entropy bonus, advantages normalised per minibatch, gradient clipping of the
global norm at ``max_grad_norm``, Adam with eps 1e-5. Estimator methods:
``TrajectoryAdvantagePPO``: groups of ``n_envs`` episodes from one reset seed until
``n_steps * n_envs`` steps, the estimator's advantages on an ``EpisodeBatch`` with the fields it
``requires`` (built by ``routine_envs.credit.build_estimator`` from an ``EstimatorContext``: the
env, the policy table on demand, gamma, GAE lambda, a model sampler, the run's seed), the
critic-free path (no value net trained, targets 0), no minibatch of one step.

## Where it differs from SB3 by design

- Random streams: each run draws from its own generators (``streams.RunStreams``: init, action
  uniforms, shuffling, group seeds), so a run gives bit-identical results alone and inside any
  batch; they are not SB3's streams, so a run is not SB3's run of that seed (equal in
  distribution). Actions are drawn by inverse CDF from float64 uniforms.
- Arithmetic: a hand-written backward pass; ``tanh`` by numpy; one-column products (the value
  head) as row sums; Adam's bias-corrected step applied per run in float32; on configurations
  with few decision states (:mod:`.tabular`) the networks run once per state and the loss's
  per-step gradients are summed per state before the backward pass: rounding-level
  differences from torch's.
- Critic-free estimators build no value network (SB3 keeps one whose gradient is exactly 0).
- The evaluation is always exact: environments without a model are refused (``--trainer sb3``
  samples episodes there). ``mc_rollout`` simulates its rollouts on the model (a model sampler
  is in the context); branched rollouts (``source: branch``, snapshots) are refused: the
  sub-environments are rows of a vector env, not objects to copy.
- Not implemented (refused by name): schedules, ``target_kl``, ``clip_range_vf``, SDE, other
  activations, optimisers or policy kwargs, TensorBoard logs.
- ``policy: transformer`` (:mod:`.transformer`) is the paper's causal Transformer over the turn
  history, for environments whose states each have one history.

Modules: :mod:`.api` (the entry points), :mod:`.settings` (hyperparameters), :mod:`.envs`
(configurations shared by runs), :mod:`.rollouts` (collection), :mod:`.acting` (the policy
during a rollout), :mod:`.mlp` (stacked MLPs), :mod:`.tabular` (the networks on every decision
state at once, for configurations with few), :mod:`.update` (PPO's loss and minibatches),
:mod:`.optim` (Adam, clipping), :mod:`.evaluation` (exact success probabilities of many
policies in one pass), :mod:`.trainer` (the loop), :mod:`.transformer`, :mod:`.streams`.
Documentation: ``docs/batched.md``.
"""

from baselines.lib.batched.api import batch_key, check, group_runs, train

__all__ = ["batch_key", "check", "group_runs", "train"]
