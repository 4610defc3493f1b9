"""verifiers: every environment as a ``MultiTurnEnv`` (the verifiers 0.1.x API, 0.1.14).

:class:`RoutineMultiTurn` holds the logic with that API's signatures and needs no verifiers
import: ``setup_state(state)`` (starts the episode named by ``state["info"]``:
``routine_env_id``, ``seed``, ``env_kwargs``, the first not ``env_id``, which verifiers
reserves for routing; mutates and returns the state), ``env_response(messages, state) ->
messages`` (reads the last assistant message, returns the next observation as a user message;
on the episode's last turn it also sets ``state["final_env_response"]``, so that verifiers
stops without asking the model again), the stop condition ``episode_done(state) -> bool`` and
the reward ``episode_return(state) -> float`` for a rubric. :func:`load_environment` builds the
real ``vf.MultiTurnEnv`` subclass (``episode_done`` registered with ``@vf.stop``); verifiers 0.2
and later replaced ``MultiTurnEnv`` by a different API (``verifiers.v1``), so it needs
``verifiers<0.2`` and says so otherwise.

**The annotations reach the rubric.** ``state["routine_annotations"]`` is the episode's
:class:`~routine_envs.adapters.annotations.AnnotationLog` (per turn ``step``, ``critical``,
``anchor``, ``state_id``, ``invalid_turn``; per episode ``decision_density``,
``num_critical``, ``num_invalid_turns``, ...), and :data:`RUBRIC_METRICS` are rubric functions
of the state that :func:`load_environment` adds with weight 0 (verifiers' metrics: scored and
reported for every rollout, not part of the reward): ``episode_success``,
``decision_density``, ``num_critical``, ``num_invalid_turns``, ``critical_turn_fraction``.
"""

from __future__ import annotations

from typing import Any

from routine_envs import annotations as keys
from routine_envs.adapters.annotations import AnnotationLog
from routine_envs.text import TextEnv, make_text_env

Messages = list[dict[str, Any]]
State = dict[str, Any]


class RoutineMultiTurn:
    """The multi-turn logic, with ``MultiTurnEnv``'s signatures.

    Args:
        env_id: the default id (``state["info"]["routine_env_id"]`` may name another).
        **kwargs: env keyword arguments and ``invalid_penalty``/``max_turns``.
    """

    def __init__(self, env_id: str = "DilutedDoors-v1", **kwargs: Any) -> None:
        self.routine_env_id = env_id
        self.routine_kwargs = kwargs

    def initial_prompt(self, env_id: str | None = None, seed: int | None = None) -> Messages:
        """The system prompt and first observation of an episode (a dataset row's prompt)."""
        env = make_text_env(env_id or self.routine_env_id, **self.routine_kwargs)
        text, _ = env.reset(seed=seed)
        return [
            {"role": "system", "content": env.system_prompt},
            {"role": "user", "content": text},
        ]

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        """Start the episode of ``state["info"]`` (its prompt is :meth:`initial_prompt`)."""
        info = state.get("info") or {}
        env_kwargs = {**self.routine_kwargs, **info.get("env_kwargs", {})}
        env_id = info.get("routine_env_id", self.routine_env_id)
        env: TextEnv = make_text_env(env_id, **env_kwargs)
        _, first = env.reset(seed=info.get("seed"))
        log = AnnotationLog()
        log.start(first)
        state["routine_annotations"] = log
        state["routine_env"] = env
        state["routine_return"] = 0.0
        state["routine_done"] = False
        state["routine_infos"] = []
        return state

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        """The next observation for the last assistant message, as a user message."""
        env: TextEnv = state["routine_env"]
        reply = next(
            (_field(m, "content") for m in reversed(messages) if _field(m, "role") == "assistant"),
            "",
        )
        text, reward, terminated, truncated, info = env.step(reply or "")
        state["routine_return"] += reward
        state["routine_done"] = terminated or truncated
        state["routine_infos"].append(info)
        state["routine_annotations"].record(info, state["routine_done"])
        response = [{"role": "user", "content": text}]
        if state["routine_done"]:
            state["final_env_response"] = response
        return response

    async def episode_done(self, state: State, **kwargs: Any) -> bool:
        """The stop condition: the episode ended."""
        return bool(state.get("routine_done", False))

    @staticmethod
    def episode_return(state: State, **kwargs: Any) -> float:
        """The episode's return (a rubric reward function)."""
        return float(state.get("routine_return", 0.0))

    @staticmethod
    def episode_success(state: State, **kwargs: Any) -> float:
        """1.0 when the episode succeeded (a rubric metric)."""
        infos = state.get("routine_infos") or [{}]
        return float(bool(infos[-1].get(keys.SUCCESS, False)))

    @staticmethod
    def decision_density(state: State, **kwargs: Any) -> float:
        """The episode's decision density rho (a rubric metric; 0 before the end)."""
        return _metric(state, keys.DECISION_DENSITY)

    @staticmethod
    def num_critical(state: State, **kwargs: Any) -> float:
        """Turns taken in critical states (a rubric metric; 0 before the end)."""
        return _metric(state, keys.NUM_CRITICAL)

    @staticmethod
    def num_invalid_turns(state: State, **kwargs: Any) -> float:
        """Replies that named no action (a rubric metric; 0 before the end)."""
        return _metric(state, keys.NUM_INVALID_TURNS)

    @staticmethod
    def critical_turn_fraction(state: State, **kwargs: Any) -> float:
        """Fraction of the turns so far taken in critical states (a rubric metric)."""
        return _metric(state, "critical_turn_fraction")


