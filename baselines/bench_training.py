"""Training throughput: ``python -m baselines.bench_training``.

Environment steps per second of ``learn()`` (collection and updates) for SB3's ``PPO`` and for
``TrajectoryAdvantagePPO`` with ``trajectory_mc``, on the same environment and hyperparameters
(``baselines/configs/<env id>.yml``), measured alternately in one process, best of
``--repeats``. Goal: the ratio is at least 0.9. Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import time

from baselines.train import TrainArgs, build


def throughput(method: str, env_id: str, env_kwargs: dict, steps: int, seed: int = 0) -> float:
    """Environment steps per second of one ``learn(steps)`` call."""
    algo, _, _ = build(
        TrainArgs(env_id=env_id, env_kwargs=env_kwargs, method=method, seed=seed, progress=False)
    )
    start = time.perf_counter()
    algo.learn(steps)
    return algo.num_timesteps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="DilutedDoors-v0")
    parser.add_argument("--env-kwargs", type=json.loads, default={})
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=["ppo", "trajectory_mc"])
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    main()
