"""Fingerprints of everything the environments return: a sha256 per id over a few thousand
steps of the single env (observations, rewards, ends, every info key and value in order, the
random generator's state after the run, the ``ansi`` and ``rgb_array`` pictures of the first
steps), of the native vector env, of the text interface (system prompt, tool schema, texts and
infos of episodes played by canonical replies) and of the exact model (transitions, ``critical``,
rho). ``tests/test_env_fingerprints.py`` compares them with ``tests/env_fingerprints.json``, so a
refactoring of the environments cannot change a number unseen.

    python -m tests.env_fingerprints            # print the fingerprints (JSON)
    python -m tests.env_fingerprints --write    # rewrite tests/env_fingerprints.json

Rewrite the file only for a change that means to change what an environment returns (say so in
the commit).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import routine_envs

gym.register_envs(routine_envs)

PATH = Path(__file__).with_suffix(".json")
#: the ids and configurations fingerprinted: every id of the package at its defaults and at a
#: small configuration (fixed here, so that the fingerprint means the same before and after).
CASES: dict[str, list[dict[str, Any]]] = {
    "DilutedDoors-v0": [{}, {"num_floors": 2, "routine_length": (0, 2), "reward": "fraction"}],
    "DilutedDoors-v1": [{}, {"num_floors": 2, "routine_length": (0, 2)}],
    "RoutineGrid-v0": [{}, {"num_junctions": 2, "corridor_length": 2}, {"obs_mode": "image"}],
    "RoutineGridSoft-v0": [{}, {"num_junctions": 2, "corridor_length": (2, 4)}],
    "CodeFix-v0": [{}, {"num_modules": 2, "num_patches": 2, "routine_length": 3}],
    "CodeFix-v1": [{}, {"max_attempts": 2, "step_cost": 0.01, "routine_length": 3}],
    "TeamDilutedDoors-v0": [{}, {"num_floors": 2, "routine_length": (0, 2)}],
    "TeamRoutineGrid-v0": [{}, {"num_junctions": 2, "branching": 2, "corridor_length": 2}],
    "SearchOrAnswer-v0": [{}, {"num_candidates": 3, "max_searches": 2, "reading_length": 0}],
}
STEPS = 2000
VECTOR_STEPS = 300
TEXT_EPISODES = 3
PICTURES = 6


UNHASHED_KEYS = frozenset({"turn_score", "_turn_score"})
"""Info keys left out of the digests: ``turn_score`` (and ``_turn_score``, its mask in a vector
env's infos) came after the fingerprints were first written, so leaving it out keeps them the
proof that adding it changed nothing else (the score itself is checked against the dynamics by
``tests/test_contract_turn_score.py``)."""


class Digest:
    """A sha256 fed with a canonical text of every value (arrays by dtype, shape and bytes)."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def feed(self, value: Any) -> None:
        h = self.hash
        if isinstance(value, dict):
            h.update(b"{")
            for key, item in value.items():  # in order: the order of info keys is kept too
                if key in UNHASHED_KEYS:
                    continue
                h.update(repr(key).encode())
                self.feed(item)
            h.update(b"}")
        elif isinstance(value, (list, tuple)):
            h.update(f"{type(value).__name__}{len(value)}[".encode())
            for item in value:
                self.feed(item)
            h.update(b"]")
        elif isinstance(value, np.ndarray):
            if value.dtype == object:
                self.feed(value.tolist())
            else:
                h.update(f"{value.dtype.str}{value.shape}".encode())
                h.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, np.generic):
            h.update(f"{type(value).__name__}:{value!r}".encode())
        else:
            h.update(f"{type(value).__name__}:{value!r}".encode())

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


def _action(env: gym.Env, rng: np.random.Generator) -> int:
    """A valid action 4 times in 5 where the env has masks, else any action."""
    n = int(env.action_space.n)
    masks = getattr(env.unwrapped, "action_masks", None)
    if masks is not None and rng.random() < 0.8:
        mask = masks()
        if mask.any():
            return int(rng.choice(np.flatnonzero(mask)))
    return int(rng.integers(n))


