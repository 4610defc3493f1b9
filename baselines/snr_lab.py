"""``python -m baselines.snr_lab {rho-law,critic,beyond,all}``: the SNR lab (the experiment:
:mod:`baselines.experiments.snr_lab`); ``python -m baselines.snr_lab measure ...``: the open lab
(any env, estimators, policy: :mod:`baselines.experiments.snr_lab.measure`)."""

from baselines.commands import script
from baselines.experiments.snr_lab.sweep import LabArgs, parse_args, rho_law

__all__ = ["LabArgs", "main", "parse_args", "rho_law"]

main = script("snr_lab")

if __name__ == "__main__":
    main()
