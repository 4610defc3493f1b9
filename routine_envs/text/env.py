"""Any environment of the suite as a multi-turn text task: :class:`TextEnv`.

The wrapper keeps the environment's dynamics and annotations and changes only what crosses the
boundary: the observation becomes text (the :class:`~routine_envs.text.views.TextView` of the
env, a function of the observation alone), the action is the model's reply, read leniently by
:mod:`routine_envs.text.parsing`.

**A malformed reply is a turn, not an exception.** ``step`` never raises for any reply (any
Python object; a ``str`` is read in linear time, at most its last
:data:`~routine_envs.text.parsing.MAX_REPLY_CHARS` characters): when the reply names no action
the environment is not stepped, so the state does not change; the reward is
``-invalid_penalty``; ``info["invalid_turn"]`` is ``True`` and ``info["invalid_reason"]`` says
why (one line of printable ASCII, at most
:data:`~routine_envs.text.parsing.MAX_REASON_CHARS` characters); the observation repeats the
state's text after a line saying what was wrong, so it stays in the observation space. The
per-turn annotations are those of the unchanged state (``critical``, ``state_id``, ``anchor``).
``messages`` records a ``str`` reply as it is and any other object as a short description
(:func:`~routine_envs.text.parsing.describe_reply`).

**How an invalid turn counts in rho.** An invalid turn is a turn of the episode taken in the
state it left unchanged: ``episode_length`` counts turns (valid and invalid), ``num_critical``
counts the turns taken in a critical state, invalid ones included, and ``decision_density`` is
their ratio, so the per-turn ``critical`` flags a trainer records always give the episode's
rho. A malformed reply in a routine state lowers rho, one in a critical state raises it;
``num_invalid_turns`` is reported beside them. Without invalid turns every count equals the
wrapped env's. ``critical`` stays the env's definition over its actions: a malformed reply is not
an action of the MDP (as CodeFix's masked no-ops are not choices), so an ``invalid_penalty``
does not make routine states critical.

``info["anchor"]`` is the stable hash of the observation's text (without the invalid-reply
line): equal text, equal anchor, and since the text is a function of the observation, equal
observations give equal anchors.
"""

from __future__ import annotations

import copy
import numbers
import string
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from routine_envs import annotations as keys
from routine_envs.text.parsing import ActionParser, describe_reply
from routine_envs.text.views import TextView, text_kwargs, view_for

#: characters of the text spaces (printable ASCII, tab and newline).
TEXT_CHARSET = frozenset(string.printable) - {"\r", "\x0b", "\x0c"}
#: the longest text observation and reply the spaces describe (characters).
MAX_TEXT_LENGTH = 1 << 20

Message = dict[str, str]
"""A chat message: ``{"role": "system" | "user" | "assistant", "content": text}``."""


@dataclass(frozen=True)
class InitialState:
    """The start of an episode, to start more episodes from exactly it: the environment as it
    was after ``reset`` (a deep copy: the same state and random future) and what it showed."""

    env: gym.Env
    observation: Any
    info: dict[str, Any]


