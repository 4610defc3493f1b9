"""Reproducing "Drowning in Routine": ``python -m baselines snr_lab {rho-law,critic,beyond,all}``.

The sweep (settings, the jobs, the experiments); tables and plots are in
:mod:`baselines.experiments.snr_lab.analysis`.

Each experiment measures gradient SNRs with :mod:`routine_envs.snr` on Diluted Doors
(``reward="success"``, 3 floors, 3 doors, the uniform policy unless stated) over routine lengths,
appends one JSON line per setting to ``<out>/<experiment>/results.jsonl`` (resumable: an
interrupted run does only what is missing), and writes the tables (CSV), figures (PNG) and a
``summary.json`` beside it.

- ``rho-law``: perfect critic (``oracle``) vs the trajectory advantage, the SNR ratio against rho
  with its log-log fit, beside the closed form (:func:`routine_envs.snr.uniform_doors_snr`); both
  parametrizations (one logit vector per state, or per floor).
- ``critic``: the noisy oracle (sigma a multiple of std(R)) and the Monte-Carlo critic
  (k rollouts), their ratio to the trajectory advantage against rho.
- ``beyond``: trajectory_mc (group mean), rloo, gigpo, routine_masked, mc_rollout and the oracle
  on the same axes, with the environment steps each consumes per gradient estimate.
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
from baselines.experiments.snr_lab.records import LabRecord
from baselines.lib import cli, provenance
from baselines.lib.backend import BackendArgs
from baselines.lib.experiment import Experiment, run_experiment
from baselines.lib.lab import PAPER, estimator_code, lab_estimator
from baselines.lib.tables import write_csv
from routine_envs import credit, snr
from routine_envs.sampler import ModelSampler

gym.register_envs(routine_envs)

ROUTINE_LENGTHS = (0, 1, 2, 3, 5, 7, 10, 15, 20, 30, 40, 50)
SIGMA_MULTIPLES = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
ROLLOUTS = (1, 2, 4, 8, 16)


@dataclass
class LabArgs(BackendArgs):
    """Settings shared by the experiments."""

    out: Path = field(default=Path("results/snr"), metadata={"help": "output folder"})
    episodes: int = field(default=100_000, metadata={"help": "episodes per setting", "min": 1})
    mc_episodes: int = field(
        default=4_000,
        metadata={
            "help": "episodes per setting for Monte-Carlo critics (k rollouts from every step)",
            "min": 1,
        },
    )
    group_size: int = field(default=8, metadata={"help": "episodes per group", "min": 2})
    routine_lengths: tuple[int, ...] = field(
        default=ROUTINE_LENGTHS, metadata={"help": "routine lengths L", "min": 0}
    )
    mc_routine_lengths: tuple[int, ...] = field(
        default=(0, 1, 3, 7, 15, 30),
        metadata={
            "help": "routine lengths for Monte-Carlo critics (their cost grows like L^2)",
            "min": 0,
        },
    )
    params: tuple[str, ...] = field(
        default=("per_state", "per_floor"),
        metadata={
            "help": "policy parametrizations: one logit vector per state, or per floor",
            "choices": ["per_state", "per_floor"],
        },
    )
    env_id: str = field(
        default="DilutedDoors-v1",
        metadata={
            "help": "Diluted Doors version (v0 shows the outcome so far; the perfect critic and "
            "the tabular policies do not look at observations, so both give the same law)",
            "choices": ["DilutedDoors-v1", "DilutedDoors-v0"],
        },
    )
    num_floors: int = field(default=3, metadata={"help": "floors of Diluted Doors", "min": 1})
    num_doors: int = field(default=3, metadata={"help": "doors per floor", "min": 2})
    workers: int = field(default=2, metadata={"help": "settings measured in parallel", "min": 1})
    seed: int = field(
        default=0, metadata={"help": "seed of the episodes and the critics", "min": 0}
    )


# --------------------------------------------------------------------------- one setting
def measure_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """Measure one setting (a worker's job): SNR of each named estimator on shared episodes."""
    start = time.perf_counter()
    env = gym.make(
        setting["env_id"],
        num_floors=setting["num_floors"],
        num_doors=setting["num_doors"],
        **{setting["density_kwarg"]: setting["density_value"]},
    ).unwrapped
    rows = snr.floor_rows(env) if setting["param"] == "per_floor" else np.arange(env.num_states)
    policy = snr.TabularSoftmax.shared(rows, env.num_doors)
    probs = policy.probs()
    values = env.oracle(probs)
    j = float(env.model().initial @ values.v)
    std_r = math.sqrt(j * (1 - j))  # R is 0/1 with mean J
    seed = setting["seed"]
    sampler = ModelSampler(env)
    context = credit.EstimatorContext(env=env, policy_table=probs, sampler=sampler, seed=seed)
    exact = {"J": j, "std_R": std_r}
    estimators = {name: lab_estimator(name, context, exact) for name in setting["estimators"]}
    for estimator in estimators.values():
        credit.check_independent_groups(estimator, "the SNR lab")
    groups = setting["episodes"] // setting["group_size"]
    comparison = snr.measure_snr(
        env,
        policy,
        estimators,
        num_groups=groups,
        group_size=setting["group_size"],
        seed=seed,
        sampler=sampler,
    )
    scale = 1 / math.sqrt(setting["group_size"])  # SNR per episode
    episode_steps = setting["episodes"] * env.max_episode_length
    out = []
    for name, res in comparison.results.items():
        row = {k: v for k, v in res.as_row().items() if k not in ("num_groups", "group_size")}
        row.update(snr=res.snr * scale, snr_low=res.snr_low * scale, snr_high=res.snr_high * scale)
        if name.startswith("mc_rollout"):
            row["env_steps_per_episode"] = (episode_steps + sampler.rollout_steps) / setting[
                "episodes"
            ]
        else:
            row["env_steps_per_episode"] = float(env.max_episode_length)
        out.append(row)
    ratios = {
        f"{a}/{b}": list(v) for (a, b), v in comparison.ratios.items() if b == setting["reference"]
    }
    return {
        **setting,
        "rho": 1 / (1 + setting["density_value"]),
        "J": j,
        "std_R": std_r,
        "results": out,
        "ratios": ratios,
        "seconds": time.perf_counter() - start,
    }


KEY_FIELDS = (
    "experiment",
    "env_id",
    "density_kwarg",
    "density_value",
    "param",
    "estimators",
    "reference",
    "episodes",
    "group_size",
    "num_floors",
    "num_doors",
    "seed",
    "code",
    "versions",
)
"""What a setting's measurement depends on: the setting, the estimators and their reference,
the code of the estimators and of the measurement, and the package versions."""


def setting_key(setting: dict[str, Any]) -> str:
    """The identity of a setting: every field of :data:`KEY_FIELDS`, as canonical JSON."""
    return json.dumps({k: setting[k] for k in KEY_FIELDS}, sort_keys=True)


def run_settings(
    settings: list[dict[str, Any]], path: Path, workers: int, backend: BackendArgs | None = None
) -> list[dict]:
    """Measure what is missing (resumable, on ``backend``), append each result as one JSON line
    (the lab's experiment through the one runner: :func:`~baselines.lib.experiment.
    run_experiment`)."""
    lab = Experiment("snr_lab", lambda _: settings, setting_key, measure_setting, LabRecord)
    return run_experiment(lab, None, settings, path=path, workers=workers, backend=backend)


def check_lab_args(args: LabArgs) -> None:
    """Refuse settings that would measure nothing or count a setting twice (``ValueError``
    naming the setting), before any work."""
    for name in ("routine_lengths", "mc_routine_lengths", "params"):
        values = getattr(args, name)
        if not values:
            raise ValueError(f"{name} must not be empty")
        cli.check_unique(name, values)


def _settings(
    args: LabArgs,
    experiment: str,
    lengths: tuple[int, ...],
    params: tuple[str, ...],
    estimators: list[str],
    reference: str,
    episodes: int,
) -> list[dict[str, Any]]:
    check_lab_args(args)
    code = {name: estimator_code(name) for name in estimators}
    code["measure_setting"] = provenance.code_fingerprint(measure_setting)
    versions = provenance.versions()
    return [
        {
            "experiment": experiment,
            "density_kwarg": "routine_length",
            "density_value": int(length),
            "param": param,
            "estimators": estimators,
            "reference": reference,
            "episodes": episodes,
            "group_size": args.group_size,
            "env_id": args.env_id,
            "num_floors": args.num_floors,
            "num_doors": args.num_doors,
            "seed": args.seed,
            "code": code,
            "versions": versions,
        }
        for length in lengths
        for param in params
    ]


# --------------------------------------------------------------------------- experiments
MIN_FIT_POINTS = 3


def fit(x: list[float], y: list[float]) -> dict[str, Any]:
    """The log-log least-squares fit of ``y`` against ``x`` (:func:`routine_envs.snr.fit_loglog`)
    as ``{"slope", "intercept", "r2", "points"}``; ``None`` values and a ``note`` when it is
    not available: fewer than :data:`MIN_FIT_POINTS` distinct ``x`` (with positive, finite
    ``x`` and ``y``), or a result that is not finite."""
    pts = [(a, b) for a, b in zip(x, y, strict=True) if 0 < a < math.inf and 0 < b < math.inf]
    distinct = len({a for a, _ in pts})
    empty = {"slope": None, "intercept": None, "r2": None, "points": len(pts)}
    if distinct < MIN_FIT_POINTS:
        return {
            **empty,
            "note": f"not available: a fit needs at least {MIN_FIT_POINTS} distinct points, "
            f"got {distinct}",
        }
    slope, intercept, r2 = snr.fit_loglog([a for a, _ in pts], [b for _, b in pts])
    if not all(map(math.isfinite, (slope, intercept, r2))):
        return {**empty, "note": "not available: the fit is not finite"}
    return {"slope": slope, "intercept": intercept, "r2": r2, "points": len(pts)}


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    """``summary`` as strict JSON (no NaN or infinity: ``ValueError`` instead)."""
    path.write_text(json.dumps(summary, indent=2, allow_nan=False))


def ratio_or_bound(
    record: dict[str, Any], results: dict[str, dict[str, Any]], name: str, reference: str
) -> tuple[float | None, float | None, float | None, str]:
    """``name``'s SNR over ``reference``'s on one setting, ``(ratio, low, high, what it is)``:
    the measured ratio and its jackknife interval; or, where ``reference``'s SNR estimate is 0
    (its squared mean gradient, estimated without bias, is not positive: too few episodes to
    resolve it), no ratio and the lower bound ``name``'s SNR over the upper end of
    ``reference``'s interval (``None`` when that is 0 too)."""
    measured = record["ratios"].get(f"{name}/{reference}")
    if measured is not None:
        ratio, low, high = measured
        return ratio, low, high, "measured"
    top = results[reference]["snr_high"]
    bound = results[name]["snr"] / top if top > 0 else None
    why = f"{reference}'s SNR not resolved from 0 at {record['episodes']} episodes"
    return None, bound, None, f"lower bound ({why})" if bound is not None else f"none ({why})"


def rho_law(args: LabArgs) -> dict[str, Any]:
    out = args.out / "rho_law"
    settings = _settings(
        args,
        "rho-law",
        args.routine_lengths,
        args.params,
        ["oracle", "trajectory_exact", "trajectory_mc"],
        "trajectory_exact",
        args.episodes,
    )
    records = run_settings(settings, out / "results.jsonl", args.workers, args)
    rows = []
    for rec in records:
        theory = snr.uniform_doors_snr(args.num_floors, args.num_doors, rec["density_value"])
        res = {r["estimator"]: r for r in rec["results"]}
        ratio, low, high, ratio_is = ratio_or_bound(rec, res, "oracle", "trajectory_exact")
        rows.append(
            {
                rec["density_kwarg"]: rec["density_value"],
                "rho": rec["rho"],
                "param": rec["param"],
                "snr_oracle": res["oracle"]["snr"],
                "snr_trajectory": res["trajectory_exact"]["snr"],
                "snr_trajectory_group_mean": res["trajectory_mc"]["snr"],
                "ratio": ratio,
                "ratio_low": low,
                "ratio_high": high,
                "theory_ratio": theory["ratio"],
                "theory_snr_oracle": theory["snr_oracle"],
                "theory_snr_trajectory": theory["snr_trajectory"],
                "ratio_is": ratio_is,
                "within_ci": ratio is not None and bool(low <= theory["ratio"] <= high),
                "routine_share_of_trajectory_variance": res["trajectory_exact"]["routine_variance"]
                / res["trajectory_exact"]["variance"],
            }
        )
    write_csv(out / "rho_law.csv", rows)
    fits = {}
    for param in args.params:
        sub = [r for r in rows if r["param"] == param]
        measured = [r for r in sub if r["ratio"] is not None]
        fits[param] = {
            **fit([r["rho"] for r in measured], [r["ratio"] for r in measured]),
            "within_ci": sum(r["within_ci"] for r in measured),
            "settings": len(measured),
        }
    theory = [r for r in rows if r["param"] == args.params[0]]
    t_fit = fit([r["rho"] for r in theory], [r["theory_ratio"] for r in theory])
    summary = {
        "fits": fits,
        "theory_fit": {"slope": t_fit["slope"], "r2": t_fit["r2"]},
        "paper": PAPER,
        "episodes": args.episodes,
        "group_size": args.group_size,
        "routine_lengths": list(args.routine_lengths),
    }
    unresolved = [r for r in rows if r["ratio"] is None]
    if unresolved:
        summary["unresolved"] = [
            {k: r[k] for k in ("rho", "param", "ratio_low", "ratio_is")} for r in unresolved
        ]
        print(
            f"rho-law: {len(unresolved)} of {len(rows)} settings have no ratio (the trajectory "
            f"SNR is not resolved from 0 at {args.episodes} episodes; left out of the fits): "
            "more --episodes measure them"
        )
    write_summary(out / "summary.json", summary)
    analysis.plot_rho_law(rows, fits, out / "rho_law.png")
    return summary


def critic(args: LabArgs) -> dict[str, Any]:
    out = args.out / "critic"
    noisy = [f"oracle:{c}" for c in SIGMA_MULTIPLES]
    settings = _settings(
        args,
        "critic-noise",
        args.routine_lengths,
        ("per_state",),
        [*noisy, "trajectory_exact"],
        "trajectory_exact",
        args.episodes,
    )
    settings += _settings(
        args,
        "critic-mc",
        args.mc_routine_lengths,
        ("per_state",),
        [*(f"mc_rollout:{k}" for k in ROLLOUTS), "trajectory_exact"],
        "trajectory_exact",
        args.mc_episodes,
    )
    records = run_settings(settings, out / "results.jsonl", args.workers, args)
    rows = analysis.flat_rows(records)
    std_r = {r["density_value"]: r["std_R"] for r in records}
    for row in rows:
        kind, _, arg = row["estimator"].partition(":")
        row["critic"] = kind
        row["sigma_over_std_R"] = float(arg) if kind == "oracle" else None
        row["rollouts"] = int(arg) if kind == "mc_rollout" else None
        if kind == "oracle":
            sigma = float(arg) * std_r[row["routine_length"]]
            row["theory_ratio"] = snr.uniform_doors_snr(
                args.num_floors, args.num_doors, row["routine_length"], sigma=sigma
            )["ratio"]
    write_csv(out / "critic.csv", rows)
    plateau = {}
    longest = max(args.routine_lengths)
    for c in SIGMA_MULTIPLES[1:]:
        r = next(
            r for r in rows if r["estimator"] == f"oracle:{c}" and r["routine_length"] == longest
        )
        plateau[str(c)] = {
            "ratio_at_longest_L": r["ratio_to_trajectory_exact"],
            "std_R_over_sigma": 1 / c,
        }
    summary = {"plateau": plateau, "episodes": args.episodes, "mc_episodes": args.mc_episodes}
    write_summary(out / "summary.json", summary)
    analysis.plot_critic(rows, out / "critic.png", SIGMA_MULTIPLES, ROLLOUTS)
    return summary


def beyond(args: LabArgs) -> dict[str, Any]:
    out = args.out / "beyond"
    names = [
        "trajectory_mc",
        "rloo",
        "gigpo",
        "routine_masked",
        "oracle",
        "mc_rollout:4",
        "trajectory_exact",
    ]
    settings = _settings(
        args,
        "beyond",
        args.mc_routine_lengths,
        ("per_state",),
        names,
        "trajectory_mc",
        args.mc_episodes * 5,
    )
    records = run_settings(settings, out / "results.jsonl", args.workers, args)
    rows = analysis.flat_rows(records)
    write_csv(out / "beyond.csv", rows)
    fits = {}
    for name in names:
        sub = [r for r in rows if r["estimator"] == name]
        f = fit([r["rho"] for r in sub], [r["snr"] for r in sub])
        fits[name] = {"snr_slope_vs_rho": f["slope"], "r2": f["r2"], "points": f["points"]}
        if "note" in f:
            fits[name]["note"] = f["note"]
    write_summary(out / "summary.json", {"fits": fits})
    analysis.plot_beyond(rows, out / "beyond.png")
    return {"fits": fits}


# ---------------------------------------------------------------------------------- CLI
EXPERIMENTS = {"rho-law": rho_law, "critic": critic, "beyond": beyond}


@dataclass
class LabCommand(LabArgs):
    """Reproducing "Drowning in Routine": the lab's experiments (``rho-law``, ``critic``,
    ``beyond`` or ``all``)."""

    experiment: str = field(
        default="all",
        metadata={
            "help": "the experiment to run",
            "choices": [*EXPERIMENTS, "all"],
            "positional": True,
        },
    )


def check_command(args: LabCommand, parser: Any) -> None:
    """Refuse what the flags alone cannot (``parser.error``: one line, exit status 2): fewer
    episodes than the SNR's jackknife needs, an ``--out`` that is a file."""
    for name in ("episodes", "mc_episodes"):
        if getattr(args, name) < 40 * args.group_size:  # the SNR's jackknife needs 40 groups
            flag = "--" + name.replace("_", "-")
            parser.error(
                f"argument {flag}: must be >= 40 * --group-size = {40 * args.group_size}, "
                f"got {getattr(args, name)}"
            )
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"argument --out: {args.out} is a file; give a folder")


def main(args: LabCommand) -> dict[str, Any]:
    """Run the chosen experiment(s), print and return their summaries."""
    chosen = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    summaries = {}
    for name in chosen:
        start = time.perf_counter()
        summaries[name] = EXPERIMENTS[name](args)
        folder = args.out / name.replace("-", "_")
        print(f"\n== {name} ({time.perf_counter() - start:.1f} s): {folder}")
        print(json.dumps(summaries[name], indent=2))
    return summaries
