"""Tree rollouts from an environment's exact model: the SNR lab's sampler for an estimator that
samples its groups by a :class:`~routine_envs.tree_grpo.TreeRollout`, so the lab measures the
algorithm the trainers run (their collector: ``baselines.lib.batched.rollouts``).

A group's members start in one state; at each step a tree branches its next level with the
scheme's rule (judged at the state of the tree's first leaf, as the trainer does), and every
member takes its block leader's action and outcome: the leaves of a block share the step, which
is simulated and counted once (:attr:`TreeSampler.steps_taken`). Each leaf is, on its own, an
episode of the policy; the group's leaves are correlated, which is what the tree's advantage
uses and what an SNR per group shows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from routine_envs.episodes import EpisodeBatch
from routine_envs.sampler import ModelSampler
from routine_envs.tree_grpo import TreeRollout

__all__ = ["TreeSampler"]


class TreeSampler(ModelSampler):
    """A :class:`~routine_envs.sampler.ModelSampler` whose groups are tree rollouts.

    Attributes:
        scheme: the tree rollout (a group is ``scheme.group_size`` leaves).
        steps_taken: distinct environment steps simulated by :meth:`sample` so far (a step the
            leaves of a block share counts once).
        episodes_sampled: leaves (whole episodes) returned by :meth:`sample` so far.
        leaf_steps: their steps, shared ones counted in every leaf.
    """

    def __init__(self, env: Any, scheme: TreeRollout, max_steps: int = 100_000) -> None:
        super().__init__(env, max_steps)
        self.scheme = scheme
        self.steps_taken = 0
        self.episodes_sampled = 0
        self.leaf_steps = 0

    def sample(
        self,
        policy: np.ndarray,
        num_groups: int,
        group_size: int,
        rng: np.random.Generator,
        observations: bool = False,
    ) -> EpisodeBatch:
        """``num_groups`` groups of tree rollouts under the probability table ``policy``
        (``(num_states, num_actions)``), each leaf a whole episode (shared steps repeated), in
        group, member order; the fields of :meth:`ModelSampler.sample`. ``ValueError`` unless
        ``group_size`` is the scheme's. With an ``entropy_threshold``, a state's largest entropy
        is that of a uniform choice over the actions ``policy`` gives a positive probability."""
        scheme = self.scheme
        scheme.check_group_size(group_size)
        n = num_groups * group_size
        state = np.repeat(self.initial_states(num_groups, rng), group_size)
        alive = np.ones(n, dtype=bool)
        levels = np.zeros((num_groups, scheme.trees), dtype=np.int64)
        firsts = np.arange(scheme.trees) * scheme.leaves
        offsets = np.arange(num_groups)[:, None] * group_size
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(policy > 0, policy * np.log(policy), 0.0)
            entropy = -plogp.sum(axis=1)
            widest = np.log(np.maximum((policy > 0).sum(axis=1), 1))
            normalised_table = np.where(widest > 0, entropy / widest, 0.0)
        cols_s, cols_a, cols_r, cols_next = [], [], [], []
        a_count = self.model.num_actions
        for _ in range(self.max_steps):
            if not alive.any():
                break
            s = np.where(alive, state, 0)
            at_firsts = s.reshape(num_groups, group_size)[:, firsts]
            normalised = (
                normalised_table[at_firsts] if scheme.entropy_threshold is not None else None
            )
            uniforms = rng.random((num_groups, scheme.trees))
            live_firsts = alive.reshape(num_groups, group_size)[:, firsts]
            levels += scheme.branching(levels, live_firsts, normalised, uniforms)
            lead = (scheme.leaders(levels) + offsets).reshape(-1)
            actions = self._draw_actions(policy[s], rng)[lead]
            sa = s * a_count + actions
            k = self._draw_outcome(sa, rng)[lead]
            self.steps_taken += int((alive & (lead == np.arange(n))).sum())
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
        self.episodes_sampled += n
        self.leaf_steps += int(lengths.sum())
        ids, actions = states[mask], np.stack(cols_a, axis=1)[mask]
        # the batch as ModelSampler.sample builds it; not shared through a helper there, since
        # routine_envs/sampler.py is part of the lab's key (an edit re-keys every shipped lab row)
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
            entropies=entropy[ids],
            turn_scores=self.turn_scores[np.stack(cols_next, axis=1)[mask]],
        )