class TextEnv(gym.Wrapper):
    """A Gymnasium env whose observations are text and whose actions are replies.

    Observation and action spaces are ``gymnasium.spaces.Text`` (printable ASCII); ``step``
    accepts any reply (any string, or anything else) and never raises for it.

    Args:
        env: an environment of the suite (registered id made with ``gym.make`` or a turn-based
            team env); CodeFix in ``obs_mode="text"``.
        invalid_penalty: reward of an invalid turn is ``-invalid_penalty`` (float >= 0).
        max_turns: truncate the episode after this many turns (int >= 1), invalid ones
            included; ``None``: only the env ends it.
        history: keep the conversation in :attr:`messages` (``False``: only the system
            prompt and the first observation, so that a long-lived server's memory does not
            grow with the replies it reads).

    Raises:
        ValueError: a bad argument (named), or an env that has no text view (see
            :func:`~routine_envs.text.views.view_for`).
    """

    def __init__(
        self,
        env: gym.Env,
        invalid_penalty: float = 0.0,
        max_turns: int | None = None,
        history: bool = True,
    ) -> None:
        if (
            not isinstance(invalid_penalty, numbers.Real)
            or isinstance(invalid_penalty, bool)
            or not 0.0 <= float(invalid_penalty) < float("inf")
        ):
            raise ValueError(
                f"invalid_penalty must be a finite float >= 0, got {invalid_penalty!r}"
            )
        if max_turns is not None and (
            not isinstance(max_turns, numbers.Integral)
            or isinstance(max_turns, bool)
            or max_turns < 1
        ):
            raise ValueError(f"max_turns must be None or an int >= 1, got {max_turns!r}")
        super().__init__(env)
        #: what the agent is told (system prompt, tools, observation text).
        self.view: TextView = view_for(env)
        self.parser = ActionParser(self.view)
        self.invalid_penalty = float(invalid_penalty)
        self.max_turns = None if max_turns is None else int(max_turns)
        self.observation_space = gym.spaces.Text(
            MAX_TEXT_LENGTH, min_length=1, charset=TEXT_CHARSET
        )
        self.action_space = gym.spaces.Text(MAX_TEXT_LENGTH, min_length=0, charset=TEXT_CHARSET)
        #: the conversation so far: the system prompt, then user and assistant turns (with
        #: ``history=False``, the system prompt and the first observation only).
        self.messages: list[Message] = []
        self.history = bool(history)
        self._text = ""
        self._info: dict[str, Any] = {}
        self._start: InitialState | None = None
        self._finished = True
        self._turns = self._critical_turns = self._invalid_turns = 0

    # ------------------------------------------------------------------------- prompting
    @property
    def system_prompt(self) -> str:
        """The system message: task, rules and action format."""
        return self.view.system_prompt()

    def tool_schema(self) -> list[dict[str, Any]]:
        """The actions as OpenAI-style function tools."""
        return self.view.tool_schema()

    def action_text(self, action: int) -> str:
        """The canonical reply for ``action`` (an int in ``[0, num_actions)``)."""
        return self.view.action_text(action)

    @property
    def observation_text(self) -> str:
        """The text of the current observation (without any invalid-reply line)."""
        return self._text

    # ------------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Reset the env; the observation is the first user message."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._start = InitialState(copy.deepcopy(self.env), obs, dict(info))
        return self._begin(obs, info)

    def get_initial_state(self) -> InitialState:
        """The start of the current episode (``reset`` must have run)."""
        if self._start is None:
            raise gym.error.ResetNeeded("get_initial_state() called before reset()")
        return self._start

    def reset_to_initial_state(self, state: InitialState) -> tuple[str, dict[str, Any]]:
        """Start an episode from ``state`` (of this env or another on the same id): the same
        state and random future as the episode it came from."""
        self.env = copy.deepcopy(state.env)
        self._start = state
        return self._begin(state.observation, dict(state.info))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Read the reply ``action`` and take the action it names; an invalid reply is an
        invalid turn (see the module docstring). Raises only ``ResetNeeded``, before ``reset``
        or after the episode ended."""
        if self._finished:
            raise gym.error.ResetNeeded(
                "step() called before reset() or after the episode ended: call reset()"
            )
        # the chat keeps a str reply as it is; anything else as a short safe description
        reply = str.__str__(action) if issubclass(type(action), str) else describe_reply(action)
        parsed = self.parser.parse(action)
        self._turns += 1
        self._critical_turns += bool(self._info[keys.CRITICAL])
        if parsed.valid:
            obs, reward, terminated, truncated, env_info = self.env.step(parsed.action)
            self._text = self.view.observation_text(obs)
            info = self._turn_info(env_info, parsed.action, "")
            message = self._text
        else:
            self._invalid_turns += 1
            reward, terminated, truncated = -self.invalid_penalty, False, False
            env_info = {
                k: v for k, v in self._info.items() if k not in keys.EPISODE_END_KEYS
            }  # the unchanged state's annotations
            if keys.INVALID_ACTION in env_info:
                env_info[keys.INVALID_ACTION] = False  # no action reached the env
            info = self._turn_info(env_info, -1, parsed.reason)
            message = f"Invalid reply: {parsed.reason}. Nothing changed.\n\n{self._text}"
        if self.max_turns is not None and self._turns >= self.max_turns and not terminated:
            truncated = True
        if terminated or truncated:
            self._finished = True
            success = bool(env_info.get(keys.SUCCESS, False)) if parsed.valid else False
            info.update(
                keys.episode_end_info(
                    success,
                    self._critical_turns,
                    self._turns,
                    num_invalid_turns=self._invalid_turns,
                )
            )
        self._info = info
        if self.history:
            self.messages.append({"role": "assistant", "content": reply})
            self.messages.append({"role": "user", "content": message})
        return message, float(reward), bool(terminated), bool(truncated), info

    # --------------------------------------------------------------------------- internals
    def _begin(self, obs: Any, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._text = self.view.observation_text(obs)
        self._turns = self._critical_turns = self._invalid_turns = 0
        self._finished = False
        self._info = self._turn_info(info, -1, "")
        self.messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self._text},
        ]
        return self._text, self._info

    def _turn_info(self, info: dict[str, Any], action: int, reason: str) -> dict[str, Any]:
        out = dict(info)
        out[keys.ANCHOR] = keys.observation_anchor(self._text)
        out[keys.INVALID_TURN] = bool(reason)
        out[keys.INVALID_REASON] = reason
        out[keys.PARSED_ACTION] = int(action)
        return out


def make_text_env(
    env_id: str,
    invalid_penalty: float = 0.0,
    max_turns: int | None = None,
    history: bool = True,
    **kwargs: Any,
) -> TextEnv:
    """``TextEnv(gym.make(env_id, **kwargs))``, with the keyword arguments the id's text view
    needs (CodeFix: ``obs_mode="text"`` unless given). Every registered id and the team ids
    (``TeamDilutedDoors-v0``, ``TeamRoutineGrid-v0``, with the ``multiagent`` extra) work."""
    kwargs = text_kwargs(gym.spec(env_id).entry_point, kwargs)
    return TextEnv(
        gym.make(env_id, **kwargs),
        invalid_penalty=invalid_penalty,
        max_turns=max_turns,
        history=history,
    )
