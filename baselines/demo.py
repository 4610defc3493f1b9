"""``make demo`` / ``python -m baselines.demo``: the main job (the experiment:
:mod:`baselines.experiments.demo`)."""

from baselines.experiments.demo.sweep import DemoArgs, main, parse_args

__all__ = ["DemoArgs", "main", "parse_args"]

if __name__ == "__main__":
    main(parse_args())
