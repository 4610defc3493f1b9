"""A scripted text agent plays every environment through two trainer adapters, in groups of
identical starts, and the suite's estimators turn the episodes into turn-level advantages.

For each registered id (and the team ids when PettingZoo is installed) the agent plays
``num_groups`` groups of ``group_size`` episodes through GEM's env interface
(:class:`~routine_envs.adapters.gem.RoutineGemEnv`, groups by ``get_initial_state`` /
``reset_to_initial_state``) and through verl-agent's manager
(:class:`~routine_envs.adapters.verl_agent.RoutineEnvironmentManager`, groups by ``group_n``).
The agent reads only the text: it picks one of the calls the text lists as valid (CodeFix), else
a random action text, and with probability ``p_invalid`` writes something that is no action.
The episodes become an :class:`~routine_envs.episodes.EpisodeBatch` straight from the turn
``info`` (the annotations survive the adapters: ``critical``, ``state_id``, the text ``anchor``)
and ``trajectory_mc``, ``routine_masked`` and ``gigpo`` (grouping by the text anchor) give
every turn its advantage.

    python -m examples.text_agents
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from routine_envs import annotations as keys
from routine_envs.adapters.gem import RoutineGemEnv
from routine_envs.adapters.verl_agent import RoutineEnvironmentManager
from routine_envs.credit import build_estimator
from routine_envs.episodes import Episode, EpisodeBatch
from routine_envs.registration import ENVIRONMENTS, TEAM_ADAPTERS

#: small configurations, so that the example runs in seconds.
SMALL: dict[str, dict[str, Any]] = {
    "DilutedDoors-v0": {"routine_length": 2},
    "DilutedDoors-v1": {"routine_length": 2},
    "RoutineGrid-v0": {"corridor_length": 2},
    "RoutineGridSoft-v0": {"corridor_length": 2},
    "CodeFix-v0": {"routine_length": 4, "max_steps": 30},
    "CodeFix-v1": {"routine_length": 4, "max_steps": 30},
    "TeamDilutedDoors-v0": {"routine_length": 1, "num_floors": 2},
    "TeamRoutineGrid-v0": {"corridor_length": 2},
}
ESTIMATORS = ("trajectory_mc", "routine_masked", "gigpo")
_VALID_LINE = re.compile(r"^valid: (.*)$", re.MULTILINE)


def scripted_reply(
    text: str, actions: list[str], rng: np.random.Generator, p_invalid: float
) -> str:
    """A reply chosen from the text alone: sometimes no action at all, else one of the calls
    the text lists as valid, else any action."""
    if rng.random() < p_invalid:
        return ["I am not sure what to do.", "", '{"name": "fly"}'][int(rng.integers(3))]
    listed = _VALID_LINE.findall(text)
    choices = listed[-1].split(" | ") if listed else actions
    return f"Action: {choices[int(rng.integers(len(choices)))]}"


def play_gem(
    env_id: str, num_groups: int, group_size: int, seed: int, p_invalid: float, **kwargs: Any
) -> list[Episode]:
    """Episodes through the GEM adapter; each group restarts one initial state."""
    rng = np.random.default_rng(seed)
    episodes = []
    for group in range(num_groups):
        first = RoutineGemEnv(env_id, **kwargs)
        first.reset(seed=seed * 1000 + group)
        start = first.get_initial_state()
        for member in range(group_size):
            env = first if member == 0 else RoutineGemEnv(env_id, **kwargs)
            text, info = env.reset_to_initial_state(start)
            actions = env.text_env.view.action_texts()
            episode, done = Episode(group=group), False
            while not done:
                reply = scripted_reply(text, actions, rng, p_invalid)
                episode.infos.append(info)
                text, reward, terminated, truncated, info = env.step(reply)
                episode.actions.append(info[keys.PARSED_ACTION])
                episode.rewards.append(reward)
                done = terminated or truncated
                episode.truncated = truncated and not terminated
            episode.values = None
            episodes.append(episode)
            _check_episode_end(episode, info)
    return episodes


def play_verl_agent(
    env_id: str, num_groups: int, group_size: int, seed: int, p_invalid: float, **kwargs: Any
) -> list[Episode]:
    """Episodes through the verl-agent manager (``group_n`` identical starts per group)."""
    rng = np.random.default_rng(seed)
    manager = RoutineEnvironmentManager(env_id, num_groups, group_size, seed=seed, **kwargs)
    obs, infos = manager.reset()
    n = len(manager.envs)
    episodes = [Episode(group=i // group_size) for i in range(n)]
    actions = [env.view.action_texts() for env in manager.envs]
    last = list(infos)
    while not manager.done.all():
        live = ~manager.done
        replies = [scripted_reply(obs["text"][i], actions[i], rng, p_invalid) for i in range(n)]
        obs, rewards, dones, infos = manager.step(replies)
        for i in np.flatnonzero(live):
            episodes[i].infos.append(last[i])
            episodes[i].actions.append(infos[i][keys.PARSED_ACTION])
            episodes[i].rewards.append(float(rewards[i]))
            if dones[i]:
                _check_episode_end(episodes[i], infos[i])
        last = infos
    return episodes


def _check_episode_end(episode: Episode, info: dict[str, Any]) -> None:
    """The annotations survived the adapter: the recorded turns give the episode's counts."""
    critical = sum(bool(i[keys.CRITICAL]) for i in episode.infos)
    assert info[keys.EPISODE_LENGTH] == len(episode.rewards)
    assert info[keys.NUM_CRITICAL] == critical
    invalid = sum(a < 0 for a in episode.actions)
    assert info[keys.NUM_INVALID_TURNS] == invalid


