"""Gradient SNR of a neural policy: ``python -m baselines snr_network`` (the sweep; the figure is
in :mod:`baselines.experiments.snr_network.analysis`).

The paper measured the rho law with a small network at initialization. Here the network is
SB3's ``MlpPolicy`` (the one the baselines train) at initialization on Diluted Doors. A step's
gradient is ``J(s)^T (e_a - pi(s))`` with ``J(s)`` the Jacobian of the network's logits at the
observation of ``s``, so every group gradient is ``J^T g`` with ``g`` the tabular (per-state)
gradient that :mod:`routine_envs.snr` already reduces; norms are taken in the metric
``M = J J^T``. ``J`` comes from ``torch.func`` (one Jacobian of all states' logits).

Writes ``network.csv``, ``network.png`` and ``summary.json`` into ``--out``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.snr_network import analysis
from baselines.lib import cli
from baselines.lib.network import logits_and_jacobian, network_policy
from baselines.lib.tables import format_table, write_csv
from routine_envs import credit, snr
from routine_envs.envs import DilutedDoorsV0Env


def measure(
    routine_length: int, episodes: int, group_size: int, net_arch: list[int], seed: int
) -> dict[str, Any]:
    env = DilutedDoorsV0Env(routine_length=routine_length)
    logits, jac = logits_and_jacobian(network_policy(env, net_arch, seed), env)
    log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    policy = snr.TabularSoftmax.per_state(env.num_states, env.num_doors, logits=log_probs)
    probs = policy.probs()
    j = float(env.model().initial @ env.oracle(probs).v)
    comparison = snr.measure_snr(
        env,
        policy,
        {"oracle": credit.Oracle(env, probs), "trajectory": credit.TrajectoryMC(baseline=j)},
        num_groups=episodes // group_size,
        group_size=group_size,
        seed=seed,
        metric=jac @ jac.T,
        chunk_groups=512,
    )
    ratio, low, high = comparison.ratios[("oracle", "trajectory")]
    return {
        "routine_length": routine_length,
        "rho": 1 / (1 + routine_length),
        "params": jac.shape[1],
        "J": j,
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "snr_oracle": comparison.results["oracle"].snr,
        "snr_trajectory": comparison.results["trajectory"].snr,
        "theory_ratio_uniform_tabular": snr.uniform_doors_snr(3, 3, routine_length)["ratio"],
    }


@dataclass
class NetworkArgs:
    """Gradient SNR of a neural policy (SB3's MlpPolicy at initialization) on Diluted Doors."""

    routine_lengths: list[int] = field(
        default_factory=lambda: [0, 1, 3, 7, 15, 30, 50],
        metadata={"help": "routine lengths L to measure"},
    )
    episodes: int = field(default=20_000, metadata={"help": "episodes per routine length"})
    group_size: int = field(default=8, metadata={"help": "episodes per group"})
    net_arch: list[int] = field(
        default_factory=lambda: [64, 64],
        metadata={"help": "hidden layer sizes of the MLP", "allow_duplicates": True},
    )
    seed: int = field(default=0, metadata={"help": "seed of the network and the episodes"})
    out: Path = field(default=Path("results/snr/network"), metadata={"help": "output folder"})


def main(args: NetworkArgs) -> dict[str, Any]:
    """Measure every routine length, write ``network.csv``, ``network.png`` and
    ``summary.json`` into ``args.out``, print and return the summary."""
    cli.check_output_folder(args.out)  # before any work
    start = time.perf_counter()
    rows = [
        measure(length, args.episodes, args.group_size, args.net_arch, args.seed)
        for length in args.routine_lengths
    ]
    write_csv(args.out / "network.csv", rows)
    slope, _, r2 = snr.fit_loglog([r["rho"] for r in rows], [r["ratio"] for r in rows])
    summary = {
        "slope": slope,
        "r2": r2,
        "net_arch": args.net_arch,
        "params": rows[0]["params"],
        "episodes": args.episodes,
        "seed": args.seed,
        "seconds": time.perf_counter() - start,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    analysis.plot_network(rows, summary, args.out / "network.png")
    print(
        format_table(
            rows,
            [
                "routine_length",
                "rho",
                "ratio",
                "ratio_low",
                "ratio_high",
                "theory_ratio_uniform_tabular",
            ],
        )
    )
    print(json.dumps(summary, indent=2))
    return summary
