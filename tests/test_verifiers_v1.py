"""The verifiers v1 adapter against the real package (``verifiers>=0.4``; CI runs this file in
a virtual environment of its own, ``make test-verifiers-v1``): the taskset is loaded by its id
(``routine-envs-verifiers``, as ``vf-eval`` loads one) and evaluated by verifiers' own
``run_eval`` against a scripted OpenAI-compatible model on 127.0.0.1, inside a loopback-only
network namespace (:mod:`tests.verifiers_scenario`). Every trace is the episode its replies
play locally: the same observations, reward, annotations and metrics. Skipped, saying why,
where verifiers is not installed or no namespace can be made (failed under
``ROUTINE_ENVS_REQUIRE=verifiers-v1``: :mod:`tests.real_packages`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.real_packages import namespace_or_skip, need

need("verifiers.v1", "verifiers-v1", module_level=True)

from baselines.lib import loopback  # noqa: E402 (after the skip)
from routine_envs.adapters.annotations import AnnotationLog  # noqa: E402 (after the skip)
from routine_envs.text import make_text_env  # noqa: E402 (after the skip)
from tests import children, verifiers_scenario  # noqa: E402 (after the skip)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    namespace_or_skip("verifiers-v1")
    home = tmp_path_factory.mktemp("home")  # verifiers' working folders stay in the test's
    out = tmp_path_factory.mktemp("out")
    argv = [sys.executable, "-m", "tests.verifiers_scenario", str(out)]
    outcome = loopback.run(
        argv, cwd=ROOT, env={**os.environ, "HOME": str(home)}, timeout=children.patience(400)
    )
    said = outcome.describe()
    assert outcome.returncode == 0, said
    assert outcome.interfaces == ["lo"] and outcome.peers, said
    assert outcome.outside() == [], f"connections outside 127.0.0.0/8: {outcome.outside()}"
    line = next(x for x in outcome.stdout.splitlines() if x.startswith("SCENARIO "))
    return json.loads(line.removeprefix("SCENARIO "))


def replay(env_id: str, trace: dict) -> dict:
    """The trace's replies played on a local text env: observations, return, annotations."""
    kwargs, knobs = verifiers_scenario.CASES[env_id]
    env = make_text_env(env_id, max_turns=knobs.get("max_turns"), **kwargs)
    text, info = env.reset(seed=trace["seed"])
    log, total, users = AnnotationLog(), 0.0, [text]
    log.start(info)
    replies = [m["content"] for m in trace["messages"] if m["role"] == "assistant"]
    for reply in replies:
        text, reward, terminated, truncated, info = env.step(reply)
        total += reward
        log.record(info, terminated or truncated)
        if terminated or truncated:
            break
        users.append(text)
    return {"users": users, "return": total, "annotations": log.as_dict(), "replies": replies,
            "system": env.system_prompt}  # fmt: skip


@pytest.mark.parametrize("env_id", list(verifiers_scenario.CASES))
def test_every_trace_is_the_episode_its_replies_play(seen, env_id):
    traces = seen[env_id]
    _, knobs = verifiers_scenario.CASES[env_id]
    first = knobs.get("first_seed", 0)
    assert [t["seed"] for t in traces] == list(range(first, first + knobs["num_tasks"]))
    for trace in traces:
        assert trace["ok"] and not trace["errors"], trace["errors"]
        local = replay(env_id, trace)
        messages = trace["messages"]
        assert messages[0] == {"role": "system", "content": local["system"]}
        assert [m["content"] for m in messages if m["role"] == "user"] == local["users"]
        # the scripted model's replies, malformed ones included, were read as they were sent
        assert local["replies"] == [
            verifiers_scenario.scripted_reply(env_id, i) for i in range(len(local["replies"]))
        ]
        annotations = local["annotations"]
        assert trace["info"]["routine_annotations"] == annotations
        assert trace["reward"] == pytest.approx(local["return"])
        episode, turns = annotations["episode"], annotations["turns"]
        metrics = trace["metrics"]
        assert metrics["success"] == float(episode["success"])
        assert metrics["decision_density"] == pytest.approx(episode["decision_density"])
        assert metrics["num_critical"] == episode["num_critical"]
        assert metrics["num_invalid_turns"] == episode["num_invalid_turns"] >= 1
        assert metrics["turns"] == len(turns) == episode["episode_length"]
        assert metrics["critical_turn_fraction"] == pytest.approx(
            sum(t["critical"] for t in turns) / len(turns)
        )
        assert trace["stop"] == "user_closed"  # the env ended it, not a limit


def test_a_truncated_episode_ends_at_the_tasksets_max_turns(seen):
    _, knobs = verifiers_scenario.CASES["CodeFix-v1"]
    for trace in seen["CodeFix-v1"]:
        assert trace["metrics"]["turns"] <= knobs["max_turns"]
