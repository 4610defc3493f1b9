"""``python -m baselines.train``: one training run (the library: :mod:`baselines.lib.training`)."""

from baselines.lib.training import RunResult, TrainArgs, build, cli_main, main, parse_args

__all__ = ["RunResult", "TrainArgs", "build", "cli_main", "main", "parse_args"]

if __name__ == "__main__":
    cli_main()
