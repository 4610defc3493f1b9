"""``python -m baselines.benchmark {run,report,references,leaderboard,plan}``: the benchmark
protocol (the experiment: :mod:`baselines.experiments.benchmark`)."""

from baselines.commands import script

__all__ = ["main"]

main = script("benchmark")

if __name__ == "__main__":
    main()
