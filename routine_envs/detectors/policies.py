"""Tabular policies to detect under: the uniform one and partly trained stand-ins."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["mixture_policy", "uniform_policy"]


def valid_actions(env: Any) -> np.ndarray:
    """Which actions are valid in each state, shape ``(num_states, num_actions)`` bool (all,
    where the env has no action masks; a state with no valid action gets all)."""
    base = env.unwrapped
    shape = (base.num_states, base.model().num_actions)
    if not getattr(base, "has_action_masks", False):
        return np.ones(shape, dtype=bool)
    mask = np.asarray(base.dynamics.mask_table(), dtype=bool)
    return np.where(mask.any(axis=1, keepdims=True), mask, True)


def uniform_policy(env: Any) -> np.ndarray:
    """The uniform policy over the valid actions, shape ``(num_states, num_actions)``."""
    valid = valid_actions(env).astype(np.float64)
    return valid / valid.sum(axis=1, keepdims=True)


def mixture_policy(env: Any, eps: float) -> np.ndarray:
    """``(1 - eps) * optimal + eps * uniform``: a stand-in for a partly trained policy, shape
    ``(num_states, num_actions)``. ``optimal`` is greedy in the exact ``Q*`` over the valid
    actions, ties split evenly; ``eps = 1`` is the uniform policy, ``eps = 0`` the optimal one.

    Raises:
        ValueError: ``eps`` outside ``[0, 1]``.
    """
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"eps must be in [0, 1], got {eps}")
    base = env.unwrapped
    valid = valid_actions(env)
    q = np.where(valid, base.optimal().q, -np.inf)
    best = valid & np.isclose(q, q.max(axis=1, keepdims=True), rtol=0.0, atol=1e-9)
    greedy = best / best.sum(axis=1, keepdims=True)
    return (1.0 - eps) * greedy + eps * uniform_policy(env)
