"""``python -m baselines.compare``: a comparison sweep (the experiment:
:mod:`baselines.experiments.compare`)."""

from baselines.experiments.compare.sweep import (
    SWEEPS,
    SweepArgs,
    cli_main,
    main,
    parse_args,
    run_sweep,
)

__all__ = ["SWEEPS", "SweepArgs", "cli_main", "main", "parse_args", "run_sweep"]

if __name__ == "__main__":
    cli_main()
