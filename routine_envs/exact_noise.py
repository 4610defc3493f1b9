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
step's term, the step against the rest's first moment, and the rest's own), each solved by one
backward sweep over the model's states, successors first (``(I - P_pi) X = b``; solved densely
where the model has cycles other than self-loops). With ``R`` the recursions carry ``R``'s
powers 0, 1, 2 as well. Numpy only: the lab's core has no other dependency.

For a batch of ``n`` independent episodes (its gradient the mean over them),
``Cov = (E[g g^T] - E[g] E[g]^T) / n``; the lab's groups share their initial state, which adds
the spread of the mean between initial states (:meth:`ExactMoments.group_snr`).
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
        start_norm2: ``E_s0[m(s0)^T M m(s0)]`` with ``m(s0) = E[g | s0]`` the mean from each
            initial state (``mean_norm2`` where the start is one state).
    """

    mean: np.ndarray
    second: float
    mean_norm2: float
    start_norm2: float

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

    def group_snr(self, group_size: int) -> float:
        """The SNR of the mean over a group of ``group_size`` episodes that share their initial
        state (the lab's groups, :meth:`routine_envs.sampler.ModelSampler.sample`): its
        covariance is ``E_s0[Cov(g | s0)] / n + Cov_s0(m(s0))``."""
        within = self.second - self.start_norm2
        between = self.start_norm2 - self.mean_norm2
        variance = within / group_size + between
        if variance <= 0:
            return float("inf")
        return float(np.sqrt(self.mean_norm2 / variance))


MAX_VECTOR_ENTRIES = 20_000_000
"""The largest ``states x parameters`` array of first moments kept (160 MB of float64)."""


class _Recursion:
    """The model's transitions under a policy, and the backward sweep that solves a recursion
    ``X(s) = b(s) + sum_i w_i X(s'_i)`` (``i`` over ``s``'s transitions that go on).

    ``X`` is a scalar or a vector ``(D,)`` per state. The sweep visits the states successors
    first (a reverse topological order of the transitions that go on; a self-loop divides by
    ``1 - w``), one small product per state; a model with longer cycles is solved densely."""

    def __init__(self, model: TabularModel, policy: TabularSoftmax, metric: np.ndarray | None):
        probs = policy.probs()
        self.num_params = policy.num_params
        self.num_states = model.num_states
        num_actions = probs.shape[1]
        self.s, self.a = model.state, model.action
        self.next = model.next_state
        self.go = ~model.terminated  # the episode goes on from the next state
        self.weight = probs[self.s, self.a] * model.prob  # P(a, s' | s) per transition
        self.reward = model.reward
        self.initial = model.initial
        self.metric = None if metric is None else np.asarray(metric, dtype=np.float64)
        # the score v of every transition: onehot(a) - pi(. | s) in the row of s, (T, A)
        score = -probs[self.s]
        score[np.arange(len(self.s)), self.a] += 1.0
        self.score_local = score
        self.cols = (policy.row_of_state[self.s] * num_actions)[:, None] + np.arange(num_actions)
        if self.metric is None:
            self.vmv = np.einsum("ta,ta->t", score, score)
        else:  # v^T M v from M's diagonal blocks
            blocks = self.metric[self.cols[:, :, None], self.cols[:, None, :]]  # (T, A, A)
            self.vmv = np.einsum("ti,tij,tj->t", score, blocks, score)
        self._sweep()
        # own blocks only: with the identity metric, a row per state and no cycle but
        # self-loops, two steps of an episode share parameters only when they are at the same
        # state (a self-loop), so a state's first moments are needed only on its own row:
        # (S, A) numbers instead of (S, D)
        rows = policy.row_of_state[model.decision_states]
        self.own = bool(
            self.metric is None and self.order is not None and len(np.unique(rows)) == len(rows)
        )
        self.loop = self.go & (self.next == self.s)

    def _sweep(self) -> None:
        """The order of the backward sweep (``None``: cycles, solved densely)."""
        n = self.num_states
        on = np.flatnonzero(self.go & (self.next != self.s))  # edges s -> s' (no self-loops)
        loop = self.go & (self.next == self.s)
        self.stay = np.bincount(self.s[loop], weights=self.weight[loop], minlength=n)
        by_source = on[np.argsort(self.s[on], kind="stable")]
        starts = np.searchsorted(self.s[by_source], np.arange(n + 1))
        self.out = [by_source[starts[k] : starts[k + 1]] for k in range(n)]
        waiting = np.bincount(self.s[on], minlength=n)  # successors not yet solved
        by_target = on[np.argsort(self.next[on], kind="stable")]
        tstarts = np.searchsorted(self.next[by_target], np.arange(n + 1))
        ready = list(np.flatnonzero(waiting == 0))
        order = []
        while ready:
            k = ready.pop()
            order.append(k)
            for i in by_target[tstarts[k] : tstarts[k + 1]]:
                source = self.s[i]
                waiting[source] -= 1
                if waiting[source] == 0:
                    ready.append(source)
        self.order = order if len(order) == n else None

    def _solve(self, b: np.ndarray) -> np.ndarray:
        """``X = b + P_pi X`` for ``b`` of shape ``(S,)`` or ``(S, D)``."""
        if self.order is None:  # cycles: (I - P_pi) X = b, densely
            system = np.eye(self.num_states)
            keep = self.go
            np.add.at(system, (self.s[keep], self.next[keep]), -self.weight[keep])
            return np.linalg.solve(system, b)
        x = np.zeros_like(b)
        for k in self.order:
            edges = self.out[k]
            total = b[k] + self.weight[edges] @ x[self.next[edges]] if len(edges) else b[k]
            x[k] = total / (1.0 - self.stay[k]) if self.stay[k] else total
        return x

    def scalar(self, per_transition: np.ndarray) -> np.ndarray:
        """``X(s) = sum_i w_i (c_i + X(s'_i))`` for a scalar ``c`` per transition ``(T,)``."""
        b = np.bincount(self.s, weights=self.weight * per_transition, minlength=self.num_states)
        return self._solve(b)

    def vector(
        self, score_coefficient: np.ndarray, carried: list[tuple[np.ndarray, np.ndarray]] = ()
    ) -> np.ndarray:
        """``X(s) = sum_i w_i (c_i v_i + sum_k d_ki Y_k(s'_i) + X(s'_i))``, shape ``(S, D)``,
        or with :attr:`own` only each state's own row ``(S, A)``: ``c`` ``(T,)`` scales each
        transition's score, ``carried`` holds pairs ``(d_k (T,), Y_k)`` of vectors already
        solved (the same shape), taken at the next state."""
        if self.own:  # X(s)[row s] = sum w (c v + d Y(s)[row s] on self-loops) / (1 - stay)
            b = np.zeros((self.num_states, self.score_local.shape[1]))
            np.add.at(b, self.s, (self.weight * score_coefficient)[:, None] * self.score_local)
            for d, y in carried:
                on = np.flatnonzero(self.loop & (d != 0))
                np.add.at(b, self.s[on], (self.weight[on] * d[on])[:, None] * y[self.s[on]])
            return b / (1.0 - self.stay)[:, None]
        size = self.num_states * self.num_params
        if size > MAX_VECTOR_ENTRIES:
            raise ValueError(
                f"exact noise: {self.num_states} states x {self.num_params} parameters "
                f"({size:,} floats) is too large for a policy or metric that couples the steps "
                "of different states"
            )
        b = np.zeros((self.num_states, self.num_params))
        coefficient = (self.weight * score_coefficient)[:, None] * self.score_local
        np.add.at(b, (np.repeat(self.s, self.cols.shape[1]), self.cols.ravel()),
                  coefficient.ravel())  # fmt: skip
        for d, y in carried:
            on = np.flatnonzero(self.go & (d != 0))
            np.add.at(b, self.s[on], (self.weight[on] * d[on])[:, None] * y[self.next[on]])
        return self._solve(b)

    def after(self, per_state: np.ndarray) -> np.ndarray:
        """A scalar per state at each transition's next state (0 where the episode ends)."""
        return np.where(self.go, per_state[self.next], 0.0)

    def against(self, per_state: np.ndarray) -> np.ndarray:
        """``v_i^T M X(s'_i)`` per transition for vectors ``X`` per state (:meth:`vector`'s;
        0 where the episode ends at the transition)."""
        if self.own:  # only a self-loop's next state shares the row
            picked = per_state[self.s]
            return np.where(self.loop, np.einsum("ta,ta->t", self.score_local, picked), 0.0)
        mx = per_state if self.metric is None else per_state @ self.metric
        picked = mx[self.next[:, None], self.cols]  # (T, A)
        return np.where(self.go, np.einsum("ta,ta->t", self.score_local, picked), 0.0)

    def norm2(self, x: np.ndarray) -> float:
        """``x^T M x``."""
        return float(x @ x if self.metric is None else x @ self.metric @ x)

    def start(self, per_state: np.ndarray) -> np.ndarray:
        """The expectation over the initial distribution."""
        return self.initial @ per_state

    def means_of(self, coefficient: np.ndarray) -> tuple[np.ndarray, float]:
        """``E[sum_t c_t v_t]`` ``(D,)`` where ``c`` ``(T,)`` is each transition's expected
        coefficient given it, ``sum_i d(s_i) w_i c_i v_i`` with ``d`` the expected visits
        (the forward counterpart of the backward sweep: ``d = mu + P_pi^T d``), and
        ``E_s0[m(s0)^T M m(s0)]`` of the same from each initial state ``s0``."""
        starts = np.flatnonzero(self.initial)
        size = len(starts) * self.num_params
        if size > MAX_VECTOR_ENTRIES:
            raise ValueError(f"exact noise: {len(starts)} initial states x {self.num_params} "
                             f"parameters ({size:,} floats) is too large")  # fmt: skip
        begin = np.zeros((self.num_states, len(starts)))
        begin[starts, np.arange(len(starts))] = 1.0
        if self.order is None:
            transposed = np.eye(self.num_states)
            keep = self.go
            np.add.at(transposed, (self.next[keep], self.s[keep]), -self.weight[keep])
            visits = np.linalg.solve(transposed, begin)
        else:
            visits = begin
            for k in reversed(self.order):  # predecessors first
                if self.stay[k]:
                    visits[k] /= 1.0 - self.stay[k]
                edges = self.out[k]
                np.add.at(visits, self.next[edges], visits[k] * self.weight[edges][:, None])
        per_start = np.zeros((len(starts), self.num_params))  # m(s0), (K, D)
        weighted = self.weight * coefficient
        for k in range(len(starts)):
            weights = (weighted * visits[self.s, k])[:, None] * self.score_local
            np.add.at(per_start[k], self.cols.ravel(), weights.ravel())
        mu = self.initial[starts]
        mean = mu @ per_start
        return mean, float(sum(p * self.norm2(m) for p, m in zip(mu, per_start, strict=True)))


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
    first = rec.vector(a)  # Y(s) = E[G | s] = sum w (a v + Y(s'))
    # Z(s) = E[G^T M G | s] = sum w (a^2 v M v + 2 a v M Y(s') + Z(s'))
    second = rec.start(rec.scalar(a * a * rec.vmv + 2.0 * a * rec.against(first)))
    if sigma:  # the noise's own term: sigma^2 E[sum_t v_t M v_t] (its cross terms vanish)
        second += sigma**2 * rec.start(rec.scalar(rec.vmv))
    mean, start = rec.means_of(a)
    return ExactMoments(mean, float(second), rec.norm2(mean), start)


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
    w1 = rec.scalar(r)  # W1(s) = sum w (r + W1(s'))
    w1n = rec.after(w1)
    w2 = rec.scalar(r * r + 2.0 * r * w1n)
    w2n = rec.after(w2)
    # E[R^j V | s] for j = 1, 2; E[V | s] = 0 (each step's score has mean 0 under the policy),
    # so U1 = sum w (r v + v W1' + U1') and U2 = sum w (r^2 v + 2 r (v W1' + U1') + v W2' + U2')
    u1 = rec.vector(r + w1n)
    u2 = rec.vector(r * r + 2.0 * r * w1n + w2n, [(2.0 * r, u1)])
    vm1, vm2 = rec.against(u1), rec.against(u2)
    # E[R^j V^T M V | s], from v^T M v and v^T M U_j(s') per transition
    t0 = rec.scalar(rec.vmv)
    t0n = rec.after(t0)
    t1 = rec.scalar(r * (rec.vmv + t0n) + rec.vmv * w1n + 2.0 * vm1)
    t1n = rec.after(t1)
    t2 = rec.scalar(
        r * r * (rec.vmv + t0n)
        + 2.0 * r * (rec.vmv * w1n + 2.0 * vm1 + t1n)
        + rec.vmv * w2n + 2.0 * vm2
    )  # fmt: skip
    b = float(baseline)
    # E[(R - b) V | s0] = E[sum_t Q(s_t, a_t) v_t | s0]: the return before a step and b
    # are fixed given its state, where the step's score has mean 0
    mean, start = rec.means_of(r + w1n)
    second = rec.start(t2) - 2.0 * b * rec.start(t1) + b * b * rec.start(t0)
    return ExactMoments(mean, float(second), rec.norm2(mean), start)
