"""The report card's lab: gradient SNR and exact bias at initialisation of every estimator
method, and the advantage probe that tells which methods are one algorithm under the protocol.

Both look at the lowest and the highest density of every setting of a tier, at the uniform
policy (over valid actions), with the estimators built as the protocol's runs build them
(:func:`estimator_arguments`). The probe (:func:`~.merging.probe_advantages`) samples one batch
per density and records, per estimator, which others' advantages are an increasing affine
function of its own there; :func:`~.merging.probe_pairs` turns that into merged rows.

The SNR measurement of a reference is the same for every card (the same episodes, seeded), so
the shipped references carry it: ``LAB.json`` beside them (:func:`write_reference_lab`, listed
in their manifest), each row keyed by :func:`lab_key` (the setting, density, estimator and its
code, and the lab's own code); a card measures only the estimators whose rows are not there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import merging
from baselines.experiments.benchmark.manifest import LAB_FILE
from baselines.experiments.benchmark.privileged import method_label
from baselines.lib import protocol as protocols

LAB_EPISODES = 2000
"""Episodes per density of the lab's SNR measurement (groups of 8)."""
MAX_LAB_BYTES = 5_000_000


def lab_code() -> str:
    """The fingerprint of the code a lab row depends on besides its estimator's: the SNR
    measurement, the model sampler, the episode batch and this module."""
    import sys

    from routine_envs import episodes, sampler, snr
    from routine_envs.plugins import code_fingerprint

    modules = (snr, sampler, episodes, sys.modules[__name__])
    return "+".join(code_fingerprint(m) for m in modules)


def lab_key(
    protocol: protocols.Protocol, setting: protocols.Setting, value: int, method: str
) -> str:
    """A lab row's identity: the setting and density, the method with the estimator arguments
    it trains with and its code fingerprint, the episodes, and :func:`lab_code`."""
    from baselines.lib.specs import parse_method

    spec = parse_method(method)
    identity = spec.identity(estimator_arguments(protocol, setting.section, method))
    return json.dumps(
        [setting.name, value, method, identity, LAB_EPISODES, lab_code()], sort_keys=True
    )


def read_lab(folder: Path) -> dict[str, dict[str, Any]]:
    """The lab rows shipped in ``folder`` by :func:`lab_key` (none when there is no
    ``LAB.json``, or it is not one: the card then measures them itself)."""
    path = folder / LAB_FILE
    if not path.is_file() or path.stat().st_size > MAX_LAB_BYTES:
        return {}
    try:
        data = json.loads(path.read_text())
        return {str(k): dict(v) for k, v in data["rows"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def write_reference_lab(
    protocol: protocols.Protocol, tier: protocols.Tier, methods: list[str], folder: Path
) -> Path:
    """Measure the lab of ``methods`` (the tier's references) and write ``folder/LAB.json``
    (atomically; sorted keys, the same rows give the same bytes); its path."""
    from baselines.lib.results import write_atomic

    rows = lab_rows(protocol, tier, methods, keyed=True)
    table = {r.pop("key"): r for r in rows if "snr" in r}
    for row in table.values():
        for live in ("advantages_affine_to", "privileged", "label"):
            # the probe runs live (it pairs with the card's method); the marks come from the
            # estimators the card builds
            row.pop(live, None)
    path = folder / LAB_FILE
    write_atomic(
        path, json.dumps({"rows": table}, indent=1, sort_keys=True, allow_nan=False) + "\n"
    )
    return path


def estimator_arguments(protocol: protocols.Protocol, section: str, method: str) -> dict[str, Any]:
    """The estimator arguments ``method`` trains with under ``protocol`` in hyperparameter
    ``section`` (a setting's :attr:`~baselines.lib.protocol.Setting.section`): the protocol's
    per-method exception (e.g. ``mc_rollout``'s k = 8), then the spec's own JSON arguments;
    never the shipped configs' (the lab measures what the runs train)."""
    from baselines.lib.specs import parse_method

    spec = parse_method(method)
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
    cache: dict[str, dict[str, Any]] | None = None,
    keyed: bool = False,
) -> list[dict[str, Any]]:
    """One row per estimator method, setting and density (the lowest and the highest of every
    setting, only those on ``env_ids`` when given; ``ppo``, a learned critic, has none): the
    advantage probe's relations (``advantages_affine_to``: ``{other: [c, d]}``, the others whose
    advantages are ``c * this + d`` with ``c > 0`` on the probe batch), whether the protocol
    normalises its advantages per minibatch, whether it trains a critic, the privileged fields
    it reads (``privileged``, its estimator's declared record) and its name with their mark
    (``label``: ``oracle (privileged: state_ids)``, :func:`~.privileged.method_label`, what
    the card's lab table names it by), and with ``measure``
    the gradient SNR per episode, relative bias and cosine at initialisation with their
    jackknife intervals (``measure=False``: the probe only, a fraction of a second per
    density). ``cache`` (:func:`read_lab`): rows measured before, used instead of measuring
    again where their :func:`lab_key` matches; ``keyed``: every row carries its ``key``."""
    import gymnasium as gym
    import numpy as np

    import routine_envs
    from baselines.lib.specs import parse_method
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
                spec = parse_method(method)
                if spec.target == "ppo":
                    continue
                kwargs = estimator_arguments(protocol, setting.section, method)
                built = credit.build_estimator(spec.target, context, **kwargs)
                estimators[method] = credit.declare(built)  # requires read once
            if not estimators:
                continue
            related = merging.probe_advantages(estimators, sampler, probs, values.v)
            keys = {name: lab_key(protocol, setting, value, name) for name in estimators}
            known = {n: (cache or {}).get(k) for n, k in keys.items() if (cache or {}).get(k)}
            todo = {n: e for n, e in estimators.items() if n not in known}
            measured = (
                snr.measure_snr(
                    env,
                    policy,
                    todo,
                    num_groups=LAB_EPISODES // 8,
                    group_size=8,
                    seed=0,
                    sampler=sampler,
                    values=values.v,
                ).results
                if measure and todo
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
                if measure and name in known:
                    row.update({k: v for k, v in known[name].items() if k not in row})
                elif name in measured:
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
                    finite_or_none(row)
                row.update(
                    advantages_affine_to=related[name],
                    normalize_advantage=bool(
                        protocol.method_hyperparameters(
                            setting.section, parse_method(name).target
                        ).get("normalize_advantage")
                    ),
                    trains_critic=estimator.trains_critic,
                    privileged=list(estimator.privileged),
                    label=method_label(name, estimator.privileged),
                )
                if keyed:
                    row["key"] = keys[name]
                rows.append(row)
    return rows


def finite_or_none(row: dict[str, Any]) -> None:
    """Replace the non-finite numbers of a lab row by ``None``, saying why in ``note``: an
    estimator whose gradient has no variance at a density (the perfect critic with one decision
    of two doors: every episode gives the same gradient) has an infinite SNR, which no table or
    JSON file may hold as a number."""
    import math

    bad = [k for k, v in row.items() if isinstance(v, float) and not math.isfinite(v)]
    for key in bad:
        row[key] = None
    if bad:
        row["note"] = (
            "the gradient has no variance here (every episode gives the same one): SNR "
            f"infinite, {', '.join(bad)} not finite and left empty"
        )


def measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of :func:`lab_rows` that carry an SNR measurement (the card's lab table)."""
    return [r for r in rows if "snr" in r]
