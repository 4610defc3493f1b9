"""``python -m baselines.bench_backends``: one sweep on the process pool and on Ray (the
experiment: :mod:`baselines.experiments.bench_backends`)."""

from typing import Any

from baselines.experiments.bench_backends import sweep
from baselines.experiments.bench_backends.sweep import BenchArgs, parse_args

__all__ = ["BenchArgs", "main", "parse_args"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv`` and time the backends; the overhead ratios and speed-ups."""
    return sweep.main(parse_args(argv), argv)


if __name__ == "__main__":
    main()
