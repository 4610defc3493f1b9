"""The exact noise of two policy-gradient estimators of a tabular softmax policy on an exact
model: no episode sampled, no episode enumerated.

The SNR lab (:func:`routine_envs.snr.measure_snr`) estimates each estimator's covariance from
sampled episodes. For the two estimators its headline ratio compares, the covariance follows
from the model by dynamic programming over states, however many episodes there are:

- the **perfect critic** (``oracle``): ``g = sum_t A(s_t, a_t) v_t``, and the noisy one
  (``oracle`` with ``sigma``): ``A(s_t, a_t) + sigma eps_t``, ``eps_t`` independent standard
  normal, which adds ``sigma^2 E[sum_t v_t^T M v_t]`` to ``E[g^T M g]``;
- the **trajectory advantage with the exact baseline** (``trajectory_exact``):
  ``g = (R - b) sum_t v_t`` with ``b`` a constant (the lab uses ``J``);

where ``v_t = d log pi(a_t | s_t) / d logits`` (``onehot(a_t) - pi(. | s_t)`` in the row of
``s_t``), ``A`` the exact advantage and ``R`` the return. Both are sums of per-step terms, so
``E[g]`` and ``E[g^T M g]`` (``M`` a metric on the logits: the identity, or ``J J^T`` to
measure a network's gradient ``J^T g``) obey backward recursions from each state: the first
moment is a vector per state, the second a scalar per state (``g^T M g`` expands into the
step's term, the step against the rest's first moment, and the rest's own), each solved as one
linear system ``(I - P_pi) X = b`` over the model's states (acyclic or not). With ``R`` the
recursions carry ``R``'s powers 0, 1, 2 as well.

For a batch of ``n`` independent episodes (the lab's group, its gradient the mean over the
group), ``Cov = (E[g g^T] - E[g] E[g]^T) / n``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from routine_envs.oracle import TabularModel
from routine_envs.snr import TabularSoftmax


@dataclass(frozen=True)
class ExactMoments:
    """The first two moments of one episode's gradient estimate ``g`` (logit space).

    Attributes:
        mean: ``E[g]``, shape ``(policy.num_params,)`` (row-major ``(row, action)``).
        second: ``E[g^T M g]``.
        mean_norm2: ``E[g]^T M E[g]``.
    """

    mean: np.ndarray
    second: float
    mean_norm2: float

    @property
    def variance(self) -> float:
        """``tr(M Cov g)`` of one episode."""
        return self.second - self.mean_norm2

    def snr(self, episodes: int = 1) -> float:
        """``||E g||_M / sqrt(tr(M Cov g))`` of the mean over ``episodes`` independent
        episodes."""
        if self.variance <= 0:
            return float("inf")
        return float(np.sqrt(self.mean_norm2 * episodes / self.variance))


class _Recursion:
    """The model's transitions under a policy, and the linear solves of the recursions."""

    def __init__(self, model: TabularModel, policy: TabularSoftmax, metric: np.ndarray | None):
        probs = policy.probs()
        self.num_params = policy.num_params
        num_actions = probs.shape[1]
        self.s, self.a = model.state, model.action
        self.next = model.next_state
        self.go = ~model.terminated  # the episode goes on from the next state
        self.weight = probs[self.s, self.a] * model.prob  # P(a, s' | s) per transition
        self.reward = model.reward
        n = model.num_states
        # (I - P_pi) over the states: transitions that go on carry their next state's value
        system = np.eye(n)
        np.add.at(system, (self.s[self.go], self.next[self.go]), -self.weight[self.go])
        self.solve_matrix = system
        self.initial = model.initial
        self.metric = np.eye(self.num_params) if metric is None else np.asarray(metric, float)
        # the score v of every transition, (T, D): onehot(a) - pi(. | s) in the row of s
        rows = policy.row_of_state[self.s]
        self.rows, self.num_actions = rows, num_actions
        score = -probs[self.s]
        score[np.arange(len(self.s)), self.a] += 1.0
        self.score_local = score  # (T, A): the nonzero block of v
        self.offset = rows * num_actions  # where the block starts in (D,)
        # v^T M v per transition, from M's diagonal blocks
        block = np.arange(num_actions)
        m_blocks = self.metric[
            (self.offset[:, None] + block)[:, :, None], (self.offset[:, None] + block)[:, None, :]
        ]  # (T, A, A)
        self.vmv = np.einsum("ti,tij,tj->t", score, m_blocks, score)

    def dense(self, local: np.ndarray) -> np.ndarray:
        """Per-transition block vectors ``(T, A)`` as ``(T, D)``."""
        out = np.zeros((len(self.s), self.num_params))
        cols = self.offset[:, None] + np.arange(self.num_actions)
        out[np.arange(len(self.s))[:, None], cols] = local
        return out

    def against(self, per_state: np.ndarray) -> np.ndarray:
        """``v_i^T M X(s'_i)`` per transition for vectors ``X`` per state ``(S, D)`` (0 where
        the episode ends at the transition)."""
        mx = per_state @ self.metric  # (S, D)
        cols = self.offset[:, None] + np.arange(self.num_actions)
        picked = mx[self.next[:, None], cols]  # (T, A)
        return np.where(self.go, np.einsum("ta,ta->t", self.score_local, picked), 0.0)

    def after(self, per_state: np.ndarray, terminal_value: float = 0.0) -> np.ndarray:
        """The next state's value per transition (``terminal_value`` where the episode ends)."""
        if per_state.ndim == 1:
            return np.where(self.go, per_state[self.next], terminal_value)
        return np.where(self.go[:, None], per_state[self.next], terminal_value)

    def solve(self, per_transition: np.ndarray) -> np.ndarray:
        """``X = b + P_pi X`` with ``b(s) = sum_i w_i per_transition_i`` over ``s``'s
        transitions (a scalar ``(T,)`` or a vector ``(T, D)`` per transition)."""
        shape = (self.solve_matrix.shape[0], *per_transition.shape[1:])
        b = np.zeros(shape)
        weighted = per_transition * (
            self.weight if per_transition.ndim == 1 else self.weight[:, None]
        )
        np.add.at(b, self.s, weighted)
        return np.linalg.solve(self.solve_matrix, b)

    def start(self, per_state: np.ndarray) -> np.ndarray:
        """The expectation over the initial distribution."""
        return self.initial @ per_state


