"""``python -m baselines.compare``: a comparison sweep (the experiment:
:mod:`baselines.experiments.compare`)."""

import sys

from baselines.experiments.compare.sweep import SWEEPS, SweepArgs, main, parse_args, run_sweep

__all__ = ["SWEEPS", "SweepArgs", "main", "parse_args", "run_sweep"]

if __name__ == "__main__":
    try:
        main(parse_args())
    except ValueError as err:
        sys.exit(f"error: {err}")
