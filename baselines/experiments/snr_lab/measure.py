"""The open lab: ``python -m baselines snr_lab measure --env-id CodeFix-v1 --estimators ...``.

Gradient SNR, exact relative bias, cosine to the exact gradient and MSE of any estimators
(built-in names, lab labels such as ``trajectory_exact`` or ``oracle:0.5``, or import paths
``package.module:Name`` of your own, each optionally with JSON arguments), on any registered
environment with an exact model, at several values of its density keyword, under a chosen
policy:

- ``uniform`` (over the valid actions where the env has action masks);
- ``random`` with JSON arguments ``{"seed": 3, "scale": 1.0}``: logits drawn ``N(0, scale^2)``
  per state (masked where the env has masks);
- ``mixture`` with JSON arguments ``{"eps": 0.3}``: ``(1 - eps) optimal + eps uniform`` (a
  stand-in for a partly trained policy; ``optimal`` greedy in the exact ``Q*``);
- a ``.npy`` file holding a table of action probabilities ``(num_states, num_actions)``;
- a ``.zip`` of a trained SB3 policy: the network's gradient through its Jacobian (norms in
  the metric ``J J^T``; envs without action masks).

One job per density value, each measuring every estimator on the same episodes sampled from the
exact model; results go to ``<out>/results.jsonl`` (resumable), then ``measure.csv``,
``measure.md``, ``measure.png`` and ``summary.json``. Relative bias and cosine are estimates,
shown with their 95% jackknife intervals; every table shows the cosine clipped to [-1, 1], and
the JSON records keep the raw estimate (``cosine_raw``, which can exceed 1: see
:attr:`routine_envs.snr.SNRResult.cosine_raw`). Estimators that need values (``gae``) get the exact
``V^pi``: named so in the output (``values: exact V^pi``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import routine_envs
from baselines.experiments.snr_lab import analysis
from baselines.experiments.snr_lab.records import MeasureRecord
from baselines.lib import cli, provenance
from baselines.lib.backend import BackendArgs
from baselines.lib.experiment import Experiment, run_experiment
from baselines.lib.lab import closed_form_bias, estimator_code, lab_estimator, lab_policy
from baselines.lib.tables import format_table, write_csv
from routine_envs import credit, snr
from routine_envs.oracle import return_moments
from routine_envs.policy_specs import parse_policy
from routine_envs.sampler import ModelSampler

gym.register_envs(routine_envs)


@dataclass
class MeasureArgs(BackendArgs):
    """Gradient SNR, exact bias, cosine and MSE of any estimators on any environment."""

    env_id: str = field(
        default="DilutedDoors-v1",
        metadata={"help": "registered env id with an exact model"},
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "fixed gym.make keyword arguments (JSON)"}
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [0, 3, 15],
        metadata={
            "help": "values of the env's density keyword (routine_length for Diluted Doors and "
            "CodeFix, corridor_length for RoutineGrid)",
            "min": 0,
        },
    )
    estimators: list[str] = field(
        default_factory=lambda: ["trajectory_mc", "rloo", "gigpo", "oracle", "gae"],
        metadata={
            "help": "estimator names, lab labels (trajectory_exact, oracle:C, mc_rollout:K) or "
            "import paths 'package.module:Name', each optionally with JSON arguments"
        },
    )
    reference: str = field(
        default="",
        metadata={"help": "the estimator SNR ratios are taken against (default: the first)"},
    )
    policy: str = field(
        default="uniform",
        metadata={
            "help": "the policy whose gradient is estimated: 'uniform', "
            '\'random{"seed": 0, "scale": 1.0}\', \'mixture{"eps": 0.3}\' ((1 - eps) optimal '
            "+ eps uniform), a .npy probability table or an SB3 .zip"
        },
    )
    episodes: int = field(default=40_000, metadata={"help": "episodes per setting", "min": 1})
    group_size: int = field(default=8, metadata={"help": "episodes per group", "min": 2})
    seed: int = field(default=0, metadata={"help": "seed of the episodes and critics", "min": 0})
    workers: int = field(default=2, metadata={"help": "settings measured in parallel", "min": 1})
    out: Path = field(default=Path("results/snr/measure"), metadata={"help": "output folder"})


# ------------------------------------------------------------------------------- policies
def policy_identity(text: str) -> dict[str, Any]:
    """What the policy spec ``text`` stands for in a run key (the one policy grammar,
    :func:`routine_envs.policy_specs.parse_policy`: the spec, a file's hash, outside code's
    fingerprint)."""
    return parse_policy(text).identity


# ------------------------------------------------------------------------------- a setting
def make_env(setting: dict[str, Any]) -> Any:
    """The setting's environment, unwrapped."""
    kwargs = {**setting["env_kwargs"], setting["density_kwarg"]: setting["density_value"]}
    return gym.make(setting["env_id"], **kwargs).unwrapped


