"""``python -m baselines.bench_backends``: one sweep on the process pool and on Ray (the
experiment: :mod:`baselines.experiments.bench_backends`)."""

from baselines.commands import script
from baselines.experiments.bench_backends.sweep import BenchArgs, parse_args

__all__ = ["BenchArgs", "main", "parse_args"]

main = script("bench_backends")

if __name__ == "__main__":
    main()
