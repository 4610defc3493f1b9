"""The language-model loop's learned turn-level value model (baselines.lib.lm.critic, issue 39):
GAE over turns on its values computed by hand, used before it is trained on a batch, trained
towards the estimator's returns, built by the trainer exactly when its estimator reads values."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from baselines.lib.lm import GRPOConfig, GRPOTrainer, build_policy, warm_start  # noqa: E402
from baselines.lib.lm.critic import CriticConfig, TurnCritic  # noqa: E402
from baselines.lib.lm.grpo import turn_advantages  # noqa: E402
from baselines.lib.lm.rollout import play_groups  # noqa: E402
from routine_envs import credit  # noqa: E402
from routine_envs.text import make_text_env  # noqa: E402

torch.set_num_threads(1)


def doors(routine_length: int = 2) -> object:
    return make_text_env(
        "DilutedDoors-v1", max_turns=8, num_floors=1, routine_length=routine_length
    )


@pytest.fixture(scope="module")
def played():
    policy = build_policy(doors(), dim=32, seed=0)
    warm_start(policy, doors, 100, seed=0, episodes=8)
    episodes = play_groups(policy, doors, [5, 6], 4, torch.Generator().manual_seed(2), 6)
    return policy, episodes


def constant_critic(policy, value: float) -> TurnCritic:
    critic = TurnCritic(policy.model.config, policy.tokenizer.pad_id, seed=0)
    with torch.no_grad():
        critic.head.bias.fill_(value)  # the head's weight starts at 0: V = value everywhere
    return critic


def test_gae_over_turns_on_the_critics_values_by_hand(played):
    """V = c on every turn, rewards 0 but the last turn's R, gamma 1, lambda 0.95: the k-th
    valid turn from the end gets 0.95^k (R - c); the critic was used before it was trained."""
    policy, episodes = played
    c = 0.25
    critic = constant_critic(policy, c)
    estimator = credit.build_estimator("gae", credit.EstimatorContext(gamma=1.0, gae_lambda=0.95))
    adv = turn_advantages(estimator, episodes, invalid_advantage=-0.5, critic=critic)
    checked = 0
    for p, turn_adv in zip(episodes, adv, strict=True):
        valid = [a for t, a in zip(p.turns, turn_adv, strict=True) if t.valid]
        if not valid or any(not t.valid for t in p.turns):
            continue  # an invalid turn folds its reward into the return: checked elsewhere
        assert sum(t.reward for t in p.turns[:-1]) == 0
        n = len(valid)
        expected = [0.95 ** (n - 1 - k) * (p.episode_return - c) for k in range(n)]
        np.testing.assert_allclose(valid, expected, rtol=1e-5, atol=1e-6)
        checked += 1
    assert checked >= 4
    prompts = [t.prompt for p in episodes for t in p.turns if t.valid]
    assert not np.allclose(critic.values(prompts), c)  # trained after it was used


def test_the_critic_learns_its_targets():
    policy = build_policy(doors(), dim=32, seed=0)
    critic = TurnCritic(
        policy.model.config, policy.tokenizer.pad_id, CriticConfig(learning_rate=3e-3), seed=0
    )
    prompts = [
        policy.observation_prompt(f"Floor 1 of 1: you stand before {k} doors") for k in (2, 3)
    ]
    targets = np.array([0.2, 0.9])
    first = critic.fit(prompts, targets)
    for _ in range(60):
        last = critic.fit(prompts, targets)
    assert last < first / 50
    np.testing.assert_allclose(critic.values(prompts), targets, atol=0.05)
    with pytest.raises(ValueError, match="2 prompts but 1 returns"):
        critic.fit(prompts, targets[:1])
    with pytest.raises(ValueError, match="epochs"):
        CriticConfig(epochs=0)


def test_the_trainer_builds_a_critic_exactly_when_its_estimator_reads_values():
    policy = build_policy(doors(), dim=32, seed=0)
    config = GRPOConfig(groups_per_step=2, group_size=4)
    trainer = GRPOTrainer(policy, doors, "gae", config, seed=0)
    assert isinstance(trainer.critic, TurnCritic)
    row = trainer.step()
    assert np.isfinite(row["loss"])
    assert GRPOTrainer(policy, doors, "trajectory_mc", config, seed=0).critic is None
    critic = TurnCritic(policy.model.config, policy.tokenizer.pad_id)
    with pytest.raises(ValueError, match="does not read values"):
        GRPOTrainer(policy, doors, "trajectory_mc", config, seed=0, critic=critic)
