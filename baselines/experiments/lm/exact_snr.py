"""``python -m baselines.lm snr``: the gradient SNR and bias of a language-model policy at
initialisation, against rho, scored with the lab's estimators: **exact gradient, sampled
noise, and for the ratio's two estimators exact noise too**. The exact ``grad J`` comes from
the exact model; each estimator's mean and covariance (so its SNR and bias) are estimated from
``--episodes`` episodes sampled under the policy table, with a bootstrap interval; the perfect
critic's and the trajectory advantage's (exact baseline) covariances are also computed exactly,
by dynamic programming on the exact model (:mod:`routine_envs.exact_noise`), so their SNRs and
ratio have an exact value beside the sampled one.

The LM reads the current observation only (``window=1``: the context is a function of the
state, so the policy is Markov and its table over the exact model is the policy it plays; see
:mod:`baselines.lib.lm.exact`). At initialisation means after the supervised warm start on
canonical replies (``--warm-start-steps``; ``0``: the random initialisation, whose canonical
replies carry almost no probability) and before any RL. Per corridor length ``L`` of one floor
of DilutedDoors-v1: the table, its Jacobian, the exact ``J`` and ``grad J`` by autograd, then
:func:`routine_envs.snr.measure_snr` on episodes sampled from the exact model under the table,
with norms in the LM's parameter space (metric ``M = J J^T``). The ratio of the perfect
critic's SNR over the trajectory advantage's (exact baseline) is fitted against rho on log-log
axes and set beside the tabular closed form of the uniform policy.

Writes ``snr.csv``, ``snr.png`` and ``summary.json`` into ``--out``
(:mod:`baselines.experiments.lm.analysis`; resumable: ``results.jsonl``, the records
:class:`~baselines.experiments.lm.records.SNRRecord`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.lm import analysis
from baselines.experiments.lm.records import SNRRecord, density_of, upgrade
from baselines.lib import cli
from baselines.lib.runner import run_resumable
from baselines.lib.tables import format_table, write_csv
from routine_envs import exact_noise, snr

#: the estimators measured (name -> build_estimator spec); "trajectory_exact" has the exact
#: baseline J, as the tabular closed form.
DEFAULT_ESTIMATORS = ["oracle", "trajectory_exact", "trajectory_mc", "routine_masked", "mc_rollout"]


@dataclass
class SNRSettings:
    """SNR and bias of an LM policy's gradient at initialisation against rho (exact gradient,
    noise sampled from --episodes episodes)."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "text env id"})
    env_kwargs: dict = field(
        default_factory=lambda: {"num_floors": 1},
        metadata={"help": "env keyword arguments (JSON; routine_length is swept)"},
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [0, 1, 3, 7, 15, 31],
        metadata={"help": "corridor lengths L (rho = 1/(1+L) on one floor)", "min": 0},
    )
    estimators: list[str] = field(
        default_factory=lambda: list(DEFAULT_ESTIMATORS),
        metadata={"help": "estimators (build_estimator specs; trajectory_exact: baseline J)"},
    )
    episodes: int = field(
        default=40_000,
        metadata={"help": "episodes sampled per L (the noise is estimated from them)", "min": 80},
    )
    group_size: int = field(default=8, metadata={"help": "episodes per group", "min": 2})
    warm_start_steps: int = field(
        default=60,
        metadata={"help": "supervised steps before measuring (0: random init)", "min": 0},
    )
    dim: int = field(default=64, metadata={"help": "model width", "min": 8})
    num_layers: int = field(default=2, metadata={"help": "transformer blocks", "min": 1})
    seed: int = field(default=0, metadata={"help": "seed of the model and the episodes"})
    workers: int = field(default=1, metadata={"help": "lengths measured in parallel", "min": 1})
    out: Path = field(default=Path("results/lm/snr"), metadata={"help": "output folder"})


def plan(settings: SNRSettings) -> list[dict[str, Any]]:
    """One job per corridor length."""
    for name in ("routine_lengths", "estimators"):
        cli.check_unique(name, getattr(settings, name))
    if "oracle" not in settings.estimators or "trajectory_exact" not in settings.estimators:
        raise ValueError("estimators must include 'oracle' and 'trajectory_exact' (the ratio)")
    common = {
        k: getattr(settings, k)
        for k in (
            "env_id",
            "estimators",
            "episodes",
            "group_size",
            "warm_start_steps",
            "dim",
            "num_layers",
            "seed",
        )
    }
    density_kwarg, _ = density_of(settings.env_id, settings.env_kwargs)
    return [
        {**common, "env_kwargs": {**settings.env_kwargs, density_kwarg: int(length)}}
        for length in settings.routine_lengths
    ]


def key(job: dict[str, Any]) -> str:
    return json.dumps(job, sort_keys=True)


