"""The exact expected gradient of per-turn-index normalisation, and so its exact bias.

:class:`routine_envs.turn_level.TurnIndexNorm` (mean-only) gives turn ``t`` of episode ``i``

    A_{i,t} = sum_{k = t}^{T_i - 2} (r_{i,k} - b_k) + (O_i - mean_group(O)),

``b_k`` the group mean of the intermediate rewards at turn index ``k`` over the episodes for
which turn ``k`` is intermediate. The lab's gradient estimate of a batch of one group of ``G``
episodes is ``g = (1/G) sum_i sum_t A_{i,t} grad log pi(a_{i,t} | s_{i,t})``, so ``E g`` is the
expectation for one episode ``i`` of ``sum_t A_{i,t} grad log pi``. Given the group's initial
state ``s0`` the other ``G - 1`` episodes are independent of episode ``i``: with ``p_k`` the
probability that turn ``k`` is intermediate, ``mu_k`` the mean intermediate reward there, and
``X ~ Bin(G - 1, p_k)``, ``Y ~ Bin(G - 2, p_k)`` the other episodes with an intermediate turn
``k``,

    E[r_{i,k} - b_k | episode i] = w_k r_{i,k} - c_k,
    w_k = E[X / (1 + X)],   c_k = (G - 1) p_k mu_k E[1 / (2 + Y)],

and ``E[O_i - mean(O) | episode i] = (1 - 1/G) O_i - const``. A term that does not depend on
episode ``i`` has zero mean against ``grad log pi``, so ``E g`` is the exact policy gradient of
a return with the time-dependent reward ``rho_k = w_k r - c_k`` on intermediate turns and
``(1 - 1/G) r`` on the last,

    E g = sum_{s0} mu(s0) sum_t sum_s d_t(s | s0) pi(a|s) (Q^rho_t(s, a) - V^rho_t(s)),

``d_t`` the probability of being in ``s`` at turn ``t`` and ``Q^rho_t`` the expected
``rho``-return from turn ``t``, by a forward and a backward pass over the turn-indexed model.
For infinite groups ``w_k -> 1`` and ``c_k -> mu_k``: ``E g - grad J = -sum d_t pi (Q^mu_t -
V^mu_t)``, the gradient of the accumulated group means of the intermediate rewards: the
estimator adds ``-mu_k`` to every turn ``k`` that does not end the episode, a hidden bonus of
``-E[R_intermediate]`` for taking another turn (verl RFC #7244). With ``fix=True`` every
``rho_k`` is ``(1 - 1/G) r``: ``E g = (G - 1)/G grad J`` exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from routine_envs.snr import TabularSoftmax, exact_policy_gradient


def binomial_pmf(n: int, p: float) -> np.ndarray:
    """``P(X = x)`` for ``X ~ Bin(n, p)``, ``x = 0..n``, shape ``(n + 1,)`` (log-space: exact
    for large ``n``)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    x = np.arange(n + 1)
    if p <= 0.0 or p >= 1.0:
        return (x == (n if p >= 1.0 else 0)).astype(np.float64)
    logs = np.array(
        [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in range(n + 1)]
    )
    return np.exp(logs + x * math.log(p) + (n - x) * math.log1p(-p))


def finite_group_weights(group_size: int, p: float, mu: float) -> tuple[float, float]:
    """``(w_k, c_k)`` of the module docstring for a group of ``group_size`` episodes: the weight
    of the episode's own intermediate reward at a turn index where a fraction ``p`` of the
    episodes has an intermediate turn of mean reward ``mu``, and the other episodes' expected
    share of the baseline."""
    others = group_size - 1
    if others == 0 or p <= 0.0:
        return 0.0, 0.0
    x = np.arange(others + 1)
    w = float(binomial_pmf(others, p) @ (x / (1.0 + x)))
    y = np.arange(others)
    c = others * p * mu * float(binomial_pmf(others - 1, p) @ (1.0 / (2.0 + y)))
    return w, c


