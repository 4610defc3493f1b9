"""A small causal LM trained by GRPO on the text envs (``python -m baselines lm``):
``train`` (learning curves), ``dilution`` (GRPO steps to target against rho per estimator)
and ``snr`` (the SNR and bias of the LM policy's gradient at initialisation: exact gradient,
noise sampled from episodes). Their rows of
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
                "SNR and bias at initialisation against rho: exact gradient, sampled + exact noise",
                "baselines.experiments.lm.exact_snr:SNRSettings",
                "baselines.experiments.lm.exact_snr:main",
            ),
        ),
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
