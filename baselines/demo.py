"""``make demo`` / ``python -m baselines.demo``: the main job (the experiment:
:mod:`baselines.experiments.demo`)."""

from baselines.commands import script
from baselines.experiments.demo.sweep import DemoArgs, main, parse_args

__all__ = ["DemoArgs", "cli_main", "main", "parse_args"]

cli_main = script("demo")

if __name__ == "__main__":
    cli_main()