def perfect_critic_moments(
    model: TabularModel,
    policy: TabularSoftmax,
    advantage: np.ndarray,
    metric: np.ndarray | None = None,
    sigma: float = 0.0,
) -> ExactMoments:
    """:class:`ExactMoments` of ``g = sum_t (A(s_t, a_t) + sigma eps_t) v_t`` (``advantage``
    ``A`` of shape ``(num_states, num_actions)``, e.g. the oracle's exact advantage of
    ``policy``; ``eps_t`` independent standard normal: a critic of error variance
    ``sigma^2``)."""
    rec = _Recursion(model, policy, metric)
    a = np.asarray(advantage, dtype=np.float64)[rec.s, rec.a]
    w_local = a[:, None] * rec.score_local
    first = rec.solve(rec.dense(w_local))  # Y(s) = E[G | s] = sum w (w + Y(s')), (S, D)
    # Z(s) = E[G^T M G | s] = sum w (w M w + 2 w M Y(s') + Z(s'))
    second = rec.start(rec.solve(a * a * rec.vmv + 2.0 * a * rec.against(first)))
    if sigma:  # the noise's own term: sigma^2 E[sum_t v_t M v_t] (its cross terms vanish)
        second += sigma**2 * rec.start(rec.solve(rec.vmv))
    mean = rec.start(first)
    return ExactMoments(mean, float(second), float(mean @ rec.metric @ mean))


def trajectory_moments(
    model: TabularModel,
    policy: TabularSoftmax,
    baseline: float,
    metric: np.ndarray | None = None,
) -> ExactMoments:
    """:class:`ExactMoments` of ``g = (R - baseline) sum_t v_t`` (``R`` the undiscounted
    return)."""
    rec = _Recursion(model, policy, metric)
    r = rec.reward
    # E[R^j | s] for j = 1, 2 (j = 0: 1)
    w1 = rec.solve(r)  # W1(s) = sum w (r + W1(s'))
    w1n = rec.after(w1)
    w2 = rec.solve(r * r + 2.0 * r * w1n)
    w2n = rec.after(w2)
    v = rec.dense(rec.score_local)  # (T, D)
    # E[R^j V | s] for j = 1, 2; E[V | s] = 0 (each step's score has mean 0 under the policy),
    # so U1 = sum w (r v + v W1' + U1') and U2 = sum w (r^2 v + 2 r (v W1' + U1') + v W2' + U2')
    u1 = rec.solve(v * (r + w1n)[:, None])
    u1n = rec.after(u1)
    u2 = rec.solve(v * (r * r + 2.0 * r * w1n + w2n)[:, None] + 2.0 * r[:, None] * u1n)
    # E[R^j V^T M V | s], from v^T M v and v^T M U_j(s') per transition
    vm1, vm2 = rec.against(u1), rec.against(u2)
    t0 = rec.solve(rec.vmv)
    t0n = rec.after(t0)
    t1 = rec.solve(r * (rec.vmv + t0n) + rec.vmv * w1n + 2.0 * vm1)
    t1n = rec.after(t1)
    t2 = rec.solve(
        r * r * (rec.vmv + t0n)
        + 2.0 * r * (rec.vmv * w1n + 2.0 * vm1 + t1n)
        + rec.vmv * w2n + 2.0 * vm2
    )  # fmt: skip
    b = float(baseline)
    mean = rec.start(u1)  # E[(R - b) V] = E[R V]
    second = rec.start(t2) - 2.0 * b * rec.start(t1) + b * b * rec.start(t0)
    return ExactMoments(mean, float(second), float(mean @ rec.metric @ mean))
