"""How a run is evaluated, and how its success curve is scored: one rule per evaluation mode.

A run's ``evaluation`` (:attr:`baselines.lib.runs.Run.evaluation`, recorded in its row) is one
of :data:`EVALUATIONS`:

- ``schedule`` (rb1, rb2 and every command's default): the success of the policy in use when
  the step count first reaches each point of a fixed grid (0 and every ``eval_every`` steps:
  :func:`baselines.lib.trainers.schedule`). The policy changes once per update, so between
  updates the curve is flat, and the steps to target are interpolated linearly between the two
  evaluations around the crossing (:func:`baselines.lib.stats.first_crossing`): a number that
  moves with the grid (docs/benchmark.md, "rb3").
- ``updates`` (rb3): the exact success of the initial policy and of the policy after every
  update, each at the environment steps its updates consumed (0, then the step count after
  each rollout). The curve is a step function known at every one of its steps; the steps to
  target are the steps of the first policy that reaches the target, no interpolation
  (:func:`first_reaching`), so evaluating more often cannot move them; the AUC integrates the
  step function (:func:`step_auc`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.lib.stats import first_crossing

DEFAULT_EVALUATION = "schedule"
"""The evaluation of a run or row that names none (every row written before the field)."""


def first_reaching(timesteps: Sequence[float], values: Sequence[float], target: float) -> float:
    """The first time whose value reaches ``target`` (no interpolation); ``inf`` if none."""
    for t, v in zip(timesteps, values, strict=True):
        if v >= target:
            return float(t)
    return float("inf")


def trapezoid_auc(timesteps: Sequence[float], values: Sequence[float]) -> float:
    """Area under a curve sampled at ``timesteps`` over its span, in the values' unit
    (trapezoid rule; the mean value for a single point)."""
    t = np.asarray(timesteps, dtype=np.float64)
    s = np.asarray(values, dtype=np.float64)
    if len(t) < 2:
        return float(s.mean())
    return float(np.sum((s[1:] + s[:-1]) / 2 * np.diff(t)) / (t[-1] - t[0]))


def step_auc(timesteps: Sequence[float], values: Sequence[float]) -> float:
    """Area under a step function over its span: ``values[k]`` holds from ``timesteps[k]`` to
    ``timesteps[k + 1]`` (the policy after update k acts until the next update); the last
    value, the final policy's, has no span. The value itself for a single point."""
    t = np.asarray(timesteps, dtype=np.float64)
    s = np.asarray(values, dtype=np.float64)
    if len(t) < 2:
        return float(s.mean())
    return float(np.sum(s[:-1] * np.diff(t)) / (t[-1] - t[0]))


@dataclass(frozen=True)
class Evaluation:
    """An evaluation mode: what its curve's points are, and how the curve is scored."""

    name: str
    points: str
    steps_to_target: Callable[[Sequence[float], Sequence[float], float], float]
    auc: Callable[[Sequence[float], Sequence[float]], float]


EVALUATIONS: dict[str, Evaluation] = {
    "schedule": Evaluation(
        "schedule",
        "the policy in use at 0 and every eval_every steps",
        first_crossing,
        trapezoid_auc,
    ),
    "updates": Evaluation(
        "updates",
        "the initial policy and the policy after every update, at the steps it consumed",
        first_reaching,
        step_auc,
    ),
}
"""The evaluation modes by name (see the module docstring)."""


def check_evaluation(name: str) -> None:
    """``ValueError`` naming ``--evaluation`` unless ``name`` is one of :data:`EVALUATIONS`."""
    if name not in EVALUATIONS:
        raise ValueError(f"--evaluation must be one of {list(EVALUATIONS)}, got {name!r}")


def evaluation_of(row: Mapping[str, Any]) -> Evaluation:
    """The evaluation of a run's row (:data:`DEFAULT_EVALUATION` when it names none)."""
    return EVALUATIONS[row.get("evaluation") or DEFAULT_EVALUATION]


def steps_to_target(row: Mapping[str, Any], target: float | None = None) -> float:
    """The steps to ``target`` (default: the row's) of a run's row, by its evaluation's rule;
    ``inf`` when never reached."""
    rule = evaluation_of(row).steps_to_target
    return rule(row["timesteps"], row["success"], row["target"] if target is None else target)


def normalized_auc(row: Mapping[str, Any]) -> float:
    """Area under a run's success curve over its span, in ``[0, 1]``, by its evaluation's rule."""
    return evaluation_of(row).auc(row["timesteps"], row["success"])
