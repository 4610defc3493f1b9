"""``python -m baselines.bench_training``: CPU per environment step of SB3 and of the batched
trainer (the experiment: :mod:`baselines.experiments.bench_training`)."""

from baselines.commands import script
from baselines.experiments.bench_training.sweep import (
    BenchArgs,
    batched_cpu_per_step,
    parse_args,
    sb3_cpu_per_step,
)

__all__ = ["BenchArgs", "batched_cpu_per_step", "main", "parse_args", "sb3_cpu_per_step"]

main = script("bench_training")

if __name__ == "__main__":
    main()
