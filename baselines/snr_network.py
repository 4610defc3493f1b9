"""``python -m baselines.snr_network``: gradient SNR of a neural policy (the experiment:
:mod:`baselines.experiments.snr_network`)."""

from baselines.commands import script
from baselines.experiments.snr_network.sweep import NetworkArgs, measure, parse_args

__all__ = ["NetworkArgs", "main", "measure", "parse_args"]

main = script("snr_network")

if __name__ == "__main__":
    main()
