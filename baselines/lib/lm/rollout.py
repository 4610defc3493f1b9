"""Playing groups of text-env episodes with a language model, and the supervised warm start.

A group is ``make_group``'s: episodes from one identical start. All episodes of a step are
played in lockstep, one batched generation per turn. Every turn keeps what the trainer needs:
the context the model read, the tokens it wrote with their sampling log-probabilities, the info
of the state it acted in (the annotations), the reward and whether the reply was valid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from baselines.lib.lm.policy import Generated, LMPolicy, pad_left
from routine_envs import annotations as keys
from routine_envs.episodes import Episode, EpisodeBatch
from routine_envs.text import TextEnv, make_group

EnvFactory = Callable[[], TextEnv]


@dataclass
class Turn:
    """One assistant turn: ``prompt`` (token ids read), ``reply`` (what was sampled), ``info``
    (the info of the state acted in), ``reward``, ``valid`` (the reply named an action) and the
    action it named (``-1`` when invalid)."""

    prompt: list[int]
    reply: Generated
    info: dict[str, Any]
    reward: float
    valid: bool
    action: int


@dataclass
class PlayedEpisode:
    """The turns of one episode, its group and how it ended."""

    group: int
    turns: list[Turn] = field(default_factory=list)
    success: bool = False
    truncated: bool = False
    final_info: dict[str, Any] = field(default_factory=dict)

    @property
    def episode_return(self) -> float:
        return float(sum(t.reward for t in self.turns))


def play_groups(
    policy: LMPolicy,
    factory: EnvFactory,
    seeds: Sequence[int],
    group_size: int,
    generator: torch.Generator,
    max_reply_tokens: int,
    temperature: float = 1.0,
) -> list[PlayedEpisode]:
    """Play one group of ``group_size`` episodes per seed (``make_group``: identical starts),
    every episode to its end (the env's own end or its ``max_turns``)."""
    envs: list[TextEnv] = []
    infos: list[dict[str, Any]] = []
    episodes: list[PlayedEpisode] = []
    for g, seed in enumerate(seeds):
        members, _, first = make_group(factory, group_size, seed=int(seed))
        envs += members
        infos += first
        episodes += [PlayedEpisode(group=g) for _ in members]
    live = list(range(len(envs)))
    while live:
        prompts = [policy.prompt(envs[i].messages) for i in live]
        replies = policy.generate(prompts, max_reply_tokens, generator, temperature)
        still = []
        for i, prompt, reply in zip(live, prompts, replies, strict=True):
            _, reward, terminated, truncated, info = envs[i].step(reply.text)
            valid = not info[keys.INVALID_TURN]
            action = int(info[keys.PARSED_ACTION])
            episodes[i].turns.append(Turn(prompt, reply, infos[i], float(reward), valid, action))
            infos[i] = info
            if terminated or truncated:
                episodes[i].success = bool(info.get(keys.SUCCESS, False))
                episodes[i].truncated = bool(truncated and not terminated)
                episodes[i].final_info = info
            else:
                still.append(i)
        live = still
    return episodes


def mdp_batch(episodes: Sequence[PlayedEpisode]) -> tuple[EpisodeBatch | None, list[list[int]]]:
    """The episodes' valid turns as an :class:`EpisodeBatch` (the MDP's steps, which every
    estimator of :mod:`routine_envs.credit` is defined on) and, per episode, the batch row of
    each turn (``-1`` for an invalid turn, which took no action of the MDP). An episode with no
    valid turn is left out; ``None`` when none has one."""
    records, rows = [], []
    offset = 0
    for played in episodes:
        valid = [t for t in played.turns if t.valid]
        index, k = [], 0
        for t in played.turns:
            index.append(offset + k if t.valid else -1)
            k += t.valid
        rows.append(index)
        if not valid:
            continue
        offset += len(valid)
        rewards = [t.reward for t in valid]
        rewards[-1] += sum(t.reward for t in played.turns if not t.valid)  # keep the return
        records.append(
            Episode(
                rewards=rewards,
                actions=[t.action for t in valid],
                infos=[t.info for t in valid],
                group=played.group,
                truncated=played.truncated,
            )
        )
    if not records:
        return None, rows
    return EpisodeBatch.from_episodes(records), rows


# ------------------------------------------------------------- success as sampled
def binomial_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact) interval of a success probability from ``successes`` of
    ``trials`` Bernoulli draws (``scipy.stats.binomtest``)."""
    from scipy import stats

    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes}/{trials}")
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence, method="exact")
    return float(ci.low), float(ci.high)


def sampled_success(
    policy: LMPolicy,
    factory: EnvFactory,
    episodes: int,
    seed: int,
    max_reply_tokens: int,
    temperature: float = 1.0,
) -> dict[str, float]:
    """Success as the model samples: ``episodes`` independent episodes (each its own start,
    drawn from ``seed``) played by ``policy`` at ``temperature``, every reply given to the env
    as written (a non-canonical reply counts as what the env's parser makes of it: an action or
    an invalid turn), on a generator of its own (the training's random state is untouched).

    Returns:
        ``sampled_success`` (fraction of the episodes that succeeded), its 95 % Clopper-Pearson
        interval ``sampled_success_low`` / ``_high``, ``sampled_episodes`` and
        ``sampled_invalid_fraction`` (invalid turns over all turns).
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(int(seed))
    starts = rng.integers(2**31 - 1, size=episodes)
    played = play_groups(policy, factory, starts, 1, generator, max_reply_tokens, temperature)
    wins = sum(p.success for p in played)
    low, high = binomial_interval(wins, episodes)
    turns = [t for p in played for t in p.turns]
    return {
        "sampled_success": wins / episodes,
        "sampled_success_low": low,
        "sampled_success_high": high,
        "sampled_episodes": float(episodes),
        "sampled_invalid_fraction": float(np.mean([not t.valid for t in turns])),
    }


# ----------------------------------------------------------------------- warm start
WARM_START_TARGETS = ("every_reply", "canonical_mass")
"""What the warm start fits (:func:`warm_start`)."""


def canonical_contexts(
    policy: LMPolicy, factory: EnvFactory, episodes: int, rng: np.random.Generator
) -> list[list[int]]:
    """The contexts of ``episodes`` episodes played with uniformly random canonical replies."""
    contexts = []
    env = factory()
    for _ in range(episodes):
        env.reset(seed=int(rng.integers(2**31 - 1)))
        done = False
        while not done:
            contexts.append(policy.prompt(env.messages))
            action = int(rng.integers(env.view.num_actions))
            _, _, terminated, truncated, _ = env.step(env.action_text(action))
            done = terminated or truncated
    return contexts


def warm_start(
    policy: LMPolicy,
    factory: EnvFactory,
    steps: int,
    seed: int,
    episodes: int = 32,
    batch_size: int = 128,
    learning_rate: float = 3e-3,
    target: str = "every_reply",
) -> list[float]:
    """Supervised warm start on the canonical replies, in every context of ``episodes`` random
    episodes; returns the loss of each of ``steps`` Adam steps. ``target``:

    - ``"every_reply"``: each context with each canonical reply, equally weighted (cross-entropy
      on the reply tokens; ``batch_size`` pairs per step). The model learns the format and the
      uniform policy over actions in every context: it is taught that the context does not
      matter to which reply.
    - ``"canonical_mass"``: ``-log sum_a p(reply_a | context)``, the log of the model's total
      probability of writing some canonical reply (``batch_size / num_actions`` contexts per
      step). The format only: no preference among the replies is taught, so none of the
      context's words is taught to be irrelevant (the ratios of the replies' probabilities get
      no gradient towards each other).
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if target not in WARM_START_TARGETS:
        raise ValueError(f"target must be one of {WARM_START_TARGETS}, got {target!r}")
    rng = np.random.default_rng(seed)
    env = factory()
    replies = [policy.reply_tokens(env.action_text(a)) for a in range(env.view.num_actions)]
    if target == "canonical_mass":
        contexts = canonical_contexts(policy, factory, episodes, rng)
        return _fit_canonical_mass(policy, contexts, replies, steps, rng, batch_size, learning_rate)
    data = [
        (c + r, len(r)) for c in canonical_contexts(policy, factory, episodes, rng) for r in replies
    ]
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=learning_rate)
    losses = []
    for _ in range(steps):
        pick = rng.choice(len(data), size=min(batch_size, len(data)), replace=False)
        seqs = [data[i][0] for i in pick]
        logp, _ = policy.token_log_probs(seqs)
        width = logp.shape[1]
        lengths = torch.as_tensor([data[i][1] for i in pick])
        keep = torch.arange(width)[None, :] >= width - lengths[:, None]
        loss = -(logp * keep).sum() / keep.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


def _fit_canonical_mass(
    policy: LMPolicy,
    contexts: list[list[int]],
    replies: list[list[int]],
    steps: int,
    rng: np.random.Generator,
    batch_size: int,
    learning_rate: float,
) -> list[float]:
    """Adam steps on ``-log sum_a p(reply_a | context)`` over random batches of ``contexts``."""
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=learning_rate)
    per_step = max(1, min(batch_size // len(replies), len(contexts)))
    losses = []
    for _ in range(steps):
        pick = rng.choice(len(contexts), size=per_step, replace=False)
        seqs = [contexts[i] + r for i in pick for r in replies]
        logp, _ = policy.token_log_probs(seqs)
        width = logp.shape[1]
        lengths = torch.as_tensor([len(r) for _ in pick for r in replies])
        keep = torch.arange(width)[None, :] >= width - lengths[:, None]
        reply_logp = (logp * keep).sum(1).view(per_step, len(replies))
        loss = -torch.logsumexp(reply_logp, dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


__all__ = [
    "WARM_START_TARGETS",
    "EnvFactory",
    "PlayedEpisode",
    "Turn",
    "binomial_interval",
    "canonical_contexts",
    "mdp_batch",
    "pad_left",
    "play_groups",
    "sampled_success",
    "warm_start",
]
