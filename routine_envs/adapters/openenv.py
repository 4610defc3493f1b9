"""OpenEnv: every environment served as an OpenEnv ``Environment`` (needs ``openenv``: the
``openenv`` extra, ``openenv>=0.10``, the successor of ``openenv-core``).

Serve one id (on 127.0.0.1 unless told otherwise; one environment instance per session):

    python -m routine_envs.adapters.openenv --env-id DilutedDoors-v1 --port 8000

and play it with OpenEnv's own client over the WebSocket ``/ws`` (OpenEnv's HTTP ``/reset`` and
``/step`` build a new environment per request: an episode needs the WebSocket):

    from routine_envs.adapters.openenv import RoutineAction, RoutineEnvClient
    with RoutineEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=3)                      # or group_id="g7": see below
        result = env.step(RoutineAction(reply="open_door(1)"))
        result.observation.text, result.reward, result.done, result.metadata["annotations"]

**What a result carries.** ``observation.text`` is the user message (the text view's
observation; an invalid reply's message says why and that nothing changed); on ``reset`` also
``observation.system_prompt`` and ``observation.tools`` (OpenAI-style function tools).
``reward`` and ``done`` are the step's. ``metadata`` (OpenEnv's ``Observation.metadata``, sent to
the client by ``openenv>=0.10``) holds, JSON-plain:

- ``annotations``: the state just observed, the info contract's per-step keys
  (:data:`routine_envs.annotations.STEP_KEYS`): ``critical``, ``state_id``, ``anchor``,
  ``turn_score``;
- ``privileged``: the annotation keys computed from what the observation hides
  (``critical``, ``state_id``, ``turn_score``, as :data:`routine_envs.episodes.
  PRIVILEGED_FIELDS` names them): a method that reads them is privileged; ``anchor`` (a hash of
  the observation text) is not;
- ``turn``: ``invalid_turn``, ``invalid_reason``, ``parsed_action`` of the reply just read;
- ``episode`` (once ``done``): ``success``, ``num_critical``, ``episode_length``,
  ``decision_density``, ``num_invalid_turns``;
- ``group_id`` and ``seed``: what the episode started from.

**Groups share their start.** ``reset(seed=s)`` starts the episode ``s`` (the same layout and
random future in every session and server: Gymnasium's seeding); ``reset(group_id=g)`` without a
seed starts from the seed derived from ``g`` (:func:`group_seed`, SHA-256), so the episodes of a
group (GRPO's group, on any number of sessions) share their start without sharing a session;
``reset()`` draws a seed and records it, so every episode can be replayed.

**Untrusted input stays data**: a reply is a string of at most
:data:`~routine_envs.text.parsing.MAX_REPLY_CHARS` characters (longer: OpenEnv's validation
error, one line) read by the text env's parser, never executed; ``seed`` must be an int >= 0,
``group_id`` and ``episode_id`` strings of at most :data:`MAX_GROUP_ID` characters and no other
argument is taken, else the session gets one error line and its episode is unchanged. A
``step`` after the episode ended is an error that says to reset. A session keeps no
conversation (``history=False``), so its memory does not grow with the replies it reads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import numbers
import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from routine_envs import annotations as keys
from routine_envs.episodes import PRIVILEGED_FIELDS
from routine_envs.text import make_text_env
from routine_envs.text.parsing import MAX_REPLY_CHARS

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import Action, Environment, Observation, State, create_app
    from openenv.core.env_server.types import EnvironmentMetadata
    from pydantic import Field
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError(
        "routine_envs.adapters.openenv needs openenv>=0.10: pip install 'routine-envs[openenv]'"
    ) from err

MAX_GROUP_ID = 256
"""The longest ``group_id`` accepted (characters)."""
_BATCH_FIELD = {keys.STATE_ID: "state_ids", keys.TURN_SCORE: "turn_scores"}
PRIVILEGED_KEYS = tuple(k for k in keys.STEP_KEYS if _BATCH_FIELD.get(k, k) in PRIVILEGED_FIELDS)
"""The per-step annotation keys computed from the hidden state (marked in every result): the
info keys of :data:`routine_envs.episodes.PRIVILEGED_FIELDS` (critical, state_id,
turn_score)."""
TURN_KEYS = (keys.INVALID_TURN, keys.INVALID_REASON, keys.PARSED_ACTION)
EPISODE_KEYS = (*keys.EPISODE_END_KEYS, keys.NUM_INVALID_TURNS)
DEFAULT_HOST = "127.0.0.1"


class RoutineAction(Action):
    """One reply of the agent (any text: the env's parser reads the action it names)."""

    reply: str = Field(max_length=MAX_REPLY_CHARS, description="the agent's reply")


class RoutineObservation(Observation):
    """The user message after a turn; on ``reset`` also the system prompt and tools."""

    text: str = Field(default="", description="the observation as the text view words it")
    system_prompt: str | None = Field(default=None, description="on reset: task and rules")
    tools: list[dict[str, Any]] | None = Field(default=None, description="on reset: the actions")


class RoutineState(State):
    """The session's episode: ``episode_id`` and ``step_count`` (turns, invalid ones
    included) as OpenEnv defines them, and what it started from and has earned."""

    env_id: str = ""
    seed: int | None = None
    group_id: str | None = None
    done: bool = True
    episode_return: float = 0.0


def group_seed(group_id: str) -> int:
    """The start shared by a group: the first 31 bits of ``group_id``'s SHA-256 (an int in
    ``[0, 2**31)``, the same in every process)."""
    return int.from_bytes(hashlib.sha256(group_id.encode()).digest()[:4], "big") >> 1


def _plain(value: Any) -> Any:
    """``value`` as JSON-plain Python (numpy scalars to int, float or bool)."""
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "item"):  # a numpy bool
        return _plain(value.item())
    return value


