"""A partly trained policy to score detectors under: ``python -m baselines detectors policy``.

Trains one short run of an SB3 method (``ppo`` by default, through
:func:`baselines.lib.sb3_trainer.build`, the env's shipped hyperparameters) and saves its tabular
policy (:func:`baselines.lib.trajectory_ppo.policy_table`: the network's action probabilities
on every decision state) as a ``.npy`` table ``(num_states, num_actions)``, which
``python -m baselines detectors score --policies`` and the SNR lab's ``--policy`` accept.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib import cli
from baselines.lib.results import write_atomic


@dataclass
class PolicyArgs:
    """Train a short run and save its policy table as .npy."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "gym.make keyword arguments (JSON)"}
    )
    method: str = field(default="ppo", metadata={"help": "'ppo' or an estimator spec"})
    seed: int = field(default=0, metadata={"help": "seed of the run", "min": 0})
    total_timesteps: int = field(
        default=10_000, metadata={"help": "environment steps of training", "min": 1}
    )
    out: Path = field(
        default=Path("results/detectors/policy.npy"), metadata={"help": "the .npy file"}
    )


def main(args: PolicyArgs) -> dict[str, Any]:
    """Train, save the table (and a ``.json`` beside it with the settings and the exact
    success probability of the table); return that description."""
    from baselines.lib.runs import Run, check
    from baselines.lib.sb3_trainer import build
    from baselines.lib.trajectory_ppo import policy_table

    if args.out.suffix != ".npy":
        raise ValueError(f"--out must end in .npy, got {args.out}")
    if args.out.is_dir():
        raise ValueError(f"--out {args.out}: a folder is in the way (give a .npy file)")
    cli.check_output_folder(args.out.parent, allow_current=True)  # before training
    run = Run.of(args.env_id, args.method, args.env_kwargs, args.seed, args.total_timesteps)
    check(run)  # an env or method SB3 cannot train: one line, before training
    algo, eval_env = build(run)
    hyper = run.trained_with
    algo.learn(args.total_timesteps)
    table = policy_table(algo.policy, eval_env)
    buffer = io.BytesIO()
    np.save(buffer, table)
    write_atomic(args.out, buffer.getvalue())
    about = {
        "env_id": args.env_id,
        "env_kwargs": args.env_kwargs,
        "method": args.method,
        "seed": args.seed,
        "total_timesteps": int(algo.num_timesteps),
        "hyperparameters": hyper,
        "success_probability": float(eval_env.unwrapped.success_probability(table)),
    }
    write_atomic(args.out.with_suffix(".json"), json.dumps(about, indent=2, default=str))
    print(json.dumps(about, default=str))
    return about
