"""TRL's GRPOTrainer through OpenEnv, end to end (``examples/trl_openenv.py``; CI runs this file
in a virtual environment of its own, ``make test-trl-openenv``): two GRPO steps of the recipe
inside a loopback-only network namespace (:mod:`baselines.lib.loopback`), the recipe starting
``python -m routine_envs.adapters.openenv`` on 127.0.0.1 and TRL playing it over OpenEnv's
WebSocket client. Every rollout, replayed locally from its served seed and the replies sent,
earns the return the server gave; the reward TRL trained on is that return; a GRPO group shares
its start. Skipped, saying why, where ``trl`` or ``openenv`` is not installed
(``pip install -e ".[trl-openenv]"``) or no namespace can be made."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from tests.real_packages import namespace_or_skip, need

need("trl", "trl-openenv", module_level=True)
need("openenv", "trl-openenv", module_level=True)

from baselines.lib import loopback  # noqa: E402 (after the skip)
from routine_envs.adapters.openenv import group_seed  # noqa: E402 (after the skip)
from routine_envs.text import make_text_env  # noqa: E402 (after the skip)
from tests import children  # noqa: E402 (after the skip)

ROOT = Path(__file__).resolve().parents[1]
ENV_KWARGS = {"num_floors": 1, "routine_length": 1}
GENERATIONS = 4


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict], dict]:
    """Two GRPO steps served in a namespace: the curve, the rollouts, the summary."""
    namespace_or_skip("trl-openenv")
    out = tmp_path_factory.mktemp("trl_openenv")
    argv = [sys.executable, "-m", "examples.trl_openenv", "--steps", "2"]
    argv += ["--warm-start-steps", "150", "--num-generations", str(GENERATIONS)]
    argv += ["--env-kwargs", json.dumps(ENV_KWARGS), "--out", str(out)]
    outcome = loopback.run(argv, cwd=ROOT, timeout=children.patience(900))
    said = outcome.describe()
    assert outcome.returncode == 0, said
    assert outcome.interfaces == ["lo"] and outcome.peers, said
    assert outcome.outside() == [], f"connections outside 127.0.0.0/8: {outcome.outside()}"
    with (out / "curve.csv").open() as f:
        curve = list(csv.DictReader(f))
    steps = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    return curve, steps, json.loads((out / "summary.json").read_text())


def test_every_rollout_earned_the_return_of_its_replies_played_locally(trained) -> None:
    _, steps, _ = trained
    rollouts = [r for step in steps for r in step["rollouts"]]
    assert len(steps) == 2 and len(rollouts) == 2 * GENERATIONS
    assert sum(len(r["replies"]) for r in rollouts) > 0, "the model made no tool call"
    assert any(r["done"] for r in rollouts), "no served episode finished"
    for r in rollouts:
        env = make_text_env("DilutedDoors-v1", **ENV_KWARGS)
        env.reset(seed=r["seed"])
        total, done, info = 0.0, False, {}
        for reply in r["replies"]:
            assert not done, "a reply was sent after the episode ended"
            _, reward, terminated, truncated, info = env.step(reply)
            total, done = total + reward, terminated or truncated
        assert (total, done) == (r["return"], r["done"])
        assert r["success"] == bool(done and info.get("success", False))


def test_the_reward_trl_trained_on_is_the_served_return(trained) -> None:
    curve, steps, _ = trained
    assert [int(row["step"]) for row in curve] == [1, 2]
    for row, step in zip(curve, steps, strict=True):
        returns = [r["return"] for r in step["rollouts"]]
        assert float(row["reward"]) == pytest.approx(sum(returns) / len(returns), abs=1e-6)


def test_a_grpo_group_shares_its_start_and_groups_differ(trained) -> None:
    _, steps, summary = trained
    groups = []
    for step in steps:
        ids = {r["group_id"] for r in step["rollouts"]}
        assert len(ids) == 1, f"one group per step (batch = num_generations): {ids}"
        (group,) = ids
        assert {r["seed"] for r in step["rollouts"]} == {group_seed(group)}
        groups.append(group)
    assert len(set(groups)) == len(groups) and all(g.startswith("s0-") for g in groups)
    assert summary["url"].startswith("http://127.0.0.1:")
    assert summary["server_cpu_seconds"] > 0
