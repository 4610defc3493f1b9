"""The trainers a run can have and what every one of them returns: a leaf module, so the SB3
trainer (:mod:`baselines.lib.sb3_trainer`), the batched one (:mod:`baselines.lib.batched`) and
the runs that dispatch to them (:mod:`baselines.lib.runs`) import it and not each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TRAINERS = ("sb3", "batched")
"""What trains a run: ``sb3`` (SB3's PPO / ``TrajectoryAdvantagePPO``, one process per run, the
default and the references') or ``batched`` (:mod:`baselines.lib.batched`: the same algorithm,
the runs of one environment and method in one process)."""
TRAINER_MODULES = {"sb3": "baselines.lib.sb3_trainer", "batched": "baselines.lib.batched"}
"""Where each trainer lives: a module with ``check(run)`` (``ValueError``, one line, when it
cannot train a :class:`~baselines.lib.runs.Run`) and ``train(runs, progress) -> results``
(one :class:`RunResult` per run, in order) of runs ``check`` passed
(:func:`baselines.lib.runs.train` checks every run before any training)."""
DEFAULT_TRAINER = "sb3"
"""The trainer of a row that names none (every row written before the field existed)."""


def trainer_of(row: dict[str, Any]) -> str:
    """The trainer of a job or row (:data:`DEFAULT_TRAINER` when it names none)."""
    return row.get("trainer") or DEFAULT_TRAINER


def check_trainer(trainer: str) -> None:
    """``ValueError`` naming ``--trainer`` unless it is one of :data:`TRAINERS`."""
    if trainer not in TRAINERS:
        raise ValueError(f"--trainer must be one of {list(TRAINERS)}, got {trainer!r}")


DEFAULT_DEVICE = "cpu"
"""Where a run's tensors live unless it names a device (every shipped run: the CPU)."""


def check_device(device: str) -> None:
    """``ValueError`` naming ``--device`` unless ``device`` is a torch device this machine has
    (``cpu``, ``cuda``, ``cuda:1``, ``mps``...; parsed by ``torch.device``)."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"--device {device!r}: not a torch device ({exc})") from None
    if parsed.type == "cpu":
        return
    backend = getattr(torch, parsed.type, None)
    available = getattr(backend, "is_available", None)
    if available is None or not available():
        raise ValueError(f"--device {device}: torch {torch.__version__} has no {parsed.type} here")
    count = getattr(backend, "device_count", lambda: 1)()
    if parsed.index is not None and parsed.index >= count:
        raise ValueError(f"--device {device}: this machine has {count} {parsed.type} device(s)")


def device_field() -> Any:
    """The ``--device`` setting of a command that trains runs (a settings dataclass field)."""
    return field(
        default=DEFAULT_DEVICE,
        metadata={
            "help": "torch device of the runs' networks (cpu, cuda, cuda:1...; "
            "docs/batched.md, 'On a GPU'); another device computes other bits, so it is "
            "recorded and keyed unless it is cpu"
        },
    )


def check_feedable(estimator: Any, env: Any, provides: frozenset[str], trainer: str) -> None:
    """``ValueError`` (one line) when ``trainer`` cannot feed ``estimator`` on ``env`` (a
    Gymnasium env): ``info`` keys it needs that the env does not give at ``reset``, or batch
    fields ``trainer`` does not provide (``provides``)."""
    from routine_envs import credit

    _, info = env.reset(seed=0)
    missing = credit.missing_annotations(estimator, info)
    if missing:
        raise ValueError(
            f"estimator {estimator.name!r} needs info keys {missing}, which "
            f"{env.unwrapped.__class__.__name__} does not provide"
        )
    credit.check_provides(estimator, provides, trainer)


LEARNER_FILLED = frozenset({"values"})
"""Batch fields a trainer fills with the learner's own predictions (its value head, or none):
privileged only where exact (:data:`routine_envs.episodes.PRIVILEGED_FIELDS`: the SNR lab's
``V^pi``), never in a training run."""


def training_privileged(estimator: Any) -> tuple[str, ...]:
    """The privileged fields a training run gives ``estimator`` (its declared record's
    ``privileged``, without the fields the trainer fills with the learner's predictions)."""
    return tuple(f for f in estimator.privileged if f not in LEARNER_FILLED)


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

    cpu_split: dict[str, float] = field(default_factory=dict)
    """Its CPU seconds per phase of training (the batched trainer's
    :data:`~baselines.lib.batched.trainer.PHASES`; for a batched run its share of the batch's;
    ``{}``: not split)."""
    update_flops: float = 0.0
    """Matrix FLOPs of its updates (the batched trainer's count; 0: not counted)."""
    exact: bool = True
    """Whether the curve is exact success probabilities (the env's model), not the success
    share of sampled episodes."""

    @property
    def final_success(self) -> float:
        return self.success[-1]
