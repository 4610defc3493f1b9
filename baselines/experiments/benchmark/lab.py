"""The report card's lab: gradient SNR and exact bias at initialisation of every estimator
method, and the advantage probe that tells which methods are one algorithm under the protocol.

Both look at the lowest and the highest density of every setting of a tier, at the uniform
policy (over valid actions), with the estimators built as the protocol's runs build them
(:func:`estimator_arguments`). The probe (:func:`~.merging.probe_advantages`) samples one batch
per density and records, per estimator, which others' advantages are an increasing affine
function of its own there; :func:`~.merging.probe_groups` turns that into merged rows.
"""

from __future__ import annotations

from typing import Any

from baselines.experiments.benchmark import merging
from baselines.lib import protocol as protocols

LAB_EPISODES = 2000
"""Episodes per density of the lab's SNR measurement (groups of 8)."""


def estimator_arguments(protocol: protocols.Protocol, section: str, method: str) -> dict[str, Any]:
    """The estimator arguments ``method`` trains with under ``protocol`` in hyperparameter
    ``section`` (a setting's :attr:`~baselines.lib.protocol.Setting.section`): the protocol's
    per-method exception (e.g. ``mc_rollout``'s k = 8), then the spec's own JSON arguments;
    never the shipped configs' (the lab measures what the runs train)."""
    from baselines.lib.config import check_method

    spec = check_method(method)
    return {
        **protocol.method_hyperparameters(section, spec.target).get("estimator_kwargs", {}),
        **spec.kwargs,
    }


def lab_rows(
    protocol: protocols.Protocol,
    tier: protocols.Tier,
    methods: list[str],
    env_ids: list[str] | None = None,
    measure: bool = True,
) -> list[dict[str, Any]]:
    """One row per estimator method, setting and density (the lowest and the highest of every
    setting, only those on ``env_ids`` when given; ``ppo``, a learned critic, has none): the
    advantage probe's relations (``advantages_affine_to``: ``{other: [c, d]}``, the others whose
    advantages are ``c * this + d`` with ``c > 0`` on the probe batch), whether the protocol
    normalises its advantages per minibatch, whether it trains a critic, and with ``measure``
    the gradient SNR per episode, relative bias and cosine at initialisation with their
    jackknife intervals (``measure=False``: the probe only, a fraction of a second per
    density)."""
    import gymnasium as gym
    import numpy as np

    import routine_envs
    from baselines.lib.config import check_method
    from routine_envs import credit, snr
    from routine_envs.sampler import ModelSampler

    gym.register_envs(routine_envs)
    rows = []
    for setting in tier.settings:
        if env_ids and setting.env_id not in env_ids:
            continue
        for value in sorted({min(setting.values), max(setting.values)}):
            env = gym.make(
                setting.env_id, **{**setting.env_kwargs, setting.density_kwarg: value}
            ).unwrapped
            table = env.masked_uniform_policy()
            with np.errstate(divide="ignore"):
                policy = snr.TabularSoftmax.per_state(
                    env.num_states, env.num_actions, np.log(table)
                )
            probs = policy.probs()
            sampler = ModelSampler(env)
            values = env.oracle(probs)
            context = credit.EstimatorContext(
                env=env, policy_table=probs, sampler=sampler, gamma=1.0, gae_lambda=0.95, seed=0
            )
            estimators = {}
            for method in methods:
                spec = check_method(method)
                if spec.target == "ppo":
                    continue
                kwargs = estimator_arguments(protocol, setting.section, method)
                estimators[method] = credit.build_estimator(spec.target, context, **kwargs)
            if not estimators:
                continue
            related = merging.probe_advantages(estimators, sampler, probs, values.v)
            measured = (
                snr.measure_snr(
                    env,
                    policy,
                    estimators,
                    num_groups=LAB_EPISODES // 8,
                    group_size=8,
                    seed=0,
                    sampler=sampler,
                    values=values.v,
                ).results
                if measure
                else {}
            )
            scale = 1 / np.sqrt(8)
            for name, estimator in estimators.items():
                row: dict[str, Any] = {
                    "setting": setting.name,
                    "density_value": value,
                    "rho": float(env.decision_density),
                    "estimator": name,
                }
                if name in measured:
                    res = measured[name]
                    row.update(
                        snr=res.snr * scale,
                        snr_low=res.snr_low * scale,
                        snr_high=res.snr_high * scale,
                        relative_bias=res.relative_bias,
                        relative_bias_low=res.relative_bias_low,
                        relative_bias_high=res.relative_bias_high,
                        cosine=res.cosine,
                        cosine_low=res.cosine_low,
                        cosine_high=res.cosine_high,
                        cosine_raw=res.cosine_raw,
                        episodes=LAB_EPISODES,
                    )
                row.update(
                    advantages_affine_to=related[name],
                    normalize_advantage=bool(
                        protocol.method_hyperparameters(
                            setting.section, check_method(name).target
                        ).get("normalize_advantage")
                    ),
                    trains_critic=bool(getattr(estimator, "trains_critic", False)),
                )
                rows.append(row)
    return rows


def measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of :func:`lab_rows` that carry an SNR measurement (the card's lab table)."""
    return [r for r in rows if "snr" in r]
