"""The leak probes of the contract suite: does an observation show, before the episode ends,
what the layout hides (which choice is right, whether a choice was right)?

Two probes, for an id whose configuration has a ``layout_seed`` (the layout is what a policy
must learn; an id without one has nothing a layout could hide):

- :func:`layout_differences` (probe a): the same reset seeds and the same actions under several
  layouts; every observation before the end (vector or image, and its text view), every action
  mask, every reward before the last and the episode's length must be the same in every
  layout, except at the states the dynamics declare revealing by design
  (``Dynamics.reveals_outcome``, e.g. CodeFix's test report).
- :func:`learned_probe` (probe b): a classifier trained on the observations of one set of
  layouts to predict whether the episode will succeed, scored on the episodes of other
  layouts, against the same classifier fed what the actions alone imply (see its docstring).

``python -m tests.leak_probes [out.csv]`` measures both probes on every registered id (and on
:data:`EXTRA`'s configurations) and writes
the table (the numbers quoted in docs/envs and the issue notes).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from routine_envs import registration
from routine_envs.text.views import text_kwargs

#: configurations probed beside each id's small one (the contract suite and :func:`main`)
EXTRA: list[tuple[str, dict]] = [
    ("DilutedDoors-v1", {"num_floors": 2, "routine_length": (0, 2), "observation": "progress"}),
    ("DilutedDoors-v1", {"num_floors": 2, "routine_length": (0, 2), "observation": "position"}),
    ("RoutineGrid-v1", {"num_junctions": 2, "corridor_length": 2, "obs_mode": "image"}),
    ("RoutineGrid-v1", {"num_junctions": 3, "branching": 2, "corridor_length": (0, 3)}),
    ("RoutineGrid-v1", {"num_junctions": 2, "corridor_length": 1, "reward": "fraction"}),
    ("RoutineGrid-v0", {"num_junctions": 2, "corridor_length": 2, "obs_mode": "image"}),
    (
        "CodeFix-v1",
        {"num_modules": 2, "num_patches": 2, "routine_length": 3, "max_attempts": 2,
         "step_cost": 0.01},
    ),
    # the configuration proposed for the next protocol (docs/reproducing.md, section 6)
    ("CodeFix-v1", {"signal_noise": 0.0, "routine_length": 4}),
]  # fmt: skip
#: the layout the baseline of the learned probe replays every episode in (in neither set).
BLIND_LAYOUT = 1_000_003


@dataclass
class Episode:
    """One episode: per step ``t`` (``t = 0`` the reset), the observation, the text (when
    asked), the action mask, whether the state reveals an outcome by design, and the reward of
    the step into it; the actions and whether the episode succeeded."""

    obs: list[Any]
    texts: list[str]
    masks: list[Any]
    reveals: list[bool]
    rewards: list[float]
    actions: list[int]
    success: bool


def has_layout(env_id: str) -> bool:
    """Whether the id's configuration has a ``layout_seed``."""
    return "layout_seed" in registration.entry(env_id).kwargs


def dynamics_of(env: gym.Env) -> tuple[Any, Callable[[], Any]]:
    """The dynamics that declare ``hides_outcome`` and ``reveals_outcome`` (a team adapter's are
    its team env's), and a function returning the current (joint) state."""
    unwrapped = env.unwrapped
    dynamics = getattr(unwrapped, "dynamics", None)
    if dynamics is not None:
        return dynamics, lambda: unwrapped.state
    team = unwrapped.team
    return team.dynamics, lambda: team.joint_state


def hides_outcome(env_id: str, config: dict[str, Any]) -> bool:
    """The dynamics' declaration for ``env_id`` made with ``config``."""
    return bool(dynamics_of(gym.make(env_id, **config))[0].hides_outcome)


