"""The OpenEnv scenario :mod:`tests.test_openenv` runs inside a loopback-only network namespace:
serve ids with ``python -m routine_envs.adapters.openenv`` (a real uvicorn server on
127.0.0.1), play them through OpenEnv's own clients over WebSocket, and print one JSON object
of what was seen (the test compares it with the same episodes played locally).

    python -m tests.openenv_scenario   # only inside a namespace made by baselines.lib.loopback
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

PORT = 8000
IDS = {  # a decisions-and-routine id, a mock code-fix task with its text view, a gridworld
    "DilutedDoors-v1": {"num_floors": 2, "routine_length": 2},
    "CodeFix-v1": {"routine_length": 2},
    "RoutineGrid-v1": {"num_junctions": 1, "corridor_length": 2},
}
FLAGS = {  # the text env's settings a server is started with (the local replay uses the same)
    "CodeFix-v1": {"max_turns": 12, "invalid_penalty": 0.25},
}
SESSIONS = 4
"""--max-sessions of every server here."""


@contextlib.contextmanager
def server(env_id: str, kwargs: dict[str, Any], port: int) -> Iterator[str]:
    """A served id, its base URL while the block runs (the server's output on failure)."""
    argv = [sys.executable, "-m", "routine_envs.adapters.openenv", "--env-id", env_id,
            "--env-kwargs", json.dumps(kwargs), "--port", str(port),
            "--max-sessions", str(SESSIONS)]  # fmt: skip
    for name, value in FLAGS.get(env_id, {}).items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # the import of openenv takes seconds on a loaded machine
            if proc.poll() is not None:
                raise RuntimeError(f"server exited {proc.returncode}: {proc.stdout.read()}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{url}/health", timeout=2) as reply,
            ):
                if json.loads(reply.read()).get("status") == "healthy":
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError("server not healthy after 120 s")
        yield url
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()


def play(env: Any, replies: list[str], **reset: Any) -> list[dict[str, Any]]:
    """Reset with ``reset``, then send ``replies`` until done; every result as plain data."""
    from routine_envs.adapters.openenv import RoutineAction

    results = [env.reset(**reset)]
    for reply in replies:
        if results[-1].done:
            break
        results.append(env.step(RoutineAction(reply=reply)))
    return [
        {"text": r.observation.text, "reward": r.reward, "done": r.done, "metadata": r.metadata,
         "system_prompt": r.observation.system_prompt}
        for r in results
    ]  # fmt: skip


def error_of(call: Any) -> str:
    """The one line a failing client call raised."""
    try:
        call()
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return "no error"


def replies_for(env_id: str) -> list[str]:
    """Canonical replies, every action in turn, and a malformed one every fifth turn: long
    enough to end any episode served here."""
    from routine_envs.text import make_text_env

    text_env = make_text_env(env_id, **IDS[env_id])
    n = text_env.unwrapped.action_space.n
    return [text_env.action_text(i % n) if i % 5 != 4 else "no idea" for i in range(200)]


def main() -> None:
    from openenv.core.generic_client import GenericEnvClient

    from routine_envs.adapters.openenv import RoutineAction, RoutineEnvClient

    out: dict[str, Any] = {"ids": {}}
    for offset, (env_id, kwargs) in enumerate(IDS.items()):
        replies = replies_for(env_id)
        with server(env_id, kwargs, PORT + offset) as url:
            seen: dict[str, Any] = {}
            with RoutineEnvClient(base_url=url).sync() as env:
                seen["seeded"] = play(env, replies, seed=3, episode_id="e1")
                seen["state"] = env.state().model_dump()
                seen["after_done"] = error_of(lambda: env.step(RoutineAction(reply="x")))
                seen["bad_seed"] = error_of(lambda: env.reset(seed=-1))
                # a refused reset changes nothing: the session's episode goes on as it was
                env.reset(seed=4)
                env.step(RoutineAction(reply=replies[0]))
                seen["bad_episode_id"] = error_of(lambda: env.reset(seed=5, episode_id="x" * 300))
                seen["misspelt_group"] = error_of(lambda: env.reset(group="g7"))
                seen["after_refusals"] = env.state().model_dump()
                # no seed: a fresh one each time, recorded
                seen["unseeded"] = [env.reset().metadata["seed"] for _ in range(3)]
            # a group on sessions open at once, each its own environment; one more than
            # --max-sessions is refused
            clients = [RoutineEnvClient(base_url=url).sync() for _ in range(SESSIONS)]
            for client in clients:
                client.connect()
            seen["group"] = [play(client, replies[:2], group_id="g7") for client in clients]
            extra = RoutineEnvClient(base_url=url).sync()
            seen["over_capacity"] = error_of(lambda e=extra: (e.connect(), e.reset(seed=1)))
            extra.close()
            for client in clients:
                client.close()
            with GenericEnvClient(base_url=url).sync() as env:  # no adapter code on this side
                first = env.reset(seed=3)
                seen["generic"] = {"observation": first.observation, "metadata": first.metadata}
                # a reply past the bound, sent raw: refused by the server, one line
                seen["huge_reply"] = error_of(lambda: env.step({"reply": "a" * 70_000}))
                seen["unknown_field"] = error_of(lambda: env.step({"reply": "x", "code": "1"}))
            with urllib.request.urlopen(f"{url}/metadata", timeout=10) as reply:
                seen["server_metadata"] = json.loads(reply.read())
        out["ids"][env_id] = seen
    print("SCENARIO " + json.dumps(out))


if __name__ == "__main__":
    main()
