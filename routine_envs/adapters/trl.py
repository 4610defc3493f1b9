"""TRL: every environment for ``GRPOTrainer(environment_factory=...)`` (no TRL import here).

    from routine_envs.adapters.trl import environment_factory
    trainer = GRPOTrainer(..., environment_factory=environment_factory("CodeFix-v1"))

TRL makes one instance per rollout and calls ``reset(**example)`` (the dataset row's fields; a
``seed`` field, if present, seeds the episode), whose string it appends to the last user
message; every other public method of the class becomes a tool (TRL reads their type hints and
Google-style docstrings); ``get_reward()`` scores the finished rollout. So the class built here
has exactly one public method per tool of the environment's text view (``open_door(door)``,
``walk()``; CodeFix: ``read_log()``, ``open(module)``, ``apply_patch(module, patch)``, ...),
each returning the next observation as text, and ``get_reward()`` returning the episode's
return. A call after the episode ended changes nothing and says so; an invalid argument is an
invalid turn (counted, as in :class:`~routine_envs.text.TextEnv`), never an exception.

**The annotations reach the trainer.** TRL passes the rollouts' environment instances to every
reward function (the ``environments`` keyword); :attr:`RoutineToolEnv.annotations` is the
episode's :class:`~routine_envs.adapters.annotations.AnnotationLog` (per turn ``step``,
``critical``, ``anchor``, ``state_id``, ``invalid_turn``; per episode ``decision_density``,
``num_critical``, ``num_invalid_turns``, ``episode_length``, ``success``), a property, so TRL
does not take it for a tool. The reward helpers read it:

    from routine_envs.adapters.trl import environment_factory, routine_return
    trainer = GRPOTrainer(..., reward_funcs=[routine_return],
                          environment_factory=environment_factory("DilutedDoors-v1"))

:func:`routine_return` is the episode's return and logs the annotations' means through TRL's
``log_metric`` (``routine/decision_density``, ...); :func:`annotations_of` gives them to any
reward function of your own.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from routine_envs.adapters.annotations import AnnotationLog
from routine_envs.text import TextEnv, make_text_env
from routine_envs.text.views import Tool

_TYPES = {"integer": int, "string": str}


class RoutineToolEnv:
    """Base of the generated classes: ``reset``, ``get_reward`` and the episode (all other
    attributes are private, so that TRL finds only the tools)."""

    _env_id = ""
    _kwargs: dict[str, Any] = {}  # noqa: RUF012 (replaced per generated class)

    def __init__(self) -> None:
        self._env: TextEnv = make_text_env(self._env_id, **self._kwargs)
        self._return = 0.0
        self._done = True
        self._last_info: dict[str, Any] = {}
        self._log = AnnotationLog()

    @property
    def text_env(self) -> TextEnv:
        """The :class:`TextEnv` played (a property: TRL takes only functions as tools)."""
        return self._env

    @property
    def annotations(self) -> AnnotationLog:
        """The episode's annotations, per turn and (once it ended) per episode (a property:
        TRL takes only functions as tools)."""
        return self._log

    @property
    def done(self) -> bool:
        """Whether the episode has ended."""
        return self._done

    def reset(self, **kwargs: Any) -> str:
        """Start an episode (``seed`` from the example, if any); returns the rules and the
        first observation, appended to the prompt by TRL."""
        seed = kwargs.get("seed")
        text, self._last_info = self._env.reset(seed=None if seed is None else int(seed))
        self._return, self._done = 0.0, False
        self._log.start(self._last_info)
        return f"{self._env.system_prompt}\n\n{text}"

    def get_reward(self) -> float:
        """The return of the episode so far (TRL calls it once the rollout is complete)."""
        return float(self._return)

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._done:
            return "The episode is over: nothing changed."
        reply = json.dumps({"name": name, "arguments": arguments})
        text, reward, terminated, truncated, self._last_info = self._env.step(reply)
        self._return += reward
        self._done = terminated or truncated
        self._log.record(self._last_info, self._done)
        return text + ("\nThe episode is over." if self._done else "")


def tool_method(tool: Tool) -> Callable[..., str]:
    """One tool as the public method TRL reads a tool from: its name, signature, annotations
    and a Google-style docstring (TRL builds the tool's schema from them); the method passes
    its arguments to ``self._call(tool name, arguments)``, which a subclass of
    :class:`RoutineToolEnv` (in process) or the OpenEnv recipe's served class defines."""

    def method(self: RoutineToolEnv, **arguments: Any) -> str:
        return self._call(tool.name, arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for p in tool.params:
        params.append(
            inspect.Parameter(
                p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=_TYPES[p.kind]
            )
        )
        annotations[p.name] = _TYPES[p.kind]
    annotations["return"] = str
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__name__ = method.__qualname__ = tool.name
    doc = [tool.description, ""]
    if tool.params:
        doc.append("Args:")
        for p in tool.params:
            doc.append(f"    {p.name}: {p.description} (one of {', '.join(map(str, p.choices))})")
        doc.append("")
    doc += ["Returns:", "    What you observe after the action."]
    method.__doc__ = "\n".join(doc)
    return method


def environment_class(env_id: str, **kwargs: Any) -> type[RoutineToolEnv]:
    """A class whose instances play ``env_id`` (made with ``kwargs``: env keyword arguments
    and ``invalid_penalty``/``max_turns``) through one public method per tool."""
    view = make_text_env(env_id, **kwargs).view
    methods: dict[str, Any] = {tool.name: tool_method(tool) for tool in view.tools}
    clash = {"reset", "get_reward"} & set(methods)
    if clash:
        raise ValueError(f"env_id {env_id!r} has tools named like TRL's own methods: {clash}")
    name = "Routine" + re.sub(r"\W", "", env_id.title()) + "Env"
    attributes = {"_env_id": env_id, "_kwargs": dict(kwargs), "__doc__": view.task, **methods}
    return type(name, (RoutineToolEnv,), attributes)


def environment_factory(env_id: str, **kwargs: Any) -> type[RoutineToolEnv]:
    """What ``GRPOTrainer(environment_factory=...)`` takes: a zero-argument callable (the
    generated class) making one environment per rollout."""
    return environment_class(env_id, **kwargs)


# ------------------------------------------------------------------- reward helpers
def annotations_of(environments: Sequence[Any] | None) -> list[dict[str, Any]]:
    """The annotations (``{"turns": [...], "episode": {...} | None}``) of each rollout's
    environment, as TRL passes them to a reward function (``environments=``); an empty dict for
    an environment that is not one of this adapter's."""
    return [
        e.annotations.as_dict() if isinstance(e, RoutineToolEnv) else {}
        for e in (environments or [])
    ]


def routine_return(
    prompts: Any = None,
    completions: Any = None,
    environments: Sequence[Any] | None = None,
    log_metric: Callable[[str, float], None] | None = None,
    **kwargs: Any,
) -> list[float]:
    """A TRL reward function: each rollout's episode return. With TRL's ``log_metric`` it
    also logs the batch means of the finished episodes' annotations as
    ``routine/<name>`` (``decision_density``, ``num_critical``, ``num_invalid_turns``,
    ``episode_length``, ``success``, ``critical_turn_fraction``) and the fraction of
    rollouts whose episode did not end (``routine/unfinished``: a generation budget too small)."""
    envs = [e for e in (environments or []) if isinstance(e, RoutineToolEnv)]
    if log_metric is not None and envs:
        metrics = [e.annotations.metrics() for e in envs]
        for name in sorted({n for m in metrics for n in m}):
            values = [m[name] for m in metrics if name in m]
            log_metric(f"routine/{name}", sum(values) / len(values))
        log_metric("routine/unfinished", sum(not e.done for e in envs) / len(envs))
    return [e.get_reward() if isinstance(e, RoutineToolEnv) else 0.0 for e in environments or []]
