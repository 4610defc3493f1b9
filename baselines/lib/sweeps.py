"""The settings every training sweep shares (the comparison sweep, the team sweep): an
environment, density values, methods, seeds, a budget in episodes, the evaluation schedule and
where the runs run (:class:`SweepArgs`), their checks, and the runs they plan
(:func:`runs_of`, :mod:`baselines.lib.runs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.lib import cli
from baselines.lib.backend import BackendArgs
from baselines.lib.runs import Run, plan
from baselines.lib.specs import parse_method
from baselines.lib.stats import STATISTICS
from baselines.lib.trainers import (
    DEFAULT_TRAINER,
    TRAINERS,
    check_device,
    check_trainer,
    device_field,
)


# ------------------------------------------------------------------------- a sweep
@dataclass
class SweepArgs(BackendArgs):
    """Settings of a sweep (where its runs run: :class:`~baselines.lib.backend.BackendArgs`)."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "fixed gym.make kwargs (JSON)"}
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [2, 20],
        metadata={
            "help": "values of the env's density keyword to sweep (routine_length L for Diluted "
            "Doors and CodeFix, corridor_length for RoutineGrid)",
            "min": 0,
        },
    )
    methods: list[str] = field(
        default_factory=lambda: ["ppo", "trajectory_mc"],
        metadata={
            "help": "'ppo', estimator names and/or import paths 'package.module:Name' of your "
            "own estimators (each may end with JSON arguments); see docs/estimators.md"
        },
    )
    config: Path | None = field(
        default=None,
        metadata={
            "help": "hyperparameter YAML for this sweep instead of baselines/configs/<env id>.yml"
        },
    )
    seeds: list[int] = field(
        default_factory=lambda: [0, 1, 2], metadata={"help": "seeds", "min": 0}
    )
    budget_episodes: int = field(
        default=1200,
        metadata={
            "help": "training budget per run, in episodes of the longest episode length",
            "min": 1,
        },
    )
    min_budget_steps: int = field(
        default=0,
        metadata={
            "help": "lower bound of the budget in steps (short episodes need enough updates)",
            "min": 0,
        },
    )
    eval_points: int = field(default=12, metadata={"help": "evaluations per run", "min": 1})
    target_success: float = field(default=0.9, metadata={"help": "target success rate"})
    out: Path = field(default=Path("results/compare/demo"), metadata={"help": "output folder"})
    workers: int = field(
        default=2,
        metadata={"help": "runs in parallel (processes, or a local Ray instance's CPUs)", "min": 1},
    )
    baseline: str = field(default="ppo", metadata={"help": "turn-level method for ratios"})
    statistic: str = field(default="iqm", metadata={"help": "'iqm' or 'mean' for curves"})
    trainer: str = field(
        default=DEFAULT_TRAINER,
        metadata={
            "help": "'sb3' (SB3 PPO / TrajectoryAdvantagePPO, one process per run) or 'batched' "
            "(baselines.lib.batched: the same algorithm, the seeds and densities of a method "
            "trained together in one process; environments with an exact model only, "
            "docs/batched.md); recorded in every row and part of its key",
            "choices": list(TRAINERS),
        },
    )
    device: str = device_field()


def check_lists(args: SweepArgs) -> None:
    """Refuse empty lists and a value given twice (a seed run twice would count twice)."""
    for name in ("routine_lengths", "methods", "seeds"):
        values = getattr(args, name)
        if not values:
            raise ValueError(f"{name} must not be empty")
        cli.check_unique(name, values)


def check_sweep(args: SweepArgs, density_kwarg: str) -> None:
    """What every training sweep refuses before any work: empty or repeated lists, a negative
    seed, an unknown statistic or trainer, a bad method or config key, counts below 1,
    ``--env-kwargs`` setting the kwarg ``--routine-lengths`` sweeps, a ``--baseline`` not among
    ``--methods``. (What the trainer cannot train is refused when the jobs are planned:
    :func:`runs_of`.)"""
    from baselines.lib.config import load_hyperparameters

    check_lists(args)
    check_trainer(args.trainer)
    check_device(args.device)
    if args.statistic not in STATISTICS:
        raise ValueError(f"--statistic {args.statistic}: must be one of {sorted(STATISTICS)}")
    if any(seed < 0 for seed in args.seeds):
        raise ValueError(f"--seeds {args.seeds}: must be >= 0")
    for method in args.methods:
        load_hyperparameters(args.env_id, method, args.config)  # a bad key fails here
    for flag, value in (
        ("--budget-episodes", args.budget_episodes),
        ("--eval-points", args.eval_points),
        ("--workers", args.workers),
    ):
        if value < 1:
            raise ValueError(f"{flag} {value}: must be >= 1")
    if not 0 < args.target_success <= 1:
        raise ValueError(f"--target-success {args.target_success}: must be in (0, 1]")
    check_overrides(args, density_kwarg)


def runs_of(args: SweepArgs, density_kwarg: str, extra: Any = None) -> list[Run]:
    """The runs of a sweep's settings (:func:`~baselines.lib.runs.plan`; each method parsed
    once, here)."""
    return plan(
        args.env_id,
        args.env_kwargs,
        density_kwarg,
        args.routine_lengths,
        [parse_method(m) for m in args.methods],
        args.seeds,
        args.budget_episodes,
        args.min_budget_steps,
        args.eval_points,
        args.target_success,
        args.config,
        extra,
        args.trainer,
        device=args.device,
    )


def check_overrides(args: SweepArgs, density_kwarg: str) -> None:
    """Refuse settings that another would silently override or that would give an empty
    table: ``--env-kwargs`` setting the kwarg ``--routine-lengths`` sweeps, a ``--baseline``
    that is not among ``--methods``."""
    if density_kwarg in args.env_kwargs:
        raise ValueError(
            f"--env-kwargs sets {density_kwarg}={args.env_kwargs[density_kwarg]!r}, which "
            f"--routine-lengths sweeps (and would override): give the lengths with "
            f"--routine-lengths only"
        )
    if args.baseline not in args.methods:
        raise ValueError(
            f"--baseline {args.baseline} is not among --methods {args.methods}: the ratio "
            "table would be empty; add it to --methods or choose one of them"
        )
