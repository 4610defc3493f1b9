"""GRPO for a language model on a text env, with turn-level credit from any estimator.

Each step plays ``groups_per_step`` groups of ``group_size`` episodes from identical starts
(:func:`routine_envs.text.make_group`), gives every turn an advantage with an estimator of
:mod:`routine_envs.credit` (built by ``build_estimator`` from an ``EstimatorContext``: the exact
model, the model's policy table over canonical replies, a model sampler, gamma 1), spreads each
turn's advantage onto its reply tokens (:func:`routine_envs.text.spread_advantages`) and takes
``num_iterations`` Adam steps on TRL's GRPO loss.

**The loss is TRL's** (``GRPOTrainer._compute_loss`` of trl 1.16.0,
``trl/trainer/grpo_trainer.py``):
per reply token, ``ratio = exp(logp - old_logp)`` (``old_logp = logp.detach()`` when
``num_iterations == 1``, as TRL does), ``loss_t = -min(ratio A_t, clip(ratio, 1 - epsilon,
1 + epsilon_high) A_t) + beta KL_t`` with the k3 estimator ``KL_t = exp(ref - logp) - (ref -
logp) - 1`` against the model at the start of training (TRL's reference model), aggregated by
``loss_type``: ``"dapo"`` (TRL's default: the sum over the batch's reply tokens over their
number), ``"grpo"`` (each sequence's token mean, then the mean), ``"dr_grpo"`` (the sum over
``sequences x max_reply_tokens``). A sequence here is one turn's context and reply.

**Invalid turns.** The estimators are defined on the MDP's steps, so they see the valid turns
only (an invalid reply took no action; with ``invalid_penalty`` its reward is folded into the
episode's return). The tokens of an invalid reply get the advantage ``invalid_advantage`` (a
format reward on the tokens, outside the env's return; ``0`` turns it off).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from baselines.lib.lm.critic import TurnCritic
from baselines.lib.lm.policy import LMPolicy, canonical_mass, pad_left, table_from_logits
from baselines.lib.lm.rollout import (
    EnvFactory,
    PlayedEpisode,
    mdp_batch,
    play_groups,
    sampled_success,
)
from baselines.lib.lm.tokenizer import observation_texts
from routine_envs import credit
from routine_envs.sampler import ModelSampler
from routine_envs.text import spread_advantages

LOSS_TYPES = ("dapo", "grpo", "dr_grpo")


@dataclass(frozen=True)
class GRPOConfig:
    """The GRPO step (names as in TRL's ``GRPOConfig`` where TRL has the setting).

    Attributes:
        learning_rate: Adam step size.
        group_size: episodes per group (TRL's ``num_generations``).
        groups_per_step: groups per optimisation step.
        num_iterations: Adam steps per batch of episodes (TRL's mu).
        epsilon, epsilon_high: the clipping range ``[1 - epsilon, 1 + epsilon_high]``
            (``epsilon_high`` ``None``: ``epsilon``).
        beta: weight of the k3 KL term to the reference model (TRL's default 0).
        loss_type: ``"dapo"``, ``"grpo"`` or ``"dr_grpo"``.
        max_reply_tokens: the longest reply (TRL's ``max_completion_length`` per turn).
        temperature: sampling temperature (the log-probabilities are of the tempered model).
        invalid_advantage: advantage of the tokens of an invalid reply (format reward).
        max_grad_norm: gradient clipping (``0``: none).
    """

    learning_rate: float = 3e-3
    group_size: int = 8
    groups_per_step: int = 4
    num_iterations: int = 1
    epsilon: float = 0.2
    epsilon_high: float | None = None
    beta: float = 0.0
    loss_type: str = "dapo"
    max_reply_tokens: int = 8
    temperature: float = 1.0
    invalid_advantage: float = -1.0
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        for name in ("group_size", "groups_per_step", "num_iterations", "max_reply_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        for name in ("learning_rate", "temperature"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("epsilon", "beta", "max_grad_norm"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.epsilon_high is not None and not self.epsilon_high >= 0:
            raise ValueError(f"epsilon_high must be None or >= 0, got {self.epsilon_high!r}")
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    config: GRPOConfig,
    ref_logp: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """TRL's GRPO loss (see the module docstring) over ``(B, T)`` per-token tensors: the
    current, old and reference log-probabilities, the advantages and the mask of the tokens
    that count (reply tokens). Returns the loss and ``clip_fraction``, ``kl``."""
    mask = mask.to(logp.dtype)
    ratio = torch.exp(logp - old_logp)
    high = config.epsilon if config.epsilon_high is None else config.epsilon_high
    clipped = torch.clamp(ratio, 1 - config.epsilon, 1 + high)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    kl = torch.zeros_like(logp)
    if config.beta != 0.0:
        if ref_logp is None:
            raise ValueError("beta > 0 needs the reference log-probabilities")
        kl = torch.exp(ref_logp - logp) - (ref_logp - logp) - 1
        per_token = per_token + config.beta * kl
    if config.loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif config.loss_type == "dr_grpo":
        loss = (per_token * mask).sum() / (per_token.shape[0] * config.max_reply_tokens)
    else:
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    count = float(mask.sum().clamp(min=1.0))
    was_clipped = ((ratio != clipped) & (mask > 0)).to(logp.dtype)
    return loss, {
        "clip_fraction": float(was_clipped.sum()) / count,
        "kl": float((kl.detach() * mask).sum()) / count,
    }


def turn_advantages(
    estimator: credit.AdvantageEstimator,
    episodes: list[PlayedEpisode],
    invalid_advantage: float,
    critic: TurnCritic | None = None,
) -> list[list[float]]:
    """One advantage per turn of each episode: the estimator's on the valid turns (called on
    one group at a time unless it declares ``group_independent``), ``invalid_advantage`` on
    the invalid ones. With ``critic`` the batch's ``values`` are its values of the valid turns'
    prompts, and it is then trained on the estimator's returns (the module docstring of
    :mod:`baselines.lib.lm.critic`)."""
    batch, rows = mdp_batch(episodes)
    if batch is None:
        return [[invalid_advantage] * len(p.turns) for p in episodes]
    estimator = credit.declare(estimator)  # its record when the trainer built it: as it is
    prompts = [t.prompt for p in episodes for t in p.turns if t.valid]  # the batch's order
    if critic is not None:
        batch = dataclasses.replace(batch, values=critic.values(prompts))
    batch = credit.batch_for(estimator, batch)  # only the privileged fields it declares
    if estimator.group_independent:
        result = [estimator(batch)]
    else:
        result = [estimator(g) for g in batch.split_groups()]
    adv = np.concatenate([r.advantages for r in result])
    if critic is not None:
        critic.fit(prompts, np.concatenate([r.returns for r in result]))
    return [[float(adv[r]) if r >= 0 else invalid_advantage for r in index] for index in rows]


class GRPOTrainer:
    """The built-in GRPO loop (see the module docstring).

    Args:
        policy: the language model policy (trained in place).
        factory: makes one text env (each group is built from it by ``make_group``).
        estimator: an estimator spec of :func:`routine_envs.credit.build_estimator` (registry
            name, ``'name{json kwargs}'``, import path, class or instance).
        config: the GRPO settings.
        seed: seeds the sampling, the group starts and the estimator.
        critic: the turn-level value model of an estimator that reads ``values`` (``gae``:
            Turn-PPO); ``None``: a :class:`~baselines.lib.lm.critic.TurnCritic` of the policy's
            shape with its default schedule, built when the estimator reads ``values``.
    """

    def __init__(
        self,
        policy: LMPolicy,
        factory: EnvFactory,
        estimator: credit.EstimatorLike,
        config: GRPOConfig,
        seed: int = 0,
        critic: TurnCritic | None = None,
    ) -> None:
        self.policy = policy
        self.factory = factory
        self.config = config
        self.env = factory()
        self.seed = int(seed)
        self.rng = np.random.default_rng(seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.optimizer = torch.optim.Adam(policy.model.parameters(), lr=config.learning_rate)
        self.reference = copy.deepcopy(policy.model).eval() if config.beta else None
        self._texts = observation_texts(self.env) if policy.markov else None
        self._table: np.ndarray | None = None
        base = self.env.unwrapped
        context = credit.EstimatorContext(
            env=base,
            policy_table=self.policy_table if policy.markov else None,
            gamma=1.0,
            gae_lambda=0.95,  # GAE over turns with the learned values (TurnCritic): PPO's
            sampler=ModelSampler(base),
            seed=seed,
        )
        # requires (and the rest) read once, here: every later use is of this record
        self.estimator = credit.declare(credit.build_estimator(estimator, context))
        reads_values = "values" in self.estimator.requires
        if critic is not None and not reads_values:
            raise ValueError(
                f"a critic was given but estimator {self.estimator.name!r} does not read values"
            )
        if reads_values and critic is None:
            critic = TurnCritic(policy.model.config, policy.tokenizer.pad_id, seed=seed)
        self.critic = critic
        self.steps = 0
        self.cpu_seconds = 0.0

    # ---------------------------------------------------------------------- the table
    def policy_table(self) -> np.ndarray:
        """The model's policy over canonical replies (computed once per step)."""
        if self._table is None:
            self._table = self.policy.policy_table(self.env, self._texts)
        return self._table

    def evaluate(self) -> dict[str, float]:
        """Exact success probability of the canonical policy table and the model's mean
        probability of writing a canonical reply (``window == 1`` only; else empty)."""
        if not self.policy.markov:
            return {}
        with torch.no_grad():
            ids, logits = self.policy.canonical_logits(self.env, self._texts)
        values = logits.double().numpy()
        table = table_from_logits(self.env, ids, values)
        return {
            "exact_success": float(self.env.unwrapped.success_probability(table)),
            "canonical_mass": float(canonical_mass(values).mean()),
        }

    def sampled(self, episodes: int) -> dict[str, float]:
        """Success as the model samples now (:func:`~baselines.lib.lm.rollout.sampled_success`:
        ``episodes`` episodes at the training temperature, replies read by the env as written),
        on random numbers of its own drawn from the trainer's seed and step."""
        seed = int(np.random.SeedSequence([self.seed, self.steps]).generate_state(1)[0])
        self.policy.model.eval()
        return sampled_success(
            self.policy,
            self.factory,
            episodes,
            seed,
            self.config.max_reply_tokens,
            self.config.temperature,
        )

    # ----------------------------------------------------------------------- one step
    def step(self) -> dict[str, Any]:
        """Play one batch of groups and update the model; the step's statistics."""
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        cfg = self.config
        self._table = None
        seeds = self.rng.integers(2**31 - 1, size=cfg.groups_per_step)
        self.policy.model.eval()
        episodes = play_groups(
            self.policy,
            self.factory,
            seeds,
            cfg.group_size,
            self.generator,
            cfg.max_reply_tokens,
            cfg.temperature,
        )
        advantages = turn_advantages(self.estimator, episodes, cfg.invalid_advantage, self.critic)
        sequences, adv_t, mask_t, sampled_t = token_batch(episodes, advantages)
        ref = None
        if self.reference is not None:
            with torch.no_grad():
                ref = _log_probs(self.reference, self.policy, sequences, cfg.temperature)
        self.policy.model.train()
        stats: dict[str, float] = {}
        for _ in range(cfg.num_iterations):
            logp, _ = self.policy.token_log_probs(sequences, cfg.temperature)
            old_logp = logp.detach() if cfg.num_iterations == 1 else sampled_t
            loss, stats = grpo_loss(logp, old_logp, adv_t, mask_t, cfg, ref)
            self.optimizer.zero_grad()
            loss.backward()
            if cfg.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
            stats["loss"] = float(loss.detach())
        self.policy.model.eval()
        self.steps += 1
        self.cpu_seconds += time.process_time() - start_cpu
        turns = [t for p in episodes for t in p.turns]
        returns = [p.episode_return for p in episodes]
        groups = np.repeat(np.arange(cfg.groups_per_step), cfg.group_size)
        group_std = [
            np.std([r for r, g in zip(returns, groups, strict=True) if g == k])
            for k in range(cfg.groups_per_step)
        ]
        return {
            "step": self.steps,
            "success": float(np.mean([p.success for p in episodes])),
            "return": float(np.mean(returns)),
            "invalid_fraction": float(np.mean([not t.valid for t in turns])),
            "turns": len(turns) / len(episodes),
            "reply_tokens": float(np.mean([len(t.reply.tokens) for t in turns])),
            "frac_reward_zero_std": float(np.mean([s == 0 for s in group_std])),
            "cpu_seconds": self.cpu_seconds,
            "step_wall_seconds": time.perf_counter() - start_wall,
            **stats,
        }

    def train(
        self,
        steps: int,
        target: float | None = None,
        eval_every: int = 1,
        log: Callable[[dict[str, Any]], None] | None = None,
        sample_every: int = 0,
        sample_episodes: int = 64,
    ) -> list[dict[str, Any]]:
        """Up to ``steps`` steps; with ``target``, stop once the exact success probability
        (``window == 1``) or else the batch's success rate reaches it. Each row has the step's
        statistics and, every ``eval_every`` steps, :meth:`evaluate`'s; with ``sample_every``,
        every ``sample_every`` steps and at the last step also :meth:`sampled`'s (success as the
        model samples, ``sample_episodes`` episodes)."""
        if steps < 0 or eval_every < 1 or sample_every < 0:
            raise ValueError(
                f"steps and sample_every must be >= 0 and eval_every >= 1, got {steps}, "
                f"{sample_every}, {eval_every}"
            )
        rows = []
        for k in range(steps):
            row = self.step()
            if self.steps % eval_every == 0 or target is not None:
                row.update(self.evaluate())
            reached = row.get("exact_success", row["success"])
            done = target is not None and reached >= target
            if sample_every and (self.steps % sample_every == 0 or done or k == steps - 1):
                row.update(self.sampled(sample_episodes))
            rows.append(row)
            if log is not None:
                log(row)
            if done:
                break
        return rows


def token_batch(
    episodes: list[PlayedEpisode], advantages: list[list[float]]
) -> tuple[list[list[int]], torch.Tensor, torch.Tensor, torch.Tensor]:
    """The loss's inputs: one sequence per turn (its context and its reply as sampled) and,
    aligned with :meth:`LMPolicy.token_log_probs` (left-padded, ``(B, T - 1)``), each token's
    advantage (the turn's, spread onto the reply by :func:`spread_advantages`), the mask of
    the reply tokens and their sampling log-probabilities."""
    sequences, token_adv, token_mask, sampled = [], [], [], []
    for played, adv in zip(episodes, advantages, strict=True):
        for turn, a in zip(played.turns, adv, strict=True):
            seq = turn.prompt + turn.reply.tokens
            values, mask = spread_advantages([a], [(len(turn.prompt), len(seq))], len(seq))
            sequences.append(seq)
            token_adv.append(values[1:])
            token_mask.append(mask[1:])
            sampled.append(np.concatenate([np.zeros(len(turn.prompt) - 1), turn.reply.log_probs]))
    return sequences, _pad_float(token_adv), _pad_float(token_mask) > 0, _pad_float(sampled)


def _pad_float(rows: list[np.ndarray]) -> torch.Tensor:
    """Left-padded float tensor of ragged 1-d arrays (zeros in the padding)."""
    width = max(len(r) for r in rows)
    out = torch.zeros(len(rows), width, dtype=torch.float32)
    for i, r in enumerate(rows):
        if len(r):
            out[i, width - len(r) :] = torch.as_tensor(np.asarray(r, dtype=np.float32))
    return out


def _log_probs(
    model: torch.nn.Module, policy: LMPolicy, sequences: list[list[int]], temperature: float
) -> torch.Tensor:
    ids, mask = pad_left(sequences, policy.tokenizer.pad_id)
    logits = model(ids, mask)[:, :-1] / temperature
    return torch.log_softmax(logits, dim=-1).gather(2, ids[:, 1:, None]).squeeze(2)
