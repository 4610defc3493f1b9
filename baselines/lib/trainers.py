"""The trainers a run can have and what every one of them returns: a leaf module, so the SB3
trainer (:mod:`baselines.lib.training`), the batched one (:mod:`baselines.lib.batched`) and the
runs that dispatch to them (:mod:`baselines.lib.training_runs`) import it and not each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TRAINERS = ("sb3", "batched")
"""What trains a run: ``sb3`` (SB3's PPO / ``TrajectoryAdvantagePPO``, one process per run, the
default and the references') or ``batched`` (:mod:`baselines.lib.batched`: the same algorithm,
the runs of one environment and method in one process)."""
DEFAULT_TRAINER = "sb3"
"""The trainer of a row that names none (every row written before the field existed)."""


def trainer_of(row: dict[str, Any]) -> str:
    """The trainer of a job or row (:data:`DEFAULT_TRAINER` when it names none)."""
    return row.get("trainer") or DEFAULT_TRAINER


def check_trainer(trainer: str) -> None:
    """``ValueError`` naming ``--trainer`` unless it is one of :data:`TRAINERS`."""
    if trainer not in TRAINERS:
        raise ValueError(f"--trainer must be one of {list(TRAINERS)}, got {trainer!r}")


def schedule(budget: int, eval_every: int) -> list[int]:
    """The evaluation points of a run: 0 and every multiple of ``eval_every`` up to the budget
    (never past it, whatever the rollout size)."""
    return list(range(0, budget + 1, eval_every))


@dataclass
class RunResult:
    """What a run measured, whichever trainer trained it: the success curve at the evaluation
    grid and its summaries."""

    timesteps: list[int]
    success: list[float]
    steps_to_target: float | None
    wall_time: float
    hyperparameters: dict[str, Any]
    steps_trained: int = 0
    """Environment steps the learner consumed (whole rollouts: may exceed the budget)."""
    cpu_time: float | None = None
    """CPU seconds of the run (process time; for a batched run its share of the batch's)."""
    privileged_fields: tuple[str, ...] = ()
    """The privileged batch fields its estimator was given (its ``requires``, read once when it
    was built: :func:`routine_envs.credit.declare`); ``()`` for ``ppo`` and label-free methods."""

    @property
    def final_success(self) -> float:
        return self.success[-1]
