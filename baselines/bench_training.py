"""``python -m baselines.bench_training``: CPU per environment step of SB3 and of the batched
trainer (the experiment: :mod:`baselines.experiments.bench_training`)."""

from typing import Any

from baselines.experiments.bench_training import sweep
from baselines.experiments.bench_training.sweep import (
    BenchArgs,
    batched_cpu_per_step,
    parse_args,
    sb3_cpu_per_step,
)

__all__ = ["BenchArgs", "batched_cpu_per_step", "main", "parse_args", "sb3_cpu_per_step"]


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Parse ``argv``, measure, print the table and return its rows."""
    return sweep.main(parse_args(argv))


if __name__ == "__main__":
    main()
