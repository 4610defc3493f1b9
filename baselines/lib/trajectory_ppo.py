"""``TrajectoryAdvantagePPO``: SB3 PPO whose advantages come from any estimator of
:mod:`routine_envs.credit`.

How it differs from SB3's ``PPO``:

- **Whole episodes, in groups.** Each rollout collects whole episodes in groups of ``n_envs``
  episodes that start from the same initial state: every member env of the (``DummyVecEnv``)
  vector env is reset with the same group seed, so the group shares its initial state and the
  environment's random stream; only the policy's sampled actions differ (GRPO's groups). Groups
  are collected until at least ``n_steps * n_envs`` transitions are in hand, so the buffer size
  varies slightly from one rollout to the next.
- **Advantages from the estimator**, computed on the batch of episodes with their ``info``
  annotations (``critical``, ``state_id``) before the buffer is flattened for the PPO update.
- **No minibatch of one step.** The rollout's size varies, so the last minibatch could hold a
  single step, whose advantage a per-minibatch normalization would divide by the std of one
  element (NaN in sb3-contrib's ``MaskablePPO``); such a step joins the minibatch before it.
- **No critic leak.** For a critic-free estimator (``trains_critic=False``) the value loss weight
  is set to 0, the stored values and return targets are exactly 0, and no value is bootstrapped
  for time-limit-truncated episodes (SB3's ``PPO`` adds ``gamma * V(terminal_obs)`` to the
  reward of truncated steps, which would leak a random value head into the advantages).

The variant follows SB3's idiom: a small subclass of ``PPO`` that overrides ``collect_rollouts``
and hands its own buffer class to the algorithm (``rollout_buffer_class`` of
``OnPolicyAlgorithm``): :class:`EpisodeRolloutBuffer` holds a rollout of whole episodes, resized
to the steps collected, with the estimator's advantages and return targets.

``TrajectoryAdvantageMaskablePPO`` is the same on sb3-contrib's ``MaskablePPO`` for environments
with ``action_masks()``; sb3-contrib is imported only when that class is first used (importing
this module does not import it). The policy runs on one torch thread: parallelism comes from
running seeds in separate processes.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from baselines.lib.trainers import check_feedable
from routine_envs import credit
from routine_envs.episodes import Episode, EpisodeBatch


def policy_table(policy: Any, env: gym.Env) -> np.ndarray:
    """The action probabilities of an SB3 ``policy`` on every decision state of ``env`` (an env
    of the suite, whose exact model lists its states), shape ``(num_states, num_actions)``.
    Rows of terminal or unreachable ids are uniform (they are never consulted)."""
    base = env.unwrapped
    ids, observations = base.decision_observations()
    table = np.full((base.num_states, int(base.action_space.n)), 1.0 / base.action_space.n)
    with th.no_grad():
        obs_tensor = obs_as_tensor(observations, policy.device)
        kwargs = {}
        if hasattr(base, "action_masks_of"):
            kwargs["action_masks"] = np.stack([base.action_masks_of(int(i)) for i in ids])
        dist = policy.get_distribution(obs_tensor, **kwargs)
        probs = dist.distribution.probs.cpu().numpy().astype(np.float64)
    table[ids] = probs / probs.sum(axis=1, keepdims=True)
    return table


TRAINER_PROVIDES = frozenset(
    {"actions", "observations", "log_probs", "entropies", "values", "snapshots"}
    | set(credit.INFO_KEY_OF_FIELD)
)
"""The batch fields :class:`TrajectoryAdvantagePPO` gives its estimator (the annotations where
the env's ``info`` has them: checked separately)."""


class _TorchRolloutPolicy:
    """The SB3 policy as a batched sampler for Monte-Carlo rollouts: ``(obs, infos) -> actions``."""

    def __init__(self, algo: Any, masked: bool) -> None:
        self.algo, self.masked = algo, masked

    def __call__(
        self,
        observations: Sequence[Any],
        infos: Sequence[Mapping[str, Any]],
    ) -> np.ndarray:
        obs = obs_as_tensor(np.stack(observations), self.algo.device)
        kwargs = {}
        if self.masked:
            kwargs["action_masks"] = np.stack([info["action_mask"] for info in infos])
        with th.no_grad():
            return self.algo.policy.get_distribution(obs, **kwargs).get_actions().cpu().numpy()


class EpisodeBufferMixin:
    """A rollout buffer filled at once with whole episodes (mixed into SB3's ``RolloutBuffer``
    or sb3-contrib's ``MaskableRolloutBuffer``)."""

    def store_episodes(
        self,
        batch: EpisodeBatch,
        observations: np.ndarray,
        log_probs: np.ndarray,
        result: credit.Advantages,
        trains_critic: bool,
        action_masks: np.ndarray | None = None,
    ) -> None:
        """Resize the buffer to the ``N = batch.num_steps`` steps of ``batch`` (one env) and
        store them: ``observations`` ``(N, *obs_shape)``, ``log_probs`` ``(N,)``, the
        estimator's advantages and returns; values and return targets stay exactly 0 when the
        estimator trains no critic. ``action_masks`` ``(N, num_actions)`` for a masked buffer."""
        n = batch.num_steps
        self.buffer_size, self.n_envs = n, 1
        self.reset()
        self.observations[:] = observations.reshape(self.observations.shape)
        self.actions[:] = batch.actions.reshape(n, 1, -1).astype(np.float32)
        self.rewards[:, 0] = batch.rewards
        starts = np.zeros(n, dtype=np.float32)
        starts[batch.episode_starts[:-1]] = 1.0
        self.episode_starts[:, 0] = starts
        self.log_probs[:, 0] = log_probs
        self.advantages[:, 0] = result.advantages
        if trains_critic:
            self.values[:, 0] = batch.values
            self.returns[:, 0] = (
                result.returns if result.returns is not None else result.advantages + batch.values
            )
        else:  # values and return targets stay exactly 0 (and vf_coef is 0)
            self.values[:] = 0.0
            self.returns[:] = 0.0
        if action_masks is not None:
            self.action_masks[:, 0] = action_masks
        self.pos, self.full = n, True

    def get(self, batch_size: int | None = None) -> Any:
        """SB3's minibatches, except that a last minibatch of a single step is merged into the
        one before it. The buffer holds a varying number of steps (whole episodes), so
        ``N % batch_size == 1`` happens; sb3-contrib's ``MaskablePPO`` would then normalize
        that step's advantage by the std of one element (NaN, and NaN logits after the
        update), and SB3's ``PPO`` would leave it unnormalized. Otherwise identical to
        SB3's (the same permutation and minibatches)."""
        n = self.buffer_size * self.n_envs
        if batch_size is None or n <= batch_size or n % batch_size != 1:
            yield from super().get(batch_size)
            return
        (everything,) = super().get(n)  # one permuted batch: SB3's order, sliced below
        starts = list(range(0, n - 1, batch_size))
        ends = [*starts[1:], n]  # the last minibatch takes the single remaining step
        for start, end in zip(starts, ends, strict=True):
            yield type(everything)(*(part[start:end] for part in everything))


class EpisodeRolloutBuffer(EpisodeBufferMixin, RolloutBuffer):
    """SB3's ``RolloutBuffer`` holding a rollout of whole episodes (see
    :meth:`EpisodeBufferMixin.store_episodes`); the buffer class of
    :class:`TrajectoryAdvantagePPO`."""


class _TrajectoryAdvantageMixin:
    """Episode-group collection and estimator advantages, shared by the PPO and MaskablePPO
    variants."""

    _masked = False

    @classmethod
    def _buffer_class(cls) -> type:
        return EpisodeRolloutBuffer

    def __init__(
        self,
        policy: Any,
        env: Any,
        estimator: credit.EstimatorLike = "trajectory_mc",
        estimator_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        _check_env(env)
        kwargs.setdefault("rollout_buffer_class", self._buffer_class())
        super().__init__(policy, env, **kwargs)  # PPO or MaskablePPO, next in the MRO
        self._init_estimator(estimator, estimator_kwargs)

    def _init_estimator(
        self, estimator: credit.EstimatorLike, estimator_kwargs: dict[str, Any] | None
    ) -> None:
        if not isinstance(self.env, DummyVecEnv):
            raise ValueError(
                "TrajectoryAdvantagePPO needs a DummyVecEnv (SB3's default for "
                f"make_vec_env), got {type(self.env).__name__}: group members are "
                "reset and stepped individually"
            )
        # requires (and the rest) read once, here: every later use is of this record
        self.estimator = credit.declare(
            credit.build_estimator(
                estimator, self.estimator_context(), **dict(estimator_kwargs or {})
            )
        )
        check_feedable(self.estimator, self.env.envs[0], TRAINER_PROVIDES, "TrajectoryAdvantagePPO")
        if getattr(self.estimator.reader, "rollout", None) is not None:
            raise ValueError(
                f"estimator {self.estimator.name!r} samples its groups by a rollout scheme "
                "(tree rollouts), which the batched trainer implements: use --trainer batched"
            )
        if not self.estimator.trains_critic:
            self.vf_coef = 0.0
        self._group_seeds = np.random.default_rng(self.seed)
        self._wants_snapshots = "snapshots" in self.estimator.requires
        self._wants_entropies = "entropies" in self.estimator.requires

    def estimator_context(self) -> credit.EstimatorContext:
        """What this learner offers an estimator: its first member env, the current policy's
        table (computed on demand), its gamma and GAE lambda, a rollout policy and its seed."""
        env = self.env.envs[0]
        return credit.EstimatorContext(
            env=env.unwrapped,
            policy_table=lambda: policy_table(self.policy, env),
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            rollout_policy=_TorchRolloutPolicy(self, self._masked),
            seed=self.seed,
        )

    # ---------------------------------------------------------------------- collection
    def _forward(
        self,
        obs: np.ndarray,
        masks: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Actions, values (zeros for a critic-free estimator) and log-probabilities."""
        obs_tensor = obs_as_tensor(obs, self.device)
        kwargs = {"action_masks": masks} if masks is not None else {}
        with th.no_grad():
            if self.estimator.trains_critic:
                actions, values, log_probs = self.policy(obs_tensor, **kwargs)
                values = values.flatten()
            else:  # skip the value head: V is never used
                dist = self.policy.get_distribution(obs_tensor, **kwargs)
                actions = dist.get_actions()
                log_probs = dist.log_prob(actions)
                values = th.zeros(len(obs))
        return actions.cpu().numpy(), values.cpu().numpy(), log_probs.cpu().numpy()

    def _entropies(self, obs: np.ndarray, masks: np.ndarray | None) -> np.ndarray:
        """The entropy (nats) of the policy's action distribution at each observation."""
        kwargs = {"action_masks": masks} if masks is not None else {}
        with th.no_grad():
            dist = self.policy.get_distribution(obs_as_tensor(obs, self.device), **kwargs)
            return dist.entropy().cpu().numpy()

    def _collect_group(self, callback: BaseCallback) -> tuple[list[Episode], list[dict], bool]:
        """One group: every member env reset with the same seed, stepped until all finish."""
        members = self.env.envs
        seed = int(self._group_seeds.integers(2**31 - 1))
        obs, infos, episodes, records = [], [], [], []
        for member in members:
            o, info = member.reset(seed=seed)
            obs.append(o)
            infos.append(info)
            episodes.append(
                Episode(
                    values=[],
                    observations=[],
                    log_probs=[],
                    entropies=[] if self._wants_entropies else None,
                    snapshots=[] if self._wants_snapshots else None,
                )
            )
            records.append({"masks": []})
        active = list(range(len(members)))
        while active:
            batch_obs = np.stack([obs[i] for i in active])
            masks = None
            if self._masked:
                masks = np.stack([members[i].unwrapped.action_masks() for i in active])
            actions, values, log_probs = self._forward(batch_obs, masks)
            entropies = self._entropies(batch_obs, masks) if self._wants_entropies else None
            still = []
            for k, i in enumerate(active):
                ep, rec = episodes[i], records[i]
                if self._wants_snapshots:
                    info = dict(infos[i])
                    if self._masked:
                        info["action_mask"] = masks[k]
                    ep.snapshots.append((copy.deepcopy(members[i]), obs[i], info))
                ep.observations.append(obs[i])
                ep.log_probs.append(float(log_probs[k]))
                if entropies is not None:
                    ep.entropies.append(float(entropies[k]))
                if masks is not None:
                    rec["masks"].append(masks[k])
                ep.infos.append(infos[i])
                ep.actions.append(int(actions[k]))
                ep.values.append(float(values[k]))
                o, reward, terminated, truncated, info = members[i].step(int(actions[k]))
                ep.rewards.append(float(reward))
                obs[i], infos[i] = o, info
                if terminated or truncated:
                    ep.truncated = bool(truncated and not terminated)
                    ep.final_info = info  # the last state's turn_score, for the batch
                    if ep.truncated and self.estimator.trains_critic:
                        with th.no_grad():
                            final = obs_as_tensor(o[None], self.device)
                            ep.bootstrap_value = float(self.policy.predict_values(final)[0, 0])
                    self._update_info_buffer([info], np.array([True]))
                else:
                    still.append(i)
            self.num_timesteps += len(active)
            callback.update_locals(locals())
            if not callback.on_step():
                return episodes, records, False
            active = still
        return episodes, records, True

    def _collect_episode_rollouts(
        self, callback: BaseCallback, rollout_buffer: Any, n_rollout_steps: int
    ) -> bool:
        self.policy.set_training_mode(False)
        callback.on_rollout_start()
        target = n_rollout_steps * self.env.num_envs
        episodes: list[Episode] = []
        records: list[dict] = []
        collected = group = 0
        while collected < target:
            group_episodes, group_records, keep_going = self._collect_group(callback)
            if not keep_going:
                return False
            for ep in group_episodes:
                ep.group = group
            group += 1
            episodes += group_episodes
            records += group_records
            collected += sum(len(ep.rewards) for ep in group_episodes)
        batch = EpisodeBatch.from_episodes(episodes)
        result = self.estimator(batch)  # on the declared fields only (credit.batch_for)
        rollout_buffer.store_episodes(
            batch,
            batch.observations,
            batch.log_probs,
            result,
            self.estimator.trains_critic,
            np.concatenate([rec["masks"] for rec in records]) if self._masked else None,
        )
        self._last_batch, self._last_advantages = batch, result
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True


def _check_env(env: Any) -> None:
    if isinstance(env, VecEnv) and not isinstance(env, DummyVecEnv):
        raise ValueError(
            "TrajectoryAdvantagePPO needs a DummyVecEnv (or a gymnasium env), got "
            f"{type(env).__name__}"
        )


class TrajectoryAdvantagePPO(_TrajectoryAdvantageMixin, PPO):
    """PPO with advantages from a :mod:`routine_envs.credit` estimator (see module docstring).

    Args:
        policy, env: as for SB3's ``PPO``; ``env`` is a gymnasium env or a ``DummyVecEnv``
            whose ``num_envs`` is the group size.
        estimator: a registry name (``"trajectory_mc"``, ``"gigpo"``, ``"rloo"``, ``"oracle"``,
            ``"mc_rollout"``, ``"routine_masked"``, ``"gae"``), an estimator class or an
            estimator object; names and classes are built by
            :func:`routine_envs.credit.build_estimator` from :meth:`estimator_context`.
        estimator_kwargs: constructor arguments for a named estimator or a class.
        **kwargs: the rest of SB3 ``PPO``'s arguments; ``n_steps`` is the number of steps per
            member env per rollout (the rollout holds about ``n_steps * n_envs`` steps).
    """

    def collect_rollouts(
        self, env: VecEnv, callback: BaseCallback, rollout_buffer: Any, n_rollout_steps: int
    ) -> bool:
        return self._collect_episode_rollouts(callback, rollout_buffer, n_rollout_steps)


@functools.cache
def maskable_classes() -> tuple[type, type]:
    """``(TrajectoryAdvantageMaskablePPO, MaskableEpisodeRolloutBuffer)``, built on first use:
    the only place sb3-contrib is imported."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer

    class MaskableEpisodeRolloutBuffer(EpisodeBufferMixin, MaskableRolloutBuffer):
        """sb3-contrib's ``MaskableRolloutBuffer`` holding whole episodes and their masks."""

    class TrajectoryAdvantageMaskablePPO(_TrajectoryAdvantageMixin, MaskablePPO):
        """:class:`TrajectoryAdvantagePPO` on sb3-contrib's ``MaskablePPO``: actions are sampled
        under ``env.unwrapped.action_masks()`` and the masks are stored for the update."""

        _masked = True

        @classmethod
        def _buffer_class(cls) -> type:
            return MaskableEpisodeRolloutBuffer

        def collect_rollouts(
            self,
            env: VecEnv,
            callback: BaseCallback,
            rollout_buffer: Any,
            n_rollout_steps: int,
            use_masking: bool = True,
        ) -> bool:
            return self._collect_episode_rollouts(callback, rollout_buffer, n_rollout_steps)

    for cls in (MaskableEpisodeRolloutBuffer, TrajectoryAdvantageMaskablePPO):
        cls.__module__, cls.__qualname__ = __name__, cls.__name__  # picklable by name
    return TrajectoryAdvantageMaskablePPO, MaskableEpisodeRolloutBuffer


_LAZY = {"TrajectoryAdvantageMaskablePPO": 0, "MaskableEpisodeRolloutBuffer": 1}


def __getattr__(name: str) -> Any:
    """``TrajectoryAdvantageMaskablePPO`` and ``MaskableEpisodeRolloutBuffer`` on first access."""
    if name in _LAZY:
        return maskable_classes()[_LAZY[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