def measure_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """One density value (a worker's job): every estimator on the same episodes."""
    start = time.perf_counter()
    env = make_env(setting)
    policy, metric = lab_policy(env, setting["policy"]["spec"])
    probs = policy.probs()
    values = env.oracle(probs)
    j = float(env.model().initial @ values.v)
    seed = setting["seed"]
    sampler = ModelSampler(env)
    # the unit of oracle:C's noise (sigma = C std(R)), exact from the model (it was a 4,096-
    # episode pilot's, whose error moved every noisy-critic ratio by a few percent)
    _, std_r = return_moments(env.model(), probs)
    context = credit.EstimatorContext(
        env=env, policy_table=probs, sampler=sampler, gamma=1.0, gae_lambda=0.95, seed=seed
    )
    exact = {"J": j, "std_R": std_r}
    built = {name: lab_estimator(name, context, exact) for name in setting["estimators"]}
    trees = {n: e for n, e in built.items() if credit.rollout_scheme(e) is not None}
    estimators = {n: e for n, e in built.items() if n not in trees}
    if setting["reference"] in trees:
        raise ValueError(
            f"--reference {setting['reference']!r} samples by tree rollouts: the ratios are to "
            "an estimator of independent episodes"
        )
    comparison = snr.measure_snr(
        env,
        policy,
        estimators,
        num_groups=setting["episodes"] // setting["group_size"],
        group_size=setting["group_size"],
        seed=seed,
        sampler=sampler,
        metric=metric,
        values=values.v,
        chunk_groups=512 if metric is not None else 4096,
    )
    scale = 1 / math.sqrt(setting["group_size"])  # SNR per episode
    rows = []
    for name, res in comparison.results.items():
        row = {k: v for k, v in res.as_row().items() if k not in ("num_groups", "group_size")}
        row.update(snr=res.snr * scale, snr_low=res.snr_low * scale, snr_high=res.snr_high * scale)
        closed = None  # with a metric (a network) the bias is not in the tabular norm
        if metric is None:
            closed = closed_form_bias(estimators[name], env, policy, setting["group_size"])
        row.update(closed or dict.fromkeys(CLOSED_FORM_FIELDS))
        row["snr_exact"] = exact_snr(
            name, env, policy, values.advantage, j, metric, std_r, setting["group_size"]
        )
        rows.append(row)
    reference = setting["reference"]
    ratios = {f"{a}/{b}": list(v) for (a, b), v in comparison.ratios.items() if b == reference}
    by_name = {r["estimator"]: r for r in rows}
    for name, estimator in trees.items():
        row = tree_row(env, policy, name, estimator, setting, metric, values.v)
        rows.append(row)
        ratios[f"{name}/{reference}"] = independent_ratio(row, by_name[reference])
    return {
        **setting,
        "rho": float(env.decision_density),
        "J": j,
        "std_R": std_r,
        "results": rows,
        "ratios": ratios,
        "seconds": time.perf_counter() - start,
    }


EXACT_NOISE = ("oracle", "trajectory_exact")
"""Lab label kinds whose noise has an exact value (:mod:`routine_envs.exact_noise`): the
perfect critic (``oracle``, and the noisy ``oracle:C``) and the trajectory advantage with the
exact baseline ``J``."""


def exact_snr(
    label: str,
    env: Any,
    policy: snr.TabularSoftmax,
    advantage: np.ndarray,
    j: float,
    metric: np.ndarray | None,
    std_r: float,
    group_size: int,
) -> float | None:
    """The exact SNR per episode of the estimator ``label`` (of a kind of :data:`EXACT_NOISE`,
    else ``None``), as the lab reports it: its groups of ``group_size`` episodes share their
    initial state, and the SNR per episode is the group's over ``sqrt(group_size)``; the noise
    by dynamic programming on the exact model, no sampling (``oracle:C``: sigma ``C std_r``,
    as the lab builds it)."""
    from routine_envs import exact_noise

    kind, _, arg = label.partition(":")
    if kind == "oracle":
        sigma = float(arg or 0) * std_r
        moments = exact_noise.perfect_critic_moments(env.model(), policy, advantage, metric, sigma)
    elif label == "trajectory_exact":
        moments = exact_noise.trajectory_moments(env.model(), policy, j, metric)
    else:
        return None
    return moments.group_snr(group_size) / math.sqrt(group_size)


