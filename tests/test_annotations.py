"""The info-key module: helpers and the documentation of the keys."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from routine_envs import annotations as keys

ROOT = Path(__file__).resolve().parents[1]


def test_observation_anchor_is_stable_and_observation_only():
    obs = np.array([0.0, 1.0, 0.5], dtype=np.float32)
    assert keys.observation_anchor(obs) == keys.observation_anchor(obs.copy())
    assert keys.observation_anchor(obs) != keys.observation_anchor(obs.astype(np.float64))
    assert keys.observation_anchor(obs) != keys.observation_anchor(obs[::-1].copy())
    assert keys.observation_anchor("text") == keys.observation_anchor("text")
    assert 0 <= keys.observation_anchor(obs) < 2**63
    # the same in another process (no per-process hash seed)
    code = "import numpy as np; from routine_envs import annotations as k; " + (
        "print(k.observation_anchor(np.array([0.0, 1.0, 0.5], dtype=np.float32)))"
    )
    import sys

    from tests import children

    out = children.run([sys.executable, "-c", code], timeout=120, check=True)
    assert int(out.stdout) == keys.observation_anchor(obs), out.describe()


def test_decision_density_helper():
    assert keys.decision_density([True, False, False, False]) == 0.25
    with pytest.raises(ValueError, match="non-empty"):
        keys.decision_density([])


def test_check_step_info_rejects_broken_infos():
    good = {"critical": True, "state_id": 3, "anchor": 7, "turn_score": 0.5}
    keys.check_step_info(good, num_states=4)
    for info, match in [
        ({"state_id": 1, "anchor": 0, "turn_score": 0.0}, "critical"),
        ({**good, "critical": 1}, "bool"),
        ({**good, "state_id": 1.0}, "int"),
        ({**good, "state_id": 9}, "outside"),
        ({"critical": True, "state_id": 1, "turn_score": 0.0}, "anchor"),
        ({**good, "anchor": -1}, "anchor"),
        ({"critical": True, "state_id": 1, "anchor": 0}, "turn_score"),
        ({**good, "turn_score": 1}, "turn_score"),
        ({**good, "turn_score": float("nan")}, "turn_score"),
    ]:
        with pytest.raises(ValueError, match=match):
            keys.check_step_info(info, num_states=4)


def test_check_episode_end_info_rejects_inconsistent_density():
    good = {"success": True, "num_critical": 1, "episode_length": 4, "decision_density": 0.25}
    keys.check_episode_end_info(good)
    with pytest.raises(ValueError, match="decision_density"):
        keys.check_episode_end_info({**good, "decision_density": 0.5})
    with pytest.raises(ValueError, match="success"):
        keys.check_episode_end_info({k: v for k, v in good.items() if k != "success"})


def test_documented_info_keys_are_the_real_ones():
    """README's info-key table and the module docstring list exactly the keys the code uses."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Info keys", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
    assert documented == list(keys.ALL_KEYS + keys.OPTIONAL_KEYS)
    for key in keys.ALL_KEYS + keys.OPTIONAL_KEYS:
        assert f"``{key}``" in keys.__doc__
