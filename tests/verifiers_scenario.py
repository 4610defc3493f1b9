"""The verifiers v1 scenario :mod:`tests.test_verifiers_v1` runs inside a loopback-only network
namespace: a scripted OpenAI-compatible model on 127.0.0.1 (aiohttp, which verifiers ships),
then verifiers' own evaluation (``run_eval``, what ``vf-eval`` runs) of the
:mod:`routine_envs.adapters.verifiers_v1` taskset loaded by its id; prints one JSON object of
every trace's transcript, reward, metrics and info.

    python -m tests.verifiers_scenario OUT   # inside a namespace made by baselines.lib.loopback
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
import time
from typing import Any

CASES = {  # env id -> (its arguments, the taskset's knobs)
    "DilutedDoors-v1": ({"num_floors": 2, "routine_length": 2}, {"num_tasks": 3, "first_seed": 5}),
    "CodeFix-v1": ({"routine_length": 2}, {"num_tasks": 2, "max_turns": 12}),
}
MALFORMED = "I am not sure what to do here."


@functools.cache
def action_texts(env_id: str) -> tuple[str, ...]:
    """The canonical reply of every action of the case's env (built once, not per request)."""
    from routine_envs.text import make_text_env

    env = make_text_env(env_id, **CASES[env_id][0])
    return tuple(env.action_text(a) for a in range(env.unwrapped.action_space.n))


def scripted_reply(env_id: str, assistant_turns: int) -> str:
    """The scripted model: every action in turn, and a malformed reply every fourth turn."""
    if assistant_turns % 4 == 3:
        return MALFORMED
    texts = action_texts(env_id)
    return texts[assistant_turns % len(texts)]


async def fake_model(env_id: str) -> tuple[Any, str]:
    from aiohttp import web

    async def chat(request: Any) -> Any:
        body = await request.json()
        turns = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        text = scripted_reply(env_id, turns)
        return web.json_response({
            "id": f"c{time.time_ns()}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })  # fmt: skip

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/v1"


async def evaluate(env_id: str, out: str) -> list[dict[str, Any]]:
    import verifiers.v1 as vf
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    from routine_envs.adapters.verifiers_v1 import TASKSET_ID

    kwargs, knobs = CASES[env_id]
    runner, url = await fake_model(env_id)
    os.environ["SCRIPTED_API_KEY"] = "unused"
    config = vf.resolve_env_config({
        "taskset": {"id": TASKSET_ID, "env_id": env_id, "env_kwargs": kwargs, **knobs},
        "agent": {"runtime": {"type": "subprocess"}, "max_turns": 60},
    })  # fmt: skip
    try:
        episodes = await run_eval(EvalConfig(
            env=config.model_dump(), model="scripted", num_rollouts=1, push=False, rich=None,
            client={"type": "eval", "base_url": url, "api_key_var": "SCRIPTED_API_KEY"},
            output_dir=out, run={"name": env_id},
        ))  # fmt: skip
    finally:
        await runner.cleanup()
    rows = []
    for episode in episodes:
        for trace in episode.traces:
            rows.append({
                "ok": trace.ok, "errors": [f"{e.type}: {e.message}"[:300] for e in trace.errors],
                "name": trace.task.data.name, "seed": trace.task.data.seed,
                "stop": trace.stop_condition, "reward": trace.reward,
                "metrics": dict(trace.metrics), "info": dict(trace.info),
                "messages": [{"role": m.role, "content": m.content} for m in trace.messages],
            })  # fmt: skip
    return rows


def main() -> None:
    out = sys.argv[1]
    seen = {env_id: asyncio.run(evaluate(env_id, out)) for env_id in CASES}
    print("SCENARIO " + json.dumps(seen, default=str))


if __name__ == "__main__":
    main()