def run(job: dict[str, Any]) -> SNRRecord:
    """Measure one corridor length; the record (per estimator: SNR with interval, relative
    bias, cosine; the ratio; the exactness checks of the gradient)."""
    import torch

    from baselines.lib.lm import build_policy, warm_start
    from baselines.lib.lm.exact import policy_gradient
    from routine_envs import credit
    from routine_envs.sampler import ModelSampler
    from routine_envs.text import make_text_env

    torch.set_num_threads(1)
    start = time.process_time()
    env = make_text_env(job["env_id"], **job["env_kwargs"])
    max_turns = 2 * env.unwrapped.max_episode_length

    def factory() -> Any:
        return make_text_env(job["env_id"], max_turns=max_turns, **job["env_kwargs"])

    policy = build_policy(env, dim=job["dim"], num_layers=job["num_layers"], seed=job["seed"])
    warm_start(policy, factory, job["warm_start_steps"], seed=job["seed"])
    grad = policy_gradient(policy, env)
    base = env.unwrapped
    table = snr.TabularSoftmax.per_state(base.num_states, env.view.num_actions, grad.log_probs)
    probs = table.probs()
    tabular_grad = snr.exact_policy_gradient(base, table)
    sampler = ModelSampler(base)
    context = credit.EstimatorContext(
        env=base, policy_table=probs, gamma=1.0, sampler=sampler, seed=job["seed"]
    )
    estimators = {}
    for name in job["estimators"]:
        if name == "trajectory_exact":
            estimators[name] = credit.TrajectoryMC(baseline=grad.objective)
        else:
            estimators[name] = credit.build_estimator(name, context)
    metric = grad.jacobian @ grad.jacobian.T  # norms in the LM's parameters
    comparison = snr.measure_snr(
        base,
        table,
        estimators,
        num_groups=job["episodes"] // job["group_size"],
        group_size=job["group_size"],
        seed=job["seed"],
        sampler=sampler,
        metric=metric,
        exact_gradient=grad.logit_gradient,
        chunk_groups=512,
    )
    ratio, low, high = comparison.ratios[("oracle", "trajectory_exact")]
    # the same two estimators' noise, exact (one group: the mean over group_size episodes)
    model = base.model()
    exact = {
        "oracle": exact_noise.perfect_critic_moments(
            model, table, base.oracle(probs).advantage, metric
        ),
        "trajectory_exact": exact_noise.trajectory_moments(model, table, grad.objective, metric),
    }
    density_kwarg, length = density_of(job["env_id"], job["env_kwargs"])
    record: dict[str, Any] = {
        **job,
        "density_kwarg": density_kwarg,
        "density_value": length,
        "rho": float(base.decision_density),
        "parameters": int(grad.jacobian.shape[1]),
        "J": grad.objective,
        "canonical_mass_min": float(grad.canonical_mass.min()),
        "canonical_mass_mean": float(grad.canonical_mass.mean()),
        # the exactness checks: autograd through the table against the oracle's d pi A, and
        # autograd through the LM end to end against the chain rule J^T grad
        "logit_gradient_error": float(np.abs(grad.logit_gradient - tabular_grad).max()),
        "parameter_gradient_error": float(
            np.linalg.norm(grad.jacobian.T @ grad.logit_gradient - grad.parameter_gradient)
            / max(np.linalg.norm(grad.parameter_gradient), 1e-300)
        ),
        "parameter_gradient_norm": float(np.linalg.norm(grad.parameter_gradient)),
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "ratio_exact": exact["oracle"].group_snr(job["group_size"])
        / exact["trajectory_exact"].group_snr(job["group_size"]),
        # the exact noise's check: both estimators' exact means are grad J
        "exact_mean_error": max(
            float(np.abs(m.mean - grad.logit_gradient).max()) for m in exact.values()
        ),
        "tabular_ratio": snr.uniform_doors_snr(
            int(base.num_floors), int(base.num_doors), int(length)
        )["ratio"],
        "cpu_seconds": 0.0,
    }
    for name, result in comparison.results.items():
        record[f"snr_{name}"] = result.snr
        record[f"snr_{name}_low"] = result.snr_low
        record[f"snr_{name}_high"] = result.snr_high
        record[f"{name}_relative_bias"] = result.relative_bias
        record[f"{name}_cosine"] = result.cosine
    for name, moments in exact.items():
        record[f"snr_{name}_exact"] = moments.group_snr(job["group_size"])
    record["cpu_seconds"] = time.process_time() - start
    return SNRRecord.from_row(record)


def analyse(records: list[dict[str, Any]], settings: SNRSettings) -> dict[str, Any]:
    """``snr.csv``, ``snr.png`` and ``summary.json`` (the fitted slopes) into ``settings.out``
    (:mod:`baselines.experiments.lm.analysis`); the summary."""
    from baselines.experiments.lm import plots

    out = settings.out
    out.mkdir(parents=True, exist_ok=True)
    rows = analysis.snr_rows(records)
    write_csv(out / "snr.csv", rows)
    summary = analysis.snr_summary(records)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    plots.plot_snr(rows, summary, out / "snr.png")
    return summary


def main(settings: SNRSettings) -> dict[str, Any]:
    """Run (resumably), analyse, print the table and the summary."""
    cli.check_output_folder(settings.out)
    records = run_resumable(
        plan(settings),
        key,
        run,
        settings.out / "results.jsonl",
        settings.workers,
        required={"key": "str", **SNRRecord.schema()},
        check=SNRRecord.check,
        unit=SNRRecord.unit,
        upgrade=upgrade,
    )
    summary = analyse(records, settings)
    print(format_table(analysis.snr_table(records, settings.estimators)))
    print(json.dumps(summary, indent=2))
    return summary