@dataclass(frozen=True)
class Summary:
    """One row of the example's table."""

    env_id: str
    adapter: str
    episodes: int
    turns: int
    rho: float
    invalid_share: float
    mean_abs_routine: dict[str, float]


def summarize(env_id: str, adapter: str, batch: EpisodeBatch) -> tuple[Summary, dict]:
    """Turn-level advantages of every estimator, and the mean |A| on routine turns."""
    advantages = {name: build_estimator(name)(batch).advantages for name in ESTIMATORS}
    routine = ~batch.critical
    mean_abs = {
        name: float(np.abs(adv[routine]).mean()) if routine.any() else 0.0
        for name, adv in advantages.items()
    }
    summary = Summary(
        env_id=env_id,
        adapter=adapter,
        episodes=batch.num_episodes,
        turns=batch.num_steps,
        rho=float(batch.critical.mean()),
        invalid_share=float((batch.actions < 0).mean()),
        mean_abs_routine=mean_abs,
    )
    return summary, advantages


def env_ids() -> list[str]:
    """Every registered id, and the team ids when PettingZoo is installed."""
    ids = [row.id for row in ENVIRONMENTS]
    try:
        import pettingzoo  # noqa: F401
    except ImportError:
        return ids
    return ids + [row.id for row in TEAM_ADAPTERS]


def main(
    num_groups: int = 4, group_size: int = 4, p_invalid: float = 0.1, seed: int = 0
) -> list[tuple[Summary, EpisodeBatch, dict]]:
    """Play every id through both adapters; print and return the summaries, batches and
    advantages."""
    results = []
    for env_id in env_ids():
        kwargs = SMALL.get(env_id, {})
        for adapter, play in (("gem", play_gem), ("verl-agent", play_verl_agent)):
            episodes = play(env_id, num_groups, group_size, seed, p_invalid, **kwargs)
            batch = EpisodeBatch.from_episodes(episodes)
            summary, advantages = summarize(env_id, adapter, batch)
            results.append((summary, batch, advantages))
    print(f"{'env':22} {'adapter':10} {'turns':>6} {'rho':>6} {'invalid':>8}  mean |A| on routine")
    for summary, _, _ in results:
        abs_adv = "  ".join(f"{k} {v:.3f}" for k, v in summary.mean_abs_routine.items())
        print(
            f"{summary.env_id:22} {summary.adapter:10} {summary.turns:6d} {summary.rho:6.3f} "
            f"{summary.invalid_share:8.3f}  {abs_adv}"
        )
    return results


if __name__ == "__main__":
    main()
