"""``python -m baselines.bench_training``: training throughput (the experiment:
:mod:`baselines.experiments.bench_training`)."""

from baselines.experiments.bench_training import sweep
from baselines.experiments.bench_training.sweep import BenchArgs, parse_args, throughput

__all__ = ["BenchArgs", "main", "parse_args", "throughput"]


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Parse ``argv`` and time the methods; the best env steps per second of each."""
    return sweep.main(parse_args(argv))


if __name__ == "__main__":
    main()