#: the rubric metrics (weight 0) :func:`load_environment` adds beside the return.
RUBRIC_METRICS = (
    "episode_success",
    "decision_density",
    "num_critical",
    "num_invalid_turns",
    "critical_turn_fraction",
)


def _metric(state: State, name: str) -> float:
    log = state.get("routine_annotations")
    return float(log.metrics().get(name, 0.0)) if isinstance(log, AnnotationLog) else 0.0


def _field(message: Any, name: str) -> Any:
    """``message[name]`` of a dict or a (pydantic) message object."""
    if isinstance(message, dict):
        return message.get(name)
    return getattr(message, name, None)


def load_environment(env_id: str = "DilutedDoors-v1", num_examples: int = 64, **kwargs: Any) -> Any:
    """A ``vf.MultiTurnEnv`` of ``env_id`` with ``num_examples`` seeded episodes as its
    dataset, the episode return as its rubric's reward and :data:`RUBRIC_METRICS` as its metrics
    (weight 0) (needs ``verifiers<0.2`` and ``datasets``)."""
    try:
        import verifiers as vf
    except ImportError as err:
        raise ImportError("load_environment needs verifiers<0.2 (and datasets)") from err
    if not hasattr(vf, "MultiTurnEnv"):
        raise ImportError(
            f"verifiers {getattr(vf, '__version__', '?')} has no MultiTurnEnv (replaced in 0.2 "
            "by verifiers.v1): install verifiers<0.2, or drive RoutineMultiTurn yourself"
        )
    from datasets import Dataset  # a dependency of verifiers<0.2

    logic = RoutineMultiTurn(env_id, **kwargs)
    rows = [
        {
            "prompt": logic.initial_prompt(seed=seed),
            "info": {"routine_env_id": env_id, "seed": seed},
        }
        for seed in range(num_examples)
    ]

    class RoutineVerifiersEnv(RoutineMultiTurn, vf.MultiTurnEnv):  # type: ignore[misc]
        def __init__(self) -> None:
            RoutineMultiTurn.__init__(self, env_id, **kwargs)
            vf.MultiTurnEnv.__init__(
                self,
                dataset=Dataset.from_list(rows),
                rubric=vf.Rubric(
                    funcs=[self.episode_return, *(getattr(self, m) for m in RUBRIC_METRICS)],
                    weights=[1.0, *(0.0 for _ in RUBRIC_METRICS)],
                ),
            )

        @vf.stop
        async def routine_episode_done(self, state: State, **kwargs: Any) -> bool:
            return await self.episode_done(state)

    return RoutineVerifiersEnv()
