"""A small causal LM trained by GRPO on the text envs (``python -m baselines lm``):
``train`` (learning curves), ``dilution`` (GRPO steps to target against rho per estimator)
and ``snr`` (the exact gradient SNR and bias of the LM policy at initialisation). Their rows of
the command tree are here."""

from routine_envs.cli import Command, Group

ORDER = 100
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Group(
        "lm",
        "a tiny causal language model trained by GRPO on the text envs (docs/llm.md)",
        (
            Command(
                "train",
                "GRPO on a text env, from chance to the target success",
                "baselines.experiments.lm.train:TrainSettings",
                "baselines.experiments.lm.train:main",
            ),
            Command(
                "dilution",
                "token-level dilution: steps to target against rho per estimator",
                "baselines.experiments.lm.dilution:DilutionSettings",
                "baselines.experiments.lm.dilution:main",
            ),
            Command(
                "snr",
                "the exact gradient SNR and bias of the LM policy at initialisation against rho",
                "baselines.experiments.lm.exact_snr:SNRSettings",
                "baselines.experiments.lm.exact_snr:main",
            ),
        ),
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
