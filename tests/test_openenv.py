"""The OpenEnv adapter against the real package (``openenv>=0.10``; CI runs this file in a
virtual environment of its own, ``.ci/run``): every id tried is served by ``python -m
routine_envs.adapters.openenv`` on 127.0.0.1 inside a loopback-only network namespace
(:mod:`baselines.lib.loopback`) and played by OpenEnv's own clients over WebSocket
(:mod:`tests.openenv_scenario`); the served episodes equal the same episodes played locally,
annotations included, and hostile input gets one error line. Skipped, saying why, where
``openenv`` is not installed (``pip install -e ".[openenv]"``) or no namespace can be made."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.real_packages import namespace_or_skip, need

need("openenv", "openenv", module_level=True)

from baselines.lib import loopback  # noqa: E402 (after the skip)
from routine_envs.adapters import openenv as adapter  # noqa: E402 (after the skip)
from routine_envs.text import make_text_env  # noqa: E402 (after the skip)
from tests import children, openenv_scenario  # noqa: E402 (after the skip)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def seen() -> dict:
    namespace_or_skip("openenv")
    argv = [sys.executable, "-m", "tests.openenv_scenario"]
    outcome = loopback.run(argv, cwd=ROOT, timeout=children.patience(300))
    said = outcome.describe()
    assert outcome.returncode == 0, said
    assert outcome.interfaces == ["lo"] and outcome.peers, said
    assert outcome.outside() == [], f"connections outside 127.0.0.0/8: {outcome.outside()}"
    line = next(x for x in outcome.stdout.splitlines() if x.startswith("SCENARIO "))
    return json.loads(line.removeprefix("SCENARIO "))["ids"]


def local_episode(env_id: str, replies: list[str], seed: int) -> list[tuple]:
    """The same episode on a local text env: (text, reward, done, info) per result."""
    flags = openenv_scenario.FLAGS.get(env_id, {})
    env = make_text_env(env_id, **flags, **openenv_scenario.IDS[env_id])
    text, info = env.reset(seed=seed)
    out = [(text, 0.0, False, info)]
    for reply in replies:
        text, reward, terminated, truncated, info = env.step(reply)
        out.append((text, reward, terminated or truncated, info))
        if terminated or truncated:
            break
    return out


@pytest.mark.parametrize("env_id", list(openenv_scenario.IDS))
def test_a_served_episode_is_the_local_one_with_its_annotations(seen, env_id):
    served = seen[env_id]["seeded"]
    local = local_episode(env_id, openenv_scenario.replies_for(env_id), seed=3)
    assert len(served) == len(local) and served[-1]["done"]
    for got, (text, reward, done, info) in zip(served, local, strict=True):
        assert (got["text"], got["reward"], got["done"]) == (text, reward, done)
        meta = got["metadata"]
        want = {"critical": bool(info["critical"]), "state_id": int(info["state_id"]),
                "anchor": int(info["anchor"]), "turn_score": float(info["turn_score"])}  # fmt: skip
        assert meta["annotations"] == want
        # JSON types as promised (True == 1 and 3 == 3.0 would pass the equality above)
        assert [type(meta["annotations"][k]) for k in want] == [bool, int, int, float]
        assert meta["turn"] == {"invalid_turn": bool(info["invalid_turn"]),
                                "invalid_reason": info["invalid_reason"],
                                "parsed_action": int(info["parsed_action"])}  # fmt: skip
        assert (meta["group_id"], meta["seed"]) == (None, 3)
        if done:
            assert meta["episode"] == {k: info[k] for k in adapter.EPISODE_KEYS}
    if len(served) > 5:  # the fifth reply was malformed: an invalid turn, served as one
        assert served[5]["metadata"]["turn"]["invalid_turn"]
    first, last = served[0]["metadata"], served[-1]["metadata"]
    assert set(first["annotations"]) == {"critical", "state_id", "anchor", "turn_score"}
    assert first["privileged"] == ["critical", "state_id", "turn_score"]
    assert "episode" not in first and served[0]["system_prompt"]
    episode = last["episode"]
    assert episode["episode_length"] == len(served) - 1
    assert episode["decision_density"] == pytest.approx(
        episode["num_critical"] / episode["episode_length"]
    )
    state = seen[env_id]["state"]
    assert (state["episode_id"], state["seed"], state["step_count"], state["done"]) == (
        "e1", 3, len(served) - 1, True
    )  # fmt: skip
    assert state["episode_return"] == pytest.approx(sum(r["reward"] for r in served[1:]))


@pytest.mark.parametrize("env_id", list(openenv_scenario.IDS))
def test_a_group_shares_its_start_across_sessions(seen, env_id):
    group = seen[env_id]["group"]
    one = group[0]
    assert len(group) == openenv_scenario.SESSIONS and all(g == one for g in group)
    assert "CAPACITY_REACHED" in seen[env_id]["over_capacity"]
    seed = adapter.group_seed("g7")
    assert one[0]["metadata"]["seed"] == seed and one[0]["metadata"]["group_id"] == "g7"
    local = local_episode(env_id, openenv_scenario.replies_for(env_id)[:2], seed=seed)
    assert [r["text"] for r in one] == [text for text, *_ in local]


@pytest.mark.parametrize("env_id", list(openenv_scenario.IDS))
def test_openenvs_generic_client_reads_the_same_result(seen, env_id):
    generic, typed = seen[env_id]["generic"], seen[env_id]["seeded"][0]
    assert generic["observation"]["text"] == typed["text"]
    assert generic["metadata"] == typed["metadata"]
    assert seen[env_id]["server_metadata"]["name"] == env_id


@pytest.mark.parametrize("env_id", list(openenv_scenario.IDS))
def test_hostile_input_gets_one_error_line(seen, env_id):
    said = seen[env_id]
    assert "after the episode ended: reset first" in said["after_done"]
    assert "seed must be an int" in said["bad_seed"]
    assert "episode_id must be a string of at most 256" in said["bad_episode_id"]
    assert "unknown reset argument(s): group" in said["misspelt_group"]
    after = said["after_refusals"]  # the episode started before the refusals, one turn in
    assert (after["seed"], after["step_count"], after["done"]) == (4, 1, False)
    assert len(set(said["unseeded"])) == 3 and all(isinstance(x, int) for x in said["unseeded"])
    for case in ("huge_reply", "unknown_field"):
        assert said[case] != "no error" and "\n" not in said[case].strip(), said[case]
    # OpenEnv's own validation refuses them (its message names the code, not the field)
    assert "VALIDATION_ERROR" in said["huge_reply"] and "VALIDATION_ERROR" in said["unknown_field"]


def test_the_server_refuses_a_bad_id_or_argument_in_one_line(capsys):
    cases = {
        ("--env-id", "NoSuchEnv-v0"): "NoSuchEnv",
        ("--env-kwargs", "[1]"): "must be a JSON object",
        ("--env-kwargs", '{"routine_length": -3}'): "routine_length must be >= 0",
        ("--port", "70000"): "must be <= 65535",
    }
    for argv, says in cases.items():
        with pytest.raises(SystemExit) as ended:
            adapter.main(list(argv))
        assert ended.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        # one error line (argparse's usage may precede it), no traceback
        assert says in err[-1] and "error" in err[-1], err
        assert sum("error" in line for line in err) == 1 and "Traceback" not in str(err), err


def test_group_seed_is_stable_and_in_range():
    # pinned: every server and client version must derive the same start from a group id
    assert (
        adapter.group_seed("g7")
        == int.from_bytes(__import__("hashlib").sha256(b"g7").digest()[:4], "big") >> 1
    )
    assert adapter.group_seed("g7") != adapter.group_seed("g8")
    assert all(0 <= adapter.group_seed(str(i)) < 2**31 for i in range(100))


def test_the_docs_serving_commands_parse_with_the_servers_flags():
    import shlex

    from routine_envs import cli

    text = (ROOT / "docs" / "text.md").read_text()
    prefix = "python -m routine_envs.adapters.openenv "
    commands = [line for line in text.splitlines() if line.startswith(prefix)]
    assert commands
    for line in commands:
        args = cli.parse_settings(adapter.ServeSettings, shlex.split(line)[3:])
        adapter.create_routine_app(args.env_id, args.env_kwargs, args.max_sessions)
