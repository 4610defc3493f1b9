"""Exact success probabilities of many policies at once, on one configuration's model.

:meth:`routine_envs.dynamics.Dynamics.success_probability` evaluates one tabular policy by one
backward pass over the model's heights (``routine_envs.oracle``): ``V(s) = P(success | s)``
from the terminal hits up. Most of that work does not depend on the policy: the transitions in
height order, the folded corridors, the self-loops, the payoffs. :class:`SuccessEvaluator`
prepares it once per configuration and then evaluates R policies in one pass (arrays with a
leading axis of R) over the ``(state, action)`` pairs that are not pure self-loops (an invalid
action of CodeFix returns to its state and pays nothing: it only delays), each state's value
``V(s) = sum_a pi(a|s) Q'(s, a) / sum_a pi(a|s) (1 - stay(s, a))``: ``Q'`` sums the
transitions that leave, ``stay`` is the self-loop probability (the oracle's closed form of the
loop), and a policy row needs no normalisation (its scale cancels). The result equals the
dynamics' own to rounding (``tests/test_batched.py``: 1e-12 on every lite configuration of
rb1); models with cycles (no height schedule) fall back to the dynamics' method, one policy at
a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class _Height:
    """One height of the pass: its states ``order[lo:hi]``, their pairs ``[p0, p1)`` of the
    kept pairs (``starts``: each state's first pair, relative to ``p0``), and the transitions
    that read a value (``pair`` relative to ``p0``, the ``target`` id read, ``coef``)."""

    lo: int
    hi: int
    p0: int
    p1: int
    starts: np.ndarray
    pair: np.ndarray
    target: np.ndarray
    coef: np.ndarray


class SuccessEvaluator:
    """The exact success probability of policies of one dynamics, given on its decision states.

    Args:
        dynamics: a :class:`routine_envs.dynamics.Dynamics` (its ``model()`` and
            ``success_table()``; ``success_probability`` for models with cycles).

    Attributes:
        ids: the decision state ids, shape ``(K,)``, in ``decision_observations()``' order:
            the rows of the probabilities :meth:`__call__` takes.
    """

    def __init__(self, dynamics: Any) -> None:
        self.dynamics = dynamics
        model = dynamics.model()
        n, m = model.num_states, model.num_actions
        self.num_states, self.num_actions = n, m
        self.ids = np.flatnonzero(model.decision_states)
        layers = model.layers()
        self.exact_pass = layers is not None
        if layers is None:
            return
        success = np.asarray(dynamics.success_table(), dtype=bool)
        hits = (model.terminated & success[model.next_state]).astype(np.float64)
        sa = model.state * m + model.action
        loop = (model.next_state == model.state) & ~model.terminated
        stay = np.bincount(sa, weights=model.prob * loop, minlength=n * m)
        offset, scale, exit_ = layers.fold(1.0, hits, n)
        exit_ = np.where(exit_ < 0, n, exit_)  # slot n: the value 0 after a corridor that ends
        nxt = model.next_state
        # Q'(s, a) = sum prob * (pay + go * (offset + scale * V(exit))) over the transitions,
        # go = 0 where one ends the episode or loops: a constant and a part linear in V(exit)
        go = ~(model.terminated | loop)
        const = np.bincount(sa, weights=model.prob * (hits + go * offset[nxt]), minlength=n * m)
        coef = model.prob * go * scale[nxt]
        order = layers.states  # the decision states that are not corridors, by height
        self.order = order
        rank = np.full(n, -1, dtype=np.int64)
        rank[order] = np.arange(order.size)
        all_pairs = (order[:, None] * m + np.arange(m)).reshape(-1)
        keep = ~((stay[all_pairs] == 1.0) & (const[all_pairs] == 0.0))  # not a pure loop
        pairs = all_pairs[keep]  # by height, state, action
        pair_state = np.repeat(np.arange(order.size), m)[keep]  # rank of each pair's state
        position = np.full(n, -1, dtype=np.int64)
        position[self.ids] = np.arange(self.ids.size)
        self.source = position[pairs // m] * m + pairs % m  # into the flat (R, K * m) input
        self.const = const[pairs]
        self.leaving = 1.0 - stay[pairs]
        counts = np.bincount(pair_state, minlength=order.size)
        self.stuck = order[counts == 0]  # every action loops: no policy leaves them
        pair_index = np.full(n * m, -1, dtype=np.int64)
        pair_index[pairs] = np.arange(pairs.size)
        reading = np.flatnonzero((coef != 0) & (exit_[nxt] < n) & (rank[model.state] >= 0))
        read_pair = pair_index[sa[reading]]
        by_pair = np.argsort(read_pair, kind="stable")
        reading, read_pair = reading[by_pair], read_pair[by_pair]
        first_pair = np.searchsorted(pair_state, np.arange(order.size + 1))
        bounds = layers.state_bounds.tolist()
        self.heights: list[_Height] = []
        for h in range(layers.depth):
            lo, hi = bounds[h], bounds[h + 1]
            p0, p1 = int(first_pair[lo]), int(first_pair[hi])
            r0, r1 = np.searchsorted(read_pair, [p0, p1])
            t = reading[r0:r1]
            self.heights.append(
                _Height(
                    lo,
                    hi,
                    p0,
                    p1,
                    first_pair[lo:hi] - p0,
                    read_pair[r0:r1] - p0,
                    exit_[nxt[t]],
                    coef[t],
                )
            )
        p = layers.passing
        self.passing = (p, offset[p], scale[p], exit_[p])
        self.initial = model.initial

    def __call__(self, probs: np.ndarray) -> np.ndarray:
        """Success probabilities ``(R,)`` of the policies ``probs`` ``(R, K, num_actions)``:
        non-negative action weights on the decision states :attr:`ids` (each row normalised
        here, so softmax outputs in float32 do).

        Raises:
            ValueError: a wrong shape, negative or non-finite weights, or a policy that never
                leaves some state.
        """
        probs = np.asarray(probs)
        shape = (self.ids.size, self.num_actions)
        if probs.ndim != 3 or probs.shape[1:] != shape:
            raise ValueError(
                f"probs must have shape (R, {shape[0]}, {shape[1]}), got {probs.shape}"
            )
        runs = probs.shape[0]
        if not self.exact_pass:
            return np.array([self.dynamics.success_probability(t) for t in self.tables(probs)])
        if self.stuck.size:
            raise ValueError(_trapped(int(self.stuck[0])))
        pi = probs.reshape(runs, -1)[:, self.source].astype(np.float64)  # (R, pairs)
        if not np.all(np.isfinite(pi)) or np.any(pi < 0):
            raise ValueError("probs must be finite and non-negative")
        weighted = pi * self.const
        leaving = pi * self.leaving
        values = np.zeros((runs, self.num_states + 1))
        offsets = np.arange(runs)[:, None]
        for h in self.heights:
            width = h.p1 - h.p0
            num = weighted[:, h.p0 : h.p1]
            if h.pair.size:
                spread = (offsets * width + h.pair).reshape(-1)
                read = (values[:, h.target] * h.coef).reshape(-1)
                q = np.bincount(spread, weights=read, minlength=runs * width).reshape(runs, width)
                num = num + pi[:, h.p0 : h.p1] * q
            den = np.add.reduceat(leaving[:, h.p0 : h.p1], h.starts, axis=1)
            if np.any(den <= 0):
                k = int(np.flatnonzero((den <= 0).any(axis=0))[0])
                raise ValueError(_trapped(int(self.order[h.lo + k])))
            values[:, self.order[h.lo : h.hi]] = np.add.reduceat(num, h.starts, axis=1) / den
        ids, offset, scale, exit_ = self.passing
        values[:, ids] = offset + scale * values[:, exit_]
        return values[:, : self.num_states] @ self.initial

    def tables(self, probs: np.ndarray) -> np.ndarray:
        """The full tabular policies ``(R, num_states, num_actions)`` float64 of ``probs``
        (rows normalised; uniform where no decision is taken)."""
        probs = np.asarray(probs, dtype=np.float64)
        out = np.full((probs.shape[0], self.num_states, self.num_actions), 1.0 / self.num_actions)
        out[:, self.ids] = probs / probs.sum(axis=-1, keepdims=True)
        return out


def _trapped(state_id: int) -> str:
    return (
        f"the policy never leaves state_id {state_id} (it only takes actions that loop back "
        "there): its value is undefined"
    )
