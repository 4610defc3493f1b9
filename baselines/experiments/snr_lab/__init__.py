"""The SNR lab (``python -m baselines snr_lab {rho-law,critic,beyond,all}``: the gradient SNR
experiments of "Drowning in Routine", :mod:`baselines.experiments.snr_lab.sweep`), the open lab
(``snr_lab measure``: any estimators on any environment and policy,
:mod:`baselines.experiments.snr_lab.measure`) and the turn-index bias
(``snr_lab turn-bias``, :mod:`baselines.experiments.snr_lab.turn_bias`) and the SNR along
training (``snr_lab training``, :mod:`baselines.experiments.snr_lab.training`). Their rows of the
command tree are here."""

from routine_envs.cli import Command, Group

ORDER = 60
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

_LAB = "baselines.experiments.snr_lab.sweep"


def _lab(name: str, summary: str, description: str) -> Command:
    """One of the SNR lab's experiments (``all``: every one)."""
    return Command(
        name,
        summary,
        f"{_LAB}:LabCommand",
        f"{_LAB}:main",
        fixed={"experiment": name},
        check=f"{_LAB}:check_command",
        description=f"{description} Diluted Doors (success reward, 3 floors, 3 doors) at every "
        "routine length, the uniform policy; results.jsonl (resumable), tables (CSV), figures "
        "(PNG) and summary.json under --out (docs/reproducing.md).",
    )


SNR_LAB = Group(
    "snr_lab",
    "gradient SNR experiments of the paper, and the open lab (measure)",
    (
        _lab(
            "rho-law",
            "the rho law: perfect critic over the trajectory advantage against rho",
            "The rho law: gradient SNR of the perfect critic over that of the trajectory "
            "advantage against rho, its log-log fit beside the closed form, for one logit vector "
            "per state and per floor.",
        ),
        _lab(
            "critic",
            "noisy and Monte-Carlo critics against rho",
            "Imperfect critics: the oracle with noise (sigma a multiple of std(R)) and the "
            "Monte-Carlo critic with k rollouts, their SNR ratio to the trajectory advantage.",
        ),
        _lab(
            "beyond",
            "trajectory_mc, rloo, gigpo, routine_masked, mc_rollout and the oracle",
            "Beyond the paper: trajectory_mc, rloo, gigpo, routine_masked, mc_rollout and the "
            "oracle on the same axes, with the environment steps each estimate costs.",
        ),
        _lab("all", "rho-law, critic and beyond", "The rho law, the critics and beyond, in turn."),
        Command(
            "measure",
            "SNR, exact bias, cosine and MSE of any estimators on any environment and policy",
            "baselines.experiments.snr_lab.measure:MeasureArgs",
            "baselines.experiments.snr_lab.measure:main",
        ),
        Command(
            "training",
            "the SNR ratio at the policies of real training runs, beside their steps ratio",
            "baselines.experiments.snr_lab.training:TrainingSnrSettings",
            "baselines.experiments.snr_lab.training:run",
        ),
        Command(
            "turn-bias",
            "the exact bias of per-turn-index normalisation on SearchOrAnswer-v0",
            "baselines.experiments.snr_lab.turn_bias:TurnBiasSettings",
            "baselines.experiments.snr_lab.turn_bias:run",
        ),
    ),
    default="all",
    description='Reproducing "Drowning in Routine" (docs/reproducing.md), and the open lab.',
)
COMMANDS = (SNR_LAB,)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
