"""``make demo`` / ``python -m baselines.demo``: the main job (the experiment:
:mod:`baselines.experiments.demo`)."""

from baselines.experiments.demo.sweep import DemoArgs, main, parse_args
from baselines.lib import cli

__all__ = ["DemoArgs", "cli_main", "main", "parse_args"]


def cli_main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and run the demo (bad settings, a full disk, Ctrl-C: one line)."""
    return cli.run_main(main, parse_args(argv))


if __name__ == "__main__":
    cli_main()