def single(env_id: str, kwargs: dict[str, Any]) -> str:
    digest = Digest()
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(7)
    digest.feed(env.reset(seed=11))
    for _ in range(STEPS):
        out = env.step(_action(env, rng))
        digest.feed(out)
        if out[2] or out[3]:
            digest.feed(env.reset())
    digest.feed(env.unwrapped.np_random.random(4))
    for mode in ("ansi", "rgb_array"):
        if mode not in env.metadata["render_modes"]:
            continue
        pictured = gym.make(env_id, render_mode=mode, **kwargs)
        rng = np.random.default_rng(3)
        pictured.reset(seed=5)
        digest.feed(pictured.render())
        for _ in range(PICTURES):
            out = pictured.step(_action(pictured, rng))
            digest.feed(pictured.render())
            if out[2] or out[3]:
                pictured.reset()
    return digest.hexdigest()


def vector(env_id: str, kwargs: dict[str, Any]) -> str | None:
    if env_id.startswith("Team"):
        return None
    digest = Digest()
    envs = gym.make_vec(env_id, num_envs=4, **kwargs)
    rng = np.random.default_rng(2)
    digest.feed(envs.reset(seed=3))
    n = int(envs.single_action_space.n)
    for _ in range(VECTOR_STEPS):
        digest.feed(envs.step(rng.integers(n, size=4)))
    return digest.hexdigest()


def text(env_id: str, kwargs: dict[str, Any]) -> str:
    from routine_envs.text import make_text_env

    digest = Digest()
    env = make_text_env(env_id, **kwargs)
    digest.feed(env.system_prompt)
    digest.feed(json.dumps(env.tool_schema(), sort_keys=True))
    digest.feed(env.view.action_texts())
    rng = np.random.default_rng(1)
    garbage = ["", "hello", "9999", '{"name": "nope"}']
    for episode in range(TEXT_EPISODES):
        digest.feed(env.reset(seed=episode))
        for _ in range(400):
            if rng.random() < 0.1:
                reply = garbage[int(rng.integers(len(garbage)))]
            else:
                reply = env.action_text(_action(env.env, rng))
            out = env.step(reply)
            digest.feed(out)
            if out[2] or out[3]:
                break
    digest.feed(env.messages)
    return digest.hexdigest()


def model(env_id: str, kwargs: dict[str, Any]) -> str | None:
    dynamics = getattr(gym.make(env_id, **kwargs).unwrapped, "dynamics", None)
    if dynamics is None:
        return None
    digest = Digest()
    m = dynamics.model()
    for column in (m.state, m.action, m.prob, m.next_state, m.reward, m.terminated, m.initial):
        digest.feed(column)
    digest.feed(dynamics.critical_table())
    digest.feed(dynamics.action_gaps())
    digest.feed(float(dynamics.decision_density))
    digest.feed(int(dynamics.max_episode_length))
    for sid in np.flatnonzero(m.reachable)[:200].tolist():
        digest.feed(dynamics.describe(m.states[sid]))
    return digest.hexdigest()


def fingerprints() -> dict[str, dict[str, str | None]]:
    """``{"<id> <kwargs>": {"single": ..., "vector": ..., "text": ..., "model": ...}}``."""
    out = {}
    for env_id, configs in CASES.items():
        for kwargs in configs:
            label = f"{env_id} {json.dumps(kwargs, sort_keys=True)}"
            out[label] = {
                "single": single(env_id, kwargs),
                "vector": vector(env_id, kwargs),
                "text": text(env_id, kwargs),
                "model": model(env_id, kwargs),
            }
    return out


def main(argv: list[str]) -> None:
    found = fingerprints()
    if "--write" in argv:
        PATH.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {PATH}")
    else:
        print(json.dumps(found, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