def play(
    env: gym.Env,
    seed: int,
    actions: list[int] | None = None,
    rng: np.random.Generator | None = None,
    with_text: bool = False,
) -> Episode:
    """One episode from ``reset(seed=seed)``: the given ``actions`` (stopping early if the
    episode ends first) or, with ``rng``, uniform valid actions (masked where the env has
    masks)."""
    dynamics, state = dynamics_of(env)
    view = env.unwrapped.text_view() if with_text else None
    obs, _ = env.reset(seed=seed)
    n = int(env.action_space.n)
    ep = Episode([], [], [], [], [], [], False)

    def record(obs: Any, reward: float) -> None:
        mask = dynamics.action_mask(state()) if dynamics.has_action_masks else None
        ep.obs.append(obs)
        ep.texts.append(view.observation_text(obs) if view is not None else "")
        ep.masks.append(None if mask is None else np.asarray(mask).copy())
        ep.reveals.append(bool(dynamics.reveals_outcome(state())))
        ep.rewards.append(float(reward))

    record(obs, 0.0)
    t = 0
    while True:
        if actions is not None:
            if t >= len(actions):
                break
            action = actions[t]
        else:
            mask = ep.masks[-1]
            valid = np.arange(n) if mask is None or not mask.any() else np.flatnonzero(mask)
            action = int(rng.choice(valid))
        obs, reward, terminated, truncated, info = env.step(action)
        ep.actions.append(action)
        record(obs, reward)
        t += 1
        if terminated or truncated:
            ep.success = bool(info["success"])
            break
    return ep


