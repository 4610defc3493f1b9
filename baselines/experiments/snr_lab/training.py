"""SNR along training: the gradient SNR of the estimators at the policies of real training runs.

The lab's SNR ratios are measured at initialisation (the uniform policy); the steps ratios of
the benchmark come from whole training runs. ``python -m baselines snr_lab training`` joins
them: it trains each ``--methods`` run of a protocol tier's Diluted Doors setting (``--floors``,
the tier's budget and hyperparameters, the batched trainer, seeds ``--seeds``) at each routine
length, reads the policy after update k at ``--checkpoints`` evenly spaced updates from the
initial policy to the first one reaching the target (:func:`checkpoint_updates`; read through
:attr:`~baselines.lib.batched.trainer.BatchedTrainer.observe`, which changes nothing of the
run), and measures there, on the exact model, the SNR of ``--estimators``
(:func:`routine_envs.snr.measure_snr`: the gradient with respect to each state's logits of
the trained policy, ``--episodes`` episodes in groups of ``--group-size``) and the ratio of each
to ``--reference`` (jackknife 95% intervals). Beside it, per density, the steps to target of the
same runs (rb3's rule: the first update whose policy reaches the target) and the ratio of the
reference method's steps to each other method's (bootstrap over seeds).

Writes ``training_snr.csv`` (one row per run, checkpoint and estimator), ``training_steps.csv``
(one row per run), ``training_snr.json`` and ``training_snr.png`` under ``--out``.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.experiments.benchmark.privileged import method_label
from baselines.lib import protocol_runs
from baselines.lib.lab import lab_estimator
from baselines.lib.plotting import legend_below
from baselines.lib.protocol import load_protocol
from baselines.lib.runs import Run, replace
from baselines.lib.stats import bootstrap_ci, iqm
from baselines.lib.tables import format_table, pyplot, write_csv
from routine_envs import credit, snr
from routine_envs.oracle import return_moments
from routine_envs.sampler import ModelSampler

ENV_ID = "DilutedDoors-v1"


@dataclass
class TrainingSnrSettings:
    """SNR along training (module docstring)."""

    protocol: str = field(default="rb3", metadata={"help": "protocol of the runs"})
    tier: str = field(default="full", metadata={"help": "tier whose budget and settings to use"})
    floors: int = field(default=2, metadata={"help": "Diluted Doors floors (a tier setting)"})
    routine_lengths: list[int] = field(
        default_factory=lambda: [0, 9, 50], metadata={"help": "routine lengths (the tier's)"}
    )
    methods: list[str] = field(
        default_factory=lambda: ["trajectory_mc", "oracle"],
        metadata={"help": "methods whose training runs are measured"},
    )
    estimators: list[str] = field(
        default_factory=lambda: ["oracle", "trajectory_mc"],
        metadata={"help": "estimators measured at each checkpoint"},
    )
    reference: str = field(
        default="trajectory_mc", metadata={"help": "the estimator and method ratios are to"}
    )
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2], metadata={"help": "run seeds"})
    checkpoints: int = field(
        default=6, metadata={"help": "policies measured per run (the first: initial)", "min": 2}
    )
    episodes: int = field(default=2048, metadata={"help": "episodes per measurement", "min": 320})
    group_size: int = field(default=8, metadata={"help": "episodes per group", "min": 2})
    out: Path = field(default=Path("results/snr/training"), metadata={"help": "output folder"})


def plan_runs(settings: TrainingSnrSettings) -> list[Run]:
    """The training runs: each method's runs of the tier's Doors setting with ``floors`` floors
    at the routine lengths, moved to the seeds (``ValueError`` naming what the tier lacks)."""
    protocol = load_protocol(settings.protocol)
    tier = protocol.tier(settings.tier)
    wanted = [
        s for s in tier.settings
        if s.env_id == ENV_ID and s.env_kwargs.get("num_floors") == settings.floors
    ]  # fmt: skip
    if not wanted:
        raise ValueError(f"--floors {settings.floors}: tier {tier.name} has no such {ENV_ID}")
    (setting,) = wanted
    missing = sorted(set(settings.routine_lengths) - set(setting.values))
    if missing:
        raise ValueError(f"--routine-lengths {missing}: not in the setting's {setting.values}")
    runs = []
    with tempfile.TemporaryDirectory() as configs:
        for method in settings.methods:
            planned = protocol_runs.plan(
                protocol, tier, method, Path(configs), [ENV_ID], trainer="batched"
            )
            for run in planned:
                if (
                    run.context["setting"] == setting.name
                    and run.context["density_value"] in settings.routine_lengths
                    and run.seed == tier.seeds[0]
                ):
                    runs += [
                        replace(run, seed=seed, evaluation="updates") for seed in settings.seeds
                    ]
    return runs


def checkpoint_updates(success: list[float], target: float, count: int) -> list[int]:
    """``count`` evenly spaced update indices from 0 (the initial policy) to the first update
    whose policy reaches ``target`` (the last update where none does): the part of training
    whose gradients decide the steps to target (past it, a near-deterministic policy's
    episodes are all alike and every estimator's noise vanishes)."""
    reached = next((k for k, s in enumerate(success) if s >= target), len(success) - 1)
    return sorted({round(float(k)) for k in np.linspace(0, max(1, reached), count)})


def train_and_read(runs: list[Run], count: int) -> tuple[list[Any], dict[int, list[dict]]]:
    """Train ``runs`` (the batched trainer, every run evaluated after every update) and read,
    per run index, the policy table ``(num_states, A)`` at its checkpoint updates
    (:func:`checkpoint_updates`)."""
    from baselines.lib.batched import train

    tables: dict[int, list[dict]] = {i: [] for i in range(len(runs))}
    index = {id(r): i for i, r in enumerate(runs)}

    def observe(trainer: Any, active: np.ndarray) -> None:
        for j in active.tolist():
            state = trainer.state[j]
            tables[index[id(trainer.runs[j])]].append(
                {"update": len(tables[index[id(trainer.runs[j])]]), "steps": state.steps,
                 "success": state.success[-1], "table": trainer.policy_tables(np.array([j]))[0]}
            )  # fmt: skip

    results = train(runs, observe=observe)
    read = {}
    for i, run in enumerate(runs):
        wanted = checkpoint_updates([t["success"] for t in tables[i]], run.target, count)
        read[i] = [
            {**t, "checkpoint": wanted.index(t["update"])}
            for t in tables[i]
            if t["update"] in wanted
        ]
    return results, read


def measure(
    run: Run, env: Any, sampler: ModelSampler, table: np.ndarray, settings: TrainingSnrSettings
) -> dict[str, Any]:
    """SNR of the estimators under ``table`` (per-state logits ``log table``) on ``run``'s
    environment ``env`` (unwrapped; ``sampler`` its exact model's, reused by every checkpoint
    of the run): per estimator its SNR per episode with its interval, its ratio to the
    reference's (``None`` where undefined) and the privileged fields it reads."""
    probs = np.asarray(table, dtype=np.float64)
    policy = snr.TabularSoftmax.per_state(
        env.num_states, env.num_actions, np.log(np.maximum(probs, 1e-300))
    )
    probs = policy.probs()
    j, std_r = return_moments(env.model(), probs)
    context = credit.EstimatorContext(
        env=env, policy_table=probs, sampler=sampler, gamma=1.0, gae_lambda=0.95, seed=run.seed
    )
    exact = {"J": j, "std_R": std_r}
    estimators = {n: lab_estimator(n, context, exact) for n in settings.estimators}
    for estimator in estimators.values():
        credit.check_independent_groups(estimator, "the SNR lab")
    comparison = snr.measure_snr(
        env,
        policy,
        estimators,
        num_groups=settings.episodes // settings.group_size,
        group_size=settings.group_size,
        seed=run.seed,
        sampler=sampler,
        values=env.oracle(probs).v,
    )
    scale = 1 / np.sqrt(settings.group_size)  # per episode
    out = {}
    for name, result in comparison.results.items():
        row = result.as_row()
        ratio = comparison.ratios.get((name, settings.reference), (None,) * 3)
        values = {
            "snr": row["snr"] * scale,
            "snr_low": row["snr_low"] * scale,
            "snr_high": row["snr_high"] * scale,
            "ratio": ratio[0],
            "ratio_low": ratio[1],
            "ratio_high": ratio[2],
        }
        # a near-deterministic policy can sample identical episodes: no noise, no SNR
        out[name] = {k: v if v is not None and np.isfinite(v) else None for k, v in values.items()}
        out[name]["privileged"] = list(credit.declare(estimators[name]).privileged)
    return out


def steps_rows(runs: list[Run], results: list[Any], reference: str) -> list[dict[str, Any]]:
    """Per routine length and method: IQM steps to target over seeds (censored runs at the
    budget, counted) and the reference method's steps over this one's (bootstrap over seeds;
    ``None`` where either reached the target in no run)."""
    cells: dict[tuple[int, str], list[tuple[float, bool]]] = {}
    for run, result in zip(runs, results, strict=True):
        reached = result.steps_to_target is not None
        steps = float(result.steps_to_target if reached else run.budget)
        key = (run.context["density_value"], run.method.text)
        cells.setdefault(key, []).append((steps, reached))
    rows = []
    for (length, method), values in sorted(cells.items()):
        steps = np.array([v[0] for v in values])
        reached = sum(v[1] for v in values)
        est, low, high = bootstrap_ci(steps, iqm)
        row = {"routine_length": length, "method": method, "runs": len(values),
               "reached": reached, "steps_iqm": float(est), "steps_low": float(low),
               "steps_high": float(high), "censored": len(values) - reached}  # fmt: skip
        base = cells.get((length, reference))
        if base is not None and method != reference and reached and any(b[1] for b in base):
            ref = np.array([b[0] for b in base])
            row[f"{reference}_over_this"] = float(iqm(ref) / iqm(steps))
        rows.append(row)
    return rows


def plot(
    snr_rows: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    s: TrainingSnrSettings,
    path: Path,
    labels: dict[str, str] | None = None,
) -> None:
    """Per density, the SNR ratio of each estimator to the reference along training (mean over
    seeds, min-max band), one line per trained method; last panel: against rho, the ratio at
    initialisation, its mean along training and the steps ratio of the runs. ``labels``: how
    each method and estimator is named (its privileged mark, :func:`~baselines.experiments.
    benchmark.privileged.method_label`)."""
    known = labels or {}

    def name(n: str) -> str:
        return known.get(n, n)

    from matplotlib.ticker import ScalarFormatter

    plt = pyplot()
    lengths = sorted({r["routine_length"] for r in snr_rows})
    others = [e for e in s.estimators if e != s.reference]
    fig, axes = plt.subplots(1, len(lengths) + 1, figsize=(4.4 * (len(lengths) + 1), 5.4))
    colors = {m: f"C{i}" for i, m in enumerate(s.methods)}
    for ax, length in zip(axes, lengths, strict=False):
        mine = [r for r in snr_rows if r["routine_length"] == length and r["estimator"] in others]
        for method in s.methods:
            for est in others:
                pts = [
                    r for r in mine
                    if r["method"] == method and r["estimator"] == est and r["ratio"] is not None
                ]  # fmt: skip
                marks = sorted({r["checkpoint"] for r in pts})  # the k-th of every run
                if not marks:
                    continue
                by = [[r for r in pts if r["checkpoint"] == k] for k in marks]
                x = [np.mean([r["steps"] for r in g]) for g in by]
                y = [np.mean([r["ratio"] for r in g]) for g in by]
                lo = [min(r["ratio"] for r in g) for g in by]
                hi = [max(r["ratio"] for r in g) for g in by]
                ax.plot(x, y, "o-", color=colors[method], label=f"{name(est)} / "
                        f"{name(s.reference)},\nruns of {name(method)}")  # fmt: skip
                ax.fill_between(x, lo, hi, color=colors[method], alpha=0.15)
        rho = mine[0]["rho"] if mine else float("nan")
        ax.set_title(f"L = {length} (rho {rho:.3g})", fontsize=10)
        ax.set_xlabel("environment steps\n(mean over seeds at each checkpoint)", fontsize=8)
        ax.set_ylabel(f"gradient SNR ratio to {s.reference}", fontsize=8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(ScalarFormatter())
        legend_below(ax, below=0.22)
    last = axes[-1]
    for est in others:
        for method in s.methods:
            pts = [
                r for r in snr_rows
                if r["estimator"] == est and r["method"] == method and r["ratio"] is not None
            ]  # fmt: skip
            rhos = sorted({r["rho"] for r in pts}, reverse=True)
            init = [np.mean([r["ratio"] for r in pts if r["rho"] == x and r["update"] == 0])
                    for x in rhos]  # fmt: skip
            along = [np.mean([r["ratio"] for r in pts if r["rho"] == x]) for x in rhos]
            if method == s.methods[0]:  # every method's runs start from the same policies
                last.plot(rhos, init, "o--", color="grey", mfc="none",
                          label=f"SNR {name(est)} / {name(s.reference)}\n"
                                "at initialisation")  # fmt: skip
            last.plot(rhos, along, "s-", color=colors[method],
                      label=f"SNR {name(est)} / {name(s.reference)},\n"
                            f"mean along {name(method)}'s runs")  # fmt: skip
    rho_of = {r["routine_length"]: r["rho"] for r in snr_rows}
    key = f"{s.reference}_over_this"
    for method in s.methods:
        pts = [r for r in steps if r["method"] == method and r.get(key) is not None]
        if pts:
            last.plot([rho_of[r["routine_length"]] for r in pts], [r[key] for r in pts], "^-",
                      color="k", label=f"steps to target:\n{name(s.reference)} / "
                            f"{name(method)}")  # fmt: skip
    last.set_xscale("log")
    last.set_yscale("log")
    last.set_xlabel("decision density rho")
    last.set_ylabel("ratio")
    last.set_title("SNR ratio beside the steps ratio", fontsize=10)
    legend_below(last, below=0.22)
    fig.suptitle(
        f"{ENV_ID} {s.floors} floors ({s.protocol} {s.tier}): gradient SNR along training, "
        f"seeds {s.seeds}, {s.episodes} episodes per measurement"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(settings: TrainingSnrSettings) -> dict[str, Any]:
    """``python -m baselines snr_lab training``: train, measure, write, print (module
    docstring)."""
    if settings.reference not in settings.estimators:
        raise ValueError(f"--reference {settings.reference!r} is not among --estimators")
    runs = plan_runs(settings)
    settings.out.mkdir(parents=True, exist_ok=True)
    results, read = train_and_read(runs, settings.checkpoints)
    # every method and estimator named with the privileged fields it reads, wherever shown
    labels = {
        r.method.text: method_label(r.method.text, res.privileged_fields)
        for r, res in zip(runs, results, strict=True)
    }
    snr_rows = []
    for i, run_ in enumerate(runs):
        env = gym.make(run_.env_id, **run_.env_kwargs).unwrapped
        sampler = ModelSampler(env)
        for point in read[i]:
            measured = measure(run_, env, sampler, point["table"], settings)
            for est, m in measured.items():
                labels.setdefault(est, method_label(est, m["privileged"]))
                snr_rows.append(
                    {"method": run_.method.text, "method_label": labels[run_.method.text],
                     "seed": run_.seed, "routine_length": run_.context["density_value"],
                     "rho": run_.context["rho"], "checkpoint": point["checkpoint"],
                     "update": point["update"], "steps": point["steps"],
                     "success": point["success"], "estimator": est,
                     "estimator_label": labels[est], **m}
                )  # fmt: skip
    steps = [
        {**r, "label": labels[r["method"]]} for r in steps_rows(runs, results, settings.reference)
    ]
    write_csv(settings.out / "training_snr.csv", snr_rows)
    write_csv(settings.out / "training_steps.csv", steps)
    summary = {"settings": {k: str(v) if isinstance(v, Path) else v
                            for k, v in vars(settings).items()},
               "labels": labels, "snr": snr_rows, "steps": steps}  # fmt: skip
    (settings.out / "training_snr.json").write_text(json.dumps(summary, indent=1))
    plot(snr_rows, steps, settings, settings.out / "training_snr.png", labels)
    others = [e for e in settings.estimators if e != settings.reference]
    shown = []
    for length in settings.routine_lengths:
        for method in settings.methods:
            pts = [r for r in snr_rows if r["routine_length"] == length and r["method"] == method
                   and r["estimator"] in others and r["ratio"] is not None]  # fmt: skip
            for mark in sorted({r["checkpoint"] for r in pts}):
                g = [r for r in pts if r["checkpoint"] == mark]
                shown.append(
                    {"L": length, "runs of": labels[method], "checkpoint": mark,
                     "update (mean)": f"{np.mean([r['update'] for r in g]):.1f}",
                     "steps": f"{np.mean([r['steps'] for r in g]):.0f}",
                     "success": f"{np.mean([r['success'] for r in g]):.3f}",
                     "SNR ratio (mean over seeds)": f"{np.mean([r['ratio'] for r in g]):.2f}"}
                )  # fmt: skip
    print(format_table(shown))
    print(format_table([{k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()}
                        for r in steps]))  # fmt: skip
    print(f"\nwrote {settings.out}/: training_snr.csv, training_steps.csv, training_snr.json, "
          "training_snr.png")  # fmt: skip
    return summary
