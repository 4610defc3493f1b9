"""A learned criticality classifier trained on another environment's annotations: does
criticality transfer?

The features are environment-agnostic functions of the batch (so a classifier trained on one
environment applies to any other): the policy's entropy and surprise, the position in the
episode, GiGPO's anchor-group return variance and the share of the step group. The
classifier (scikit-learn's logistic regression on standardized features, imported lazily: the
``detectors`` extra) is trained once, on episodes sampled from the exact model of the source
environment under the uniform policy and under ``(1 - eps) optimal + eps uniform`` mixtures,
labelled by their annotations; those episodes' steps are its cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from routine_envs import credit
from routine_envs.detectors.base import Detection, check_detector_batch
from routine_envs.detectors.builtin import GroupVariance, group_anchor_index
from routine_envs.episodes import EpisodeBatch

__all__ = ["FEATURES", "TransferClassifier", "features"]

FEATURES = (
    "entropy",
    "surprise",
    "position",
    "first_step",
    "group_return_variance",
    "group_anchor_share",
)
"""The columns of :func:`features`."""


def features(batch: EpisodeBatch) -> np.ndarray:
    """Environment-agnostic features of every step, shape ``(N, len(FEATURES))``, each a
    function of the step's own group of episodes (so a batch's features do not depend on how
    many groups it holds): the entropy of the policy there (nats), ``-log pi(a_t | s_t)``, the
    relative position ``t / T`` in the episode, whether it is the first step, the variance of
    the return-to-go over the step's GiGPO step group over the variance of its group's episode
    returns (0 where that is 0), and the share of its group's steps in its step group."""
    group_of_step = np.repeat(batch.group_index(), batch.lengths)
    returns = batch.episode_returns()
    episode_group = batch.group_index()
    counts = np.bincount(episode_group)
    mean = np.bincount(episode_group, weights=returns) / counts
    spread = np.bincount(episode_group, weights=(returns - mean[episode_group]) ** 2) / counts
    scale = spread[group_of_step]
    variance = GroupVariance()(batch).scores
    variance = np.divide(variance, scale, out=np.zeros_like(variance), where=scale > 0)
    pair = group_anchor_index(batch)
    share = np.bincount(pair)[pair] / np.bincount(group_of_step)[group_of_step]
    lengths = np.repeat(batch.lengths, batch.lengths)
    return np.column_stack(
        [
            batch.entropies,
            -np.asarray(batch.log_probs),
            batch.step_index / lengths,
            (batch.step_index == 0).astype(np.float64),
            variance,
            share,
        ]
    )


@dataclass
class TransferClassifier(credit.FromContext):
    """A logistic regression on :func:`features`, trained on ``source_env``'s annotations;
    ``score`` its probability that the step is critical, critical when ``>= 0.5``."""

    source_env: str = "RoutineGrid-v0"
    source_kwargs: dict[str, Any] = field(default_factory=dict)
    source_eps: Sequence[float] = (1.0, 0.5, 0.2)
    train_episodes: int = 3000
    group_size: int = 8
    seed: int | None = None
    name: ClassVar[str] = "classifier"
    requires: ClassVar[frozenset[str]] = frozenset({"entropies", "log_probs", "anchors"})
    group_independent: ClassVar[bool] = True  # every feature is a function of one group
    context_fields: ClassVar[dict[str, str]] = {"seed": "seed"}
    cost_steps: int = field(default=0, init=False)
    _model: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.train_episodes < 2 * self.group_size or self.group_size < 2:
            raise ValueError(
                "train_episodes must be >= 2 * group_size and group_size >= 2, got "
                f"{self.train_episodes} and {self.group_size}"
            )
        if not self.source_eps or not all(0.0 <= e <= 1.0 for e in self.source_eps):
            raise ValueError(f"source_eps must be values in [0, 1], got {self.source_eps}")

    def prepare(self) -> None:
        """Train now (the one-off setup; otherwise done at the first call)."""
        self.train()

    def train(self) -> Any:
        """Train on the source environment (once); the fitted scikit-learn pipeline."""
        if self._model is not None:
            return self._model
        import gymnasium as gym
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        from routine_envs.detectors.policies import mixture_policy
        from routine_envs.sampler import ModelSampler

        try:
            env = gym.make(self.source_env, **self.source_kwargs).unwrapped
        except Exception as err:  # an unknown id or bad kwargs: name them
            raise ValueError(
                f"source_env {self.source_env!r} with {self.source_kwargs}: {err}"
            ) from None
        sampler = ModelSampler(env)
        rng = np.random.default_rng([0 if self.seed is None else self.seed, 7])
        groups = max(1, self.train_episodes // (self.group_size * len(self.source_eps)))
        x, y = [], []
        for eps in self.source_eps:
            batch = sampler.sample(mixture_policy(env, eps), groups, self.group_size, rng)
            self.cost_steps += batch.num_steps
            x.append(features(batch))
            y.append(batch.critical)
        labels = np.concatenate(y)
        if labels.all() or not labels.any():
            raise ValueError(f"source_env {self.source_env!r}: the annotations have one class")
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        model.fit(np.concatenate(x), labels)
        self._model = model
        return model

    def __call__(self, batch: EpisodeBatch) -> Detection:
        check_detector_batch(self, batch)
        probability = self.train().predict_proba(features(batch))[:, 1]
        return Detection(probability, probability >= 0.5)
