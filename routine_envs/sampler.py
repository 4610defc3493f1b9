"""The model sampler: episodes and Monte-Carlo rollouts drawn from an environment's exact model.

:class:`ModelSampler` turns the tabular model of :mod:`routine_envs.oracle` into lookup tables, so
thousands of episodes (or rollouts from given states) advance in one numpy operation per time
step. It is equivalent in distribution to stepping the environment; the SNR lab
(:mod:`routine_envs.snr`) samples its episodes with it, and the ``mc_rollout`` estimator of
:mod:`routine_envs.credit` can simulate its rollouts on it (``credit.ModelRollouts``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from routine_envs.episodes import EpisodeBatch, stack_observations
from routine_envs.oracle import TabularModel


class ModelSampler:
    """Vectorized episodes from an environment's exact model (``env.unwrapped.model()``).

    Equivalent in distribution to stepping the environment, but thousands of episodes advance
    in one numpy operation per time step. Annotations (``critical``) come from the environment's
    ``critical_table()`` (the exact action gap above the tolerance), each step's ``turn_score``
    (of the state it reached) from its ``turn_score_table()``.
    """

    def __init__(self, env: Any, max_steps: int = 100_000) -> None:
        base = env.unwrapped
        model: TabularModel = base.model()
        self.env, self.model, self.max_steps = base, model, max_steps
        s, a = model.num_states, model.num_actions
        sa = model.state * a + model.action
        counts = np.bincount(sa, minlength=s * a)
        width = max(1, int(counts.max()))
        order = np.argsort(sa, kind="stable")
        slot = np.arange(len(sa)) - np.repeat(np.cumsum(counts) - counts, counts)
        self.next_state = np.zeros((s * a, width), dtype=np.int64)
        self.reward = np.zeros((s * a, width))
        self.done = np.ones((s * a, width), dtype=bool)
        rows = sa[order]
        self.next_state[rows, slot] = model.next_state[order]
        self.reward[rows, slot] = model.reward[order]
        self.done[rows, slot] = model.terminated[order]
        probs = np.zeros((s * a, width))
        probs[rows, slot] = model.prob[order]
        cumulative = np.cumsum(probs, axis=1)
        valid = np.arange(width)[None, :] < counts[:, None]
        cumulative[~valid] = 2.0  # padding is never chosen
        has = counts > 0
        cumulative[np.flatnonzero(has), counts[has] - 1] = 1.0  # no rounding gap at the end
        self.cumulative = cumulative
        self.width = width
        self.initial_cumulative = np.cumsum(model.initial)
        self.rollout_steps = 0  # environment steps simulated by rollout_values (its cost)
        #: ``critical`` of every ``state_id`` (its definition: the exact action gap above the
        #: tolerance; False on terminal states), shape ``(num_states,)``.
        self.critical = np.array(base.dynamics.critical_table())
        self._turn_scores: np.ndarray | None = None  # built on first use
        self._observations: dict[int, Any] = {}

    def _draw_outcome(self, sa: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.width == 1:
            return np.zeros(len(sa), dtype=np.int64)
        u = rng.random(len(sa))[:, None]
        return np.minimum((u >= self.cumulative[sa]).sum(axis=1), self.width - 1)

    def _draw_actions(self, probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        cum = np.cumsum(probs, axis=1)
        u = rng.random(len(probs))[:, None] * cum[:, -1:]
        return np.minimum((u >= cum).sum(axis=1), probs.shape[1] - 1)

    def initial_states(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` initial state ids drawn from the model's initial distribution, shape ``(n,)``."""
        u = rng.random(n)
        return np.minimum(
            np.searchsorted(self.initial_cumulative, u, side="right"), self.model.num_states - 1
        )

    PROVIDES = frozenset(
        {
            "actions",
            "critical",
            "state_ids",
            "anchors",
            "log_probs",
            "entropies",
            "observations",
            "turn_scores",
        }
    )
    """The batch fields :meth:`sample` can fill (observations on request)."""

    @property
    def turn_scores(self) -> np.ndarray:
        """``turn_score`` of every ``state_id`` (the dynamics' ``turn_score_table()``, read
        once), shape ``(num_states,)``."""
        if self._turn_scores is None:
            self._turn_scores = np.asarray(self.env.dynamics.turn_score_table(), np.float64)
        return self._turn_scores

    def observations_of(self, state_ids: np.ndarray) -> np.ndarray:
        """The observation of each ``state_id`` (computed once per state and kept), shape
        ``(len(state_ids), *obs_shape)`` (an object array where observations do not stack)."""
        dynamics = self.env.dynamics
        for i in np.unique(state_ids).tolist():
            if i not in self._observations:
                self._observations[i] = dynamics.observe(dynamics.state_from_id(i))
        return stack_observations([self._observations[i] for i in state_ids.tolist()])

    def sample(
        self,
        policy: np.ndarray,
        num_groups: int,
        group_size: int,
        rng: np.random.Generator,
        observations: bool = False,
    ) -> EpisodeBatch:
        """``num_groups * group_size`` episodes under the probability table ``policy``
        (``(num_states, num_actions)``); the episodes of a group share their initial state.

        The batch has the annotations, the ``turn_score`` of the state each step reached, the
        policy's log-probabilities and entropies (nats), and with ``observations`` each step's
        observation (from the dynamics, per state)."""
        n = num_groups * group_size
        state = np.repeat(self.initial_states(num_groups, rng), group_size)
        alive = np.ones(n, dtype=bool)
        cols_s, cols_a, cols_r, cols_next = [], [], [], []
        a_count = self.model.num_actions
        for _ in range(self.max_steps):
            if not alive.any():
                break
            s = np.where(alive, state, 0)
            actions = self._draw_actions(policy[s], rng)
            sa = s * a_count + actions
            k = self._draw_outcome(sa, rng)
            cols_s.append(np.where(alive, state, -1))
            cols_a.append(actions)
            cols_r.append(np.where(alive, self.reward[sa, k], 0.0))
            state = np.where(alive, self.next_state[sa, k], state)
            cols_next.append(state)
            alive &= ~self.done[sa, k]
        else:
            raise RuntimeError(f"episodes did not end within {self.max_steps} steps")
        states = np.stack(cols_s, axis=1)
        mask = states >= 0
        lengths = mask.sum(axis=1)
        ids, actions = states[mask], np.stack(cols_a, axis=1)[mask]
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(policy > 0, policy * np.log(policy), 0.0)
        return EpisodeBatch(
            rewards=np.stack(cols_r, axis=1)[mask],
            episode_starts=np.concatenate([[0], np.cumsum(lengths)]),
            groups=np.repeat(np.arange(num_groups), group_size),
            actions=actions,
            state_ids=ids,
            anchors=self.env.dynamics.anchors_of(ids),
            critical=self.critical[ids],
            observations=self.observations_of(ids) if observations else None,
            log_probs=np.log(policy[ids, actions]),
            entropies=-plogp.sum(axis=1)[ids],
            turn_scores=self.turn_scores[np.stack(cols_next, axis=1)[mask]],
        )

    def rollout_values(
        self,
        start: np.ndarray,
        policy: np.ndarray,
        num_rollouts: int,
        rng: np.random.Generator,
        gamma: float = 1.0,
    ) -> np.ndarray:
        """Mean return of ``num_rollouts`` rollouts of ``policy`` from each state of ``start``
        (terminal states: 0), shape ``(len(start),)``: a Monte-Carlo critic of known cost."""
        state = np.repeat(start, num_rollouts)
        total = np.zeros(len(state))
        discount = np.ones(len(state))
        alive = ~self.model.terminal[state]
        a_count = self.model.num_actions
        for _ in range(self.max_steps):
            if not alive.any():
                break
            s = np.where(alive, state, 0)
            sa = s * a_count + self._draw_actions(policy[s], rng)
            k = self._draw_outcome(sa, rng)
            self.rollout_steps += int(alive.sum())
            total += np.where(alive, discount * self.reward[sa, k], 0.0)
            discount *= gamma
            state = np.where(alive, self.next_state[sa, k], state)
            alive &= ~self.done[sa, k]
        return total.reshape(len(start), num_rollouts).mean(axis=1)

    def branch_returns(
        self,
        start: np.ndarray,
        policy: np.ndarray,
        num_rollouts: int,
        rng: np.random.Generator,
        common: bool = True,
        gamma: float = 1.0,
    ) -> np.ndarray:
        """``G[i, a, j]``: the return of rollout ``j`` that takes action ``a`` in state
        ``start[i]`` and then follows ``policy`` to the end, shape ``(len(start), num_actions,
        num_rollouts)`` (terminal states: 0). With ``common`` the rollouts ``(i, ., j)`` share
        their random numbers across actions (common random numbers, as ``diagnose`` branches a
        deep copy with one seed per rollout), so an action that changes nothing gives the same
        return; else every rollout is independent. Counted in :attr:`rollout_steps`."""
        n, a_count, k = len(start), self.model.num_actions, num_rollouts
        shape = (n, a_count, k)
        state = np.repeat(np.asarray(start, dtype=np.int64), a_count * k)
        first = np.tile(np.repeat(np.arange(a_count), k), n)
        alive = ~self.model.terminal[state]
        total = np.zeros(len(state))
        discount = 1.0

        def uniforms() -> np.ndarray:
            u = rng.random((n, 1 if common else a_count, k))
            return np.broadcast_to(u, shape).reshape(-1)

        for step in range(self.max_steps):
            if not alive.any():
                break
            s = np.where(alive, state, 0)
            if step == 0:
                actions = first
            else:
                cum = np.cumsum(policy[s], axis=1)
                u = uniforms()[:, None] * cum[:, -1:]
                actions = np.minimum((u >= cum).sum(axis=1), a_count - 1)
            sa = s * a_count + actions
            if self.width == 1:
                outcome = np.zeros(len(sa), dtype=np.int64)
            else:
                u = uniforms()[:, None]
                outcome = np.minimum((u >= self.cumulative[sa]).sum(axis=1), self.width - 1)
            self.rollout_steps += int(alive.sum())
            total += np.where(alive, discount * self.reward[sa, outcome], 0.0)
            discount *= gamma
            state = np.where(alive, self.next_state[sa, outcome], state)
            alive &= ~self.done[sa, outcome]
        else:
            raise RuntimeError(f"rollouts did not end within {self.max_steps} steps")
        return total.reshape(shape)
