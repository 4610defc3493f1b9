"""The leak probes of the contract suite, for every registered id with a layout seed (the
package's, the team adapters and those of outside code: ``tests/conftest.py`` registers
``tests/contributed/`` first), in its small configuration, and for the extra configurations of
:data:`tests.leak_probes.EXTRA`. What the probes do is stated in :mod:`tests.leak_probes`.

An id's dynamics declare whether the observation hides every outcome until the end
(``Dynamics.hides_outcome``, default ``True``). Where they do, both probes must find nothing:
(a) for the same seeds and actions the observations before the end, their text, the masks,
the rewards before the last step and the episode's length are the same under 8 layouts; (b) a
decision tree reading the observations predicts success on 8 unseen layouts no better (Brier
score, within 4 standard errors + 0.002) than one reading what the actions alone imply. Where
they declare ``False`` (``DilutedDoors-v0``, ``RoutineGrid-v0``, ``RoutineGridSoft-v0``,
``CodeFix-v0``'s words, the team v0s, ``DilutedDoors-v1``'s ``"progress"``), the probes must
find the leak: the declaration says what the env does.

Nothing here can flake: every episode, layout and classifier is seeded; where observations are
the same in every layout the two classifiers see equal features and their gain is exactly 0;
the leaks found are 1.8 to 2.8 margins above it (``python -m tests.leak_probes`` prints them).
An id without a ``layout_seed`` has no layout to hide and is left out (``KeyCorridor-v0``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from routine_envs import registration
from tests import leak_probes
from tests.test_contract import case_id
from tests.utils import has_pettingzoo

CASES = [*leak_probes.probe_cases(), *leak_probes.EXTRA]


def test_every_registered_id_with_a_layout_is_probed():
    """The probes read the registry: every id with a ``layout_seed`` is a case (a new id, or one
    of outside code, is probed with no edit here); the others have no layout to hide."""
    probed = {env_id for env_id, _ in CASES}
    for row in registration.entries():
        assert (row.id in probed) == ("layout_seed" in row.kwargs), row.id
    assert {"RoutineGrid-v1", "TeamDilutedDoors-v1", "TeamRoutineGrid-v1", "Button-v0"} <= probed


def skip_without_pettingzoo(env_id: str) -> None:
    if env_id.startswith("Team") and not has_pettingzoo():
        pytest.skip("the team adapters need the multiagent extra (pettingzoo)")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_observations_are_the_same_under_every_layout(case):
    """Probe (a): identical observations, texts, masks, rewards and lengths under 8 layouts
    where the env hides outcomes; a difference where it declares that it does not."""
    env_id, config = case
    skip_without_pettingzoo(env_id)
    counts = leak_probes.layout_differences(env_id, config)
    assert counts["compared"] > 100, counts
    if leak_probes.hides_outcome(env_id, config):
        differences = {k: v for k, v in counts.items() if k != "compared" and v}
        assert not differences, f"{env_id} {config}: differs across layouts: {counts}"
    else:
        assert counts["obs"] + counts["text"] > 0, f"{env_id}: declared leaky, found none"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_classifier_cannot_read_success_from_the_observations(case):
    """Probe (b): on unseen layouts a decision tree on the observations predicts success no
    better than on what the actions alone imply, where the env hides outcomes; better by more
    than the margin where it declares that it does not (unless its leak is in the text view
    alone, which probe (a) finds: CodeFix-v0's words)."""
    env_id, config = case
    skip_without_pettingzoo(env_id)
    result = leak_probes.learned_probe(env_id, config)
    assert 0.0 < result.success_rate < 1.0, result  # both outcomes occur: the probe can learn
    if leak_probes.hides_outcome(env_id, config):
        assert result.gain <= result.margin, f"{env_id} {config}: the observations leak: {result}"
    elif leak_probes.layout_differences(env_id, config)["obs"] == 0:
        assert result.gain == 0.0, result  # the leak is in the words only
    else:
        assert result.gain > result.margin, f"{env_id}: declared leaky, not found: {result}"


def test_the_learned_probe_finds_a_leak_an_env_does_not_declare(monkeypatch):
    """The probes read the declaration; they do not trust it: RoutineGrid-v0 claiming to hide
    its outcomes fails both (its heading after a junction shows whether it was right)."""
    from routine_envs.envs.routine_grid import GridDynamics

    monkeypatch.setattr(GridDynamics, "hides_outcome", True)
    config = {"num_junctions": 2, "corridor_length": 2}
    assert leak_probes.hides_outcome("RoutineGrid-v0", config)
    counts = leak_probes.layout_differences("RoutineGrid-v0", config)
    assert counts["obs"] > 0 and counts["length"] > 0
    result = leak_probes.learned_probe("RoutineGrid-v0", config)
    assert result.gain > result.margin
    assert result.accuracy > result.baseline_accuracy + 0.1  # 1.0 against 0.83 (seeded)


def test_the_probe_leaves_out_only_the_states_an_env_declares_revealing():
    """CodeFix's test report shows whether the patch works (by design): the probes leave those
    states out, and only those: replayed in another layout, the episodes differ at a reveal
    state or at the end, never elsewhere, and some do differ (the exclusion is needed)."""
    config = {"num_modules": 2, "num_patches": 3, "routine_length": 3}
    first = gym.make("CodeFix-v1", **config, layout_seed=0)
    other = gym.make("CodeFix-v1", **config, layout_seed=1)
    assert first.unwrapped.dynamics.patch_order != other.unwrapped.dynamics.patch_order
    found = 0
    for k in range(40):
        ep = leak_probes.play(first, k, rng=np.random.default_rng(k))
        replay = leak_probes.play(other, k, actions=ep.actions)
        assert len(replay.obs) == len(ep.obs) and not ep.reveals[0]
        for t in range(len(ep.obs)):
            if not leak_probes.same_observation(ep.obs[t], replay.obs[t]):
                found += 1
                assert ep.reveals[t] or t == len(ep.obs) - 1, (k, t)
    assert found > 0
