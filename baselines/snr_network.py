"""``python -m baselines.snr_network``: gradient SNR of a neural policy (the experiment:
:mod:`baselines.experiments.snr_network`)."""

from typing import Any

from baselines.experiments.snr_network import sweep
from baselines.experiments.snr_network.sweep import NetworkArgs, measure, parse_args
from baselines.lib import cli

__all__ = ["NetworkArgs", "main", "measure", "parse_args"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv`` and run the measurement; its summary (bad settings, a full disk, Ctrl-C:
    one line)."""
    return cli.run_main(sweep.main, parse_args(argv))


if __name__ == "__main__":
    main()
