"""``python -m baselines.bench_training``: training throughput (the experiment:
:mod:`baselines.experiments.bench_training`)."""

from baselines.commands import script
from baselines.experiments.bench_training.sweep import BenchArgs, parse_args, throughput

__all__ = ["BenchArgs", "main", "parse_args", "throughput"]

main = script("bench_training")

if __name__ == "__main__":
    main()