def turn_index_norm_gradient(
    env: Any,
    policy: TabularSoftmax,
    group_size: int | None,
    fix: bool = False,
    max_turns: int = 1_000_000,
) -> np.ndarray:
    """The exact ``E g`` of mean-only ``turn_index_norm`` (``fix`` its variant) for groups of
    ``group_size`` episodes (``None``: infinite groups) under ``policy``, in the layout of
    :func:`routine_envs.snr.exact_policy_gradient` (``(policy.num_params,)``, row-major
    ``(row, action)``). See the module docstring. ``max_turns`` bounds the turn-indexed passes
    (episodes that can last longer raise ``ValueError``)."""
    if group_size is not None and (isinstance(group_size, bool) or group_size < 1):
        raise ValueError(f"group_size must be an int >= 1 or None, got {group_size!r}")
    base = env.unwrapped
    model = base.model()
    pi = policy.probs()
    num_states, num_actions = pi.shape
    state, action, nxt = model.state, model.action, model.next_state
    prob, reward, ends = model.prob, model.reward, model.terminated
    goes_on = ~ends
    step = prob * pi[state, action]  # P(transition | its state)
    outcome_weight = 1.0 if group_size is None else 1.0 - 1.0 / group_size
    total = np.zeros((num_states, num_actions))
    for s0 in np.flatnonzero(model.initial > 0):
        visits = np.zeros(num_states)
        visits[s0] = 1.0
        occupancy, weights = [], []
        while visits.any():
            if len(occupancy) >= max_turns:
                raise ValueError(f"episodes last more than max_turns={max_turns} turns")
            flow = visits[state] * step
            p = float(flow[goes_on].sum())
            mu = float(flow[goes_on] @ reward[goes_on]) / p if p > 0 else 0.0
            if fix:
                weights.append((outcome_weight, 0.0))
            elif group_size is None:
                weights.append((1.0, mu))
            else:
                weights.append(finite_group_weights(group_size, p, mu))
            occupancy.append(visits)
            visits = np.bincount(nxt[goes_on], weights=flow[goes_on], minlength=num_states)
        v_next = np.zeros(num_states)
        grad = np.zeros((num_states, num_actions))
        for t in range(len(occupancy) - 1, -1, -1):
            w, c = weights[t]
            rho = np.where(ends, outcome_weight * reward, w * reward - c)
            per_transition = prob * (rho + np.where(ends, 0.0, v_next[nxt]))
            q = np.bincount(
                state * num_actions + action, per_transition, minlength=num_states * num_actions
            ).reshape(num_states, num_actions)
            v = (pi * q).sum(axis=1)
            grad += occupancy[t][:, None] * pi * (q - v[:, None])
            v_next = v
        total += model.initial[s0] * grad
    out = np.zeros_like(policy.logits)
    np.add.at(out, policy.row_of_state, total)
    return out.ravel()


def turn_index_norm_bias(
    env: Any, policy: TabularSoftmax, group_size: int | None, fix: bool = False
) -> dict[str, float]:
    """The closed forms the lab's columns estimate, for mean-only ``turn_index_norm``:
    ``relative_bias`` ``||E g - grad J|| / ||grad J||``, ``cosine`` of ``E g`` and ``grad J``,
    and ``gradient_norm`` ``||grad J||`` (:func:`turn_index_norm_gradient`,
    :func:`routine_envs.snr.exact_policy_gradient`)."""
    expected = turn_index_norm_gradient(env, policy, group_size, fix)
    target = exact_policy_gradient(env, policy)
    norm = float(np.linalg.norm(target))
    mean_norm = float(np.linalg.norm(expected))
    return {
        "relative_bias": float(np.linalg.norm(expected - target)) / norm if norm else math.inf,
        "cosine": float(expected @ target) / (norm * mean_norm) if norm and mean_norm else 0.0,
        "gradient_norm": norm,
        "expected_gradient_norm": mean_norm,
    }
