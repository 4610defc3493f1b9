"""``python -m baselines train``: one training run, on either trainer.

Methods: ``ppo`` is SB3's PPO (turn-level, learned critic, GAE; ``MaskablePPO`` when the env has
``action_masks()``); every estimator name of :mod:`routine_envs.credit` and every import path
``package.module:Name`` trains ``TrajectoryAdvantagePPO`` with that estimator (``--trainer
batched``: the same algorithm in :mod:`baselines.lib.batched`). Hyperparameters: the default
config (:data:`baselines.lib.config.DEFAULT_CONFIG`), overridden by
``baselines/configs/<env id>.yml`` where it exists, or by ``--config``. Everything is validated
before training starts.

The evaluation success rate over time goes to ``<out>/success.csv`` (exact where the env has a
model, else the success share of ``--eval-episodes`` sampled episodes), the settings and the
resolved hyperparameters to ``<out>/settings.json``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baselines.lib.runs import Run, check
from baselines.lib.trainers import DEFAULT_TRAINER, TRAINERS, RunResult, device_field
from routine_envs.cli import check_output_folder


@dataclass
class TrainArgs:
    """Settings of one run (cleanrl-style: each field carries its help text)."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "gym.make keyword arguments (JSON)"}
    )
    method: str = field(
        default="ppo",
        metadata={
            "help": "'ppo', an estimator name, or an import path 'package.module:Name' of your "
            "own estimator; either may end with JSON arguments, e.g. 'gigpo{\"omega\": 0.5}'"
        },
    )
    seed: int = field(default=0, metadata={"help": "seed of the algorithm and the envs", "min": 0})
    total_timesteps: int = field(default=50_000, metadata={"help": "environment steps", "min": 1})
    eval_every: int = field(default=2_000, metadata={"help": "steps between evaluations", "min": 1})
    eval_episodes: int = field(
        default=200,
        metadata={"help": "episodes per evaluation when the env has no exact model", "min": 1},
    )
    target_success: float = field(default=0.9, metadata={"help": "success rate to reach"})
    out: Path | None = field(default=None, metadata={"help": "folder for CSV and SB3 logs"})
    config: Path | None = field(default=None, metadata={"help": "hyperparameter YAML"})
    tensorboard: bool = field(default=False, metadata={"help": "write TensorBoard logs"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    trainer: str = field(
        default=DEFAULT_TRAINER,
        metadata={
            "help": "'sb3' (SB3 PPO / TrajectoryAdvantagePPO, one process per run) or 'batched' "
            "(baselines.lib.batched: the same algorithm, many runs per process)",
            "choices": list(TRAINERS),
        },
    )
    device: str = device_field()


def run_of(args: TrainArgs) -> Run:
    """The run ``args`` describe, checked (``ValueError`` naming the first bad flag)."""
    run = Run.of(
        args.env_id,
        args.method,
        args.env_kwargs,
        args.seed,
        budget=args.total_timesteps,
        eval_every=args.eval_every,
        target=args.target_success,
        trainer=args.trainer,
        config=args.config,
        eval_episodes=args.eval_episodes,
        device=args.device,
    )
    check(run)
    return run


def main(args: TrainArgs) -> RunResult:
    """Train the run of ``args`` (every setting checked first; a refused run creates nothing),
    write ``settings.json`` and ``success.csv`` to ``args.out`` where given, print its outcome
    and return its result."""
    from baselines.lib import batched, sb3_trainer

    run = run_of(args)
    if args.tensorboard and args.trainer != DEFAULT_TRAINER:
        raise ValueError("--tensorboard is not supported by --trainer batched (it logs no SB3 run)")
    if args.tensorboard and args.out is None:
        raise ValueError("--tensorboard needs --out (the logs go there)")
    if args.out is not None:
        check_output_folder(args.out)  # the last check: a refused run creates nothing
        args.out.mkdir(parents=True, exist_ok=True)
        settings = {
            **asdict(args),
            "out": str(args.out),
            "config": str(args.config),
            "hyperparameters": run.trained_with,
        }
        (args.out / "settings.json").write_text(json.dumps(settings, indent=2, default=str))
    if run.trainer == DEFAULT_TRAINER:  # success.csv written as it is measured
        result = sb3_trainer.train_one(run, args.out, args.progress, args.tensorboard)
    else:
        (result,) = batched.train([run], progress=args.progress)
        if args.out is not None:
            write_curve(args.out / "success.csv", result)
    print(
        f"final success {result.final_success:.3f}; steps to {run.target}: "
        f"{'not reached' if result.steps_to_target is None else f'{result.steps_to_target:.0f}'}"
        f" (interpolated between evaluations); {result.wall_time:.1f} s"
    )
    return result


def write_curve(path: Path, result: RunResult) -> None:
    """``timesteps,success,exact`` rows of a run's success curve (what SB3's run writes as it
    measures)."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["timesteps", "success", "exact"])
        for t, value in zip(result.timesteps, result.success, strict=True):
            writer.writerow([t, f"{value:.6f}", int(result.exact)])
