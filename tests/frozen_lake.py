"""The optimal policy of Gymnasium's FrozenLake-v1 (slippery 4x4 map), by value iteration on the
environment's own transition table ``env.unwrapped.P``: a policy that plays the optimal actions,
as ``observation -> action probabilities`` (one-hot)."""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np


def optimal_actions(env: gym.Env, gamma: float = 1.0, tolerance: float = 1e-12) -> np.ndarray:
    """``argmax_a Q*(s, a)`` per state of a toy-text env with ``unwrapped.P``, by value iteration
    from 0 with discount ``gamma`` (1: the success probability of the slippery lake; below 1 on
    the deterministic lake, where every safe action ties undiscounted and the greedy policy could
    walk into a wall forever)."""
    table = env.unwrapped.P
    num_states, num_actions = len(table), len(table[0])
    values = np.zeros(num_states)
    while True:
        q = np.array(
            [
                [
                    sum(p * (r + (0.0 if end else gamma * values[s2])) for p, s2, r, end in moves)
                    for moves in (table[s][a] for a in range(num_actions))
                ]
                for s in range(num_states)
            ]
        )
        if np.max(np.abs(q.max(axis=1) - values)) < tolerance:
            return q.argmax(axis=1)
        values = q.max(axis=1)


@functools.cache
def lake_actions(is_slippery: bool = True) -> np.ndarray:
    """The optimal action per state of the 4x4 FrozenLake-v1 (discount 0.9 when not slippery)."""
    env = gym.make("FrozenLake-v1", is_slippery=is_slippery)
    return optimal_actions(env, 1.0 if is_slippery else 0.9)


def one_hot(action: int, num_actions: int = 4) -> np.ndarray:
    probs = np.zeros(num_actions)
    probs[action] = 1.0
    return probs


def optimal_policy(observation: int) -> np.ndarray:
    """Probability 1 on the slippery FrozenLake-v1's optimal action at ``observation``."""
    return one_hot(lake_actions(True)[int(observation)])


def deterministic_optimal_policy(observation: int) -> np.ndarray:
    """Probability 1 on the optimal action of FrozenLake-v1 with ``is_slippery=False``."""
    return one_hot(lake_actions(False)[int(observation)])