def metadata_of(info: Mapping[str, Any], done: bool) -> dict[str, Any]:
    """The annotations of a text env's ``info`` as a result's ``metadata`` (see the module
    docstring), without ``group_id`` and ``seed``."""
    out: dict[str, Any] = {
        "annotations": {k: _plain(info[k]) for k in keys.STEP_KEYS if k in info},
        "privileged": [k for k in PRIVILEGED_KEYS if k in info],
        "turn": {k: _plain(info[k]) for k in TURN_KEYS if k in info},
    }
    if done:
        out["episode"] = {k: _plain(info[k]) for k in EPISODE_KEYS if k in info}
    return out


class RoutineEnvironment(Environment[RoutineAction, RoutineObservation, RoutineState]):
    """One routine-envs id as an OpenEnv environment (one instance per session).

    Args:
        env_id: a registered id (every one has a text view).
        env_kwargs: its keyword arguments (the density keyword among them).
        invalid_penalty, max_turns: as :class:`~routine_envs.text.TextEnv` takes them.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # sessions share nothing: one text env each

    def __init__(
        self,
        env_id: str = "DilutedDoors-v1",
        env_kwargs: Mapping[str, Any] | None = None,
        invalid_penalty: float = 0.0,
        max_turns: int | None = None,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.text_env = make_text_env(
            env_id,
            invalid_penalty=invalid_penalty,
            max_turns=max_turns,
            history=False,  # the client keeps the conversation; a session's memory stays bounded
            **self.env_kwargs,
        )
        self._state = RoutineState(env_id=env_id)
        self._done = True

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        group_id: str | None = None,
        **kwargs: Any,
    ) -> RoutineObservation:
        """Start an episode: ``seed`` (an int >= 0), else ``group_id``'s seed, else a fresh
        one (drawn and recorded, so the episode can be replayed). Every argument is checked
        before anything changes; an unknown one is refused (a misspelt ``group_id`` would
        silently start an unrelated episode)."""
        if kwargs:
            names = ", ".join(sorted(str(k)[:40] for k in kwargs)[:5])
            raise ValueError(
                f"unknown reset argument(s): {names} (known: seed, episode_id, group_id)"
            )
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63
        ):
            raise ValueError(f"seed must be an int in [0, 2**63), got {str(seed)[:40]!r}")
        for name, value in (("group_id", group_id), ("episode_id", episode_id)):
            if value is not None and (not isinstance(value, str) or len(value) > MAX_GROUP_ID):
                raise ValueError(f"{name} must be a string of at most {MAX_GROUP_ID} characters")
        if seed is not None:
            start = seed
        elif group_id is not None:
            start = group_seed(group_id)
        else:
            start = secrets.randbelow(2**31)
        text, info = self.text_env.reset(seed=start)
        self._done = False
        self._state = RoutineState(
            episode_id=episode_id or str(uuid.uuid4()),
            env_id=self.env_id,
            seed=start,
            group_id=group_id,
            done=False,
        )
        return RoutineObservation(
            text=text,
            system_prompt=self.text_env.system_prompt,
            tools=self.text_env.tool_schema(),
            reward=0.0,
            done=False,
            metadata={**metadata_of(info, False), "group_id": group_id, "seed": start},
        )

    def step(
        self, action: RoutineAction, timeout_s: float | None = None, **kwargs: Any
    ) -> RoutineObservation:
        """Read one reply; an error after the episode ended (reset first)."""
        if self._done:
            raise RuntimeError("step() before reset() or after the episode ended: reset first")
        text, reward, terminated, truncated, info = self.text_env.step(action.reply)
        self._done = terminated or truncated
        self._state.step_count += 1
        self._state.done = self._done
        self._state.episode_return += reward
        meta = metadata_of(info, self._done)
        return RoutineObservation(
            text=text,
            reward=reward,
            done=self._done,
            metadata={**meta, "group_id": self._state.group_id, "seed": self._state.seed},
        )

    @property
    def state(self) -> RoutineState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        kwargs = json.dumps(self.env_kwargs, sort_keys=True)
        return EnvironmentMetadata(
            name=self.env_id,
            description=f"routine-envs {self.env_id} {kwargs} as text: critical-state "
            "annotations in every result's metadata (docs/text.md, OpenEnv)",
        )

    def close(self) -> None:
        self.text_env.close()


def create_routine_app(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 64,
    invalid_penalty: float = 0.0,
    max_turns: int | None = None,
) -> Any:
    """The FastAPI app OpenEnv makes for ``env_id`` (``create_app``): ``/ws`` sessions of at
    most ``max_sessions`` at once, ``/health``, ``/schema``, ``/metadata``. The env is built once
    here, so a bad id or argument fails now, with its one-line message."""
    factory = functools.partial(
        RoutineEnvironment, env_id, dict(env_kwargs or {}), invalid_penalty, max_turns
    )
    factory().close()
    return create_app(
        factory,
        RoutineAction,
        RoutineObservation,
        env_name=env_id,
        max_concurrent_envs=max_sessions,
        state_cls=RoutineState,
    )


class RoutineEnvClient(EnvClient[RoutineAction, RoutineObservation, RoutineState]):
    """OpenEnv's client for a routine-envs server (async; ``.sync()`` blocks)."""

    def _step_payload(self, action: RoutineAction) -> dict[str, Any]:
        return {"reply": action.reply}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[RoutineObservation]:
        fields = dict(payload.get("observation", {}))
        nested = fields.pop("metadata", None)  # openenv sends it nested and beside
        metadata = payload.get("metadata", nested) or {}
        observation = RoutineObservation(
            **fields, reward=payload.get("reward"), done=payload.get("done", False),
            metadata=metadata,
        )  # fmt: skip
        return StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=metadata,
        )

    def _parse_state(self, payload: dict[str, Any]) -> RoutineState:
        return RoutineState(**payload)


