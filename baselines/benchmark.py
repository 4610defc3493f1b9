"""``python -m baselines.benchmark {run,report,references}``: the benchmark protocol (the
experiment: :mod:`baselines.experiments.benchmark`)."""

from typing import Any

from baselines.experiments.benchmark import command

__all__ = ["main"]


def main(argv: list[str] | None = None) -> Any:
    """Parse ``argv`` and run the subcommand (bad settings: one line on stderr, exit status 2)."""
    return command.cli_main(argv)


if __name__ == "__main__":
    main()
