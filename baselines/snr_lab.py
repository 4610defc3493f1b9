"""``python -m baselines.snr_lab {rho-law,critic,beyond,all}``: the SNR lab (the experiment:
:mod:`baselines.experiments.snr_lab`); ``python -m baselines.snr_lab measure ...``: the open lab
(any env, estimators, policy: :mod:`baselines.experiments.snr_lab.measure`)."""

import sys
from typing import Any

from baselines.experiments.snr_lab import measure, sweep
from baselines.experiments.snr_lab.sweep import LabArgs, parse_args, rho_law

__all__ = ["LabArgs", "main", "parse_args", "rho_law"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv`` and run the chosen experiment(s), or ``measure``; their summaries (bad
    settings: one line on stderr, exit status 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["measure"]:
        return measure.cli_main(argv[1:])
    return sweep.cli_main(argv)


if __name__ == "__main__":
    main()
