"""Speed benchmark: ``python -m routine_envs.bench``.

Prints environment steps per second of the suite's environments beside Gymnasium's
``FrozenLake-v1`` measured in the same run on the same machine, and their ratios. Actions are
drawn in advance so that only ``step`` (and ``reset`` at episode ends) is timed; each figure is
the best of ``--repeats`` runs of ``--steps`` steps. Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import routine_envs

gym.register_envs(routine_envs)

#: (label, env id, kwargs) of the suite's environments to time.
SUITE: tuple[tuple[str, str, dict], ...] = (("DilutedDoors-v0", "DilutedDoors-v0", {}),)
REFERENCE = ("FrozenLake-v1", "FrozenLake-v1", {"is_slippery": True})


@dataclass
class Timing:
    label: str
    wrapped: bool
    steps_per_second: float


def steps_per_second(env: gym.Env, steps: int, repeats: int, seed: int = 0) -> float:
    """Best-of-``repeats`` steps per second of ``env`` under uniformly random actions."""
    actions = np.random.default_rng(seed).integers(env.action_space.n, size=steps).tolist()
    best = 0.0
    for r in range(repeats):
        env.reset(seed=seed + r)
        step, reset = env.step, env.reset
        start = time.perf_counter()
        for a in actions:
            _, _, terminated, truncated, _ = step(a)
            if terminated or truncated:
                reset()
        best = max(best, steps / (time.perf_counter() - start))
    return best


def measure(steps: int, repeats: int, suite=SUITE, reference=REFERENCE) -> list[Timing]:
    """Time each environment unwrapped and through ``gym.make``'s default wrappers."""
    out = []
    for label, env_id, kwargs in (reference, *suite):
        made = gym.make(env_id, **kwargs)
        for wrapped, env in ((False, made.unwrapped), (True, made)):
            out.append(Timing(label, wrapped, steps_per_second(env, steps, repeats)))
    return out


def report(timings: list[Timing], print_fn: Callable[[str], None] = print) -> dict[str, float]:
    """Print the table and return ``{"<label> <unwrapped|gym.make>": ratio to reference}``."""
    ref = {t.wrapped: t.steps_per_second for t in timings if t.label == REFERENCE[0]}
    ratios = {}
    print_fn(f"{'environment':<20} {'mode':<10} {'steps/s':>12} {'x ' + REFERENCE[0]:>16}")
    for t in timings:
        mode = "gym.make" if t.wrapped else "unwrapped"
        ratio = t.steps_per_second / ref[t.wrapped]
        print_fn(f"{t.label:<20} {mode:<10} {t.steps_per_second:>12,.0f} {ratio:>16.2f}")
        if t.label != REFERENCE[0]:
            ratios[f"{t.label} {mode}"] = ratio
    return ratios


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="steps per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs; the best is kept")
    args = parser.parse_args(argv)
    return report(measure(args.steps, args.repeats))


if __name__ == "__main__":
    main()