@dataclass(frozen=True)
class ServeSettings:
    """Serve a routine-envs id as an OpenEnv environment (docs/text.md)."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "a registered id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "its keyword arguments (a JSON object)"}
    )
    host: str = field(default=DEFAULT_HOST, metadata={"help": "the address (loopback only)"})
    port: int = field(default=8000, metadata={"help": "the port", "min": 1, "max": 65535})
    max_sessions: int = field(
        default=64, metadata={"help": "WebSocket sessions at once", "min": 1, "max": 4096}
    )
    invalid_penalty: float = field(
        default=0.0, metadata={"help": "the reward of an invalid turn is minus this", "min": 0}
    )
    max_turns: int | None = field(
        default=None, metadata={"help": "truncate an episode after this many turns", "min": 1}
    )


def serve(args: ServeSettings) -> None:
    """Build the app (a bad id or argument fails here, one line) and serve it with uvicorn."""
    try:
        app = create_routine_app(
            args.env_id, args.env_kwargs, args.max_sessions, args.invalid_penalty, args.max_turns
        )
    except gym.error.Error as err:  # an unknown id: Gymnasium's message, one line
        raise ValueError(" ".join(str(err).split())[:300]) from None
    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m routine_envs.adapters.openenv [--env-id ID] ...`` (``--help``); every bad
    flag, id or argument is one line."""
    from routine_envs import cli

    cli.run_main(serve, cli.parse_settings(ServeSettings, argv))


if __name__ == "__main__":
    main()
