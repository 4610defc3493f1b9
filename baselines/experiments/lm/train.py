"""``python -m baselines.lm train``: a tiny causal LM learns a text env by GRPO on CPU.

Per seed: a word tokenizer built from the env's own text, a :class:`TinyCausalLM` initialised
from the seed, an optional supervised warm start on the canonical replies (all of them, equally
weighted: the format is learned, the policy stays at chance), then GRPO steps
(:class:`~baselines.lib.lm.grpo.GRPOTrainer`) until the exact success probability of the
model's policy reaches ``--target`` or ``--steps`` run out. Writes ``curve.csv`` (every step of
every seed: batch success, exact success of the canonical table, success as the model samples
every few steps, CPU seconds, ...), ``curve_band.csv`` (mean over seeds with a bootstrap
interval per step), ``curve.png`` and ``summary.json`` into ``--out``
(:mod:`baselines.experiments.lm.analysis`); the runs are resumable (``results.jsonl``, the
records :class:`~baselines.experiments.lm.records.LMRunRecord`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.lm import analysis
from baselines.experiments.lm.records import LMRunRecord, density_of, upgrade
from baselines.lib import cli
from baselines.lib.runner import run_resumable
from baselines.lib.tables import format_table, write_csv

ENV_ID = "DilutedDoors-v1"
SAMPLE_EVERY = 10
"""Steps between two measurements of success as the model samples (and at step 0 and the
last step)."""
SAMPLE_EPISODES = 64
"""Episodes per measurement of success as the model samples (Clopper-Pearson interval)."""


@dataclass
class LMSettings:
    """The model, its warm start and the GRPO loop (shared by ``train`` and ``dilution``)."""

    env_id: str = field(default=ENV_ID, metadata={"help": "text env id"})
    env_kwargs: dict = field(
        default_factory=lambda: {"num_floors": 1, "routine_length": 3},
        metadata={"help": "env keyword arguments (JSON)"},
    )
    max_turns: int = field(
        default=0, metadata={"help": "turn limit (0: twice the env's longest episode)", "min": 0}
    )
    estimator: str = field(
        default="trajectory_mc",
        metadata={
            "help": "advantage estimator of routine_envs.credit (name, 'name{json}', path); one "
            "that reads values (gae: Turn-PPO) gets a learned turn-level value model"
        },
    )
    steps: int = field(default=200, metadata={"help": "most GRPO steps per run", "min": 1})
    target: float = field(
        default=0.8, metadata={"help": "stop at this exact success probability", "min": 0.0}
    )
    warm_start_steps: int = field(
        default=60, metadata={"help": "supervised steps on canonical replies (0: none)", "min": 0}
    )
    warm_start_target: str = field(
        default="every_reply",
        metadata={
            "help": "what the warm start fits: every_reply (each canonical reply equally "
            "weighted: the uniform policy in every context) or canonical_mass (the total "
            "probability of the canonical replies: the format only)",
            "choices": ("every_reply", "canonical_mass"),
        },
    )
    learning_rate: float = field(default=1e-3, metadata={"help": "Adam step size", "min": 0.0})
    group_size: int = field(default=8, metadata={"help": "episodes per group", "min": 1})
    groups_per_step: int = field(default=4, metadata={"help": "groups per step", "min": 1})
    num_iterations: int = field(default=1, metadata={"help": "Adam steps per batch", "min": 1})
    epsilon: float = field(default=0.2, metadata={"help": "clipping range", "min": 0.0})
    beta: float = field(default=0.0, metadata={"help": "weight of the k3 KL term", "min": 0.0})
    loss_type: str = field(
        default="dapo",
        metadata={
            "help": "aggregation of the token losses",
            "choices": ("dapo", "grpo", "dr_grpo"),
        },
    )
    max_reply_tokens: int = field(default=8, metadata={"help": "longest reply", "min": 1})
    invalid_advantage: float = field(
        default=-1.0, metadata={"help": "advantage of an invalid reply's tokens (format reward)"}
    )
    window: int = field(
        default=1,
        metadata={"help": "observations in the context (1: Markov; 0: whole transcript)", "min": 0},
    )
    max_positions: int = field(
        default=256,
        metadata={"help": "longest context in tokens (raise for --window 0)", "min": 16},
    )
    dim: int = field(default=64, metadata={"help": "model width", "min": 8})
    num_layers: int = field(default=2, metadata={"help": "transformer blocks", "min": 1})
    init_std: float = field(
        default=0.02,
        metadata={"help": "std of the linear layers' initial weights (embeddings: 0.02)"},
    )
    decoding: str = field(
        default="free",
        metadata={
            "help": "free (token by token, any text) or canonical (constrained decoding: one "
            "of the canonical replies, with the model's renormalised probabilities)",
            "choices": ("free", "canonical"),
        },
    )
    threads: int = field(default=1, metadata={"help": "torch threads per run", "min": 1})


@dataclass
class TrainSettings(LMSettings):
    """A tiny causal LM learns a text env by GRPO on CPU (learning curves per seed)."""

    seeds: list[int] = field(default_factory=lambda: [0, 1, 2], metadata={"help": "seeds"})
    workers: int = field(default=1, metadata={"help": "runs in parallel", "min": 1})
    out: Path = field(default=Path("results/lm/train"), metadata={"help": "output folder"})


LM_FIELDS = tuple(f.name for f in dataclasses.fields(LMSettings))


def job_of(settings: LMSettings, seed: int, **changes: Any) -> dict[str, Any]:
    """One run: the :class:`LMSettings` fields (with ``changes``) and the seed."""
    job = {name: getattr(settings, name) for name in LM_FIELDS}
    job.update(changes, seed=int(seed))
    return job


def plan(settings: TrainSettings) -> list[dict[str, Any]]:
    """One run per seed (the env's density keyword known: :func:`~.records.density_of`)."""
    cli.check_unique("seeds", settings.seeds)
    density_of(settings.env_id, settings.env_kwargs)
    return [job_of(settings, seed) for seed in settings.seeds]


def key(job: dict[str, Any]) -> str:
    return json.dumps(job, sort_keys=True)


def run(job: dict[str, Any]) -> LMRunRecord:
    """Train one model; its record: the job, the env's density, the curve (one row per step),
    ``steps_to_target`` (``None`` when not reached), the initial and final exact success, CPU
    seconds."""
    import numpy as np
    import torch

    from baselines.lib.lm import GRPOConfig, GRPOTrainer, build_policy, warm_start
    from routine_envs.text import make_text_env

    torch.set_num_threads(int(job["threads"]))
    probe = make_text_env(job["env_id"], **job["env_kwargs"])
    max_turns = job["max_turns"] or 2 * probe.unwrapped.max_episode_length

    def factory() -> Any:
        return make_text_env(job["env_id"], max_turns=max_turns, **job["env_kwargs"])

    start_cpu, start_wall = time.process_time(), time.perf_counter()
    policy = build_policy(
        probe,
        dim=job["dim"],
        num_layers=job["num_layers"],
        window=job["window"],
        max_positions=job.get("max_positions", 256),
        seed=job["seed"],
        init_std=job.get("init_std", 0.02),
        decoding=job.get("decoding", "free"),
    )
    losses = warm_start(
        policy,
        factory,
        job["warm_start_steps"],
        seed=job["seed"],
        target=job.get("warm_start_target", "every_reply"),
    )
    warm_cpu = time.process_time() - start_cpu
    config = GRPOConfig(
        learning_rate=job["learning_rate"],
        group_size=job["group_size"],
        groups_per_step=job["groups_per_step"],
        num_iterations=job["num_iterations"],
        epsilon=job["epsilon"],
        beta=job["beta"],
        loss_type=job["loss_type"],
        max_reply_tokens=job["max_reply_tokens"],
        invalid_advantage=job["invalid_advantage"],
    )
    trainer = GRPOTrainer(policy, factory, job["estimator"], config, seed=job["seed"])
    initial = trainer.evaluate()
    initial_sampled = trainer.sampled(SAMPLE_EPISODES)
    curve = trainer.train(
        job["steps"],
        target=job["target"],
        sample_every=SAMPLE_EVERY,
        sample_episodes=SAMPLE_EPISODES,
    )
    reached = [r["step"] for r in curve if r.get("exact_success", r["success"]) >= job["target"]]
    density_kwarg, density_value = density_of(job["env_id"], job["env_kwargs"])
    return LMRunRecord.from_row(
        {
            **job,
            "density_kwarg": density_kwarg,
            "density_value": density_value,
            "rho": float(probe.unwrapped.decision_density),
            "chance": float(
                probe.unwrapped.success_probability(
                    np.full((probe.unwrapped.num_states, probe.view.num_actions), 1.0)
                    / probe.view.num_actions
                )
            ),
            "parameters": policy.model.num_parameters,
            "vocab_size": policy.tokenizer.vocab_size,
            "warm_start_loss": losses[-1] if losses else None,
            "warm_start_cpu_seconds": warm_cpu,
            "initial_exact_success": initial.get("exact_success"),
            "initial_canonical_mass": initial.get("canonical_mass"),
            "initial_sampled": initial_sampled,
            "final_sampled_success": next(
                (r["sampled_success"] for r in reversed(curve) if "sampled_success" in r), None
            ),
            "final_exact_success": curve[-1].get("exact_success") if curve else None,
            "steps_to_target": reached[0] if reached else None,
            "steps_run": len(curve),
            "cpu_seconds": time.process_time() - start_cpu,
            "wall_seconds": time.perf_counter() - start_wall,
            "curve": [{k: v for k, v in row.items() if v is not None} for row in curve],
        }
    )


def analyse(records: list[dict[str, Any]], settings: TrainSettings) -> dict[str, Any]:
    """``curve.csv``, ``curve.png`` and ``summary.json`` of the runs into ``settings.out``
    (:mod:`baselines.experiments.lm.analysis`); the summary."""
    from baselines.experiments.lm import plots

    out = settings.out
    out.mkdir(parents=True, exist_ok=True)
    rows = analysis.curve_rows(records)
    columns = analysis.CURVE_COLUMNS
    write_csv(out / "curve.csv", [{c: row.get(c) for c in columns} for row in rows])
    bands = {c: analysis.curve_band(rows, c) for c in ("exact_success", "sampled_success")}
    write_csv(out / "curve_band.csv", [b for band in bands.values() for b in band])
    summary = analysis.train_summary(records)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    plots.plot_curves(rows, summary, out / "curve.png", bands)
    return summary


def run_runs(jobs: list[dict[str, Any]], settings: Any) -> list[dict[str, Any]]:
    """Run what is missing of ``jobs`` into ``settings.out / "results.jsonl"`` (resumable,
    ``settings.workers`` at a time); every record, as rows (older rows upgraded:
    :func:`~baselines.experiments.lm.records.upgrade`)."""
    return run_resumable(
        jobs,
        key,
        run,
        settings.out / "results.jsonl",
        settings.workers,
        required={"key": "str", **LMRunRecord.schema()},
        check=LMRunRecord.check,
        unit=LMRunRecord.unit,
        upgrade=upgrade,
    )


def main(settings: TrainSettings) -> dict[str, Any]:
    """Run (resumably), analyse, print the table and the summary."""
    cli.check_output_folder(settings.out)
    records = run_runs(plan(settings), settings)
    summary = analyse(records, settings)
    print(format_table(analysis.train_table(records), list(analysis.TRAIN_TABLE_COLUMNS)))
    print(json.dumps(summary, indent=2))
    return summary