def tree_row(
    env: Any,
    policy: snr.TabularSoftmax,
    name: str,
    estimator: Any,
    setting: dict[str, Any],
    metric: np.ndarray | None,
    values: np.ndarray,
) -> dict[str, Any]:
    """The lab row of an estimator that samples by tree rollouts, measured on groups sampled
    its way (:class:`~routine_envs.tree_sampler.TreeSampler`, about ``episodes`` leaves) at
    equal environment steps: its SNR is the group's times ``sqrt(mean leaf length / distinct
    steps per group)``, an episode's worth of steps, which for independent groups is exactly
    the lab's SNR per episode (the SNR's square grows linearly with independent samples).
    ``steps_per_group``, ``leaves_per_group`` and ``mean_leaf_length`` say what it cost."""
    from routine_envs.tree_sampler import TreeSampler

    scheme = credit.rollout_scheme(estimator)
    sampler = TreeSampler(env, scheme)
    groups = max(setting["episodes"] // scheme.group_size, 40)  # the jackknife's 40 groups
    result = snr.measure_snr(
        env,
        policy,
        {name: estimator},
        num_groups=groups,
        group_size=scheme.group_size,
        seed=setting["seed"],
        sampler=sampler,
        metric=metric,
        chunk_groups=512 if metric is not None else 4096,
        values=values,
    ).results[name]
    steps_per_group = sampler.steps_taken / groups
    mean_length = sampler.leaf_steps / sampler.episodes_sampled
    scale = math.sqrt(mean_length / steps_per_group)
    row = {k: v for k, v in result.as_row().items() if k not in ("num_groups", "group_size")}
    row.update(
        snr=result.snr * scale,
        snr_low=result.snr_low * scale,
        snr_high=result.snr_high * scale,
        sampling=f"tree rollouts: {scheme.trees} trees x {scheme.branches}^{scheme.depth} leaves",
        steps_per_group=steps_per_group,
        leaves_per_group=scheme.group_size,
        mean_leaf_length=mean_length,
        **dict.fromkeys(CLOSED_FORM_FIELDS),
        snr_exact=None,
    )
    return row


def independent_ratio(row: dict[str, Any], reference: dict[str, Any]) -> list[float]:
    """``[ratio, low, high]`` of two SNRs measured on different episodes (a tree method's and
    the reference's): the point ratio, and an approximate 95% interval from the two jackknife
    intervals as independent errors on the log scale (each interval's half-width in log,
    added in quadrature)."""
    ratio = row["snr"] / reference["snr"]

    def half_width(r: dict[str, Any]) -> float:
        if r["snr_low"] <= 0:
            return math.inf
        return (math.log(r["snr_high"]) - math.log(r["snr_low"])) / 2

    width = math.hypot(half_width(row), half_width(reference))
    return [ratio, ratio * math.exp(-width), ratio * math.exp(width)]


CLOSED_FORM_FIELDS = ("relative_bias_closed_form", "cosine_closed_form")
"""Per result, the exact relative bias and cosine where the estimator has a closed form of its
expected gradient (:func:`baselines.lib.lab.closed_form_bias`), else ``None``."""

KEY_FIELDS = (
    "env_id",
    "env_kwargs",
    "density_kwarg",
    "density_value",
    "policy",
    "estimators",
    "reference",
    "episodes",
    "group_size",
    "seed",
    "code",
    "versions",
)
"""What a measurement depends on: the env and its density value, the policy (spec and file
hash), the estimators (specs and code), the sample, the seed and the package versions."""


def setting_key(setting: dict[str, Any]) -> str:
    """The identity of a setting: every field of :data:`KEY_FIELDS`, as canonical JSON."""
    return json.dumps({k: setting[k] for k in KEY_FIELDS}, sort_keys=True)


def plan(args: MeasureArgs) -> list[dict[str, Any]]:
    """Every setting, validated before any work (``ValueError`` naming the flag)."""
    from routine_envs.registration import entry

    for name in ("routine_lengths", "estimators"):
        if not getattr(args, name):
            raise ValueError(f"--{name.replace('_', '-')} must not be empty")
        cli.check_unique(name, getattr(args, name))
    if args.episodes < 40 * args.group_size:  # the jackknife needs 40 groups
        raise ValueError(f"--episodes must be >= 40 * --group-size = {40 * args.group_size}")
    try:
        density_kwarg = entry(args.env_id).density_kwarg
    except (KeyError, ValueError):
        raise ValueError(f"--env-id {args.env_id!r} is not a registered id of the suite") from None
    if density_kwarg is None:
        raise ValueError(f"--env-id {args.env_id}: no keyword argument sets its decision density")
    if density_kwarg in args.env_kwargs:
        raise ValueError(f"--env-kwargs sets {density_kwarg}, which --routine-lengths sweeps")
    reference = args.reference or args.estimators[0]
    if reference not in args.estimators:
        raise ValueError(f"--reference {reference!r} is not among --estimators")
    policy = policy_identity(args.policy)
    probe = {
        "env_id": args.env_id,
        "env_kwargs": args.env_kwargs,
        "density_kwarg": density_kwarg,
        "density_value": args.routine_lengths[0],
    }
    env = make_env(probe)  # bad kwargs fail here
    for value in args.routine_lengths:  # a bad policy (or one that fits no env) fails here
        lab_policy(make_env({**probe, "density_value": value}), args.policy)
    sampler_context = credit.EstimatorContext(
        env=env,
        policy_table=np.full((env.num_states, env.num_actions), 1 / env.num_actions),
        sampler=ModelSampler(env),
        gamma=1.0,
        gae_lambda=0.95,
        seed=args.seed,
    )
    for name in args.estimators:  # unknown names, failed imports, missing fields fail here
        estimator = lab_estimator(name, sampler_context, {"J": 0.5, "std_R": 0.5})
        credit.check_provides(
            estimator, ModelSampler.PROVIDES | {"values"}, "the SNR lab's model sampler"
        )
    code = {name: estimator_code(name) for name in args.estimators}
    code["measure_setting"] = provenance.code_fingerprint(measure_setting)
    versions = provenance.versions()
    return [
        {
            **probe,
            "density_value": int(value),
            "policy": policy,
            "estimators": list(args.estimators),
            "reference": reference,
            "episodes": args.episodes,
            "group_size": args.group_size,
            "seed": args.seed,
            "code": code,
            "versions": versions,
        }
        for value in args.routine_lengths
    ]


def flat_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (setting, estimator), with the ratio of its SNR to the reference's."""
    rows = []
    for rec in records:
        for res in rec["results"]:
            ratio = rec["ratios"].get(f"{res['estimator']}/{rec['reference']}", [1.0, 1.0, 1.0])
            rows.append(
                {
                    "env_id": rec["env_id"],
                    rec["density_kwarg"]: rec["density_value"],
                    "rho": rec["rho"],
                    "policy": rec["policy"]["spec"],
                    **analysis.table_fields(res),
                    "ratio_to_reference": ratio[0],
                    "ratio_low": ratio[1],
                    "ratio_high": ratio[2],
                    "episodes": rec["episodes"],
                    "group_size": rec["group_size"],
                    "seed": rec["seed"],
                }
            )
    return rows


def main(args: MeasureArgs) -> dict[str, Any]:
    """Measure what is missing, write the table, the figure and the summary; return it."""
    settings = plan(args)
    records = run_experiment(EXPERIMENT, args, settings)
    rows = flat_rows(records)
    write_csv(args.out / "measure.csv", rows)
    density_kwarg = settings[0]["density_kwarg"]
    table = analysis.estimate_rows(rows, density_kwarg)
    (args.out / "measure.md").write_text(
        f"{args.env_id}, policy {args.policy}, {args.episodes} episodes per setting, groups of "
        f"{args.group_size}, seed {args.seed}; {analysis.ESTIMATE_NOTE}.\n\n"
        + analysis.markdown_table(table)
    )
    analysis.plot_measure(rows, args.out / "measure.png", f"{args.env_id}, policy {args.policy}")
    summary = {
        "env_id": args.env_id,
        "env_kwargs": args.env_kwargs,
        "density_kwarg": settings[0]["density_kwarg"],
        "policy": settings[0]["policy"],
        "estimators": list(args.estimators),
        "reference": settings[0]["reference"],
        "episodes": args.episodes,
        "group_size": args.group_size,
        "seed": args.seed,
        "values": "exact V^pi (for estimators that read values, e.g. gae)",
        "snr_unit": "per episode (a batch of one group, divided by sqrt(group_size))",
        "mse_unit": "E||g - grad J||^2 for a batch of one group",
        "estimates": analysis.ESTIMATE_NOTE,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    print(format_table(table))
    print(f"({analysis.ESTIMATE_NOTE})")
    print(f"\nwrote {args.out}/: results.jsonl, measure.csv, measure.md, measure.png, summary.json")
    return {"summary": summary, "rows": rows}


EXPERIMENT = Experiment("snr_lab measure", plan, setting_key, measure_setting, MeasureRecord)
"""The open lab (its analysis is :func:`main`'s tables, figure and summary)."""
