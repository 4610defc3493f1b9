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
) -> list[float]:
    """Supervised warm start on canonical replies: every context of ``episodes`` random
    episodes with each canonical reply of the env, equally weighted, so the model learns the
    reply format and ends near the uniform policy over actions (chance), not a good one.
    Cross-entropy on the reply tokens only; returns the loss of each of ``steps`` Adam steps."""
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    rng = np.random.default_rng(seed)
    env = factory()
    replies = [policy.reply_tokens(env.action_text(a)) for a in range(env.view.num_actions)]
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


__all__ = [
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
