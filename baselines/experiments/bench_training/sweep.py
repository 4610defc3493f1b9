"""Training throughput: ``python -m baselines.bench_training``.

Environment steps per second of ``learn()`` (collection and updates) for SB3's ``PPO`` and for
``TrajectoryAdvantagePPO`` with ``trajectory_mc``, on the same environment and hyperparameters
(``baselines/configs/<env id>.yml``), measured alternately in one process, best of
``--repeats``. Goal: the ratio is at least 0.9. Not a test: it asserts nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from baselines.lib import cli
from baselines.lib.training import TrainArgs, build


def throughput(
    method: str, env_id: str, env_kwargs: dict[str, Any], steps: int, seed: int = 0
) -> float:
    """Environment steps per second of one ``learn(steps)`` call."""
    algo, _, _ = build(
        TrainArgs(env_id=env_id, env_kwargs=env_kwargs, method=method, seed=seed, progress=False)
    )
    start = time.perf_counter()
    algo.learn(steps)
    return algo.num_timesteps / (time.perf_counter() - start)


@dataclass
class BenchArgs:
    """Training throughput of PPO and TrajectoryAdvantagePPO on the same environment."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "gym.make keyword arguments (JSON)"}
    )
    steps: int = field(default=30_000, metadata={"help": "environment steps per learn() call"})
    repeats: int = field(default=3, metadata={"help": "measurements per method (best kept)"})
    methods: list[str] = field(
        default_factory=lambda: ["ppo", "trajectory_mc"],
        metadata={"help": "methods to time; the first is the reference of the ratio"},
    )


def parse_args(argv: list[str] | None = None) -> BenchArgs:
    """The settings from the command line (one flag per :class:`BenchArgs` field)."""
    return cli.parse_settings(BenchArgs, argv, description=__doc__.splitlines()[0])


def main(args: BenchArgs) -> dict[str, float]:
    """Time every method ``args.repeats`` times alternately; print and return the best env
    steps per second of each."""
    best = {m: 0.0 for m in args.methods}
    for r in range(args.repeats):
        for method in args.methods:
            best[method] = max(
                best[method], throughput(method, args.env_id, args.env_kwargs, args.steps, seed=r)
            )
    base = best[args.methods[0]]
    print(f"{'method':<16} {'env steps/s':>12} {'x ' + args.methods[0]:>10}")
    for method, sps in best.items():
        print(f"{method:<16} {sps:>12,.0f} {sps / base:>10.2f}")
    return best