def same_observation(a: Any, b: Any) -> bool:
    """Whether two observations (arrays, texts or masks; ``None`` for none) are equal."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if a is None or b is None:
        return a is b
    return np.array_equal(np.asarray(a), np.asarray(b))


def layout_differences(
    env_id: str,
    config: dict[str, Any],
    layouts: range = range(8),
    episodes: int = 30,
    seed: int = 0,
) -> dict[str, int]:
    """Probe (a): play ``episodes`` episodes (reset seeds ``seed + k``, uniform valid actions
    drawn in the first layout) and replay each, same seed and actions, in every other layout of
    ``layouts``; count the steps before the end at which something differs from the first
    layout: the observation, its text view (in the id's text configuration, e.g. CodeFix's
    ``obs_mode="text"``), the action mask, a reward before the last step, or the episode's
    length. A step whose state reveals an outcome by design (in either layout) is left out.

    Returns ``{"compared": steps compared, "obs": ..., "text": ..., "mask": ..., "reward":
    ..., "length": episodes whose length differs}`` (the counts of differences)."""
    counts = dict.fromkeys(("compared", "obs", "text", "mask", "reward", "length"), 0)
    spec_entry = gym.spec(env_id).entry_point
    for part, kwargs in (("obs", config), ("text", text_kwargs(spec_entry, dict(config)))):
        envs = [gym.make(env_id, **{**kwargs, "layout_seed": layout}) for layout in layouts]
        for k in range(episodes):
            rng = np.random.default_rng([seed, k])
            first = play(envs[0], seed + k, rng=rng, with_text=part == "text")
            for env in envs[1:]:
                other = play(env, seed + k, actions=first.actions, with_text=part == "text")
                if part == "obs":
                    counts["length"] += len(other.obs) != len(first.obs)
                steps = min(len(first.obs), len(other.obs)) - 1  # the last is the end
                for t in range(steps):
                    if first.reveals[t] or other.reveals[t]:
                        continue
                    if part == "text":
                        counts["text"] += first.texts[t] != other.texts[t]
                        continue
                    counts["compared"] += 1
                    counts["obs"] += not same_observation(first.obs[t], other.obs[t])
                    counts["mask"] += not same_observation(first.masks[t], other.masks[t])
                    counts["reward"] += t > 0 and first.rewards[t] != other.rewards[t]
    return counts


def _features(ep: Episode, horizon: int, n: int, size: int) -> np.ndarray:
    """One row per episode: every observation before the end (zeros where the state reveals an
    outcome by design, and after the end), then every action (one-hot; zeros after the end),
    for ``horizon`` steps."""
    obs = np.zeros((horizon, size))
    for t in range(len(ep.obs) - 1):  # the last observation is the end's
        if not ep.reveals[t]:
            obs[t] = np.asarray(ep.obs[t], np.float64).ravel()
    acts = np.zeros((horizon, n))
    for t, a in enumerate(ep.actions):
        acts[t, a] = 1.0
    return np.concatenate([obs.ravel(), acts.ravel()])


@dataclass(frozen=True)
class ProbeResult:
    """The learned probe's scores on the test layouts' episodes: Brier scores (mean squared
    error of the predicted success probability; lower is better) and accuracies."""

    brier: float  #: the classifier on the observations
    baseline_brier: float  #: the same classifier on what the actions alone imply
    actions_only_brier: float  #: on the step index and the actions alone (reported)
    constant_brier: float  #: predicting the training set's success rate everywhere
    accuracy: float
    baseline_accuracy: float
    gain: float  #: baseline_brier - brier (> 0: the observations tell more)
    standard_error: float  #: of ``gain``, over test episodes
    success_rate: float  #: of the test episodes
    test_episodes: int

    @property
    def margin(self) -> float:
        """What ``gain`` may reach without a leak: ``4 * standard_error + 0.002``."""
        return 4.0 * self.standard_error + 0.002


def learned_probe(
    env_id: str,
    config: dict[str, Any],
    train_layouts: range = range(8),
    test_layouts: range = range(8, 16),
    episodes: int = 60,
    seed: int = 0,
) -> ProbeResult:
    """Probe (b), the learned leak probe.

    Sample: for every layout of ``train_layouts`` and ``test_layouts`` (``layout_seed``
    values, disjoint), ``episodes`` episodes from ``reset(seed=seed + k)`` under uniform valid
    actions drawn from ``np.random.default_rng([seed, layout, k])``, each labelled with whether
    it succeeds. Features of an episode (:func:`_features`): every observation before the end
    (flattened; zeros where the dynamics declare the state revealing by design) and every
    action, step by step. Classifier: scikit-learn's ``DecisionTreeClassifier(max_depth=8,
    min_samples_leaf=10, random_state=0)`` (a tree finds conjunctions such as "the heading
    after a junction is east"), trained on the training layouts' episodes; its predicted
    success probabilities are scored on the test layouts' episodes by the Brier score (a
    proper score: it counts information that changes no majority vote).

    Baseline, "what the actions alone imply": the same classifier on the same samples with
    every observation replaced by the one the same reset seed and the same actions give in one
    fixed layout outside both sets (:data:`BLIND_LAYOUT`): a function of the actions and of the
    environment's own random draws (a corridor length, CodeFix's hidden bug), never of the
    episode's layout. A classifier can beat it only by reading the layout's effect on the
    observations. (Literally the actions alone, ``actions_only_brier``, is reported too: where
    the observation shows the environment's own draws, CodeFix's failing-test report, it is
    beaten without any leak.)

    The gain (baseline's Brier score minus the probe's) is a mean over the test episodes
    (independent), and its standard error is theirs; a leak is a gain above
    :attr:`ProbeResult.margin`. Where the observations are the same in every layout (probe a)
    the two feature sets are equal, so are the trees, and the gain is exactly 0.
    """
    from sklearn.tree import DecisionTreeClassifier

    layouts = [*train_layouts, *test_layouts]
    blind = gym.make(env_id, **{**config, "layout_seed": BLIND_LAYOUT})
    runs = []
    for layout in layouts:
        env = gym.make(env_id, **{**config, "layout_seed": layout})
        for k in range(episodes):
            ep = play(env, seed + k, rng=np.random.default_rng([seed, layout, k]))
            replay = play(blind, seed + k, actions=ep.actions)
            runs.append((layout, ep, replay))
    n = int(blind.action_space.n)
    horizon = max(len(ep.actions) for _, ep, _ in runs)
    size = int(np.asarray(runs[0][1].obs[0]).size)

    def blind_view(ep: Episode, replay: Episode) -> Episode:
        # the replay's observation at each step of the episode (its last one once it ended)
        last = len(replay.obs) - 1
        pick = [min(t, last) for t in range(len(ep.obs))]
        return Episode(
            [replay.obs[i] for i in pick], [], [], [replay.reveals[i] for i in pick],
            [], ep.actions, ep.success,
        )  # fmt: skip

    def table(which: str, chosen: set[int]) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for layout, ep, replay in runs:
            if layout in chosen:
                source = ep if which == "obs" else blind_view(ep, replay)
                x = _features(source, horizon, n, size)
                xs.append(x[horizon * size :] if which == "actions" else x)
                ys.append(float(ep.success))
        return np.array(xs), np.array(ys)

    squared, hits = {}, {}
    for which in ("obs", "blind", "actions"):
        x_train, y_train = table(which, set(train_layouts))
        x_test, y_test = table(which, set(test_layouts))
        if len(np.unique(y_train)) < 2:  # one outcome only: predict it
            p = np.full(len(y_test), y_train[0])
        else:
            tree = DecisionTreeClassifier(max_depth=8, min_samples_leaf=10, random_state=0)
            p = tree.fit(x_train, y_train > 0.5).predict_proba(x_test)[:, 1]
        squared[which] = (p - y_test) ** 2
        hits[which] = ((p >= 0.5) == (y_test > 0.5)).astype(np.float64)
    gains = squared["blind"] - squared["obs"]
    test_success = [ep.success for layout, ep, _ in runs if layout in set(test_layouts)]
    return ProbeResult(
        brier=float(squared["obs"].mean()),
        baseline_brier=float(squared["blind"].mean()),
        actions_only_brier=float(squared["actions"].mean()),
        constant_brier=float(np.mean((y_train.mean() - y_test) ** 2)),
        accuracy=float(hits["obs"].mean()),
        baseline_accuracy=float(hits["blind"].mean()),
        gain=float(np.mean(gains)),
        standard_error=float(np.std(gains, ddof=1) / np.sqrt(len(gains))),
        success_rate=float(np.mean(test_success)),
        test_episodes=len(gains),
    )


def probe_cases() -> list[tuple[str, dict[str, Any]]]:
    """Every registered id with a layout seed, in its small configuration (the registry's)."""
    return [
        (env_id, dict(registration.entry(env_id).small_kwargs))
        for env_id in (row.id for row in registration.entries())
        if has_layout(env_id)
    ]


def main(out: str | None = None) -> None:
    """Measure both probes on every registered id (and write them as CSV to ``out``)."""
    import csv

    rows = []
    for env_id, config in [*probe_cases(), *EXTRA]:
        diffs = layout_differences(env_id, config)
        probe = learned_probe(env_id, config)
        rows.append(
            {
                "env_id": env_id,
                "config": repr(config),
                "hides_outcome": hides_outcome(env_id, config),
                "steps_compared": diffs["compared"],
                "obs_differ": diffs["obs"],
                "text_differ": diffs["text"],
                "mask_differ": diffs["mask"],
                "reward_differ": diffs["reward"],
                "length_differ": diffs["length"],
                "probe_brier": round(probe.brier, 4),
                "baseline_brier": round(probe.baseline_brier, 4),
                "actions_only_brier": round(probe.actions_only_brier, 4),
                "constant_brier": round(probe.constant_brier, 4),
                "probe_accuracy": round(probe.accuracy, 4),
                "baseline_accuracy": round(probe.baseline_accuracy, 4),
                "gain": round(probe.gain, 5),
                "margin": round(probe.margin, 5),
                "success_rate": round(probe.success_rate, 4),
            }
        )
        print(rows[-1], flush=True)
    if out:
        with open(out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    from tests.utils import register_outside_envs

    register_outside_envs()
    main(sys.argv[1] if len(sys.argv) > 1 else None)
