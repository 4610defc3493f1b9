"""Tree-structured rollouts and their advantage (Tree-GRPO: Ji et al., "Tree Search for LLM Agent
Reinforcement Learning", ICLR 2026; ARPO's entropy-triggered branching: Dong et al., "Agentic
Reinforced Policy Optimization", arXiv 2507.19849) as an estimator of :mod:`routine_envs.credit`
with the rollout scheme it samples by (registered by name: ``tree_grpo``).

**The rollout scheme** (:class:`TreeRollout`, the estimator's ``rollout``; a trainer that sees
one samples a group this way). A group of ``trees * branches**depth`` episodes from one start is
``trees`` trees of ``branches**depth`` leaves each. The leaves of a tree share every step until
the tree's first branch point; there they split into ``branches`` blocks, each of which shares
its steps until the tree's next branch point, and so on for ``depth`` levels. A tree branches
its next level at a step (a turn: every step of the MDP is one) with probability
``branch_prob``, or, with ``entropy_threshold`` (ARPO), where the policy's entropy at the shared
state, over the largest entropy possible there, is at least that threshold. A tree whose episode
ends before all its levels branched leaves identical episodes (an unexpanded node).

**Fair cost**: a shared step is one environment step, counted once however many leaves share it;
the trainer's budget counts distinct steps (the card says so). The batch holds each leaf as a
whole episode (shared steps repeated, in group, member order), as Tree-GRPO trains on the tree's
root-to-leaf paths: a shared step's gradient is the sum of its leaves' advantages.

**The advantage**: with ``R`` a leaf's return, ``A = (R - mean_tree(R)) + (R - mean_group(R))``
(intra-tree plus inter-tree; with ``normalize_std`` each term over its std, as Tree-GRPO does).
A step shared by leaves of several outcomes gets, summed over its copies, the spread of their
returns around the means: a step-level signal from the tree's structure, without labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from routine_envs.credit import Advantages, check_batch
from routine_envs.episodes import EpisodeBatch

__all__ = ["TreeGRPO", "TreeRollout"]


def _int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return value


@dataclass(frozen=True)
class TreeRollout:
    """How a group's episodes are sampled: ``trees`` trees of ``branches**depth`` leaves.

    Attributes:
        trees: trees per group (their leaves' mean is the inter-tree baseline).
        branches: blocks a node splits into at a branch point.
        depth: branch points per tree.
        branch_prob: chance per step that a tree branches its next level.
        entropy_threshold: ``None``, or branch (also) where the normalised entropy of the
            policy at the shared state is at least this (ARPO), in ``[0, 1]``.
    """

    trees: int = 2
    branches: int = 2
    depth: int = 2
    branch_prob: float = 0.1
    entropy_threshold: float | None = None

    def __post_init__(self) -> None:
        _int("trees", self.trees, 1)
        _int("branches", self.branches, 1)
        _int("depth", self.depth, 0)
        if not 0 <= self.branch_prob <= 1:
            raise ValueError(f"branch_prob must be in [0, 1], got {self.branch_prob!r}")
        if self.entropy_threshold is not None and not 0 <= self.entropy_threshold <= 1:
            raise ValueError(
                f"entropy_threshold must be None or in [0, 1], got {self.entropy_threshold!r}"
            )

    @property
    def leaves(self) -> int:
        """Leaves per tree: ``branches**depth``."""
        return self.branches**self.depth

    @property
    def group_size(self) -> int:
        """Episodes per group: ``trees * leaves``."""
        return self.trees * self.leaves

    def check_group_size(self, n: int) -> None:
        """``ValueError`` unless a trainer's group of ``n`` episodes is this scheme's."""
        if n != self.group_size:
            raise ValueError(
                f"tree rollouts of {self.trees} trees x {self.branches}^{self.depth} leaves "
                f"need groups of {self.group_size} episodes, the trainer's are {n} (set n_envs)"
            )

    def leaders(self, levels: np.ndarray) -> np.ndarray:
        """The member each member copies its action from, shape ``(..., group_size)``, for the
        branch levels reached by each tree, shape ``(..., trees)`` (a member is its block's
        leader when the entry is its own index)."""
        member = np.arange(self.group_size)
        tree, leaf = np.divmod(member, self.leaves)
        block = self.branches ** (self.depth - np.asarray(levels)[..., tree])
        return tree * self.leaves + (leaf // block) * block

    def branching(
        self,
        levels: np.ndarray,
        alive: np.ndarray,
        normalised_entropy: np.ndarray | None,
        uniforms: np.ndarray,
    ) -> np.ndarray:
        """Which trees branch their next level at this step, shape ``(..., trees)``: those with
        a level left whose leaves are alive, by ``branch_prob`` (``uniforms``, same shape) or
        by the entropy at the tree's shared state (``normalised_entropy``, same shape)."""
        go = uniforms < self.branch_prob
        if self.entropy_threshold is not None and normalised_entropy is not None:
            go |= normalised_entropy >= self.entropy_threshold
        return go & (levels < self.depth) & alive


@dataclass
class TreeGRPO:
    """Intra-tree plus inter-tree advantage of tree-sampled groups (module docstring).

    Attributes:
        trees, branches, depth, branch_prob, entropy_threshold: the :class:`TreeRollout`.
        normalize_std: divide each term by its returns' std (Tree-GRPO's normalisation).
        eps: added to those stds.
    """

    trees: int = 2
    branches: int = 2
    depth: int = 2
    branch_prob: float = 0.1
    entropy_threshold: float | None = None
    normalize_std: bool = False
    eps: float = 1e-6
    rollout: TreeRollout = field(init=False)
    name: ClassVar[str] = "tree_grpo"
    #: how a run's budget counts its steps (report cards print it)
    steps_counted: ClassVar[str] = (
        "distinct environment steps: a step the leaves of a tree share is taken and counted once"
    )
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.rollout = TreeRollout(
            self.trees, self.branches, self.depth, self.branch_prob, self.entropy_threshold
        )

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        returns = batch.episode_returns()
        groups = np.asarray(batch.groups)
        n = self.rollout.group_size
        counts = np.bincount(np.unique(groups, return_inverse=True)[1])
        if (counts != n).any():
            raise ValueError(
                f"tree_grpo needs groups of {n} episodes (its tree rollouts), got sizes "
                f"{sorted(set(counts.tolist()))}"
            )
        # episodes are in group, member order: a group's leaves, tree by tree
        order = np.argsort(groups, kind="stable")
        by_group = returns[order].reshape(-1, self.trees, self.rollout.leaves)
        intra = by_group - by_group.mean(axis=2, keepdims=True)
        inter = by_group - by_group.mean(axis=(1, 2), keepdims=True)
        if self.normalize_std:
            intra = intra / (by_group.std(axis=2, keepdims=True) + self.eps)
            inter = inter / (by_group.std(axis=(1, 2), keepdims=True) + self.eps)
        per_episode = np.empty(len(returns))
        per_episode[order] = (intra + inter).reshape(-1)
        return Advantages(np.repeat(per_episode, np.diff(batch.episode_starts)))
